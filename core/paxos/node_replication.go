package paxos

import (
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/quorum"
)

// tickLeader: the leader beats every HeartbeatTicks (carrying the commit
// watermark, re-sending pending Accepts, Noop-filling up to reported vote
// watermarks) and runs CheckQuorum once per election timeout.
func (n *Node) tickLeader(l *leading) {
	if l.quiet {
		// Nothing to beat for until something wakes it (node_quiet.go);
		// a scrub page its host granted still times out.
		if n.scrub.page != nil {
			n.scrubAdvance(l, 1, false)
		}
		return
	}
	l.heartbeatElapsed++
	if l.heartbeatElapsed >= n.opts.HeartbeatTicks {
		l.heartbeatElapsed = 0
		n.broadcastHeartbeat(l)
		n.resendPending(l)
		if l.ctrl != nil {
			n.ctrlAsk(l)
		} else {
			n.noopFill(l)
		}
		n.collect(l)
	}
	if !n.tickCtrl(l) || !n.tickInherited(l) {
		return
	}
	n.tickScrub(l)
	l.checkElapsed++
	if l.checkElapsed >= n.electionTimeout {
		// CheckQuorum: a leader that heard from no Phase-2 quorum (on a grid,
		// of every column) for a whole election timeout cannot commit; it
		// steps down so a reachable node can lead.
		if !n.sys.Phase2Everywhere(l.live) {
			n.counters.CheckQuorumDowns++
			n.stepDown()
			return
		}
		l.heard = l.live
		l.live = 0
		l.live = l.live.Add(n.me)
		l.checkElapsed = 0
	}
}

// broadcastHeartbeat tells every peer the leader's ballot and commit
// watermark. A heartbeat waits for its batch to be durable.
func (n *Node) broadcastHeartbeat(l *leading) {
	c := n.lrn.chosenIndex
	var cfg quorum.System
	var since Ballot
	var fence Slot
	if n.matchmakers() {
		// With matchmakers a beat also carries the election fence, the
		// followers' read basis (node_reads.go).
		cfg, since, fence = n.sys, n.belief.Since, l.recoverEnd
	}
	beat := Message{Type: MsgHeartbeat, Ballot: l.ballot, Commit: c, Config: cfg, Since: since, Watermark: fence, Quiet: n.canQuiesce(l)}
	if !beat.Quiet {
		clear(l.quietAcks)
	}
	n.tellMatchmakers(&beat)
	for _, id := range n.heartbeatAddressees(l) {
		if id != n.cfg.ID {
			beat.To = id
			n.send(beat)
		}
	}
	n.lastCommitSent = max(n.lastCommitSent, c)
	// The replicas are learners too: they hear the values chosen since the
	// last push, then the beat.
	n.pushCommit(l, c)
	n.beatReplicas(beat)
}

// flushCommit announces a moved commit watermark in a Commit message. It is
// never piggybacked on an Accept: Accepts may leave before their batch is
// durable and a decision may not.
func (n *Node) flushCommit() {
	l, ok := n.phase.(*leading)
	c := n.lrn.chosenIndex
	if !ok || c <= n.lastCommitSent {
		return
	}
	if n.delegating(l) && !l.ownDecided {
		// The proxies announced every decision since the last Commit to
		// every acceptor; the replicas still hear the values from the
		// leader.
		n.lastCommitSent = c
		n.pushCommit(l, c)
		return
	}
	l.ownDecided = false
	for _, id := range n.sys.Members() {
		if id != n.cfg.ID {
			n.send(Message{Type: MsgCommit, To: id, Ballot: l.ballot, Commit: c})
		}
	}
	n.lastCommitSent = c
	n.pushCommit(l, c)
}

// resendPending re-sends up to ResendBatch open Accepts, from a fair cursor,
// so a lost Accept or Accepted is repaired without a timer per slot.
func (n *Node) resendPending(l *leading) {
	base, end := l.rs.log.base, l.unsent
	if base >= end {
		return
	}
	if l.resendCursor < base || l.resendCursor >= end {
		l.resendCursor = base
	}
	sent := 0
	for s := l.resendCursor; s < end && sent < n.opts.ResendBatch; s++ {
		if r := l.rs.at(s); r != nil && r.sent {
			n.redelegate(l, r)
			n.cur.accepts = append(n.cur.accepts, SlotCommand{Slot: s, Ballot: l.ballot, Command: r.cmd})
			sent++
		}
		l.resendCursor = s + 1
	}
}

