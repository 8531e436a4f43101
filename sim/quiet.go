package sim

import (
	"slices"

	"github.com/parosdb/paros/core/journal"
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
	if victim == nil || w.downCount() >= w.downBudget() {
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
