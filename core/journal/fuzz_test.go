// This file fuzzes the journal state machine and the fingerprint. FuzzApply
// decodes its input into a script of abstract steps (writes, truncates,
// set-leaders, noops, retries of an earlier accepted write with or without a
// mutation, and "forget", a learner restarting from a sealed base so that
// everything below NextSeq becomes NotHeld) over the uuid alphabet {unset, A,
// B, C}, with positions chosen near the journal's tail. It plays the same
// script against a single-writer, a multi-writer and an unset-mode journal,
// keeping the positions index the way a learner does (each Accepted write
// recorded by its start seq), and after every step checks the rules on
// Apply's doc comment from the outside: the State invariants, monotone
// scalars, accepted writes taking exactly [NextSeq, NextSeq+n), Duplicate
// exactly when the identical write is held at that seq, BelowFloor exactly when
// seq < FirstSeq, Unheld exactly when the index says NotHeld, the
// compare-and-set of SetLeader, the clamp of Truncate, and that nothing but a
// win moves the state. At the end the accepted writes must tile [1, NextSeq)
// with no hole. FuzzFingerprint decodes a command, builds an Equal twin on
// fresh memory with stray fields, and checks Equal commands share a
// fingerprint and that it is FNV-1a over the documented framing. Seed inputs
// live in testdata/fuzz/FuzzApply and in f.Add calls below.
package journal

import (
	"bytes"
	"testing"
)

// fuzzUUIDs is the uuid alphabet; index 0 is unset.
var fuzzUUIDs = [...]LeaderUUID{unset, uA, uB, uC}

const (
	fuzzStepsMax         = 128
	fuzzRecordsMax       = 3
	fuzzRecordBytesMax   = 2
	fuzzRecordByteValues = 3 // records draw bytes from 'a'..'c' so retries collide often
)

type fuzzOp uint8

const (
	opWrite fuzzOp = iota
	opTruncate
	opSetLeader
	opNoop
	opRetry
	opForget
	opCount
)

// fuzzStep is one decoded step. Positions are deltas from NextSeq, resolved
// against each journal when the step is played, so one script exercises the
// tail of every mode.
type fuzzStep struct {
	op       fuzzOp
	uuid     int  // index into fuzzUUIDs
	oldIsCur bool // SetLeader: old names the leader in force
	old      int  // SetLeader: index into fuzzUUIDs when !oldIsCur
	delta    int  // Write seq / Truncate up_to, relative to NextSeq
	records  [][]byte
	pick     int // Retry: which earlier accepted write
	mutation int // Retry: 0-1 identical, 2 other uuid, 3 moved boundary, 4 changed byte
}

type fuzzReader struct{ data []byte }

func (r *fuzzReader) next() (byte, bool) {
	if len(r.data) == 0 {
		return 0, false
	}
	b := r.data[0]
	r.data = r.data[1:]
	return b, true
}

// must reads a byte, or 0 once the input is exhausted.
func (r *fuzzReader) must() byte {
	b, _ := r.next()
	return b
}

func (r *fuzzReader) records() [][]byte {
	n := int(r.must()) % (fuzzRecordsMax + 1)
	out := make([][]byte, 0, n)
	for range n {
		rec := make([]byte, int(r.must())%(fuzzRecordBytesMax+1))
		for i := range rec {
			rec[i] = 'a' + r.must()%fuzzRecordByteValues
		}
		out = append(out, rec)
	}
	return out
}

// decodeSteps turns fuzz input into a script. Every byte string decodes to
// some script; the decoder never fails.
func decodeSteps(data []byte) []fuzzStep {
	r := &fuzzReader{data: data}
	var steps []fuzzStep
	for len(steps) < fuzzStepsMax {
		b, ok := r.next()
		if !ok {
			break
		}
		st := fuzzStep{op: fuzzOp(b % byte(opCount))}
		switch st.op {
		case opWrite:
			st.uuid = int(r.must()) % len(fuzzUUIDs)
			st.delta = int(int8(r.must())) >> 4 // -8..7 around NextSeq
			st.records = r.records()
		case opTruncate:
			st.uuid = int(r.must()) % len(fuzzUUIDs)
			st.delta = int(int8(r.must())) >> 4
		case opSetLeader:
			st.uuid = int(r.must()) % len(fuzzUUIDs)
			o := r.must()
			st.oldIsCur = o&4 != 0
			st.old = int(o) % len(fuzzUUIDs)
		case opRetry:
			st.pick = int(r.must())
			st.mutation = int(r.must()) % 5
		}
		steps = append(steps, st)
	}
	return steps
}

