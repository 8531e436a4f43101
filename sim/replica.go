package sim

import (
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
)

// The replica tier in the simulator. Replicas are their own process group
// (Shape.Replicas, 0–2 per seed): durable processes whose host runs every
// journal as a replica node, over their own simulated disks. Their disks
// sit outside the rot budget (a replica's record is never a copy a quorum
// needs) and they are killed by their own attrition, below, not by the
// acceptors' crash budget. Readers send about half their reads to
// replicas, and the same client history judges them; every check of a
// node's walk judges theirs, and convergence includes them.

// replicaChaos is the replicas' attrition during the chaos window: a crash
// at a durability seam and a restart from disk (sometimes after a long
// outage, so the acceptors truncate past the replica's chosen prefix and
// it must jump to the trim point), a pause, or a failed sync.
func (w *World) replicaChaos() {
	if len(w.shape.Replicas) == 0 || w.sched.now >= w.chaosEnd {
		return
	}
	w.sched.after(w.g.between(100*ms, 600*ms), lbl("replica chaos"), func() {
		w.replicaFault()
		w.replicaChaos()
	})
}

func (w *World) replicaFault() {
	if w.sched.now >= w.chaosEnd {
		return
	}
	g := w.g
	p := w.proc(w.shape.Replicas[g.intn(len(w.shape.Replicas))])
	if !p.up || w.unjoined(p) {
		return
	}
	switch k := g.intn(12); {
	case k >= 10:
		w.changeReplicas()
	case k < 5:
		if g.pct(30) {
			p.crashAfterSync = true
			return
		}
		w.crash(p, "replica attrition")
		down := g.between(50*ms, 1500*ms)
		if g.pct(40) {
			down = g.between(1500*ms, 4000*ms)
			w.counts.LongOutages++
		}
		w.restartLater(p, down)
	case k < 7:
		p.pausedUntil = w.sched.now + g.between(50*ms, 600*ms)
		w.counts.Pauses++
		w.sched.note("pause replica n%d", p.id)
	case k < 8:
		p.failNext[w.shape.Journals[g.intn(len(w.shape.Journals))].ID] = true
	}
}

// changeReplicas is the operator adding or removing a replica machine:
// one listed replica leaves the list, or one that left comes back. Every
// process learns the new list on its own, within 0–50 ms (no quorum
// depends on it), and a process that is down learns it when it restarts.
func (w *World) changeReplicas() {
	g := w.g
	var removed []paxos.NodeID
	for _, id := range w.shape.Replicas {
		if !slices.Contains(w.replicaSet, id) && !w.unjoined(w.proc(id)) {
			removed = append(removed, id)
		}
	}
	next := slices.Clone(w.replicaSet)
	if len(removed) > 0 && (len(next) == 0 || g.pct(50)) {
		next = append(next, removed[g.intn(len(removed))])
		slices.Sort(next)
		w.replicaReadds++
	} else if len(next) > 0 {
		i := g.intn(len(next))
		next = slices.Delete(next, i, i+1)
	} else {
		return // the only replica has not joined yet
	}
	w.setReplicas(next)
}

// setReplicas is the operator's new replica list: every process learns it
// within 0–50 ms, and one that is down learns it when it restarts.
//
// The operator is one sequential actor: its command reaches every machine
// before it issues the next, so a machine never takes an older list after
// a newer one (the two sources of changes, the replicas' attrition and a
// replica joining, may otherwise overlap within the 50 ms). Lists carry
// the operator's sequence number, and a process that booted with a newer
// list, or took one, skips an older list arriving late.
func (w *World) setReplicas(next []paxos.NodeID) {
	g := w.g
	w.replicaSet = next
	w.replicaSeq++
	seq := w.replicaSeq
	w.counts.ReplicaChanges++
	w.sched.note("operator sets the replicas to %v", next)
	for _, p := range w.procs {
		inc := p.inc
		w.sched.after(g.between(0, 50*ms), lbl("replicas → n%d", uint64(p.id)), func() {
			if !p.up || p.inc != inc || p.h == nil {
				return // it learns the list when it restarts
			}
			if p.replicaSeq > seq {
				return // a newer list reached it first: this command was finished before it
			}
			p.replicaSeq = seq
			if err := p.h.SetReplicas(next); err != nil {
				w.audit.violation("replica: the operator's replica list is accepted", "n%d: %v", p.id, err)
			}
			p.after()
		})
	}
}

// readServer picks where a reader's call goes: with replicas, half the
// reads go to a replica.
func (cs *clients) readServer(c *client) paxos.NodeID {
	if r := cs.w.shape.Replicas; len(r) > 0 && cs.w.g.pct(50) {
		return r[cs.w.g.intn(len(r))]
	}
	return cs.server(c)
}

// replicaServed counts the reads replicas answered: every served Read is
// a quorum read (confirmed by a Phase-1 quorum's watermarks), and one that
// returned records, or the trim point, is a journal read.
func (cs *clients) replicaServed(f *inflight, rr journal.ReadReply) {
	if !rr.Served || !slices.Contains(cs.w.shape.Replicas, f.to) {
		return
	}
	cs.w.audit.gate("replica: a replica served a quorum read")
	if len(rr.Records) > 0 || rr.BelowFloor {
		cs.w.audit.gate("replica: a replica served a journal read")
	}
}

// acceptedWrite records, at a slot's first fold, a write the journal
// accepted: its reply owner must apply it (replyOwners).
func (a *audit) acceptedWrite(j journal.ID, c paxos.Applied) {
	if len(a.w.shape.Replicas) > 0 && c.Command.Kind == journal.KindWrite && c.Outcome.Kind == journal.Accepted {
		a.writeSlots[j] = append(a.writeSlots[j], c.Slot)
	}
}

// replyOwners checks the end of the tail: the reply owner of every slot
// that holds an accepted write (replica s % replica_count, the one that
// would answer the client) applied it. A replica still down is skipped
// (none is: the recovery restarts every process).
func (a *audit) replyOwners() {
	for _, js := range a.w.shape.Journals {
		if a.w.lostJournal(js.ID) {
			continue
		}
		set := a.w.replicaSet
		if len(set) == 0 {
			continue
		}
		for _, s := range a.writeSlots[js.ID] {
			owner := set[s%paxos.Slot(len(set))]
			p := a.w.proc(owner)
			if !p.up || p.h == nil {
				continue
			}
			n := p.h.Node(js.ID)
			if n == nil {
				continue
			}
			if cfg := n.ReplyOwner(s); cfg != owner {
				a.violation("replica: the reply owner of a slot is replica s % replica_count", "%s slot %d: node says %d, want %d", short(js.ID), s, cfg, owner)
			}
			if n.Applied() < s {
				a.violation("replica: the reply owner of an acknowledged slot applied it", "%s slot %d: owner n%d applied %d", short(js.ID), s, owner, n.Applied())
				continue
			}
			a.gate("replica: the reply owner of an acknowledged slot applied it")
		}
	}
}
