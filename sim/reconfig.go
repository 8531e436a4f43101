package sim

import (
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/memstore"
)

// The operator of a deployment with matchmakers: every few hundred
// milliseconds of the chaos window (and the first half of the tail, for
// retirements only) it reads a journal's leader and acts through the Admin
// calls, as parosctl does. It reconfigures (add, remove or replace a
// member, change the quorum system; a dead or wiped member is replaced
// first), sometimes through a node that does not lead, so two
// reconfigurations can race; it retires the acceptors a leader names
// retirable with the leader's watermark; and it sends requests that must be
// refused (a retire of a member, with the wrong evidence, an impossible
// configuration), and checks they are.

// operatorCall is one Admin call of the operator in flight.
type operatorCall struct {
	to   paxos.NodeID
	call host.Call
	// want: a refusal is expected (a request built to be refused).
	want bool
}

func (w *World) operate() {
	if len(w.shape.Matchmakers) == 0 {
		return
	}
	w.sched.after(w.g.between(100*ms, 500*ms), lbl("operator"), func() {
		tailEnd := w.chaosEnd + w.opts.TailMs*ms/2
		if w.sched.now >= tailEnd {
			return
		}
		if !w.calm() { // a hold is judged in a calm window (hold.go)
			w.operatorStep(w.sched.now < w.chaosEnd)
		}
		w.operate()
	})
}

// leaderOf is a live node leading journal j (nil if none).
func (w *World) leaderOf(j journal.ID) (*proc, *paxos.Node) {
	for _, p := range w.procs {
		if p.up && p.h != nil {
			if n := p.h.Node(j); n != nil && n.IsLeader() {
				return p, n
			}
		}
	}
	return nil, nil
}

func (w *World) operatorStep(chaos bool) {
	g := w.g
	// A member gone for good is replaced first, in the chaos window and
	// in the tail: a grid column that holds one decides nothing until it
	// is, and its journal may have no leader to ask (every election then
	// needs that column), so a live member runs the change itself.
	// A matchmaker set with a member gone for good is replaced before
	// anything else: no journal changes rounds without it.
	if w.handover(false) {
		return
	}
	if js, via, n, ok := w.stranded(); ok {
		w.reconfigure(js, via, n)
		return
	}
	if w.handover(chaos && g.pct(10)) {
		return
	}
	js := w.shape.Journals[g.intn(len(w.shape.Journals))]
	lp, leader := w.leaderOf(js.ID)
	if leader == nil {
		return
	}
	switch k := g.intn(10); {
	case k < 4 && chaos:
		w.reconfigure(js, lp, leader)
	case k < 8:
		w.retire(js, leader)
	default:
		w.refusable(js, lp, leader)
	}
}

// stranded finds the first journal whose configuration in force (the
// leader's, else the newest a live member believes) names a machine gone
// for good and a machine can replace it, with the node to send the change
// to: the leader, else a live member of that configuration.
func (w *World) stranded() (JournalShape, *proc, *paxos.Node, bool) {
	gone := func(id paxos.NodeID) bool { return w.proc(id).downForGood }
	replaceable := func(js JournalShape, n *paxos.Node) bool {
		cur := n.Configuration().Acceptors.Members()
		return slices.ContainsFunc(cur, gone) && len(w.joinable(js, cur)) > 0
	}
	for _, js := range w.shape.Journals {
		if lp, leader := w.leaderOf(js.ID); leader != nil {
			if replaceable(js, leader) {
				return js, lp, leader, true
			}
			continue
		}
		var via *proc
		var newest *paxos.Node
		for _, p := range w.procs {
			if !p.up || p.h == nil || p.replica() {
				continue
			}
			n := p.h.Node(js.ID)
			if n == nil || !n.Configuration().Acceptors.Contains(p.id) {
				continue
			}
			if newest == nil || newest.Configuration().Ballot.Less(n.Configuration().Ballot) {
				via, newest = p, n
			}
		}
		if newest != nil && replaceable(js, newest) {
			return js, via, newest, true
		}
	}
	return JournalShape{}, nil, nil, false
}

