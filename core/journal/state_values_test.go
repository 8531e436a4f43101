// This file checks the journal's value types: the String forms, the value
// helpers, which replies are ambiguous, and that the state's bounds make
// folds exact.
package journal

import (
	"errors"
	"strings"
	"testing"
)

// TestStrings checks the log forms of every enum and value type, including
// the fallbacks for values no constructor produces.
func TestStrings(t *testing.T) {
	// Arrange.
	cases := []struct{ got, want string }{
		{unset.String(), "unset"},
		{LeaderUUID{Hi: 1, Lo: 0xff}.String(), "000000000000000100000000000000ff"},
		{KindWrite.String(), "write"},
		{KindTruncate.String(), "truncate"},
		{KindSetLeader.String(), "set-leader"},
		{KindNoop.String(), "noop"},
		{KindInvalid.String(), "kind(0)"},
		{Kind(200).String(), "kind(200)"},
		{Write(Entry{Leader: LeaderUUID{Lo: 1}, Seq: 5, Records: recs("x", "y")}).String(),
			"write(00000000000000000000000000000001@5×2)"},
		{Truncate(unset, 7).String(), "truncate(unset,<7)"},
		{SetLeader(LeaderUUID{Lo: 2}, unset).String(), "set-leader(00000000000000000000000000000002←unset)"},
		{Noop().String(), "noop"},
		{Command{}.String(), "kind(0)"},
		{ModeUnset.String(), "unset"},
		{ModeSingle.String(), "single"},
		{ModeMulti.String(), "multi"},
		{WriterMode(9).String(), "unset"},
		{OutcomeInvalid.String(), "invalid"},
		{Accepted.String(), "accepted"},
		{Unheld.String(), "unheld"},
		{NoopDone.String(), "noop"},
		{OutcomeKind(99).String(), "outcome(99)"},
		{Outcome{Kind: Accepted, Seq: 4, Count: 2}.String(), "accepted[4,+2)"},
		{Outcome{Kind: Duplicate, Seq: 7, Count: 3}.String(), "duplicate[7,+3)"},
		{Outcome{Kind: TruncateRefused}.String(), "truncate-refused"},
		{state(LeaderUUID{Lo: 1}, 1, 5, 2).String(), "{leader 00000000000000000000000000000001 term 1 next 5 first 2}"},
		{ID{Tenant: 1, Journal: 0xab}.String(), "0000000000000001/00000000000000ab"},
	}

	for _, tc := range cases {
		// Act: done while building the table.

		// Check.
		if tc.got != tc.want {
			t.Errorf("String() = %q, want %q", tc.got, tc.want)
		}
	}
	for k := OutcomeInvalid; k <= Unheld; k++ {
		if strings.HasPrefix(k.String(), "outcome(") {
			t.Errorf("outcome kind %d has no name", k)
		}
	}
}

// TestValueHelpers checks the small predicates on the value types:
// LeaderUUID.IsSet, Entry.Bytes, Command.Valid, ID.IsSet.
func TestValueHelpers(t *testing.T) {
	// Arrange, act and check in one table each: these are one-line functions.
	for _, tc := range []struct {
		u    LeaderUUID
		want bool
	}{{unset, false}, {LeaderUUID{Hi: 1}, true}, {LeaderUUID{Lo: 1}, true}, {uA, true}} {
		if got := tc.u.IsSet(); got != tc.want {
			t.Errorf("%+v.IsSet() = %v, want %v", tc.u, got, tc.want)
		}
	}
	for _, tc := range []struct {
		e    Entry
		want int
	}{{Entry{}, 0}, {Entry{Records: recs("", "")}, 0}, {Entry{Records: recs("ab", "c", "")}, 3}} {
		if got := tc.e.Bytes(); got != tc.want {
			t.Errorf("Bytes() = %d, want %d", got, tc.want)
		}
	}
	for _, tc := range []struct {
		c    Command
		want bool
	}{{Command{}, false}, {Write(Entry{}), true}, {Truncate(unset, 0), true},
		{SetLeader(unset, unset), true}, {Noop(), true}, {Command{Kind: KindNoop + 1}, false}} {
		if got := tc.c.Valid(); got != tc.want {
			t.Errorf("%s.Valid() = %v, want %v", tc.c, got, tc.want)
		}
	}
	for _, tc := range []struct {
		id   ID
		want bool
	}{{ID{}, false}, {ID{Tenant: 1}, false}, {ID{Journal: 1}, false}, {ID{Tenant: 1, Journal: 2}, true}} {
		if got := tc.id.IsSet(); got != tc.want {
			t.Errorf("%+v.IsSet() = %v, want %v", tc.id, got, tc.want)
		}
	}
}

