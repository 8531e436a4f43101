// This file checks the network side of the client (Dial, Client, Journal,
// Writer, Reader) against a real cell: three machines started in this
// process by internal/testcell (Pebble stores in a temporary dir, gRPC on
// 127.0.0.1, formed by the Machine.CellInit RPC), with 20 ms ticks. The
// cell has one journal per test, so each test meets a journal nobody else
// touched. It checks: a Writer claims, appends one by one and pipelined,
// and every record reads back in order; single-record writes, sixteen out
// at once over the Writer's WriteStream, land in order and none is refused;
// a Writer whose journal another Writer took over gets ErrSuperseded and
// stops, while the new Writer's records follow the old one's, and reading
// the position back (Journal.Resolve) settles which write holds it; a
// Reader that starts below a truncation gets a *GapError naming exactly the
// truncated range, then the records after it; a claim sent to a follower
// follows the NotLeader hint to the leader and never asks the other
// follower, and the Writer's stream then goes straight to the leader; a
// write whose answer a TCP proxy loses is reported ambiguous (Lost) by the
// Journal handle, and resending the identical write lands it exactly once,
// as does a Writer's own resend; a Writer keeps writing while the leader's
// machine is stopped under it (a cell of its own), and every append it was
// told landed reads back at its position; a server that cannot be reached
// gives "not sent", never ambiguous; and an unknown journal is reported at
// once. Outcomes are deterministic; only timings vary.
package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
	"github.com/parosdb/paros/client/sansio"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/internal/testcell"
)

// shared is the package's shared cells: one journal for each test or
// example that uses one.
var shared testcell.Pool

func TestMain(m *testing.M) {
	code := m.Run()
	_ = shared.Close()
	os.Exit(code)
}

// sharedJournal returns a shared cell and a journal no other test or
// example uses, once that journal has a leader.
func sharedJournal() (*testcell.Cell, journal.ID, error) { return shared.Journal() }

// cellJournal is sharedJournal for a test; it skips under -short.
func cellJournal(t *testing.T) (*testcell.Cell, journal.ID) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a three-machine cell")
	}
	c, id, err := sharedJournal()
	if err != nil {
		t.Fatal(err)
	}
	return c, id
}

// dial returns a Client of addrs, closed when the test ends.
func dial(t *testing.T, addrs ...string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addrs, client.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// rec is a batch of one record, for raw requests.
func rec(s string) [][]byte { return [][]byte{[]byte(s)} }

// seeded is a Writer option drawing claim uuids from seed, so that runs
// repeat.
func seeded(seed uint64) client.WriterOption { return client.WithUUIDs(sansio.SeededUUIDs(seed)) }

func TestAWriterAppendsOneByOneAndPipelinedAndEveryRecordReadsBack(t *testing.T) {
	// Arrange: a claimed Writer with the default options.
	c, id := cellJournal(t)
	ctx := testCtx(t)
	j := dial(t, c.Addrs()...).Journal(id)
	w := j.NewWriter(seeded(1))
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatalf("claim: %v", err)
	}

	// Act: three appends one by one; then a second Writer with a window
	// of 16 claims and pipelines 200.
	var want [][]byte
	for i := range 3 {
		r := fmt.Sprintf("one-%d", i)
		seq, err := w.Append(ctx, []byte(r))
		if err != nil || seq != journal.Seq(i+1) {
			t.Fatalf("append %d: seq %d, %v", i, seq, err)
		}
		want = append(want, []byte(r))
	}
	w.Close()
	piped := j.NewWriter(seeded(2), client.WithWindow(16))
	defer piped.Close()
	if err := piped.Claim(ctx); err != nil {
		t.Fatalf("claim of the pipelining writer: %v", err)
	}
	var ops []*client.AppendOp
	for i := range 200 {
		r := fmt.Sprintf("piped-%d", i)
		op, err := piped.AppendAsync(ctx, []byte(r))
		if err != nil {
			t.Fatalf("append async %d: %v", i, err)
		}
		ops = append(ops, op)
		want = append(want, []byte(r))
	}
	flushErr := piped.Flush(ctx)

	// Check: every append landed where it was placed, and reads back in
	// order.
	if flushErr != nil {
		t.Fatalf("flush: %v", flushErr)
	}
	for i, op := range ops {
		if seq, err := op.Wait(ctx); err != nil || seq != journal.Seq(4+i) || op.Seq() != seq {
			t.Fatalf("pipelined append %d: seq %d (op says %d), %v", i, seq, op.Seq(), err)
		}
	}
	got := testcell.ReadAll(t, ctx, j, journal.FirstSeq, piped.NextSeq())
	if len(got) != len(want) {
		t.Fatalf("read %d records, wrote %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("position %d holds %q, want %q", i+1, got[i], want[i])
		}
	}
	if !errors.Is(w.Stopped(), client.ErrClosed) {
		t.Fatalf("a closed Writer says it stopped with %v, want ErrClosed", w.Stopped())
	}
	if _, err := w.Append(ctx, []byte("after close")); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("append after Close: %v, want ErrClosed", err)
	}
	t.Logf("writer stats: %+v", piped.Stats())
}

