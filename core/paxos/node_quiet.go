package paxos

// Quiescence: a journal with nothing to do costs nothing.
//
// A leader whose log is settled (no round open, nothing held, no recovery
// or CTRL wait, no read open, its garbage collection effective) and whose
// members all reported its chosen index asks them to fall quiet: its next
// beat carries Quiet. A member that is caught up to the beat's commit,
// with no read or catch-up open, falls quiet and says so in its ack
// (Quiet). Once every member acked Quiet at the leader's chosen index, the
// leader stops beating too. A quiet node is not ticked by its host
// (Quiescent): no beat, no election timer, no CheckQuorum.
//
// Anything else wakes a quiet node: any message but a quiet beat or its
// ack, any proposal, read, reconfiguration or handoff, and its host's Wake
// when the leader's machine is found dead (no machine beat for an election
// timeout). A follower woken restarts its election timer in full, so a
// wake never makes it campaign at once; a leader woken beats at its next
// tick and gives CheckQuorum a whole window.
//
// Why it is safe: Paxos never depends on a timer; quiescence only stops
// timers. What it can cost is liveness, and each way a quiet journal can
// need a leader wakes it: a write or read reaches some node (a call wakes
// it; a follower forwards or campaigns), the leader's machine dies (the
// host's machine beat stops: Wake), the leader's node reboots (its new
// incarnation is not quiet: it campaigns, and its Prepare wakes the
// others), a member misses the quiet beat (it is not quiet, and the leader,
// short of its ack, never stops beating).

// canQuiesce reports whether leader l has nothing left that needs a beat.
func (n *Node) canQuiesce(l *leading) bool {
	c := n.lrn.chosenIndex
	if !n.opts.Quiesce || n.cfg.Replica || len(n.cfg.Replicas) > 0 || len(n.cfg.Proxies) > 0 ||
		l.inherited || l.ctrl != nil || l.nextSlot != c+1 || l.unsent != l.nextSlot || l.inflight != 0 ||
		c < l.recoverEnd || l.fillTo > c || len(n.reads) > 0 || n.catchUpOpen || n.scrub.page != nil {
		return false
	}
	if n.matchmakers() && !l.gc.effective {
		return false
	}
	for _, id := range n.heartbeatAddressees(l) {
		if id != n.cfg.ID && l.acked[id] < c {
			return false
		}
	}
	return true
}

// quietAcked folds a member's Quiet ack at the leader's chosen index; once
// every addressee acked, the leader falls quiet.
func (n *Node) quietAcked(l *leading, m Message) {
	if !m.Quiet || m.Commit != n.lrn.chosenIndex || !n.canQuiesce(l) {
		return
	}
	if l.quietAcks == nil {
		l.quietAcks = map[NodeID]bool{}
	}
	l.quietAcks[m.From] = true
	for _, id := range n.heartbeatAddressees(l) {
		if id != n.cfg.ID && !l.quietAcks[id] {
			return
		}
	}
	if !l.quiet {
		l.quiet = true
		n.counters.Quiesced++
	}
}

// followQuiet decides a follower's answer to a leader's beat m: quiet when
// the beat asks and the follower is caught up with nothing open.
func (n *Node) followQuiet(m Message) bool {
	quiet := m.Quiet && n.opts.Quiesce && !n.cfg.Replica && n.lrn.chosenIndex >= m.Commit &&
		len(n.reads) == 0 && !n.catchUpOpen
	n.quiet = quiet
	return quiet
}

// quietMessage reports whether m leaves a quiet node quiet: a quiet beat
// or a quiet ack, or a scrub page and its answer (a quiet leader scrubs on
// its host's turns, ScrubTurn).
func quietMessage(m Message) bool {
	switch m.Type {
	case MsgHeartbeat, MsgHeartbeatAck:
		return m.Quiet
	case MsgScrub, MsgScrubReply:
		return true
	}
	return false
}

// wake ends quiescence; see the file comment for what each role does.
func (n *Node) wake() {
	if l, ok := n.phase.(*leading); ok {
		if l.quiet {
			l.quiet = false
			l.heartbeatElapsed = n.opts.HeartbeatTicks // beat at the next tick
			l.checkElapsed = 0
			l.live = 0
			l.live = l.live.Add(n.me)
			n.counters.Woken++
		}
		clear(l.quietAcks)
		return
	}
	if n.quiet {
		n.quiet = false
		n.resetElectionTimer()
		n.counters.Woken++
		if p := n.acc.Promised(); n.leaderHint != 0 && n.leaderHint != n.cfg.ID && p.Node == n.leaderHint {
			// Wake the leader too: a woken follower that hears no beat
			// would campaign at the end of its timeout. A non-quiet ack at
			// its ballot wakes it; to a dead leader it is lost, and the
			// timeout runs as it should.
			n.send(Message{Type: MsgHeartbeatAck, To: n.leaderHint, Ballot: p, Commit: n.lrn.chosenIndex,
				Watermark: n.acc.VoteWatermark()})
		}
	}
}

// Wake ends this node's quiescence: its host found the leader's machine
// dead, or has work for it. Waking an awake node does nothing.
func (n *Node) Wake() {
	if n.contract.fault != nil {
		return
	}
	n.wake()
	n.afterEvent()
	n.assertInvariants()
}

// Quiescent reports whether the node may go unticked: a quiet leader or
// follower with no read and no catch-up open.
func (n *Node) Quiescent() bool {
	if len(n.reads) > 0 || n.catchUpOpen {
		return false
	}
	if l, ok := n.phase.(*leading); ok {
		return l.quiet && n.scrub.page == nil // an open page times out by ticks
	}
	return n.quiet
}
