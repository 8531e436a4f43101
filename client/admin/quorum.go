package admin

import (
	"fmt"
	"strconv"
	"strings"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/quorum"
)

// Quorum is a quorum system over a journal's members: which sets of them
// decide. The zero Quorum is Majority. Quorums compare with ==, and print
// (String) and parse (ParseQuorum) in the form parosctl's --quorum reads:
//
//	majority          any majority of the members, in both phases
//	flexible:Q1:Q2    any Q1 members elect (Phase 1), any Q2 decide
//	                  (Phase 2); Q1+Q2 must exceed the members
//	grid:RxC          R*C members in a grid: a row elects, a column
//	                  decides
type Quorum struct {
	spec quorum.Spec
}

// Majority is the majority quorum system (the default).
func Majority() Quorum { return Quorum{} }

// Flexible is the flexible quorum system in which any q1 members elect a
// leader and any q2 decide a value.
func Flexible(q1, q2 int) Quorum {
	return Quorum{quorum.Spec{Kind: quorum.KindFlexible, Q1: q1, Q2: q2}}
}

// Grid is the grid quorum system of rows x cols members.
func Grid(rows, cols int) Quorum {
	return Quorum{quorum.Spec{Kind: quorum.KindGrid, Rows: rows, Cols: cols}}
}

// ParseQuorum reads a quorum system as String prints it: "majority" (or
// ""), "flexible:Q1:Q2", "grid:RxC", each number at least 1. Whether the
// members of a configuration can form it is checked where it is used.
func ParseQuorum(s string) (Quorum, error) {
	bad := fmt.Errorf("paros/admin: quorum %q: want majority, flexible:Q1:Q2 or grid:RxC", s)
	kind, rest, _ := strings.Cut(strings.TrimSpace(s), ":")
	switch kind {
	case "", "majority":
		if rest != "" {
			return Quorum{}, bad
		}
		return Majority(), nil
	case "flexible":
		a, b, ok := strings.Cut(rest, ":")
		q1, err1 := strconv.Atoi(a)
		q2, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || q1 < 1 || q2 < 1 {
			return Quorum{}, bad
		}
		return Flexible(q1, q2), nil
	case "grid":
		a, b, ok := strings.Cut(rest, "x")
		r, err1 := strconv.Atoi(a)
		c, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || r < 1 || c < 1 {
			return Quorum{}, bad
		}
		return Grid(r, c), nil
	}
	return Quorum{}, bad
}

// String prints q as ParseQuorum reads it.
func (q Quorum) String() string {
	switch q.spec.Kind {
	case quorum.KindFlexible:
		return fmt.Sprintf("flexible:%d:%d", q.spec.Q1, q.spec.Q2)
	case quorum.KindGrid:
		return fmt.Sprintf("grid:%dx%d", q.spec.Rows, q.spec.Cols)
	}
	return "majority"
}

// quorumOf is the Quorum spec names, keeping only the fields of its kind
// (so two names of one system compare equal).
func quorumOf(spec quorum.Spec) Quorum {
	switch spec.Kind {
	case quorum.KindFlexible:
		return Flexible(spec.Q1, spec.Q2)
	case quorum.KindGrid:
		return Grid(spec.Rows, spec.Cols)
	case quorum.KindMajority:
		return Majority()
	}
	return Quorum{spec}
}

// quorumFromWire reads the quorum fields of an answer or a placement.
func quorumFromWire(system pb.QuorumSystem, q1, q2, rows, cols uint32) Quorum {
	return quorumOf(quorum.Spec{Kind: quorum.Kind(system), Q1: int(q1), Q2: int(q2), Rows: int(rows), Cols: int(cols)})
}

// wire is q's quorum fields of a request.
func (q Quorum) wire() (system pb.QuorumSystem, q1, q2, rows, cols uint32) {
	s := q.spec
	return pb.QuorumSystem(s.Kind), uint32(s.Q1), uint32(s.Q2), uint32(s.Rows), uint32(s.Cols)
}
