package pebblestore

// These tests inject I/O faults with Pebble's errorfs (vfs/errorfs): an EIO
// on the WAL's fsync must surface as a *storage.IOError with outcome Unknown
// that still names EIO, must fail the whole DB (every journal refuses writes
// and reads with ErrFailed), and a reopened DB must boot to a state that
// holds every synced op and either holds or lacks the failed batch whole.

import (
	"errors"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/storetest"
)

func TestSyncEIOFailsTheDB(t *testing.T) {
	// Arrange: two journals with synced records.
	h := newMemHarness(t)
	j := h.db.Journal(storetest.JournalID)
	if err := j.Format(storetest.TestMarker()); err != nil {
		t.Fatal(err)
	}
	b1 := paxos.Ballot{Round: 1, Node: 1}
	if err := j.Apply([]paxos.WriteOp{storetest.Accept(1, b1, 1)}, true); err != nil {
		t.Fatal(err)
	}

	// Act: the WAL's next fsync fails; the commit carries two journals.
	h.fault.on.Store(true)
	err := h.db.Commit(
		Batch{Journal: storetest.JournalID, Ops: []paxos.WriteOp{storetest.Accept(2, b1, 1)}, Sync: true},
		Batch{Journal: neighbours[0], Ops: []paxos.WriteOp{storetest.Accept(20, b1, 1)}, Sync: true},
	)

	// Check: an IOError of unknown outcome naming EIO, and a failed DB.
	var ioe *storage.IOError
	if !errors.As(err, &ioe) || ioe.Outcome != storage.OutcomeUnknown || ioe.Op != "sync" {
		t.Fatalf("commit with a failed fsync: %v, want an IOError(sync, unknown)", err)
	}
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("the error lost its cause: %v", err)
	}
	t.Logf("surfaced as: %v", err)
	h.fault.on.Store(false) // the disk is healthy again; the DB must still refuse
	for name, call := range map[string]func() error{
		"apply":         func() error { return j.Apply([]paxos.WriteOp{storetest.Accept(3, b1, 1)}, true) },
		"relaxed apply": func() error { return j.Apply([]paxos.WriteOp{{Kind: paxos.OpSetChosenIndex, Slot: 1}}, false) },
		"other journal": func() error {
			return h.db.Journal(neighbours[1]).Apply([]paxos.WriteOp{storetest.Accept(30, b1, 1)}, true)
		},
		"rewrite": func() error { return j.Rewrite(1, b1, storetest.Cmd(1, 1)) },
		"format":  func() error { return h.db.Journal(neighbours[2]).Format(markerOf(neighbours[2])) },
		"boot":    func() error { _, err := j.Boot(); return err },
		"scrub":   func() error { _, err := j.Scrub(1, 10); return err },
	} {
		if err := call(); !errors.Is(err, storage.ErrFailed) {
			t.Errorf("%s on a failed DB: %v, want ErrFailed", name, err)
		}
	}
	// Reopen twice: once from what a power loss keeps (only synced data: the
	// failed batch is gone), once from the disk as a clean close left it
	// (the failed batch may be there). Either way slot 1 is there and the
	// group commit is all there or all gone across both journals.
	lost := h.mem.CrashClone(vfs.CrashCloneCfg{})
	if err := h.db.Close(); err != nil {
		t.Fatalf("close of a failed DB: %v", err)
	}
	for _, c := range []struct {
		name string
		fs   *vfs.MemFS
	}{{"clean reopen", h.mem}, {"power loss", lost}} {
		h.mem = c.fs
		h.open()
		b, err := h.db.Journal(storetest.JournalID).Boot()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		nb, err := h.db.Journal(neighbours[0]).Boot()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		_, _, has1 := b.Accepted(1)
		_, _, has2 := b.Accepted(2)
		_, _, has20 := nb.Accepted(20)
		t.Logf("%s: failed batch present: %v", c.name, has2)
		if !has1 || has2 != has20 || (c.fs == lost && has2) {
			t.Fatalf("%s: slot 1 %v, slot 2 %v, neighbour slot 20 %v", c.name, has1, has2, has20)
		}
		if err := h.db.Journal(storetest.JournalID).Apply([]paxos.WriteOp{storetest.Accept(3, b1, 1)}, true); err != nil {
			t.Fatalf("%s: a reopened DB refuses writes: %v", c.name, err)
		}
		if c.fs != lost {
			_ = h.db.Close()
		}
	}
}
