package paxos

import (
	"errors"
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/quorum"
)

// Cooperative leader handoff (DPaxos, Nawab, Agrawal and El Abbadi, SIGMOD
// 2018, "Relinquishment"). A leader that is alive and wants to move hands
// its Phase-2 authority on instead of letting the cell elect: the ballot,
// the allocator frontier, and the open tail below it, split into the slots
// it knows chosen and the slots whose Phase 2 is open. The two parts tile
// [from, next) exactly, so the successor may skip Phase 1: it re-proposes
// what it was told about (the same value at the same (slot, ballot), which
// every acceptor treats as a re-sent Accept), and the range holds nothing
// else.
//
// Four rules carry the safety:
//
//  1. Abdication is synchronous with the decision: RelinquishTo queues the
//     message and leaves the leadership in the same call.
//  2. The successor is named inside the payload (Message.To, checked by
//     Step): a duplicate or a misroute cannot hand one authority to two.
//  3. One hop only: only an elected leadership (whose ballot is its own)
//     relinquishes, and a receiver takes an authority only from the
//     ballot's owner. A replayed message could otherwise reinstall an
//     authority at a node that handed it on, beside the successor using it.
//  4. The allocator frontier is durable: a leader records every round it
//     opens in its own log whenever its promise allows (openRound), and an
//     inherited leadership's Accepts wait for that record to be durable
//     (Message.EarlyOK). A receiver refuses an authority at ballot b when
//     its log holds a record at b at or above the frontier the message
//     names: it exercised that authority before (and perhaps crashed), so
//     installing it again would rewind its allocator and let two values
//     run at one (slot, ballot).

// HandoffTailMax bounds the open tail a Relinquish carries: a leader with
// more undecided slots waits for them (CanRelinquish refuses).
const HandoffTailMax = 256

// handoffEntriesMax bounds the decided plus pending entries a Relinquish may
// carry (the receiver refuses more).
const handoffEntriesMax = HandoffTailMax

// ErrCannotRelinquish is CanRelinquish's and RelinquishTo's refusal; the
// wrapped text says which rule refused.
var ErrCannotRelinquish = errors.New("paros/paxos: cannot hand the leadership on")

// CanRelinquish reports whether this node may hand its leadership on now:
// it leads a leadership it won by election (one hop only), with no
// recovery waiting on a damaged record, no damaged record under repair, no
// reconfiguration's garbage collection half done, and an open tail within
// HandoffTailMax slots and MessageBytesMax bytes.
func (n *Node) CanRelinquish() error {
	l, ok := n.phase.(*leading)
	switch {
	case !ok:
		return fmt.Errorf("%w: not leading", ErrCannotRelinquish)
	case l.inherited:
		return fmt.Errorf("%w: the leadership was handed on once already (one hop only)", ErrCannotRelinquish)
	case l.ctrl != nil:
		return fmt.Errorf("%w: recovery waits on a damaged record", ErrCannotRelinquish)
	case len(n.repairs) > 0:
		return fmt.Errorf("%w: %d damaged records wait for repair", ErrCannotRelinquish, len(n.repairs))
	case l.nextSlot-(n.lrn.chosenIndex+1) > HandoffTailMax:
		return fmt.Errorf("%w: %d slots open (at most %d)", ErrCannotRelinquish, l.nextSlot-(n.lrn.chosenIndex+1), HandoffTailMax)
	}
	bytes := 0
	for s := n.lrn.chosenIndex + 1; s < l.nextSlot; s++ {
		if r := l.rs.log.at(s); r != nil {
			bytes += commandBytes(r.cmd)
		}
	}
	if bytes > MessageBytesMax {
		return fmt.Errorf("%w: the open tail holds %d bytes (at most %d)", ErrCannotRelinquish, bytes, MessageBytesMax)
	}
	return nil
}