func at(s State, delta int) Seq {
	return Seq(max(int64(s.NextSeq)+int64(delta), 0))
}

// fuzzLearner keeps what a learner keeps: every accepted write by start seq
// (accepted also in acceptance order), and the floor below which its
// positions index answers NotHeld.
type fuzzLearner struct {
	pos      *positionsFake
	accepted []Entry
}

// command resolves a step against the journal's current state, or reports
// that the step is a learner action (forget) with no command.
func (l *fuzzLearner) command(st fuzzStep, s State) (Command, bool) {
	switch st.op {
	case opWrite:
		return Write(Entry{Leader: fuzzUUIDs[st.uuid], Seq: at(s, st.delta), Records: st.records}), true
	case opTruncate:
		return Truncate(fuzzUUIDs[st.uuid], at(s, st.delta)), true
	case opSetLeader:
		old := fuzzUUIDs[st.old]
		if st.oldIsCur {
			old = s.Leader
		}
		return SetLeader(fuzzUUIDs[st.uuid], old), true
	case opRetry:
		if len(l.accepted) == 0 {
			return Noop(), true
		}
		e := cloneCommand(Write(l.accepted[st.pick%len(l.accepted)])).Entry
		switch st.mutation {
		case 2:
			e.Leader = fuzzUUIDs[(int(e.Leader.Lo)+1)%len(fuzzUUIDs)] // the alphabet's Lo is its index
		case 3:
			if len(e.Records) >= 2 && len(e.Records[1]) > 0 {
				e.Records[0] = append(e.Records[0], e.Records[1][0])
				e.Records[1] = e.Records[1][1:]
			} else {
				e.Records = append(e.Records, []byte{})
			}
		case 4:
			flipped := false
			for i := range e.Records {
				if len(e.Records[i]) > 0 {
					e.Records[i][len(e.Records[i])-1]++
					flipped = true
					break
				}
			}
			if !flipped {
				e.Records = e.Records[:len(e.Records)-1]
			}
		}
		return Write(e), true
	case opForget:
		return Command{}, false
	}
	return Noop(), true
}

// identical is the test's own statement of "the identical write" (same
// uuid, same seq, byte-identical records), independent of Entry.Equal.
func identical(a, b Entry) bool {
	if a.Leader != b.Leader || a.Seq != b.Seq || len(a.Records) != len(b.Records) {
		return false
	}
	for i := range a.Records {
		if !bytes.Equal(a.Records[i], b.Records[i]) {
			return false
		}
	}
	return true
}

func isWin(k OutcomeKind) bool { return k == Accepted || k == LeaderSet || k == Trimmed }

