package paxos_test

// This file plays proxy leaders through real nodes (node_proxy.go and
// proxy.go; Compartmentalized Paxos, Whittaker et al., §3.1) on the small
// local cell of proxy_scenario_test.go across elections, and checks that an
// election's recovery rounds and gap fills stay on the leader, and that a
// proxy's re-fan-outs do not hold a leaderless cell's elections off.

import (
	"slices"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
)

// node_proxy.go: an election's recovery runs on the leader, so a fresh
// leadership depends on no proxy (Paxos Made Simple §2.2, P2c: the new
// leader re-proposes the value its Phase-1 quorum reported). Node 1 leads,
// delegates x to proxy 201, and only node 2 votes for it before node 1
// crashes. Node 2 is elected with node 3's promise and re-proposes x at
// slot 1 itself; y, proposed before the recovery is chosen, also stays on
// the leader. Once the recovery is chosen, z is delegated again.
func TestProxyScenarioRecoveryRoundsAreNotDelegated(t *testing.T) {
	c := newProxyCell(t, pxOpts(), [3]int{6, 8, 10})
	n1, n2, n3 := c.node(1), c.node(2), c.node(3)
	c.elect(n1)
	x, y, z := unfenced("x"), unfenced("y"), unfenced("z")

	// x reaches proxy 201, which reaches node 2 only; node 1 crashes.
	expectEq(t, "x's slot", c.propose(n1, x), paxos.Slot(1))
	expectEq(t, "delegations", c.deliverOnly(func(m paxos.Message) bool { return m.From == 1 && m.To == 201 && m.Type == paxos.MsgAccept }), 1)
	expectEq(t, "fan-outs to node 2", c.deliverOnly(func(m paxos.Message) bool { return m.From == 201 && m.To == 2 }), 1)
	c.sync(n2)
	c.crash(n1)
	c.pool = nil
	if b, cmd, ok := n2.store.Accepted(1); !ok || !cmd.Equal(x) || b != bal(1, 1) {
		t.Fatalf("node 2's record at slot 1: %v %s %s", ok, b, cmd)
	}

	// node 2 campaigns; node 3's promise elects it.
	for n2.node.Role() != "candidate" {
		n2.node.Tick()
		c.drain(n2)
	}
	c.sync(n2)
	c.sent = nil
	c.deliverOnly(func(m paxos.Message) bool { return m.Type == paxos.MsgPrepare && m.To == 3 })
	c.sync(n3)
	c.deliverOnly(func(m paxos.Message) bool { return m.Type == paxos.MsgPromise && m.To == 2 })
	expectEq(t, "node 2 leads", n2.node.IsLeader(), true)
	expectEq(t, "node 2 recovered", n2.node.Counters().Recovered, uint64(1))

	// y is proposed before the recovery is chosen; both run on node 2.
	expectEq(t, "y's slot", c.propose(n2, y), paxos.Slot(2))
	c.exchange()
	expectEq(t, "node 2's chosen index", n2.node.ChosenIndex(), paxos.Slot(2))
	expectEq(t, "delegated during the recovery", n2.node.Counters().ProxyDelegated, uint64(0))
	expectEq(t, "decided from a proxy", n2.node.Counters().ProxyDecided, uint64(0))
	if ms := c.sentWhere(func(m paxos.Message) bool { return m.From == 2 && m.Type == paxos.MsgAccept && isProxy(m.To) }); len(ms) != 0 {
		t.Fatalf("the new leader delegated its recovery: %v", ms)
	}
	for _, s := range []paxos.Slot{1, 2} {
		if ms := c.sentWhere(func(m paxos.Message) bool {
			return m.From == 2 && m.To == 3 && m.Type == paxos.MsgAccept && carries(m, s)
		}); len(ms) == 0 {
			t.Fatalf("the new leader sent node 3 no Accept for slot %d", s)
		}
	}
	expectApplied(t, 1, x, n2)
	expectApplied(t, 2, y, n2)

	// settled: z is delegated and decided by a proxy.
	expectEq(t, "z's slot", c.propose(n2, z), paxos.Slot(3))
	c.exchange()
	expectEq(t, "delegated once settled", n2.node.Counters().ProxyDelegated, uint64(1))
	expectEq(t, "decided from a proxy once settled", n2.node.Counters().ProxyDecided, uint64(1))
	c.beat()
	for s, cmd := range map[paxos.Slot]journal.Command{1: x, 2: y, 3: z} {
		expectApplied(t, s, cmd, n2, n3)
	}
}

