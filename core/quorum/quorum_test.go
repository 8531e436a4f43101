// This file checks the quorum package's surface one behaviour at a time:
// the constructors' refusals (each matched with errors.Is against its exported
// sentinel), the sorted row-major grid layout, the rule that a grid slot is
// decided by its column alone, the addressee lists, the Set helpers, Spec
// round-trips through New, Phase2Everywhere and the String forms. Every test
// builds a System by hand, acts once, and checks the answer against a value
// written out in the test. The exhaustive properties (intersection, the naive
// model, the tri-state and monotonicity over every subset) live in
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

// TestGridLayoutRowMajorFromUnsortedMembers checks the grid lays the sorted
// membership out row-major whatever order the caller gave (Flexible Paxos §4
// grid): member i sits in row i/cols, column i%cols.
func TestGridLayoutRowMajorFromUnsortedMembers(t *testing.T) {
	// Arrange: 2 rows × 3 columns, given shuffled.
	//
	//	      col0 col1 col2
	//	row0   11   12   13
	//	row1   21   22   23
	given := []ID{23, 12, 21, 11, 22, 13}

	// Act.
	s := must(t)(NewGrid(given, 2, 3))

	// Check.
	if want := []ID{11, 12, 13, 21, 22, 23}; !slices.Equal(s.Members(), want) {
		t.Fatalf("Members() = %v, want %v", s.Members(), want)
	}
	wantCols := [][]ID{{11, 21}, {12, 22}, {13, 23}}
	for slot := uint64(0); slot < 9; slot++ {
		if got, want := s.AcceptAddressees(slot), wantCols[slot%3]; !slices.Equal(got, want) {
			t.Errorf("AcceptAddressees(%d) = %v, want %v", slot, got, want)
		}
	}
	for i, wantRow := range []int{0, 0, 0, 1, 1, 1} {
		if got := s.RowOf(i); got != wantRow {
			t.Errorf("RowOf(%d) = %d, want %d", i, got, wantRow)
		}
		if got, wantCol := s.MemberColumn(i), i%3; got != wantCol {
			t.Errorf("MemberColumn(%d) = %d, want %d", i, got, wantCol)
		}
	}
	if got := s.Phase1(s.SetOf(21, 22, 23), 0); got != Won {
		t.Errorf("row {21,22,23} Phase1 = %v, want won", got)
	}
	if got := s.Phase1(s.SetOf(11, 12, 23), 0); got != Pending {
		t.Errorf("a non-row {11,12,23} Phase1 = %v, want pending", got)
	}
	if got := s.Phase2(4, s.SetOf(12, 22), 0); got != Won {
		t.Errorf("column {12,22} Phase2(slot 4) = %v, want won", got)
	}
}

// TestGridColumnOf checks ColumnOf(slot) = slot % cols on a grid, including
// the largest slot, and 0 on the other systems.
func TestGridColumnOf(t *testing.T) {
	// Arrange.
	grid := must(t)(NewGrid(ids(12), 3, 4))
	maj := must(t)(NewMajority(ids(5)))
	flex := must(t)(NewFlexible(ids(5), 4, 2))
	slots := []uint64{0, 1, 2, 3, 4, 5, 11, 12, 1 << 40, ^uint64(0)}

	for _, slot := range slots {
		// Act.
		gotGrid, gotMaj, gotFlex := grid.ColumnOf(slot), maj.ColumnOf(slot), flex.ColumnOf(slot)

		// Check.
		if want := int(slot % 4); gotGrid != want {
			t.Errorf("grid ColumnOf(%d) = %d, want %d", slot, gotGrid, want)
		}
		if gotMaj != 0 || gotFlex != 0 {
			t.Errorf("non-grid ColumnOf(%d) = %d/%d, want 0", slot, gotMaj, gotFlex)
		}
	}
	if maj.RowOf(4) != 0 || flex.RowOf(3) != 0 {
		t.Errorf("non-grid RowOf must be 0")
	}
	if maj.MemberColumn(4) != 0 || flex.MemberColumn(3) != 0 {
		t.Errorf("non-grid MemberColumn must be 0")
	}
}

