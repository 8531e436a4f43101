package proxymodel

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/storage/memstore"
)

// mailboxMax bounds the messages in flight: a full mailbox loses one.
const mailboxMax = 128

// Reach counts how often each path fired, by name.
type Reach map[string]uint64

// Paths are the reach entries a sweep requires.
var Paths = []string{
	"proxy: a delegation opens a round",
	"proxy: a proxy announces a decided slot",
	"proxy: a proxy re-fans-out an open round",
	"proxy: a proxy evicts an unanswered round",
	"proxy: a stale delegation is ignored",
	"proxy: a refusal is relayed to the leader",
	"proxy: a proxy crashes and reboots empty",
	"leader: a round is delegated to a proxy",
	"leader: a round is decided from a proxy's Commit",
	"leader: a delegated round is taken back",
	"leader: a suspect proxy's round runs on the leader",
	"leader: a suspect proxy answers a probe",
	"acceptor: a slot is learned from a proxy's Commit",
	"leader: a write is proposed into a chosen grid column",
	"operator: the proxy list changes",
	"leader: a leader resigns mid-round",
	"handoff: a leader hands on mid-round",
	"handoff: a successor installs the authority",
	"handoff: a successor decides without a Phase 1",
	"handoff: a replayed or stale Relinquish is refused",
	"node: a node crashes with writes not durable",
	"node: a node crashes after its batch is durable",
	"node: a leader is elected",
	"mailbox: a message is duplicated",
	"mailbox: a message is lost",
}

type node struct {
	id        paxos.NodeID
	n         *paxos.Node
	st        *memstore.Store
	up        bool
	held      [][]paxos.Message // messages of batches not yet durable
	unsynced  []paxos.WriteOp   // the writes of those batches, in order
	folds     []paxos.Applied   // folds of batches not yet durable
	lastBatch uint64
}

type proxy struct {
	id   paxos.NodeID
	p    *paxos.Proxy
	up   bool
	dead bool // down for good in the quiet tail
}

// key names one durable accept: a value at a slot and ballot.
type key struct {
	slot   paxos.Slot
	ballot paxos.Ballot
	fp     uint64
}

// World is one seed's model.
type World struct {
	seed    uint64
	rng     *rand.Rand
	sys     quorum.System
	opts    paxos.Options
	popts   paxos.ProxyOptions
	nodes   []*node
	proxies []*proxy
	mail    []paxos.Message
	replay  []paxos.Message // Relinquish messages, to replay
	late    []paxos.Message // delegations, to deliver again long after
	// proxyList is the proxy list the operator set last (every node boots
	// with it).
	proxyList []paxos.NodeID
	writes    uint64
	// durable: the acceptors (member indexes) that ever held each value
	// durably; chosen: the one value chosen per slot; decided: the values
	// with a durable Phase-2 quorum per slot.
	durable map[key]quorum.Set
	chosen  map[paxos.Slot]uint64
	decided map[paxos.Slot]uint64
	reach   Reach
	trace   []string
	tracing bool
	err     error
}

// New draws seed's world: a majority of three or a 2×2 grid, two proxies.
func New(seed uint64, tracing bool) *World {
	w := &World{seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), durable: map[key]quorum.Set{},
		chosen: map[paxos.Slot]uint64{}, decided: map[paxos.Slot]uint64{}, reach: Reach{}, tracing: tracing}
	var err error
	if seed%2 == 0 {
		w.sys, err = quorum.NewMajority([]quorum.ID{1, 2, 3})
	} else {
		w.sys, err = quorum.NewGrid([]quorum.ID{1, 2, 3, 4}, 2, 2)
	}
	if err != nil {
		panic(err)
	}
	// Budgets are drawn per seed (born buggified): a leader that takes a
	// round back at once, a proxy that evicts after a beat or two.
	w.opts = paxos.Options{ElectionTicks: 6, HeartbeatTicks: 2, PipelineWindow: 8, ProposeQueueMax: 32,
		PromiseBatch: 4, CatchUpBatch: 8, ProxyTakeBackBeats: 1 + w.rng.IntN(12)}
	w.popts = paxos.ProxyOptions{BeatTicks: 2, EvictAfter: 1 + w.rng.IntN(16)}
	w.proxyList = []paxos.NodeID{101, 102}
	for _, id := range w.sys.Members() {
		nd := &node{id: id, st: memstore.New()}
		w.nodes = append(w.nodes, nd)
		w.boot(nd)
	}
	for _, id := range []paxos.NodeID{101, 102} {
		w.proxies = append(w.proxies, &proxy{id: id, p: paxos.NewProxy(id, w.popts), up: true})
	}
	return w
}

// Err is the first violation (nil: every check held).
func (w *World) Err() error { return w.err }

// Reach is the paths fired so far (node and proxy counters are added when
// they go away and at the end).
func (w *World) Reach() Reach { return w.reach }

