// This file checks how parosctl reads the membership commands' arguments:
// --quorum in each of its three forms (and quorumWord prints what it reads
// back), --gc-watermark as ROUND.NODE in decimal, and --node in hex; each
// malformed value is refused with exit code 2 (bad arguments); replicas
// set's and proxies set's address lists (or none), the latter through the
// command line too; and handoff's JOURNAL and --to (hex, or absent for the
// leader's pick), through the command line too.
package main

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/parosdb/paros/client/admin"
	"github.com/parosdb/paros/core/journal"
)

func TestQuorumFlagReadsItsThreeFormsAndPrintsThemBack(t *testing.T) {
	for in, want := range map[string]admin.Quorum{
		"":               admin.Majority(),
		"majority":       admin.Majority(),
		"flexible:2:3":   admin.Flexible(2, 3),
		"grid:2x3":       admin.Grid(2, 3),
		" grid:1x1 ":     admin.Grid(1, 1),
		"flexible:10:10": admin.Flexible(10, 10),
	} {
		// Act.
		got, err := parseQuorum(in)

		// Check.
		if err != nil || got != want {
			t.Errorf("parseQuorum(%q) = %+v, %v; want %+v", in, got, err, want)
			continue
		}
		if back, err := parseQuorum(quorumWord(got)); err != nil || back != got {
			t.Errorf("quorumWord(%+v) = %q reads back as %+v, %v", got, quorumWord(got), back, err)
		}
	}
	for _, bad := range []string{"majority:3", "flexible", "flexible:2", "flexible:0:3", "flexible:a:b", "grid:2", "grid:2y2", "grid:0x2", "paxos"} {
		if _, err := parseQuorum(bad); !isBadArgs(err) {
			t.Errorf("parseQuorum(%q): %v, want exit 2", bad, err)
		}
	}
}

func TestBallotAndNodeFlags(t *testing.T) {
	// Act and check: a ballot prints as it reads.
	b, err := parseBallot("7.4827d5df01d7d8d8")
	if err != nil || b != (admin.Ballot{Round: 7, Node: 5199359448607873240}) || b.String() != "7.4827d5df01d7d8d8" {
		t.Fatalf("parseBallot: %+v, %v", b, err)
	}
	n, err := parseNode("4827d5df01d7d8d8")
	if err != nil || n != 0x4827d5df01d7d8d8 || nodeList([]admin.NodeID{n}) != "4827d5df01d7d8d8" {
		t.Fatalf("parseNode: %x, %v", n, err)
	}
	for _, bad := range []string{"", "7", "0.5", "x.1", "1.y", "1.2.3"} {
		if _, err := parseBallot(bad); !isBadArgs(err) {
			t.Errorf("parseBallot(%q): %v, want exit 2", bad, err)
		}
	}
	for _, bad := range []string{"", "0", "xyz", "10000000000000000a"} {
		if _, err := parseNode(bad); !isBadArgs(err) {
			t.Errorf("parseNode(%q): %v, want exit 2", bad, err)
		}
	}
}

func isBadArgs(err error) bool {
	var ee exitError
	return errors.As(err, &ee) && ee.code == exitBadArgs
}

