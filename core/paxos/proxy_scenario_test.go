package paxos_test

// This file plays proxy leaders through real nodes (node_proxy.go and
// proxy.go; Compartmentalized Paxos, Whittaker et al., §3.1). The shared
// test network boots nodes without proxies, so the scripts here run on a
// small local cell in the manner of bench_test.go's benchCell: three
// acceptors over memstore whose configuration names two proxy leaders, two
// paxos.Proxy values, and a FIFO pool the script delivers, drops or holds.
// Persist-before-send is kept as the harness keeps it: a batch's messages
// (but for EarlyOK ones) leave only once the node's disk synced, and a fold
// counts only once durable. Election timeouts are fixed per node (no
// jitter), so a script knows when each follower campaigns. The scripts
// check delegation and decision from the proxies' Commits, the leader's
// take-back when both proxies are dead, that an election's recovery rounds
// and gap fills stay on the leader, and that a proxy's re-fan-outs do not
// hold a leaderless cell's elections off.

import (
	"fmt"
	"slices"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage/memstore"
)

// The cell's proxy leaders: they take turns by batch, 201 first.
var pxProxies = []paxos.NodeID{201, 202}

// pxNode is one acceptor of the cell.
type pxNode struct {
	id    paxos.NodeID
	node  *paxos.Node
	store *memstore.Store
	up    bool
	// unsynced: writes appended since the last sync; held: the messages
	// waiting for that sync; pendingFolds: folds waiting for it.
	unsynced     bool
	lastBatch    uint64
	held         []paxos.Message
	pendingFolds []paxos.Applied
	applied      map[paxos.Slot]paxos.Applied
	// timeoutTicks is the election timeout the cell hands the node.
	timeoutTicks int
}

// proxyCell is three acceptors, two proxies and the wire between them.
type proxyCell struct {
	t       *testing.T
	opts    paxos.Options
	nodes   []*pxNode
	proxies map[paxos.NodeID]*paxos.Proxy
	// dead proxies lose every message sent to them; lost reports the other
	// messages the wire loses.
	dead map[paxos.NodeID]bool
	lost func(paxos.Message) bool
	pool []paxos.Message
	// sent is every message a node or a proxy sent, in order.
	sent []paxos.Message
}

// pxOpts are scenario tunables with a short take-back budget.
func pxOpts() paxos.Options {
	opts := scenarioOpts()
	opts.ProxyTakeBackBeats = 3
	return opts
}

// newProxyCell boots nodes 1..3 of a majority system with the proxies
// configured; node i's election timeout is timeouts[i-1].
func newProxyCell(t *testing.T, opts paxos.Options, timeouts [3]int) *proxyCell {
	sys := majority(3)
	c := &proxyCell{t: t, opts: opts, proxies: map[paxos.NodeID]*paxos.Proxy{}, dead: map[paxos.NodeID]bool{}}
	for _, id := range pxProxies {
		c.proxies[id] = paxos.NewProxy(id, paxos.ProxyOptions{BeatTicks: opts.HeartbeatTicks})
	}
	for i, id := range sys.Members() {
		pn := &pxNode{id: id, store: memstore.New(), timeoutTicks: timeouts[i]}
		c.nodes = append(c.nodes, pn)
		c.boot(pn)
	}
	return c
}

// boot (re)starts a node from its store's durable state.
func (c *proxyCell) boot(pn *pxNode) {
	c.t.Helper()
	bs, err := pn.store.Boot()
	if err != nil {
		c.t.Fatalf("boot scan of node %d: %v", pn.id, err)
	}
	cfg := paxos.Config{ID: pn.id, Acceptors: majority(3), Mode: journal.ModeMulti, Proxies: pxProxies}
	if pn.node, err = paxos.NewNode(cfg, c.opts, bs); err != nil {
		c.t.Fatalf("boot node %d: %v", pn.id, err)
	}
	pn.up, pn.unsynced, pn.held, pn.pendingFolds = true, false, nil, nil
	pn.applied = map[paxos.Slot]paxos.Applied{}
	c.drain(pn)
}

func (c *proxyCell) node(id paxos.NodeID) *pxNode {
	for _, pn := range c.nodes {
		if pn.id == id {
			return pn
		}
	}
	panic(fmt.Sprintf("no node %d", id))
}

// drain handles every Ready of a node as the harness does: persist
// (unsynced), release EarlyOK messages, hold the rest and the folds until
// the disk syncs.
func (c *proxyCell) drain(pn *pxNode) {
	for pn.up && pn.node.HasReady() {
		rd := pn.node.Ready()
		pn.store.Append(rd.Writes)
		if len(rd.Writes) > 0 {
			pn.unsynced, pn.lastBatch = true, rd.Batch
		}
		for _, m := range rd.Messages {
			c.sent = append(c.sent, m)
			if m.EarlyOK() || !pn.unsynced {
				c.pool = append(c.pool, m)
			} else {
				pn.held = append(pn.held, m)
			}
		}
		pn.pendingFolds = append(pn.pendingFolds, rd.Applied...)
		if !pn.unsynced {
			c.releaseFolds(pn)
		}
		pn.node.Advance()
		if pn.node.WantsElectionTimeout() {
			pn.node.SetElectionTimeout(pn.timeoutTicks)
		}
	}
}

