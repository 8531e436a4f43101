package paxos_test

// This file is the test network of harness_test.go grown a matchmaker set:
// real nodes over memstore and N real matchmakers (core/matchmaker) over
// memstore registry stores, one message pool. A message whose type is a
// matchmaker request goes to the matchmaker of that id, everything else to
// the node of that id. A matchmaker's Ready is persisted (its registry store
// applies and syncs the writes) before its messages enter the pool, as a
// host must; nodes keep the persist-before-send rule of harness_test.go.
// With holdMM set a matchmaker's writes are appended unsynced and its
// messages held until syncMM (or syncAll) syncs its store; each reply then
// released is checked against the store's durable registry.
//
// On top of the plain harness it can add a node later (a joiner, formatted
// for the configuration it joins), crash and reboot nodes and matchmakers
// from their stores, cut any set of ids off (nodes or matchmakers), and
// drop messages by a filter. Deliveries without a tick are bounded, so a
// livelock fails the test instead of hanging it.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/memstore"
)

// mmJournal is the one journal the test network runs.
var mmJournal = journal.ID{Tenant: 7, Journal: 7}

// mmDeliveriesMax bounds the deliveries of one exchange: a fault-free burst
// without ticks that does not drain by then is a livelock.
const mmDeliveriesMax = 20000

type tmatchmaker struct {
	id    paxos.NodeID
	mm    *matchmaker.Matchmaker
	store *memstore.RegistryStore
	up    bool
	// held: messages of Readies whose writes are not synced yet (holdMM).
	held []paxos.Message
}

type mnet struct {
	*network
	mmIDs []paxos.NodeID
	mms   []*tmatchmaker
	// cfgs is the configuration each node's store was formatted for.
	cfgs map[paxos.NodeID]paxos.Config
	// drop, when set, loses every message it matches (checked on delivery).
	drop func(paxos.Message) bool
	// holdMM holds a matchmaker's messages until its writes are synced.
	holdMM bool
	// ballotCfg records the acceptor set each leader ran its ballot with
	// (for the durable-quorum oracle).
	ballotCfg map[paxos.Ballot]quorum.System
}

// newMNet boots the members of sys as nodes and k matchmakers, ids 101….
func newMNet(t testing.TB, sys quorum.System, k int, mode journal.WriterMode, opts paxos.Options, seed uint64) *mnet {
	base := &network{t: t, cfg: sys, mode: mode, opts: opts}
	base.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	base.oracles = newOracles(base)
	mn := &mnet{network: base, cfgs: map[paxos.NodeID]paxos.Config{}, ballotCfg: map[paxos.Ballot]quorum.System{}}
	for i := range k {
		mn.mmIDs = append(mn.mmIDs, paxos.NodeID(101+i))
	}
	for _, id := range mn.mmIDs {
		st := memstore.NewRegistry()
		if err := st.Format(storage.RegistryMarker{Node: id, Matchmakers: mn.mmIDs}); err != nil {
			t.Fatalf("format matchmaker %d: %v", id, err)
		}
		x := &tmatchmaker{id: id, store: st}
		mn.mms = append(mn.mms, x)
		mn.bootMM(x)
	}
	for _, id := range sys.Members() {
		mn.cfgs[id] = paxos.Config{ID: id, Acceptors: sys, Mode: mode, Matchmakers: mn.mmIDs}
		tn := &tnode{id: id, store: memstore.New()}
		mn.nodes = append(mn.nodes, tn)
		mn.boot(tn)
	}
	return mn
}

// addJoiner formats a fresh store for node id joining sys by
// reconfiguration and boots it.
func (mn *mnet) addJoiner(id paxos.NodeID, sys quorum.System) *tnode {
	mn.cfgs[id] = paxos.Config{ID: id, Acceptors: sys, Mode: mn.mode, Matchmakers: mn.mmIDs, Joiner: true}
	tn := &tnode{id: id, store: memstore.New()}
	mn.nodes = append(mn.nodes, tn)
	mn.boot(tn)
	return tn
}