// node_proxy.go: an election's gap fills run on the leader too. Node 1
// delegates x to proxy 201, which reaches node 3 only; node 1 crashes
// before its own record of x is durable and reboots empty. Node 2 is
// elected by node 1's promise alone, so its Phase 1 saw nothing and its
// leadership is settled at once; node 3's vote watermark (slot 1), reported
// on a heartbeat ack, makes node 2 fill slot 1 with a Noop — which it runs
// itself, not through proxy 201, though every new round would be delegated.
func TestProxyScenarioGapFillsAreNotDelegated(t *testing.T) {
	c := newProxyCell(t, pxOpts(), [3]int{6, 8, 10})
	n1, n2, n3 := c.node(1), c.node(2), c.node(3)
	c.elect(n1)
	x := unfenced("x")

	// x reaches node 3 only, through proxy 201; node 1 loses its own record.
	expectEq(t, "x's slot", c.propose(n1, x), paxos.Slot(1))
	expectEq(t, "delegations", c.deliverOnly(func(m paxos.Message) bool { return m.From == 1 && m.To == 201 && m.Type == paxos.MsgAccept }), 1)
	expectEq(t, "fan-outs to node 3", c.deliverOnly(func(m paxos.Message) bool { return m.From == 201 && m.To == 3 }), 1)
	c.sync(n3)
	c.crash(n1)
	c.pool = nil
	c.boot(n1)
	if _, _, ok := n1.store.Accepted(1); ok {
		t.Fatalf("node 1 kept an unsynced record across a crash")
	}

	// node 2 is elected by node 1's promise; node 3 hears no Prepare.
	for n2.node.Role() != "candidate" {
		n2.node.Tick()
		c.drain(n2)
	}
	c.sync(n2)
	c.deliverOnly(func(m paxos.Message) bool { return m.Type == paxos.MsgPrepare && m.To == 1 })
	c.pool = slices.DeleteFunc(c.pool, func(m paxos.Message) bool { return m.Type == paxos.MsgPrepare })
	c.sync(n1)
	c.deliverOnly(func(m paxos.Message) bool { return m.Type == paxos.MsgPromise && m.To == 2 })
	expectEq(t, "node 2 leads", n2.node.IsLeader(), true)
	expectEq(t, "node 2 recovered", n2.node.Counters().Recovered, uint64(0))
	expectEq(t, "node 3's promise", n3.node.Promised(), bal(1, 1))

	// the beats: node 3's watermark makes node 2 fill slot 1 itself.
	c.sent = nil
	for range 3 {
		c.beat()
	}
	expectEq(t, "gap fills", n2.node.Counters().GapFills >= 1, true)
	expectEq(t, "delegated", n2.node.Counters().ProxyDelegated, uint64(0))
	expectEq(t, "node 2's chosen index", n2.node.ChosenIndex() >= 1, true)
	if ms := c.sentWhere(func(m paxos.Message) bool { return m.From == 2 && isProxy(m.To) && carries(m, 1) }); len(ms) != 0 {
		t.Fatalf("the new leader delegated its gap fill: %v", ms)
	}
	if ms := c.sentWhere(func(m paxos.Message) bool {
		return m.From == 2 && m.To == 3 && m.Type == paxos.MsgAccept && carries(m, 1)
	}); len(ms) == 0 {
		t.Fatalf("the new leader sent node 3 no Accept for slot 1")
	}
	expectApplied(t, 1, journal.Noop(), n1, n2, n3)
}

// node_phase2.go, followLeader: only the leader's own messages are evidence
// that it lives (Paxos Made Simple §3: a new leader is elected when the old
// one fails). Node 1 delegates x to proxy 201 and crashes; the acceptors'
// Accepteds never reach the proxy, so it keeps the round open and re-fans
// it out every beat, naming node 1 as the leader. Node 2 still campaigns
// within its election timeout, the re-fan-outs notwithstanding, and leads.
func TestProxyScenarioRefanOutDoesNotHoldElectionsOff(t *testing.T) {
	const timeout2 = 6
	c := newProxyCell(t, pxOpts(), [3]int{6, timeout2, 11})
	n1, n2, n3 := c.node(1), c.node(2), c.node(3)
	c.elect(n1)
	x := unfenced("x")

	// x's round opens at proxy 201 with node 1's vote; node 1 crashes and
	// the acceptors' votes are lost on the way to the proxy.
	expectEq(t, "x's slot", c.propose(n1, x), paxos.Slot(1))
	c.sync(n1)
	c.deliverOnly(func(m paxos.Message) bool { return m.From == 1 && m.To == 201 })
	c.crash(n1)
	c.lost = func(m paxos.Message) bool { return m.Type == paxos.MsgAccepted && isProxy(m.To) }
	c.exchange()
	px := c.proxies[201]
	expectEq(t, "proxy's open rounds", px.Open(), 1)

	// tick: the proxy re-fans-out every beat; node 2 campaigns on time.
	c.sent = nil
	campaignedAt := 0
	for tick := 1; tick <= 4*timeout2 && campaignedAt == 0; tick++ {
		c.tick()
		c.exchange()
		if n2.node.Role() != "follower" {
			campaignedAt = tick
		}
	}
	if campaignedAt == 0 {
		t.Fatalf("node 2 never campaigned in %d ticks; its timeout is %d", 4*timeout2, timeout2)
	}
	if campaignedAt > timeout2 {
		t.Fatalf("node 2 campaigned at tick %d, want within its timeout of %d", campaignedAt, timeout2)
	}
	refans := c.sentWhere(func(m paxos.Message) bool {
		return m.From == 201 && m.To == 2 && m.Type == paxos.MsgAccept && m.Leader == 1
	})
	if len(refans) < 2 {
		t.Fatalf("node 2 got %d re-fan-outs before campaigning, want at least 2", len(refans))
	}
	expectEq(t, "proxy's re-fan-outs", px.Counters().Refans >= 2, true)

	// node 2 leads with node 3 and recovers x.
	for range 2 * timeout2 {
		if n2.node.IsLeader() {
			break
		}
		c.tick()
		c.exchange()
	}
	expectEq(t, "node 2 leads", n2.node.IsLeader(), true)
	c.beat()
	expectApplied(t, 1, x, n2, n3)
}