// Trace is the event log (only when tracing).
func (w *World) Trace() []string { return w.trace }

func (w *World) logf(format string, args ...any) {
	if w.tracing {
		w.trace = append(w.trace, fmt.Sprintf(format, args...))
	}
}

func (w *World) fail(format string, args ...any) {
	if w.err == nil {
		w.err = fmt.Errorf("seed %d: "+format, append([]any{w.seed}, args...)...)
		w.logf("VIOLATION %v", w.err)
	}
}

func (w *World) boot(nd *node) {
	cfg := paxos.Config{ID: nd.id, Acceptors: w.sys, Mode: journal.ModeMulti, Proxies: w.proxyList}
	bs, err := nd.st.Boot()
	if err != nil {
		w.fail("boot scan of node %d: %v", nd.id, err)
		return
	}
	n, err := paxos.NewNode(cfg, w.opts, bs)
	if err != nil {
		w.fail("boot node %d: %v", nd.id, err)
		return
	}
	nd.n, nd.up, nd.held, nd.folds = n, true, nil, nil
	w.logf("boot n%d promise=%s chosen=%d", nd.id, n.Promised(), n.ChosenIndex())
}

func (w *World) nodeByID(id paxos.NodeID) *node {
	for _, nd := range w.nodes {
		if nd.id == id {
			return nd
		}
	}
	return nil
}

func (w *World) proxyByID(id paxos.NodeID) *proxy {
	for _, p := range w.proxies {
		if p.id == id {
			return p
		}
	}
	return nil
}

func (w *World) leader() *node {
	var best *node
	for _, nd := range w.nodes {
		if nd.up && nd.n.IsLeader() && (best == nil || best.n.LeaderBallot().Less(nd.n.LeaderBallot())) {
			best = nd
		}
	}
	return best
}

// post puts a message in the mailbox, losing one when it is full.
func (w *World) post(m paxos.Message) {
	if m.Type == paxos.MsgRelinquish && len(w.replay) < 16 {
		w.replay = append(w.replay, m)
	}
	if m.Type == paxos.MsgAccept && w.proxyByID(m.To) != nil && w.rng.IntN(8) == 0 {
		if len(w.late) >= 16 {
			w.late = w.late[1:]
		}
		w.late = append(w.late, m)
	}
	if len(w.mail) >= mailboxMax {
		i := w.rng.IntN(len(w.mail))
		w.mail = slices.Delete(w.mail, i, i+1)
		w.reach["mailbox: a message is lost"]++
	}
	w.mail = append(w.mail, m)
}

// drain runs a node's Ready loop: writes to its disk (not yet durable),
// EarlyOK messages out at once, the rest held until the batch is durable.
func (w *World) drain(nd *node) {
	for nd.up && nd.n.HasReady() {
		rd := nd.n.Ready()
		nd.st.Append(rd.Writes)
		nd.unsynced = append(nd.unsynced, rd.Writes...)
		if len(rd.Writes) > 0 {
			nd.lastBatch = rd.Batch
		}
		var held []paxos.Message
		for _, m := range rd.Messages {
			if m.EarlyOK() {
				w.post(m)
			} else {
				held = append(held, m)
			}
		}
		nd.folds = append(nd.folds, rd.Applied...)
		if len(rd.Writes) > 0 || len(nd.held) > 0 {
			nd.held = append(nd.held, held)
		} else {
			for _, m := range held {
				w.post(m)
			}
			w.releaseFolds(nd)
		}
		nd.n.Advance()
		if nd.n.WantsElectionTimeout() {
			nd.n.SetElectionTimeout(w.opts.ElectionTicks + w.rng.IntN(w.opts.ElectionTicks))
		}
		if err := nd.n.ContractFault(); err != nil {
			w.fail("node %d met a broken Paxos contract: %v", nd.id, err)
		}
	}
}

// releaseFolds judges the folds of durable batches: one value per slot.
func (w *World) releaseFolds(nd *node) {
	for _, c := range nd.folds {
		w.choose(c.Slot, c.Command.Fingerprint(), fmt.Sprintf("n%d folded", nd.id))
	}
	nd.folds = nd.folds[:0]
}

func (w *World) choose(s paxos.Slot, fp uint64, who string) {
	if have, ok := w.chosen[s]; ok && have != fp {
		w.fail("two values chosen at slot %d: %x, then %x (%s)", s, have, fp, who)
		return
	}
	w.chosen[s] = fp
}

