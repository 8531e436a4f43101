// This file checks the quorum systems exhaustively for small memberships,
// the way etcd raft's quorum/quick_test.go checks its fast paths against a
// slow model. For every n in 1..9 it builds every valid system (Majority,
// every Flexible (q1, q2) with q1+q2 > n, every Grid with rows×cols == n),
// enumerates all 2^n subsets of members, and checks: (1) every Phase-1 quorum
// meets every Phase-2 quorum of every slot (Paxos Made Simple §2.2, Flexible
// Paxos §3, Flexible Paxos §4 grid); (2) Phase1 and Phase2 agree with a naive
// model that counts members or walks grid rows and columns by index
// arithmetic, never the package's masks; (3) quorums are monotone (a superset
// of a won set is won). For n <= 6 it also checks the tri-state on every
// disjoint (granted, refused) pair against its definition: Won iff granted is
// a quorum, Lost iff no superset of granted avoiding refused is one, Pending
// otherwise. Members are given unsorted and non-contiguous so the sorted-index
// mapping is exercised too.
package quorum

import (
	"fmt"
	"testing"
)

// model is the naive restatement of a quorum system, by definition: it never
// touches System's masks or thresholds.
type model struct {
	kind       Kind
	n          int
	q1, q2     int // Flexible
	rows, cols int // Grid
}

func (m model) String() string {
	return fmt.Sprintf("model{%v n=%d q=%d/%d grid=%dx%d}", m.kind, m.n, m.q1, m.q2, m.rows, m.cols)
}

func popcount(s Set) int {
	c := 0
	for ; s != 0; s >>= 1 {
		c += int(s & 1)
	}
	return c
}

// phase1 reports whether s (a set of member indexes) is a Phase-1 quorum.
func (m model) phase1(s Set) bool {
	switch m.kind {
	case KindMajority:
		return 2*popcount(s) > m.n // Paxos Made Simple §2.2: more than half.
	case KindFlexible:
		return popcount(s) >= m.q1 // Flexible Paxos §3.
	default: // Flexible Paxos §4 grid: some full row.
		for r := 0; r < m.rows; r++ {
			full := true
			for c := 0; c < m.cols; c++ {
				if s&(1<<uint(r*m.cols+c)) == 0 {
					full = false
				}
			}
			if full {
				return true
			}
		}
		return false
	}
}

// phase2 reports whether s is a Phase-2 quorum for slot.
func (m model) phase2(slot uint64, s Set) bool {
	switch m.kind {
	case KindMajority:
		return 2*popcount(s) > m.n
	case KindFlexible:
		return popcount(s) >= m.q2
	default: // the full column slot mod cols.
		c := int(slot % uint64(m.cols))
		for r := 0; r < m.rows; r++ {
			if s&(1<<uint(r*m.cols+c)) == 0 {
				return false
			}
		}
		return true
	}
}

// slots are the slots a system is probed on: every column of a grid (one slot
// on the others), and a few beyond that wrap around.
func (m model) slots() []uint64 {
	cols := max(m.cols, 1)
	out := make([]uint64, 0, cols+3)
	for c := range cols {
		out = append(out, uint64(c))
	}
	return append(out, uint64(cols), uint64(2*cols+1), ^uint64(0))
}

// modelled is a constructed system with the model it must match.
type modelled struct {
	sys   System
	model model
}

// shuffledMembers returns n distinct non-zero ids in a scrambled,
// non-contiguous order: 7, 14, ..., 7n reversed, then adjacent pairs swapped.
func shuffledMembers(n int) []ID {
	out := make([]ID, n)
	for i := range out {
		out[i] = ID(7 * (n - i))
	}
	for i := 0; i+1 < n; i += 2 {
		out[i], out[i+1] = out[i+1], out[i]
	}
	return out
}

