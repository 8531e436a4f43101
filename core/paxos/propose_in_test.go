package paxos_test

import (
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

// On a grid only a slot's column votes (slot % cols), so the driver may
// choose the column a command is decided in: ProposeIn fills the slots of
// other columns below it with Noops and gives the command the first slot
// of the column it names.
func TestProposeInGivesTheCommandASlotOfItsColumn(t *testing.T) {
	sys, err := quorum.NewGrid(ids(4), 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	net := newNetwork(t, sys, journal.ModeMulti, scenarioOpts(), 31)
	n1 := net.node(1)
	net.electLeader(n1)
	net.settle(5)
	a, b := unfenced("a"), unfenced("b")
	for _, tc := range []struct {
		cmd    journal.Command
		column int
	}{{a, 1}, {b, 1}, {a, 0}} {
		before := n1.node.Counters().ColumnFills
		res := n1.node.ProposeIn(tc.cmd.Entry, tc.column)
		expectEq(t, "status", res.Status, paxos.Proposed)
		expectEq(t, "the command's column", int(res.Slot%2), tc.column)
		net.drain(n1)
		net.settle(10)
		expectFolded(t, net, res.Slot, tc.cmd)
		if fills := n1.node.Counters().ColumnFills - before; fills > 0 {
			// the slot below it, of the other column, holds a Noop
			expectFolded(t, net, res.Slot-1, journal.Noop())
		}
	}
	if n1.node.Counters().ColumnFills == 0 {
		t.Fatal("no slot of another column was filled")
	}
	net.oracles.converged()
}

// A system with one column has only column 0; another column is refused
// with nothing proposed, and a follower answers NotLeader.
func TestProposeInRefusesAColumnTheSystemLacks(t *testing.T) {
	net := newNetwork(t, majority(3), journal.ModeMulti, scenarioOpts(), 32)
	n1 := net.node(1)
	net.electLeader(n1)
	net.settle(5)
	next := n1.node.ChosenIndex() + 1
	expectEq(t, "column 1 of a majority", n1.node.ProposeIn(unfenced("x").Entry, 1).Status, paxos.Busy)
	expectEq(t, "a negative column", n1.node.ProposeIn(unfenced("x").Entry, -1).Status, paxos.Busy)
	res := n1.node.ProposeIn(unfenced("y").Entry, 0)
	expectEq(t, "column 0 is Propose", res.Status, paxos.Proposed)
	expectEq(t, "slot", res.Slot, next)
	expectEq(t, "a follower", net.node(2).node.ProposeIn(unfenced("z").Entry, 0).Status, paxos.NotLeader)
}
