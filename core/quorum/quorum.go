// Package quorum is the single boundary every quorum question in paros
// crosses. No other package compares a vote count with a threshold: it asks a
// System whether a set of answers is a Phase-1 or a Phase-2 quorum, and which
// members to address.
//
// Three systems are supported, each from the literature:
//
//	system    Phase-1 quorum            Phase-2 quorum              source
//	--------  ------------------------  --------------------------  -------------------------
//	Majority  any ⌊n/2⌋+1 members       any ⌊n/2⌋+1 members         Paxos Made Simple §2.2
//	Flexible  any Q1 members            any Q2 members (Q1+Q2 > n)  Flexible Paxos §3
//	Grid      one full row              the full column of the slot Flexible Paxos §4 (grid)
//
// A grid lays the sorted membership out row-major: member i sits in row
// i/cols and column i%cols, and slot s belongs to column s%cols. Any full row
// meets any full column in exactly one member, which is the intersection
// Paxos needs between Phase 1 and Phase 2.
//
// Predicates are tri-state (Pending, Won, Lost) and take two member sets: the
// members that granted and the members that refused. A Set is a bit set over
// member indexes, so a tally costs no allocation.
package quorum

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
)

// ID names one acceptor. It is the same number as paxos.NodeID.
type ID uint64

// MembersMax bounds the size of one acceptor configuration; Set is a 64-bit
// mask over member indexes.
const MembersMax = 64

// Kind names a quorum system. The zero value is Majority so that a plain
// deployment's configuration bytes stay empty (proto3 omits defaults).
type Kind uint8

const (
	KindMajority Kind = iota
	KindFlexible
	KindGrid
)