// noopFill proposes Noops up to the highest vote watermark an acceptor
// reported, so a slot a previous leadership opened beyond this leader's
// frontier gets decided and quorum reads waiting on it finish. Only a
// Phase-1-backed leadership may gap-fill, and every leadership here is.
func (n *Node) noopFill(l *leading) {
	for l.nextSlot <= min(l.fillTo, SlotMax) && int(l.nextSlot-(n.lrn.chosenIndex+1)) < n.opts.ProposeQueueMax {
		n.counters.GapFills++
		n.pin(l, n.openRound(l, journal.Noop()))
	}
}

// handleHeartbeat: a leader at or above the promise is followed; a stale
// one is told so with a Nack (so it steps down at once).
func (n *Node) handleHeartbeat(m Message) {
	if n.matchmakers() == m.Config.IsZero() {
		return // a Heartbeat names its configuration exactly when matchmakers run
	}
	if m.Leader != 0 {
		n.handleHandoffNotice(m)
		return
	}
	if !n.followLeader(m) {
		return
	}
	n.followMatchmakers(m)
	if n.matchmakers() {
		// A leader's beat is a won ballot: its configuration is in force,
		// and its fence is the read basis.
		n.adopt(Configuration{Ballot: m.Ballot, Since: m.Since, Acceptors: m.Config})
		if n.belief.Ballot == m.Ballot {
			if n.basisBallot != m.Ballot {
				n.basisBallot, n.basisFence = m.Ballot, 0
			}
			n.basisFence = max(n.basisFence, m.Watermark)
		}
	}
	n.learnCommit(m.Ballot, m.Commit, m.From)
	ack := Message{Type: MsgHeartbeatAck, To: m.From, Ballot: m.Ballot, Commit: n.lrn.chosenIndex,
		Watermark: n.acc.VoteWatermark(), Quiet: n.followQuiet(m)}
	n.tellMatchmakers(&ack)
	n.send(ack)
}

func (n *Node) handleHeartbeatAck(m Message, from int) {
	n.followMatchmakers(m)
	l, ok := n.phase.(*leading)
	if !ok || m.Ballot != l.ballot || from < 0 {
		if !ok {
			n.answerNotice(m)
		}
		return
	}
	l.live = l.live.Add(from)
	l.fillTo = max(l.fillTo, m.Watermark)
	if l.acked == nil {
		l.acked = map[NodeID]Slot{}
	}
	l.acked[m.From] = max(l.acked[m.From], m.Commit)
	if l.inherited && m.Commit > n.lrn.chosenIndex {
		// A member knows more chosen slots than its leader: a successor
		// handed a frontier above its own chosen log (node_handoff.go)
		// fetches the rest from whoever has it, the predecessor perhaps
		// gone. (An elected leader's own recovery covers its prefix.)
		n.knownCommit = max(n.knownCommit, m.Commit)
		n.requestCatchUp(m.From)
	}
	if m.Commit >= l.recoverEnd {
		l.gc.fenced = l.gc.fenced.Add(from)
	}
	n.quietAcked(l, m)
}

// handleCommit learns a commit watermark. Its sender leads at the ballot:
// the ballot's owner, or the successor it handed the leadership to.
func (n *Node) handleCommit(m Message) {
	if m.Ballot.IsZero() {
		return
	}
	if m.Leader != 0 {
		// A proxy's Commit: heard only from a listed proxy (one the
		// operator removed still answers its old rounds), and never a
		// leader hint (its sender is no node).
		if n.fromProxy(m) {
			n.handleProxyCommit(m)
		}
		return
	}
	if n.ownBallot().Less(m.Ballot) {
		n.stepDown()
	}
	if !m.Ballot.Less(n.acc.Promised()) {
		n.leaderHint = m.From
		n.resetElectionTimer()
	}
	n.learnCommit(m.Ballot, m.Commit, m.From)
}

// learnCommit applies a watermark c from the leader of ballot b: every slot
// <= c is chosen, and a record held at exactly ballot b is the chosen value
// (the proposer of b proposed one value per slot, and it announced the
// slot chosen). A slot held at another ballot, or not held, is fetched by
// catch-up.
func (n *Node) learnCommit(b Ballot, c Slot, from NodeID) {
	n.knownCommit = max(n.knownCommit, c)
	for s := n.lrn.chosenIndex + 1; s <= c; s++ {
		rb, cmd, ok := n.acc.Record(s)
		if !ok || rb != b {
			break
		}
		n.lrn.markChosen(s, cmd)
	}
	if n.lrn.chosenIndex < c {
		n.requestCatchUp(from)
	}
}

// commitHint is the highest commit watermark heard.
func (n *Node) commitHint() Slot { return n.knownCommit }
