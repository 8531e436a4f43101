package paxos

import (
	"math"

	"github.com/parosdb/paros/core/quorum"
)

// campaign opens a round change at a ballot above every ballot seen. On a
// plain deployment that is Phase 1 over the static configuration, over the
// whole suffix from the chosen index (Paxos Made Simple §2.2; Multi-Paxos
// runs one Phase 1 for every slot above the candidate's chosen prefix). With
// matchmakers it is matchmaking first (node_matchmaking.go), and Phase 1
// once a matchmaker quorum answered.
func (n *Node) campaign() {
	if n.matchmakers() {
		n.campaignMatched(quorum.System{}, false)
		return
	}
	b, ok := n.nextBallot()
	if !ok {
		return
	}
	n.startPhase1(b, []quorum.System{n.sys}, Configuration{})
}

// CampaignDue reports whether the next Tick would start a campaign (or
// restart one whose timer ran out): the node does not lead, is neither a
// replica nor quiet, and its election timer expires at that tick. It
// changes nothing.
func (n *Node) CampaignDue() bool {
	if _, leading := n.phase.(*leading); leading || n.cfg.Replica || n.quiet || n.contract.fault != nil {
		return false
	}
	return n.electionElapsed+1 >= n.electionTimeout
}

// HoldCampaign tells the node whether its host's campaign budget lets it
// campaign at its next Tick. A held node stays due, and campaigns at the
// first tick it is not held. It is a liveness policy only: the budget
// spreads a machine's elections over time (10,000 journals whose leader's
// machine died all campaigning at once congested the links until no
// campaign finished); Paxos is safe whoever campaigns when.
func (n *Node) HoldCampaign(hold bool) { n.campaignHeld = hold }

// CampaignSoon makes the next tick end the follower's election timeout,
// and makes its campaigns eager: at every tick, Phase 1 asks again the
// members that have not answered yet (reaskSilent). The host calls it on
// the first member in the election order of a journal created at run
// time: its members boot empty, so no leader can exist yet, and each
// starts serving the journal when it folds the creation, a moment apart.
// A Prepare that reached a member not serving the journal yet was dropped;
// without asking again the campaign would wait out a whole election
// timeout. Liveness only: a campaign is always safe, and so is a Prepare
// sent twice at one ballot (an acceptor answers it as it did).
func (n *Node) CampaignSoon() {
	n.electionElapsed = max(n.electionElapsed, n.electionTimeout-1)
	n.eager = true
}

// reaskSilent sends the campaign's Prepare again to every member it was
// sent to that has answered nothing yet (no page, no grant, no refusal).
func (n *Node) reaskSilent(c *campaigning) {
	el := c.el
	for _, id := range el.addressees() {
		if id == n.cfg.ID || el.granted.has(id) || el.refused.has(id) {
			continue
		}
		if _, paged := el.pages[id]; paged {
			continue
		}
		n.counters.Reasked++
		n.sendPrepare(id, el, c.own)
	}
}

// sendPrepare sends election el's Prepare to id: the ballot, the first
// slot it asks about, and the ballot's configuration.
func (n *Node) sendPrepare(id NodeID, el *election, own Configuration) {
	n.send(Message{Type: MsgPrepare, To: id, Ballot: el.ballot, Slot: el.from, Config: own.Acceptors, Since: own.Since})
}

// Campaigning reports whether the node is in a round change (matchmaking
// or Phase 1) it started.
func (n *Node) Campaigning() bool {
	switch n.phase.(type) {
	case *campaigning, *matchmaking:
		return true
	}
	return false
}

// nextBallot draws the campaign's ballot: one round above everything seen.
// Every ballot the node has seen or promised passed Validate (or boot's
// validateBoot), so the sum cannot wrap; a round past the bound would be
// refused by every peer, so the node stays a follower instead (only a
// member lying about its ballots can drive a cell there).
func (n *Node) nextBallot() (Ballot, bool) {
	round := max(n.highestSeen.Round, n.acc.Promised().Round) + 1
	if round > BallotRoundMax {
		n.counters.Exhausted++
		n.resetElectionTimer()
		return Ballot{}, false
	}
	n.counters.Campaigns++
	b := Ballot{Round: round, Node: n.cfg.ID}
	n.highestSeen = b
	n.leaderHint = 0
	n.resetElectionTimer()
	return b, true
}