// checkStep asserts every rule on Apply's doc comment that one step can be
// judged by from the outside.
func checkStep(t *testing.T, mode WriterMode, l *fuzzLearner, before State, c Command, next State, out Outcome) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s journal %s folding %s -> %s %+v: "+format,
			append([]any{mode, before, c, next, out}, args...)...)
	}

	// The State invariants hold and the sealed scalars restore.
	if _, err := Restore(next.Leader, next.Term(), next.NextSeq, next.FirstSeq); err != nil {
		fail("next state does not restore: %v", err)
	}
	if next.FirstSeq > next.NextSeq || next.FirstSeq < FirstSeq {
		fail("first_seq out of [1, next_seq]")
	}
	// Monotone scalars; the leader changes only with the term.
	if next.NextSeq < before.NextSeq || next.FirstSeq < before.FirstSeq || next.Term() < before.Term() {
		fail("a scalar moved back")
	}
	if (next.Leader != before.Leader) != (next.Term() != before.Term()) {
		fail("leader and term moved apart")
	}
	// Only wins move the state; everything names the right view.
	if isWin(out.Kind) {
		if out.View != next.View() {
			fail("a win names view %+v, not the state it left", out.View)
		}
	} else {
		if next != before {
			fail("a %s moved the state", out.Kind)
		}
		if out.View != before.View() {
			fail("a %s names view %+v, not the view it was judged against", out.Kind, out.View)
		}
	}
	if mode != ModeSingle && mode != ModeMulti && next != before {
		fail("a journal of mode %s moved", mode)
	}

	e := c.Entry
	n := uint64(len(e.Records))
	write, single := c.Kind == KindWrite, mode == ModeSingle
	fenced := write && single && e.Leader.IsSet()
	heldEntry, how := l.pos.EntryAt(e.Seq)
	inTail := e.Seq >= before.FirstSeq && e.Seq < before.NextSeq

	switch out.Kind {
	case Accepted:
		if !write || out.Seq != before.NextSeq || out.Count != n || n == 0 ||
			next.NextSeq != before.NextSeq+Seq(n) || next.FirstSeq != before.FirstSeq || next.Leader != before.Leader {
			fail("accepted does not take exactly [next_seq, next_seq+%d)", n)
		}
		if single && (e.Leader != before.Leader || !e.Leader.IsSet() || e.Seq != before.NextSeq) {
			fail("single-writer accepted a write that is not the leader's at next_seq")
		}
		if mode == ModeMulti && e.Leader.IsSet() {
			fail("multi-writer accepted a fenced write")
		}
	case Duplicate:
		if !fenced || !inTail || how != Found || !identical(heldEntry, e) || out.Seq != e.Seq || out.Count != n {
			fail("duplicate without the identical write held at %d (held %v %+v)", e.Seq, how, heldEntry)
		}
	case BelowFloor:
		if !fenced || e.Seq >= before.FirstSeq {
			fail("truncated at seq %d >= first_seq", e.Seq)
		}
	case Unheld:
		if !fenced || !inTail || how != NotHeld {
			fail("unheld where the index answers %v", how)
		}
	case LeaderSet:
		if c.Kind != KindSetLeader || !single || c.Old != before.Leader || !c.New.IsSet() || c.New == before.Leader ||
			next.Leader != c.New || next.Term() != before.Term()+1 {
			fail("set-leader won against its compare-and-set")
		}
	case Trimmed:
		if c.Kind != KindTruncate || (single && c.Leader != before.Leader) || (mode == ModeMulti && c.Leader.IsSet()) {
			fail("trimmed a truncate that does not fit")
		}
		if want := max(before.FirstSeq, min(c.UpTo, before.NextSeq)); next.FirstSeq != want {
			fail("first_seq %d, want max(first_seq, min(up_to, next_seq)) = %d", next.FirstSeq, want)
		}
	}

	// The converses: these outcomes happen exactly when their condition holds.
	if want := fenced && inTail && how == Found && identical(heldEntry, e); want != (out.Kind == Duplicate) {
		fail("duplicate = %v, but the identical write held at %d = %v", out.Kind == Duplicate, e.Seq, want)
	}
	if want := fenced && e.Seq < before.FirstSeq; want != (out.Kind == BelowFloor) {
		fail("truncated = %v, want %v", out.Kind == BelowFloor, want)
	}
	if want := fenced && inTail && how == NotHeld; want != (out.Kind == Unheld) {
		fail("unheld = %v, want %v", out.Kind == Unheld, want)
	}
	if c.Kind == KindSetLeader {
		want := single && c.Old == before.Leader && c.New.IsSet() && c.New != before.Leader
		if want != (out.Kind == LeaderSet) {
			fail("leader-set = %v, want %v", out.Kind == LeaderSet, want)
		}
		if !single && out.Kind != WrongMode {
			fail("a set-leader outside single-writer mode is not WrongMode")
		}
	}
	if c.Kind == KindNoop && out.Kind != NoopDone {
		fail("a noop folded to %s", out.Kind)
	}
	if write && mode == ModeMulti && !e.Leader.IsSet() && n > 0 && out.Kind != Accepted {
		fail("multi-writer did not accept an unfenced write with records")
	}
	if write || c.Kind == KindTruncate {
		fence := c.Leader
		if write {
			fence = e.Leader
		}
		want := single && !fence.IsSet() || mode == ModeMulti && fence.IsSet() || !single && mode != ModeMulti
		if want != (out.Kind == WrongMode) {
			fail("wrong-mode = %v, want %v", out.Kind == WrongMode, want)
		}
	}
}

