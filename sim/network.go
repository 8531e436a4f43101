package sim

import (
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
)

// network carries Delivers between processes with drawn latency (so
// reordering), drops, duplicates, partitions and holds (hold.go).
type network struct {
	w *World
	// blocked[from][to]: a partition cuts that direction.
	blocked map[[2]paxos.NodeID]bool
	// flushed: every message sent before it is lost (a loss beyond the
	// budget takes the copies in flight with it, rot.go).
	flushed int64
	// relinquishes are the Relinquish envelopes carried (handoff.go).
	relinquishes []keptRelinquish
}

func (n *network) cut(from, to paxos.NodeID) bool { return n.blocked[[2]paxos.NodeID{from, to}] }

func (n *network) send(from, to paxos.NodeID, batch []host.Envelope) {
	w := n.w
	w.counts.Messages += uint64(len(batch))
	w.audit.sent(from, batch)
	w.audit.observeVotes(from, batch)
	w.audit.forgedVotes(from, batch)
	n.keepRelinquishes(from, batch)
	if batch = w.unheld(batch); len(batch) == 0 {
		return // every envelope was of a held journal (hold.go)
	}
	if n.cut(from, to) {
		w.counts.Partitioned++
		return
	}
	if w.g.pct(w.shape.DropPct) {
		w.counts.Dropped++
		return
	}
	copies := 1
	if w.g.pct(w.shape.DupPct) {
		copies = 2
		w.counts.Duplicated++
	}
	sent := w.sched.now
	for range copies {
		d := w.g.between(w.shape.LatencyMin, w.shape.LatencyMax)
		if w.g.pct(w.shape.SlowPct) {
			d += w.g.between(20*ms, 400*ms)
			w.counts.Delayed++
		}
		w.sched.after(d, lbl("deliver n%d→n%d ×%d", uint64(from), uint64(to), uint64(len(batch))), func() { n.deliver(from, to, batch, sent) })
	}
}

func (n *network) deliver(from, to paxos.NodeID, batch []host.Envelope, sent int64) {
	if sent < n.flushed {
		return // lost with the copies beyond the budget
	}
	w := n.w
	if batch = w.unheld(batch); len(batch) == 0 {
		return // sent before a hold began, arriving while it lasts
	}
	if pp := w.proxyByID(to); pp != nil {
		if pp.up {
			pp.ph.OnDeliver(from, batch)
		}
		return
	}
	p := w.proc(to)
	if p == nil || !p.up {
		return // no process: an answer to the impostor of forgery.go
	}
	if w.sched.now < p.pausedUntil {
		w.sched.at(p.pausedUntil, lbl("deliver n%d→n%d ×%d (after pause)", uint64(from), uint64(to), uint64(len(batch))), func() { n.deliver(from, to, batch, sent) })
		return
	}
	if st := p.stale; w.sched.now < st.until {
		var now, later []host.Envelope
		for _, e := range batch {
			if e.Journal == st.journal && st.ballot.Less(e.Msg.Ballot) {
				later = append(later, e)
			} else {
				now = append(now, e)
			}
		}
		if len(later) > 0 {
			w.sched.at(st.until, lbl("deliver n%d→n%d ×%d (held from a stale leader)", uint64(from), uint64(to), uint64(len(later))),
				func() { n.deliver(from, to, later, sent) })
		}
		batch = now
		if len(batch) == 0 {
			return
		}
	}
	p.h.OnDeliver(from, batch)
	p.after()
}

// partition cuts the links between side and the rest; one-way cuts only
// from side outward when asym.
func (n *network) partition(side map[paxos.NodeID]bool, asym bool) {
	n.blocked = map[[2]paxos.NodeID]bool{}
	for _, a := range n.w.shape.Procs() {
		for _, b := range n.w.shape.Procs() {
			if side[a] && !side[b] {
				n.blocked[[2]paxos.NodeID{a, b}] = true
				if !asym {
					n.blocked[[2]paxos.NodeID{b, a}] = true
				}
			}
		}
	}
}

func (n *network) heal() { n.blocked = nil }
