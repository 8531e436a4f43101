package checkpoint

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/parosdb/paros/client/sansio"
	"github.com/parosdb/paros/core/journal"
)

// Checkpointable is an application state a journal folds into.
//
// Apply folds the entry at seq. An error means the state can no longer
// follow the log: the Folder skips entries from then on until a checkpoint
// restores it.
//
// Checkpoint encodes the state. It must depend only on the state (no map
// order, no clock), so that two folds of the same log give the same bytes:
// readers verify runs by comparing them.
//
// Restore replaces the state with one decoded from a run that covers every
// position below coversUpTo. On an error it must leave the state as it was.
// It may keep the slice.
type Checkpointable interface {
	Apply(seq journal.Seq, record []byte) error
	Checkpoint() []byte
	Restore(coversUpTo journal.Seq, state []byte) error
}

// Errors of a fold.
var (
	// ErrUnreadable: a broken run (a malformed record, a chunk or End out of
	// place, a count or checksum that does not match, a state that will not
	// restore). The run is dropped; the fold goes on.
	ErrUnreadable = errors.New("paros/checkpoint: unreadable run")
	// ErrMismatch: a run's state differs from the state this folder built
	// from the same prefix. A MismatchError carries the detail.
	ErrMismatch = errors.New("paros/checkpoint: run differs from the folded state")
	// ErrApply: the state refused an entry (Checkpointable.Apply).
	ErrApply = errors.New("paros/checkpoint: entry not applied")
)

// MismatchError reports a verified run that differs from the folder's own
// checkpoint. It matches ErrMismatch under errors.Is.
type MismatchError struct {
	CoversUpTo journal.Seq
	MineBytes  int
	RunBytes   int
	// FirstDiff is the first byte offset where they differ.
	FirstDiff int
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("%v: covering up to %d, own %d bytes, run %d bytes, first difference at byte %d",
		ErrMismatch, e.CoversUpTo, e.MineBytes, e.RunBytes, e.FirstDiff)
}

// Unwrap makes a MismatchError match ErrMismatch.
func (e *MismatchError) Unwrap() error { return ErrMismatch }

// FoldedKind names what one record did to a Folder.
type FoldedKind uint8

const (
	// FoldedInvalid is the zero value; Fold never returns it.
	FoldedInvalid FoldedKind = iota
	// FoldedEntry: an entry was applied (Err set if Apply refused it; the
	// folder then skips entries until a checkpoint restores it).
	FoldedEntry
	// FoldedCheckpoint: a run's End completed a checkpoint covering every
	// position below CoversUpTo. Restored: the folder restored its state from
	// it (it had a gap, or its own state differed). Verified: its own state
	// already matched. Err: a *MismatchError when it did not.
	FoldedCheckpoint
	// FoldedRun: a run record was collected (a Begin or a Chunk).
	FoldedRun
	// FoldedSkipped: an entry after a gap; not folded until a checkpoint
	// heals the gap.
	FoldedSkipped
	// FoldedUnreadable: a broken run; Err (ErrUnreadable or ErrMalformed)
	// says why. The run is dropped.
	FoldedUnreadable
)

var foldedNames = [...]string{"invalid", "entry", "checkpoint", "run", "skipped", "unreadable"}

func (k FoldedKind) String() string {
	if int(k) < len(foldedNames) {
		return foldedNames[k]
	}
	return fmt.Sprintf("folded(%d)", uint8(k))
}

// Folded is what Fold made of one record.
type Folded struct {
	Kind       FoldedKind
	Seq        journal.Seq
	CoversUpTo journal.Seq
	Verified   bool
	Restored   bool
	Err        error
}

// run is a run being collected.
type run struct {
	at     journal.Seq // the Begin's position, = covers_up_to
	chunks uint32
	state  []byte
}

// Folder is a pure fold of one journal into a Checkpointable state. Feed it
// every record in position order (Fold), and every gap a Reader reports
// (Jump), or both at once (FoldRead).
//
// Before a gap, it applies entries and verifies every complete run against
// its own state. After a gap, it skips entries until the next complete run,
// restores from that run at its End, and applies entries again. A run
// without an End — an entry or a new Begin arrives first — is ignored.
type Folder[S Checkpointable] struct {
	state S
	// next is the position Fold expects.
	// Invariant: next >= journal.FirstSeq; it never decreases.
	next journal.Seq
	// gapped is true while the state does not cover [.., next): a gap was
	// jumped or an entry was refused, and no run has restored it since.
	gapped bool
	// inRun is the run being collected, or nil.
	inRun *run
}

// NewFolder returns a folder of state, whose state covers every position
// below from (a fresh state and journal.FirstSeq for a reader that starts
// at the beginning).
func NewFolder[S Checkpointable](state S, from journal.Seq) *Folder[S] {
	return &Folder[S]{state: state, next: max(from, journal.FirstSeq)}
}

// State is the folded state.
func (f *Folder[S]) State() S { return f.state }

// Next is the position the folder expects next.
func (f *Folder[S]) Next() journal.Seq { return f.next }

// Gapped reports whether the folder is skipping entries until a checkpoint
// heals a gap.
func (f *Folder[S]) Gapped() bool { return f.gapped }

// InRun reports whether a run is being collected.
func (f *Folder[S]) InRun() bool { return f.inRun != nil }

// Jump moves the folder over a truncated range to floor (a Reader's Gap
// ResumedAt). The folder is gapped from then on: it skips entries until a
// complete run restores it. Jump panics if floor is behind Next (a
// programmer error); a floor equal to Next skips nothing and changes
// nothing.
func (f *Folder[S]) Jump(floor journal.Seq) {
	if floor < f.next {
		panic(fmt.Sprintf("checkpoint: folder would jump back: %d -> %d", f.next, floor))
	}
	if floor == f.next {
		return
	}
	f.next, f.gapped, f.inRun = floor, true, nil
}