// TestReplyAmbiguous checks which replies leave the call's effect unknown
// (docs/guide/client.md, "every ambiguous outcome"): a verdict is never
// ambiguous except Unheld; NotLeader, UnknownJournal and TooLarge proposed
// nothing; Lost and Unavailable may still take effect.
func TestReplyAmbiguous(t *testing.T) {
	cases := []struct {
		name  string
		reply Reply
		want  bool
	}{
		{"accepted", Reply{Outcome: Outcome{Kind: Accepted, Seq: 1, Count: 1}}, false},
		{"refused", Reply{Outcome: Outcome{Kind: Refused}}, false},
		{"duplicate", Reply{Outcome: Outcome{Kind: Duplicate}}, false},
		{"unheld", Reply{Outcome: Outcome{Kind: Unheld}}, true},
		{"not leader", Reply{NoVerdict: NotLeader, LeaderHint: 3}, false},
		{"unknown journal", Reply{NoVerdict: UnknownJournal}, false},
		{"too large", Reply{NoVerdict: TooLarge}, false},
		{"lost", Reply{NoVerdict: Lost}, true},
		{"unavailable", Reply{NoVerdict: Unavailable}, true},
		{"no outcome and no reason", Reply{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Arrange: the case's reply.

			// Act.
			got := tc.reply.Ambiguous()

			// Check.
			if got != tc.want {
				t.Fatalf("Ambiguous() = %v, want %v", got, tc.want)
			}
		})
	}
}

// The bounds make every fold exact: a sealed state past SeqMax or TermMax
// is refused as broken, a write that would carry NextSeq past SeqMax is
// refused, and a SetLeader at TermMax is refused (a forged TrimmedTo once
// could seal term 2^64-1, and the next SetLeader wrapped it to 0).
func TestStateBoundsMakeFoldsExact(t *testing.T) {
	u1, u2 := LeaderUUID{Hi: 1}, LeaderUUID{Hi: 2}
	if _, err := Restore(u1, TermMax+1, 5, 1); !errors.Is(err, ErrBadState) {
		t.Fatalf("term above TermMax restored: %v", err)
	}
	if _, err := Restore(LeaderUUID{}, 0, SeqMax+1, 1); !errors.Is(err, ErrBadState) {
		t.Fatalf("next_seq above SeqMax restored: %v", err)
	}

	full, err := Restore(u1, TermMax, SeqMax-1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, out := Apply(full, ModeSingle, SetLeader(u2, u1), nil); out.Kind != LeaderRefused {
		t.Fatalf("SetLeader at TermMax: %s", out.Kind)
	}
	two := Write(Entry{Leader: u1, Seq: SeqMax - 1, Records: [][]byte{{'a'}, {'b'}}})
	if _, out := Apply(full, ModeSingle, two, nil); out.Kind != Refused {
		t.Fatalf("a write past SeqMax: %s", out.Kind)
	}
	one := Write(Entry{Leader: u1, Seq: SeqMax - 1, Records: [][]byte{{'a'}}})
	if st, out := Apply(full, ModeSingle, one, nil); out.Kind != Accepted || st.NextSeq != SeqMax {
		t.Fatalf("the last position: %s, next %d", out.Kind, st.NextSeq)
	}
	multi, _ := Restore(LeaderUUID{}, 0, SeqMax, 1)
	if _, out := Apply(multi, ModeMulti, Write(Entry{Records: [][]byte{{'a'}}}), nil); out.Kind != Refused {
		t.Fatalf("a multi-writer write past SeqMax: %s", out.Kind)
	}
}
