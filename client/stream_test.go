package client_test

// This file checks the WriteStream and the hot window against a real cell
// of its own (three in-process machines on Pebble, 20 ms ticks) whose
// journals keep only 8 applied records in memory: 1,000 fenced single-record
// Writes pipelined over one stream all land at their positions with no
// refusal (the stream keeps their order); a write over the batch limit is
// refused in-band without ending the stream; every record reads back from
// position 1, almost all of it from evicted records read back through
// Pebble; a retry of an evicted write is answered Duplicate; and a machine
// stopped while the others write on, then started again, catches up (here
// from the Accepts its peers queued for it; the simulator covers catch-up
// from evicted records) and serves every record from its own store, its
// metrics counting the cold reads. On the shared cell, a Writer whose
// single-record Writes go over its WriteStream, 64 out at once, lands 500
// appends at their positions with none refused.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/internal/testcell"
)

func coldCell(t *testing.T) *testcell.Cell {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a three-machine cell")
	}
	dir, err := os.MkdirTemp("", "paros-stream-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	tun := testcell.FastTunables()
	tun.HotSlotsMax, tun.HotBytesMax = 8, 4<<10
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := testcell.Start(ctx, dir, testcell.Options{Journals: 1, Tunables: tun})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.WaitLeader(ctx, c.Journals[0]); err != nil {
		t.Fatal(err)
	}
	return c
}

// streamWrites sends n fenced single-record writes from seq over one
// stream and returns the verdict of each position.
func streamWrites(t *testing.T, ctx context.Context, j *client.Journal, u journal.LeaderUUID, from journal.Seq, n int) map[journal.Seq]journal.Reply {
	t.Helper()
	ws, err := j.OpenWriteStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	seqOf := map[uint64]journal.Seq{}
	for i := range n {
		seq := from + journal.Seq(i)
		id, err := ws.Send(journal.WriteRequest{Leader: u, Seq: seq, Records: rec(fmt.Sprintf("s%d", seq))})
		if err != nil {
			t.Fatalf("send %d: %v", seq, err)
		}
		seqOf[id] = seq
	}
	if err := ws.CloseSend(); err != nil {
		t.Fatal(err)
	}
	got := map[journal.Seq]journal.Reply{}
	for {
		id, r, err := ws.Recv()
		if errors.Is(err, client.ErrStreamDone) {
			break
		}
		if err != nil {
			t.Fatalf("recv after %d replies: %v", len(got), err)
		}
		got[seqOf[id]] = r
	}
	return got
}

func TestWriteStreamKeepsOrderAndEvictedRecordsReadBack(t *testing.T) {
	// Arrange: a cell with an 8-slot hot window, a claimed fence, a stream
	// to the leader.
	c := coldCell(t)
	ctx := testCtx(t)
	j := dial(t, c.Addrs()...).Journal(c.Journals[0])
	u := journal.LeaderUUID{Hi: 0x5eed, Lo: 1}
	if r, err := j.SetLeader(ctx, journal.SetLeaderRequest{New: u}); err != nil || r.Outcome.Kind != journal.LeaderSet {
		t.Fatalf("claim: %v %v", r, err)
	}

	// Act: 1,000 pipelined writes, then the in-band refusals on the same
	// stream, a retry of write 5 and a read of everything.
	got := streamWrites(t, ctx, j, u, 1, 1000)
	ws, err := j.OpenWriteStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	big := make([][]byte, journal.WriteRecordsMax+1)
	for i := range big {
		big[i] = []byte("x")
	}
	idBig, _ := ws.Send(journal.WriteRequest{Leader: u, Seq: 1001, Records: big})
	idNext, _ := ws.Send(journal.WriteRequest{Leader: u, Seq: 1001, Records: rec("ok")})
	_ = ws.CloseSend()
	inband := map[uint64]journal.Reply{}
	for {
		id, r, err := ws.Recv()
		if err != nil {
			break
		}
		inband[id] = r
	}
	retry, err := j.Write(ctx, journal.WriteRequest{Leader: u, Seq: 5, Records: rec("s5")})
	if err != nil {
		t.Fatal(err)
	}
	recs := testcell.ReadAll(t, ctx, j, 1, 1002)

	// Assert.
	for seq := journal.Seq(1); seq <= 1000; seq++ {
		r := got[seq]
		if r.Outcome.Kind != journal.Accepted || r.Outcome.Seq != seq {
			t.Fatalf("write %d: %v, want accepted at %d (a stream never reorders)", seq, r, seq)
		}
	}
	expectTrue(t, "a write over the batch limit is refused TOO_LARGE in-band", inband[idBig].NoVerdict == journal.TooLarge)
	expectTrue(t, "the stream goes on after a refusal", inband[idNext].Outcome.Kind == journal.Accepted)
	expectTrue(t, "a retry of an evicted write is a duplicate", retry.Outcome.Kind == journal.Duplicate && retry.Outcome.Seq == 5)
	if len(recs) != 1001 || string(recs[0]) != "s1" || string(recs[999]) != "s1000" || string(recs[1000]) != "ok" {
		t.Fatalf("read back %d records", len(recs))
	}
}

