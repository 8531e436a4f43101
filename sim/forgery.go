package sim

import (
	"fmt"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
)

// Forgeries in the simulator (core/paxos/roles.go). On seeds that draw
// them (Shape.Forgeries), an impostor holding a real credential of the
// cell tries to get a value of its own chosen at a live leader's ballot,
// every 60–250 ms of the chaos window: a replica machine, a proxy machine
// naming a leader that does not lead the ballot (or none, or itself at a
// ballot of its own), another member,
// or a machine the cell never admitted (the gRPC edge refuses the last
// one before any byte reaches a host; the simulator hands it to the hosts
// anyway, as a test of the core's own table). It sends each acceptor an
// Accept of a write under the real writer's fence at a slot just above the
// chosen index, then a Commit of that slot; a replica or the stranger does
// so at the leader's ballot or at a ballot of its own above it, so that the
// role table and the ballot rule are each the only check in some draws.
//
// The oracles: no acceptor votes for a forged value (it never sends an
// Accepted naming one), and no forged value is ever folded anywhere. The
// gates require the core's refusals to fire: by role, and by ballot.
//
// A compromised proxy naming the real leader is not drawn: an acceptor
// cannot tell its forged Accept from a delegated one (docs/guide/security.md
// says so, and why delegations are not signed).

// StrangerID is the node id of the impostor the cell never admitted.
const StrangerID paxos.NodeID = 0x5ec0

// forgedPrefix starts every forged record: no client writes it.
const forgedPrefix = "forged:"

// forgeryChaos schedules the forgeries of the chaos window.
func (w *World) forgeryChaos() {
	if !w.shape.Forgeries || w.sched.now >= w.chaosEnd {
		return
	}
	w.sched.after(w.g.between(60*ms, 250*ms), lbl("forgery"), func() {
		if !w.calm() { // a hold is judged in a calm window (hold.go)
			w.forge()
		}
		w.forgeryChaos()
	})
}

// forge sends one forged Accept and Commit at a live elected leader's
// ballot, if some journal has one.
func (w *World) forge() {
	g := w.g
	js := w.shape.Journals[g.intn(len(w.shape.Journals))]
	var leader *paxos.Node
	for _, p := range w.procs {
		if !p.up || p.replica() {
			continue
		}
		// An inherited leadership's ballot has a successor beside its
		// owner: forge only at a ballot whose owner leads it, where the
		// one node that may speak at it is known.
		if n := p.h.Node(js.ID); n != nil && n.IsLeader() && !n.Inherited() {
			leader = n
		}
	}
	if leader == nil {
		return
	}
	b := leader.LeaderBallot()
	var others []paxos.NodeID
	for _, id := range w.shape.Nodes {
		if id != b.Node {
			others = append(others, id)
		}
	}
	if len(others) == 0 {
		return
	}
	var from, names paxos.NodeID
	switch k := g.intn(4); {
	case k == 0 && len(w.shape.Replicas) > 0:
		from = w.shape.Replicas[g.intn(len(w.shape.Replicas))]
	case k == 1 && len(w.proxySet) > 0:
		from = w.proxySet[g.intn(len(w.proxySet))]
		switch g.intn(3) {
		case 0:
			names = others[g.intn(len(others))]
		case 1:
			// A proxy naming itself the leader of a ballot of its own, above
			// the real leader's.
			names, b = from, paxos.Ballot{Round: b.Round + 1, Node: from}
		}
	case k == 3 && len(w.shape.Matchmakers) == 0:
		// With matchmakers the acceptor set moves, and the core hears any
		// machine the edge admitted as an acceptor of another
		// configuration: there only the edge refuses a stranger.
		from = StrangerID
	default:
		from = others[g.intn(len(others))]
	}
	if (w.proc(from) != nil && w.proc(from).replica() || from == StrangerID) && g.pct(50) {
		// A machine that may not lead speaks at a ballot of its own above
		// the leader's: the ballot rule would let it (it owns the ballot),
		// only the role table refuses it.
		b = paxos.Ballot{Round: b.Round + 1, Node: from}
	}
	st := leader.State()
	w.counts.Forgeries++
	cmd := journal.Write(journal.Entry{Leader: st.Leader, Seq: st.NextSeq,
		Records: [][]byte{fmt.Appendf(nil, "%s%d:%d", forgedPrefix, w.seed, w.counts.Forgeries)}})
	w.audit.forge(js.ID, cmd)
	s := leader.ChosenIndex() + 1 + paxos.Slot(g.intn(4))
	for _, to := range w.shape.Nodes {
		accept := paxos.Message{Type: paxos.MsgAccept, From: from, To: to, Ballot: b, Leader: names,
			Entries: []paxos.SlotCommand{{Slot: s, Ballot: b, Command: cmd}}}
		commit := paxos.Message{Type: paxos.MsgCommit, From: from, To: to, Ballot: b, Commit: s}
		if w.proxyByID(from) != nil {
			commit = paxos.Message{Type: paxos.MsgCommit, From: from, To: to, Ballot: b, Leader: names,
				Votes: []paxos.SlotVote{{Slot: s, VHash: cmd.Fingerprint()}}}
		}
		// Handed over at once, not carried: a ballot's owner leading it has
		// no successor now, but one named while a forgery was in flight
		// would make it a successor's own proposal (which no receiver can
		// tell apart, the threat model says). A paused or stale-held
		// receiver is skipped for the same reason.
		p := w.proc(to)
		if p == nil || !p.up || w.sched.now < p.pausedUntil || w.sched.now < p.stale.until {
			continue
		}
		p.h.OnDeliver(from, []host.Envelope{{Journal: js.ID, Msg: accept}, {Journal: js.ID, Msg: commit}})
		p.after()
	}
	w.sched.note("forge %s slot %d at %s from n%d naming n%d", short(js.ID), s, b, from, names)
}

// forge records a forged value.
func (a *audit) forge(j journal.ID, cmd journal.Command) {
	if a.forged == nil {
		a.forged = map[jforged]bool{}
	}
	a.forged[jforged{j, cmd.Fingerprint()}] = true
}

// jforged names a forged value of a journal by its fingerprint.
type jforged struct {
	j  journal.ID
	fp uint64
}

// forgedVotes: no acceptor votes for a forged value.
func (a *audit) forgedVotes(from paxos.NodeID, batch []host.Envelope) {
	if len(a.forged) == 0 {
		return
	}
	for _, e := range batch {
		if e.Msg.Type != paxos.MsgAccepted {
			continue
		}
		for _, v := range e.Msg.Votes {
			if a.forged[jforged{e.Journal, v.VHash}] {
				a.violation("roles: no acceptor votes for a value its ballot's leader never proposed",
					"%s n%d voted slot %d at %s for a forged value", short(e.Journal), from, v.Slot, e.Msg.Ballot)
			}
		}
	}
}

// forgedChosen: no forged value is folded on any node.
func (a *audit) forgedChosen(node paxos.NodeID, j journal.ID, c paxos.Applied) {
	if a.forged[jforged{j, c.Command.Fingerprint()}] {
		a.violation("roles: a forged value is never chosen", "%s slot %d folded a forged value on n%d", short(j), c.Slot, node)
	}
}
