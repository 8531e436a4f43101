package paxos

import (
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/quorum"
)

// Protocol-aware recovery of damaged records (CTRL: Alagappan et al.,
// FAST'18). A damaged record is a third answer about a slot: the acceptor
// voted at its ballot and no longer knows for what. It must never count as
// "nothing accepted" — a candidate that heard silence from a whole quorum
// would Noop a slot that may hold a chosen value. So a Phase 1 that meets a
// damaged record as a slot's highest report still wins, but its leadership
// does not settle that slot from the reports of its winning quorum alone:
// it keeps asking the acceptors that have not answered, and settles the
// slot by the table below. (The code says "ctrl", not "probe": in this
// code base a probe is a node asking its matchmakers for
// the effective configuration.)
//
// An answer about slot s qualifies when it cannot hide a chosen value
// above the best value reported: it reported nothing at s, a value (any
// value report is at or below the best), or a damaged record at a ballot
// at or below the best value's ballot (one proposer proposes one value per
// slot and ballot, so a damaged record at the best ballot held the best
// value). A damaged record above the best value's ballot (or any damaged
// record, when no value was reported) does not qualify.
//
// Why a qualifying Phase-1 quorum Q (of every configuration in force)
// settles s: let v be chosen at s at ballot c below this leadership's. Q
// meets the Phase-2 quorum that chose v, at an acceptor whose answer is at
// a ballot r >= c, and r is at or below the best value's ballot because
// the answer qualifies. So the best value was proposed at a ballot >= c,
// and every proposal at or above c carries v (P2c, by induction): the best
// value is v. With no value reported at all, no answer of Q is at any
// ballot, so nothing was chosen at s and a Noop is safe.

// ctrlInput is what a leadership knows about one slot whose highest report
// was a damaged record.
type ctrlInput struct {
	// valueReported: some answer reported a value at the slot.
	valueReported bool
	// qualifyingQuorum: the qualifying answers hold a Phase-1 quorum of
	// every configuration in force.
	qualifyingQuorum bool
	// allAnswered: every addressee of every configuration answered.
	allAnswered bool
}

// ctrlDecision is what the leadership does with the slot.
type ctrlDecision uint8

const (
	// ctrlRepropose: case 1, re-propose the best value reported; the
	// damaged acceptors write it back as they vote.
	ctrlRepropose ctrlDecision = iota + 1
	// ctrlNoop: case 2, nothing could have been chosen; decide a Noop.
	ctrlNoop
	// ctrlWait: case 3, keep asking the acceptors that have not answered.
	ctrlWait
	// ctrlUnrecoverable: every acceptor answered and no qualifying quorum
	// exists: the slot's value may be lost with every copy. The leadership
	// halts rather than guess (beyond the fault budget).
	ctrlUnrecoverable
)

func (d ctrlDecision) String() string {
	return [...]string{"?", "repropose", "noop", "wait", "unrecoverable"}[d]
}

// tri is a table cell: the input must be yes, must be no, or is any.
type tri uint8

const (
	either tri = iota
	yes
	no
)

func (t tri) matches(b bool) bool { return t == either || (t == yes) == b }

// ctrlCases is the CTRL decision table, one row per case so that a reader
// and a test can check every recovery decision in one place. Legend: value is
// ctrlInput.valueReported, quorum is qualifyingQuorum, answered is
// allAnswered; "-" matches either. Every input combination matches exactly
// one row (TestCtrlTableCoversEveryInputOnce).
//
//	value  quorum  answered  decision
//	-----  ------  --------  -----------------
//	yes    yes     -         repropose (case 1)
//	no     yes     -         noop      (case 2)
//	-      no      no        wait      (case 3)
//	-      no      yes       unrecoverable
var ctrlCases = []struct {
	value, quorum, answered tri
	decision                ctrlDecision
}{
	{yes, yes, either, ctrlRepropose},
	{no, yes, either, ctrlNoop},
	{either, no, no, ctrlWait},
	{either, no, yes, ctrlUnrecoverable},
}

// decideCtrl looks the input up in ctrlCases.
func decideCtrl(in ctrlInput) ctrlDecision {
	for _, c := range ctrlCases {
		if c.value.matches(in.valueReported) && c.quorum.matches(in.qualifyingQuorum) && c.answered.matches(in.allAnswered) {
			return c.decision
		}
	}
	panic("paxos: the CTRL table has no row for an input")
}

// ctrlInputAt gathers the table's input for slot s from the election.
func (e *election) ctrlInputAt(s Slot) ctrlInput {
	best, valued := e.found[s]
	qualifying, answered := idSet{}, true
	for id := range e.granted {
		if fb, damaged := e.faultyBy[s][id]; !damaged || valued && !best.Ballot.Less(fb) {
			qualifying[id] = struct{}{}
		}
	}
	in := ctrlInput{valueReported: valued, qualifyingQuorum: true}
	for _, sys := range e.configs {
		if sys.Phase1(qualifying.in(sys), 0) != quorum.Won {
			in.qualifyingQuorum = false
		}
	}
	for _, id := range e.addressees() {
		if !e.granted.has(id) {
			answered = false
		}
	}
	in.allAnswered = answered
	return in
}