// boot (re)starts a node from its store's durable state, under the
// configuration its store was formatted for.
func (mn *mnet) boot(tn *tnode) {
	bs, err := tn.store.Boot()
	if err != nil {
		mn.t.Fatalf("boot scan of node %d: %v", tn.id, err)
	}
	n, err := paxos.NewNode(mn.cfgs[tn.id], mn.opts, bs)
	if err != nil {
		mn.t.Fatalf("boot node %d: %v", tn.id, err)
	}
	tn.node, tn.up, tn.held = n, true, nil
	tn.boot++
	tn.promiseSeen = n.Promised()
	tn.firstSeen = n.State().FirstSeq
	tn.applied = map[paxos.Slot]paxos.Applied{}
	tn.reads = map[uint64]paxos.ReadState{}
	mn.logf("boot %d promise=%s chosen=%d", tn.id, n.Promised(), n.ChosenIndex())
	mn.drainNode(tn)
}

// bootMM (re)starts a matchmaker from its registry store.
func (mn *mnet) bootMM(x *tmatchmaker) {
	bs, err := x.store.Boot()
	if err != nil {
		mn.t.Fatalf("boot scan of matchmaker %d: %v", x.id, err)
	}
	mm, err := matchmaker.New(x.id, bs.Generation, bs.Registries)
	if err != nil {
		mn.t.Fatalf("boot matchmaker %d: %v", x.id, err)
	}
	x.mm, x.up = mm, true
	mn.logf("boot matchmaker %d", x.id)
}

func (mn *mnet) crashMM(x *tmatchmaker) {
	x.store.Crash()
	x.mm, x.up, x.held = nil, false, nil
	mn.logf("crash matchmaker %d", x.id)
}

// drainNode drains a node and records the configuration it leads with.
func (mn *mnet) drainNode(tn *tnode) {
	mn.network.drain(tn)
	if tn.up && tn.node.IsLeader() {
		b := tn.node.LeaderBallot()
		sys := tn.node.Configuration().Acceptors
		if prev, ok := mn.ballotCfg[b]; ok && !paxos.SameSystem(prev, sys) {
			mn.oracles.fail("a ballot is bound to one configuration: %s led with %s and %s", b, prev, sys)
		}
		mn.ballotCfg[b] = sys
	}
}

// drainMM persists a matchmaker's Ready (synced), then pools its answers.
// With holdMM the writes are only appended and the answers held: syncMM
// releases them.
func (mn *mnet) drainMM(x *tmatchmaker) {
	for x.up && x.mm.HasReady() {
		rd := x.mm.Ready()
		var err error
		if mn.holdMM {
			err = x.store.Append(rd.Writes)
		} else {
			err = x.store.Apply(rd.Writes)
		}
		if err != nil {
			mn.t.Fatalf("matchmaker %d apply: %v", x.id, err)
		}
		for _, env := range rd.Messages {
			if env.Journal != mmJournal {
				mn.t.Fatalf("matchmaker %d answered for journal %s", x.id, env.Journal)
			}
			if mn.holdMM {
				x.held = append(x.held, env.Msg)
			} else {
				mn.pool = append(mn.pool, env.Msg)
			}
		}
		x.mm.Advance()
	}
}

// syncMM syncs a matchmaker's registry store and releases the answers it
// held, each checked against what the store now holds durably: a
// registration answered OK is durable (or collected by a durable watermark
// above it), and a collection acknowledged is durable.
func (mn *mnet) syncMM(x *tmatchmaker) {
	if !x.up {
		return
	}
	x.store.Sync()
	if len(x.held) == 0 {
		return
	}
	bs, err := x.store.Boot()
	if err != nil {
		mn.t.Fatalf("boot scan of matchmaker %d: %v", x.id, err)
	}
	reg := bs.Registries[mmJournal]
	for _, m := range x.held {
		switch {
		case m.Type == paxos.MsgMatchReply && m.Refusal == paxos.MatchOK && !m.Ballot.IsZero():
			if m.Ballot.Less(reg.Watermark) {
				break
			}
			if !slices.ContainsFunc(reg.Regs, func(r paxos.Registration) bool { return r.Ballot == m.Ballot }) {
				mn.oracles.fail("a matchmaker answers a registration only once it is durable: matchmaker %d replied to %s, its store holds %d registrations, none at %s",
					x.id, m.Ballot, len(reg.Regs), m.Ballot)
			}
		case m.Type == paxos.MsgGarbageCollectAck:
			if reg.Watermark.Less(m.GC) {
				mn.oracles.fail("a matchmaker acknowledges a collection only once it is durable: matchmaker %d acked %s, its store holds watermark %s",
					x.id, m.GC, reg.Watermark)
			}
		}
	}
	mn.pool = append(mn.pool, x.held...)
	x.held = nil
}

func (mn *mnet) mm(id paxos.NodeID) *tmatchmaker {
	for _, x := range mn.mms {
		if x.id == id {
			return x
		}
	}
	return nil
}