// startPhase1 opens Phase 1 of ballot b, needing a Phase-1 quorum of every
// configuration in configs. own is the ballot's configuration C_b on a
// deployment with matchmakers (zero on a plain one): every Prepare carries
// it, so an acceptor learns which configuration the ballot's Accepts belong
// to before it votes in them.
func (n *Node) startPhase1(b Ballot, configs []quorum.System, own Configuration) {
	from := n.lrn.chosenIndex + 1
	el := newElection(b, from, configs, &n.contract)
	n.phase = &campaigning{el: el, own: own}
	if n.prepared.Less(b) {
		n.prepared = b
	}
	// The candidate promises its own ballot first. The Prepares wait for
	// that promise to be durable (Message.EarlyOK), so a crashed candidate
	// can never reuse the ballot after reboot.
	self := n.acc.Prepare(b, from, math.MaxInt)
	if !self.granted {
		panic("paxos: a candidate refused its own fresh ballot")
	}
	if !own.IsZero() {
		n.learnBallotConfig(own)
	}
	el.absorb(n.cfg.ID, self.entries, self.faulty, true)
	for _, id := range el.addressees() {
		if id != n.cfg.ID {
			n.sendPrepare(id, el, own)
		}
	}
	n.maybeWinElection()
}

// handlePrepare answers Phase 1: a Promise page, or a Nack naming the
// promise and the floor.
func (n *Node) handlePrepare(m Message) {
	if m.Ballot.IsZero() || m.Ballot.Node != m.From || m.Slot == 0 {
		return
	}
	if n.matchmakers() == m.Config.IsZero() {
		return // a Prepare names its configuration exactly when matchmakers run
	}
	res := n.acc.Prepare(m.Ballot, m.Slot, n.opts.PromiseBatch)
	if res.unanswerable {
		return // a cold read failed: no page can be told (StorageFault is raised)
	}
	if !res.granted {
		n.send(Message{Type: MsgNack, To: m.From, Ballot: n.acc.Promised(), Refused: m.Ballot, Slot: n.acc.Floor()})
		return
	}
	if n.ownBallot().Less(m.Ballot) {
		n.stepDown()
	}
	if n.matchmakers() {
		// A removed node answers Phase 1 too: removed is not shut down.
		if !m.Config.Contains(n.cfg.ID) {
			n.counters.RemovedPromises++
		}
		n.learnBallotConfig(Configuration{Ballot: m.Ballot, Since: m.Since, Acceptors: m.Config})
	}
	// A promise is no evidence of a live leader, so it does not restart
	// this node's election timer (only a leader's messages do). Restarting
	// it let lagging candidates, whose paged Phase 1 kept being overtaken
	// by each other's higher ballots, hold every up-to-date node silent
	// forever (sweep seed 20416): now an up-to-date node times out and
	// wins with a Phase 1 that has nothing to page.
	n.send(Message{Type: MsgPromise, To: m.From, Ballot: m.Ballot, Slot: m.Slot,
		Entries: res.entries, Faulty: res.faulty, Next: res.next})
}

// ownBallot is the ballot the node campaigns or leads at (zero otherwise).
func (n *Node) ownBallot() Ballot {
	switch p := n.phase.(type) {
	case *leading:
		return p.ballot
	case *campaigning:
		return p.el.ballot
	case *matchmaking:
		return p.ballot
	}
	return Ballot{}
}