func TestRestartedMachineCatchesUpAndServesEvictedRecords(t *testing.T) {
	// Arrange: a cell with an 8-slot hot window; one follower stopped.
	c := coldCell(t)
	ctx := testCtx(t)
	id := c.Journals[0]
	leader, err := c.WaitLeader(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	down := (leader + 1) % len(c.Addrs())
	if err := c.Stop(down); err != nil {
		t.Fatal(err)
	}
	j := dial(t, c.Addrs()...).Journal(id)
	u := journal.LeaderUUID{Hi: 0x5eed, Lo: 2}
	if r, err := j.SetLeader(ctx, journal.SetLeaderRequest{New: u}); err != nil || r.Outcome.Kind != journal.LeaderSet {
		t.Fatalf("claim: %v %v", r, err)
	}
	got := streamWrites(t, ctx, j, u, 1, 400)
	for seq := journal.Seq(1); seq <= 400; seq++ {
		if got[seq].Outcome.Kind != journal.Accepted {
			t.Fatalf("write %d: %v", seq, got[seq])
		}
	}

	// Act: start it again and read from it alone once it caught up.
	if err := c.Restart(down); err != nil {
		t.Fatal(err)
	}
	only := dial(t, c.Addrs()[down]).Journal(id)
	var recs [][]byte
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		r, err := only.Read(ctx, journal.ReadRequest{FromSeq: 1, Limit: 256})
		if err == nil && r.Served && len(r.Records) > 0 && r.View.NextSeq == 401 {
			recs = testcell.ReadAll(t, ctx, only, 1, 401)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Assert: every record, from the restarted machine, which read most of
	// them back from its own store (its hot window holds 8); the leader
	// keeps only its window too.
	if len(recs) != 400 || string(recs[0]) != "s1" || string(recs[399]) != "s400" {
		t.Fatalf("restarted machine holds %d records", len(recs))
	}
	// The metrics are sampled once a second on the loop: wait for a sample.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if gaugeValue(t, c.Nodes[down].Metrics.ColdReads.WithLabelValues("read_page")) > 0 &&
			gaugeValue(t, c.Nodes[leader].Metrics.Evicted) >= 390 {
			break
		}
	}
	if v := gaugeValue(t, c.Nodes[down].Metrics.ColdReads.WithLabelValues("read_page")); v == 0 {
		t.Fatalf(`paros_cold_reads{purpose="read_page"} = %v on the restarted machine`, v)
	}
	if v := gaugeValue(t, c.Nodes[leader].Metrics.Evicted); v < 390 {
		t.Fatalf("paros_hot_window_evicted_slots = %v on the leader, want at least 390 of 401", v)
	}
}

func expectTrue(t *testing.T, what string, ok bool) {
	t.Helper()
	if !ok {
		t.Fatalf("%s: false", what)
	}
}

func gaugeValue(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

func TestAWriterOverItsStreamIsNeverRefused(t *testing.T) {
	// Arrange: a claimed Writer whose single-record Writes travel over its
	// WriteStream, 64 out at once.
	c, id := cellJournal(t)
	ctx := testCtx(t)
	j := dial(t, c.Addrs()...).Journal(id)
	w := j.NewWriter(seeded(7), client.WithWindow(256), client.WithWritesOut(64), client.WithoutCoalescing())
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatalf("claim: %v", err)
	}

	// Act: 500 appends, then wait for all of them.
	var ops []*client.AppendOp
	for i := range 500 {
		op, err := w.AppendAsync(ctx, []byte(fmt.Sprintf("st-%d", i)))
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		ops = append(ops, op)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}

	// Assert: each at its own position, in order, none refused, and they
	// read back.
	for i, op := range ops {
		if seq, err := op.Wait(ctx); err != nil || seq != journal.Seq(i+1) {
			t.Fatalf("append %d: seq %d, %v", i, seq, err)
		}
	}
	st := w.Stats()
	if st.Refused != 0 || st.Writes != 500 || st.Appends != 500 || st.Sends < 500 {
		t.Fatalf("stats %+v: want 500 Writes sent over the stream and none refused (a stream keeps their order)", st)
	}
	recs := testcell.ReadAll(t, ctx, j, 1, 501)
	if len(recs) != 500 || string(recs[0]) != "st-0" || string(recs[499]) != "st-499" {
		t.Fatalf("read back %d records, %q … %q", len(recs), recs[0], recs[len(recs)-1])
	}
}
