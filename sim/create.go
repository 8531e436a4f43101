package sim

import (
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/memstore"
)

// Journals created at run time (drawn per seed: JournalShape.CreatedAtMs).
// A journal the control plane creates is formatted by each of its members
// when that member's follower folds the creation, a moment apart, and not
// at all on a member that is down then (it formats it when it is back).
// Each member here calls host.AddJournal, the call the machine's follower
// makes, at its own time within createSpreadMs of the creation; one that
// is down or paused tries again until it can. The journal's first member
// in the election order campaigns at once (Node.CampaignSoon), and eagerly:
// it asks its silent peers again at every tick until they serve the
// journal. The journal's clients start once it is created, and it is
// judged like every other journal (linearizability, convergence, a leader
// at the end of the tail).

// createSpreadMs bounds how far apart the members format a created
// journal.
const createSpreadMs = 60

// createRetryMs is how long a member that could not format the journal
// (down, paused) waits before trying again.
const createRetryMs = 50

// createChaos schedules every created journal's formatting on its members.
func (w *World) createChaos() {
	for _, js := range w.shape.Journals {
		if js.CreatedAtMs == 0 {
			continue
		}
		for _, id := range w.shape.Nodes {
			p := w.proc(id)
			at := js.CreatedAtMs*ms + w.g.between(0, createSpreadMs*ms)
			w.sched.at(at, lbl("create j%x on n%d", js.ID.Journal, uint64(id)), func() { w.createOn(p, js) })
		}
	}
}

// createOn formats journal js on member p and starts serving it, or tries
// again later.
func (w *World) createOn(p *proc, js JournalShape) {
	if _, done := p.joined[js.ID]; done || p.retired[js.ID] || p.downForGood {
		return
	}
	if !p.up || p.h == nil || w.sched.now < p.pausedUntil {
		w.sched.after(createRetryMs*ms, lbl("create j%x on n%d again", js.ID.Journal, uint64(p.id)), func() { w.createOn(p, js) })
		return
	}
	// As a created journal is specified: its bootstrap configuration, no
	// replica tier and no proxies.
	s := host.JournalSpec{ID: js.ID, Members: w.shape.Nodes, Quorum: w.shape.Quorum, Mode: js.Mode, Claim: storage.ClaimFirstBoot,
		Matchmakers: w.shape.Matchmakers, MatchmakerSet: p.mmset}
	p.stores[js.ID] = memstore.New()
	if err := p.h.AddJournal(s); err != nil {
		w.audit.violation("control plane: a member formats a journal created at run time", "n%d %s: %v", p.id, short(js.ID), err)
		return
	}
	s.Claim = 0
	p.joined[js.ID] = s
	w.sched.note("n%d formats %s, created at run time", p.id, short(js.ID))
	w.audit.gate("control plane: a member formats a journal created at run time")
	p.after()
}