// handlePromise folds one Promise page; a non-terminal page asks for the
// next one.
func (n *Node) handlePromise(m Message) {
	if l, ok := n.phase.(*leading); ok {
		if l.ctrl != nil && m.Ballot == l.ballot {
			n.foldCtrlPromise(l, m)
		}
		return
	}
	c, ok := n.phase.(*campaigning)
	if !ok || m.Ballot != c.el.ballot || m.Slot < c.el.from || !c.el.addressed(m.From) {
		return
	}
	if c.el.granted.has(m.From) {
		return
	}
	if want := c.el.pageFrom(m.From); m.Slot != want {
		return // a duplicate or reordered page
	}
	terminal := m.Next == 0
	if !terminal && m.Next <= m.Slot {
		return // malformed continuation
	}
	c.el.absorb(m.From, m.Entries, m.Faulty, terminal)
	if n.contract.fault != nil {
		return // the page contradicted another: count nothing, lead on nothing
	}
	// A page is progress: the campaign's timer restarts, so a Phase 1 that
	// pages through a long suffix (small PromiseBatch, slow links) is not
	// abandoned mid-way and restarted at a higher ballot forever — a
	// livelock the simulator found (seed 5891 of the 1,000-seed sweep from
	// 5000): the candidate's ever-higher ballots deposed every leader
	// while its own Phase 1 never finished within one election timeout.
	n.electionElapsed = 0
	if !terminal {
		c.el.setPageFrom(m.From, m.Next)
		n.send(Message{Type: MsgPrepare, To: m.From, Ballot: c.el.ballot, Slot: m.Next, Config: c.own.Acceptors, Since: c.own.Since})
		return
	}
	n.maybeWinElection()
}

// handleNack: a refusal names the refuser's promise and floor. A higher
// promise deposes this node's campaign or leadership; a floor above the
// chosen prefix means this node is behind and must catch up first.
func (n *Node) handleNack(m Message) {
	own := n.ownBallot()
	if !own.IsZero() && own.Less(m.Ballot) {
		n.stepDown()
	} else if c, ok := n.phase.(*campaigning); ok && m.Refused == own && c.el.addressed(m.From) {
		c.el.refuse(m.From)
		if c.el.result() == quorum.Lost {
			n.stepDown()
		}
	}
	if m.Slot > n.lrn.chosenIndex+1 {
		n.requestCatchUp(m.From)
	}
}

func (n *Node) maybeWinElection() {
	c, ok := n.phase.(*campaigning)
	if !ok || c.el.result() != quorum.Won {
		return
	}
	if !c.own.IsZero() {
		// The ballot's configuration is in force from here: a leader's
		// Phase 2 goes to C_b only.
		n.adopt(c.own)
		if !SameSystem(n.sys, c.own.Acceptors) {
			// The belief is newer than the ballot just won (cannot happen:
			// campaigns open above the belief); never lead a ballot under
			// another configuration than the one it is bound to.
			n.stepDown()
			return
		}
		if !c.own.Acceptors.Contains(n.cfg.ID) {
			// A reconfiguration that removed its own proposer: the new
			// configuration is registered and every old configuration
			// promised the ballot, so the members of C_new take over
			// (their campaigns find it effective). This node resigns
			// rather than lead acceptors it is not one of.
			n.counters.ResignedRemoved++
			n.stepDown()
			return
		}
	}
	n.becomeLeader(c.el, c.own)
}

// becomeLeader installs a Phase-1-backed leadership and queues its recovery:
// every slot from the election's first slot to the highest reported one is
// re-proposed with the highest-ballot value found (P2c) or filled with a
// Noop, and a slot whose highest report is a damaged record is settled by
// the CTRL table (ctrl.go), which may pause the recovery there.
func (n *Node) becomeLeader(el *election, own Configuration) {
	n.counters.Elections++
	l := &leading{ballot: el.ballot, rs: newRounds(el.ballot, el.from), recoverEnd: el.maxSlot, own: own}
	if !own.IsZero() {
		l.history, l.config = el.configs, own.Acceptors
		if own.Since == el.ballot {
			n.counters.ReconfiguredElections++
		}
	}
	l.nextSlot, l.unsent = el.from, el.from
	n.phase = l
	n.leaderHint = n.cfg.ID
	l.live = l.live.Add(n.me)
	if !n.recoverSlots(l, el, el.maxSlot) {
		return
	}
	// Announce the new leadership at once so followers stop campaigning.
	n.broadcastHeartbeat(l)
}
