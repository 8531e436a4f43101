// This file checks the quorum package's surface one behaviour at a time:
// the constructors' refusals (each matched with errors.Is against its exported
// sentinel), majority sizes, Spec round-trips through New and the String
// forms; the grid and the addressees are in quorum_grid_test.go, the Set
// helpers and predicates in quorum_sets_test.go. Every test builds a System
// by hand, acts once, and checks the answer against a value written out in
// the test. The exhaustive properties (intersection, the naive model, the
// tri-state and monotonicity over every subset) live in
// intersection_test.go.
package quorum

import (
	"errors"
	"slices"
	"testing"
)

// ids returns the member ids 1..n.
func ids(n int) []ID {
	out := make([]ID, n)
	for i := range out {
		out[i] = ID(i + 1)
	}
	return out
}

// must returns a function that unwraps a constructor's result, failing t
// if a system the test means to be valid is refused.
func must(t *testing.T) func(System, error) System {
	t.Helper()
	return func(s System, err error) System {
		t.Helper()
		if err != nil {
			t.Fatalf("constructor refused a valid system: %v", err)
		}
		return s
	}
}

// TestConstructorsRefuse checks every configuration error the constructors
// name: an impossible system is an operator error returned as a value, never a
// panic (Flexible Paxos §3 for q1+q2 > n, Flexible Paxos §4 grid for the
// shape).
func TestConstructorsRefuse(t *testing.T) {
	many := ids(MembersMax + 1)
	cases := []struct {
		name string
		make func() (System, error)
		want error
	}{
		{"majority empty", func() (System, error) { return NewMajority(nil) }, ErrEmpty},
		{"majority empty slice", func() (System, error) { return NewMajority([]ID{}) }, ErrEmpty},
		{"flexible empty", func() (System, error) { return NewFlexible(nil, 1, 1) }, ErrEmpty},
		{"grid empty", func() (System, error) { return NewGrid(nil, 1, 1) }, ErrEmpty},
		{"majority 65 members", func() (System, error) { return NewMajority(many) }, ErrTooMany},
		{"flexible 65 members", func() (System, error) { return NewFlexible(many, 33, 33) }, ErrTooMany},
		{"grid 65 members", func() (System, error) { return NewGrid(many, 5, 13) }, ErrTooMany},
		{"majority duplicate", func() (System, error) { return NewMajority([]ID{3, 1, 3}) }, ErrDuplicateMember},
		{"flexible duplicate", func() (System, error) { return NewFlexible([]ID{2, 2}, 2, 1) }, ErrDuplicateMember},
		{"grid duplicate", func() (System, error) { return NewGrid([]ID{5, 6, 7, 5}, 2, 2) }, ErrDuplicateMember},
		{"majority zero id", func() (System, error) { return NewMajority([]ID{4, 0, 2}) }, ErrZeroMember},
		{"majority only zero", func() (System, error) { return NewMajority([]ID{0}) }, ErrZeroMember},
		{"majority two zeros", func() (System, error) { return NewMajority([]ID{0, 0}) }, ErrZeroMember},
		{"flexible zero id", func() (System, error) { return NewFlexible([]ID{0, 1, 2}, 2, 2) }, ErrZeroMember},
		{"grid zero id", func() (System, error) { return NewGrid([]ID{1, 0}, 1, 2) }, ErrZeroMember},
		{"flexible q1+q2 == n", func() (System, error) { return NewFlexible(ids(5), 2, 3) }, ErrNoIntersection},
		{"flexible q1+q2 < n", func() (System, error) { return NewFlexible(ids(5), 1, 1) }, ErrNoIntersection},
		{"flexible q1 zero", func() (System, error) { return NewFlexible(ids(3), 0, 3) }, ErrQuorumSize},
		{"flexible q2 zero", func() (System, error) { return NewFlexible(ids(3), 3, 0) }, ErrQuorumSize},
		{"flexible q1 negative", func() (System, error) { return NewFlexible(ids(3), -1, 3) }, ErrQuorumSize},
		{"flexible q1 above n", func() (System, error) { return NewFlexible(ids(3), 4, 1) }, ErrQuorumSize},
		{"flexible q2 above n", func() (System, error) { return NewFlexible(ids(3), 1, 4) }, ErrQuorumSize},
		{"grid rows*cols < n", func() (System, error) { return NewGrid(ids(6), 2, 2) }, ErrGridShape},
		{"grid rows*cols > n", func() (System, error) { return NewGrid(ids(6), 3, 3) }, ErrGridShape},
		{"grid zero rows", func() (System, error) { return NewGrid(ids(4), 0, 4) }, ErrGridShape},
		{"grid zero cols", func() (System, error) { return NewGrid(ids(4), 4, 0) }, ErrGridShape},
		{"grid negative shape", func() (System, error) { return NewGrid(ids(4), -2, -2) }, ErrGridShape},
		// 7 × 0x6db6db6db6db6db7 wraps around to 1 in 64-bit arithmetic: a
		// forged or damaged Spec must be refused, not reach make().
		{"grid shape wraps to n", func() (System, error) { return NewGrid(ids(1), 7, 0x6db6db6db6db6db7) }, ErrGridShape},
		{"grid shape wraps to n transposed", func() (System, error) { return NewGrid(ids(1), 0x6db6db6db6db6db7, 7) }, ErrGridShape},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Arrange: the case's arguments.

			// Act.
			s, err := tc.make()

			// Check.
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if !s.IsZero() {
				t.Fatalf("a refused constructor returned a non-zero System %v", s)
			}
		})
	}
}

