package paxos

import (
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/quorum"
)

// Propose asks the leader to decide a client write into the next slot.
// Nothing is judged here: the verdict is the Outcome the slot folds to,
// reported in Applied. If the slot is decided for another command, or
// the node no longer leads at the ballot it proposed at when the slot
// applies (an identical command may then be another leader's proposal),
// the caller must answer the client as ambiguous.
func (n *Node) Propose(e journal.Entry) ProposeResult {
	return n.propose(journal.Write(e))
}

// ProposeControl asks the leader to decide a control command (Truncate,
// SetLeader or Noop) into the next slot, exactly like a write.
func (n *Node) ProposeControl(c journal.Command) ProposeResult {
	if c.Kind == journal.KindWrite || !c.Valid() {
		panic("paxos: ProposeControl takes a control command")
	}
	return n.propose(c)
}

// ProposeIn is Propose into a slot of the given grid column (the driver
// chooses where a command is decided: on a grid only the slot's column
// votes, so a leader proposing in its own column counts its own vote).
// Slots of other columns below it are filled with Noops first, at most
// columns-1 of them: a Noop above the leader's frontier is a proposal like
// any other. On a system with one column (majority, flexible) column 0 is
// Propose; any other column is refused (NotLeader is not the answer: the
// status is Busy with no slot, and nothing was proposed).
func (n *Node) ProposeIn(e journal.Entry, column int) ProposeResult {
	l, ok := n.phase.(*leading)
	if !ok {
		return ProposeResult{Status: NotLeader, LeaderHint: n.leaderHint}
	}
	cols := 1
	if n.sys.Kind() == quorum.KindGrid {
		cols = n.sys.Spec().Cols
	}
	if column < 0 || column >= cols {
		return ProposeResult{Status: Busy, LeaderHint: n.cfg.ID}
	}
	for n.sys.ColumnOf(l.nextSlot) != column {
		if int(l.nextSlot-(n.lrn.chosenIndex+1)) >= n.opts.ProposeQueueMax || l.nextSlot > SlotMax || l.ctrl != nil {
			n.afterEvent()
			n.assertInvariants()
			return ProposeResult{Status: Busy, LeaderHint: n.cfg.ID}
		}
		n.counters.ColumnFills++
		n.openRound(l, journal.Noop())
	}
	return n.propose(journal.Write(e))
}

func (n *Node) propose(cmd journal.Command) ProposeResult {
	n.wake() // a quiet journal has work (node_quiet.go)
	l, ok := n.phase.(*leading)
	if !ok {
		return ProposeResult{Status: NotLeader, LeaderHint: n.leaderHint}
	}
	// A log whose next slot passed SlotMax is full (2^62 slots: only a
	// forged trim point can bring a journal near it); nothing is proposed.
	// A recovery waiting on a damaged record (ctrl.go) proposes nothing
	// past it until the slot is settled.
	if int(l.nextSlot-(n.lrn.chosenIndex+1)) >= n.opts.ProposeQueueMax || l.nextSlot > SlotMax || l.ctrl != nil {
		return ProposeResult{Status: Busy, LeaderHint: n.cfg.ID}
	}
	s := n.openRound(l, cmd)
	n.afterEvent()
	n.assertInvariants()
	return ProposeResult{Status: Proposed, Slot: s, LeaderHint: n.cfg.ID}
}

// openRound allocates the next slot for cmd at the leader's ballot. The
// leader records the round in its own log whenever its promise allows,
// inside the slot's grid column or not (the durable frontier,
// node_handoff.go): outside the column the record is the stray copy a grid
// admits, a vote the tally never counts. The leader's own vote counts only
// when it is an addressee of the slot. The Accept leaves through pump.
func (n *Node) openRound(l *leading, cmd journal.Command) Slot {
	s := l.nextSlot
	l.nextSlot++
	r := l.rs.open(s, cmd)
	if n.acc.Admit(l.ballot, s, cmd) && n.inColumn(s) {
		if l.rs.vote(n.sys, s, n.me, r.tally.Fingerprint()) {
			n.decide(l, s)
		}
	}
	return s
}

// inColumn reports whether this node is an Accept addressee of slot s.
func (n *Node) inColumn(s Slot) bool {
	return n.sys.ColumnOf(s) == n.sys.MemberColumn(n.me)
}

// pump sends held Accepts while the pipeline window has room.
func (n *Node) pump(l *leading) {
	for l.unsent < l.nextSlot && l.inflight < n.opts.PipelineWindow {
		s := l.unsent
		l.unsent++
		r := l.rs.at(s)
		if r == nil {
			continue // decided before it left (a one-member quorum)
		}
		r.sent = true
		n.custodyOf(l, s, r)
		l.inflight++
		n.cur.accepts = append(n.cur.accepts, SlotCommand{Slot: s, Ballot: l.ballot, Command: r.cmd})
	}
}