// playScript folds steps into a fresh journal of mode, checking every step,
// and returns the final state and learner.
func playScript(t *testing.T, mode WriterMode, steps []fuzzStep) (State, *fuzzLearner) {
	t.Helper()
	s := Initial()
	l := &fuzzLearner{pos: newPositions()}
	for _, st := range steps {
		c, ok := l.command(st, s)
		if !ok {
			// Forget: the learner restarts from a base sealed now.
			l.pos.heldFrom = s.NextSeq
			continue
		}
		next, out := Apply(s, mode, c, l.pos)
		again, outAgain := Apply(s, mode, c, l.pos)
		if again != next || outAgain != out {
			t.Fatalf("Apply is not pure on %s: %+v then %+v", c, out, outAgain)
		}
		checkStep(t, mode, l, s, c, next, out)
		if out.Kind == Accepted {
			e := cloneCommand(c).Entry
			e.Seq = out.Seq // the learner indexes a write by where it landed
			l.pos.entries[out.Seq] = e
			l.accepted = append(l.accepted, e)
		}
		s = next
	}
	return s, l
}

// checkTiling asserts readers never see holes: the accepted writes tile
// [1, NextSeq) exactly, each starting where the previous ended.
func checkTiling(t *testing.T, mode WriterMode, s State, l *fuzzLearner) {
	t.Helper()
	at, seen := FirstSeq, 0
	for at < s.NextSeq {
		e, ok := l.pos.entries[at]
		if !ok {
			t.Fatalf("%s journal %s: no accepted write starts at %d", mode, s, at)
		}
		at += Seq(len(e.Records))
		seen++
	}
	if at != s.NextSeq || seen != len(l.pos.entries) || seen != len(l.accepted) {
		t.Fatalf("%s journal %s: writes tile [1,%d) with %d of %d entries", mode, s, at, seen, len(l.pos.entries))
	}
}

// FuzzApply checks the journal rules on arbitrary command scripts in every
// writer mode (the rules on Apply's doc comment).
func FuzzApply(f *testing.F) {
	// A leader takes the fence, writes, retries, hands over, truncates.
	f.Add([]byte{
		byte(opSetLeader), 1, 4, // SetLeader(A, current)
		byte(opWrite), 1, 0, 2, 1, 0, 2, 1, 2, // A writes [a][bc] at next_seq
		byte(opRetry), 0, 0, // identical retry: Duplicate
		byte(opRetry), 0, 3, // moved boundary: Refused
		byte(opSetLeader), 2, 4, // SetLeader(B, current)
		byte(opRetry), 0, 2, // retry under another uuid
		byte(opWrite), 2, 0, 1, 1, 0, // B writes [a]
		byte(opTruncate), 2, 0, // B truncates to next_seq
		byte(opRetry), 0, 0, // A's retry is now BelowFloor
	})
	// Multi-writer appends and an open truncate; a forget makes retries unheld.
	f.Add([]byte{
		byte(opWrite), 0, 0x80, 3, 1, 0, 1, 1, 1, 2, // unset write naming seq 0 (next_seq-8, clamped)
		byte(opWrite), 0, 0x70, 1, 0, // unset write with an empty record
		byte(opSetLeader), 1, 4, // SetLeader(A, current)
		byte(opWrite), 1, 0, 1, 2, 0, 0,
		byte(opForget),
		byte(opRetry), 1, 0, // retry of a write the learner no longer holds
		byte(opTruncate), 0, 0xf0,
		byte(opNoop),
	})
	// Set-leader compare-and-set edges: unset new, stale old, reinstatement.
	f.Add([]byte{
		byte(opSetLeader), 0, 4, byte(opSetLeader), 1, 2, byte(opSetLeader), 1, 0,
		byte(opSetLeader), 2, 4, byte(opSetLeader), 2, 4, byte(opSetLeader), 1, 4,
		byte(opTruncate), 2, 0, byte(opTruncate), 1, 0x70,
	})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		// Arrange.
		steps := decodeSteps(data)

		for _, mode := range []WriterMode{ModeSingle, ModeMulti, ModeUnset} {
			// Act and check, step by step.
			s, l := playScript(t, mode, steps)

			// Check the whole run.
			checkTiling(t, mode, s, l)
			if mode == ModeUnset && s != Initial() {
				t.Fatalf("a journal of unset mode moved to %s", s)
			}
		}
	})
}