// TestFlexibleRefusesEveryNonIntersectingPair walks every (q1, q2) in range
// for n = 1..9 and checks the constructor accepts exactly the pairs with
// q1+q2 > n (Flexible Paxos §3).
func TestFlexibleRefusesEveryNonIntersectingPair(t *testing.T) {
	for n := 1; n <= 9; n++ {
		for q1 := 1; q1 <= n; q1++ {
			for q2 := 1; q2 <= n; q2++ {
				// Arrange: n members and the pair (q1, q2).

				// Act.
				_, err := NewFlexible(ids(n), q1, q2)

				// Check.
				if q1+q2 > n && err != nil {
					t.Errorf("n=%d q1=%d q2=%d: refused an intersecting pair: %v", n, q1, q2, err)
				}
				if q1+q2 <= n && !errors.Is(err, ErrNoIntersection) {
					t.Errorf("n=%d q1=%d q2=%d: err = %v, want ErrNoIntersection", n, q1, q2, err)
				}
			}
		}
	}
}

// TestConstructorsAcceptSixtyFourMembers checks the upper bound is inclusive:
// 64 members fill the whole Set mask and quorums over all of them work.
func TestConstructorsAcceptSixtyFourMembers(t *testing.T) {
	// Arrange.
	members := ids(MembersMax)
	all := Set(0)
	for i := range MembersMax {
		all = all.Add(i)
	}

	// Act.
	maj := must(t)(NewMajority(members))
	flex := must(t)(NewFlexible(members, 64, 1))
	grid := must(t)(NewGrid(members, 8, 8))

	// Check.
	if all != ^Set(0) || all.Len() != 64 {
		t.Fatalf("64 members do not fill the mask: %x", uint64(all))
	}
	if got := maj.Phase1(all, 0); got != Won {
		t.Errorf("majority(64) Phase1(all) = %v, want won", got)
	}
	if got := maj.Phase1(fullSet(32), 0); got != Pending {
		t.Errorf("majority(64) Phase1(32 members) = %v, want pending", got)
	}
	if got := maj.Phase1(fullSet(33), 0); got != Won {
		t.Errorf("majority(64) Phase1(33 members) = %v, want won", got)
	}
	if got := maj.Phase2(0, 0, ^fullSet(32)); got != Lost {
		t.Errorf("majority(64) Phase2 with 32 refusals = %v, want lost", got)
	}
	if got := flex.Phase1(all&^Set(0).Add(63), 0); got != Pending {
		t.Errorf("flexible(64,64,1) Phase1 missing member 63 = %v, want pending", got)
	}
	if got := flex.Phase2(7, Set(0).Add(63), 0); got != Won {
		t.Errorf("flexible(64,64,1) Phase2(member 63) = %v, want won", got)
	}
	lastRow := fullSet(64) &^ fullSet(56)
	if got := grid.Phase1(lastRow, 0); got != Won {
		t.Errorf("grid 8x8 Phase1(last row) = %v, want won", got)
	}
	lastCol := Set(0)
	for r := range 8 {
		lastCol = lastCol.Add(r*8 + 7)
	}
	if got := grid.Phase2(7, lastCol, 0); got != Won {
		t.Errorf("grid 8x8 Phase2(slot 7, last column) = %v, want won", got)
	}
	if !grid.Phase2Everywhere(all) || grid.Phase2Everywhere(all&^Set(0).Add(63)) {
		t.Errorf("grid 8x8 Phase2Everywhere wrong at the mask's top bit")
	}
}

// TestConstructorsSortAndDoNotAlias checks the membership comes back sorted
// and that the caller's slice is neither reordered nor shared.
func TestConstructorsSortAndDoNotAlias(t *testing.T) {
	// Arrange.
	given := []ID{30, 10, 20}

	// Act.
	s := must(t)(NewMajority(given))
	given[0] = 99

	// Check.
	if want := []ID{10, 20, 30}; !slices.Equal(s.Members(), want) {
		t.Fatalf("Members() = %v, want %v", s.Members(), want)
	}
	if s.Size() != 3 || s.Kind() != KindMajority || s.IsZero() {
		t.Fatalf("Size/Kind/IsZero = %d/%v/%v", s.Size(), s.Kind(), s.IsZero())
	}
}

