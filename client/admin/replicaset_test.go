// This file checks Client.SetReplicas (replicaset.go) against a real cell
// from internal/testcell: three nodes formed without replicas, records
// appended, then an idle replica machine (`paros serve --role replica` on
// an empty data dir) named by SetReplicas joins the cell, catches up and
// serves every record to a Client of it alone; the same call again is a
// no-op; a node named as a replica is refused with ErrNotReplica; and once
// the list is emptied, a read from the removed replica alone goes unserved
// while the nodes still take writes.
package admin_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/internal/testcell"
)

func TestSetReplicasAddsAFreshReplicaThatCatchesUpAndRemovesIt(t *testing.T) {
	// Arrange: a cell of three nodes, no replica, twenty records; an idle
	// replica machine; an operator's Client of the nodes.
	if testing.Short() {
		t.Skip("starts a cell of four machines")
	}
	ctx := testCtx(t)
	c, err := testcell.Start(ctx, t.TempDir(), testcell.Options{Journals: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	id := c.Journals[0]
	if _, err := c.WaitLeader(ctx, id); err != nil {
		t.Fatal(err)
	}
	opsc, ops := dial(t, c.Addrs()...)
	testcell.AppendN(t, ctx, opsc.Journal(id), 20)
	fresh, err := c.AddIdleReplica()
	if err != nil {
		t.Fatal(err)
	}

	// Act: add it, twice; name a node as a replica.
	addErr := ops.SetReplicas(ctx, []string{fresh.Addr})
	againErr := ops.SetReplicas(ctx, []string{fresh.Addr})
	nodeErr := ops.SetReplicas(ctx, []string{fresh.Addr, c.Addrs()[0]})

	// Check: it serves every record, alone.
	if addErr != nil || againErr != nil {
		t.Fatalf("set replicas: %v, again: %v", addErr, againErr)
	}
	if !errors.Is(nodeErr, admin.ErrNotReplica) {
		t.Errorf("a node named as a replica: %v, want ErrNotReplica", nodeErr)
	}
	// A fresh replica catches up by itself, in the background: under the
	// race detector that takes a moment, and until then its reads go
	// unserved. Wait for its first served read, then check every record.
	freshJ := dialClient(t, fresh.Addr).Journal(id)
	for caughtUp := time.Now().Add(20 * time.Second); ; {
		if _, err := freshJ.Read(ctx, journal.ReadRequest{Journal: id, FromSeq: journal.FirstSeq}); err == nil || time.Now().After(caughtUp) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	testcell.CheckRecords(t, ctx, freshJ, 20)

	// Act: remove it.
	if err := ops.SetReplicas(ctx, nil); err != nil {
		t.Fatalf("remove the replica: %v", err)
	}

	// Check: a read from it alone goes unserved within a few seconds; the
	// nodes still take writes.
	alone := dialClient(t, fresh.Addr).Journal(id)
	removed := time.Now()
	deadline := removed.Add(5 * time.Second)
	for {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		rr, err := alone.Read(rctx, journal.ReadRequest{FromSeq: 1})
		cancel()
		if err == nil && !rr.Served || errors.Is(err, client.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
			t.Logf("the removed replica's read went unserved %v after the removal (served %v, %v)",
				time.Since(removed).Round(time.Millisecond), rr.Served, err)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the removed replica still serves reads: served %v, %v", rr.Served, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	w := opsc.Journal(id).NewWriter(seeded(91))
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatalf("claim after the removal: %v", err)
	}
	if _, err := w.Append(ctx, []byte("r21")); err != nil {
		t.Fatalf("append after the removal: %v", err)
	}
}
