package celldecree

import (
	"slices"

	"github.com/parosdb/paros/core/paxos"
)

// Refusal names why a founder (or the proposer) refused; the strings are
// the wire's.
type Refusal string

const (
	// Malformed: a ballot out of range, or a plan that cannot be served.
	Malformed Refusal = "malformed"
	// NotAMember: the request does not name this founder.
	NotAMember Refusal = "not_a_member"
	// PromisedHigher: the founder promised a higher ballot (Promise).
	PromisedHigher Refusal = "promised_higher"
	// RoundTooFar: the ballot's round is more than RoundLeadMax above the
	// founder's promise (Promise).
	RoundTooFar Refusal = "round_too_far"
	// OtherCell: the founder voted for another plan; its vote is final.
	OtherCell Refusal = "other_cell"
)

// RoundLeadMax bounds how far above a founder's promise a ballot's round
// may be. An honest proposer's round is one above the highest promise it
// was refused with, and it tries a handful of ballots per attempt
// (RoundsMax), so honest rounds never climb by 2^20. Without the bound,
// one Phase 1 at round 2^62 (paxos.BallotRoundMax) from any caller allowed
// to send it would be promised and leave no ballot above it: the cell
// could never form. With it, a caller needs 2^42 durable promises to get
// there. A gap a caller opens between two founders' promises is closed by
// the proposer's step ladder (Proposer).
const RoundLeadMax = 1 << 20

// Plans is what the decree needs to know of a plan P: its identity (a
// plan's id; two plans are one iff their ids are; never 0 for a real
// plan) and the founders it names.
type Plans[P any] struct {
	ID       func(P) uint64
	Founders func(P) []paxos.NodeID
}

// Acceptor is one founder's state in the decree, as its machine record
// holds it.
//
// Invariants: Promised never decreases; VoteBallot is at or below
// Promised; once Plan is set (ID non-zero) it never changes (the vote is
// final). A plan with a zero VoteBallot is an admitted machine's: it
// serves the cell but voted nothing.
type Acceptor[P any] struct {
	Self       paxos.NodeID
	Promised   paxos.Ballot
	VoteBallot paxos.Ballot
	Plan       P
}

// Effect is what the caller must make durable before the answer leaves.
type Effect uint8

const (
	// Nothing changed.
	Nothing Effect = iota
	// Record the new promise (and vote ballot) in the machine record.
	Record
	// Format the plan's stores, then record the vote: the commit point. A
	// crash in between leaves formatted stores and no vote; the next Form
	// of the same plan finds them formatted under the same markers.
	FormatThenVote
)

// Answer is a founder's answer to Prepare or Form.
type Answer[P any] struct {
	// Granted: Phase 1 promised the ballot, or Phase 2 formed the plan.
	Granted bool
	Refusal Refusal
	// Promise is the ballot promised (granted) or the promise that refused.
	Promise paxos.Ballot
	// Vote is the founder's vote, with a Phase-1 answer.
	Vote paxos.DecreeVote[P]
}

func (a Acceptor[P]) decree() paxos.DecreeAcceptor[P] {
	return paxos.DecreeAcceptor[P]{Promised: a.Promised, Vote: paxos.DecreeVote[P]{Ballot: a.VoteBallot, Value: a.Plan}}
}

// vote is the founder's vote as Phase 1 reports it: none for a machine
// without a plan, or with a plan it was admitted to.
func (a Acceptor[P]) vote(plans Plans[P]) paxos.DecreeVote[P] {
	if plans.ID(a.Plan) == 0 || a.VoteBallot.IsZero() {
		return paxos.DecreeVote[P]{}
	}
	return paxos.DecreeVote[P]{Ballot: a.VoteBallot, Value: a.Plan}
}

// Prepare is Phase 1 at ballot b from a proposer naming the founders
// named. It returns the founder's next state, its answer and what to
// persist first. A ballot equal to the promise is granted again without a
// write: a ballot names one proposer, so it is that proposer re-asking.
func (a Acceptor[P]) Prepare(plans Plans[P], b paxos.Ballot, named []paxos.NodeID) (Acceptor[P], Answer[P], Effect) {
	ans := Answer[P]{Vote: a.vote(plans)}
	switch {
	case !b.InRange():
		ans.Refusal = Malformed
		return a, ans, Nothing
	case !slices.Contains(named, a.Self):
		ans.Refusal = NotAMember
		return a, ans, Nothing
	}
	acc := a.decree()
	granted, changed := acc.Prepare(b)
	switch {
	case !granted:
		ans.Refusal, ans.Promise = PromisedHigher, a.Promised
		return a, ans, Nothing
	case b.Round-a.Promised.Round > RoundLeadMax: // b is at or above the promise: no wrap
		ans.Refusal, ans.Promise = RoundTooFar, a.Promised
		return a, ans, Nothing
	}
	ans.Granted, ans.Promise = true, b
	if !changed {
		return a, ans, Nothing
	}
	next := a
	next.Promised = acc.Promised
	return next, ans, Record
}

// Form is Phase 2 at ballot b of plan (which the caller has checked can
// be served). The founder votes unless it promised higher, the round is
// too far, the plan does not name it, or it already holds another plan.
// Its plan again is answered formed, raising the vote ballot with the
// promise when b is higher (the vote stays at or below the promise, and
// the founder said formed at b).
func (a Acceptor[P]) Form(plans Plans[P], b paxos.Ballot, plan P) (Acceptor[P], Answer[P], Effect) {
	if !b.InRange() || plans.ID(plan) == 0 {
		return a, Answer[P]{Refusal: Malformed}, Nothing
	}
	acc := a.decree()
	accepted, changed := acc.Accept(b, plan)
	switch {
	case !accepted:
		return a, Answer[P]{Refusal: PromisedHigher, Promise: a.Promised}, Nothing
	case b.Round-a.Promised.Round > RoundLeadMax:
		return a, Answer[P]{Refusal: RoundTooFar, Promise: a.Promised}, Nothing
	case !slices.Contains(plans.Founders(plan), a.Self):
		return a, Answer[P]{Refusal: NotAMember}, Nothing
	}
	ok := Answer[P]{Granted: true, Promise: acc.Promised}
	if id := plans.ID(a.Plan); id != 0 {
		if id != plans.ID(plan) {
			return a, Answer[P]{Refusal: OtherCell}, Nothing
		}
		if !changed {
			return a, ok, Nothing
		}
		next := a
		next.Promised, next.VoteBallot = acc.Promised, acc.Vote.Ballot
		return next, ok, Record
	}
	next := a
	next.Promised, next.VoteBallot, next.Plan = acc.Promised, acc.Vote.Ballot, plan
	return next, ok, FormatThenVote
}
