package sim

import (
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/host"
)

// The hold (Shape.Hold): for a window of the chaos the network drops every
// envelope of one journal, to and from every node, as if a partition cut
// that journal alone. Its machines keep running and keep serving its
// siblings; machine beats and handover envelopes carry no journal and
// pass. The held journal's client calls go unanswered or ambiguous, as
// under a partition, and lincheck judges what they saw.
//
// The oracle: the siblings keep committing. A hold shares its machines,
// their disks, mailboxes and timers with its siblings, and nothing of a
// held journal may stall them. To judge that without judging the chaos,
// the window is calm: from a lead-in before it until it ends, no chaos
// family draws a new fault (the replicas' attrition goes on: no commit
// waits for a replica). The faults drawn before it run their course, and
// the judgement starts at the first poll where the world is healthy:
// every acceptor, matchmaker and spare machine up, unpaused and without a
// quarantined journal or an armed fault, every proxy up, no partition and
// no machine gone for good. From there to the hold's end the world must
// stay so (no process restarted, no journal quarantined), the window must
// be long enough for any election, proxy take-back and client timeout to
// play out, and some sibling write must have reached a server early
// enough; then the siblings together must commit a new slot. A hold that
// is judged and whose siblings committed fires the gate.

const (
	holdChaosMsMin = holdLeadMs + 100 + holdMsMax + 100 // the shortest chaos window a hold fits
	holdLeadMs     = 800                                // calm before the hold, for earlier faults to run out
	holdMsMin      = 1800
	holdMsMax      = 2600
	// holdJudgeMs is the shortest healthy stretch the oracle judges, and
	// holdWriteMs how early in it a sibling write must have arrived. Over
	// five hundred judged holds the first sibling commit came at most
	// 370 ms after the judgement started: the bound leaves room for the
	// slowest recovery a correct cell may still be finishing.
	holdJudgeMs = 1500 * ms
	holdWriteMs = 1000 * ms
	holdPoll    = 10 * ms
)

// holdRun is the hold of one run.
type holdRun struct {
	j                  journal.ID
	calmFrom, from, to int64
	on                 bool
	// commits counts, per journal, the slots the audit saw chosen for the
	// first time.
	commits map[journal.ID]int
	// The judgement: when it started (0: not yet), the disturbance
	// signature then, the siblings' commits then, the sibling writes that
	// arrived since, and whether the world stopped being healthy.
	judgeFrom int64
	sig       []int
	base      int
	writes    int
	spoiled   bool
}

// holdChaos schedules the seed's hold.
func (w *World) holdChaos() {
	s := w.shape
	if !s.Hold {
		return
	}
	h := &holdRun{j: s.Journals[s.HoldJournal].ID, from: s.HoldAtMs * ms, commits: map[journal.ID]int{}}
	h.to = h.from + s.HoldMs*ms
	h.calmFrom = h.from - holdLeadMs*ms
	w.hold = h
	w.sched.at(h.from, lbl("hold %x", h.j.Journal), func() {
		h.on = true
		w.counts.Holds++
		w.sched.note("hold %s on every node until %.3fms", short(h.j), float64(h.to)/float64(ms))
		w.holdPoll()
	})
	w.sched.at(h.to, lbl("release %x", h.j.Journal), func() {
		w.holdPoll()
		h.on = false
		w.sched.note("release %s", short(h.j))
		w.holdJudge()
	})
}

// calm reports whether the chaos draws no new fault now: the hold's
// lead-in and the hold itself.
func (w *World) calm() bool {
	h := w.hold
	return h != nil && w.sched.now >= h.calmFrom && w.sched.now < h.to
}

// heldEnvelope reports whether the hold drops e.
func (w *World) heldEnvelope(e host.Envelope) bool {
	h := w.hold
	return h != nil && h.on && e.Handover == nil && !e.MachineBeat && e.Journal == h.j
}

// unheld is batch without the envelopes the hold drops (batch itself when
// it drops none).
func (w *World) unheld(batch []host.Envelope) []host.Envelope {
	if !slices.ContainsFunc(batch, w.heldEnvelope) {
		return batch
	}
	out := make([]host.Envelope, 0, len(batch))
	for _, e := range batch {
		if w.heldEnvelope(e) {
			w.counts.HeldEnvelopes++
			continue
		}
		out = append(out, e)
	}
	return out
}

// holdCommitted counts a slot chosen for the first time.
func (w *World) holdCommitted(j journal.ID) {
	if h := w.hold; h != nil {
		h.commits[j]++
	}
}