// decodeCommand reads one command of any kind, including invalid and
// unknown kinds, from r.
func decodeCommand(r *fuzzReader) Command {
	c := Command{Kind: Kind(r.must() % 7)} // 0 invalid, 1-4 valid, 5-6 unknown
	uuid := func() LeaderUUID {
		b := r.must()
		if b&0x80 != 0 {
			return LeaderUUID{Hi: uint64(r.must()), Lo: uint64(r.must())}
		}
		return fuzzUUIDs[int(b)%len(fuzzUUIDs)]
	}
	switch c.Kind {
	case KindWrite:
		c.Entry = Entry{Leader: uuid(), Seq: Seq(r.must()), Records: r.records()}
	case KindTruncate:
		c.Leader, c.UpTo = uuid(), Seq(r.must())
	case KindSetLeader:
		c.New, c.Old = uuid(), uuid()
	}
	return c
}

// FuzzFingerprint checks that Equal commands have equal fingerprints: a
// decoded command against its twin on fresh memory with stray fields, and
// against a second decoded command whenever the two are Equal.
func FuzzFingerprint(f *testing.F) {
	f.Add([]byte{1, 1, 4, 2, 2, 0, 1, 1, 2}, []byte{0xff, 1, 2, 3})
	f.Add([]byte{2, 0x81, 9, 9, 7}, []byte{})
	f.Add([]byte{3, 1, 2}, []byte{3, 1, 2})
	f.Add([]byte{4}, []byte{9, 9, 9, 9, 9})
	f.Add([]byte{}, []byte{1})
	f.Fuzz(func(t *testing.T, data, stray []byte) {
		// Arrange: a command, its twin, and an independent second command.
		r := &fuzzReader{data: data}
		a := decodeCommand(r)
		b := decodeCommand(r)
		twin := cloneCommand(a)
		if twin.Entry.Records == nil && len(stray) > 0 && stray[0]&1 != 0 {
			twin.Entry.Records = [][]byte{} // nil and empty batches are the same value
		}
		for i, rec := range twin.Entry.Records {
			if len(rec) == 0 && len(stray) > 0 && stray[0]&2 != 0 {
				twin.Entry.Records[i] = nil // nil and empty records too
			}
		}
		sr := &fuzzReader{data: stray}
		junk := decodeCommand(sr)
		switch a.Kind {
		case KindWrite:
			twin.Leader, twin.UpTo, twin.New, twin.Old = junk.Leader, junk.UpTo, junk.New, junk.Old
		case KindTruncate:
			twin.Entry, twin.New, twin.Old = junk.Entry, junk.New, junk.Old
		case KindSetLeader:
			twin.Entry, twin.Leader, twin.UpTo = junk.Entry, junk.Leader, junk.UpTo
		default:
			twin.Entry, twin.Leader, twin.UpTo, twin.New, twin.Old = junk.Entry, junk.Leader, junk.UpTo, junk.New, junk.Old
		}

		// Act.
		fa, fTwin, fb := a.Fingerprint(), twin.Fingerprint(), b.Fingerprint()

		// Check.
		if !a.Equal(a) || !a.Equal(twin) || !twin.Equal(a) {
			t.Fatalf("%+v and its twin %+v are not Equal", a, twin)
		}
		if fa != fTwin {
			t.Fatalf("Equal commands %+v and %+v: fingerprints %016x and %016x", a, twin, fa, fTwin)
		}
		if a.Equal(b) != b.Equal(a) {
			t.Fatalf("Equal is not symmetric on %+v and %+v", a, b)
		}
		if a.Equal(b) && fa != fb {
			t.Fatalf("Equal commands %+v and %+v: fingerprints %016x and %016x", a, b, fa, fb)
		}
		if want := modelFingerprint(a); fa != want {
			t.Fatalf("%+v: fingerprint %016x, FNV-1a over the framing %016x", a, fa, want)
		}
	})
}