// TestGridMemberColumnMatchesAddressees checks the two views of a column
// agree on every grid up to 9 members: member i is addressed for slot s
// exactly when MemberColumn(i) == ColumnOf(s), and RowOf/MemberColumn place
// each member at a distinct cell (Flexible Paxos §4 grid).
func TestGridMemberColumnMatchesAddressees(t *testing.T) {
	for n := 1; n <= 9; n++ {
		for _, m := range systemsOf(t, n) {
			if m.model.kind != KindGrid {
				continue
			}
			s := m.sys
			for _, slot := range m.model.slots() {
				// Arrange.
				addressed := s.SetOf(s.AcceptAddressees(slot)...)

				for i := range n {
					// Act.
					inColumn := s.MemberColumn(i) == s.ColumnOf(slot)

					// Check.
					if inColumn != addressed.Has(i) {
						t.Fatalf("%v slot %d member %d: MemberColumn says %v, AcceptAddressees says %v",
							s, slot, i, inColumn, addressed.Has(i))
					}
				}
			}
			cells := map[[2]int]bool{}
			for i := range n {
				cell := [2]int{s.RowOf(i), s.MemberColumn(i)}
				if cells[cell] || cell[0] >= m.model.rows || cell[1] >= m.model.cols {
					t.Fatalf("%v: member %d at cell %v, out of the grid or shared", s, i, cell)
				}
				cells[cell] = true
			}
		}
	}
}

// TestGridVoteOutsideColumnCountsForNothing checks that on a grid only the
// slot's column decides Phase 2 (Flexible Paxos §4 grid): every member but one
// of the column granting is not a quorum, and a refusal outside the column
// cannot lose the slot.
func TestGridVoteOutsideColumnCountsForNothing(t *testing.T) {
	for _, shape := range [][2]int{{2, 2}, {2, 3}, {3, 2}, {3, 3}, {1, 4}, {4, 1}} {
		rows, cols := shape[0], shape[1]
		s := must(t)(NewGrid(ids(rows*cols), rows, cols))
		for slot := uint64(0); slot < uint64(2*cols); slot++ {
			col := s.SetOf(s.AcceptAddressees(slot)...)
			for i := range s.Size() {
				if !col.Has(i) {
					continue
				}
				// Arrange: everybody grants except member i of the column.
				granted := fullSet(s.Size()) &^ Set(0).Add(i)

				// Act.
				got := s.Phase2(slot, granted, 0)
				gotRefused := s.Phase2(slot, granted, Set(0).Add(i))

				// Check.
				if got != Pending {
					t.Errorf("%v slot %d: all but column member %d granted: %v, want pending", s, slot, i, got)
				}
				if gotRefused != Lost {
					t.Errorf("%v slot %d: column member %d refused: %v, want lost", s, slot, i, gotRefused)
				}
			}
			// A refusal from everybody outside the column does not lose it.
			outside := fullSet(s.Size()) &^ col
			if got := s.Phase2(slot, 0, outside); got != Pending {
				t.Errorf("%v slot %d: refusals outside the column: %v, want pending", s, slot, got)
			}
			if got := s.Phase2(slot, col, outside); got != Won {
				t.Errorf("%v slot %d: the column granted: %v, want won", s, slot, got)
			}
		}
	}
}

// TestAddressees checks who each phase is sent to: Prepare and PreRead go to
// every member on every system; Accept goes to everyone except on a grid,
// where it goes to the slot's column only.
func TestAddressees(t *testing.T) {
	// Arrange.
	members := []ID{5, 3, 9, 7}
	sorted := []ID{3, 5, 7, 9}
	systems := []System{
		must(t)(NewMajority(members)),
		must(t)(NewFlexible(members, 3, 2)),
		must(t)(NewGrid(members, 2, 2)),
	}

	for _, s := range systems {
		// Act.
		prep, pre := s.PrepareAddressees(), s.PreReadAddressees(0, false)
		acc0, acc1 := s.AcceptAddressees(0), s.AcceptAddressees(1)

		// Check.
		wantPre := sorted
		if s.Kind() == KindGrid {
			wantPre = []ID{3, 5} // row 0
		}
		if !slices.Equal(prep, sorted) || !slices.Equal(pre, wantPre) {
			t.Errorf("%v: prepare %v pre-read %v, want %v %v", s, prep, pre, sorted, wantPre)
		}
		wantAcc0, wantAcc1 := sorted, sorted
		if s.Kind() == KindGrid {
			wantAcc0, wantAcc1 = []ID{3, 7}, []ID{5, 9}
		}
		if !slices.Equal(acc0, wantAcc0) || !slices.Equal(acc1, wantAcc1) {
			t.Errorf("%v: accept(0) %v accept(1) %v, want %v %v", s, acc0, acc1, wantAcc0, wantAcc1)
		}
	}
}