func TestReplicasSetReadsAddressesOrNone(t *testing.T) {
	for in, want := range map[string][]string{
		"none":               {},
		"a:1":                {"a:1"},
		" a:1 , b:2,":        {"a:1", "b:2"},
		"127.0.0.1:7001,c:3": {"127.0.0.1:7001", "c:3"},
	} {
		// Act.
		got, err := parseReplicaAddrs(in)

		// Check.
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("parseReplicaAddrs(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", ",", "host-without-port", "a:1,b"} {
		var ee exitError
		if _, err := parseReplicaAddrs(in); !errors.As(err, &ee) || ee.code != exitBadArgs {
			t.Errorf("parseReplicaAddrs(%q) = %v, want exit %d", in, err, exitBadArgs)
		}
	}
}

func TestProxiesSetReadsAddressesOrNone(t *testing.T) {
	for in, want := range map[string][]string{
		"none":               {},
		" none ":             {},
		"a:1":                {"a:1"},
		" a:1 , b:2,":        {"a:1", "b:2"},
		"127.0.0.1:7001,c:3": {"127.0.0.1:7001", "c:3"},
	} {
		// Act.
		got, err := parseProxyAddrs(in)

		// Check.
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("parseProxyAddrs(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", ",", "host-without-port", "a:1,b"} {
		if _, err := parseProxyAddrs(in); !isBadArgs(err) || !strings.Contains(err.Error(), "proxy") {
			t.Errorf("parseProxyAddrs(%q) = %v, want exit %d naming a proxy", in, err, exitBadArgs)
		}
	}
}

func TestProxiesSetCommandRefusesBadArgumentsBeforeDialling(t *testing.T) {
	for _, args := range [][]string{
		{"proxies", "set"},
		{"proxies", "set", "a:1", "b:2"},
		{"proxies", "set", "host-without-port"},
		{"proxies", "set", ","},
	} {
		// Arrange: no server is named (see the handoff test below).
		root := newRoot()
		root.SetArgs(append([]string{"--insecure", "--servers", "127.0.0.1:1"}, args...))
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)

		// Act.
		err := root.Execute()

		// Check.
		var ee exitError
		if err == nil || (errors.As(err, &ee) && ee.code != exitBadArgs) || strings.Contains(err.Error(), "no server answered") {
			t.Errorf("parosctl %q: %v; want a refusal of the arguments (exit 2)", args, err)
		}
	}
}

func TestHandoffReadsTheJournalAndTheSuccessor(t *testing.T) {
	type parsed struct {
		id journal.ID
		to admin.NodeID
	}
	jid := journal.ID{Tenant: 0xa, Journal: 0x1b}
	for in, want := range map[[2]string]parsed{
		{"a/1b", ""}:                   {jid, 0},
		{"000000000000000a/1b", " "}:   {jid, 0},
		{"id:a/1b", "3"}:               {jid, 3},
		{"a/1b", "0x4827d5df01d7d8d8"}: {jid, 0x4827d5df01d7d8d8},
		{"a/1b", "4827d5df01d7d8d8"}:   {jid, 0x4827d5df01d7d8d8},
	} {
		// Act.
		id, to, err := parseHandoff(in[0], in[1])

		// Check.
		if err != nil || (parsed{id, to}) != want {
			t.Errorf("parseHandoff(%q, %q) = %s, %x, %v; want %s, %x", in[0], in[1], id, to, err, want.id, want.to)
		}
	}
	for _, in := range [][2]string{{"", ""}, {"a/", ""}, {"shop/a/b", ""}, {"0/1b", ""}, {"a/1b", "0"}, {"a/1b", "node3"}, {"a/1b", "-1"},
		{"a/1b", "10000000000000000a"}} {
		if _, _, err := parseHandoff(in[0], in[1]); !isBadArgs(err) {
			t.Errorf("parseHandoff(%q, %q): %v, want exit 2", in[0], in[1], err)
		}
	}
}

func TestHandoffCommandRefusesBadArgumentsBeforeDialling(t *testing.T) {
	for _, args := range [][]string{
		{"journal", "handoff"},
		{"journal", "handoff", "a/1b", "c/2d"},
		{"journal", "handoff", "a/1b", "--to", "zz"},
		{"journal", "handoff", "not/a/journal"},
	} {
		// Arrange: no server is named; a command that got past its
		// arguments would fail to dial (exit 2 too, but with another
		// message), so the error text is checked as well.
		root := newRoot()
		root.SetArgs(append([]string{"--insecure", "--servers", "127.0.0.1:1"}, args...))
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)

		// Act.
		err := root.Execute()

		// Check.
		var ee exitError
		if err == nil || (errors.As(err, &ee) && ee.code != exitBadArgs) || strings.Contains(err.Error(), "no server answered") {
			t.Errorf("parosctl %q: %v; want a refusal of the arguments (exit 2)", args, err)
		}
	}
}

func TestAReconfigurationMovesTheMatchmakersItRemoves(t *testing.T) {
	for _, c := range []struct {
		name              string
		mm, before, after []admin.NodeID
		want              []admin.NodeID
		moved             bool
	}{
		{"a founder replaced by a new machine", []admin.NodeID{1, 2, 3}, []admin.NodeID{1, 2, 3}, []admin.NodeID{1, 2, 4}, []admin.NodeID{1, 2, 4}, true},
		{"two replaced at once", []admin.NodeID{1, 2, 3}, []admin.NodeID{1, 2, 3}, []admin.NodeID{1, 5, 4}, []admin.NodeID{1, 4, 5}, true},
		{"a member added, none removed", []admin.NodeID{1, 2, 3}, []admin.NodeID{1, 2, 3}, []admin.NodeID{1, 2, 3, 4}, []admin.NodeID{1, 2, 3}, false},
		{"a member removed, none added: the set stays", []admin.NodeID{1, 2, 3}, []admin.NodeID{1, 2, 3, 4}, []admin.NodeID{1, 2, 3}, []admin.NodeID{1, 2, 3}, false},
		{"a journal on other machines leaves the set alone", []admin.NodeID{1, 2, 3}, []admin.NodeID{4, 5, 6}, []admin.NodeID{4, 5, 7}, []admin.NodeID{1, 2, 3}, false},
		{"an added machine already a matchmaker is not named twice", []admin.NodeID{1, 2, 3}, []admin.NodeID{1, 4}, []admin.NodeID{2, 4}, []admin.NodeID{1, 2, 3}, false},
		{"a rerun with nothing removed moves nothing", []admin.NodeID{1, 2, 3}, []admin.NodeID{1, 2, 4}, []admin.NodeID{1, 2, 4}, []admin.NodeID{1, 2, 3}, false},
	} {
		got, moved := movedMatchmakers(c.mm, c.before, c.after)
		if !slices.Equal(got, c.want) || moved != c.moved {
			t.Errorf("%s: %v moved=%v; want %v moved=%v", c.name, got, moved, c.want, c.moved)
		}
	}
}