func (c *proxyCell) releaseFolds(pn *pxNode) {
	for _, f := range pn.pendingFolds {
		pn.applied[f.Slot] = f
	}
	pn.pendingFolds = pn.pendingFolds[:0]
}

// sync makes a node's writes durable and releases what it held.
func (c *proxyCell) sync(pn *pxNode) {
	if !pn.up {
		return
	}
	pn.store.Sync()
	pn.node.MarkDurable(pn.lastBatch)
	pn.unsynced = false
	c.releaseFolds(pn)
	c.pool = append(c.pool, pn.held...)
	pn.held = nil
}

func (c *proxyCell) syncAll() {
	for _, pn := range c.nodes {
		c.sync(pn)
	}
}

// crash stops a node: its unsynced writes, held messages and folds are lost.
func (c *proxyCell) crash(pn *pxNode) {
	pn.store.Crash()
	pn.up, pn.held, pn.pendingFolds = false, nil, nil
}

// proxyOut pools what a proxy sent.
func (c *proxyCell) proxyOut(p *paxos.Proxy) {
	out := p.Messages()
	c.sent = append(c.sent, out...)
	c.pool = append(c.pool, out...)
}

// deliver hands one message to its addressee, unless the wire loses it.
func (c *proxyCell) deliver(m paxos.Message) {
	if c.lost != nil && c.lost(m) {
		return
	}
	if p := c.proxies[m.To]; p != nil {
		if !c.dead[m.To] {
			p.Step(m)
			c.proxyOut(p)
		}
		return
	}
	pn := c.node(m.To)
	if !pn.up {
		return
	}
	pn.node.Step(m)
	c.drain(pn)
}

// deliverOnly delivers the pooled messages want picks, in pool order, and
// reports how many there were; what they provoke stays pooled.
func (c *proxyCell) deliverOnly(want func(paxos.Message) bool) int {
	var picked []paxos.Message
	kept := c.pool[:0]
	for _, m := range c.pool {
		if want(m) {
			picked = append(picked, m)
		} else {
			kept = append(kept, m)
		}
	}
	c.pool = kept
	for _, m := range picked {
		c.deliver(m)
	}
	return len(picked)
}

// exchange syncs every disk and delivers every message until the pool is
// empty, without ticking.
func (c *proxyCell) exchange() {
	for range 100_000 {
		c.syncAll()
		if len(c.pool) == 0 {
			return
		}
		m := c.pool[0]
		c.pool = c.pool[1:]
		c.deliver(m)
	}
	c.t.Fatalf("the cell never went quiet")
}

// tick advances every up node and live proxy one tick, proxies first.
func (c *proxyCell) tick() {
	for _, id := range pxProxies {
		if !c.dead[id] {
			c.proxies[id].Tick()
			c.proxyOut(c.proxies[id])
		}
	}
	for _, pn := range c.nodes {
		if pn.up {
			pn.node.Tick()
			c.drain(pn)
		}
	}
}

// beat runs one heartbeat period: ticks, each followed by an exchange.
func (c *proxyCell) beat() {
	for range c.opts.HeartbeatTicks {
		c.tick()
		c.exchange()
	}
}

// elect ticks pn alone until it campaigns, and lets the cell answer.
func (c *proxyCell) elect(pn *pxNode) {
	c.t.Helper()
	for range 100 {
		if pn.node.Role() == "candidate" {
			break
		}
		pn.node.Tick()
		c.drain(pn)
	}
	c.exchange()
	if !pn.node.IsLeader() {
		c.t.Fatalf("node %d did not become leader (role %s)", pn.id, pn.node.Role())
	}
}

// propose asks pn to decide cmd and returns its slot.
func (c *proxyCell) propose(pn *pxNode, cmd journal.Command) paxos.Slot {
	c.t.Helper()
	res := pn.node.Propose(cmd.Entry)
	if res.Status != paxos.Proposed {
		c.t.Fatalf("propose %s at node %d: status %d", cmd, pn.id, res.Status)
	}
	c.drain(pn)
	return res.Slot
}

// sentWhere lists the messages sent so far that pick chooses.
func (c *proxyCell) sentWhere(pick func(paxos.Message) bool) []paxos.Message {
	var out []paxos.Message
	for _, m := range c.sent {
		if pick(m) {
			out = append(out, m)
		}
	}
	return out
}

// carries reports whether m has an entry at one of slots.
func carries(m paxos.Message, slots ...paxos.Slot) bool {
	for _, e := range m.Entries {
		if slices.Contains(slots, e.Slot) {
			return true
		}
	}
	return false
}

func isProxy(id paxos.NodeID) bool { return slices.Contains(pxProxies, id) }

// expectApplied checks that every listed node folded slot s to cmd.
func expectApplied(t *testing.T, s paxos.Slot, cmd journal.Command, nodes ...*pxNode) {
	t.Helper()
	for _, pn := range nodes {
		f, ok := pn.applied[s]
		if !ok {
			t.Fatalf("node %d has not folded slot %d (chosen %d)", pn.id, s, pn.node.ChosenIndex())
		}
		if !f.Command.Equal(cmd) {
			t.Fatalf("node %d folded slot %d as %s, want %s", pn.id, s, f.Command, cmd)
		}
	}
}

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
