package machine_test

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/parosdb/paros/client/admin"
	"github.com/parosdb/paros/storage/machinerecord"
)

// A member records a created journal before it formats its store and marks
// it formatted only with its next record write (one write per registry
// page it applies). A machine stopped in between lists the journal
// unformatted over a formatted store that holds its votes: its next start
// adopts that store, it never formats it again (which a formatted store
// refuses) and never loses what it promised.
func TestAJournalCreatedJustBeforeAStopIsServedAfterIt(t *testing.T) {
	// Arrange: a cell with its control plane; one journal created and
	// written, nothing applied after it.
	c, cl := startControlCell(t, 3, false)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	adm := admin.New(cl)
	info, err := adm.CreateJournal(ctx, "last")
	if err != nil {
		t.Fatal(err)
	}
	if seq, err := appendOne(ctx, t, cl, "last", "before"); err != nil || seq != 1 {
		t.Fatalf("append before the stop: seq %d, %v", seq, err)
	}

	// Act: stop every machine, then start them all again.
	for i := range c.Nodes {
		if err := c.Stop(i); err != nil {
			t.Fatalf("stop %d: %v", i, err)
		}
	}
	unformatted := 0
	for _, n := range c.Nodes {
		rec, err := machinerecord.Load(vfs.Default, n.Dir)
		if err != nil {
			t.Fatalf("load the record of %s: %v", n.Dir, err)
		}
		for _, j := range rec.Joined {
			if j.ID() == info.ID && !j.Formatted {
				unformatted++
			}
		}
	}
	for i := range c.Nodes {
		if err := c.Restart(i); err != nil {
			t.Fatalf("restart %d: %v", i, err)
		}
	}

	// Check: every member listed it unformatted (the case under test),
	// and after the restart the journal holds its record and takes the
	// next one at position 2.
	if unformatted != len(c.Nodes) {
		t.Fatalf("%d of %d records list the journal unformatted: the case is not exercised", unformatted, len(c.Nodes))
	}
	if seq, err := appendOne(ctx, t, cl, "last", "after"); err != nil || seq != 2 {
		t.Fatalf("append after the restarts: seq %d, %v", seq, err)
	}
}