// TestPhase2Everywhere checks the CheckQuorum predicate: on majority and
// flexible it is "at least q2 live", on a grid "every column fully live".
func TestPhase2Everywhere(t *testing.T) {
	maj := must(t)(NewMajority(ids(5)))
	flex := must(t)(NewFlexible(ids(5), 4, 2))
	grid := must(t)(NewGrid(ids(6), 2, 3))
	cases := []struct {
		name string
		s    System
		live Set
		want bool
	}{
		{"majority none", maj, 0, false},
		{"majority two", maj, fullSet(2), false},
		{"majority three", maj, fullSet(3), true},
		{"majority all", maj, fullSet(5), true},
		{"majority non-members ignored", maj, fullSet(2) | ^fullSet(5), false},
		{"flexible one", flex, Set(0).Add(4), false},
		{"flexible q2", flex, Set(0).Add(0).Add(4), true},
		{"grid one row", grid, fullSet(3), false},
		{"grid row plus partial", grid, fullSet(5), false},
		{"grid all", grid, fullSet(6), true},
		{"grid all plus non-members", grid, ^Set(0), true},
		{"grid non-members only", grid, ^fullSet(6), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Arrange: the case's system and live set.

			// Act.
			got := tc.s.Phase2Everywhere(tc.live)

			// Check.
			if got != tc.want {
				t.Fatalf("%v Phase2Everywhere(%b) = %v, want %v", tc.s, uint64(tc.live), got, tc.want)
			}
		})
	}
}

// TestPhase2EverywhereMatchesEveryColumn checks, for every live subset of
// small grids, that Phase2Everywhere holds iff Phase2 is Won on every slot
// (the slow path it stands for).
func TestPhase2EverywhereMatchesEveryColumn(t *testing.T) {
	for n := 1; n <= 8; n++ {
		for _, s := range validSystems(t, n) {
			for live := Set(0); live <= fullSet(n); live++ {
				// Arrange: the slow answer, one slot per column.
				want := true
				cols := max(s.Spec().Cols, 1)
				for slot := range cols {
					if s.Phase2(uint64(slot), live, 0) != Won {
						want = false
					}
				}

				// Act.
				got := s.Phase2Everywhere(live)

				// Check.
				if got != want {
					t.Fatalf("%v live=%b: Phase2Everywhere = %v, slow path %v", s, uint64(live), got, want)
				}
			}
		}
	}
}