func (k Kind) String() string {
	switch k {
	case KindMajority:
		return "majority"
	case KindFlexible:
		return "flexible"
	case KindGrid:
		return "grid"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Result is the tri-state answer of a quorum predicate.
type Result uint8

const (
	// Pending: not yet a quorum, and the members that have not answered
	// could still make one.
	Pending Result = iota
	// Won: the granted members contain a quorum.
	Won
	// Lost: the refusals already rule out every quorum.
	Lost
)

func (r Result) String() string {
	switch r {
	case Pending:
		return "pending"
	case Won:
		return "won"
	case Lost:
		return "lost"
	}
	return "result(?)"
}

// Errors returned by the constructors. They are configuration errors: the
// operator named an impossible system.
var (
	ErrEmpty           = errors.New("paros/quorum: empty membership")
	ErrTooMany         = errors.New("paros/quorum: more than 64 members")
	ErrDuplicateMember = errors.New("paros/quorum: duplicate member")
	ErrZeroMember      = errors.New("paros/quorum: member id 0 is reserved")
	ErrNoIntersection  = errors.New("paros/quorum: phase-1 and phase-2 quorums do not intersect (need q1+q2 > n)")
	ErrQuorumSize      = errors.New("paros/quorum: quorum size out of range")
	ErrGridShape       = errors.New("paros/quorum: grid rows*cols must equal the member count")
)

// Set is a set of member indexes (bit i = the i-th member in sorted order).
type Set uint64

// Add returns s with member index i added.
func (s Set) Add(i int) Set { return s | 1<<uint(i) }

// Has reports whether member index i is in s.
func (s Set) Has(i int) bool { return s&(1<<uint(i)) != 0 }

// Len is the number of members in s.
func (s Set) Len() int { return bits.OnesCount64(uint64(s)) }

// System is an immutable quorum system over a sorted, de-duplicated
// membership. Construct it only with NewMajority, NewFlexible or NewGrid (or
// New): the constructors are the only place the intersection rule is checked.
type System struct {
	kind    Kind
	members []ID // Invariant: sorted ascending, no duplicates, no zero.
	q1, q2  int  // Flexible sizes; for Majority both are ⌊n/2⌋+1.
	rows    int  // Grid only.
	cols    int  // Grid only; Invariant: rows*cols == len(members).
	all     Set
	// columns[c] lists the members of grid column c; rowMasks and colMasks
	// are the same layout as Sets.
	columns  [][]ID
	rowMasks []Set
	colMasks []Set
}

func normalize(members []ID) ([]ID, error) {
	if len(members) == 0 {
		return nil, ErrEmpty
	}
	if len(members) > MembersMax {
		return nil, ErrTooMany
	}
	m := slices.Clone(members)
	slices.Sort(m)
	for i, id := range m {
		if id == 0 {
			return nil, ErrZeroMember
		}
		if i > 0 && m[i-1] == id {
			return nil, fmt.Errorf("%w: %d", ErrDuplicateMember, id)
		}
	}
	return m, nil
}

// NewMajority is classic Paxos: any ⌊n/2⌋+1 members form either quorum.
func NewMajority(members []ID) (System, error) {
	m, err := normalize(members)
	if err != nil {
		return System{}, err
	}
	q := len(m)/2 + 1
	return System{kind: KindMajority, members: m, q1: q, q2: q, all: fullSet(len(m))}, nil
}

// NewFlexible is Flexible Paxos (Howard et al. §3): Phase-1 quorums of q1 and
// Phase-2 quorums of q2 members. It refuses unless q1+q2 > n, the one
// condition under which every Phase-1 quorum meets every Phase-2 quorum.
func NewFlexible(members []ID, q1, q2 int) (System, error) {
	m, err := normalize(members)
	if err != nil {
		return System{}, err
	}
	n := len(m)
	if q1 < 1 || q2 < 1 || q1 > n || q2 > n {
		return System{}, fmt.Errorf("%w: q1=%d q2=%d n=%d", ErrQuorumSize, q1, q2, n)
	}
	if q1+q2 <= n {
		return System{}, fmt.Errorf("%w: q1=%d q2=%d n=%d", ErrNoIntersection, q1, q2, n)
	}
	return System{kind: KindFlexible, members: m, q1: q1, q2: q2, all: fullSet(n)}, nil
}

// NewGrid is the grid quorum system (Flexible Paxos §4): the sorted members
// laid out row-major in rows×cols; a full row is a Phase-1 quorum and the full
// column of a slot is that slot's Phase-2 quorum.
func NewGrid(members []ID, rows, cols int) (System, error) {
	m, err := normalize(members)
	if err != nil {
		return System{}, err
	}
	// Bound each side by n before multiplying: rows*cols can wrap around to
	// n (7 × 0x6db6db6db6db6db7 == 1) and a wrapped shape must not reach make.
	if rows < 1 || cols < 1 || rows > len(m) || cols > len(m) || rows*cols != len(m) {
		return System{}, fmt.Errorf("%w: %dx%d for %d members", ErrGridShape, rows, cols, len(m))
	}
	s := System{kind: KindGrid, members: m, rows: rows, cols: cols, all: fullSet(len(m))}
	s.columns = make([][]ID, cols)
	s.colMasks = make([]Set, cols)
	s.rowMasks = make([]Set, rows)
	for i, id := range m {
		r, c := i/cols, i%cols
		s.columns[c] = append(s.columns[c], id)
		s.colMasks[c] = s.colMasks[c].Add(i)
		s.rowMasks[r] = s.rowMasks[r].Add(i)
	}
	return s, nil
}

// Spec is the configuration data that names a quorum system; it is what a
// format marker and the wire carry.
type Spec struct {
	Kind       Kind
	Q1, Q2     int // Flexible only
	Rows, Cols int // Grid only
}

// New builds the system spec describes over members.
func New(members []ID, spec Spec) (System, error) {
	switch spec.Kind {
	case KindMajority:
		return NewMajority(members)
	case KindFlexible:
		return NewFlexible(members, spec.Q1, spec.Q2)
	case KindGrid:
		return NewGrid(members, spec.Rows, spec.Cols)
	}
	return System{}, fmt.Errorf("paros/quorum: unknown quorum system %d", spec.Kind)
}

// Spec returns the configuration data of s.
func (s System) Spec() Spec {
	switch s.kind {
	case KindFlexible:
		return Spec{Kind: KindFlexible, Q1: s.q1, Q2: s.q2}
	case KindGrid:
		return Spec{Kind: KindGrid, Rows: s.rows, Cols: s.cols}
	}
	return Spec{Kind: KindMajority}
}

func fullSet(n int) Set {
	if n == 64 {
		return ^Set(0)
	}
	return Set(1)<<uint(n) - 1
}

// Kind is the system's kind.
func (s System) Kind() Kind { return s.kind }

// Size is the number of members.
func (s System) Size() int { return len(s.members) }

// Members returns the sorted membership. The caller must not modify it.
func (s System) Members() []ID { return s.members }

// IsZero reports whether s is the zero System (never constructed).
func (s System) IsZero() bool { return len(s.members) == 0 }

// IndexOf returns the member index of id, used to build Sets.
func (s System) IndexOf(id ID) (int, bool) {
	return slices.BinarySearch(s.members, id)
}

// Contains reports whether id is a member.
func (s System) Contains(id ID) bool {
	_, ok := s.IndexOf(id)
	return ok
}

// SetOf builds the Set of the given ids, ignoring non-members.
func (s System) SetOf(ids ...ID) Set {
	var out Set
	for _, id := range ids {
		if i, ok := s.IndexOf(id); ok {
			out = out.Add(i)
		}
	}
	return out
}

// ColumnOf is the grid column that decides slot: slot % cols. On a
// non-grid system every slot is in column 0.
func (s System) ColumnOf(slot uint64) int {
	if s.kind != KindGrid {
		return 0
	}
	return int(slot % uint64(s.cols))
}

// MemberColumn is the grid column of a member index (0 on non-grid systems).
func (s System) MemberColumn(index int) int {
	if s.kind != KindGrid {
		return 0
	}
	return index % s.cols
}

// RowOf is the grid row of a member index (0 on non-grid systems).
func (s System) RowOf(index int) int {
	if s.kind != KindGrid {
		return 0
	}
	return index / s.cols
}

// Phase1 answers whether granted holds a Phase-1 quorum, given the members in
// refused can no longer grant.
func (s System) Phase1(granted, refused Set) Result {
	granted &= s.all
	refused &= s.all &^ granted
	switch s.kind {
	case KindGrid:
		lost := true
		for _, row := range s.rowMasks {
			if granted&row == row {
				return Won
			}
			if refused&row == 0 {
				lost = false
			}
		}
		if lost {
			return Lost
		}
		return Pending
	default:
		return threshold(granted, refused, len(s.members), s.q1)
	}
}

// Phase2 answers whether granted holds a Phase-2 quorum for slot. On a grid
// only the slot's column decides: a vote from outside the column counts for
// nothing.
func (s System) Phase2(slot uint64, granted, refused Set) Result {
	granted &= s.all
	refused &= s.all &^ granted
	switch s.kind {
	case KindGrid:
		col := s.colMasks[s.ColumnOf(slot)]
		if granted&col == col {
			return Won
		}
		if refused&col != 0 {
			return Lost
		}
		return Pending
	default:
		return threshold(granted, refused, len(s.members), s.q2)
	}
}

// Phase2Everywhere reports whether live holds a Phase-2 quorum for every
// slot (on a grid: every column). A leader whose live acknowledgements fail
// this cannot commit some slots; CheckQuorum steps it down.
func (s System) Phase2Everywhere(live Set) bool {
	live &= s.all
	switch s.kind {
	case KindGrid:
		for _, col := range s.colMasks {
			if live&col != col {
				return false
			}
		}
		return true
	default:
		return live.Len() >= s.q2
	}
}

func threshold(granted, refused Set, n, q int) Result {
	if granted.Len() >= q {
		return Won
	}
	if n-refused.Len() < q {
		return Lost
	}
	return Pending
}

// PrepareAddressees lists the members a candidate sends Prepare to: every
// member, so that any Phase-1 quorum (any row of a grid) can complete.
func (s System) PrepareAddressees() []ID { return s.members }

// AcceptAddressees lists the members an Accept for slot goes to: every member
// on majority and flexible systems, the slot's column on a grid.
func (s System) AcceptAddressees(slot uint64) []ID {
	if s.kind == KindGrid {
		return s.columns[s.ColumnOf(slot)]
	}
	return s.members
}

// PreReadAddressees lists the members a quorum read asks first for vote
// watermarks. On majority and flexible systems that is every member,
// settling on the first Phase-1 quorum to answer. On a grid one full row
// is a Phase-1 quorum, so a read asks one row, row pick % rows (a random
// pick spreads reads over the rows); with block it also asks one member
// of every other row, column pick / rows % cols, so its answers meet every
// Phase-1 quorum too (a read on a deployment with matchmakers must). A
// read that does not settle widens to every member.
func (s System) PreReadAddressees(pick uint64, block bool) []ID {
	if s.kind != KindGrid {
		return s.members
	}
	row := int(pick % uint64(s.rows))
	col := int(pick / uint64(s.rows) % uint64(s.cols))
	out := make([]ID, 0, s.cols+s.rows-1)
	for i, id := range s.members {
		if i/s.cols == row || block && i%s.cols == col {
			out = append(out, id)
		}
	}
	return out
}

// String describes the system for logs.
func (s System) String() string {
	switch s.kind {
	case KindFlexible:
		return fmt.Sprintf("flexible(n=%d,q1=%d,q2=%d)", len(s.members), s.q1, s.q2)
	case KindGrid:
		return fmt.Sprintf("grid(%dx%d)", s.rows, s.cols)
	}
	return fmt.Sprintf("majority(n=%d)", len(s.members))
}
