package sim

import (
	"slices"

	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
)

// Matchmaker-set handovers in the simulator. On a seed that draws them
// (Shape.Handovers) the world has spare matchmaker machines (fresh: a
// member of no set until a handover names them), and the operator
// replaces the matchmaker set during the chaos through Admin calls, as
// parosctl matchmakers set does: a set with a member gone for good (a
// wiped matchmaker) is replaced first, otherwise a random set of the live
// matchmaker machines is proposed now and then. The call goes to a random
// live machine, so two handovers can race, and the machine that drives
// one can crash in the middle of it: whoever meets the set stopped with no
// successor then finishes it.
//
// The audit keeps the chosen set of every generation: every set a
// matchmaker was activated in or founded, every chain link it records,
// every set a process keeps for its next boot, every set an operator's
// handover reported chosen. Two different sets for one generation are a
// violation.

// MatchmakerSpareIDBase is the first spare matchmaker machine's id.
const MatchmakerSpareIDBase paxos.NodeID = 500

// matchmakerMachines are every machine that runs a matchmaker role.
func (s Shape) matchmakerMachines() []paxos.NodeID {
	return append(slices.Clone(s.Matchmakers), s.MatchmakerSpares...)
}

// chosenSet records s as the chosen set of its generation (seen how).
func (a *audit) chosenSet(s paxos.MatchmakerSet, how string) {
	if s.IsZero() {
		return
	}
	if a.sets == nil {
		a.sets = map[uint64]paxos.MatchmakerSet{}
	}
	if old, ok := a.sets[s.Generation]; ok {
		if !old.Equal(s) {
			a.violation("matchmakers: at most one set is chosen per generation", "generation %d: %s and %s (%s)", s.Generation, old, s, how)
		}
		return
	}
	a.sets[s.Generation] = s.Clone()
	a.w.sched.note("matchmakers: generation %d is %v (%s)", s.Generation, s.Members, how)
}

// wipeBreaksMatchmakers reports whether wiping p would be a permanent loss
// beyond a fault budget, which no protocol survives: the newest chosen
// matchmaker set (or one an operator's handover in flight names) left
// without a majority of machines that can ever serve it (a two-member set
// a finisher shrank to tolerates none), or a journal's grid left without a
// full column.
func (w *World) wipeBreaksMatchmakers(p *proc) bool {
	// A set an operator's handover in flight names may be chosen any
	// moment, with p in it: a wipe then would leave it short for good.
	for _, oc := range w.opCalls {
		if oc.call.Kind == host.CallMatchmakers && slices.Contains(oc.call.Matchmakers.Members, p.id) {
			return true
		}
	}
	// A grid needs every column for Phase 2 (CheckQuorum): a member lost
	// for good leaves no leader that could commit, nor reconfigure it away.
	for _, js := range w.shape.Journals {
		sys := w.system()
		for _, q := range w.procs {
			if q.up && q.h != nil && !q.replica() {
				if n := q.h.Node(js.ID); n != nil && !n.Configuration().Acceptors.IsZero() {
					sys = n.Configuration().Acceptors
					break
				}
			}
		}
		var alive []paxos.NodeID
		for _, id := range sys.Members() {
			if q := w.proc(id); q != nil && q != p && !q.wiped && !q.downForGood {
				alive = append(alive, id)
			}
		}
		if sys.Contains(p.id) && !sys.Phase2Everywhere(sys.SetOf(alive...)) {
			return true
		}
	}
	set := w.newestSet()
	if !slices.Contains(set.Members, p.id) {
		return false
	}
	left := 0
	for _, id := range set.Members {
		if q := w.proc(id); q != nil && q != p && !q.wiped && !q.downForGood {
			left++
		}
	}
	return left < len(set.Members)/2+1
}

// newestSet is the newest chosen matchmaker set the audit knows (the
// founding set before any handover).
func (w *World) newestSet() paxos.MatchmakerSet {
	out := paxos.MatchmakerSet{Generation: 1, Members: slices.Clone(w.shape.Matchmakers)}
	for g, s := range w.audit.sets {
		if out.Generation < g {
			out = s
		}
	}
	return out.Clone()
}

// handover asks a live node machine to replace the matchmaker set. It
// reports whether it did: a set naming a matchmaker gone for good is
// always replaced, any other only when drawn.
func (w *World) handover(draw bool) bool {
	if !w.shape.Handovers {
		return false
	}
	cur := w.newestSet()
	gone := slices.ContainsFunc(cur.Members, func(id paxos.NodeID) bool { return w.proc(id).downForGood })
	if !gone && !draw {
		return false
	}
	var live []paxos.NodeID
	for _, id := range w.shape.matchmakerMachines() {
		if p := w.proc(id); !p.downForGood && !p.wiped {
			live = append(live, id)
		}
	}
	if len(live) == 0 {
		return false
	}
	g := w.g
	g.r.Shuffle(len(live), func(i, k int) { live[i], live[k] = live[k], live[i] })
	n := min(len(live), []int{3, 3, 3, 1, 5, 4}[g.intn(6)])
	members := slices.Clone(live[:n])
	slices.Sort(members)
	var via []*proc
	for _, p := range w.procs {
		if p.up && p.h != nil && !p.replica() && len(p.h.Journals()) > 0 && !p.h.MatchmakerSet().IsZero() {
			via = append(via, p)
		}
	}
	if len(via) == 0 {
		return false
	}
	to := via[g.intn(len(via))]
	w.counts.HandoversAsked++
	w.sched.note("operator replaces the matchmakers %s by %v via n%d", cur, members, to.id)
	w.operatorSend(to.id, host.Call{Kind: host.CallMatchmakers, Matchmakers: host.MatchmakersRequest{Members: members}}, false)
	return true
}

// handoverReply judges the answer to the operator's handover.
func (w *World) handoverReply(p *proc, r host.Response) {
	switch refusal := r.Admin.Refusal; {
	case refusal == "" && r.Admin.Chosen.IsZero():
		w.audit.violation("matchmakers: a handover answered done names the set chosen", "n%d answered %+v", p.id, r.Admin)
	case refusal == "":
		w.audit.chosenSet(r.Admin.Chosen, "an operator's handover")
		w.counts.HandoversDone++
	case refusal == "busy" || refusal == "abandoned" || refusal == "unavailable":
		// Another handover runs from that machine, or this one made no
		// progress in its budget (the chaos): the operator asks again.
	default:
		w.audit.violation("matchmakers: a valid handover is started", "n%d refused: %s %s", p.id, refusal, r.Admin.Detail)
	}
}