// sync makes a node's writes durable, records the accepts they carried (a
// vote a later write of the same sync overwrote was still cast on disk),
// then releases what waited for them.
func (w *World) sync(nd *node) {
	if !nd.up {
		return
	}
	nd.st.Sync()
	nd.n.MarkDurable(nd.lastBatch)
	idx, _ := w.sys.IndexOf(nd.id)
	ops := nd.unsynced
	nd.unsynced = nil
	for _, r := range ops {
		if r.Kind != paxos.OpAccept {
			continue
		}
		k := key{r.Slot, r.Ballot, r.Command.Fingerprint()}
		set := w.durable[k].Add(idx)
		if set == w.durable[k] {
			continue
		}
		w.durable[k] = set
		if w.sys.Phase2(r.Slot, set, 0) == quorum.Won {
			if have, ok := w.decided[r.Slot]; ok && have != k.fp {
				w.fail("durable Phase-2 quorums for two values at slot %d: %x and %x (at %s)", r.Slot, have, k.fp, r.Ballot)
			}
			w.decided[r.Slot] = k.fp
		}
	}
	for _, b := range nd.held {
		for _, m := range b {
			w.post(m)
		}
	}
	nd.held = nil
	w.releaseFolds(nd)
}

func (w *World) crashNode(nd *node) {
	if !nd.up {
		return
	}
	w.collectNode(nd)
	if nd.st.Pending() > 0 {
		w.reach["node: a node crashes with writes not durable"]++
	} else {
		w.reach["node: a node crashes after its batch is durable"]++
	}
	nd.st.Crash()
	nd.up, nd.n, nd.held, nd.folds, nd.unsynced = false, nil, nil, nil, nil
	w.logf("crash n%d", nd.id)
}

func (w *World) crashProxy(p *proxy) {
	if !p.up {
		return
	}
	w.collectProxy(p)
	p.up = false
	w.reach["proxy: a proxy crashes and reboots empty"]++
	w.logf("crash proxy %d", p.id)
}

// deliver hands the i-th message to its addressee.
func (w *World) deliver(i int) {
	m := w.mail[i]
	w.mail = slices.Delete(w.mail, i, i+1)
	if p := w.proxyByID(m.To); p != nil {
		if !p.up {
			return
		}
		w.logf("deliver %s", m)
		p.p.Step(m)
		w.drainProxy(p)
		return
	}
	nd := w.nodeByID(m.To)
	if nd == nil || !nd.up {
		return
	}
	w.logf("deliver %s", m)
	nd.n.Step(m)
	w.drain(nd)
}

// drainProxy sends what a proxy emitted; each Commit is judged first:
// every slot it names must hold a durable Phase-2 quorum of that value at
// that ballot.
func (w *World) drainProxy(p *proxy) {
	for _, m := range p.p.Messages() {
		if m.Type == paxos.MsgCommit && m.To == m.Leader {
			for _, v := range m.Votes {
				k := key{v.Slot, m.Ballot, v.VHash}
				if w.sys.Phase2(v.Slot, w.durable[k], 0) != quorum.Won {
					w.fail("proxy %d announced slot %d at %s with no durable Phase-2 quorum (durable at %v)", p.id, v.Slot, m.Ballot, w.durable[k])
				}
				w.choose(v.Slot, k.fp, fmt.Sprintf("proxy %d announced", p.id))
			}
		}
		w.post(m)
	}
}

func (w *World) tickNode(nd *node) {
	if nd.up {
		nd.n.Tick()
		w.drain(nd)
	}
}

func (w *World) tickProxy(p *proxy) {
	if p.up {
		p.p.Tick()
		w.drainProxy(p)
	}
}

func (w *World) collectNode(nd *node) {
	c := nd.n.Counters()
	add := func(name string, v uint64) { w.reach[name] += v }
	add("leader: a round is delegated to a proxy", c.ProxyDelegated)
	add("leader: a round is decided from a proxy's Commit", c.ProxyDecided)
	add("leader: a delegated round is taken back", c.ProxyTakenBack)
	add("leader: a suspect proxy's round runs on the leader", c.ProxyBypassed)
	add("leader: a suspect proxy answers a probe", c.ProxyRecovered)
	add("leader: a write is proposed into a chosen grid column", c.ColumnFills)
	add("acceptor: a slot is learned from a proxy's Commit", c.ProxyLearned)
	add("handoff: a leader hands on mid-round", c.Relinquished)
	add("handoff: a successor installs the authority", c.Inherited)
	add("handoff: a successor decides without a Phase 1", c.InheritedDecided)
	add("handoff: a replayed or stale Relinquish is refused", c.RelinquishRefused)
	add("node: a leader is elected", c.Elections)
}

func (w *World) collectProxy(p *proxy) {
	c := p.p.Counters()
	add := func(name string, v uint64) { w.reach[name] += v }
	add("proxy: a delegation opens a round", c.Delegated)
	add("proxy: a proxy announces a decided slot", c.Decided)
	add("proxy: a proxy re-fans-out an open round", c.Refans)
	add("proxy: a proxy evicts an unanswered round", c.Evicted)
	add("proxy: a stale delegation is ignored", c.Stale)
	add("proxy: a refusal is relayed to the leader", c.Relayed)
}
