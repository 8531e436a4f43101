// This file checks kill -9 of the leader under a concurrent write load
// against a real cell (cell_test.go): the cell fails over, every
// acknowledged write stays readable with its bytes, and the whole client
// history (writes and reads, ambiguous ones included) is linearizable
// (sim/lincheck's journal checker, with porcupine as a second opinion); the
// failover time is logged.

package blackbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/sim/lincheck"
)

// checkHistory decides the client history with the journal checker and
// asks porcupine for a second opinion: a disagreement is a checker bug.
func checkHistory(t *testing.T, ops []lincheck.Op) {
	t.Helper()
	jd := lincheck.Judge(journal.ModeSingle, ops, 30*time.Second)
	if v := jd.Verdict; v.Result != "Ok" {
		t.Fatalf("the client history of %d operations is not linearizable: %s", len(ops), v.Describe(ops))
	}
	if jd.Disagree() {
		t.Fatalf("the journal checker found %d operations linearizable, porcupine answered %s", len(ops), jd.Porcupine)
	}
}

// recorder collects the client history for lincheck.
type recorder struct {
	mu  sync.Mutex
	ops []lincheck.Op
	t0  time.Time
}

func (r *recorder) add(client int, in lincheck.Input, out lincheck.Output, call time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, lincheck.Op{Client: client, In: in, Out: out, Call: int64(call.Sub(r.t0)), Return: int64(time.Since(r.t0))})
}

// Client ids of the recorded history, one per role of the test.
const (
	historyWriter = iota
	historyClaimer
	historyReader
)

func TestKillTheLeaderUnderLoad(t *testing.T) {
	// Arrange: a formed cell, one Client over its three machines, the
	// journal claimed (retrying until some node leads).
	c := newCell(t)
	ref := c.initCell()
	id := mustID(t, ref)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn := c.dial(ctx, c.procs)
	j := conn.Journal(id)
	rec := &recorder{t0: time.Now()}
	uuid := journal.LeaderUUID{Hi: 0xfeed, Lo: 1}
	deadline := time.Now().Add(20 * time.Second)
	for !claim(ctx, j, rec, uuid) {
		if time.Now().After(deadline) {
			t.Fatal("no leader elected")
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Act: write one record at a time; after 20 acknowledgements kill the
	// leader with SIGKILL and keep writing until 60.
	type acked struct {
		seq journal.Seq
		rec []byte
	}
	var acks []acked
	var killedAt, recoveredAt time.Time
	next := journal.FirstSeq
	var pending *journal.WriteRequest
	for len(acks) < 60 && time.Now().Before(deadline.Add(30*time.Second)) {
		if len(acks) == 20 && killedAt.IsZero() {
			leader := waitRole(t, ctx, conn, id, "leader")
			_ = c.procs[leader].cmd.Process.Signal(os.Kill)
			<-c.procs[leader].done
			killedAt = time.Now()
			t.Logf("killed the leader, machine %d", leader+1)
		}
		req := pending
		if req == nil {
			req = &journal.WriteRequest{Leader: uuid, Seq: next, Records: [][]byte{[]byte(fmt.Sprintf("r%d", next))}}
		}
		out, ok := write(ctx, j, rec, *req)
		switch {
		case !ok:
			pending = req // no verdict: retry the identical write
			time.Sleep(20 * time.Millisecond)
		case out.Kind == journal.Accepted || out.Kind == journal.Duplicate:
			acks = append(acks, acked{seq: req.Seq, rec: req.Records[0]})
			next = req.Seq + 1
			pending = nil
			if !killedAt.IsZero() && recoveredAt.IsZero() {
				recoveredAt = time.Now()
			}
		default:
			t.Fatalf("write at %d: %s", req.Seq, out)
		}
	}
	if len(acks) < 60 {
		t.Fatalf("only %d writes acknowledged", len(acks))
	}
	t.Logf("failover: first write acknowledged %v after the kill", recoveredAt.Sub(killedAt).Round(time.Millisecond))

	// Check: every acknowledged write is readable with its bytes, from the
	// survivors (a Client of them alone), and the whole history is
	// linearizable.
	var alive []*proc
	for _, p := range c.procs {
		if p.cmd.ProcessState == nil {
			alive = append(alive, p)
		}
	}
	got := readAll(ctx, c.dial(ctx, alive).Journal(id), rec, next)
	for _, a := range acks {
		if !bytes.Equal(got[a.seq], a.rec) {
			t.Fatalf("acknowledged write at %d reads back %q, want %q", a.seq, got[a.seq], a.rec)
		}
	}
	checkHistory(t, rec.ops)
	ambiguous := 0
	for _, op := range rec.ops {
		if op.Out.Ambiguous {
			ambiguous++
		}
	}
	t.Logf("history of %d operations (%d ambiguous) checked linearizable", len(rec.ops), ambiguous)
}
