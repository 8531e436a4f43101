package machine

import (
	"testing"

	"github.com/parosdb/paros/client/checkpoint"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/registry"
	"github.com/parosdb/paros/wire/registrypb"
)

// A fold handed out by snapshot is never changed by the follower's later
// pages (a reader may keep it), a later snapshot sees them, and view
// answers from the fold as it stands without a copy.
func TestASnapshotOfTheRegistryStaysAsItWasHandedOut(t *testing.T) {
	// Arrange: a follower's folder with one machine registered.
	f := checkpoint.NewFolder(registrypb.New(), journal.FirstSeq)
	cp := &controlPlane{fold: registry.New()}
	fold := func(seq journal.Seq, e registry.Entry) {
		// As foldNext folds a page: under the lock, the copy marked stale.
		cp.mu.Lock()
		defer cp.mu.Unlock()
		f.Fold(seq, registrypb.Encode(registrypb.EntryToPB(e)))
		cp.foldStale = true
	}
	cp.mu.Lock()
	cp.folder, cp.foldStale = f, true
	cp.mu.Unlock()
	fold(1, registry.RegisterMachine(1, "m1", ""))

	// Act: take a snapshot, fold another machine, take another.
	first, _ := cp.snapshot()
	again, _ := cp.snapshot()
	fold(2, registry.RegisterMachine(2, "m2", ""))
	second, _ := cp.snapshot()
	viewed := 0
	cp.view(func(st *registry.State) { viewed = len(st.Machines()) })

	// Check: the first snapshot still holds one machine, an unchanged fold
	// was not copied again, and the later snapshot and view see two.
	if got := len(first.Machines()); got != 1 {
		t.Errorf("the snapshot handed out holds %d machines after a later page, want 1", got)
	}
	if again != first {
		t.Errorf("a snapshot with no page folded since was copied again")
	}
	if got := len(second.Machines()); got != 2 {
		t.Errorf("the snapshot after the page holds %d machines, want 2", got)
	}
	if viewed != 2 {
		t.Errorf("view saw %d machines, want 2", viewed)
	}
}