// TestMajoritySizes checks ⌊n/2⌋+1 for both phases (Paxos Made Simple §2.2):
// exactly the threshold wins, one fewer is pending.
func TestMajoritySizes(t *testing.T) {
	for n := 1; n <= 9; n++ {
		// Arrange.
		s := must(t)(NewMajority(ids(n)))
		q := n/2 + 1

		// Act.
		at1, below1 := s.Phase1(fullSet(q), 0), s.Phase1(fullSet(q-1), 0)
		at2, below2 := s.Phase2(0, fullSet(q), 0), s.Phase2(0, fullSet(q-1), 0)

		// Check.
		if at1 != Won || at2 != Won || below1 != Pending || below2 != Pending {
			t.Errorf("n=%d q=%d: phase1 %v/%v phase2 %v/%v, want won/pending", n, q, at1, below1, at2, below2)
		}
	}
}

// TestSpecRoundTripThroughNew checks Spec carries everything New needs:
// New(members, s.Spec()) rebuilds an equivalent system, answering every
// predicate the same way.
func TestSpecRoundTripThroughNew(t *testing.T) {
	for n := 1; n <= 6; n++ {
		for _, s := range validSystems(t, n) {
			// Arrange.
			spec := s.Spec()

			// Act.
			back, err := New(s.Members(), spec)

			// Check.
			if err != nil {
				t.Fatalf("%v: New(Spec()) refused: %v", s, err)
			}
			if back.Spec() != spec || back.Kind() != s.Kind() || back.String() != s.String() ||
				!slices.Equal(back.Members(), s.Members()) {
				t.Fatalf("%v: round trip gave %v (spec %+v, want %+v)", s, back, back.Spec(), spec)
			}
			for g := Set(0); g <= fullSet(n); g++ {
				if back.Phase1(g, 0) != s.Phase1(g, 0) || back.Phase2(1, g, 0) != s.Phase2(1, g, 0) {
					t.Fatalf("%v: round trip answers differently on %b", s, uint64(g))
				}
			}
		}
	}
}

// TestSpecShapes checks each kind's Spec holds only its own fields, and that
// New refuses an unknown kind and passes the constructors' errors through.
func TestSpecShapes(t *testing.T) {
	// Arrange.
	maj := must(t)(NewMajority(ids(3)))
	flex := must(t)(NewFlexible(ids(4), 3, 2))
	grid := must(t)(NewGrid(ids(6), 3, 2))

	// Act.
	specs := []Spec{maj.Spec(), flex.Spec(), grid.Spec()}
	_, errUnknown := New(ids(3), Spec{Kind: Kind(7)})
	_, errFlex := New(ids(3), Spec{Kind: KindFlexible, Q1: 1, Q2: 1})
	_, errGrid := New(ids(3), Spec{Kind: KindGrid, Rows: 2, Cols: 2})
	_, errMaj := New(nil, Spec{})

	// Check.
	want := []Spec{{Kind: KindMajority}, {Kind: KindFlexible, Q1: 3, Q2: 2}, {Kind: KindGrid, Rows: 3, Cols: 2}}
	if !slices.Equal(specs, want) {
		t.Errorf("specs = %+v, want %+v", specs, want)
	}
	if errUnknown == nil {
		t.Errorf("New accepted an unknown kind")
	}
	if !errors.Is(errFlex, ErrNoIntersection) || !errors.Is(errGrid, ErrGridShape) || !errors.Is(errMaj, ErrEmpty) {
		t.Errorf("New lost the constructor errors: %v / %v / %v", errFlex, errGrid, errMaj)
	}
}

// TestStrings checks the log forms of systems, kinds and results, including
// the fallbacks for values no constructor produces.
func TestStrings(t *testing.T) {
	// Arrange.
	cases := []struct{ got, want string }{
		{must(t)(NewMajority(ids(5))).String(), "majority(n=5)"},
		{must(t)(NewFlexible(ids(5), 4, 2)).String(), "flexible(n=5,q1=4,q2=2)"},
		{must(t)(NewGrid(ids(6), 2, 3)).String(), "grid(2x3)"},
		{KindMajority.String(), "majority"},
		{KindFlexible.String(), "flexible"},
		{KindGrid.String(), "grid"},
		{Kind(9).String(), "kind(9)"},
		{Pending.String(), "pending"},
		{Won.String(), "won"},
		{Lost.String(), "lost"},
		{Result(9).String(), "result(?)"},
	}

	for _, tc := range cases {
		// Act: done while building the table.

		// Check.
		if tc.got != tc.want {
			t.Errorf("String() = %q, want %q", tc.got, tc.want)
		}
	}
}

// TestZeroSystem checks the zero System reports itself as such.
func TestZeroSystem(t *testing.T) {
	// Arrange.
	var s System

	// Act.
	zero, size := s.IsZero(), s.Size()

	// Check.
	if !zero || size != 0 || s.Kind() != KindMajority || len(s.Members()) != 0 {
		t.Fatalf("zero System: IsZero=%v Size=%d Kind=%v", zero, size, s.Kind())
	}
}
