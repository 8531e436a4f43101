package matchmaker

import (
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/paxos"
)

// The matchmaker's side of the handover that replaces its set by the next
// generation (the reconfigurer's side is reconfigurer.go):
//
//  1. Stop: a quorum of M_g freezes durably and answers its registries.
//  2. Reconstruct: the reconfigurer merges them (Reconstruct).
//  3. Bootstrap: every proposed member of M_g+1 holds the reconstruction
//     durably, as pending.
//  4. Decide: single-decree Paxos over M_g chooses M_g+1 (paxos.Decree*).
//  5. Publish: M_g records the chain link; M_g+1 activates its pending
//     bootstrap.

// HandoverKind names a handover message.
type HandoverKind uint8

const (
	// HStop asks a member of generation Generation to freeze it and to
	// answer page Page of its registries.
	HStop HandoverKind = iota + 1
	// HStopAck answers one page (Page of Pages) of a frozen member's
	// registries, its decree promise (Promised) and its successor if
	// known.
	HStopAck
	// HBootstrap hands page Page of Pages of the reconstruction to a
	// proposed member of Set; Ballot names the proposal (its decree
	// ballot).
	HBootstrap
	// HBootstrapAck says page Page of proposal Ballot is durable.
	HBootstrapAck
	// HPrepare, HPromise, HAccept, HAccepted and HNack are the decree over
	// the members of Generation (Ballot; Vote in a Promise; Set in an
	// Accept and an Accepted; Promised in a Nack).
	HPrepare
	HPromise
	HAccept
	HAccepted
	HNack
	// HChosen publishes Set as the chosen successor of generation
	// Set.Generation-1.
	HChosen
	// HLearned answers HChosen: the sender's set and phase after it, and
	// whether it activated Set.
	HLearned
	// HRefused answers a request about a generation the sender is not at:
	// its set, phase and successor say what it knows.
	HRefused
)

func (k HandoverKind) String() string {
	names := [...]string{"?", "Stop", "StopAck", "Bootstrap", "BootstrapAck", "Prepare", "Promise", "Accept",
		"Accepted", "Nack", "Chosen", "Learned", "Refused"}
	if int(k) < len(names) {
		return names[k]
	}
	return fmt.Sprintf("handover(%d)", uint8(k))
}

// Handover is one handover message.
type Handover struct {
	Kind       HandoverKind
	From, To   paxos.NodeID
	Generation uint64
	Ballot     paxos.Ballot
	Promised   paxos.Ballot
	Set        Set
	Successor  Set
	Vote       paxos.DecreeVote[Set]
	Phase      Phase
	Activated  bool
	Page       uint32
	Pages      uint32
	Journals   []JournalRegistry
}

func (h Handover) String() string {
	return fmt.Sprintf("%s %d→%d g%d b=%s set=%s succ=%s page=%d/%d", h.Kind, h.From, h.To, h.Generation, h.Ballot, h.Set, h.Successor, h.Page, h.Pages)
}

// Validate bounds every field a handover message carries (the wire's
// decoder and the matchmaker both check it).
func (h Handover) Validate() error {
	switch {
	case h.Kind < HStop || h.Kind > HRefused:
		return fmt.Errorf("%w: handover kind %d", paxos.ErrMalformed, h.Kind)
	case h.Generation > paxos.GenerationMax || !h.Ballot.InRange() || !h.Promised.InRange() || !h.Vote.Ballot.InRange():
		return fmt.Errorf("%w: %s out of range", paxos.ErrMalformed, h.Kind)
	case h.Pages > PagesMax || h.Page >= PagesMax || len(h.Journals) > RegistryPage ||
		// A Stop asks for a page before the asker knows how many there
		// are (Pages unset); every answer names its page count.
		h.Kind != HStop && h.Page >= max(h.Pages, 1):
		return fmt.Errorf("%w: %s page %d of %d with %d journals", paxos.ErrMalformed, h.Kind, h.Page, h.Pages, len(h.Journals))
	}
	for _, s := range []Set{h.Set, h.Successor, h.Vote.Value} {
		if err := s.Validate(); err != nil {
			return fmt.Errorf("%w: %s: %v", paxos.ErrMalformed, h.Kind, err)
		}
	}
	for _, jr := range h.Journals {
		if !jr.Journal.IsSet() {
			return fmt.Errorf("%w: %s page names an unset journal", paxos.ErrMalformed, h.Kind)
		}
		if err := check(jr.Registry); err != nil {
			return fmt.Errorf("%w: %s journal %s: %v", paxos.ErrMalformed, h.Kind, jr.Journal, err)
		}
	}
	return nil
}

