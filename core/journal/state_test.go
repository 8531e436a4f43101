// This file checks the journal state machine rule by rule (the doc comment
// on Apply). One table holds every rule of Apply in
// single-writer mode, multi-writer mode and an unset mode: each row names a
// state, a command and a positions index, and the exact Outcome (kind, seq,
// count and view) and next state the rule gives. A second pass over the same
// table checks the cross-cutting rules: refusals, duplicates and Noops move
// nothing, every refusal names the view it was judged against, and every win
// names the view it left. The positions index is a small map-based fake, the
// way a learner keeps it: accepted writes keyed by their start position, and
// everything below a "held from" floor answered NotHeld. Further tests, in
// state_transitions_test.go and state_values_test.go, check Restore's
// invariant refusals, the transition assertions themselves (fed forged
// transitions), a scripted writer hand-off, and the String forms.
package journal

import (
	"testing"
)

var (
	unset = LeaderUUID{}
	uA    = LeaderUUID{Hi: 0xa, Lo: 1}
	uB    = LeaderUUID{Hi: 0xb, Lo: 2}
	uC    = LeaderUUID{Hi: 0xc, Lo: 3}
)

// recs builds a record batch; recs() is an empty, non-nil batch.
func recs(rs ...string) [][]byte {
	out := make([][]byte, 0, len(rs))
	for _, r := range rs {
		out = append(out, []byte(r))
	}
	return out
}

// state restores a sealed state, panicking on a malformed one (a bug in the
// test's table, not in the code under test).
func state(leader LeaderUUID, term uint64, next, first Seq) State {
	s, err := Restore(leader, term, next, first)
	if err != nil {
		panic(err)
	}
	return s
}

// positionsFake is a learner's positions index: the writes accepted so far,
// keyed by start position, and a floor below which the node no longer holds
// the log (it jumped to a trim point or re-folds from a sealed base).
type positionsFake struct {
	entries  map[Seq]Entry
	heldFrom Seq
}

func newPositions(es ...Entry) *positionsFake {
	p := &positionsFake{entries: map[Seq]Entry{}}
	for _, e := range es {
		p.entries[e.Seq] = e
	}
	return p
}

func (p *positionsFake) EntryAt(seq Seq) (Entry, Held) {
	if seq < p.heldFrom {
		return Entry{}, NotHeld
	}
	if e, ok := p.entries[seq]; ok {
		return e, Found
	}
	return Entry{}, Absent
}

// judged is a non-winning outcome: it carries only the view of the state it
// was judged against.
func judged(k OutcomeKind, s State) Outcome { return Outcome{Kind: k, View: s.View()} }

type applyCase struct {
	name   string
	mode   WriterMode
	before State
	cmd    Command
	pos    Positions
	want   Outcome
	after  State
}

