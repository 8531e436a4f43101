// This file checks the quorum package's Set helpers and its predicates,
// which ignore non-members and overlap. Every test builds a System by hand,
// acts once, and checks the answer against a value written out in the
// test.
package quorum

import (
	"testing"
)

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
