package sim

import (
	"slices"

	"github.com/parosdb/paros/core/paxos"
)

// A replica machine joining a running cell from an empty disk (drawn per
// seed: Shape.LateReplicaAtMs). The last replica of the shape is in no
// list at first and not started; at its time the operator names it (every
// process learns the new list within 0–50 ms, as Machine.SetReplicas tells
// each machine of the cell), and once they have, the replica starts for
// the first time: it formats a replica store for every journal and learns
// everything from the leaders' beats and catch-ups. Drawn only where
// journals may fall quiet, so that a journal settled before the list
// changed must still beat its new replica: a host that woke the journal's
// node but never visited it again left the replica unserved for good. The
// convergence oracle judges the replica with the others at the end.

// lateReplicaLeadMs bounds how early in the chaos the replica joins: late
// enough that journals have settled, early enough to catch up by the end.
const lateReplicaLeadMs = 400

// drawLateReplica picks, on half the seeds with a replica and quiescence,
// when the last replica joins. Drawn last, so the draws above keep their
// seeds.
func drawLateReplica(g rng, s *Shape) {
	if len(s.Replicas) == 0 || s.Tun.StayAwake || s.ChaosMs < 2*lateReplicaLeadMs || !g.pct(50) {
		return
	}
	s.LateReplicaAtMs = g.between(lateReplicaLeadMs, s.ChaosMs-lateReplicaLeadMs)
}

// lateReplica is the replica that joins late, or 0.
func (s Shape) lateReplica() paxos.NodeID {
	if s.LateReplicaAtMs == 0 {
		return 0
	}
	return s.Replicas[len(s.Replicas)-1]
}

// joinLateReplica schedules the join.
func (w *World) joinLateReplica() {
	id := w.shape.lateReplica()
	if id == 0 {
		return
	}
	w.sched.at(w.shape.LateReplicaAtMs*ms, lbl("operator names replica n%d", uint64(id)), func() {
		next := append(slices.Clone(w.replicaSet), id)
		slices.Sort(next)
		w.setReplicas(next)
		p := w.proc(id)
		w.sched.after(60*ms, lbl("replica n%d joins", uint64(id)), func() {
			p.joinedLate = true
			w.start(p, false)
			w.audit.gate("replica: a replica machine joins a running cell from an empty disk")
		})
	})
}

// unjoined reports whether p is the late replica before it joined: not
// started, in no list, and no fault picks it.
func (w *World) unjoined(p *proc) bool {
	return p.id == w.shape.lateReplica() && !p.joinedLate
}

// replicasHearLeaders checks at the end of the tail that every listed
// replica that is up names its journal's leader: a leader beats its
// replicas at every heartbeat (a journal with replicas never falls quiet),
// so one that does not has stopped beating it. A replica's applied index
// alone would not show it on a journal that took no write since the
// replica joined.
func (a *audit) replicasHearLeaders() {
	checked := false
	for _, js := range a.w.shape.Journals {
		if a.w.lostJournal(js.ID) {
			continue
		}
		var leader *paxos.Node
		for _, p := range a.w.procs {
			if !p.up || p.h == nil || p.replica() {
				continue
			}
			if n := p.h.Node(js.ID); n != nil && n.IsLeader() && (leader == nil || leader.LeaderBallot().Less(n.LeaderBallot())) {
				leader = n
			}
		}
		if leader == nil {
			continue // everyJournalLed judges that
		}
		for _, id := range a.w.replicaSet {
			p := a.w.proc(id)
			if !p.up || p.h == nil {
				continue
			}
			n := p.h.Node(js.ID)
			if n == nil {
				continue
			}
			checked = true
			if n.LeaderHint() != leader.ID() {
				a.violation("replica: every listed replica hears its journal's leader at the end of the tail",
					"%s: replica n%d names n%d, the leader is n%d", short(js.ID), uint64(id), uint64(n.LeaderHint()), uint64(leader.ID()))
			}
		}
	}
	if checked {
		a.gate("replica: every listed replica hears its journal's leader at the end of the tail")
	}
}