// TestSetOfAndIndexOf checks ids map to their sorted index, non-members are
// ignored by SetOf and reported missing by IndexOf and Contains.
func TestSetOfAndIndexOf(t *testing.T) {
	// Arrange.
	s := must(t)(NewMajority([]ID{40, 10, 30, 20}))

	// Act.
	set := s.SetOf(30, 10, 99, 0, 10)
	i20, ok20 := s.IndexOf(20)
	_, ok99 := s.IndexOf(99)
	_, ok0 := s.IndexOf(0)

	// Check.
	if want := Set(0).Add(0).Add(2); set != want {
		t.Errorf("SetOf(30,10,99,0,10) = %b, want %b", uint64(set), uint64(want))
	}
	if set.Len() != 2 || !set.Has(0) || set.Has(1) || !set.Has(2) || set.Has(3) {
		t.Errorf("Len/Has wrong on %b", uint64(set))
	}
	if i20 != 1 || !ok20 || ok99 || ok0 {
		t.Errorf("IndexOf: 20 -> (%d,%v), 99 -> %v, 0 -> %v", i20, ok20, ok99, ok0)
	}
	if !s.Contains(40) || s.Contains(41) {
		t.Errorf("Contains wrong")
	}
	for i, id := range s.Members() {
		if got, ok := s.IndexOf(id); !ok || got != i {
			t.Errorf("IndexOf(%d) = (%d,%v), want (%d,true)", id, got, ok, i)
		}
	}
	if got := s.SetOf(); got != 0 {
		t.Errorf("SetOf() = %b, want empty", uint64(got))
	}
	if got := s.SetOf(s.Members()...); got != fullSet(4) {
		t.Errorf("SetOf(all) = %b, want %b", uint64(got), uint64(fullSet(4)))
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

// TestPredicatesIgnoreNonMembersAndOverlap checks the predicates' input
// hygiene: bits beyond the membership count for nothing, and a member listed
// as both granted and refused counts as granted.
func TestPredicatesIgnoreNonMembersAndOverlap(t *testing.T) {
	// Arrange.
	maj := must(t)(NewMajority(ids(3)))
	grid := must(t)(NewGrid(ids(4), 2, 2))
	beyond := ^fullSet(4)

	// Act and check: non-members cannot win or lose.
	if got := maj.Phase1(beyond, 0); got != Pending {
		t.Errorf("majority Phase1(non-members) = %v, want pending", got)
	}
	if got := maj.Phase2(0, 0, beyond); got != Pending {
		t.Errorf("majority Phase2 refused by non-members = %v, want pending", got)
	}
	if got := grid.Phase1(beyond, beyond); got != Pending {
		t.Errorf("grid Phase1(non-members) = %v, want pending", got)
	}
	if got := grid.Phase2(0, beyond, 0); got != Pending {
		t.Errorf("grid Phase2(non-members) = %v, want pending", got)
	}

	// Act and check: overlap counts as granted.
	if got := maj.Phase1(fullSet(2), fullSet(3)); got != Won {
		t.Errorf("majority Phase1 with overlapping refusals = %v, want won", got)
	}
	if got := maj.Phase1(fullSet(1), fullSet(2)); got != Pending {
		t.Errorf("majority Phase1 1 granted, 1 other refused = %v, want pending", got)
	}
	col0 := grid.SetOf(1, 3)
	if got := grid.Phase2(0, col0, col0); got != Won {
		t.Errorf("grid Phase2 column granted and refused = %v, want won", got)
	}
	if got := grid.Phase1(grid.SetOf(1, 2), fullSet(4)); got != Won {
		t.Errorf("grid Phase1 row granted and everyone refused = %v, want won", got)
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

// A grid read asks one row, a Phase-1 quorum: row pick % rows. With block
// it adds one member of every other row (column pick / rows % cols), so
// its answers also meet every row; every pick's set is both.
func TestGridPreReadAsksOneRow(t *testing.T) {
	// Arrange: 2 rows × 3 columns, row-major: row 0 = {1,2,3}, row 1 = {4,5,6}.
	s := must(t)(NewGrid([]ID{1, 2, 3, 4, 5, 6}, 2, 3))

	for pick := range uint64(12) {
		// Act.
		plain, blocking := s.PreReadAddressees(pick, false), s.PreReadAddressees(pick, true)

		// Check.
		if len(plain) != 3 || s.Phase1(s.SetOf(plain...), 0) != Won {
			t.Errorf("pick %d: %v is not one row", pick, plain)
		}
		if len(blocking) != 4 || s.Phase1(s.SetOf(blocking...), 0) != Won || s.Phase1(0, s.SetOf(blocking...)) != Lost {
			t.Errorf("pick %d: %v does not hold a row and meet every row", pick, blocking)
		}
	}
	if got := s.PreReadAddressees(1, false); !slices.Equal(got, []ID{4, 5, 6}) {
		t.Errorf("pick 1: %v, want row 1", got)
	}
	if got := s.PreReadAddressees(3, true); !slices.Equal(got, []ID{2, 4, 5, 6}) {
		t.Errorf("pick 3 (row 1, column 1): %v, want [2 4 5 6]", got)
	}
}
