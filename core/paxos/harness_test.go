package paxos_test

// This file is the test network shared by the scenario tests and the
// randomized checker: real nodes over memstore, a message pool the test
// delivers, drops, duplicates and reorders by hand, and a disk that syncs
// only when told, so a crash can land before or after a batch is durable.
// Persist-before-send is enforced here as a host would: a batch's messages
// (but for EarlyOK ones) leave only once that batch and every earlier one
// are synced.

import (
	"fmt"
	"hash"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/storage/memstore"
)

type heldBatch struct {
	msgs []paxos.Message
}

type tnode struct {
	id    paxos.NodeID
	node  *paxos.Node
	store *memstore.Store
	up    bool
	// held: messages of batches not yet durable, oldest first.
	held []heldBatch
	// boot counts restarts; promiseSeen is the highest promise seen in
	// this boot (the in-memory promise never decreases within a boot).
	boot        int
	promiseSeen paxos.Ballot
	firstSeen   journal.Seq
	// lastBatch is the newest Ready with writes; sync reports it durable.
	lastBatch uint64
	// durablePromise is the highest promise seen on disk.
	durablePromise paxos.Ballot
	applied        map[paxos.Slot]paxos.Applied // this boot's folds
	pendingFolds   []paxos.Applied              // folds of batches not yet durable
	reads          map[uint64]paxos.ReadState
	// ops counts the durable ops the node emitted, by kind (all boots).
	ops map[paxos.OpKind]int
}

type network struct {
	t     testing.TB
	cfg   quorum.System
	mode  journal.WriterMode
	opts  paxos.Options
	nodes []*tnode
	pool  []paxos.Message
	rng   *rand.Rand
	trace bool
	// cut isolates a set of nodes: messages crossing it are lost.
	cut     map[paxos.NodeID]bool
	log     []string
	oracles *oracles
	// replicas are the deployment's replica nodes (in nodes, after the
	// acceptors): learners that never vote.
	replicas []paxos.NodeID
	// stream digests every message every node sent, in order.
	stream hash.Hash64
}

func newNetwork(t testing.TB, sys quorum.System, mode journal.WriterMode, opts paxos.Options, seed uint64) *network {
	return newNetworkWithReplicas(t, sys, nil, mode, opts, seed)
}

// newNetworkWithReplicas adds replica nodes (ids outside sys) to the
// network: every node's configuration names them.
func newNetworkWithReplicas(t testing.TB, sys quorum.System, replicas []paxos.NodeID, mode journal.WriterMode, opts paxos.Options, seed uint64) *network {
	net := &network{t: t, cfg: sys, mode: mode, opts: opts, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), replicas: replicas,
		stream: fnv.New64a()}
	net.oracles = newOracles(net)
	for _, id := range slices.Concat(sys.Members(), replicas) {
		tn := &tnode{id: id, store: memstore.New()}
		net.nodes = append(net.nodes, tn)
		net.boot(tn)
	}
	return net
}

func majority(n int) quorum.System {
	ids := make([]quorum.ID, n)
	for i := range ids {
		ids[i] = quorum.ID(i + 1)
	}
	s, err := quorum.NewMajority(ids)
	if err != nil {
		panic(err)
	}
	return s
}

func (net *network) node(id paxos.NodeID) *tnode {
	for _, tn := range net.nodes {
		if tn.id == id {
			return tn
		}
	}
	panic(fmt.Sprintf("no node %d", id))
}

func (net *network) logf(format string, args ...any) {
	if net.trace {
		net.log = append(net.log, fmt.Sprintf(format, args...))
	}
}

// boot (re)starts a node from its store's durable state.
func (net *network) boot(tn *tnode) {
	cfg := paxos.Config{ID: tn.id, Acceptors: net.cfg, Mode: net.mode, Replicas: net.replicas,
		Replica: slices.Contains(net.replicas, tn.id)}
	// Boot from what the store's boot scan hands a host (its cold prefix
	// left on disk and folded back in pages), as a process does.
	bs, err := tn.store.Boot()
	if err != nil {
		net.t.Fatalf("boot scan of node %d: %v", tn.id, err)
	}
	n, err := paxos.NewNode(cfg, net.opts, bs)
	if err != nil {
		net.t.Fatalf("boot node %d: %v", tn.id, err)
	}
	tn.node, tn.up, tn.held = n, true, nil
	tn.boot++
	tn.promiseSeen = n.Promised()
	tn.firstSeen = n.State().FirstSeq
	tn.applied = map[paxos.Slot]paxos.Applied{}
	tn.reads = map[uint64]paxos.ReadState{}
	net.logf("boot %d promise=%s floor=%d chosen=%d", tn.id, n.Promised(), n.Floor(), n.ChosenIndex())
	net.drain(tn)
}