// joinable are the machines that may join js beside cur: live servers not
// in it that never retired from the journal.
func (w *World) joinable(js JournalShape, cur []paxos.NodeID) []paxos.NodeID {
	var out []paxos.NodeID
	for _, id := range w.shape.Servers() {
		p := w.proc(id)
		if !slices.Contains(cur, id) && p.up && !p.wiped && !p.retired[js.ID] {
			out = append(out, id)
		}
	}
	return out
}

// reconfigure draws a new configuration from the one leader (a node of
// lp) believes and asks a node (usually lp) to install it.
func (w *World) reconfigure(js JournalShape, lp *proc, leader *paxos.Node) {
	g := w.g
	cur := leader.Configuration().Acceptors.Members()
	members := slices.Clone(cur)
	joinable := w.joinable(js, cur)
	dead := slices.IndexFunc(members, func(id paxos.NodeID) bool { return w.proc(id).downForGood })
	switch k := g.intn(4); {
	case dead >= 0 && len(joinable) > 0:
		// Reconfigure away a wiped node: replace it with a fresh machine.
		w.sched.note("operator replaces dead n%d", members[dead])
		members[dead] = joinable[g.intn(len(joinable))]
		w.counts.ReplacedDead++
	case k == 0 && len(joinable) > 0 && len(members) < 6:
		members = append(members, joinable[g.intn(len(joinable))])
	case k == 1 && len(members) > 3:
		i := g.intn(len(cur))
		members = append(slices.Clone(cur[:i]), cur[i+1:]...)
	case k == 2 && len(joinable) > 0:
		members[g.intn(len(members))] = joinable[g.intn(len(joinable))]
	}
	slices.Sort(members)
	spec := w.drawQuorum(len(members))
	for _, id := range members {
		p := w.proc(id)
		if slices.Contains(cur, id) || p.serves(js.ID) {
			continue
		}
		if !w.join(p, js, members, spec) {
			return
		}
	}
	to := lp.id
	if g.pct(30) {
		// A node that does not lead: it runs the change itself, and may
		// race the leader's own.
		if p := w.pickServing(js.ID); p != nil {
			to = p.id
		}
	}
	w.counts.Reconfigures++
	w.operatorSend(to, host.Call{Kind: host.CallReconfigure, Reconfigure: host.ReconfigureRequest{Journal: js.ID, Members: members, Quorum: spec}}, false)
}

// drawQuorum draws a quorum system for n members: usually a majority,
// sometimes a flexible split or a grid when n allows one.
func (w *World) drawQuorum(n int) quorum.Spec {
	g := w.g
	switch k := g.intn(10); {
	case k < 2 && n >= 4:
		q2 := 2 + g.intn(n-2)
		return quorum.Spec{Kind: quorum.KindFlexible, Q1: n - q2 + 1, Q2: q2}
	case k < 4 && n == 4:
		return quorum.Spec{Kind: quorum.KindGrid, Rows: 2, Cols: 2}
	case k < 4 && n == 6:
		dims := [][2]int{{2, 3}, {3, 2}}[g.intn(2)]
		return quorum.Spec{Kind: quorum.KindGrid, Rows: dims[0], Cols: dims[1]}
	}
	return quorum.Spec{Kind: quorum.KindMajority}
}

// join formats journal js on machine p as a joiner of members.
func (w *World) join(p *proc, js JournalShape, members []paxos.NodeID, spec quorum.Spec) bool {
	s := host.JournalSpec{ID: js.ID, Members: members, Quorum: spec, Mode: js.Mode, Claim: storage.ClaimFirstBoot,
		Matchmakers: w.shape.Matchmakers, MatchmakerSet: w.newestSet(), Joiner: true, Replicas: w.replicaSet, Proxies: w.proxySet}
	p.stores[js.ID] = memstore.New()
	if err := p.h.AddJournal(s); err != nil {
		w.audit.violation("reconfiguration: a fresh machine joins a journal", "n%d %s: %v", p.id, short(js.ID), err)
		return false
	}
	s.Claim = 0
	p.joined[js.ID] = s
	w.sched.note("n%d joins %s as %v", p.id, short(js.ID), members)
	p.after()
	return true
}