// applyCases is the rule table. The single-writer journal S has had two
// leaders (A, then B, now in force at term 2), holds positions [4, 10) after
// a truncate to 4, and its index holds:
//
//	seq  writer  records      positions
//	1    A       [x][y][z]    1..3 (below first_seq)
//	4    A       [ab][c]      4..5
//	6    A       [d]          6
//	7    B       [e][f][g]    7..9
//
// The multi-writer journal M holds the same positions with no leader.
func applyCases() []applyCase {
	e1 := Entry{Leader: uA, Seq: 1, Records: recs("x", "y", "z")}
	e4 := Entry{Leader: uA, Seq: 4, Records: recs("ab", "c")}
	e6 := Entry{Leader: uA, Seq: 6, Records: recs("d")}
	e7 := Entry{Leader: uB, Seq: 7, Records: recs("e", "f", "g")}
	held := newPositions(e1, e4, e6, e7)
	unheld := newPositions(e1, e4, e6, e7)
	unheld.heldFrom = 8
	S := state(uB, 2, 10, 4)
	M := state(unset, 0, 10, 4)
	fresh := Initial()
	w := func(leader LeaderUUID, seq Seq, rs [][]byte) Command {
		return Write(Entry{Leader: leader, Seq: seq, Records: rs})
	}
	accepted := func(seq Seq, count uint64, after State) Outcome {
		return Outcome{Kind: Accepted, Seq: seq, Count: count, View: after.View()}
	}
	sealed := state(Sealed, 3, 10, 4)
	return []applyCase{
		// The seal (Sealed): installed like any fence, then nothing moves
		// it, and it writes and truncates nothing.
		{name: "single set-leader installs the seal", mode: ModeSingle, before: S,
			cmd: SetLeader(Sealed, uB), want: judged(LeaderSet, sealed), after: sealed},
		{name: "single set-leader away from the seal is LeaderRefused", mode: ModeSingle, before: sealed,
			cmd: SetLeader(uA, Sealed), want: judged(LeaderRefused, sealed), after: sealed},
		{name: "single write under the seal is Refused", mode: ModeSingle, before: sealed,
			cmd: w(Sealed, 10, recs("x")), pos: held, want: judged(Refused, sealed), after: sealed},
		{name: "single write under the old fence after the seal is Refused", mode: ModeSingle, before: sealed,
			cmd: w(uB, 10, recs("x")), pos: held, want: judged(Refused, sealed), after: sealed},
		{name: "single truncate under the seal is TruncateRefused", mode: ModeSingle, before: sealed,
			cmd: Truncate(Sealed, 8), want: judged(TruncateRefused, sealed), after: sealed},
		{name: "single duplicate of an earlier write stays Duplicate after the seal", mode: ModeSingle, before: sealed,
			cmd: w(uA, 4, recs("ab", "c")), pos: held, want: Outcome{Kind: Duplicate, Seq: 4, Count: 2, View: sealed.View()}, after: sealed},
		// Single-writer Write.
		{name: "single write unset uuid is WrongMode", mode: ModeSingle, before: S,
			cmd: w(unset, 10, recs("x")), pos: held, want: judged(WrongMode, S), after: S},
		{name: "single write unset uuid below first_seq is WrongMode first", mode: ModeSingle, before: S,
			cmd: w(unset, 1, recs("x")), pos: held, want: judged(WrongMode, S), after: S},
		{name: "single write unset uuid on a fresh journal is WrongMode", mode: ModeSingle, before: fresh,
			cmd: w(unset, 1, recs("x")), pos: newPositions(), want: judged(WrongMode, fresh), after: fresh},
		{name: "single write just below first_seq is BelowFloor", mode: ModeSingle, before: S,
			cmd: w(uB, 3, recs("x")), pos: held, want: judged(BelowFloor, S), after: S},
		{name: "single write of a truncated identical entry is BelowFloor", mode: ModeSingle, before: S,
			cmd: Write(e1), pos: held, want: judged(BelowFloor, S), after: S},
		{name: "single write at seq 0 is BelowFloor", mode: ModeSingle, before: S,
			cmd: w(uB, 0, recs("x")), pos: held, want: judged(BelowFloor, S), after: S},
		{name: "single retry identical to the entry at 4 is Duplicate", mode: ModeSingle, before: S,
			cmd: w(uA, 4, recs("ab", "c")), pos: held,
			want: Outcome{Kind: Duplicate, Seq: 4, Count: 2, View: S.View()}, after: S},
		{name: "single retry identical to the last entry is Duplicate", mode: ModeSingle, before: S,
			cmd: w(uB, 7, recs("e", "f", "g")), pos: held,
			want: Outcome{Kind: Duplicate, Seq: 7, Count: 3, View: S.View()}, after: S},
		{name: "single retry identical at first_seq exactly is Duplicate", mode: ModeSingle, before: S,
			cmd: Write(e4), pos: held,
			want: Outcome{Kind: Duplicate, Seq: 4, Count: 2, View: S.View()}, after: S},
		{name: "single retry with one record byte changed is Refused", mode: ModeSingle, before: S,
			cmd: w(uA, 4, recs("ab", "d")), pos: held, want: judged(Refused, S), after: S},
		{name: "single retry with a byte moved across the record boundary is Refused", mode: ModeSingle, before: S,
			cmd: w(uA, 4, recs("a", "bc")), pos: held, want: judged(Refused, S), after: S},
		{name: "single retry under another uuid is Refused", mode: ModeSingle, before: S,
			cmd: w(uB, 4, recs("ab", "c")), pos: held, want: judged(Refused, S), after: S},
		{name: "single retry with a record missing is Refused", mode: ModeSingle, before: S,
			cmd: w(uA, 4, recs("ab")), pos: held, want: judged(Refused, S), after: S},
		{name: "single retry with an extra empty record is Refused", mode: ModeSingle, before: S,
			cmd: w(uA, 4, recs("ab", "c", "")), pos: held, want: judged(Refused, S), after: S},
		{name: "single retry with the records of the entry at 4 at seq 6 is Refused", mode: ModeSingle, before: S,
			cmd: w(uA, 6, recs("ab", "c")), pos: held, want: judged(Refused, S), after: S},
		{name: "single write inside an entry (no write starts there) is Refused", mode: ModeSingle, before: S,
			cmd: w(uA, 5, recs("c")), pos: held, want: judged(Refused, S), after: S},
		{name: "single write by the leader inside its own entry is Refused", mode: ModeSingle, before: S,
			cmd: w(uB, 8, recs("f", "g")), pos: held, want: judged(Refused, S), after: S},
		{name: "single retry with no records is Refused", mode: ModeSingle, before: S,
			cmd: w(uA, 4, nil), pos: held, want: judged(Refused, S), after: S},
		{name: "single retry without a positions index is Refused", mode: ModeSingle, before: S,
			cmd: Write(e7), pos: nil, want: judged(Refused, S), after: S},
		{name: "single retry where the index says NotHeld is Unheld", mode: ModeSingle, before: S,
			cmd: Write(e7), pos: unheld, want: judged(Unheld, S), after: S},
		{name: "single non-identical retry where NotHeld is Unheld too", mode: ModeSingle, before: S,
			cmd: w(uC, 4, recs("zz")), pos: unheld, want: judged(Unheld, S), after: S},
		{name: "single retry at the NotHeld floor itself is judged normally", mode: ModeSingle, before: S,
			cmd: w(uB, 8, recs("f")), pos: unheld, want: judged(Refused, S), after: S},
		{name: "single write below first_seq is BelowFloor even when NotHeld", mode: ModeSingle, before: S,
			cmd: Write(e1), pos: unheld, want: judged(BelowFloor, S), after: S},
		{name: "single write at next_seq with an empty batch is Refused", mode: ModeSingle, before: S,
			cmd: w(uB, 10, recs()), pos: held, want: judged(Refused, S), after: S},
		{name: "single write at next_seq with nil records is Refused", mode: ModeSingle, before: S,
			cmd: w(uB, 10, nil), pos: held, want: judged(Refused, S), after: S},
		{name: "single write with a stale fence is Refused", mode: ModeSingle, before: S,
			cmd: w(uA, 10, recs("x")), pos: held, want: judged(Refused, S), after: S},
		{name: "single write from a uuid that never led is Refused", mode: ModeSingle, before: S,
			cmd: w(uC, 10, recs("x")), pos: held, want: judged(Refused, S), after: S},
		{name: "single write past next_seq is Refused", mode: ModeSingle, before: S,
			cmd: w(uB, 11, recs("x")), pos: held, want: judged(Refused, S), after: S},
		{name: "single write far past next_seq is Refused", mode: ModeSingle, before: S,
			cmd: w(uB, 1<<40, recs("x")), pos: held, want: judged(Refused, S), after: S},
		{name: "single write before the first SetLeader is Refused", mode: ModeSingle, before: fresh,
			cmd: w(uA, 1, recs("x")), pos: newPositions(), want: judged(Refused, fresh), after: fresh},
		{name: "single write by the leader at next_seq is Accepted", mode: ModeSingle, before: S,
			cmd: w(uB, 10, recs("x")), pos: held,
			want: accepted(10, 1, state(uB, 2, 11, 4)), after: state(uB, 2, 11, 4)},
		{name: "single accept moves next_seq by the record count, empty records included", mode: ModeSingle, before: S,
			cmd: w(uB, 10, recs("x", "", "yz")), pos: held,
			want: accepted(10, 3, state(uB, 2, 13, 4)), after: state(uB, 2, 13, 4)},
		{name: "single accept at next_seq ignores a NotHeld index", mode: ModeSingle, before: S,
			cmd: w(uB, 10, recs("x")), pos: unheld,
			want: accepted(10, 1, state(uB, 2, 11, 4)), after: state(uB, 2, 11, 4)},
		{name: "single accept without a positions index", mode: ModeSingle, before: S,
			cmd: w(uB, 10, recs("x", "y")), pos: nil,
			want: accepted(10, 2, state(uB, 2, 12, 4)), after: state(uB, 2, 12, 4)},
		{name: "single first write after the first SetLeader is Accepted at 1", mode: ModeSingle,
			before: state(uA, 1, 1, 1), cmd: w(uA, 1, recs("x")), pos: newPositions(),
			want: accepted(1, 1, state(uA, 1, 2, 1)), after: state(uA, 1, 2, 1)},

		// Single-writer SetLeader: compare-and-set, so only the leader in force
		// can hand the fence on.
		{name: "set-leader on a fresh journal with old unset wins", mode: ModeSingle, before: fresh,
			cmd: SetLeader(uA, unset), want: judged(LeaderSet, state(uA, 1, 1, 1)), after: state(uA, 1, 1, 1)},
		{name: "set-leader on a fresh journal naming an old leader is refused", mode: ModeSingle, before: fresh,
			cmd: SetLeader(uA, uB), want: judged(LeaderRefused, fresh), after: fresh},
		{name: "set-leader to unset on a fresh journal is refused", mode: ModeSingle, before: fresh,
			cmd: SetLeader(unset, unset), want: judged(LeaderRefused, fresh), after: fresh},
		{name: "set-leader from the leader in force wins and raises the term", mode: ModeSingle, before: S,
			cmd: SetLeader(uC, uB), want: judged(LeaderSet, state(uC, 3, 10, 4)), after: state(uC, 3, 10, 4)},
		{name: "set-leader naming a stale old is refused", mode: ModeSingle, before: S,
			cmd: SetLeader(uC, uA), want: judged(LeaderRefused, S), after: S},
		{name: "set-leader naming unset old on a led journal is refused", mode: ModeSingle, before: S,
			cmd: SetLeader(uC, unset), want: judged(LeaderRefused, S), after: S},
		{name: "set-leader to unset is refused", mode: ModeSingle, before: S,
			cmd: SetLeader(unset, uB), want: judged(LeaderRefused, S), after: S},
		{name: "set-leader to the leader in force is refused", mode: ModeSingle, before: S,
			cmd: SetLeader(uB, uB), want: judged(LeaderRefused, S), after: S},
		{name: "set-leader back to a uuid that led before wins", mode: ModeSingle, before: S,
			cmd: SetLeader(uA, uB), want: judged(LeaderSet, state(uA, 3, 10, 4)), after: state(uA, 3, 10, 4)},

		// Single-writer Truncate: fenced like a write, so a deposed writer
		// cannot drop records its successor relies on.
		{name: "single truncate with unset uuid is WrongMode", mode: ModeSingle, before: S,
			cmd: Truncate(unset, 8), want: judged(WrongMode, S), after: S},
		{name: "single truncate with unset uuid on a fresh journal is WrongMode", mode: ModeSingle, before: fresh,
			cmd: Truncate(unset, 1), want: judged(WrongMode, fresh), after: fresh},
		{name: "single truncate from a stale leader is refused", mode: ModeSingle, before: S,
			cmd: Truncate(uA, 8), want: judged(TruncateRefused, S), after: S},
		{name: "single truncate from a uuid that never led is refused", mode: ModeSingle, before: S,
			cmd: Truncate(uC, 8), want: judged(TruncateRefused, S), after: S},
		{name: "single truncate before any leader is refused", mode: ModeSingle, before: fresh,
			cmd: Truncate(uA, 1), want: judged(TruncateRefused, fresh), after: fresh},
		{name: "single truncate by the leader moves first_seq", mode: ModeSingle, before: S,
			cmd: Truncate(uB, 8), want: judged(Trimmed, state(uB, 2, 10, 8)), after: state(uB, 2, 10, 8)},
		{name: "single truncate up to next_seq empties the journal", mode: ModeSingle, before: S,
			cmd: Truncate(uB, 10), want: judged(Trimmed, state(uB, 2, 10, 10)), after: state(uB, 2, 10, 10)},
		{name: "single truncate past next_seq is clamped to next_seq", mode: ModeSingle, before: S,
			cmd: Truncate(uB, 1<<62), want: judged(Trimmed, state(uB, 2, 10, 10)), after: state(uB, 2, 10, 10)},
		{name: "single truncate below first_seq never moves it back", mode: ModeSingle, before: S,
			cmd: Truncate(uB, 2), want: judged(Trimmed, S), after: S},
		{name: "single truncate to 0 never moves first_seq back", mode: ModeSingle, before: S,
			cmd: Truncate(uB, 0), want: judged(Trimmed, S), after: S},
		{name: "single truncate to first_seq is a trimmed no-op", mode: ModeSingle, before: S,
			cmd: Truncate(uB, 4), want: judged(Trimmed, S), after: S},

		// Noop and invalid commands take a slot and move nothing.
		{name: "noop on a single-writer journal", mode: ModeSingle, before: S,
			cmd: Noop(), want: judged(NoopDone, S), after: S},
		{name: "noop on a multi-writer journal", mode: ModeMulti, before: M,
			cmd: Noop(), want: judged(NoopDone, M), after: M},
		{name: "noop on an unset mode", mode: ModeUnset, before: fresh,
			cmd: Noop(), want: judged(NoopDone, fresh), after: fresh},
		{name: "noop ignores stray fields", mode: ModeSingle, before: S,
			cmd:  Command{Kind: KindNoop, Leader: uB, UpTo: 9, New: uC, Old: uB, Entry: e7},
			want: judged(NoopDone, S), after: S},
		{name: "the zero command is WrongMode", mode: ModeSingle, before: S,
			cmd: Command{}, want: judged(WrongMode, S), after: S},
		{name: "an unknown kind is WrongMode", mode: ModeMulti, before: M,
			cmd: Command{Kind: Kind(42), Entry: e7}, want: judged(WrongMode, M), after: M},

		// Multi-writer (Apply's doc comment, "Multi-writer rules").
		{name: "multi write is accepted at next_seq whatever seq it names", mode: ModeMulti, before: M,
			cmd: w(unset, 99, recs("x")), pos: held,
			want: accepted(10, 1, state(unset, 0, 11, 4)), after: state(unset, 0, 11, 4)},
		{name: "multi write naming seq 0 is accepted at next_seq", mode: ModeMulti, before: M,
			cmd: w(unset, 0, recs("x", "y")), pos: held,
			want: accepted(10, 2, state(unset, 0, 12, 4)), after: state(unset, 0, 12, 4)},
		{name: "multi write naming a truncated seq is accepted at next_seq", mode: ModeMulti, before: M,
			cmd: w(unset, 1, recs("x")), pos: held,
			want: accepted(10, 1, state(unset, 0, 11, 4)), after: state(unset, 0, 11, 4)},
		{name: "multi write identical to a held entry is accepted again (no dedup)", mode: ModeMulti, before: M,
			cmd: w(unset, 4, recs("ab", "c")), pos: newPositions(Entry{Seq: 4, Records: recs("ab", "c")}),
			want: accepted(10, 2, state(unset, 0, 12, 4)), after: state(unset, 0, 12, 4)},
		{name: "multi write ignores a NotHeld index", mode: ModeMulti, before: M,
			cmd: w(unset, 7, recs("x")), pos: unheld,
			want: accepted(10, 1, state(unset, 0, 11, 4)), after: state(unset, 0, 11, 4)},
		{name: "multi write on a fresh journal is accepted at 1", mode: ModeMulti, before: fresh,
			cmd: w(unset, 0, recs("x")), pos: nil,
			want: accepted(1, 1, state(unset, 0, 2, 1)), after: state(unset, 0, 2, 1)},
		{name: "multi write with no records is Refused", mode: ModeMulti, before: M,
			cmd: w(unset, 10, nil), pos: held, want: judged(Refused, M), after: M},
		{name: "multi write with an empty batch is Refused", mode: ModeMulti, before: M,
			cmd: w(unset, 10, recs()), pos: held, want: judged(Refused, M), after: M},
		{name: "multi write with a uuid is WrongMode", mode: ModeMulti, before: M,
			cmd: w(uA, 10, recs("x")), pos: held, want: judged(WrongMode, M), after: M},
		{name: "multi write with a uuid and no records is WrongMode", mode: ModeMulti, before: M,
			cmd: w(uA, 10, nil), pos: held, want: judged(WrongMode, M), after: M},
		{name: "multi set-leader is WrongMode", mode: ModeMulti, before: M,
			cmd: SetLeader(uA, unset), want: judged(WrongMode, M), after: M},
		{name: "multi set-leader to unset is WrongMode", mode: ModeMulti, before: M,
			cmd: SetLeader(unset, unset), want: judged(WrongMode, M), after: M},
		{name: "multi truncate with a uuid is WrongMode", mode: ModeMulti, before: M,
			cmd: Truncate(uA, 8), want: judged(WrongMode, M), after: M},
		{name: "multi truncate with unset uuid is open to anyone", mode: ModeMulti, before: M,
			cmd: Truncate(unset, 8), want: judged(Trimmed, state(unset, 0, 10, 8)), after: state(unset, 0, 10, 8)},
		{name: "multi truncate is clamped to next_seq", mode: ModeMulti, before: M,
			cmd: Truncate(unset, 11), want: judged(Trimmed, state(unset, 0, 10, 10)), after: state(unset, 0, 10, 10)},
		{name: "multi truncate never moves first_seq back", mode: ModeMulti, before: M,
			cmd: Truncate(unset, 3), want: judged(Trimmed, M), after: M},

		// A mode that is neither single nor multi fits no call.
		{name: "unset mode write is WrongMode", mode: ModeUnset, before: fresh,
			cmd: w(unset, 1, recs("x")), want: judged(WrongMode, fresh), after: fresh},
		{name: "unset mode fenced write is WrongMode", mode: ModeUnset, before: fresh,
			cmd: w(uA, 1, recs("x")), want: judged(WrongMode, fresh), after: fresh},
		{name: "unset mode set-leader is WrongMode", mode: ModeUnset, before: fresh,
			cmd: SetLeader(uA, unset), want: judged(WrongMode, fresh), after: fresh},
		{name: "unset mode fenced truncate is WrongMode", mode: ModeUnset, before: M,
			cmd: Truncate(uA, 8), want: judged(WrongMode, M), after: M},
		{name: "unset mode unfenced truncate is WrongMode", mode: ModeUnset, before: M,
			cmd: Truncate(unset, 8), want: judged(WrongMode, M), after: M},
		{name: "unknown mode unfenced truncate is WrongMode", mode: WriterMode(7), before: M,
			cmd: Truncate(unset, 8), want: judged(WrongMode, M), after: M},
		{name: "unknown mode unfenced write is WrongMode", mode: WriterMode(7), before: M,
			cmd: w(unset, 10, recs("x")), want: judged(WrongMode, M), after: M},
	}
}

