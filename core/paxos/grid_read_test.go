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
	// after half the TTL it asks nodes 1, 2 and 3 and settles on row 0.
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
	expectEq(t, "PreReads once widened", len(inPool(net, match{typ: paxos.MsgPreRead, from: 6})), 3)
	exchange(net)
	if rs, ok := n6.reads[3]; !ok || !rs.OK || rs.Index != 1 {
		t.Fatalf("widened read: %+v (answered %v), want served at 1", rs, ok)
	}
	expectEq(t, "reads widened", n6.node.Counters().ReadsWidened, uint64(1))
}