// ctrlWaiting is a leadership's recovery paused at a blocked slot: it
// keeps asking the acceptors that have not answered (every beat) and
// resumes when the table settles the slot.
type ctrlWaiting struct {
	el *election
	// end is the last slot of the recovery (the winning Phase 1's highest
	// report); recovery resumes at the leadership's nextSlot.
	end Slot
	// waited counts the ticks spent waiting.
	waited int
}

// ctrlResignElections is how many election timeouts a leadership may wait
// on a blocked slot before it resigns (a straggler that never answers
// holds the journal only that long per leadership).
const ctrlResignElections = 3

// unrecoverableMax bounds the unrecoverable slots a node remembers (one
// is enough to halt the journal; a few name the damage).
const unrecoverableMax = 16

// recoverSlots opens the recovery rounds of a Phase-1-backed leadership
// from its nextSlot through end: each slot gets the value already known
// chosen, the highest-ballot value Phase 1 found (P2c) or a Noop — and a
// slot some answer reported damaged gets what the CTRL table decides (when
// the best value's ballot is at or above every damaged record's, every
// answer qualifies and the table re-proposes it at once). On ctrlWait the recovery pauses there (l.ctrl holds it); on
// ctrlUnrecoverable the leadership halts. It reports whether the node
// still leads.
func (n *Node) recoverSlots(l *leading, el *election, end Slot) bool {
	for l.nextSlot <= end {
		s := l.nextSlot
		cmd := journal.Noop()
		if c, ok := n.lrn.Chosen(s); ok {
			cmd = c
		} else if len(el.faultyBy[s]) > 0 {
			switch d := decideCtrl(el.ctrlInputAt(s)); d {
			case ctrlRepropose:
				n.counters.CtrlReproposed++
				cmd = el.found[s].Command
			case ctrlNoop:
				n.counters.CtrlNoops++
			case ctrlWait:
				if l.ctrl == nil {
					n.counters.CtrlWaits++
					l.ctrl = &ctrlWaiting{el: el, end: end}
					n.ctrlAsk(l)
				}
				return true
			case ctrlUnrecoverable:
				n.counters.CtrlUnrecoverable++
				if !slices.Contains(n.unrecoverable, s) && len(n.unrecoverable) < unrecoverableMax {
					n.unrecoverable = append(n.unrecoverable, s)
					slices.Sort(n.unrecoverable)
				}
				n.stepDown()
				return false
			}
		} else if sc, ok := el.found[s]; ok {
			cmd = sc.Command
			n.counters.Recovered++
		} else {
			n.counters.GapFills++
		}
		n.pin(l, n.openRound(l, cmd))
	}
	l.ctrl = nil
	return true
}

// ctrlAsk asks every addressee that has not answered the leadership's
// Phase 1 for its next Promise page.
func (n *Node) ctrlAsk(l *leading) {
	c := l.ctrl
	for _, id := range c.el.addressees() {
		if id == n.cfg.ID || c.el.granted.has(id) || c.el.refused.has(id) {
			continue
		}
		n.send(Message{Type: MsgPrepare, To: id, Ballot: l.ballot, Slot: c.el.pageFrom(id), Config: l.own.Acceptors, Since: l.own.Since})
	}
}

// tickCtrl counts a tick of waiting; past the budget the leadership
// resigns so another candidate (perhaps one that reaches the stragglers)
// can try. It reports whether the node still leads.
func (n *Node) tickCtrl(l *leading) bool {
	if l.ctrl == nil {
		return true
	}
	l.ctrl.waited++
	if l.ctrl.waited >= ctrlResignElections*n.electionTimeout {
		n.counters.CtrlResigned++
		n.stepDown()
		return false
	}
	return true
}

// foldCtrlPromise folds a late Promise page into a waiting leadership's
// Phase 1 and resumes the recovery if the table now settles the slot.
func (n *Node) foldCtrlPromise(l *leading, m Message) {
	el := l.ctrl.el
	if !el.addressed(m.From) || el.granted.has(m.From) || m.Slot != el.pageFrom(m.From) {
		return
	}
	terminal := m.Next == 0
	if !terminal && m.Next <= m.Slot {
		return
	}
	el.absorb(m.From, m.Entries, m.Faulty, terminal)
	if n.contract.fault != nil {
		return
	}
	// A page is progress: the budget counts ticks without any, so a
	// straggler paging through a long suffix is not given up on midway.
	l.ctrl.waited = 0
	if !terminal {
		el.setPageFrom(m.From, m.Next)
		n.send(Message{Type: MsgPrepare, To: m.From, Ballot: l.ballot, Slot: m.Next, Config: l.own.Acceptors, Since: l.own.Since})
		return
	}
	n.recoverSlots(l, el, l.ctrl.end)
}

// Unrecoverable lists the slots this node's leaderships found beyond the
// fault budget (every acceptor answered, and no qualifying quorum exists:
// the value may be lost with every copy). The journal cannot decide them
// and stops deciding past them; an operator must restore a copy.
func (n *Node) Unrecoverable() []Slot { return slices.Clone(n.unrecoverable) }
