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
		n.relinquishes = append(n.relinquishes, keptRelinquish{from: from, env: e})
	}
}

// handoffFault is one handoff event of the chaos window: a graceful
// restart of the leader's machine, or a replayed Relinquish.
func (w *World) handoffFault() {
	g := w.g
	if len(w.net.relinquishes) > 0 && g.pct(35) {
		k := w.net.relinquishes[g.intn(len(w.net.relinquishes))]
		w.counts.RelinquishReplays++
		w.sched.note("replay %s", k.env.Msg)
		to := k.env.Msg.To
		w.sched.after(w.shape.LatencyMin, lbl("replay Relinquish n%d→n%d", uint64(k.from), uint64(to)), func() {
			w.net.deliver(k.from, to, []host.Envelope{k.env}, w.sched.now)
		})
		return
	}
	l := w.leaderNode()
	if l == 0 || w.downCount() >= w.downBudget() {
		return
	}
	w.gracefulRestart(w.proc(l))
}

// gracefulRestart is SIGTERM and a supervisor's restart: hand on, wait for
// the handoffs to leave (bounded, like paros serve's), stop, come back.
func (w *World) gracefulRestart(p *proc) {
	if p == nil || !p.up || p.h == nil {
		return
	}
	inc := p.inc
	handed := p.h.HandOffAll()
	p.after()
	w.sched.note("graceful restart n%d: %d handed on", p.id, handed)
	deadline := w.sched.now + 200*ms
	var wait func()
	wait = func() {
		if !p.up || p.inc != inc {
			return // crashed meanwhile: the chaos already restarts it
		}
		if p.h.Settled() || w.sched.now >= deadline {
			if handed > 0 {
				w.counts.GracefulHandoffs++
			}
			w.crash(p, "graceful restart")
			w.restartLater(p, w.g.between(20*ms, 300*ms))
			return
		}
		w.sched.after(ms, lbl("graceful restart n%d waits", uint64(p.id)), wait)
	}
	wait()
}
