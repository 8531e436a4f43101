package paxos_test

// This file holds the harness of the proxy-leader scenarios
// (proxy_scenario_*_test.go), which play proxy leaders through real nodes
// (node_proxy.go and proxy.go; Compartmentalized Paxos, Whittaker et al.,
// §3.1). The shared test network boots nodes without proxies, so the scripts
// run on a small local cell in the manner of bench_test.go's benchCell: three
// acceptors over memstore whose configuration names two proxy leaders, two
// paxos.Proxy values, and a FIFO pool the script delivers, drops or holds.
// Persist-before-send is kept as the harness keeps it: a batch's messages
// (but for EarlyOK ones) leave only once the node's disk synced, and a fold
// counts only once durable. Election timeouts are fixed per node (no
// jitter), so a script knows when each follower campaigns.

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
