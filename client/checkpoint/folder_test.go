// This file checks the Folder against the package doc and docs/guide/client.md
// ("Every reader: Folder"), one sentence at a time. Each test writes a
// journal into memLog the way an owner does — entries, then a run planned at
// the journal's next position, then a truncation to that position — and reads
// it through a sansio.Reader into a Folder, then checks what the folder
// reported and the state it ended with against kv folded over the whole log.
// Covered: a reader below the floor jumps and restores from the run at its
// End; a reader that held the whole prefix verifies instead, and resets on a
// run that differs; a run without End is ignored; a checkpoint left mid-log
// is one every fold resets on; a broken run (a flipped byte, a record out of
// place, a state that will not restore) is Unreadable and heals at the next
// complete run; an entry the state refuses gaps the folder the same way.
package checkpoint

import (
	"bytes"
	"errors"
	"testing"

	"github.com/parosdb/paros/client/sansio"
	"github.com/parosdb/paros/core/journal"
)

// checkpointAt appends a run of the state l's entries fold to, with small
// chunks, and returns its position.
func checkpointAt(l *memLog) journal.Seq {
	return l.append(Plan(foldAll(l).Checkpoint(), l.next(), 8)...)
}

func TestAReaderBelowTheFloorRestoresFromTheRunAndFoldsOnToTheSameState(t *testing.T) {
	// Arrange: an owner folds 20 entries, checkpoints at 21 and truncates
	// to 21, then writes 10 more. One reader read the journal before the
	// truncation; a new one starts at 1 after it.
	l := newLog()
	l.entries(0, 20)
	at := checkpointAt(l)
	l.entries(20, 30)
	whole := l.clone()
	l.truncate(at)

	// Act.
	early := NewFolder(newKV(), 1)
	earlyOut := readAll(whole, sansio.NewReader(testID, 1), early)
	late := NewFolder(newKV(), 1)
	lateOut := readAll(l, sansio.NewReader(testID, 1), late)

	// Check: the late reader jumped, restored at End, then folded on.
	cp := checkpoints(lateOut)
	if len(cp) != 1 || !cp[0].Restored || cp[0].Verified || cp[0].CoversUpTo != at || cp[0].Err != nil {
		t.Fatalf("late reader's checkpoints: %+v", cp)
	}
	if k := kinds(lateOut); k[FoldedEntry] != 10 || k[FoldedSkipped] != 0 || k[FoldedUnreadable] != 0 {
		t.Fatalf("late reader folded %v", k)
	}
	if ecp := checkpoints(earlyOut); len(ecp) != 1 || !ecp[0].Verified || ecp[0].Restored {
		t.Fatalf("the reader that held the prefix verifies: %+v", ecp)
	}
	want := foldAll(whole).Checkpoint()
	if !bytes.Equal(late.State().Checkpoint(), want) || !bytes.Equal(early.State().Checkpoint(), want) {
		t.Fatalf("states differ:\nlate  %s\nearly %s\nwant  %s", late.State(), early.State(), foldAll(whole))
	}
	if late.Gapped() || late.InRun() || late.Next() != l.next() {
		t.Fatalf("late folder: gapped %v, in run %v, next %d", late.Gapped(), late.InRun(), late.Next())
	}
}

func TestAFolderThatDiffersFromTheRunReportsAMismatchAndResetsOnIt(t *testing.T) {
	l := newLog()
	l.entries(0, 5)
	at := checkpointAt(l)
	own := newKV()
	own.m["extra"] = "bug" // this reader's fold went wrong somewhere

	f := NewFolder(own, 1)
	out := readAll(l, sansio.NewReader(testID, 1), f)

	cp := checkpoints(out)
	var me *MismatchError
	if len(cp) != 1 || cp[0].Verified || !cp[0].Restored || !errors.As(cp[0].Err, &me) || !errors.Is(cp[0].Err, ErrMismatch) {
		t.Fatalf("checkpoint %+v", cp)
	}
	if me.CoversUpTo != at || me.FirstDiff != 8 || me.MineBytes == me.RunBytes || me.Error() == "" {
		t.Fatalf("mismatch %+v", me)
	}
	if !bytes.Equal(f.State().Checkpoint(), foldAll(l).Checkpoint()) {
		t.Fatalf("after the reset the state is %s", f.State())
	}
}

