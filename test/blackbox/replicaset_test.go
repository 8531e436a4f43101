package blackbox

// This file checks `parosctl replicas set` end to end: a secure cell of
// three `paros serve` nodes formed with no replica, and a Writer of the
// public client appending one record at a time under load. A fresh
// `paros serve --role replica` on an empty data dir is named by `parosctl
// replicas set`; it joins the cell, catches up, and must serve, from it
// alone, the latest acknowledged append (read-your-acknowledged-writes)
// and then every acknowledged record in order. The same command again is a
// no-op. Then `parosctl replicas set none` removes it: a read from it alone
// must go unserved within a few seconds, while the Writer goes on
// appending through the nodes, and every machine keeps running.

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
)

// Bounds of the replicas set test.
const (
	// replicaSetLoadBefore is how long the load runs before the replica is
	// added; replicaSetServeWait bounds the wait for its first served read
	// of the latest acknowledged append; replicaSetUnservedWait the wait for
	// its reads to go unserved once removed; replicaSetLoadAfter how long
	// the load goes on after that.
	replicaSetLoadBefore   = time.Second
	replicaSetServeWait    = 15 * time.Second
	replicaSetUnservedWait = 5 * time.Second
	replicaSetLoadAfter    = time.Second
)

func TestReplicasSetAddsAFreshReplicaUnderLoadAndRemovesIt(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cell of four processes")
	}
	// Arrange: three nodes formed without replicas; a claimed Writer
	// appending under load; an idle replica machine on an empty data dir.
	c := newCell(t)
	id := mustID(t, c.initCell())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := c.dial(ctx, c.procs).Journal(id).NewWriter()
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatalf("claim: %v", err)
	}
	load := startAppendLoad(ctx, w, "replicaset")
	defer load.stop()
	acks := load.acks
	base := filepath.Dir(c.caDir)
	fresh := &proc{addr: freeAddr(t), data: filepath.Join(base, "r1"), args: []string{"--role", "replica"}}
	c.issue(fresh, filepath.Join(base, "pki", "r1"))
	c.start(fresh)
	t.Cleanup(func() {
		if fresh.cmd.ProcessState == nil {
			kill(fresh)
		}
	})
	time.Sleep(replicaSetLoadBefore)

	// Act: name the replica, twice.
	start := time.Now()
	out, code := c.ctl("replicas", "set", fresh.public())
	added := time.Since(start)
	if code != 0 {
		t.Fatalf("replicas set: exit %d: %s\n%s", code, out, fresh.stderr)
	}
	if out, code := c.ctl("replicas", "set", fresh.public()); code != 0 {
		t.Fatalf("replicas set again: exit %d: %s", code, out)
	}
	addedAt := acks.last.Load()

	// Check: from it alone, a read of the latest acknowledged append is
	// served, and then every acknowledged record reads back in order.
	alone := c.dial(ctx, []*proc{fresh}).Journal(id)
	var served time.Duration
	for {
		at := journal.Seq(acks.last.Load())
		rctx, rcancel := context.WithTimeout(ctx, replicaReadTimeout)
		rr, err := alone.Read(rctx, journal.ReadRequest{FromSeq: at, Limit: 1})
		rcancel()
		if err == nil && rr.Served {
			if len(rr.Records) == 0 || !bytes.Equal(rr.Records[0], acks.get(at)) {
				t.Fatalf("the new replica served position %d without the acknowledged append: %d records", at, len(rr.Records))
			}
			served = time.Since(start)
			break
		}
		if time.Since(start) > replicaSetServeWait {
			t.Fatalf("the new replica served no read of the latest append %v after replicas set (last: served %v, %v)\n%s",
				replicaSetServeWait, rr.Served, err, fresh.stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	end := journal.Seq(acks.last.Load()) + 1
	got := readBack(t, ctx, c, fresh, id, end)
	if journal.Seq(len(got)) < end-1 {
		t.Fatalf("the new replica reads %d records back, want %d", len(got), end-1)
	}
	for k, b := range got[:end-1] {
		if seq := journal.FirstSeq + journal.Seq(k); !bytes.Equal(b, acks.get(seq)) {
			t.Fatalf("the new replica reads %q at %d, want %q", b, seq, acks.get(seq))
		}
	}
	t.Logf("replicas set took %v at position %d; the new replica served the latest append %v after it and read back %d records",
		added.Round(time.Millisecond), addedAt, served.Round(time.Millisecond), end-1)

	// Act: remove it.
	if out, code := c.ctl("replicas", "set", "none"); code != 0 {
		t.Fatalf("replicas set none: exit %d: %s", code, out)
	}
	removed := time.Now()
	removedAt := acks.last.Load()

	// Check: a read from it alone goes unserved within a few seconds, the
	// Writer goes on, and every machine is still running.
	for {
		rctx, rcancel := context.WithTimeout(ctx, time.Second)
		rr, err := alone.Read(rctx, journal.ReadRequest{FromSeq: journal.FirstSeq, Limit: 1})
		rcancel()
		if err == nil && !rr.Served || errors.Is(err, client.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
			t.Logf("the removed replica's read went unserved %v after replicas set none (served %v, %v)",
				time.Since(removed).Round(time.Millisecond), rr.Served, err)
			break
		}
		if time.Since(removed) > replicaSetUnservedWait {
			t.Fatalf("the removed replica still serves reads %v after replicas set none: served %v, %v",
				replicaSetUnservedWait, rr.Served, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(replicaSetLoadAfter)
	if err := load.stop(); err != nil {
		t.Fatal(err)
	}
	if last := acks.last.Load(); last <= removedAt {
		t.Fatalf("no append acknowledged after the removal (last %d, %d at the removal)", last, removedAt)
	}
	checkRunning(t, c)
	select {
	case err := <-fresh.done:
		t.Fatalf("the removed replica exited: %v\n%s", err, fresh.stderr)
	default:
	}
	t.Logf("%d appends acknowledged in all, %d after the removal", acks.last.Load(), acks.last.Load()-removedAt)
}
