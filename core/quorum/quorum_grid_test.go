// This file checks the quorum package's grid and addressees one behaviour
// at a time: the sorted row-major grid layout, the rule that a grid slot is
// decided by its column alone, the addressee lists, Phase2Everywhere and the
// grid's pre-read row. Every test builds a System by hand, acts once, and
// checks the answer against a value written out in the test.
package quorum

import (
	"slices"
	"testing"
)

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
