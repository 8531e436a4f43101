// This file checks the package's own value types without a cell: a
// NodeID prints as 16 hex digits (and as the number for the integer
// verbs) and ParseNodeID reads what it prints
// (and refuses zero, non-hex and over-long ids); a Quorum prints in
// parosctl's --quorum form, ParseQuorum reads every form back to an equal
// Quorum, the zero Quorum is Majority, and malformed forms are refused.
package admin_test

import (
	"fmt"
	"testing"

	"github.com/parosdb/paros/client/admin"
)

func TestNodeIDPrintsSixteenHexDigitsAndParsesBack(t *testing.T) {
	for _, n := range []admin.NodeID{1, 0xdead, 0x595b43867ea72b6b, ^admin.NodeID(0)} {
		s := n.String()
		got, err := admin.ParseNodeID(s)
		if len(s) != 16 || err != nil || got != n {
			t.Errorf("%d prints %q, parses back to %d, %v", uint64(n), s, uint64(got), err)
		}
	}
	if got := fmt.Sprintf("%s %v %016x %d %x", admin.NodeID(0xdead), []admin.NodeID{1}, admin.NodeID(0xdead), admin.NodeID(10), []admin.NodeID{0xab}); got != "000000000000dead [0000000000000001] 000000000000dead 10 [ab]" {
		t.Errorf("formats: %q", got)
	}
	if got, err := admin.ParseNodeID(" 0xdead "); err != nil || got != 0xdead {
		t.Errorf("0xdead: %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "0000000000000000", "xyz", "0x", "10000000000000000", "-1"} {
		if _, err := admin.ParseNodeID(bad); err == nil {
			t.Errorf("ParseNodeID(%q) = nil error, want one", bad)
		}
	}
}

func TestQuorumPrintsItsFormAndParsesBack(t *testing.T) {
	for _, tc := range []struct {
		q    admin.Quorum
		text string
	}{
		{admin.Majority(), "majority"},
		{admin.Quorum{}, "majority"},
		{admin.Flexible(2, 3), "flexible:2:3"},
		{admin.Grid(2, 2), "grid:2x2"},
	} {
		if got := tc.q.String(); got != tc.text {
			t.Errorf("%#v prints %q, want %q", tc.q, got, tc.text)
		}
		back, err := admin.ParseQuorum(tc.text)
		if err != nil || back != tc.q {
			t.Errorf("ParseQuorum(%q) = %v, %v; want %v", tc.text, back, err, tc.q)
		}
	}
	if q, err := admin.ParseQuorum(""); err != nil || q != admin.Majority() {
		t.Errorf(`ParseQuorum("") = %v, %v; want majority`, q, err)
	}
	for _, bad := range []string{"majority:1", "flexible:2", "flexible:0:2", "grid:2", "grid:0x2", "grid:2x", "paxos"} {
		if _, err := admin.ParseQuorum(bad); err == nil {
			t.Errorf("ParseQuorum(%q) = nil error, want one", bad)
		}
	}
}