func TestSingleRecordWritesSixteenOutOverTheStreamLandInOrderNoneRefused(t *testing.T) {
	// Arrange: a Writer that sends every append as its own Write, sixteen
	// out at once. The stream keeps their order, so none overtakes another.
	c, id := cellJournal(t)
	ctx := testCtx(t)
	j := dial(t, c.Addrs()...).Journal(id)
	w := j.NewWriter(seeded(5), client.WithWindow(64), client.WithWritesOut(16), client.WithoutCoalescing())
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatal(err)
	}

	// Act: 300 appends.
	for i := range 300 {
		if _, err := w.AppendAsync(ctx, []byte(fmt.Sprintf("p%d", i))); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	flushErr := w.Flush(ctx)

	// Check: each append is its own Write, none was refused, every attempt
	// beyond the first was a resend after an ambiguous reply, and the
	// records read back in order.
	st := w.Stats()
	if flushErr != nil || st.Appends != 300 || st.Writes != 300 || st.Refused != 0 || st.Sends < 300+st.Ambiguous {
		t.Fatalf("flush %v, stats %+v", flushErr, st)
	}
	got := testcell.ReadAll(t, ctx, j, journal.FirstSeq, w.NextSeq())
	if len(got) != 300 {
		t.Fatalf("read %d records, appended 300", len(got))
	}
	for i, b := range got {
		if string(b) != fmt.Sprintf("p%d", i) {
			t.Fatalf("position %d holds %q", i+1, b)
		}
	}
	t.Logf("writer stats: %+v", st)
}

func TestASupersededWriterStopsAndResolveSettlesThePosition(t *testing.T) {
	// Arrange: Writer A holds the journal and wrote two records.
	c, id := cellJournal(t)
	ctx := testCtx(t)
	j := dial(t, c.Addrs()...).Journal(id)
	a := j.NewWriter(seeded(10))
	defer a.Close()
	if err := a.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Append(ctx, []byte("a1"), []byte("a2")); err != nil {
		t.Fatal(err)
	}
	fenceA := a.Fence()

	// Act: Writer B takes the journal over; A tries to append.
	b := j.NewWriter(seeded(20))
	defer b.Close()
	claimErr := b.Claim(ctx)
	_, staleErr := a.Append(ctx, []byte("a3"))
	_, againErr := a.Append(ctx, []byte("a4"))
	seqB, errB := b.Append(ctx, []byte("b1"))

	// Check: A is superseded and stays stopped; B writes right after A.
	if claimErr != nil {
		t.Fatalf("takeover: %v", claimErr)
	}
	if !errors.Is(staleErr, client.ErrSuperseded) {
		t.Fatalf("superseded writer's append: %v, want ErrSuperseded", staleErr)
	}
	if !errors.Is(againErr, client.ErrSuperseded) || !errors.Is(a.Stopped(), client.ErrSuperseded) {
		t.Fatalf("a stopped writer must refuse further appends: %v (stopped: %v)", againErr, a.Stopped())
	}
	if errB != nil || seqB != 3 {
		t.Fatalf("new writer's append: seq %d, %v; want 3", seqB, errB)
	}
	got := testcell.ReadAll(t, ctx, j, 1, 4)
	if string(got[0]) != "a1" || string(got[1]) != "a2" || string(got[2]) != "b1" {
		t.Fatalf("log %q, want a1 a2 b1", got)
	}
	// Reading position 3 back settles both writers' claims on it.
	lostA, errA := j.Resolve(ctx, journal.WriteRequest{Leader: fenceA, Seq: 3, Records: rec("a3")})
	wonB, errB2 := j.Resolve(ctx, journal.WriteRequest{Leader: b.Fence(), Seq: 3, Records: rec("b1")})
	if errA != nil || lostA.Kind != sansio.ResolvedNotWritten || errB2 != nil || wonB.Kind != sansio.ResolvedWritten {
		t.Fatalf("resolve: A's a3 %s (%v), B's b1 %s (%v); want not-written and written", lostA.Kind, errA, wonB.Kind, errB2)
	}
}