func TestARunWithoutEndIsIgnored(t *testing.T) {
	// The owner crashed inside its first run (Begin and a chunk, no End),
	// came back, wrote entries, and checkpointed again.
	l := newLog()
	l.entries(0, 6)
	torn := Plan(foldAll(l).Checkpoint(), l.next(), 8)
	l.append(torn[:2]...)
	l.entries(6, 9)
	second := checkpointAt(l)
	l.entries(9, 12)

	full := NewFolder(newKV(), 1)
	fullOut := readAll(l, sansio.NewReader(testID, 1), full)
	gapped := NewFolder(newKV(), 1)
	gapped.Jump(7) // a reader that lost the prefix, landing on the torn run
	gappedOut := readAll(l, sansio.NewReader(testID, 7), gapped)

	if cp := checkpoints(fullOut); len(cp) != 1 || cp[0].CoversUpTo != second || !cp[0].Verified {
		t.Fatalf("full reader's checkpoints %+v", cp)
	}
	if k := kinds(fullOut); k[FoldedUnreadable] != 0 || k[FoldedEntry] != 12 {
		t.Fatalf("full reader folded %v", k)
	}
	if cp := checkpoints(gappedOut); len(cp) != 1 || cp[0].CoversUpTo != second || !cp[0].Restored {
		t.Fatalf("gapped reader's checkpoints %+v", cp)
	}
	if k := kinds(gappedOut); k[FoldedSkipped] != 3 || k[FoldedEntry] != 3 {
		t.Fatalf("gapped reader folded %v", k)
	}
	want := foldAll(l).Checkpoint()
	if !bytes.Equal(full.State().Checkpoint(), want) || !bytes.Equal(gapped.State().Checkpoint(), want) {
		t.Fatalf("states: full %s gapped %s want %s", full.State(), gapped.State(), foldAll(l))
	}
}

func TestACheckpointLeftMidLogIsOneEveryFoldResetsOn(t *testing.T) {
	// The owner checkpointed at r1 and truncated; checkpointed again at r2
	// and crashed before truncating, so r2 sits mid-log between entries.
	l := newLog()
	l.entries(0, 4)
	r1 := checkpointAt(l)
	l.truncate(r1)
	l.entries(4, 8)
	r2 := checkpointAt(l)
	l.entries(8, 11)

	fresh := NewFolder(newKV(), 1) // meets the floor: restores at r1, verifies at r2
	freshOut := readAll(l, sansio.NewReader(testID, 1), fresh)
	broken := newKV()
	broken.failOn = "k4=v4" // its fold breaks on the first entry after r1
	healed := NewFolder(broken, 1)
	healedOut := readAll(l, sansio.NewReader(testID, 1), healed)

	fcp := checkpoints(freshOut)
	if len(fcp) != 2 || fcp[0].CoversUpTo != r1 || !fcp[0].Restored || fcp[1].CoversUpTo != r2 || !fcp[1].Verified {
		t.Fatalf("fresh reader's checkpoints %+v", fcp)
	}
	hcp := checkpoints(healedOut)
	if len(hcp) != 2 || !hcp[1].Restored || hcp[1].CoversUpTo != r2 {
		t.Fatalf("the broken fold resets on the mid-log run: %+v", hcp)
	}
	if k := kinds(healedOut); k[FoldedSkipped] != 3 {
		t.Fatalf("broken fold: %v", k)
	}
	for _, f := range healedOut {
		if f.Kind == FoldedEntry && f.Err != nil && !errors.Is(f.Err, ErrApply) {
			t.Fatalf("an Apply error is reported as ErrApply: %v", f.Err)
		}
	}
	want := foldAll(l).Checkpoint()
	if !bytes.Equal(fresh.State().Checkpoint(), want) || !bytes.Equal(healed.State().Checkpoint(), want) {
		t.Fatalf("states: fresh %s healed %s want %s", fresh.State(), healed.State(), foldAll(l))
	}
}

func TestABrokenRunIsUnreadableAndTheNextCompleteRunHeals(t *testing.T) {
	corrupt := func(run [][]byte) { run[2][len(run[2])-1] ^= 0x40 } // a flipped bit in chunk 1
	cases := map[string]func(run [][]byte) [][]byte{
		"a flipped chunk byte": func(run [][]byte) [][]byte { corrupt(run); return run },
		"a chunk lost":         func(run [][]byte) [][]byte { return append(run[:2:2], run[3:]...) },
		"chunks swapped": func(run [][]byte) [][]byte {
			run[1], run[2] = run[2], run[1]
			return run
		},
		"a malformed record": func(run [][]byte) [][]byte { run[1] = append([]byte(Magic), 9); return run },
		"a Begin at the wrong position": func(run [][]byte) [][]byte {
			run[0] = Begin(1).Encode()
			return run
		},
		"an End without a Begin":  func(run [][]byte) [][]byte { return run[len(run)-1:] },
		"a Chunk without a Begin": func(run [][]byte) [][]byte { return run[1:] },
	}
	for name, mangle := range cases {
		l := newLog()
		l.entries(0, 6)
		l.append(mangle(Plan(foldAll(l).Checkpoint(), l.next(), 8))...)
		l.entries(6, 8)
		good := checkpointAt(l)
		l.entries(8, 10)
		f := NewFolder(newKV(), 1)
		f.Jump(3)

		out := readAll(l, sansio.NewReader(testID, 3), f)

		var unreadable []Folded
		for _, o := range out {
			if o.Kind == FoldedUnreadable {
				unreadable = append(unreadable, o)
			}
		}
		if len(unreadable) == 0 || !(errors.Is(unreadable[0].Err, ErrUnreadable) || errors.Is(unreadable[0].Err, ErrMalformed)) {
			t.Fatalf("%s: unreadable %+v", name, unreadable)
		}
		if cp := checkpoints(out); len(cp) != 1 || cp[0].CoversUpTo != good || !cp[0].Restored {
			t.Fatalf("%s: checkpoints %+v", name, cp)
		}
		if !bytes.Equal(f.State().Checkpoint(), foldAll(l).Checkpoint()) {
			t.Fatalf("%s: state %s", name, f.State())
		}
	}
}

