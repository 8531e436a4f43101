package sim

import (
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

// The quiet-leader fault: on most seeds with quiescence on, early in the
// quiet tail (every partition healed, every process back), the machine
// leading the most quiet journals is killed and held down. Its quiet
// journals have no beat of their own to lose, and idle ones no client
// whose call would wake them: only its machine beat going silent does
// (host/quiet.go). Once a bound has passed (ten election timeouts, plus
// slack), every journal it led quietly must have a leader elsewhere; then
// it comes back.

// quietChaos schedules the fault.
func (w *World) quietChaos() {
	if w.shape.Tun.StayAwake || !w.g.pct(70) {
		return
	}
	at := w.chaosEnd + w.g.between(300*ms, 1500*ms)
	w.sched.at(at, lbl("kill the machine leading the most quiet journals"), w.killQuietLeader)
}

// killQuietLeader crashes the node machine that leads the most quiet
// journals, holds it down, and schedules the check.
func (w *World) killQuietLeader() {
	var victim *proc
	var led []journal.ID
	for _, p := range w.procs {
		if !p.up || p.h == nil || p.replica() {
			continue
		}
		var mine []journal.ID
		for _, js := range w.shape.Journals {
			if n := p.h.Node(js.ID); n != nil && n.IsLeader() && n.Quiescent() {
				mine = append(mine, js.ID)
			}
		}
		if len(mine) > len(led) {
			victim, led = p, mine
		}
	}
	if victim == nil || w.downCount() >= w.downBudget() || !w.electableWithout(victim) {
		return
	}
	w.crash(victim, "leader of quiet journals")
	victim.heldDown = true
	w.counts.QuietLeaderKills++
	w.sched.note("killed n%d, leader of %d quiet journals", uint64(victim.id), len(led))
	bound := 10*int64(w.shape.Tun.ElectionTicks)*int64(w.shape.Tun.TickMs)*ms + 500*ms
	w.sched.after(bound, lbl("quiet journals of n%d have leaders again", uint64(victim.id)), func() {
		w.audit.journalsLed("liveness: a quiet journal whose leader's machine died gets a leader back within a bound of the tail's start",
			func(js JournalShape) bool { return slices.Contains(led, js.ID) })
		w.audit.gate("quiescence: the quiet journals of a killed leader machine are led again")
		victim.heldDown = false
		if !victim.up && !victim.downForGood {
			w.start(victim, false)
		}
	})
}

// electableWithout reports whether every journal keeps a Phase-1 quorum
// up without victim, in its newest configuration and in every older one
// that names a machine gone for good. The fault budget counts crashed
// machines only; a wiped machine is down too, and a configuration it
// leaves one failure short elects no one once victim dies. Replacing the
// wiped machine does not help at once: the operator's reconfiguration
// names a newer configuration whose quorum is up, but its first leader
// must still run Phase 1 in the older ones (seed 285: a flexible(4,2)
// journal with n4 wiped and n3 killed), so the check after the bound
// would owe a leader no one can become. The audit cannot tell a collected
// configuration from one still needed, so a collected one is checked too:
// at worst the kill is skipped.
func (w *World) electableWithout(victim *proc) bool {
	gone := func(id paxos.NodeID) bool { return w.proc(id) != nil && w.proc(id).downForGood }
	for _, js := range w.shape.Journals {
		var newest paxos.Configuration
		for _, p := range w.procs {
			if p.up && p.h != nil && !p.replica() {
				if n := p.h.Node(js.ID); n != nil && newest.Ballot.Less(n.Configuration().Ballot) {
					newest = n.Configuration()
				}
			}
		}
		systems := []quorum.System{newest.Acceptors}
		if newest.Acceptors.IsZero() {
			systems[0] = w.system()
		}
		for _, bs := range w.audit.cfg.systems[js.ID] {
			if slices.ContainsFunc(bs.sys.Members(), gone) {
				systems = append(systems, bs.sys)
			}
		}
		for _, sys := range systems {
			var up []paxos.NodeID
			for _, p := range w.procs {
				if p != victim && p.up && p.h != nil && !p.replica() && sys.Contains(p.id) && p.h.Node(js.ID) != nil {
					up = append(up, p.id)
				}
			}
			if sys.Phase1(sys.SetOf(up...), 0) != quorum.Won {
				return false
			}
		}
	}
	return true
}