func TestAReaderBelowATruncationGetsTheGapThenTheRecordsAfterIt(t *testing.T) {
	// Arrange: ten records, then a truncation below position 7.
	c, id := cellJournal(t)
	ctx := testCtx(t)
	j := dial(t, c.Addrs()...).Journal(id)
	w := j.NewWriter(seeded(30))
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := w.Append(ctx, []byte(fmt.Sprintf("r%d", i+1))); err != nil {
			t.Fatal(err)
		}
	}
	view, err := w.Truncate(ctx, 7)
	if err != nil || view.FirstSeq != 7 {
		t.Fatalf("truncate: %+v, %v", view, err)
	}

	// Act: a Reader from position 1.
	r := j.NewReader(1, client.WithTailWait(0))
	first, err1 := r.Next(ctx)
	cursorAfterGap := r.Cursor()
	second, err2 := r.Next(ctx)

	// Check: a gap [1,7), then records 7..10.
	var gap *client.GapError
	if !errors.As(err1, &gap) || gap.From != 1 || gap.To != 7 || first != nil || cursorAfterGap != 7 {
		t.Fatalf("first read: %v, %v (cursor %d); want a gap [1,7) and the cursor at 7", first, err1, cursorAfterGap)
	}
	if err2 != nil || len(second) != 4 || second[0].Seq != 7 || string(second[0].Data) != "r7" ||
		second[3].Seq != 10 || string(second[3].Data) != "r10" {
		t.Fatalf("second read: %v, %v; want records r7..r10 at 7..10", second, err2)
	}
}