// TestApplyRules checks each row of the rule table: the exact outcome and the
// exact next state.
func TestApplyRules(t *testing.T) {
	for _, tc := range applyCases() {
		t.Run(tc.name, func(t *testing.T) {
			// Arrange: the row's state, mode, command and positions.

			// Act.
			next, out := Apply(tc.before, tc.mode, tc.cmd, tc.pos)

			// Check.
			if out != tc.want {
				t.Errorf("outcome = %+v (%s), want %+v (%s)", out, out, tc.want, tc.want)
			}
			if next != tc.after {
				t.Errorf("state = %s, want %s", next, tc.after)
			}
		})
	}
}

// TestApplyCrossCuttingRules checks, over the whole rule table, the rules
// every slot obeys: refusals, duplicates and Noops
// move nothing and name the view they were judged against; wins name the
// view they left; Apply is pure (the same inputs give the same answer and
// the command is not modified).
func TestApplyCrossCuttingRules(t *testing.T) {
	wins := map[OutcomeKind]bool{Accepted: true, LeaderSet: true, Trimmed: true}
	for _, tc := range applyCases() {
		t.Run(tc.name, func(t *testing.T) {
			// Arrange.
			before := tc.before
			snapshot := cloneCommand(tc.cmd)

			// Act.
			next, out := Apply(before, tc.mode, tc.cmd, tc.pos)
			again, outAgain := Apply(before, tc.mode, tc.cmd, tc.pos)

			// Check.
			if wins[out.Kind] {
				if out.View != next.View() {
					t.Errorf("win %s names view %+v, want the state it left %+v", out.Kind, out.View, next.View())
				}
			} else {
				if next != before {
					t.Errorf("%s moved the state %s -> %s", out.Kind, before, next)
				}
				if out.View != before.View() {
					t.Errorf("%s names view %+v, want the view it was judged against %+v", out.Kind, out.View, before.View())
				}
			}
			if out.Kind != Accepted && out.Kind != Duplicate && (out.Seq != 0 || out.Count != 0) {
				t.Errorf("%s carries seq/count %d/%d", out.Kind, out.Seq, out.Count)
			}
			if again != next || outAgain != out {
				t.Errorf("Apply is not pure: %s %+v then %s %+v", next, out, again, outAgain)
			}
			if !tc.cmd.Equal(snapshot) {
				t.Errorf("Apply modified its command")
			}
		})
	}
}

// TestApplyTableCoversEveryOutcome guards the table itself: every outcome
// kind Apply can produce appears in at least one row.
func TestApplyTableCoversEveryOutcome(t *testing.T) {
	// Arrange.
	seen := map[OutcomeKind]bool{}

	// Act.
	for _, tc := range applyCases() {
		seen[tc.want.Kind] = true
	}

	// Check.
	for k := Accepted; k <= Unheld; k++ {
		if !seen[k] {
			t.Errorf("no row of the rule table expects %s", k)
		}
	}
}