// RelinquishTo hands this node's leadership to successor and becomes a
// follower in the same call. The Relinquish waits for the batch it rides in
// to be durable (it is not EarlyOK), so every round the leader opened is on
// its disk before the successor can act on the frontier.
func (n *Node) RelinquishTo(successor NodeID) error {
	n.wake() // a quiet journal has work (node_quiet.go)
	if err := n.CanRelinquish(); err != nil {
		return err
	}
	if successor == n.cfg.ID || !n.sys.Contains(successor) {
		return fmt.Errorf("%w: %d is not another acceptor of %s", ErrCannotRelinquish, successor, n.sys)
	}
	l := n.phase.(*leading)
	from := n.lrn.chosenIndex + 1
	m := Message{Type: MsgRelinquish, To: successor, Ballot: l.ballot, Slot: from, Next: l.nextSlot,
		Watermark: l.recoverEnd}
	for s := from; s < l.nextSlot; s++ {
		r := l.rs.log.at(s)
		if r == nil {
			// Every slot in [chosen+1, next) has a round (proposer.go's
			// invariant): a missing one is a bug, not an input.
			panic(fmt.Sprintf("paxos: node %d leads %s with no round at slot %d below its frontier %d", n.cfg.ID, l.ballot, s, l.nextSlot))
		}
		sc := SlotCommand{Slot: s, Ballot: l.ballot, Command: r.cmd}
		if r.open {
			m.Entries = append(m.Entries, sc)
		} else {
			m.Decided = append(m.Decided, sc)
		}
	}
	if n.matchmakers() {
		m.Config, m.Since = l.config, l.own.Since
	}
	n.send(m)
	// The handoff notice: every other acceptor hears from the owner whom
	// it handed the ballot to, or it would take the successor's Accepts
	// for a member speaking at a ballot it does not own (speaksFor). The
	// notice rides in the Relinquish's batch, so it leaves only once every
	// round the owner opened is durable, like the Relinquish.
	n.successor.ballot, n.successor.to = l.ballot, successor
	n.successor.config = Configuration{}
	if n.matchmakers() {
		n.successor.config = Configuration{Ballot: l.ballot, Since: l.own.Since, Acceptors: l.config}
	}
	for _, id := range n.sys.Members() {
		if id != n.cfg.ID && id != successor {
			n.sendNotice(id)
		}
	}
	n.counters.Relinquished++
	n.stepDown()
	n.leaderHint = successor
	n.afterEvent()
	n.assertInvariants()
	return nil
}

// handleRelinquish installs an authority handed on by its elected owner,
// unless a rule refuses it (the refusal is silent: the relinquisher
// already abdicated, and an election repairs a lost handoff).
func (n *Node) handleRelinquish(m Message) {
	b := m.Ballot
	if reason := n.refuseRelinquish(m); reason != "" {
		n.counters.RelinquishRefused++
		return
	}
	if n.matchmakers() {
		n.adopt(Configuration{Ballot: b, Since: m.Since, Acceptors: m.Config})
		if !SameSystem(n.sys, m.Config) || n.me < 0 {
			n.counters.RelinquishRefused++
			return
		}
	}
	if !n.acc.raisePromise(b) {
		n.counters.RelinquishRefused++
		return
	}
	n.stepDown()
	base := n.lrn.chosenIndex + 1
	// fillTo starts at this node's own highest vote: a stray vote of an
	// older leadership above the frontier, which the owner's Phase 1 did
	// not hear (this node was not in its quorum), is filled with a Noop
	// like any vote an acceptor reports, or this node's quorum reads
	// (which wait for its vote watermark) would wait forever (the proxy
	// model found it, seed 434 of 3,000).
	l := &leading{ballot: b, rs: newRounds(b, base), recoverEnd: m.Watermark, inherited: true,
		nextSlot: max(m.Next, base), unsent: base, fillTo: n.acc.VoteWatermark()}
	if n.matchmakers() {
		l.own = Configuration{Ballot: b, Since: m.Since, Acceptors: m.Config}
		l.config, l.history = m.Config, []quorum.System{m.Config}
	}
	n.phase = l
	n.leaderHint = n.cfg.ID
	n.resetElectionTimer()
	l.live = l.live.Add(n.me)
	n.counters.Inherited++
	// The slots the predecessor knew chosen are chosen here too: the value
	// was decided at b, and this node's record of it is the durable copy a
	// later Phase 1 reads.
	for _, sc := range m.Decided {
		if sc.Slot >= base {
			n.acc.Learn(sc.Slot, b, sc.Command)
			n.lrn.markChosen(sc.Slot, sc.Command)
		}
	}
	// The open rounds are re-proposed as they were: same slot, same ballot,
	// same value. A slot the decided list and the chosen log already cover
	// is skipped.
	for _, sc := range m.Entries {
		if sc.Slot < base {
			continue
		}
		if _, ok := n.lrn.Chosen(sc.Slot); ok {
			continue
		}
		n.reopenRound(l, sc.Slot, sc.Command)
	}
	// Slots below the predecessor's first open slot that this node has not
	// learned are chosen; a catch-up from the predecessor fetches them.
	if n.lrn.chosenIndex+1 < m.Slot {
		n.knownCommit = max(n.knownCommit, m.Slot-1)
		n.requestCatchUp(m.From)
	}
	n.broadcastHeartbeat(l)
}

