package checkpoint_test

// The checkpoint pattern end to end on a real in-process cell
// (docs/guide/client.md, "Checkpoints: keeping a journal short"): an owner
// appends entries through a Checkpointer, checkpoints (a run at the next
// position, then a fenced Truncate to it) and appends more. A reader that
// starts below the floor meets a Gap, restores from the run at its End, folds
// the later entries, and reaches the owner's state; a reader that had folded
// the whole prefix verifies the run against its own state.

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/checkpoint"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/internal/testcell"
)

// sum is a tiny Checkpointable: the count and sum of the entries folded.
type sum struct{ n, total uint64 }

func (s *sum) Apply(_ journal.Seq, rec []byte) error {
	if len(rec) != 8 {
		return errors.New("entry is not 8 bytes")
	}
	s.n++
	s.total += binary.LittleEndian.Uint64(rec)
	return nil
}

func (s *sum) Checkpoint() []byte {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint64(b, s.n)
	binary.LittleEndian.PutUint64(b[8:], s.total)
	return b
}

func (s *sum) Restore(_ journal.Seq, b []byte) error {
	if len(b) != 16 {
		return errors.New("state is not 16 bytes")
	}
	s.n, s.total = binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
	return nil
}

func entry(v uint64) []byte {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, v)
	return b
}

// foldAll reads the journal from `from` to its tail into a Folder: each
// record is folded, each *GapError jumped over (never skipped silently).
func foldAll(t *testing.T, ctx context.Context, j *client.Journal, f *checkpoint.Folder[*sum], from journal.Seq) (gaps int, verified, restored int) {
	t.Helper()
	r := j.NewReader(from, client.WithPageLimit(256), client.WithTailWait(0))
	for {
		page, err := r.Next(ctx)
		var gap *client.GapError
		switch {
		case errors.As(err, &gap):
			gaps++
			f.Jump(gap.To)
			continue
		case errors.Is(err, client.ErrUnavailable):
			continue // no server could serve it this time; a read has no effect
		case err != nil:
			t.Fatal(err)
		case len(page) == 0:
			return
		}
		for _, rc := range page {
			fd := f.Fold(rc.Seq, rc.Data)
			if fd.Kind == checkpoint.FoldedCheckpoint {
				if fd.Verified {
					verified++
				}
				if fd.Restored {
					restored++
				}
			}
		}
	}
}

func TestCheckpointThenTruncateThenRestore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cell, err := testcell.Start(ctx, t.TempDir(), testcell.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cell.Close()
	c, err := client.Dial(ctx, cell.Addrs(), cell.ClientOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	j := c.Journal(cell.Journals[0])
	w := j.NewWriter()
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	owner := &sum{}
	cp := checkpoint.NewCheckpointer(w, owner, checkpoint.Trigger{})

	// Arrange: 20 entries, a checkpoint, 5 more.
	for v := uint64(1); v <= 20; v++ {
		if _, err := cp.Append(ctx, entry(v)); err != nil {
			t.Fatal(err)
		}
	}
	// A reader that folds the whole prefix before the checkpoint.
	whole := checkpoint.NewFolder(&sum{}, 1)
	foldAll(t, ctx, j, whole, 1)
	at, err := cp.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for v := uint64(21); v <= 25; v++ {
		if _, err := cp.Append(ctx, entry(v)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cp.Append(ctx, checkpoint.Begin(1).Encode()); !errors.Is(err, checkpoint.ErrLooksLikeRun) {
		t.Fatalf("an entry that looks like a run record: %v", err)
	}

	// Act: a fresh reader from position 1, below the floor.
	late := checkpoint.NewFolder(&sum{}, 1)
	gaps, _, restored := foldAll(t, ctx, j, late, 1)
	_, verified, _ := foldAll(t, ctx, j, whole, whole.Next())

	// Check.
	if gaps != 1 || restored != 1 {
		t.Fatalf("late reader: %d gaps, %d restores; want 1 and 1 (floor %d)", gaps, restored, at)
	}
	if *late.State() != *owner {
		t.Fatalf("late reader's state %+v, owner's %+v", *late.State(), *owner)
	}
	if verified != 1 || *whole.State() != *owner {
		t.Fatalf("whole-prefix reader verified %d runs, state %+v; owner %+v", verified, *whole.State(), *owner)
	}
}