// holdCall counts a sibling's write reaching a server while the hold is
// judged, early enough that the window can see it through. Only calls
// that are ordered as slots count: a write, a truncation, and a claim of
// a single-writer journal (a claim of a multi-writer one is refused at
// once).
func (w *World) holdCall(c host.Call) {
	h := w.hold
	if h == nil || h.judgeFrom == 0 || h.spoiled || w.sched.now > h.to-holdWriteMs {
		return
	}
	j := c.Journal()
	if j == h.j || w.lostJournal(j) {
		return
	}
	switch c.Kind {
	case host.CallWrite, host.CallTruncate:
	case host.CallSetLeader:
		if w.journalShape(j).Mode != journal.ModeSingle {
			return
		}
	default:
		return
	}
	h.writes++
}

func (w *World) journalShape(j journal.ID) JournalShape {
	for _, js := range w.shape.Journals {
		if js.ID == j {
			return js
		}
	}
	return JournalShape{}
}

// siblingCommits is the slots the held journal's siblings chose so far
// (a journal lost beyond the budget is halted, and counts for nothing).
func (w *World) siblingCommits() int {
	n := 0
	for _, js := range w.shape.Journals {
		if js.ID != w.hold.j && !w.lostJournal(js.ID) {
			n += w.hold.commits[js.ID]
		}
	}
	return n
}

// holdPoll follows the world's health through the hold: the judgement
// starts at the first healthy poll, and is spoiled by any later poll that
// finds the world unhealthy or disturbed.
func (w *World) holdPoll() {
	h := w.hold
	if !h.on {
		return
	}
	switch {
	case h.spoiled:
		return
	case h.judgeFrom == 0:
		if w.sched.now > h.to-holdJudgeMs {
			return // too late for a judgement
		}
		if w.healthy() {
			h.judgeFrom, h.sig, h.base = w.sched.now, w.disturbance(), w.siblingCommits()
			w.sched.note("hold %s judged from here", short(h.j))
		}
	case !w.healthy() || !slices.Equal(h.sig, w.disturbance()):
		h.spoiled = true
		w.sched.note("hold %s: the world is disturbed, no judgement", short(h.j))
		return
	}
	if w.sched.now < h.to {
		w.sched.after(holdPoll, lbl("hold poll"), w.holdPoll)
	}
}

// holdJudge runs at the hold's end.
func (w *World) holdJudge() {
	h := w.hold
	if h.judgeFrom == 0 || h.spoiled || h.to-h.judgeFrom < holdJudgeMs || h.writes == 0 {
		return
	}
	w.counts.HoldsJudged++
	got := w.siblingCommits() - h.base
	if got == 0 {
		w.audit.violation("journal: a journal keeps committing while a sibling on its nodes is held",
			"%s held on every node from %.3fms, world healthy from %.3fms: %d sibling writes arrived, no sibling slot was chosen by %.3fms",
			short(h.j), float64(h.from)/float64(ms), float64(h.judgeFrom)/float64(ms), h.writes, float64(h.to)/float64(ms))
		return
	}
	w.sched.note("hold %s: siblings chose %d slots", short(h.j), got)
	w.audit.gate("journal: a journal keeps committing while a sibling on its nodes is held")
	if w.shape.Control && h.j == w.shape.Journals[w.shape.ControlJournal].ID {
		w.audit.gate("journal: a tenant's journals keep committing while its control journal is held")
	}
}

// healthy reports whether nothing the chaos did stands in the way of a
// commit: every process but the replicas up, unpaused, not stopped, not
// gone for good, with no fault armed and no journal quarantined; every
// proxy up; no partition.
func (w *World) healthy() bool {
	if len(w.net.blocked) > 0 {
		return false
	}
	now := w.sched.now
	for _, p := range w.procs {
		if p.replica() {
			continue
		}
		if !p.up || p.h == nil || p.downForGood || p.wiped || now < p.pausedUntil || now < p.stale.until ||
			p.crashAfterSync || len(p.failNext) > 0 || len(p.failed) > 0 {
			return false
		}
		if stopped, _ := p.h.Stopped(); stopped {
			return false
		}
		for _, j := range p.h.Journals() {
			if st, _ := p.h.Status(j); st == host.Quarantined {
				return false
			}
		}
	}
	for _, pp := range w.proxies {
		if !pp.up {
			return false
		}
	}
	return true
}

// disturbance is a signature of every restart and quarantine so far: it
// changes when any process but a replica crashes or restarts, when a
// journal is quarantined, when a proxy restarts, when a record rots or a
// partition is drawn.
func (w *World) disturbance() []int {
	out := []int{int(w.counts.Rots), int(w.counts.Partitions)}
	for _, p := range w.procs {
		if p.replica() {
			continue
		}
		q := 0
		if p.h != nil {
			q = int(p.h.Counters().Quarantines + p.h.Counters().MatchmakerFaults)
		}
		out = append(out, p.inc, q)
	}
	for _, pp := range w.proxies {
		out = append(out, pp.inc)
	}
	return out
}