// refuseRelinquish names the rule that refuses m, or "" to install it.
func (n *Node) refuseRelinquish(m Message) string {
	b := m.Ballot
	switch {
	case n.cfg.Replica:
		return "a replica never leads"
	case b.IsZero() || b.Node != m.From:
		return "one hop only: the authority comes from the ballot's owner"
	case b.Less(n.acc.Promised()):
		return "the promise dominates the authority"
	case n.ownBallot() == b:
		return "the authority is already held"
	case !n.ownBallot().IsZero() && b.Less(n.ownBallot()):
		return "a higher campaign or leadership is open"
	case m.Slot == 0 || m.Next < m.Slot || m.Next > SlotMax:
		return "malformed frontier"
	case len(m.Entries)+len(m.Decided) > handoffEntriesMax:
		return "tail too long"
	case n.matchmakers() && (m.Config.IsZero() || !m.Config.Contains(n.cfg.ID)):
		return "the ballot's configuration does not name this node"
	case !n.matchmakers() && !m.Config.IsZero():
		return "a configuration on a plain deployment"
	case n.lrn.chosenIndex >= m.Next:
		return "the frontier would rewind the chosen log"
	}
	if !tiles(m.Slot, m.Next, m.Decided, m.Entries, b) {
		return "decided and pending do not tile the range"
	}
	// The durable frontier: a record at b at or above the frontier is a
	// round this node opened under this authority before. So is a damaged
	// record there whose ballot is b or unreadable: its value is gone, and
	// installing the authority again would let this node open the slot a
	// second time at b with another value (a Noop fill; found by the
	// sweep, seed 3107823: rot took the successor's record of its own
	// round in a correlated outage, and a replayed Relinquish then
	// installed the authority again).
	for s := max(m.Next, n.lrn.chosenIndex+1); s <= n.acc.VoteWatermark(); s++ {
		if rb, _, ok := n.acc.Record(s); ok && rb == b {
			return "the frontier would rewind the allocator"
		}
		if fb, damaged := n.acc.Faulty(s); damaged && (fb == b || fb.IsZero()) {
			return "a damaged record at the frontier may be a round of this authority"
		}
	}
	return ""
}

// sendNotice sends acceptor to the notice naming the successor this node
// handed its ballot to: a Heartbeat at that ballot with Leader set (with
// matchmakers it names the ballot's configuration; unknown, nothing is
// sent).
func (n *Node) sendNotice(to NodeID) {
	s := n.successor
	m := Message{Type: MsgHeartbeat, To: to, Ballot: s.ballot, Commit: n.lrn.chosenIndex, Leader: s.to}
	if n.matchmakers() {
		if s.config.IsZero() && n.ballotCfg.Ballot == s.ballot {
			// A rebooted owner bound its successor before it heard the
			// ballot's configuration; the successor's beats have told it since.
			s.config, n.successor.config = n.ballotCfg, n.ballotCfg
		}
		if s.config.IsZero() {
			return
		}
		m.Config, m.Since = s.config.Acceptors, s.config.Since
	}
	n.send(m)
}

// askOwner: an acceptor that dropped a Heartbeat at a ballot whose leader
// it does not know (a notice it missed, or forgot in a reboot) asks the
// ballot's owner, with a HeartbeatAck at that ballot, whom it handed the
// ballot to; the owner answers with its notice (answerNotice). Without
// the question, a follower restarted while a successor leads campaigns at
// its next election timeout (the rolling-restart test found it). A forged
// Heartbeat costs the owner one reply, no more than a real one does.
func (n *Node) askOwner(m Message, r Role) {
	if m.Type != MsgHeartbeat || m.Leader != 0 || r != RoleAcceptor || m.Ballot.Less(n.acc.Promised()) ||
		m.Ballot.Node == n.cfg.ID || !n.sys.Contains(m.Ballot.Node) {
		return
	}
	n.counters.NoticesAsked++
	n.send(Message{Type: MsgHeartbeatAck, To: m.Ballot.Node, Ballot: m.Ballot, Commit: n.lrn.chosenIndex,
		Watermark: n.acc.VoteWatermark()})
}

// answerNotice: a HeartbeatAck at a ballot this node owns, handed on and
// no longer leads is a question (askOwner): the notice answers it.
func (n *Node) answerNotice(m Message) {
	if m.Ballot != n.successor.ballot || m.Ballot.Node != n.cfg.ID || m.From == n.successor.to {
		return
	}
	n.counters.NoticesAnswered++
	n.sendNotice(m.From)
}