func TestAStateThatWillNotRestoreLeavesTheFolderGapped(t *testing.T) {
	l := newLog()
	l.entries(0, 3)
	at := checkpointAt(l)
	l.entries(3, 5)
	s := newKV()
	s.failRestore = true
	f := NewFolder(s, 1)
	f.Jump(at)

	out := readAll(l, sansio.NewReader(testID, at), f)

	if k := kinds(out); k[FoldedUnreadable] != 1 || k[FoldedSkipped] != 2 || !f.Gapped() {
		t.Fatalf("folded %v, gapped %v", k, f.Gapped())
	}
	// A verifying folder whose own state differs and will not restore either.
	m := newKV()
	m.m["x"], m.failRestore = "y", true
	g := NewFolder(m, 1)
	out = readAll(l, sansio.NewReader(testID, 1), g)
	for _, o := range out {
		if o.Kind == FoldedUnreadable && (!errors.Is(o.Err, ErrMismatch) || !errors.Is(o.Err, ErrUnreadable)) {
			t.Fatalf("unreadable after a mismatch names both: %v", o.Err)
		}
	}
	if !g.Gapped() {
		t.Fatal("a folder known wrong must skip entries")
	}
}

// nothing is a state that encodes to no bytes.
type nothing struct{}

func (nothing) Apply(journal.Seq, []byte) error   { return nil }
func (nothing) Checkpoint() []byte                { return nil }
func (nothing) Restore(journal.Seq, []byte) error { return nil }

func TestAnEmptyStateCheckpointsAsARunOfNoChunks(t *testing.T) {
	run := Plan(nil, 1, 0)
	f := NewFolder(nothing{}, 1)
	f.Jump(1) // nothing skipped: still not gapped

	var out []Folded
	for i, r := range run {
		out = append(out, f.Fold(journal.Seq(i+1), r))
	}

	if len(run) != 2 || out[1].Kind != FoldedCheckpoint || !out[1].Verified || f.Gapped() {
		t.Fatalf("empty run %d records, folded %+v", len(run), out)
	}
}

func TestTheFolderRefusesToMoveBackOrSkipAhead(t *testing.T) {
	f := NewFolder(newKV(), 5)
	mustPanic(t, "fold out of order", func() { f.Fold(6, []byte("a=b")) })
	mustPanic(t, "jump back", func() { f.Jump(4) })
	mustPanic(t, "records from elsewhere", func() {
		f.FoldRead(sansio.ReaderOutcome{Kind: sansio.ReadRecords, From: 3, Records: [][]byte{[]byte("a=b")}})
	})
	mustPanic(t, "a gap from elsewhere", func() {
		f.FoldRead(sansio.ReaderOutcome{Kind: sansio.ReadGap, From: 3, ResumedAt: 9})
	})
	if got := f.FoldRead(sansio.ReaderOutcome{Kind: sansio.ReadUnavailable, From: 5}); got != nil || f.Next() != 5 {
		t.Fatalf("an unavailable read folds nothing: %v", got)
	}
	for k, want := range map[FoldedKind]string{FoldedInvalid: "invalid", FoldedEntry: "entry", FoldedCheckpoint: "checkpoint",
		FoldedRun: "run", FoldedSkipped: "skipped", FoldedUnreadable: "unreadable", 42: "folded(42)"} {
		if k.String() != want {
			t.Fatalf("%d prints %q", k, k)
		}
	}
}

func TestARunOverTheStateLimitIsUnreadable(t *testing.T) {
	f := NewFolder(newKV(), 1)
	f.Fold(1, Begin(1).Encode())
	f.inRun.state = make([]byte, StateBytesMax) // as if the run had carried that much already
	f.inRun.chunks = 3

	out := f.Fold(2, Chunk(3, []byte("x")).Encode())

	if out.Kind != FoldedUnreadable || !errors.Is(out.Err, ErrUnreadable) || f.InRun() {
		t.Fatalf("over the limit: %+v", out)
	}
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Fatalf("%s: no panic", what)
		}
	}()
	f()
}