// find is the node of id, or nil (a node not started yet).
func (mn *mnet) find(id paxos.NodeID) *tnode {
	for _, tn := range mn.nodes {
		if tn.id == id {
			return tn
		}
	}
	return nil
}

// deliver hands pool[i] to its addressee, unless the cut or the drop filter
// loses it.
func (mn *mnet) deliver(i int) {
	m := mn.pool[i]
	mn.pool = slices.Delete(mn.pool, i, i+1)
	if mn.cut != nil && mn.cut[m.From] != mn.cut[m.To] {
		mn.logf("partitioned %s", m)
		return
	}
	if mn.drop != nil && mn.drop(m) {
		mn.logf("dropped %s", m)
		return
	}
	if m.Type.IsMatchmakerRequest() {
		x := mn.mm(m.To)
		if x == nil {
			mn.t.Fatalf("%s addressed to no matchmaker", m)
		}
		if !x.up {
			return
		}
		mn.logf("deliver %s", m)
		x.mm.Step(mmJournal, m)
		mn.drainMM(x)
		return
	}
	tn := mn.find(m.To)
	if tn == nil || !tn.up {
		return
	}
	mn.logf("deliver %s", m)
	tn.node.Step(m)
	mn.drainNode(tn)
}

func (mn *mnet) tick(tn *tnode) {
	if !tn.up {
		return
	}
	tn.node.Tick()
	mn.drainNode(tn)
}

func (mn *mnet) syncAll() {
	for _, tn := range mn.nodes {
		mn.sync(tn)
	}
	for _, x := range mn.mms {
		mn.syncMM(x)
	}
}

// exchange syncs every disk and delivers every message, oldest first, until
// the pool is empty; it fails the test past mmDeliveriesMax deliveries.
func (mn *mnet) exchange() {
	mn.t.Helper()
	for k := 0; ; k++ {
		mn.syncAll()
		if len(mn.pool) == 0 {
			return
		}
		if k >= mmDeliveriesMax {
			var stale []string
			for _, tn := range mn.nodes {
				if tn.up {
					stale = append(stale, fmt.Sprintf("%d:%d", tn.id, tn.node.Counters().StaleConfigurations))
				}
			}
			mn.t.Fatalf("livelock: the pool did not drain in %d deliveries without a tick: %s\nstale configurations per node %v\npool head %v\nlast deliveries %v",
				mmDeliveriesMax, mn, stale, mn.pool[:min(len(mn.pool), 6)], mn.log[max(0, len(mn.log)-12):])
		}
		mn.deliver(0)
	}
}

// settle runs the network with no new faults: exchange, then tick every
// node, rounds times.
func (mn *mnet) settle(rounds int) {
	mn.t.Helper()
	for range rounds {
		mn.exchange()
		for _, tn := range mn.nodes {
			mn.tick(tn)
		}
	}
	mn.exchange()
}

// settleUntil settles until cond holds, for at most rounds rounds.
func (mn *mnet) settleUntil(rounds int, cond func() bool) bool {
	mn.t.Helper()
	for range rounds {
		mn.exchange()
		if cond() {
			return true
		}
		for _, tn := range mn.nodes {
			mn.tick(tn)
		}
	}
	mn.exchange()
	return cond()
}

// electLeader ticks one node (and only it) until it leads, exchanging
// everything in between: a probe, matchmaking and Phase 1.
func (mn *mnet) electLeader(tn *tnode) {
	mn.t.Helper()
	for range 200 {
		mn.exchange()
		if tn.node.IsLeader() {
			return
		}
		mn.tick(tn)
	}
	mn.t.Fatalf("node %d did not become leader (role %s, config %s)\n%s", tn.id, tn.node.Role(),
		tn.node.Configuration(), mn.dumpLog())
}

// campaignOnce ticks tn until it leaves the follower role and syncs it, so
// its matchmaking requests are in the pool, undelivered. A probe on the way
// (a node that has not learned its configuration since boot) is answered
// in between: it registers nothing.
func (mn *mnet) campaignOnce(tn *tnode) {
	mn.t.Helper()
	isProbe := func(m paxos.Message) bool {
		return m.Type == paxos.MsgProbe || (m.Type == paxos.MsgMatchReply && m.Ballot.IsZero())
	}
	for range 200 {
		mn.sync(tn)
		if tn.node.Role() != "follower" {
			return
		}
		for {
			probes := takeWhere(mn, isProbe)
			if len(probes) == 0 {
				break
			}
			mn.deliverMsgs(probes...)
		}
		mn.tick(tn)
	}
	mn.t.Fatalf("node %d never campaigned", tn.id)
}