func (w *World) pickServing(j journal.ID) *proc {
	var out []*proc
	for _, p := range w.procs {
		if p.up && p.h != nil && p.h.Node(j) != nil && !p.replica() {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out[w.g.intn(len(out))]
}

// retire retires an acceptor the leader names retirable, with the
// leader's effective watermark as evidence.
func (w *World) retire(js JournalShape, leader *paxos.Node) {
	wm, retirable, ok := leader.Collected()
	if !ok {
		return
	}
	for _, id := range retirable {
		p := w.proc(id)
		if p.up && p.h != nil && p.h.Node(js.ID) != nil {
			w.operatorSend(id, host.Call{Kind: host.CallRetire, Retire: host.RetireRequest{Journal: js.ID, Watermark: wm}}, false)
			return
		}
	}
}

// refusable sends a request that must be refused.
func (w *World) refusable(js JournalShape, lp *proc, leader *paxos.Node) {
	g := w.g
	cfg := leader.Configuration()
	switch g.intn(3) {
	case 0:
		// A member retiring with the leader's ballot as evidence.
		members := cfg.Acceptors.Members()
		w.operatorSend(members[g.intn(len(members))], host.Call{Kind: host.CallRetire,
			Retire: host.RetireRequest{Journal: js.ID, Watermark: leader.LeaderBallot()}}, true)
	case 1:
		// Anyone retiring with evidence that is not a watermark.
		if p := w.pickServing(js.ID); p != nil {
			w.operatorSend(p.id, host.Call{Kind: host.CallRetire,
				Retire: host.RetireRequest{Journal: js.ID, Watermark: paxos.Ballot{Round: 1, Node: 0x7fff}}}, true)
		}
	case 2:
		// Phases that do not meet.
		ms := cfg.Acceptors.Members()
		w.operatorSend(lp.id, host.Call{Kind: host.CallReconfigure, Reconfigure: host.ReconfigureRequest{Journal: js.ID,
			Members: ms, Quorum: quorum.Spec{Kind: quorum.KindFlexible, Q1: 1, Q2: 1}}}, true)
	}
}

func (w *World) operatorSend(to paxos.NodeID, c host.Call, wantRefusal bool) {
	p := w.proc(to)
	if !p.up || p.h == nil {
		return
	}
	w.opNext++
	c.ID = host.CallID(operatorBit | w.opNext)
	w.opCalls[c.ID] = operatorCall{to: to, call: c, want: wantRefusal}
	p.h.OnCall(c)
	p.after()
}

// operatorReply judges the answer to an operator call.
func (w *World) operatorReply(p *proc, id host.CallID, r host.Response) {
	oc, ok := w.opCalls[id]
	if !ok {
		return
	}
	delete(w.opCalls, id)
	if oc.call.Kind == host.CallMatchmakers {
		w.handoverReply(p, r)
		return
	}
	refusal := r.Admin.Refusal
	switch {
	case oc.want && refusal == "":
		w.audit.violation("an operator request without its evidence is refused", "n%d accepted %v", p.id, oc.call)
	case oc.want:
		w.audit.gate("gc: a retire or reconfiguration without its evidence is refused")
	case oc.call.Kind == host.CallRetire && refusal == "":
		w.audit.gate("gc: a retired node's journal store is deleted")
		w.audit.retired(p.id, oc.call.Retire.Journal, oc.call.Retire.Watermark)
		w.sched.note("n%d retired from %s at %s", p.id, short(oc.call.Retire.Journal), oc.call.Retire.Watermark)
	case oc.call.Kind == host.CallHandoff && refusal == "":
		w.counts.OperatorHandoffs++
	case oc.call.Kind == host.CallReconfigure && refusal != "" && refusal != "unavailable":
		w.audit.violation("a valid reconfiguration is started", "n%d refused %v: %s %s", p.id, oc.call.Reconfigure, refusal, r.Admin.Detail)
	}
}
