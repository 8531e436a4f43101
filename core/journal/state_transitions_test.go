// This file checks the journal state machine beyond the Apply table of
// state_test.go: a scripted writer hand-off, Restore's invariant refusals and
// round trip, and the transition assertions themselves (fed forged
// transitions, and legal moves).
package journal

import (
	"errors"
	"strings"
	"testing"
)

func cloneCommand(c Command) Command {
	out := c
	out.Entry.Records = nil
	if c.Entry.Records != nil {
		out.Entry.Records = make([][]byte, len(c.Entry.Records))
		for i, r := range c.Entry.Records {
			out.Entry.Records[i] = append([]byte(nil), r...)
		}
	}
	return out
}

// TestWriterHandoffScript plays a fenced writer hand-off end to end: the log
// is the dedup table, a superseded writer's retries still read Duplicate, its
// new writes are refused, and a truncate turns old retries into BelowFloor.
// The positions index is kept the way a learner keeps it.
func TestWriterHandoffScript(t *testing.T) {
	type step struct {
		cmd         Command
		want        OutcomeKind
		next, first Seq
		leader      LeaderUUID
	}
	a1 := Entry{Leader: uA, Seq: 1, Records: recs("a1", "a2")}
	a3 := Entry{Leader: uA, Seq: 3, Records: recs("a3")}
	b4 := Entry{Leader: uB, Seq: 4, Records: recs("b4")}
	script := []step{
		{Write(a1), Refused, 1, 1, unset},                    // nobody writes before the first SetLeader
		{SetLeader(uA, unset), LeaderSet, 1, 1, uA},          // A takes the fence
		{Write(a1), Accepted, 3, 1, uA},                      // [1,3)
		{Write(a1), Duplicate, 3, 1, uA},                     // A retries: the log dedups
		{Write(a3), Accepted, 4, 1, uA},                      // [3,4)
		{SetLeader(uB, uA), LeaderSet, 4, 1, uB},             // B takes over
		{Write(a3), Duplicate, 4, 1, uB},                     // A's late retry is still a duplicate
		{Write(Entry{uA, 4, recs("a4")}), Refused, 4, 1, uB}, // A's new write is fenced out
		{Truncate(uA, 3), TruncateRefused, 4, 1, uB},         // so is A's truncate
		{Write(b4), Accepted, 5, 1, uB},                      // [4,5)
		{Noop(), NoopDone, 5, 1, uB},                         // a gap filler takes no position
		{Truncate(uB, 3), Trimmed, 5, 3, uB},                 // drop [1,3)
		{Write(a1), BelowFloor, 5, 3, uB},                    // A's oldest retry is now below first_seq
		{Write(a3), Duplicate, 5, 3, uB},                     // at first_seq it still dedups
		{SetLeader(uA, uB), LeaderSet, 5, 3, uA},             // A may lead again
		{Write(Entry{uA, 5, recs("a5")}), Accepted, 6, 3, uA},
	}
	s, pos := Initial(), newPositions()

	for i, st := range script {
		// Act.
		next, out := Apply(s, ModeSingle, st.cmd, pos)

		// Check.
		if out.Kind != st.want || next.NextSeq != st.next || next.FirstSeq != st.first || next.Leader != st.leader {
			t.Fatalf("step %d %s: got %s -> %s, want %s next %d first %d leader %s",
				i, st.cmd, out, next, st.want, st.next, st.first, st.leader)
		}

		// Arrange the next step: the learner records what was accepted.
		if out.Kind == Accepted {
			pos.entries[out.Seq] = st.cmd.Entry
		}
		s = next
	}
	if s.Term() != 3 {
		t.Fatalf("term = %d after three leader changes, want 3", s.Term())
	}
}

// TestRestoreRefusesBrokenInvariants checks Restore refuses every sealed
// state that breaks a State invariant, with ErrBadState, and returns the zero
// State (FirstSeq <= NextSeq; a leader is set iff Term > 0).
func TestRestoreRefusesBrokenInvariants(t *testing.T) {
	cases := []struct {
		name        string
		leader      LeaderUUID
		term        uint64
		next, first Seq
	}{
		{"first_seq above next_seq", uA, 1, 4, 5},
		{"first_seq above next_seq, no leader", unset, 0, 1, 2},
		{"first_seq 0", unset, 0, 5, 0},
		{"everything 0", unset, 0, 0, 0},
		{"leader set with term 0", uA, 0, 5, 1},
		{"leader set (low half only) with term 0", LeaderUUID{Lo: 1}, 0, 1, 1},
		{"leader set (high half only) with term 0", LeaderUUID{Hi: 1}, 0, 1, 1},
		{"term above 0 with unset leader", unset, 3, 5, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Arrange: the case's four scalars.

			// Act.
			s, err := Restore(tc.leader, tc.term, tc.next, tc.first)

			// Check.
			if !errors.Is(err, ErrBadState) {
				t.Fatalf("err = %v, want ErrBadState", err)
			}
			if !s.IsZero() {
				t.Fatalf("a refused Restore returned %s", s)
			}
		})
	}
}