// handleHandoffNotice learns from a ballot's owner (Step checked the
// sender owns it) the successor it handed the ballot to: from now on the
// successor's Accepts, Commits and Heartbeats at that ballot are heard
// (speaksFor). Only the highest such ballot is kept. A notice is also a
// sign of life from the owner's side of the cell, so the election timer
// restarts: the successor beats at once when it installs the authority.
func (n *Node) handleHandoffNotice(m Message) {
	if m.Ballot.Less(n.successor.ballot) || !n.sys.Contains(m.Leader) && !n.matchmakers() {
		return
	}
	n.counters.HandoffNotices++
	n.successor.ballot, n.successor.to = m.Ballot, m.Leader
	if !n.followLeader(m) {
		return
	}
	n.resetElectionTimer()
	n.learnCommit(m.Ballot, m.Commit, m.From)
}

// tiles reports whether decided and pending, each ascending, partition
// [from, next) exactly, every entry at ballot b with a valid command.
func tiles(from, next Slot, decided, pending []SlotCommand, b Ballot) bool {
	if Slot(len(decided)+len(pending)) != next-from {
		return false
	}
	i, j := 0, 0
	for s := from; s < next; s++ {
		var e SlotCommand
		switch {
		case i < len(decided) && decided[i].Slot == s:
			e = decided[i]
			i++
		case j < len(pending) && pending[j].Slot == s:
			e = pending[j]
			j++
		default:
			return false
		}
		if e.Ballot != b || !e.Command.Valid() {
			return false
		}
	}
	return true
}

// reopenRound is openRound at a given slot below the frontier: an inherited
// round is re-proposed with the value its ballot already carries there.
func (n *Node) reopenRound(l *leading, s Slot, cmd journal.Command) {
	r := l.rs.open(s, cmd)
	if n.acc.Admit(l.ballot, s, cmd) && n.inColumn(s) {
		if l.rs.vote(n.sys, s, n.me, r.tally.Fingerprint()) {
			n.decide(l, s)
		}
	}
}

// tickInherited resigns an inherited leadership whose fence (the
// predecessor's election fence) stays uncovered for HandoffFenceElections
// election timeouts: it cannot gap-fill below its frontier, so a slot it
// was not told about would wait forever. It reports whether the node still
// leads.
func (n *Node) tickInherited(l *leading) bool {
	if !l.inherited || n.lrn.chosenIndex >= l.recoverEnd {
		return true
	}
	l.uncovered++
	if l.uncovered >= n.opts.HandoffFenceElections*n.electionTimeout {
		n.counters.HandoffResigned++
		n.stepDown()
		return false
	}
	return true
}

// Reelect makes an inherited leadership the node's own, so it may be handed
// on again: the node opens a campaign above every ballot seen at once,
// without waiting for an election timeout (a driver's choice, always safe:
// a campaign is what any follower may start). One hop stays the rule, and
// a second hop costs this Phase 1, not a stall of an election timeout: a
// graceful shutdown of a successor re-elects itself, then hands on.
func (n *Node) Reelect() error {
	n.wake() // a quiet journal has work (node_quiet.go)
	l, ok := n.phase.(*leading)
	if !ok || !l.inherited {
		return fmt.Errorf("%w: only an inherited leadership re-elects itself", ErrCannotRelinquish)
	}
	n.counters.Reelections++
	n.campaign()
	n.afterEvent()
	n.assertInvariants()
	return nil
}

// Inherited reports whether the node leads an authority handed on to it.
func (n *Node) Inherited() bool {
	l, ok := n.phase.(*leading)
	return ok && l.inherited
}

// HandoffCandidates lists the other acceptors of the configuration in force
// that answered this leadership within the last two CheckQuorum windows,
// most caught up first by the chosen index each last acknowledged (ties in
// member order): the successors a graceful shutdown tries.
func (n *Node) HandoffCandidates() []NodeID {
	l, ok := n.phase.(*leading)
	if !ok {
		return nil
	}
	var out []NodeID
	for i, id := range n.sys.Members() {
		if id != n.cfg.ID && (l.live.Has(i) || l.heard.Has(i)) {
			out = append(out, id)
		}
	}
	slices.SortStableFunc(out, func(a, b NodeID) int {
		ca, cb := l.acked[a], l.acked[b]
		switch {
		case ca > cb:
			return -1
		case ca < cb:
			return 1
		}
		return 0
	})
	return out
}