// FoldRead folds one Reader outcome: each record of a ReadRecords, a Jump
// for a ReadGap, nothing for the others. It panics if the outcome does not
// start at Next (the reader and the folder drifted apart: a programmer
// error).
func (f *Folder[S]) FoldRead(out sansio.ReaderOutcome) []Folded {
	switch out.Kind {
	case sansio.ReadRecords:
		if out.From != f.next {
			panic(fmt.Sprintf("checkpoint: records from %d fed to a folder at %d", out.From, f.next))
		}
		res := make([]Folded, 0, len(out.Records))
		for i, rec := range out.Records {
			res = append(res, f.Fold(out.From+journal.Seq(i), rec))
		}
		return res
	case sansio.ReadGap:
		if out.From != f.next {
			panic(fmt.Sprintf("checkpoint: a gap from %d fed to a folder at %d", out.From, f.next))
		}
		f.Jump(out.ResumedAt)
	}
	return nil
}

// Fold folds the record at seq, which must be Next (else it panics: records
// are dense and in order).
func (f *Folder[S]) Fold(seq journal.Seq, rec []byte) Folded {
	if seq != f.next {
		panic(fmt.Sprintf("checkpoint: folding position %d, expected %d", seq, f.next))
	}
	f.next++
	if !IsRunRecord(rec) {
		return f.foldEntry(seq, rec)
	}
	r, err := DecodeRecord(rec)
	if err != nil {
		return f.broken(seq, err)
	}
	switch r.Kind {
	case KindBegin:
		if r.CoversUpTo != seq {
			return f.broken(seq, fmt.Errorf("%w: a Begin at %d names covers_up_to %d", ErrUnreadable, seq, r.CoversUpTo))
		}
		// A run still open here had no End: its owner crashed inside it.
		f.inRun = &run{at: seq}
		return Folded{Kind: FoldedRun, Seq: seq}
	case KindChunk:
		cur := f.inRun
		switch {
		case cur == nil:
			return f.broken(seq, fmt.Errorf("%w: chunk %d at %d outside a run", ErrUnreadable, r.Index, seq))
		case r.Index != cur.chunks:
			return f.broken(seq, fmt.Errorf("%w: chunk %d at %d, expected chunk %d", ErrUnreadable, r.Index, seq, cur.chunks))
		case len(cur.state)+len(r.Bytes) > StateBytesMax:
			return f.broken(seq, fmt.Errorf("%w: run at %d over StateBytesMax", ErrUnreadable, cur.at))
		}
		cur.state = append(cur.state, r.Bytes...)
		cur.chunks++
		return Folded{Kind: FoldedRun, Seq: seq}
	}
	// KindEnd: DecodeRecord returns no other kind.
	cur := f.inRun
	f.inRun = nil
	switch {
	case cur == nil:
		return f.broken(seq, fmt.Errorf("%w: End at %d outside a run", ErrUnreadable, seq))
	case r.Chunks != cur.chunks:
		return f.broken(seq, fmt.Errorf("%w: End at %d names %d chunks, the run has %d", ErrUnreadable, seq, r.Chunks, cur.chunks))
	case Checksum(cur.state) != r.CRC:
		return f.broken(seq, fmt.Errorf("%w: End at %d: checksum %08x, chunks sum to %08x", ErrUnreadable, seq, r.CRC, Checksum(cur.state)))
	}
	return f.complete(seq, cur)
}

func (f *Folder[S]) foldEntry(seq journal.Seq, rec []byte) Folded {
	// An entry inside a run means the run has no End: it is ignored.
	f.inRun = nil
	if f.gapped {
		return Folded{Kind: FoldedSkipped, Seq: seq}
	}
	if err := f.state.Apply(seq, rec); err != nil {
		f.gapped = true
		return Folded{Kind: FoldedEntry, Seq: seq, Err: fmt.Errorf("%w at %d: %w", ErrApply, seq, err)}
	}
	return Folded{Kind: FoldedEntry, Seq: seq}
}

func (f *Folder[S]) broken(seq journal.Seq, err error) Folded {
	f.inRun = nil
	return Folded{Kind: FoldedUnreadable, Seq: seq, Err: err}
}

// complete ends a run at its End (seq): restore after a gap, else verify,
// and reset on the run when the own state differs.
func (f *Folder[S]) complete(seq journal.Seq, cur *run) Folded {
	out := Folded{Kind: FoldedCheckpoint, Seq: seq, CoversUpTo: cur.at}
	if !f.gapped {
		mine := f.state.Checkpoint()
		if bytes.Equal(mine, cur.state) {
			out.Verified = true
			return out
		}
		out.Err = mismatch(cur.at, mine, cur.state)
	}
	if err := f.state.Restore(cur.at, cur.state); err != nil {
		// The state could not take the run: it is not known to be right.
		f.gapped = true
		restoreErr := fmt.Errorf("%w: the run at %d does not restore: %w", ErrUnreadable, cur.at, err)
		return Folded{Kind: FoldedUnreadable, Seq: seq, CoversUpTo: cur.at, Err: errors.Join(out.Err, restoreErr)}
	}
	f.gapped = false
	out.Restored = true
	return out
}

func mismatch(at journal.Seq, mine, theirs []byte) *MismatchError {
	d := 0
	for d < len(mine) && d < len(theirs) && mine[d] == theirs[d] {
		d++
	}
	return &MismatchError{CoversUpTo: at, MineBytes: len(mine), RunBytes: len(theirs), FirstDiff: d}
}