// proposeW asks tn to decide an unfenced write and returns its slot.
func (mn *mnet) proposeW(tn *tnode, recs ...string) paxos.Slot {
	mn.t.Helper()
	res := tn.node.Propose(unfenced(recs...).Entry)
	if res.Status != paxos.Proposed {
		mn.t.Fatalf("propose %v at node %d: status %d hint %d", recs, tn.id, res.Status, res.LeaderHint)
	}
	mn.drainNode(tn)
	return res.Slot
}

// deliverMsgs delivers the given messages in order (cut and filter apply).
func (mn *mnet) deliverMsgs(msgs ...paxos.Message) {
	for _, m := range msgs {
		mn.pool = append(mn.pool, m)
		mn.deliver(len(mn.pool) - 1)
	}
}

// takeWhere removes the pooled messages pred matches and returns them.
func takeWhere(mn *mnet, pred func(paxos.Message) bool) []paxos.Message {
	var out []paxos.Message
	kept := mn.pool[:0]
	for _, m := range mn.pool {
		if pred(m) {
			out = append(out, m)
		} else {
			kept = append(kept, m)
		}
	}
	mn.pool = kept
	return out
}

// leader is the up node leading at the highest ballot (nil: none).
func (mn *mnet) leader() *tnode {
	var best *tnode
	for _, tn := range mn.nodes {
		if tn.up && tn.node.IsLeader() && (best == nil || best.node.LeaderBallot().Less(tn.node.LeaderBallot())) {
			best = tn
		}
	}
	return best
}

// durableQuorums checks every store, removed and joined nodes included: at
// most one command per (slot, ballot), and a Phase-2 quorum of the ballot's
// own configuration holding a value durably means that value is the one
// folded.
func (mn *mnet) durableQuorums() {
	type key struct {
		slot   paxos.Slot
		ballot paxos.Ballot
	}
	voters := map[key][]paxos.NodeID{}
	vals := map[key]journal.Command{}
	for _, tn := range mn.nodes {
		for _, r := range tn.store.Records() {
			k := key{r.Slot, r.Ballot}
			if v, ok := vals[k]; ok && !v.Equal(r.Command) {
				mn.oracles.fail("at most one command is ever accepted for one (slot, ballot): slot %d ballot %s: %s and %s",
					r.Slot, r.Ballot, v, r.Command)
			}
			vals[k] = r.Command
			voters[k] = append(voters[k], tn.id)
		}
	}
	for k, who := range voters {
		sys, ok := mn.ballotCfg[k.ballot]
		if !ok || sys.Phase2(k.slot, sys.SetOf(who...), 0) != quorum.Won {
			continue
		}
		if c, ok := mn.oracles.chosen[k.slot]; ok && !c.Equal(vals[k]) {
			mn.oracles.fail("a durable accept quorum never decides two values for a slot: slot %d quorum %v of %s at %s holds %s, folded %s",
				k.slot, who, sys, k.ballot, vals[k], c)
		}
	}
}

// converged checks that the members of the leader's configuration reached
// its chosen prefix and fold to the same state.
func (mn *mnet) converged() {
	l := mn.leader()
	if l == nil {
		mn.oracles.fail("liveness: a leader is elected in the quiet tail")
		return
	}
	top := l.node.Applied()
	for _, id := range l.node.Configuration().Acceptors.Members() {
		tn := mn.find(id)
		if tn == nil || !tn.up {
			continue
		}
		if tn.node.Applied() != top {
			mn.oracles.fail("every member converges to the leader's chosen prefix: node %d applied %d, leader %d applied %d",
				id, tn.node.Applied(), l.id, top)
		}
		if a, b := l.node.State().View(), tn.node.State().View(); a != b {
			mn.oracles.fail("journal: every member folds the log to the same state: node %d %+v, leader %+v", id, b, a)
		}
	}
}

func (mn *mnet) String() string {
	var s string
	for _, tn := range mn.nodes {
		if !tn.up {
			s += fmt.Sprintf("[%d down] ", tn.id)
			continue
		}
		s += fmt.Sprintf("[%d %s %s chosen=%d] ", tn.id, tn.node.Role(), tn.node.Configuration(), tn.node.ChosenIndex())
	}
	return s
}