func TestAClaimSentToAFollowerFollowsTheHintAndTheStreamGoesToTheLeader(t *testing.T) {
	// Arrange: a Client that lists a follower first, the other follower
	// second and the leader last.
	c, id := cellJournal(t)
	ctx := testCtx(t)
	leader, err := c.WaitLeader(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var followers []int
	for i := range c.Nodes {
		if i != leader {
			followers = append(followers, i)
		}
	}
	first, other := c.Nodes[followers[0]], c.Nodes[followers[1]]
	waitHint(t, ctx, c, id, leader, followers...)
	cl := dial(t, first.Addr, other.Addr, c.Nodes[leader].Addr)
	const setLeader, write, stream = "/paros.v1.Journal/SetLeader", "/paros.v1.Journal/Write", "/paros.v1.Journal/WriteStream"
	methods := []string{setLeader, write, stream}
	before := map[*testcell.Node]map[string]int64{}
	for _, n := range c.Nodes {
		before[n] = map[string]int64{}
		for _, m := range methods {
			before[n][m] = n.Calls(m)
		}
	}

	// Act: claim (sent to the first follower), then append.
	w := cl.Journal(id).NewWriter(seeded(40))
	defer w.Close()
	claimErr := w.Claim(ctx)
	_, appendErr := w.Append(ctx, []byte("via the hint"))

	// Check: the claim went follower -> leader, never to the other
	// follower; the append's stream went straight to the leader.
	if claimErr != nil || appendErr != nil {
		t.Fatalf("claim %v, append %v", claimErr, appendErr)
	}
	delta := func(n *testcell.Node, m string) int64 { return n.Calls(m) - before[n][m] }
	if got := delta(first, setLeader); got != 1 {
		t.Errorf("the first follower got %d SetLeader calls, want 1", got)
	}
	if got := delta(c.Nodes[leader], setLeader); got != 1 {
		t.Errorf("the leader got %d SetLeader calls, want 1", got)
	}
	if got := delta(other, setLeader) + delta(other, write) + delta(other, stream); got != 0 {
		t.Errorf("the other follower got %d calls; the hint must be followed first", got)
	}
	if got := delta(first, write) + delta(first, stream); got != 0 {
		t.Errorf("the first follower got %d writes after the leader was known", got)
	}
	if got := delta(c.Nodes[leader], stream); got != 1 {
		t.Errorf("the leader got %d WriteStreams, want 1", got)
	}
}

// waitHint waits until every follower names the leader as its hint, so a
// NotLeader answer carries it.
func waitHint(t *testing.T, ctx context.Context, c *testcell.Cell, id journal.ID, leader int, followers ...int) {
	t.Helper()
	lead, err := c.Inspect(ctx, leader, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range followers {
		for {
			in, err := c.Inspect(ctx, f, id)
			if err == nil && in.Leader == lead.Node {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("machine %d never named the leader: %+v, %v", f+1, in, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func TestALostAnswerIsAmbiguousAndTheIdenticalResendLandsOnce(t *testing.T) {
	// Arrange: clients reach the leader through a proxy that can lose an
	// answer; a claimed Writer wrote one record.
	c, id := cellJournal(t)
	ctx := testCtx(t)
	leader, err := c.WaitLeader(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := testcell.NewProxy(c.Nodes[leader].Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	addrs := []string{proxy.Addr} // asked first; the followers in case the leadership moves
	for i, n := range c.Nodes {
		if i != leader {
			addrs = append(addrs, n.Addr)
		}
	}
	j := dial(t, addrs...).Journal(id)
	w := j.NewWriter(seeded(50))
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, []byte("before")); err != nil {
		t.Fatal(err)
	}
	fence := w.Fence()

	// Act 1: a raw fenced write at position 2 whose answer is lost, then
	// the identical write again.
	req := journal.WriteRequest{Journal: id, Leader: fence, Seq: 2, Records: rec("lost answer")}
	proxy.LoseNextAnswer()
	lost, lostErr := j.Write(ctx, req)
	again, againErr := j.Write(ctx, req)

	// Check 1: the first is ambiguous (Lost), never "not done"; the resend
	// is Accepted (the first never landed) or Duplicate (it did).
	if lostErr != nil || !lost.Ambiguous() || lost.NoVerdict != journal.Lost {
		t.Fatalf("a write whose answer was lost: %+v, %v; want an ambiguous Lost reply", lost, lostErr)
	}
	if againErr != nil || (again.Outcome.Kind != journal.Accepted && again.Outcome.Kind != journal.Duplicate) ||
		again.Outcome.Seq != 2 {
		t.Fatalf("the identical resend: %+v, %v; want accepted or duplicate at 2", again, againErr)
	}

	// Act 2: the Writer's own write at position 3 loses its answer. The
	// Writer holds position 2 as its own next, so it claims anew first.
	if err := w.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	ambiguousBefore := w.Stats().Ambiguous
	proxy.LoseNextAnswer()
	seq, appendErr := w.Append(ctx, []byte("writer resend"))

	// Check 2: the Writer resent it and reports it written once.
	if appendErr != nil || seq != 3 {
		t.Fatalf("append through a lost answer: seq %d, %v", seq, appendErr)
	}
	if w.Stats().Ambiguous <= ambiguousBefore {
		t.Fatalf("the Writer saw no ambiguous reply: %+v", w.Stats())
	}
	got := testcell.ReadAll(t, ctx, j, 1, 4)
	if len(got) != 3 || string(got[1]) != "lost answer" || string(got[2]) != "writer resend" {
		t.Fatalf("log %q; want each write exactly once at its position", got)
	}
	if st := w.Stats(); st.Appends != 2 {
		t.Fatalf("stats %+v; want the two appends written", st)
	}
}

func TestAServerThatCannotBeReachedIsNotSentNeverAmbiguous(t *testing.T) {
	// Arrange: a Client whose one server sits behind a proxy, which is
	// then cut (every connection closed, new ones closed at once); wait
	// until the Client saw the connection go.
	c, id := cellJournal(t)
	ctx := testCtx(t)
	proxy, err := testcell.NewProxy(c.Nodes[0].Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	cl := dial(t, proxy.Addr)
	j := cl.Journal(id)
	proxy.Cut()
	for admin.New(cl).Inspect(ctx, journal.ID{})[0].Err == nil {
		if ctx.Err() != nil {
			t.Fatal("the Client never saw the cut")
		}
		time.Sleep(5 * time.Millisecond)
	}
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()

	// Act.
	reply, err := j.Write(wctx, journal.WriteRequest{Leader: journal.LeaderUUID{Lo: 1}, Seq: 1, Records: rec("x")})

	// Check: the context's error — nothing was sent — never an ambiguous
	// Lost reply.
	if !errors.Is(err, context.DeadlineExceeded) || reply.NoVerdict == journal.Lost {
		t.Fatalf("write to nobody: %+v, %v; want not sent (DeadlineExceeded)", reply, err)
	}
}

func TestAnUnknownJournalIsReportedAtOnce(t *testing.T) {
	// Arrange: a journal the cell does not serve.
	c, _ := cellJournal(t)
	ctx := testCtx(t)
	j := dial(t, c.Addrs()...).Journal(journal.ID{Tenant: 0xdead, Journal: 0xbeef})
	start := time.Now()

	// Act.
	reply, werr := j.Write(ctx, journal.WriteRequest{Leader: journal.LeaderUUID{Lo: 1}, Seq: 1, Records: rec("x")})
	page, rerr := j.Read(ctx, journal.ReadRequest{FromSeq: 1})
	_, nextErr := j.NewReader(1).Next(ctx)

	// Check: UnknownJournal from each, without riding out the retry rounds.
	if werr != nil || reply.NoVerdict != journal.UnknownJournal || reply.Ambiguous() {
		t.Fatalf("write: %+v, %v", reply, werr)
	}
	if rerr != nil || !page.UnknownJournal {
		t.Fatalf("read: %+v, %v", page, rerr)
	}
	if !errors.Is(nextErr, client.ErrUnknownJournal) {
		t.Fatalf("Reader.Next: %v, want ErrUnknownJournal", nextErr)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("an unknown journal took %v to report", d)
	}
}

func TestAWriterRidesOutALeaderStop(t *testing.T) {
	// Arrange: a cell of its own (this test stops a machine) and a Writer
	// with a window of sixteen appends.
	if testing.Short() {
		t.Skip("starts a three-machine cell")
	}
	ctx := testCtx(t)
	c, err := testcell.Start(ctx, t.TempDir(), testcell.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id := c.Journals[0]
	leader, err := c.WaitLeader(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	j := dial(t, c.Addrs()...).Journal(id)
	w := j.NewWriter(seeded(60), client.WithWindow(16))
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatal(err)
	}

	// Act: 600 appends; the leader's machine stops after the 200th is
	// queued.
	var ops []*client.AppendOp
	for i := range 600 {
		if i == 200 {
			if err := c.Stop(leader); err != nil {
				t.Fatal(err)
			}
		}
		op, err := w.AppendAsync(ctx, []byte(fmt.Sprintf("r%d", i)))
		if err != nil {
			t.Fatalf("append %d: %v (stats %+v)", i, err, w.Stats())
		}
		ops = append(ops, op)
	}
	flushErr := w.Flush(ctx)

	// Check: every append landed where it was placed, exactly once.
	if flushErr != nil {
		t.Fatalf("flush: %v (stats %+v)", flushErr, w.Stats())
	}
	got := testcell.ReadAll(t, ctx, j, journal.FirstSeq, w.NextSeq())
	if len(got) != len(ops) {
		t.Fatalf("read %d records, appended %d", len(got), len(ops))
	}
	for i, op := range ops {
		seq, err := op.Wait(ctx)
		if err != nil || seq != journal.Seq(i+1) || string(got[i]) != fmt.Sprintf("r%d", i) {
			t.Fatalf("append %d: seq %d, %v; position %d holds %q", i, seq, err, i+1, got[i])
		}
	}
	t.Logf("writer stats across the stop: %+v", w.Stats())
}
