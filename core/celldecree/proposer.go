package celldecree

import (
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

// RoundsMax bounds the ballots one attempt tries before it answers
// contended (the operator retries; the next attempt starts above the
// proposer's own promise).
const RoundsMax = 8

// StepsMax bounds the steps of the ladder at one founder per ballot.
const StepsMax = 64

// Phase is the phase an Ask belongs to.
type Phase uint8

const (
	// Prepare is Phase 1 (the machine's PrepareCell).
	Prepare Phase = iota + 1
	// Form is Phase 2 (FormCell).
	Form
)

// Ask is a message the proposer wants sent. Every Ask gets exactly one
// reply from the caller: Proposer.Answered with the founder's answer, or
// Proposer.Unanswered when none came.
type Ask[P any] struct {
	To     paxos.NodeID
	Phase  Phase
	Ballot paxos.Ballot
	// Named is every founder (a Prepare names the formation).
	Named []paxos.NodeID
	Plan  P // a Form's plan
}

// Outcome is how an attempt ended. Refusal is empty when Plan was chosen
// and every founder formed it.
type Outcome[P any] struct {
	Plan    P
	Refusal string
	// Chosen: a majority voted Plan at one ballot (it can never change).
	Chosen bool
	// Member is the founder a member_unreachable, member_unformed or
	// ballots_exhausted refusal names.
	Member paxos.NodeID
}

// Outcome refusals of an attempt (beside the founders' own).
const (
	MemberUnreachable = "member_unreachable"
	BallotsExhausted  = "ballots_exhausted"
	OtherCellInit     = "other_cell_init"
	Contended         = "contended"
	// MemberUnformed: the plan is chosen, but a founder did not answer
	// formed. The attempt is not done: a founder that missed its Form
	// would never serve the cell. The next attempt adopts the chosen plan
	// (Phase 1 meets its votes) and forms the rest.
	MemberUnformed = "member_unformed"
)

// Config is one attempt of a proposer.
type Config[P any] struct {
	Plans Plans[P]
	// Founders are the formation's members, each answering for itself.
	Founders []paxos.NodeID
	// Node is the proposer's own node id: every ballot it proposes names
	// it. Round is the first round, above the proposer's own promise (so
	// no ballot of an earlier attempt is reused).
	Node  paxos.NodeID
	Round uint64
	// Fresh draws a new plan for a ballot; Names reports whether a plan
	// another proposer voted names exactly this formation's machines.
	Fresh func() P
	Names func(P) bool
}

// Proposer is one attempt at forming a cell, sans-IO: it returns Asks and
// takes their answers.
//
// Invariants: every ballot it proposes at names Node and rises; Phase 2
// proposes the plan of the highest vote Phase 1 met at every founder, a
// fresh plan only when none voted.
type Proposer[P any] struct {
	cfg     Config[P]
	sys     quorum.System
	rounds  int
	dec     *paxos.DecreeProposer[P]
	fresh   P
	waiting map[paxos.NodeID]bool // founders whose answer at the ballot is due
	steps   map[paxos.NodeID]int
	// stepping is the ladder's ballot out at a founder, if any.
	stepping map[paxos.NodeID]paxos.Ballot
	// unformed is the first founder whose Form was not answered formed.
	unformed paxos.NodeID
	next     uint64 // the round of the next ballot, if this one is lost
	out      *Outcome[P]
}

// NewProposer starts an attempt: it returns the proposer and the Phase-1
// asks of its first ballot.
func NewProposer[P any](cfg Config[P]) (*Proposer[P], []Ask[P]) {
	n := len(cfg.Founders)
	p := &Proposer[P]{cfg: cfg}
	sys, err := quorum.NewFlexible(cfg.Founders, n, n/2+1)
	if err != nil || cfg.Round == 0 {
		p.out = &Outcome[P]{Refusal: string(Malformed)}
		return p, nil
	}
	p.sys = sys
	return p, p.open(cfg.Round)
}

// Done reports the attempt's outcome once it has one.
func (p *Proposer[P]) Done() (Outcome[P], bool) {
	if p.out == nil {
		return Outcome[P]{}, false
	}
	return *p.out, true
}

// Ballot is the ballot the proposer stands at.
func (p *Proposer[P]) Ballot() paxos.Ballot {
	if p.dec == nil {
		return paxos.Ballot{}
	}
	return p.dec.Ballot()
}

func (p *Proposer[P]) finish(o Outcome[P]) []Ask[P] {
	p.out = &o
	return nil
}

// open starts Phase 1 of a new ballot at round, or ends the attempt
// contended after RoundsMax ballots.
func (p *Proposer[P]) open(round uint64) []Ask[P] {
	if p.rounds == RoundsMax {
		return p.finish(Outcome[P]{Refusal: Contended})
	}
	p.rounds++
	b := paxos.Ballot{Round: round, Node: p.cfg.Node}
	p.fresh = p.cfg.Fresh()
	p.dec = paxos.NewDecreeProposer(p.sys, p.cfg.Plans.ID, b, p.fresh)
	p.next, p.waiting, p.steps, p.stepping = round+1, map[paxos.NodeID]bool{}, map[paxos.NodeID]int{}, map[paxos.NodeID]paxos.Ballot{}
	asks := make([]Ask[P], 0, len(p.cfg.Founders))
	for _, f := range p.cfg.Founders {
		p.waiting[f] = true
		asks = append(asks, Ask[P]{To: f, Phase: Prepare, Ballot: b, Named: p.cfg.Founders})
	}
	return asks
}

// current reports whether a reply to ask is one the proposer waits for.
func (p *Proposer[P]) current(ask Ask[P]) bool {
	return p.out == nil && p.waiting[ask.To] &&
		(ask.Phase == Prepare) == (p.dec.Step() == paxos.DecreePreparing)
}

// Wants reports whether ask is still worth sending: an ask of a ballot
// the proposer left, or sent after the attempt ended, is not.
func (p *Proposer[P]) Wants(ask Ask[P]) bool {
	if !p.current(ask) {
		return false
	}
	s, stepping := p.stepping[ask.To]
	return ask.Ballot == p.dec.Ballot() || (stepping && s == ask.Ballot)
}

// Answered folds founder ask.To's answer to ask and returns what to send
// next.
func (p *Proposer[P]) Answered(ask Ask[P], a Answer[P]) []Ask[P] {
	if !p.current(ask) {
		return nil
	}
	b := p.dec.Ballot()
	if ask.Phase == Form {
		if ask.Ballot != b {
			return nil
		}
		delete(p.waiting, ask.To)
		switch {
		case a.Granted:
			p.dec.Accepted(ask.To, p.cfg.Plans.ID(ask.Plan))
		case a.Refusal == PromisedHigher:
			p.dec.Refused(ask.To)
		}
		if !a.Granted && p.unformed == 0 {
			p.unformed = ask.To
		}
		return p.settleForm()
	}
	if ask.Ballot != b {
		if s, ok := p.stepping[ask.To]; ok && s == ask.Ballot { // the ladder's step answered: ask b again
			delete(p.stepping, ask.To)
			return []Ask[P]{{To: ask.To, Phase: Prepare, Ballot: b, Named: p.cfg.Founders}}
		}
		return nil // an earlier ballot's answer
	}
	if a.Granted {
		delete(p.waiting, ask.To)
		if p.dec.Promise(ask.To, a.Vote) {
			return p.propose()
		}
		return nil
	}
	if a.Refusal == Malformed || a.Promise.Round >= paxos.BallotRoundMax {
		return p.finish(Outcome[P]{Refusal: BallotsExhausted, Member: ask.To})
	}
	if a.Refusal == RoundTooFar && p.steps[ask.To] < StepsMax {
		// The founder's promise is far below b (a caller pushed the others
		// up): step it up within the bound and ask again. A step is a
		// promise like any other: it only refuses ballots below it.
		if step := a.Promise.Round + RoundLeadMax; step < b.Round {
			p.steps[ask.To]++
			p.stepping[ask.To] = paxos.Ballot{Round: step, Node: p.cfg.Node}
			return []Ask[P]{{To: ask.To, Phase: Prepare, Ballot: p.stepping[ask.To], Named: p.cfg.Founders}}
		}
	}
	// Every founder is the Phase-1 quorum: one refusal loses the ballot.
	p.dec.Refused(ask.To)
	return p.open(max(p.next, a.Promise.Round+1))
}

// Unanswered folds the lack of an answer to ask.
func (p *Proposer[P]) Unanswered(ask Ask[P]) []Ask[P] {
	if !p.current(ask) {
		return nil
	}
	if s, stepping := p.stepping[ask.To]; ask.Ballot != p.dec.Ballot() && (!stepping || s != ask.Ballot) {
		return nil // an earlier ballot's ask
	}
	if ask.Phase == Prepare {
		return p.finish(Outcome[P]{Refusal: MemberUnreachable, Member: ask.To})
	}
	delete(p.waiting, ask.To)
	if p.unformed == 0 {
		p.unformed = ask.To
	}
	return p.settleForm()
}

// propose sends Phase 2 of the plan Phase 1 left: the highest vote met,
// else the fresh plan. A voted plan naming other machines is another
// formation's: the attempt stops rather than serve it.
func (p *Proposer[P]) propose() []Ask[P] {
	plan := p.dec.Value()
	if id := p.cfg.Plans.ID(plan); id != p.cfg.Plans.ID(p.fresh) && !p.cfg.Names(plan) {
		return p.finish(Outcome[P]{Plan: plan, Refusal: OtherCellInit})
	}
	// Every founder, not only a majority: each forms and serves.
	asks := make([]Ask[P], 0, len(p.cfg.Founders))
	for _, f := range p.cfg.Founders {
		p.waiting[f] = true
		asks = append(asks, Ask[P]{To: f, Phase: Form, Ballot: p.dec.Ballot(), Plan: plan})
	}
	return asks
}

// settleForm ends the attempt once every founder answered Phase 2 (or
// did not): done if every founder formed; chosen but member_unformed if
// a majority did; else contended, with the plan.
func (p *Proposer[P]) settleForm() []Ask[P] {
	if len(p.waiting) > 0 {
		return nil
	}
	if p.dec.Step() == paxos.DecreeChosen {
		if p.unformed != 0 {
			return p.finish(Outcome[P]{Plan: p.dec.Value(), Refusal: MemberUnformed, Member: p.unformed, Chosen: true})
		}
		return p.finish(Outcome[P]{Plan: p.dec.Value(), Chosen: true})
	}
	return p.finish(Outcome[P]{Plan: p.dec.Value(), Refusal: Contended})
}
