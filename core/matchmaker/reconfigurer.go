package matchmaker

import (
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

// Reconfigurer drives one handover of a matchmaker set to the next
// generation (handover.go has the matchmaker's side). It is sans-IO: Step
// each answer, Tick it, send what Messages hands out. It holds nothing
// durable: a reconfigurer that dies is started again from Stop, and its
// decree opens above every promise the stop quorum reports, so it never
// reuses a round of an earlier incarnation that reached a quorum.
//
// Whoever meets a generation stopped with no successor finishes the
// handover: NewFinisher proposes the members of the old set that answered
// its stop (a live majority of it), and the decree adopts any proposal
// already voted, so the finisher completes whichever handover was under
// way.
type Reconfigurer struct {
	id       paxos.NodeID
	opts     ReconfigurerOptions
	from     Set
	proposal Set
	// finisher: the proposal is the stop quorum, known once it answered.
	finisher bool
	step     ReconfigurerStep
	// idle counts the ticks since the phase last made progress.
	idle int

	// Stop: each member's answer pages; floor the highest decree promise
	// they reported.
	stops map[paxos.NodeID]*stopAnswer
	floor paxos.Ballot
	// recon is the reconstruction, paged (RegistryPage journals a page).
	recon [][]JournalRegistry
	// ballot is the decree ballot (and the bootstrap's origin).
	ballot paxos.Ballot
	// backoff counts the ticks a decree a higher ballot refused waits
	// before it reopens at ballot (0: it is open).
	backoff int
	// booted holds each proposed member's bootstrap pages acknowledged.
	booted map[paxos.NodeID][]bool
	decree *paxos.DecreeProposer[Set]
	// chosen is the decree's outcome once known; linked and activated the
	// members that answered it: recorded the link (from), activated it
	// (chosen).
	chosen    Set
	linked    map[paxos.NodeID]bool
	activated map[paxos.NodeID]bool
	out       []Handover
	counters  ReconfigurerCounters
}

// ReconfigurerOptions are the driver's budgets, in ticks.
type ReconfigurerOptions struct {
	// ResendTicks: what a phase waits on is asked again every ResendTicks.
	ResendTicks int
	// PhaseBudget: a phase that makes no progress for PhaseBudget ticks is
	// abandoned (a frozen generation must not wedge the cell: whoever
	// meets it next finishes the handover).
	PhaseBudget int
}

// ReconfigurerCounters are observation only.
type ReconfigurerCounters struct {
	Stopped, Bootstrapped, DecreeRounds, Adopted, Published uint64
}

// ReconfigurerStep is where a handover stands.
type ReconfigurerStep uint8

const (
	// RStopping: freezing a quorum of the set and reading its registries.
	RStopping ReconfigurerStep = iota + 1
	// RBootstrapping: handing the reconstruction to every proposed member.
	RBootstrapping
	// RDeciding: the decree over the set's members.
	RDeciding
	// RPublishing: telling both sets the outcome.
	RPublishing
	// RDone: the outcome is chosen and published.
	RDone
	// RAbandoned: a phase made no progress within its budget, or the set
	// was already replaced beyond the next generation.
	RAbandoned
)

func (s ReconfigurerStep) String() string {
	names := [...]string{"?", "stopping", "bootstrapping", "deciding", "publishing", "done", "abandoned"}
	if int(s) < len(names) {
		return names[s]
	}
	return "?"
}

type stopAnswer struct {
	pages uint32
	got   map[uint32][]JournalRegistry
}

func (a *stopAnswer) complete() bool { return a.pages > 0 && uint32(len(a.got)) == a.pages }

// NewReconfigurer starts the handover of set from to members (the next
// generation). members must be a valid, nonempty set of ids.
func NewReconfigurer(id paxos.NodeID, from Set, members []paxos.NodeID, opts ReconfigurerOptions) *Reconfigurer {
	r := &Reconfigurer{id: id, opts: opts, from: from.Clone(), step: RStopping,
		proposal: Set{Generation: from.Generation + 1, Members: slices.Clone(members)},
		stops:    map[paxos.NodeID]*stopAnswer{}}
	r.opts.ResendTicks = max(r.opts.ResendTicks, 1)
	r.opts.PhaseBudget = max(r.opts.PhaseBudget, r.opts.ResendTicks)
	r.sendStops()
	return r
}

// NewFinisher finishes a handover of from that another started. It
// proposes the members of from that answered its stop: they are alive,
// so its bootstrap can complete (proposing from's members again would
// name the very machine whose loss froze the set, and a bootstrap waits
// for every member). The decree adopts any proposal already voted.
func NewFinisher(id paxos.NodeID, from Set, opts ReconfigurerOptions) *Reconfigurer {
	r := NewReconfigurer(id, from, from.Members, opts)
	r.finisher = true
	return r
}

// Step is where the handover stands.
func (r *Reconfigurer) Step() ReconfigurerStep { return r.step }

// Chosen is the decree's outcome (zero until known).
func (r *Reconfigurer) Chosen() Set { return r.chosen.Clone() }

// Proposal is the set this reconfigurer proposed.
func (r *Reconfigurer) Proposal() Set { return r.proposal.Clone() }

// Ballot is the decree ballot (zero before the stop quorum answered).
func (r *Reconfigurer) Ballot() paxos.Ballot { return r.ballot }

// Counters returns the counters.
func (r *Reconfigurer) Counters() ReconfigurerCounters { return r.counters }

// Activated lists the members of the chosen set that answered they
// activated it.
func (r *Reconfigurer) Activated() []paxos.NodeID {
	var out []paxos.NodeID
	for _, id := range r.chosen.Members {
		if r.activated[id] {
			out = append(out, id)
		}
	}
	return out
}

// Messages hands out what to send.
func (r *Reconfigurer) Messages() []Handover {
	out := r.out
	r.out = nil
	return out
}

func (r *Reconfigurer) send(h Handover) {
	h.From = r.id
	r.out = append(r.out, h)
}

func (r *Reconfigurer) progress() { r.idle = 0 }

// Tick advances logical time: what the phase waits on is asked again, and
// a phase idle past its budget is abandoned.
func (r *Reconfigurer) Tick() {
	if r.step == RDone || r.step == RAbandoned {
		return
	}
	r.idle++
	if r.idle > r.opts.PhaseBudget {
		// Abandoned; once chosen, the outcome stands (Chosen) though some
		// member did not answer it: a later finisher publishes it again.
		r.step = RAbandoned
		return
	}
	if r.backoff > 0 {
		if r.backoff--; r.backoff == 0 {
			r.openDecree()
		}
		return
	}
	if r.idle%r.opts.ResendTicks != 0 {
		return
	}
	switch r.step {
	case RStopping:
		r.sendStops()
	case RBootstrapping:
		r.sendBootstrap()
	case RDeciding:
		r.sendDecree()
	case RPublishing:
		r.sendChosen()
	}
}

// sendStops asks every member of from for its first missing page.
func (r *Reconfigurer) sendStops() {
	for _, id := range r.from.Members {
		page := uint32(0)
		if a := r.stops[id]; a != nil {
			if a.complete() {
				continue
			}
			for a.got[page] != nil {
				page++
			}
		}
		r.send(Handover{Kind: HStop, To: id, Generation: r.from.Generation, Page: page})
	}
}

// StepHandover folds one answer.
func (r *Reconfigurer) StepHandover(h Handover) {
	if h.To != r.id || h.Validate() != nil || r.step == RDone || r.step == RAbandoned {
		return
	}
	if h.Kind == HRefused {
		r.refused(h)
		return
	}
	switch {
	case h.Kind == HStopAck && r.step == RStopping:
		r.stopAck(h)
	case h.Kind == HBootstrapAck && r.step == RBootstrapping:
		r.bootstrapAck(h)
	case (h.Kind == HPromise || h.Kind == HAccepted || h.Kind == HNack) && r.step == RDeciding:
		r.decreeAnswer(h)
	case h.Kind == HLearned && r.step == RPublishing:
		r.learned(h)
	case h.Kind == HStopAck && !h.Successor.IsZero():
		r.learnChosen(h.Successor)
	}
}

// refused folds what a matchmaker that is not where the request assumed
// knows: a chosen successor of from is published; a set beyond it means
// the handover is long over.
func (r *Reconfigurer) refused(h Handover) {
	next := r.from.Generation + 1
	switch {
	case r.from.Has(h.From) && h.Set.Generation < r.from.Generation && h.Successor.Generation < r.from.Generation && r.from.Generation >= 2:
		// A member of from that never activated it: it missed from's
		// publication. from is chosen (a reconfigurer starts from a
		// chosen set), so tell it; it activates the bootstrap it holds,
		// and answers the next Stop.
		r.send(Handover{Kind: HChosen, To: h.From, Generation: r.from.Generation, Set: r.from.Clone()})
	case h.Successor.Generation == next:
		r.learnChosen(h.Successor)
	case h.Set.Generation == next && (h.Phase == PhaseActive || h.Phase == PhaseStopped):
		r.learnChosen(h.Set) // an activated set was chosen
	case h.Set.Generation > next || h.Successor.Generation > next:
		r.step = RAbandoned // the set was replaced again since
	}
}

// learnChosen: the decree's outcome is known (a matchmaker named it, or
// the decree here chose it); publish it.
func (r *Reconfigurer) learnChosen(s Set) {
	if r.step == RPublishing || r.step == RDone || s.Generation != r.from.Generation+1 {
		return
	}
	r.chosen = s.Clone()
	r.step = RPublishing
	r.linked, r.activated = map[paxos.NodeID]bool{}, map[paxos.NodeID]bool{}
	r.progress()
	r.counters.Published++
	r.sendChosen()
}

func (r *Reconfigurer) stopAck(h Handover) {
	if !r.from.Has(h.From) || h.Generation != r.from.Generation || h.Pages == 0 {
		return
	}
	if !h.Successor.IsZero() {
		r.learnChosen(h.Successor)
		return
	}
	a := r.stops[h.From]
	if a == nil || a.pages != h.Pages {
		a = &stopAnswer{pages: h.Pages, got: map[uint32][]JournalRegistry{}}
		r.stops[h.From] = a
	}
	if a.got[h.Page] == nil {
		a.got[h.Page] = cloneJournals(h.Journals)
		r.progress()
	}
	if r.floor.Less(h.Promised) {
		r.floor = h.Promised
	}
	if !a.complete() {
		next := uint32(0)
		for a.got[next] != nil {
			next++
		}
		r.send(Handover{Kind: HStop, To: h.From, Generation: r.from.Generation, Page: next})
		return
	}
	var done []paxos.NodeID
	for id, x := range r.stops {
		if x.complete() {
			done = append(done, id)
		}
	}
	if !r.from.Quorum(done) {
		return
	}
	r.counters.Stopped++
	r.reconstruct(done)
}

// reconstruct merges the stop quorum's registries (the maximum watermark
// and the union above it, per journal), pages them, and opens the
// bootstrap under a decree ballot above every promise the quorum reported.
func (r *Reconfigurer) reconstruct(quorum []paxos.NodeID) {
	slices.Sort(quorum)
	if r.finisher {
		r.proposal.Members = slices.Clone(quorum)
	}
	per := map[journal.ID][]Registry{}
	for _, id := range quorum {
		for _, page := range r.stops[id].got {
			for _, jr := range page {
				per[jr.Journal] = append(per[jr.Journal], jr.Registry)
			}
		}
	}
	js := make([]journal.ID, 0, len(per))
	for j := range per {
		js = append(js, j)
	}
	slices.SortFunc(js, journal.ID.Compare)
	r.recon = nil
	for i := 0; i < len(js) || i == 0; i += RegistryPage {
		var page []JournalRegistry
		for _, j := range js[i:min(len(js), i+RegistryPage)] {
			page = append(page, JournalRegistry{Journal: j, Registry: Reconstruct(per[j]...)})
		}
		r.recon = append(r.recon, page)
	}
	r.ballot = paxos.Ballot{Round: max(r.floor.Round, r.ballot.Round) + 1, Node: r.id}
	r.step = RBootstrapping
	r.booted = map[paxos.NodeID][]bool{}
	for _, id := range r.proposal.Members {
		r.booted[id] = make([]bool, len(r.recon))
	}
	r.progress()
	r.sendBootstrap()
}

func (r *Reconfigurer) sendBootstrap() {
	for _, id := range r.proposal.Members {
		for p, held := range r.booted[id] {
			if !held {
				r.send(Handover{Kind: HBootstrap, To: id, Set: r.proposal.Clone(), Ballot: r.ballot,
					Page: uint32(p), Pages: uint32(len(r.recon)), Journals: cloneJournals(r.recon[p])})
			}
		}
	}
}

func (r *Reconfigurer) bootstrapAck(h Handover) {
	pages, ok := r.booted[h.From]
	if !ok || h.Ballot != r.ballot || !h.Set.Equal(r.proposal) || h.Pages != uint32(len(r.recon)) || pages[h.Page] {
		return
	}
	pages[h.Page] = true
	r.progress()
	for _, id := range r.proposal.Members {
		if slices.Contains(r.booted[id], false) {
			return
		}
	}
	// Every proposed member holds every page durably: only now may the
	// decree propose the set (a chosen set whose members lack the
	// reconstruction would activate registries without the history).
	r.counters.Bootstrapped++
	r.openDecree()
}

func (r *Reconfigurer) openDecree() {
	sys, err := quorum.NewMajority(r.from.Members)
	if err != nil {
		r.step = RAbandoned
		return
	}
	r.counters.DecreeRounds++
	r.step = RDeciding
	r.decree = paxos.NewDecreeProposer(sys, Set.Fingerprint, r.ballot, r.proposal.Clone())
	r.progress()
	r.sendDecree()
}

func (r *Reconfigurer) sendDecree() {
	for _, id := range r.from.Members {
		switch r.decree.Step() {
		case paxos.DecreePreparing:
			r.send(Handover{Kind: HPrepare, To: id, Generation: r.from.Generation, Ballot: r.ballot})
		case paxos.DecreeAccepting:
			r.send(Handover{Kind: HAccept, To: id, Generation: r.from.Generation, Ballot: r.ballot, Set: r.decree.Value().Clone()})
		}
	}
}

func (r *Reconfigurer) decreeAnswer(h Handover) {
	if !r.from.Has(h.From) || h.Generation != r.from.Generation || h.Ballot != r.ballot {
		return
	}
	switch h.Kind {
	case HPromise:
		if h.Vote.Voted() && (h.Vote.Value.Generation != r.proposal.Generation || h.Vote.Value.Validate() != nil) {
			return // not a vote of this decree
		}
		if r.decree.Promise(h.From, h.Vote) {
			if !r.decree.Value().Equal(r.proposal) {
				r.counters.Adopted++
			}
			r.progress()
			r.sendDecree()
		}
	case HAccepted:
		if r.decree.Accepted(h.From, h.Set.Fingerprint()) {
			r.learnChosen(r.decree.Value())
		}
	case HNack:
		if r.decree.Refused(h.From) {
			// Lost to a higher ballot: another driver (a finisher on
			// another machine) is deciding. Reopening at once let two
			// finishers pre-empt each other for good, each Nack answered
			// by a Prepare above the other's, and the cell never elected
			// again (sweep seed 55). So the loser waits a few resends,
			// which the higher ballot needs to finish, and the wait
			// differs by driver so that two that lost to each other do
			// not come back together. The proposal's bootstrap is still
			// held in full at its members, so the decree then reopens at
			// once, above the ballot that won.
			r.ballot = paxos.Ballot{Round: max(h.Promised.Round, r.ballot.Round) + 1, Node: r.id}
			r.backoff = r.opts.ResendTicks * (2 + int(uint64(r.id)%4))
		}
	}
}

func (r *Reconfigurer) sendChosen() {
	for _, id := range r.from.Members {
		if !r.linked[id] {
			r.send(Handover{Kind: HChosen, To: id, Generation: r.chosen.Generation, Set: r.chosen.Clone()})
		}
	}
	for _, id := range r.chosen.Members {
		if !r.activated[id] && !r.from.Has(id) {
			r.send(Handover{Kind: HChosen, To: id, Generation: r.chosen.Generation, Set: r.chosen.Clone()})
		}
	}
}

// learned folds a matchmaker's answer to Chosen. The handover is done once
// a quorum of the old set recorded the link (so a late proposer is
// pointed at the successor) and every member of the new set activated.
func (r *Reconfigurer) learned(h Handover) {
	if h.Generation != r.chosen.Generation {
		return
	}
	if r.from.Has(h.From) && !r.linked[h.From] && (h.Set.Generation >= r.chosen.Generation || h.Phase == PhaseStopped) {
		r.linked[h.From] = true
		r.progress()
	}
	if r.chosen.Has(h.From) && h.Activated && !r.activated[h.From] {
		r.activated[h.From] = true
		r.progress()
	}
	var linked []paxos.NodeID
	for id := range r.linked {
		linked = append(linked, id)
	}
	if r.from.Quorum(linked) && len(r.Activated()) == len(r.chosen.Members) {
		r.step = RDone
	}
}