// flushAccepts turns the Accepts queued in this batch into one message per
// addressee, many slots per message. On majority and flexible systems every
// peer gets the same entries (one shared slice); on a grid each peer gets
// its column's slots.
func (n *Node) flushAccepts() {
	l, ok := n.phase.(*leading)
	if !ok || len(n.cur.accepts) == 0 {
		n.cur.accepts = n.cur.accepts[:0]
		return
	}
	all := slices.Clone(n.cur.accepts)
	n.cur.accepts = n.cur.accepts[:0]
	if all = n.flushDelegations(l, all); len(all) == 0 {
		return
	}
	members := n.sys.Members()
	for i, id := range members {
		if id == n.cfg.ID {
			continue
		}
		entries := all
		if n.sys.Kind() == quorum.KindGrid {
			entries = nil
			for _, e := range all {
				if n.sys.ColumnOf(e.Slot) == n.sys.MemberColumn(i) {
					entries = append(entries, e)
				}
			}
			if len(entries) == 0 {
				continue
			}
		}
		// Many slots per Accept, but at most about MessageBytesMax of
		// records per message.
		inPages(entries, func(page []SlotCommand) {
			n.send(Message{Type: MsgAccept, To: id, Ballot: l.ballot, Entries: page})
		})
	}
}

// handleAccept votes on each entry (Paxos Made Simple §2.2, phase 2b): an
// acceptor accepts at ballot b unless it promised above b. Votes are
// answered in one Accepted; a refusal is a Nack naming the promise and the
// floor.
func (n *Node) handleAccept(m Message) {
	if !n.followLeader(m) {
		return
	}
	// With matchmakers an acceptor votes only in a ballot whose
	// configuration it knows (a Prepare or a Heartbeat of that ballot told
	// it) and names it: a node outside its configuration never votes, and
	// a joiner has promised before Phase 2 reaches it.
	if n.matchmakers() && (n.ballotCfg.Ballot != m.Ballot || !n.ballotCfg.Acceptors.Contains(n.cfg.ID)) {
		return
	}
	var votes []SlotVote
	belowFloor := false
	for _, e := range m.Entries {
		if e.Ballot != m.Ballot || e.Slot == 0 || !e.Command.Valid() {
			continue
		}
		if e.Slot < n.acc.Floor() {
			belowFloor = true
			continue
		}
		if n.acc.Admit(m.Ballot, e.Slot, e.Command) {
			votes = append(votes, SlotVote{Slot: e.Slot, VHash: e.Command.Fingerprint()})
		}
	}
	if len(votes) > 0 && n.cfg.Joiner {
		n.counters.JoinerVotes++
	}
	if len(votes) > 0 {
		n.send(Message{Type: MsgAccepted, To: m.From, Ballot: m.Ballot, Votes: votes})
	}
	if belowFloor {
		n.send(Message{Type: MsgNack, To: m.From, Ballot: n.acc.Promised(), Refused: m.Ballot, Slot: n.acc.Floor()})
	}
}

// followLeader is what an Accept or a Heartbeat says about leadership: a
// malformed ballot is ignored; a ballot below the promise is refused with a
// Nack naming the promise and the floor (a stale leader then steps down at
// once); otherwise the node follows that leader (stepping down from a lower
// campaign or leadership of its own) and restarts its election timer. It
// reports whether the message is to be acted on.
//
// The sender need not own the ballot: a successor the owner handed its
// leadership to (node_handoff.go) leads at the owner's ballot.
func (n *Node) followLeader(m Message) bool {
	if m.Ballot.IsZero() {
		return false
	}
	if m.Ballot.Less(n.acc.Promised()) {
		n.send(Message{Type: MsgNack, To: m.From, Ballot: n.acc.Promised(), Refused: m.Ballot, Slot: n.acc.Floor()})
		return false
	}
	if n.ownBallot().Less(m.Ballot) {
		n.stepDown()
	}
	n.leaderHint = leaderOf(m)
	if m.Leader == 0 {
		// Only the leader's own messages are evidence that it lives: a
		// proxy re-fans-out its open rounds on its own beat, leader or no
		// leader, and must not hold a leaderless cell's elections off.
		n.resetElectionTimer()
	}
	return true
}

// handleAccepted folds votes into the Phase-2 tally.
func (n *Node) handleAccepted(m Message, from int) {
	l, ok := n.phase.(*leading)
	if !ok || m.Ballot != l.ballot || from < 0 {
		return
	}
	l.live = l.live.Add(from)
	for _, v := range m.Votes {
		if l.rs.vote(n.sys, v.Slot, from, v.VHash) {
			n.decide(l, v.Slot)
		}
	}
}

// decide records that slot s is chosen by the leader's own tally; the
// leader's next Commit announces it (a proxy's decision is announced by
// the proxy: settle).
func (n *Node) decide(l *leading, s Slot) {
	l.ownDecided = true
	n.settle(l, s)
}

// settle records that slot s is chosen with the leader's value: the value
// is made durable on this node too (a leader outside the slot's grid
// column holds no vote for it) and handed to the learner.
func (n *Node) settle(l *leading, s Slot) {
	r := l.rs.log.at(s)
	if r.sent {
		l.inflight--
	}
	n.counters.Decided++
	if l.inherited {
		n.counters.InheritedDecided++
	}
	n.acc.Learn(s, l.ballot, r.cmd)
	n.lrn.markChosen(s, r.cmd)
}

// releaseDecided closes every round at or below the chosen index (some may
// have been learned through catch-up rather than tallied) and forgets them.
func (n *Node) releaseDecided(l *leading) {
	c := n.lrn.chosenIndex
	for s := l.rs.log.base; s <= c && s < l.rs.log.end; s++ {
		if r := l.rs.log.at(s); r.open {
			r.open = false
			if r.sent {
				l.inflight--
			}
		}
	}
	l.rs.release(c + 1)
	l.nextSlot = max(l.nextSlot, c+1)
	l.unsent = max(l.unsent, c+1)
}