// drain handles every Ready of a node: persist (unsynced), release
// EarlyOK messages, hold the rest until sync, record folds and reads.
func (net *network) drain(tn *tnode) {
	for tn.up && tn.node.HasReady() {
		rd := tn.node.Ready()
		tn.store.Append(rd.Writes)
		if tn.ops == nil {
			tn.ops = map[paxos.OpKind]int{}
		}
		for _, op := range rd.Writes {
			tn.ops[op.Kind]++
		}
		if len(rd.Writes) > 0 {
			tn.lastBatch = rd.Batch
		}
		var held []paxos.Message
		for _, m := range rd.Messages {
			if net.stream != nil {
				digest(net.stream, m)
			}
			if m.EarlyOK() {
				net.pool = append(net.pool, m)
			} else {
				held = append(held, m)
			}
		}
		if len(rd.Writes) > 0 || len(tn.held) > 0 {
			tn.held = append(tn.held, heldBatch{msgs: held})
		} else {
			net.pool = append(net.pool, held...)
		}
		// A fold counts once its batch is durable: a leader may fold a slot
		// its own unsynced vote decided, and a crash before the sync
		// un-decides it. Nothing announces it before then.
		for _, c := range rd.Applied {
			tn.applied[c.Slot] = c
			tn.pendingFolds = append(tn.pendingFolds, c)
		}
		if len(rd.Writes) == 0 && len(tn.held) == 0 {
			net.releaseFolds(tn)
		}
		for _, r := range rd.ReadStates {
			tn.reads[r.Ctx] = r
			net.oracles.readSettled(tn, r)
		}
		tn.node.Advance()
		if tn.node.WantsElectionTimeout() {
			tn.node.SetElectionTimeout(net.opts.ElectionTicks + net.rng.IntN(net.opts.ElectionTicks))
		}
		net.oracles.afterBatch(tn)
	}
}

// digest adds what m says to h: its header, and each entry's slot, ballot
// and value fingerprint, each vote and the configuration it names.
func digest(h hash.Hash64, m paxos.Message) {
	fmt.Fprintf(h, "%s|%s|%d|", m, m.Config, m.Commit)
	for _, e := range m.Entries {
		fmt.Fprintf(h, "%d/%s/%x,", e.Slot, e.Ballot, e.Command.Fingerprint())
	}
	for _, v := range m.Votes {
		fmt.Fprintf(h, "%d/%x,", v.Slot, v.VHash)
	}
	fmt.Fprintln(h)
}

func (net *network) releaseFolds(tn *tnode) {
	for _, c := range tn.pendingFolds {
		net.oracles.folded(tn, c)
	}
	tn.pendingFolds = tn.pendingFolds[:0]
}

// sync makes a node's writes durable and releases its held messages.
func (net *network) sync(tn *tnode) {
	if !tn.up {
		return
	}
	tn.store.Sync()
	tn.node.MarkDurable(tn.lastBatch)
	net.releaseFolds(tn)
	for _, b := range tn.held {
		net.pool = append(net.pool, b.msgs...)
	}
	tn.held = nil
	net.oracles.synced(tn)
}

// crash stops a node: unsynced writes and held messages are lost.
func (net *network) crash(tn *tnode) {
	if !tn.up {
		return
	}
	tn.store.Crash()
	tn.up, tn.held, tn.node, tn.pendingFolds = false, nil, nil, nil
	net.logf("crash %d", tn.id)
}

func (net *network) deliver(i int) {
	m := net.pool[i]
	net.pool = slices.Delete(net.pool, i, i+1)
	tn := net.node(m.To)
	if !tn.up {
		return
	}
	if net.cut != nil && net.cut[m.From] != net.cut[m.To] {
		net.logf("partitioned %s", m)
		return
	}
	net.logf("deliver %s", m)
	tn.node.Step(m)
	net.drain(tn)
}

func (net *network) tick(tn *tnode) {
	if !tn.up {
		return
	}
	tn.node.Tick()
	net.drain(tn)
}

// settle runs the network with no faults: sync, deliver everything, tick,
// until quiet for a while.
func (net *network) settle(rounds int) {
	for range rounds {
		net.deliverAll()
		for _, tn := range net.nodes {
			net.tick(tn)
		}
	}
}

// deliverAll syncs every node and delivers every message in flight (lost
// across the network's cut), ticking nobody.
func (net *network) deliverAll() {
	for _, tn := range net.nodes {
		net.sync(tn)
	}
	for len(net.pool) > 0 {
		net.deliver(0)
		for _, tn := range net.nodes {
			net.sync(tn)
		}
	}
}

func (net *network) leader() *tnode {
	var best *tnode
	for _, tn := range net.nodes {
		if tn.up && tn.node.IsLeader() && (best == nil || best.node.LeaderBallot().Less(tn.node.LeaderBallot())) {
			best = tn
		}
	}
	return best
}

// electLeader ticks one node until it campaigns and the network settles.
func (net *network) electLeader(tn *tnode) {
	for range 100 {
		if tn.node.IsLeader() {
			return
		}
		net.tick(tn)
		net.sync(tn)
		for len(net.pool) > 0 {
			net.deliver(0)
			for _, x := range net.nodes {
				net.sync(x)
			}
		}
	}
	net.t.Fatalf("node %d did not become leader", tn.id)
}

func (net *network) dumpLog() string {
	if len(net.log) > 400 {
		return fmt.Sprint(net.log[len(net.log)-400:])
	}
	return fmt.Sprint(net.log)
}
