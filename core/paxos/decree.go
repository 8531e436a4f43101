package paxos

import "github.com/parosdb/paros/core/quorum"

// A decree is single-decree Paxos: one value chosen once, by a majority of
// a small fixed set of acceptors. The code base decides two things that
// way, and both run these roles rather than a Paxos of their own: the
// successor of a matchmaker set (core/matchmaker's handover) and a cell's
// founding plan. The roles are the journal's, over a one-slot log: the
// acceptor promises through the journal Acceptor's admission rule (admit)
// and the proposer counts votes through the one Phase-2 tally (Tally).
//
// The roles hold state only; the caller persists an acceptor's change
// (DecreeAcceptor reports it) before any answer that reveals it leaves,
// and carries the messages on its own wire.

// decreeSlot is the one slot of a decree's log.
const decreeSlot Slot = 1

// DecreeVote is an acceptor's vote: the value it accepted at Ballot (zero
// Ballot: it never voted).
type DecreeVote[V any] struct {
	Ballot Ballot
	Value  V
}

// Voted reports whether the acceptor ever voted.
func (v DecreeVote[V]) Voted() bool { return !v.Ballot.IsZero() }

// DecreeAcceptor is the acceptor role of one decree.
//
// Invariants: Promised never decreases; Vote.Ballot is at or below
// Promised; a vote is replaced only by one at a higher ballot.
type DecreeAcceptor[V any] struct {
	Promised Ballot
	Vote     DecreeVote[V]
}

// Prepare answers Phase 1 at b: granted iff b is at or above the promise.
// On a grant the answer carries the vote; changed says the promise rose
// (persist before the answer leaves).
func (a *DecreeAcceptor[V]) Prepare(b Ballot) (granted, changed bool) {
	if b.IsZero() {
		return false, false
	}
	return admit(&a.Promised, b)
}

// Accept votes for v at b iff b is at or above the promise. changed says
// the state moved (persist before the answer leaves). A second Accept at
// the ballot of the vote changes nothing: a proposer proposes one value
// per ballot, so it is the same value re-sent.
func (a *DecreeAcceptor[V]) Accept(b Ballot, v V) (accepted, changed bool) {
	if b.IsZero() {
		return false, false
	}
	admitted, raised := admit(&a.Promised, b)
	if !admitted {
		return false, false
	}
	if a.Vote.Ballot == b {
		return true, raised
	}
	a.Vote = DecreeVote[V]{Ballot: b, Value: v}
	return true, true
}

// DecreeStep is where a decree proposer stands.
type DecreeStep uint8

const (
	// DecreePreparing: Phase 1 at the ballot is open.
	DecreePreparing DecreeStep = iota + 1
	// DecreeAccepting: Phase 1 was won; the Accept of Value is out.
	DecreeAccepting
	// DecreeChosen: a Phase-2 quorum voted for Value at the ballot.
	DecreeChosen
	// DecreeLost: a quorum refused the ballot; open a higher one.
	DecreeLost
)

// DecreeProposer is the proposer role of one decree at one ballot. Its
// value is the caller's proposal until Phase 1 reports a vote, and then
// the value of the highest-ballot vote reported (the rule that keeps a
// chosen value chosen).
type DecreeProposer[V any] struct {
	sys    quorum.System
	fp     func(V) uint64
	ballot Ballot
	step   DecreeStep
	// value is what Phase 2 proposes; best the highest vote Phase 1 met.
	value    V
	best     DecreeVote[V]
	promised quorum.Set
	refused  quorum.Set
	tally    Tally
}

// NewDecreeProposer opens Phase 1 of a decree over the acceptors of sys at
// ballot b, proposing v unless Phase 1 finds a vote; fp fingerprints a
// value (two values are the same iff their fingerprints are).
func NewDecreeProposer[V any](sys quorum.System, fp func(V) uint64, b Ballot, v V) *DecreeProposer[V] {
	return &DecreeProposer[V]{sys: sys, fp: fp, ballot: b, step: DecreePreparing, value: v}
}

// Ballot is the proposer's ballot.
func (p *DecreeProposer[V]) Ballot() Ballot { return p.ballot }

// Step is where the proposer stands.
func (p *DecreeProposer[V]) Step() DecreeStep { return p.step }

// Value is the value Phase 2 proposes (the chosen value once Step is
// DecreeChosen).
func (p *DecreeProposer[V]) Value() V { return p.value }

// Promise folds acceptor from's grant of the ballot with its vote. It
// reports whether Phase 1 was won by it (send the Accept of Value).
func (p *DecreeProposer[V]) Promise(from NodeID, vote DecreeVote[V]) bool {
	idx, ok := p.sys.IndexOf(from)
	if !ok || p.step != DecreePreparing || p.promised.Has(idx) || p.refused.Has(idx) {
		return false
	}
	if !p.ballot.Less(vote.Ballot) && p.best.Ballot.Less(vote.Ballot) {
		p.best = vote
	}
	p.promised = p.promised.Add(idx)
	if p.sys.Phase1(p.promised, p.refused) != quorum.Won {
		return false
	}
	if p.best.Voted() {
		p.value = p.best.Value
	}
	p.step = DecreeAccepting
	p.tally = NewTally(p.fp(p.value))
	return true
}

// Accepted folds acceptor from's vote at the ballot for the value whose
// fingerprint is fp. It reports whether the value is now chosen.
func (p *DecreeProposer[V]) Accepted(from NodeID, fp uint64) bool {
	idx, ok := p.sys.IndexOf(from)
	if !ok || p.step != DecreeAccepting {
		return false
	}
	if _, decided := p.tally.Grant(p.sys, decreeSlot, idx, fp); decided {
		p.step = DecreeChosen
		return true
	}
	return false
}

// Refused folds acceptor from's refusal (it promised above the ballot). It
// reports whether the ballot is lost.
func (p *DecreeProposer[V]) Refused(from NodeID) bool {
	idx, ok := p.sys.IndexOf(from)
	if !ok {
		return false
	}
	switch p.step {
	case DecreePreparing:
		if !p.promised.Has(idx) {
			p.refused = p.refused.Add(idx)
		}
		if p.sys.Phase1(p.promised, p.refused) == quorum.Lost {
			p.step = DecreeLost
		}
	case DecreeAccepting:
		p.tally.Refuse(idx)
		if p.tally.Lost(p.sys, decreeSlot) {
			p.step = DecreeLost
		}
	}
	return p.step == DecreeLost
}