// StepHandover handles one handover request addressed to this matchmaker.
// A closed matchmaker answers nothing: its durable state is unknown.
func (m *Matchmaker) StepHandover(h Handover) {
	if h.To != m.id || h.From == 0 || m.closed != nil || h.Validate() != nil {
		return
	}
	reply := Handover{From: m.id, To: h.From, Generation: h.Generation, Ballot: h.Ballot}
	switch h.Kind {
	case HStop:
		m.stop(h, reply)
	case HBootstrap:
		m.bootstrap(h, reply)
	case HPrepare, HAccept:
		m.decree(h, reply)
	case HChosen:
		m.chosen(h, reply)
	}
}

// refuse answers a request about a generation this matchmaker is not at.
func (m *Matchmaker) refuse(reply Handover) {
	reply.Kind, reply.Set, reply.Successor, reply.Phase = HRefused, m.gen.Set.Clone(), m.gen.Successor.Clone(), m.gen.Phase()
	m.counters.HandoverRefusals++
	m.sendHandover(reply)
}

// stop freezes generation h.Generation (durably, before the answer) and
// answers one page of the registries. Frozen, the matchmaker registers
// nothing for it again, so the registries a stop quorum answers hold every
// registration that ever completed at a matchmaker quorum of it.
func (m *Matchmaker) stop(h Handover, reply Handover) {
	if m.gen.Set.IsZero() || m.gen.Set.Generation != h.Generation {
		m.refuse(reply)
		return
	}
	if !m.gen.Stopped {
		m.counters.Stops++
		m.apply(WriteOp{Kind: OpStop, Generation: h.Generation})
	}
	js := m.Journals()
	pages := max(1, uint32((len(js)+RegistryPage-1)/RegistryPage))
	if h.Page >= pages {
		return
	}
	reply.Kind, reply.Page, reply.Pages = HStopAck, h.Page, pages
	reply.Promised, reply.Successor = m.gen.Decree.Promised, m.gen.Successor.Clone()
	for _, j := range js[min(len(js), int(h.Page)*RegistryPage):min(len(js), int(h.Page+1)*RegistryPage)] {
		reply.Journals = append(reply.Journals, JournalRegistry{Journal: j, Registry: m.regs[j].Clone()})
	}
	m.sendHandover(reply)
}

// bootstrap holds one page of a proposed successor's reconstruction,
// durably before the ack. Only a member of the proposed set takes it, and
// only for a generation above any it is or was at.
func (m *Matchmaker) bootstrap(h Handover, reply Handover) {
	s := h.Set
	if s.IsZero() || !s.Has(m.id) || s.Generation <= m.gen.Set.Generation || s.Generation < m.gen.Pending.Generation ||
		h.Ballot.IsZero() || h.Pages == 0 {
		m.refuse(reply)
		return
	}
	held := slices.ContainsFunc(m.gen.Pending.Origins, func(o Origin) bool {
		return o.Ballot == h.Ballot && o.Set.Equal(s) && o.Pages == h.Pages && o.Held[h.Page]
	})
	known := slices.ContainsFunc(m.gen.Pending.Origins, func(o Origin) bool { return o.Ballot == h.Ballot && o.Set.Equal(s) })
	full := len(m.gen.Pending.Origins) >= OriginsMax && !slices.ContainsFunc(m.gen.Pending.Origins, func(o Origin) bool { return !o.Complete() })
	if !known && full && m.gen.Pending.Generation == s.Generation {
		// OriginsMax whole proposals of this generation are held, any of
		// which the decree may choose: none is forgotten for a new one
		// (its reconfigurer abandons; the decree adopts one of these).
		m.refuse(reply)
		return
	}
	if !held {
		m.counters.Bootstraps++
		m.apply(WriteOp{Kind: OpBootstrap, Set: s.Clone(), Ballot: h.Ballot, Page: h.Page, Pages: h.Pages,
			Journals: cloneJournals(h.Journals)})
	}
	reply.Kind, reply.Generation, reply.Page, reply.Pages, reply.Set = HBootstrapAck, s.Generation, h.Page, h.Pages, s.Clone()
	m.sendHandover(reply)
}