// systemsOf builds every valid system over n members with its model.
func systemsOf(t *testing.T, n int) []modelled {
	t.Helper()
	members := shuffledMembers(n)
	var out []modelled
	add := func(s System, err error, m model) {
		t.Helper()
		if err != nil {
			t.Fatalf("%v: constructor refused a valid system: %v", m, err)
		}
		out = append(out, modelled{s, m})
	}
	s, err := NewMajority(members)
	add(s, err, model{kind: KindMajority, n: n})
	for q1 := 1; q1 <= n; q1++ {
		for q2 := n + 1 - q1; q2 <= n; q2++ {
			s, err := NewFlexible(members, q1, q2)
			add(s, err, model{kind: KindFlexible, n: n, q1: q1, q2: q2})
		}
	}
	for rows := 1; rows <= n; rows++ {
		if n%rows == 0 {
			s, err := NewGrid(members, rows, n/rows)
			add(s, err, model{kind: KindGrid, n: n, rows: rows, cols: n / rows})
		}
	}
	return out
}

func validSystems(t *testing.T, n int) []System {
	t.Helper()
	var out []System
	for _, m := range systemsOf(t, n) {
		out = append(out, m.sys)
	}
	return out
}

// TestSystemsOfCoversEveryShape guards the enumeration itself: the number of
// systems per n is 1 majority + n(n+1)/2 flexible pairs + one grid per divisor.
func TestSystemsOfCoversEveryShape(t *testing.T) {
	divisors := []int{0, 1, 2, 2, 3, 2, 4, 2, 4, 3}
	for n := 1; n <= 9; n++ {
		// Arrange.
		want := 1 + n*(n+1)/2 + divisors[n]

		// Act.
		got := len(systemsOf(t, n))

		// Check.
		if got != want {
			t.Errorf("n=%d: %d systems, want %d", n, got, want)
		}
	}
}

// TestExhaustiveIntersection checks the safety core of every system: any set
// Phase1 calls Won meets any set Phase2 calls Won, on every slot (Paxos Made
// Simple §2.2 for majorities, Flexible Paxos §3 for q1+q2 > n, Flexible Paxos
// §4 grid for a row meeting every column).
func TestExhaustiveIntersection(t *testing.T) {
	for n := 1; n <= 9; n++ {
		for _, m := range systemsOf(t, n) {
			// Arrange: every Phase-1 quorum the system admits.
			var won1 []Set
			for s := Set(0); s <= fullSet(n); s++ {
				if m.sys.Phase1(s, 0) == Won {
					won1 = append(won1, s)
				}
			}
			if len(won1) == 0 {
				t.Fatalf("%v: no Phase-1 quorum at all", m.sys)
			}
			for _, slot := range m.model.slots() {
				// Act: every Phase-2 quorum for this slot.
				var won2 []Set
				for s := Set(0); s <= fullSet(n); s++ {
					if m.sys.Phase2(slot, s, 0) == Won {
						won2 = append(won2, s)
					}
				}

				// Check.
				if len(won2) == 0 {
					t.Fatalf("%v slot %d: no Phase-2 quorum at all", m.sys, slot)
				}
				for _, a := range won1 {
					for _, b := range won2 {
						if a&b == 0 {
							t.Fatalf("%v slot %d: Phase-1 quorum %b misses Phase-2 quorum %b",
								m.sys, slot, uint64(a), uint64(b))
						}
					}
				}
			}
		}
	}
}

// TestPredicatesMatchNaiveModel checks Phase1 and Phase2 on every granted
// subset against the model, with nobody refusing (Won or Pending) and with
// everybody else refusing (Won or Lost).
func TestPredicatesMatchNaiveModel(t *testing.T) {
	for n := 1; n <= 9; n++ {
		for _, m := range systemsOf(t, n) {
			all := fullSet(n)
			for g := Set(0); g <= all; g++ {
				// Arrange: the model's verdicts.
				open, closed := Pending, Lost
				if m.model.phase1(g) {
					open, closed = Won, Won
				}

				// Act.
				gotOpen, gotClosed := m.sys.Phase1(g, 0), m.sys.Phase1(g, all&^g)

				// Check.
				if gotOpen != open || gotClosed != closed {
					t.Fatalf("%v Phase1(%b): %v/%v, model %v/%v", m.sys, uint64(g), gotOpen, gotClosed, open, closed)
				}
				for _, slot := range m.model.slots() {
					open, closed := Pending, Lost
					if m.model.phase2(slot, g) {
						open, closed = Won, Won
					}
					gotOpen, gotClosed := m.sys.Phase2(slot, g, 0), m.sys.Phase2(slot, g, all&^g)
					if gotOpen != open || gotClosed != closed {
						t.Fatalf("%v Phase2(slot %d, %b): %v/%v, model %v/%v",
							m.sys, slot, uint64(g), gotOpen, gotClosed, open, closed)
					}
				}
			}
		}
	}
}