// TestRestoreRoundTrip checks Restore accepts valid sealed states and gives
// back exactly the scalars it was handed, and that Initial is the fresh state.
func TestRestoreRoundTrip(t *testing.T) {
	cases := []struct {
		leader      LeaderUUID
		term        uint64
		next, first Seq
	}{
		{unset, 0, 1, 1},
		{unset, 0, 9, 1},
		{unset, 0, 9, 9},
		{uA, 1, 1, 1},
		{uB, 7, 100, 42},
	}
	for _, tc := range cases {
		// Arrange: the case's four scalars.

		// Act.
		s, err := Restore(tc.leader, tc.term, tc.next, tc.first)

		// Check.
		if err != nil {
			t.Fatalf("Restore(%s,%d,%d,%d) refused: %v", tc.leader, tc.term, tc.next, tc.first, err)
		}
		if s.Leader != tc.leader || s.Term() != tc.term || s.NextSeq != tc.next || s.FirstSeq != tc.first {
			t.Fatalf("Restore gave %s", s)
		}
		if want := (View{Leader: tc.leader, NextSeq: tc.next, FirstSeq: tc.first}); s.View() != want {
			t.Fatalf("View() = %+v, want %+v", s.View(), want)
		}
	}
	fresh := Initial()
	if fresh != state(unset, 0, FirstSeq, FirstSeq) || fresh.IsZero() || !(State{}).IsZero() {
		t.Fatalf("Initial() = %s", fresh)
	}
}

// TestTransitionAssertionsFire feeds the always-on transition assertions
// forged transitions that Apply must never produce, and checks each one
// panics (TIGER_STYLE: assert the negative space).
func TestTransitionAssertionsFire(t *testing.T) {
	S := state(uB, 2, 10, 4)
	moved := func(f func(*State)) State { s := S; f(&s); return s }
	cases := []struct {
		name  string
		after State
		out   Outcome
		panic string
	}{
		{"after breaks an invariant", moved(func(s *State) { s.FirstSeq = 11 }), judged(Trimmed, S), "breaks an invariant"},
		{"next_seq moves back", moved(func(s *State) { s.NextSeq = 9 }), judged(Refused, S), "moved back"},
		{"first_seq moves back", moved(func(s *State) { s.FirstSeq = 3 }), judged(Trimmed, S), "moved back"},
		{"term moves back", moved(func(s *State) { s.term = 1 }), judged(LeaderSet, S), "moved back"},
		{"leader changes without term", moved(func(s *State) { s.Leader = uC }), judged(LeaderSet, S), "without term"},
		{"term changes without leader", moved(func(s *State) { s.term = 3 }), judged(LeaderSet, S), "without term"},
		{"accepted at the wrong seq", moved(func(s *State) { s.NextSeq = 11 }),
			Outcome{Kind: Accepted, Seq: 9, Count: 1}, "next positions"},
		{"accepted with a wrong count", moved(func(s *State) { s.NextSeq = 12 }),
			Outcome{Kind: Accepted, Seq: 10, Count: 1}, "next positions"},
		{"accepted nothing", S, Outcome{Kind: Accepted, Seq: 10, Count: 0}, "next positions"},
		{"leader set raising the term by two", moved(func(s *State) { s.Leader = uC; s.term = 4 }),
			judged(LeaderSet, S), "raise the term by one"},
		{"trimmed moving next_seq", moved(func(s *State) { s.NextSeq = 11 }), judged(Trimmed, S), "more than first_seq"},
		{"trimmed moving the leader", moved(func(s *State) { s.Leader = uC; s.term = 3 }), judged(Trimmed, S), "more than first_seq"},
		{"refused moving next_seq", moved(func(s *State) { s.NextSeq = 11 }), judged(Refused, S), "moved the state"},
		{"duplicate moving first_seq", moved(func(s *State) { s.FirstSeq = 5 }),
			Outcome{Kind: Duplicate, Seq: 4, Count: 2}, "moved the state"},
		{"noop moving the leader", moved(func(s *State) { s.Leader = uC; s.term = 3 }), judged(NoopDone, S), "moved the state"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Arrange.
			var got any

			// Act.
			func() {
				defer func() { got = recover() }()
				assertTransition(S, tc.after, Noop(), tc.out)
			}()

			// Check.
			msg, _ := got.(string)
			if got == nil || !strings.Contains(msg, tc.panic) {
				t.Fatalf("assertTransition(%s -> %s, %s) panicked with %v, want a panic mentioning %q",
					S, tc.after, tc.out.Kind, got, tc.panic)
			}
		})
	}
}

// TestTransitionAssertionsAcceptLegalMoves checks the assertions stay quiet
// on the legal transitions of each winning outcome.
func TestTransitionAssertionsAcceptLegalMoves(t *testing.T) {
	// Arrange.
	S := state(uB, 2, 10, 4)

	// Act and check: a panic fails the test.
	assertTransition(S, state(uB, 2, 12, 4), Noop(), Outcome{Kind: Accepted, Seq: 10, Count: 2})
	assertTransition(S, state(uC, 3, 10, 4), Noop(), judged(LeaderSet, S))
	assertTransition(S, state(uB, 2, 10, 9), Noop(), judged(Trimmed, S))
	assertTransition(S, S, Noop(), judged(Refused, S))
}
