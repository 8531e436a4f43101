package admin

import (
	"fmt"
	"strconv"
	"strings"
)

// NodeID names a machine of the cell: a node, a replica or a proxy
// machine. It prints, and parosctl prints it, as 16 hex digits; zero is no
// machine.
type NodeID uint64

// String prints n as 16 hex digits.
func (n NodeID) String() string { return fmt.Sprintf("%016x", uint64(n)) }

// Format prints n as String does for %s and %v, and as the number for
// the integer verbs (%d, %x, %016x, ...), so that a format written for a
// uint64 node id prints the same digits.
func (n NodeID) Format(f fmt.State, verb rune) {
	switch verb {
	case 's', 'v', 'q':
		fmt.Fprintf(f, fmt.FormatString(f, verb), n.String())
	default:
		fmt.Fprintf(f, fmt.FormatString(f, verb), uint64(n))
	}
}

// ParseNodeID reads a node id in hex (1 to 16 digits, an optional 0x), as
// String and parosctl print it. Zero is no node id.
func ParseNodeID(s string) (NodeID, error) {
	h := strings.TrimPrefix(strings.TrimSpace(s), "0x")
	n, err := strconv.ParseUint(h, 16, 64)
	if err != nil || n == 0 || h == "" || len(h) > 16 {
		return 0, fmt.Errorf("paros/admin: node id %q: want 1 to 16 hex digits, not all zero", s)
	}
	return NodeID(n), nil
}

// nodeIDs converts the wire's node ids.
func nodeIDs(ids []uint64) []NodeID {
	if ids == nil {
		return nil
	}
	out := make([]NodeID, len(ids))
	for i, x := range ids {
		out[i] = NodeID(x)
	}
	return out
}

// wireIDs converts node ids to the wire's.
func wireIDs(ids []NodeID) []uint64 {
	if ids == nil {
		return nil
	}
	out := make([]uint64, len(ids))
	for i, x := range ids {
		out[i] = uint64(x)
	}
	return out
}

// Ballot is a consensus ballot: a round, and the node that owns it.
// Ballots are ordered by round, then node.
type Ballot struct {
	Round uint64
	Node  NodeID
}

// IsZero reports whether b is the zero ballot (none).
func (b Ballot) IsZero() bool { return b == Ballot{} }

// Less reports whether b orders before o.
func (b Ballot) Less(o Ballot) bool {
	return b.Round < o.Round || b.Round == o.Round && b.Node < o.Node
}

// String prints b as ROUND.NODE: the round in decimal, the node id in
// the one form node ids take everywhere, 16 hex digits (7.4827d5df01d7d8d8).
// ParseBallot reads it back.
func (b Ballot) String() string {
	return fmt.Sprintf("%d.%016x", b.Round, uint64(b.Node))
}

// ParseBallot reads a ballot as Ballot.String prints it: ROUND.NODE, the
// round in decimal (at least 1), the node id in hex.
func ParseBallot(s string) (Ballot, error) {
	r, n, ok := strings.Cut(strings.TrimSpace(s), ".")
	round, err := strconv.ParseUint(r, 10, 64)
	if !ok || err != nil || round == 0 {
		return Ballot{}, fmt.Errorf("paros/admin: ballot %q: want ROUND.NODE, the round in decimal, the node id in hex", s)
	}
	node, err := ParseNodeID(n)
	if err != nil {
		return Ballot{}, fmt.Errorf("paros/admin: ballot %q: %w", s, err)
	}
	return Ballot{Round: round, Node: node}, nil
}
