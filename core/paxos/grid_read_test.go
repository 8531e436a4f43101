package paxos_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

func grid2x3(t *testing.T) quorum.System {
	t.Helper()
	s, err := quorum.NewGrid([]quorum.ID{1, 2, 3, 4, 5, 6}, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// On a grid one full row is a Phase-1 quorum: every acknowledged write was
// voted by its slot's whole column, which meets every row, so the highest
// vote watermark of one row is at or above it. A read asks one row (row
// ctx % rows), not every member; a read that a silent row member keeps
// from settling asks every other member after half its TTL, and settles
// on another row. Grid 2×3: row 0 = {1,2,3}, row 1 = {4,5,6}.
func TestScenarioGridReadAsksOneRow(t *testing.T) {
	opts := scenarioOpts()
	opts.ReadTTLTicks = 6
	net := newNetwork(t, grid2x3(t), journal.ModeMulti, opts, 11)
	n1, n6 := net.node(1), net.node(6)
	net.electLeader(n1)
	propose(net, n1, unfenced("w1"))
	exchange(net)

	// node 6 reads with ctx 1: row 1, its own row; it asks nodes 4 and 5.
	net.oracles.readOpened(1)
	if !n6.node.QuorumRead(1) {
		t.Fatal("read not opened")
	}
	net.drain(n6)
	var to []paxos.NodeID
	for _, m := range inPool(net, match{typ: paxos.MsgPreRead, from: 6}) {
		to = append(to, m.To)
	}
	slices.Sort(to)
	expectEq(t, "PreReads of a row read", fmt.Sprint(to), "[4 5]")
	exchange(net)
	if rs, ok := n6.reads[1]; !ok || !rs.OK || rs.Index != 1 {
		t.Fatalf("row read: %+v (answered %v), want served at 1", rs, ok)
	}

	// node 5 goes down: ctx 3 asks row 1 again and cannot settle on it;
	// after half the TTL it asks nodes 1, 2 and 3, and node 5 again (its
	// answer never came), and settles on row 0.
	net.crash(net.node(5))
	net.oracles.readOpened(3)
	n6.node.QuorumRead(3)
	net.drain(n6)
	exchange(net)
	if _, ok := n6.reads[3]; ok {
		t.Fatal("a read settled without a full row")
	}
	for range opts.ReadTTLTicks/2 - 1 {
		net.tick(n6)
	}
	expectEq(t, "widened before half the TTL", n6.node.Counters().ReadsWidened, uint64(0))
	net.tick(n6)
	net.drain(n6)
	to = to[:0]
	for _, m := range inPool(net, match{typ: paxos.MsgPreRead, from: 6}) {
		to = append(to, m.To)
	}
	slices.Sort(to)
	expectEq(t, "PreReads once widened", fmt.Sprint(to), "[1 2 3 5]")
	exchange(net)
	if rs, ok := n6.reads[3]; !ok || !rs.OK || rs.Index != 1 {
		t.Fatalf("widened read: %+v (answered %v), want served at 1", rs, ok)
	}
	expectEq(t, "reads widened", n6.node.Counters().ReadsWidened, uint64(1))
}

// A read whose PreReads are all lost (the network dropped them, or its
// peers did not serve the journal yet, as just after a creation) asks
// every member that has not answered again at half its TTL and settles
// then, instead of waiting out its TTL to be answered unserved. On a
// majority the first addressees are every member, so without the second
// ask nothing could settle it.
func TestScenarioAReadWhoseAsksWereLostAsksAgain(t *testing.T) {
	opts := scenarioOpts()
	opts.ReadTTLTicks = 6
	sys, err := quorum.NewMajority([]quorum.ID{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	net := newNetwork(t, sys, journal.ModeMulti, opts, 12)
	n1, n3 := net.node(1), net.node(3)
	net.electLeader(n1)
	propose(net, n1, unfenced("w1"))
	exchange(net)

	// Node 3 reads; the network loses both its PreReads.
	net.oracles.readOpened(1)
	if !n3.node.QuorumRead(1) {
		t.Fatal("read not opened")
	}
	net.drain(n3)
	if lost := take(net, match{typ: paxos.MsgPreRead, from: 3}); len(lost) != 2 {
		t.Fatalf("%d PreReads, want 2 (every member but the reader)", len(lost))
	}
	for range opts.ReadTTLTicks/2 - 1 {
		net.tick(n3)
	}
	net.drain(n3)
	expectEq(t, "PreReads before half the TTL", len(inPool(net, match{typ: paxos.MsgPreRead, from: 3})), 0)

	// At half the TTL it asks both again, and settles on their answers.
	net.tick(n3)
	net.drain(n3)
	expectEq(t, "PreReads at half the TTL", len(inPool(net, match{typ: paxos.MsgPreRead, from: 3})), 2)
	exchange(net)
	if rs, ok := n3.reads[1]; !ok || !rs.OK || rs.Index != 1 {
		t.Fatalf("read asked again: %+v (answered %v), want served at 1", rs, ok)
	}
}
