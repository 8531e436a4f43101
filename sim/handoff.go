package sim

import (
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
)

// Cooperative leader handoff in the simulator (core/paxos/node_handoff.go).
// On seeds that draw it (Shape.Handoffs) the operator restarts the leader's
// machine gracefully: the process hands every journal it leads to a live
// follower (host.HandOffAll, what SIGTERM runs), waits until the handoffs
// left (host.Settled), and only then stops, to come back from its disk a
// moment later. The network keeps every Relinquish it carried, and the
// chaos replays old ones to their successors long after the leadership
// moved on: each must be refused, or installed only where no authority was
// exercised. The existing oracles judge the outcome (one value per slot and
// ballot, durable quorums, linearizable histories), and the gates require
// each path to fire.

// relinquishesMax bounds the Relinquish envelopes the network keeps.
const relinquishesMax = 32

// keptRelinquish is one Relinquish the network carried.
type keptRelinquish struct {
	from paxos.NodeID
	env  host.Envelope
	// sent is when it was first sent: a replay is that copy delayed, so
	// a loss of every copy in flight (rot.go's beyond-the-budget loss)
	// takes it too.
	sent int64
}

// keepRelinquishes remembers the Relinquish envelopes of a batch.
func (n *network) keepRelinquishes(from paxos.NodeID, batch []host.Envelope) {
	for _, e := range batch {
		if e.Msg.Type != paxos.MsgRelinquish {
			continue
		}
		if len(n.relinquishes) >= relinquishesMax {
			n.relinquishes = n.relinquishes[1:]
		}
		n.relinquishes = append(n.relinquishes, keptRelinquish{from: from, env: e, sent: n.w.sched.now})
	}
}

// handoffChaos is the handoff events of the chaos window, on seeds that
// draw them: every 80–300 ms one of a graceful restart of the leader's
// machine, an operator's handoff (Admin.Handoff, to a named member or to
// the one the leader finds most caught up), a replayed Relinquish, or a
// successor crashed and handed its own authority again.
func (w *World) handoffChaos() {
	if !w.shape.Handoffs || w.sched.now >= w.chaosEnd {
		return
	}
	w.sched.after(w.g.between(80*ms, 300*ms), lbl("handoff chaos"), func() {
		w.handoffFault()
		w.handoffChaos()
	})
}

func (w *World) handoffFault() {
	if w.sched.now >= w.chaosEnd || w.calm() {
		return // over, or calm for a hold to be judged (hold.go)
	}
	g := w.g
	l := w.leaderNode()
	if l != 0 && g.pct(40) && w.successorAuthority(w.proc(l)) {
		return
	}
	switch k := g.intn(10); {
	case k < 3 && len(w.net.relinquishes) > 0:
		k := w.net.relinquishes[g.intn(len(w.net.relinquishes))]
		w.counts.RelinquishReplays++
		w.sched.note("replay %s", k.env.Msg)
		to := k.env.Msg.To
		w.sched.after(w.shape.LatencyMin, lbl("replay Relinquish n%d→n%d", uint64(k.from), uint64(to)), func() {
			w.net.deliver(k.from, to, []host.Envelope{k.env}, k.sent)
		})
	case k < 7 && l != 0:
		js := w.shape.Journals[g.intn(len(w.shape.Journals))]
		var to paxos.NodeID
		if g.pct(70) {
			servers := w.shape.Servers()
			to = servers[g.intn(len(servers))]
		}
		w.operatorSend(l, host.Call{Kind: host.CallHandoff, Handoff: host.HandoffRequest{Journal: js.ID, To: to}}, false)
	case l != 0 && w.downCount() < w.downBudget():
		w.gracefulRestart(w.proc(l))
	}
}

// successorAuthority targets the durable frontier: a successor that leads
// an inherited authority crashes (perhaps before its own records of the
// rounds it opened are durable), reboots at once, and is handed the very
// Relinquish that made it leader again, before any other ballot reaches
// it. It must refuse the authority if it exercised it: its log holds a
// round at that ballot at or above the frontier. It reports whether it
// ran.
func (w *World) successorAuthority(p *proc) bool {
	if p == nil || !p.up || p.h == nil {
		return false
	}
	var kept *keptRelinquish
	for i := len(w.net.relinquishes) - 1; i >= 0; i-- {
		k := w.net.relinquishes[i]
		if k.env.Msg.To != p.id {
			continue
		}
		if n := p.h.Node(k.env.Journal); n != nil && n.Inherited() && n.LeaderBallot() == k.env.Msg.Ballot {
			kept = &k
			break
		}
	}
	if kept == nil {
		return false
	}
	w.counts.RelinquishReplays++
	if w.g.pct(50) {
		p.crashAfterSync = true
	} else {
		w.crash(p, "successor before sync")
	}
	k := *kept
	w.sched.after(w.g.between(ms, 5*ms), lbl("successor n%d reboots", uint64(p.id)), func() {
		if p.up {
			w.crash(p, "successor")
		}
		if p.downForGood {
			return
		}
		w.start(p, false)
		w.net.deliver(k.from, p.id, []host.Envelope{k.env}, k.sent)
	})
	return true
}

// gracefulRestart is SIGTERM and a supervisor's restart, as paros serve
// runs it: hand on (an inherited leadership re-elects itself first), call
// again until nothing waits and the handoffs left, bounded, then stop and
// come back.
func (w *World) gracefulRestart(p *proc) {
	if p == nil || !p.up || p.h == nil {
		return
	}
	inc := p.inc
	w.sched.note("graceful restart n%d", p.id)
	deadline := w.sched.now + 300*ms
	handed := 0
	var step func()
	step = func() {
		if !p.up || p.inc != inc || p.h == nil {
			return // crashed meanwhile: the chaos already restarts it
		}
		n, waiting := p.h.HandOffAll()
		handed += n
		p.after()
		if !p.up || p.inc != inc {
			return
		}
		if waiting == 0 && p.h.Settled() || w.sched.now >= deadline {
			if handed > 0 {
				w.counts.GracefulHandoffs++
			}
			w.crash(p, "graceful restart")
			w.restartLater(p, w.g.between(20*ms, 300*ms))
			return
		}
		w.sched.after(ms, lbl("graceful restart n%d waits", uint64(p.id)), step)
	}
	step()
}
