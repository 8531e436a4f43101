package sim

import (
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
)

// The chaos schedule: during the chaos window, every few tens of
// milliseconds one fault family drawn among those this seed enabled.
// Faults: crash at a durability seam (before sync — unsynced writes lost —
// or after sync before send) and restart from the synced disk; a long
// outage that strands a node below the cluster's floor; partitions
// (symmetric, asymmetric, isolate the leader); pauses; a failed sync on one
// journal (quarantine); rot of one durable record; a wiped disk (the boot
// must be refused as amnesia); a restart under an edited configuration
// (refused, then restarted as configured).

func (w *World) chaos() {
	if w.sched.now >= w.chaosEnd {
		return
	}
	w.sched.after(w.g.between(20*ms, 250*ms), lbl("chaos"), func() {
		w.fault()
		w.chaos()
	})
}

func (w *World) fault() {
	if w.sched.now >= w.chaosEnd || w.calm() {
		return // over, or calm for a hold to be judged (hold.go)
	}
	s := w.shape
	g := w.g
	switch k := g.intn(9); {
	case k == 0 && s.Crashes, k == 1 && s.Crashes:
		p := w.pickUp()
		if p == nil || w.downCount() >= w.downBudget() {
			return
		}
		if g.pct(40) {
			p.crashAfterSync = true // dies at its next sync, before it hears
			return
		}
		w.crash(p, "before sync")
		down := g.between(50*ms, 1500*ms)
		if s.LongOutage && g.pct(30) {
			down = g.between(2000*ms, 4000*ms)
			w.counts.LongOutages++
		}
		w.restartLater(p, down)
	case k == 2 && s.Partitions:
		side := map[paxos.NodeID]bool{}
		if l := w.leaderNode(); l != 0 && g.pct(50) {
			side[l] = true
		} else {
			for _, n := range s.Procs() {
				if g.pct(35) {
					side[n] = true
				}
			}
		}
		asym := g.pct(30)
		w.net.partition(side, asym)
		w.counts.Partitions++
		w.sched.note("partition %v asym=%v", keys(side), asym)
		w.sched.after(g.between(100*ms, 1500*ms), lbl("heal"), func() { w.net.heal() })
	case k == 3 && s.Pauses:
		p := w.pickUp()
		if l := w.leaderNode(); l != 0 && g.pct(50) {
			p = w.proc(l)
		}
		if p == nil {
			return
		}
		p.pausedUntil = w.sched.now + g.between(50*ms, 600*ms)
		w.counts.Pauses++
		w.sched.note("pause n%d", p.id)
		if s.StaleLeader && p.h != nil {
			// The stale leader: while it sleeps a successor is elected, and
			// the successor's news (any message at a higher ballot) reaches
			// it only a while after it wakes. Meanwhile it keeps leading on
			// its own ballot, and only the acceptors' promises stop it.
			j := s.Journals[0].ID
			if n := p.h.Node(j); n != nil && n.IsLeader() {
				p.stale = staleView{journal: j, ballot: n.LeaderBallot(), until: p.pausedUntil + g.between(30*ms, 150*ms)}
				w.counts.StaleLeaders++
			}
		}
	case k == 4 && s.DiskFaults:
		p := w.pickUp()
		if p != nil {
			j := s.Journals[g.intn(len(s.Journals))].ID
			if p.registry != nil && (p.stores[j] == nil || g.pct(50)) {
				j = registryJournal
			}
			p.failNext[j] = true
		}
	case k == 5 && s.Rot:
		w.rotFault()
	case k == 6 && s.Wipe && !w.wipedOnce:
		p := w.pickUp()
		if p == nil || w.downCount() > 0 || w.wipeBreaksMatchmakers(p) {
			return
		}
		w.wipedOnce = true
		w.crash(p, "wipe")
		for _, j := range s.Journals {
			if st := p.stores[j.ID]; st != nil {
				st.Wipe()
			}
		}
		if p.registry != nil {
			p.registry.Wipe()
		}
		p.wiped = true
		w.counts.Wipes++
		w.restartLater(p, g.between(50*ms, 500*ms))
	case k == 7 && s.EditConfig:
		p := w.pickUp()
		if p == nil || w.downCount() >= w.downBudget() {
			return
		}
		w.crash(p, "operator restart")
		w.sched.after(g.between(20*ms, 200*ms), lbl("edited restart n%d", uint64(p.id)), func() {
			if p.up || p.wiped {
				return
			}
			w.counts.EditedRestarts++
			w.start(p, true)
			w.crash(p, "operator fixes the configuration")
			w.restartLater(p, g.between(20*ms, 300*ms))
		})
	}
}

func (w *World) restartLater(p *proc, d int64) {
	w.sched.after(d, lbl("restart n%d", uint64(p.id)), func() {
		if !p.up && !p.downForGood {
			w.start(p, false)
		}
	})
}

// downBudget keeps crashes from taking more than a minority down at once,
// so the chaos window makes progress too (a full outage is its own fault).
func (w *World) downBudget() int { return (len(w.shape.Nodes) - 1) / 2 }

func (w *World) downCount() int {
	n := 0
	for _, p := range w.procs {
		if !p.up && !p.downForGood && !p.replica() {
			n++
		}
	}
	return n
}

func (w *World) pickUp() *proc {
	var up []*proc
	for _, p := range w.procs {
		if p.up && !p.replica() { // replicas have their own attrition (replica.go)
			up = append(up, p)
		}
	}
	if len(up) == 0 {
		return nil
	}
	return up[w.g.intn(len(up))]
}

// leaderNode is a node leading the first journal, if any.
func (w *World) leaderNode() paxos.NodeID {
	j := w.shape.Journals[0].ID
	for _, p := range w.procs {
		if p.up {
			if n := p.h.Node(j); n != nil && n.IsLeader() {
				return p.id
			}
		}
	}
	return 0
}

func keys(m map[paxos.NodeID]bool) []paxos.NodeID {
	var out []paxos.NodeID
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

var _ = journal.ID{}