// decree is this matchmaker's acceptor in the decree over its set that
// chooses the successor. Once the successor is known the decree is over:
// the answer names it.
func (m *Matchmaker) decree(h Handover, reply Handover) {
	if m.gen.Set.IsZero() || m.gen.Set.Generation != h.Generation || !m.gen.Successor.IsZero() {
		m.refuse(reply)
		return
	}
	acc := m.gen.Decree
	var ok, changed bool
	if h.Kind == HPrepare {
		ok, changed = acc.Prepare(h.Ballot)
		reply.Kind, reply.Vote = HPromise, paxos.DecreeVote[Set]{Ballot: acc.Vote.Ballot, Value: acc.Vote.Value.Clone()}
	} else {
		if h.Set.Generation != h.Generation+1 || h.Set.IsZero() {
			return
		}
		ok, changed = acc.Accept(h.Ballot, h.Set.Clone())
		// The answer names the value voted at the ballot, not the one
		// asked: a second Accept at a voted ballot changes nothing, and a
		// proposer that reused a ballot of an earlier incarnation for
		// another value must not count this vote for it.
		reply.Kind, reply.Set = HAccepted, acc.Vote.Value.Clone()
	}
	if changed {
		m.apply(WriteOp{Kind: OpDecree, Decree: acc})
	}
	if !ok {
		reply = Handover{Kind: HNack, From: m.id, To: h.From, Generation: h.Generation, Ballot: h.Ballot, Promised: acc.Promised}
	}
	m.sendHandover(reply)
}

// chosen learns the decree's outcome: a member of the replaced set records
// the chain link (and is frozen from then on), and a member of the chosen
// set activates the bootstrap it holds for it, once it holds every page.
func (m *Matchmaker) chosen(h Handover, reply Handover) {
	s := h.Set
	if s.IsZero() || s.Generation < 2 {
		return
	}
	if m.gen.Set.Generation == s.Generation-1 && !m.gen.Set.IsZero() && m.gen.Successor.IsZero() {
		m.counters.Links++
		m.apply(WriteOp{Kind: OpChosen, Set: s.Clone()})
	}
	activated := false
	if s.Has(m.id) && m.gen.Set.Generation < s.Generation && m.gen.Pending.Generation == s.Generation && m.gen.Pending.Complete(s) {
		m.counters.Activations++
		m.apply(WriteOp{Kind: OpActivate, Set: s.Clone()})
		activated = true
	}
	reply.Kind, reply.Generation, reply.Set, reply.Phase = HLearned, s.Generation, m.gen.Set.Clone(), m.gen.Phase()
	reply.Activated = activated || m.gen.Set.Equal(s)
	m.sendHandover(reply)
}

func cloneJournals(js []JournalRegistry) []JournalRegistry {
	out := make([]JournalRegistry, len(js))
	for i, jr := range js {
		out[i] = JournalRegistry{Journal: jr.Journal, Registry: jr.Registry.Clone()}
	}
	return out
}

func (m *Matchmaker) sendHandover(h Handover) { m.handovers = append(m.handovers, h) }
