package paxos_test

// This file plays proxy leaders through real nodes (node_proxy.go and
// proxy.go; Compartmentalized Paxos, Whittaker et al., §3.1) on the small
// local cell of proxy_scenario_test.go, and checks delegation and decision
// from the proxies' Commits, and the leader's take-back when both proxies
// are dead.

import (
	"fmt"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
)

// Compartmentalized Paxos §3.1: a leader with proxy leaders sends each
// Phase-2 request to one proxy, which broadcasts it, tallies the votes and
// tells the leader and the acceptors the decision. Node 1 leads and writes
// four values: each round goes to the proxy whose turn it is, is decided from that proxy's
// Commit, and every node folds all four with no tick (so with no watermark
// of the leader's). The leader sent no acceptor an Accept for those slots
// and no Commit of its own.
func TestProxyScenarioSettledLeaderDelegates(t *testing.T) {
	c := newProxyCell(t, pxOpts(), [3]int{6, 8, 10})
	n1 := c.node(1)
	c.elect(n1)
	c.sent = nil

	// propose four writes and let the cell run without ticks.
	cmds := []journal.Command{unfenced("a"), unfenced("b"), unfenced("c"), unfenced("d")}
	var slots []paxos.Slot
	for _, cmd := range cmds {
		slots = append(slots, c.propose(n1, cmd))
	}
	c.exchange()

	// every round was delegated, decided from a Commit, and folded everywhere.
	expectEq(t, "slots", fmt.Sprint(slots), "[1 2 3 4]")
	expectEq(t, "delegated", n1.node.Counters().ProxyDelegated, uint64(4))
	expectEq(t, "decided from a proxy", n1.node.Counters().ProxyDecided, uint64(4))
	expectEq(t, "taken back", n1.node.Counters().ProxyTakenBack, uint64(0))
	expectEq(t, "leader's chosen index", n1.node.ChosenIndex(), paxos.Slot(4))
	for i, s := range slots {
		expectApplied(t, s, cmds[i], c.nodes...)
	}
	for _, id := range []paxos.NodeID{2, 3} {
		expectEq(t, fmt.Sprintf("node %d learned from a proxy", id), c.node(id).node.Counters().ProxyLearned, uint64(4))
	}
	for _, id := range pxProxies {
		expectEq(t, fmt.Sprintf("proxy %d decided", id), c.proxies[id].Counters().Decided, uint64(2))
		expectEq(t, fmt.Sprintf("proxy %d open", id), c.proxies[id].Open(), 0)
	}

	// the leader addressed the proxies only, taking turns by batch (each
	// proposal here is its own batch), and announced nothing itself.
	var turns []paxos.NodeID
	for _, m := range c.sentWhere(func(m paxos.Message) bool { return m.From == 1 && m.Type == paxos.MsgAccept }) {
		if !isProxy(m.To) {
			t.Fatalf("the leader sent an acceptor an Accept: %s", m)
		}
		turns = append(turns, m.To)
	}
	expectEq(t, "the proxies' turns", fmt.Sprint(turns), "[201 202 201 202]")
	if ms := c.sentWhere(func(m paxos.Message) bool { return m.From == 1 && m.Type == paxos.MsgCommit }); len(ms) != 0 {
		t.Fatalf("the leader sent Commits of its own: %v", ms)
	}
	expectEq(t, "proxy Commits to the leader",
		len(c.sentWhere(func(m paxos.Message) bool { return isProxy(m.From) && m.To == 1 && m.Type == paxos.MsgCommit })), 4)

	// the cell stays settled: the leader's beats hold elections off and
	// re-delegate nothing.
	c.sent = nil
	for range 3 * c.opts.ElectionTicks {
		c.tick()
		c.exchange()
	}
	expectEq(t, "node 1 leads", n1.node.IsLeader(), true)
	expectEq(t, "delegated after the beats", n1.node.Counters().ProxyDelegated, uint64(4))
	expectEq(t, "Accepts after the beats", len(c.sentWhere(func(m paxos.Message) bool { return m.Type == paxos.MsgAccept })), 0)
}

// node_proxy.go: liveness under a dead proxy stays the leader's. Both
// proxies are dead; node 1 delegates two rounds, re-delegates them on each
// beat, and past ProxyTakeBackBeats re-delegations takes them back and runs
// the classic Phase 2 (Paxos Made Simple §2.2): the rounds are undecided
// through beat ProxyTakeBackBeats and decided on the next beat, and every
// node then folds them from the leader's watermark.
func TestProxyScenarioDeadProxiesRoundsTakenBack(t *testing.T) {
	c := newProxyCell(t, pxOpts(), [3]int{6, 8, 10})
	n1 := c.node(1)
	c.elect(n1)
	c.dead[201], c.dead[202] = true, true
	c.sent = nil
	a, b := unfenced("a"), unfenced("b")
	sa, sb := c.propose(n1, a), c.propose(n1, b)
	c.exchange()
	expectEq(t, "delegated", n1.node.Counters().ProxyDelegated, uint64(2))
	expectEq(t, "chosen with dead proxies", n1.node.ChosenIndex(), paxos.Slot(0))

	// the rounds stay with the dead proxies for the budget.
	k := c.opts.ProxyTakeBackBeats
	for beat := 1; beat <= k; beat++ {
		c.beat()
		expectEq(t, fmt.Sprintf("chosen after beat %d", beat), n1.node.ChosenIndex(), paxos.Slot(0))
		expectEq(t, fmt.Sprintf("taken back after beat %d", beat), n1.node.Counters().ProxyTakenBack, uint64(0))
	}
	toAcceptor := func(m paxos.Message) bool {
		return m.From == 1 && m.Type == paxos.MsgAccept && !isProxy(m.To) && carries(m, sa, sb)
	}
	expectEq(t, "Accepts to acceptors before the take-back", len(c.sentWhere(toAcceptor)), 0)
	expectEq(t, "re-delegations", len(c.sentWhere(func(m paxos.Message) bool {
		return m.From == 1 && m.Type == paxos.MsgAccept && isProxy(m.To)
	})), 2*(k+1))

	// the next beat takes both rounds back and decides them.
	c.beat()
	expectEq(t, "taken back", n1.node.Counters().ProxyTakenBack, uint64(2))
	expectEq(t, "chosen after the take-back", n1.node.ChosenIndex(), paxos.Slot(2))
	expectEq(t, "decided from a proxy", n1.node.Counters().ProxyDecided, uint64(0))
	expectEq(t, "Accepts to acceptors after the take-back", len(c.sentWhere(toAcceptor)), 2)

	// the followers fold them from the next beat's watermark.
	c.beat()
	expectApplied(t, sa, a, c.nodes...)
	expectApplied(t, sb, b, c.nodes...)
	expectEq(t, "node 1 leads", n1.node.IsLeader(), true)
}