// TestQuorumsAreMonotone checks that adding any member to a won set keeps it
// won, for both phases and every slot; by induction every superset is won.
func TestQuorumsAreMonotone(t *testing.T) {
	for n := 1; n <= 9; n++ {
		for _, m := range systemsOf(t, n) {
			for g := Set(0); g <= fullSet(n); g++ {
				// Arrange.
				won1 := m.sys.Phase1(g, 0) == Won

				for i := range n {
					// Act.
					bigger := g.Add(i)

					// Check.
					if won1 && m.sys.Phase1(bigger, 0) != Won {
						t.Fatalf("%v: Phase1 won on %b but not on %b", m.sys, uint64(g), uint64(bigger))
					}
					for _, slot := range m.model.slots() {
						if m.sys.Phase2(slot, g, 0) == Won && m.sys.Phase2(slot, bigger, 0) != Won {
							t.Fatalf("%v slot %d: Phase2 won on %b but not on %b",
								m.sys, slot, uint64(g), uint64(bigger))
						}
					}
				}
			}
		}
	}
}

// reachable reports whether some superset of granted that avoids refused
// satisfies quorum, by enumerating every subset of the undecided members.
func reachable(all, granted, refused Set, quorum func(Set) bool) bool {
	free := all &^ granted &^ refused
	for sub := free; ; sub = (sub - 1) & free {
		if quorum(granted | sub) {
			return true
		}
		if sub == 0 {
			return false
		}
	}
}

func wantTriState(all, granted, refused Set, quorum func(Set) bool) Result {
	switch {
	case quorum(granted):
		return Won
	case !reachable(all, granted, refused, quorum):
		return Lost
	}
	return Pending
}

// TestTriStateMatchesDefinition checks Pending/Won/Lost on every disjoint
// (granted, refused) pair for n <= 6: Won iff granted is a quorum, Lost iff
// no superset of granted disjoint from refused is a quorum. Also checks that
// Lost is monotone in refused (more refusals never revive a lost ballot).
func TestTriStateMatchesDefinition(t *testing.T) {
	for n := 1; n <= 6; n++ {
		all := fullSet(n)
		for _, m := range systemsOf(t, n) {
			for g := Set(0); g <= all; g++ {
				rest := all &^ g
				for r := rest; ; r = (r - 1) & rest {
					// Arrange: the definition's verdicts.
					want1 := wantTriState(all, g, r, m.model.phase1)

					// Act.
					got1 := m.sys.Phase1(g, r)

					// Check.
					if got1 != want1 {
						t.Fatalf("%v Phase1(granted %b, refused %b) = %v, want %v",
							m.sys, uint64(g), uint64(r), got1, want1)
					}
					if got1 == Lost && r != rest {
						for i := range n {
							if rest.Has(i) && !r.Has(i) && m.sys.Phase1(g, r.Add(i)) != Lost {
								t.Fatalf("%v Phase1: lost at refused %b, not at %b", m.sys, uint64(r), uint64(r.Add(i)))
							}
						}
					}
					for _, slot := range m.model.slots() {
						want2 := wantTriState(all, g, r, func(s Set) bool { return m.model.phase2(slot, s) })
						if got2 := m.sys.Phase2(slot, g, r); got2 != want2 {
							t.Fatalf("%v Phase2(slot %d, granted %b, refused %b) = %v, want %v",
								m.sys, slot, uint64(g), uint64(r), got2, want2)
						}
					}
					if r == 0 {
						break
					}
				}
			}
		}
	}
}
