package paxos

import (
	"fmt"
	"slices"
)

// The leader's side of proxy leaders (proxy.go). With Config.Proxies set, a
// settled leadership hands each round's Phase 2 to a proxy instead of
// broadcasting the Accept itself, and learns the decision from the proxy's
// Commit. The proxies take turns by batch, not by slot (slot % proxy_count
// would be the obvious choice): every round whose Accept
// leaves in one Ready goes to one proxy, and the next Ready's to the next,
// so a batch costs the leader one delegation, one vote and one Commit
// whatever the number of proxies (by slot, every batch would go to every
// proxy). Liveness under a dead proxy stays the leader's:
// it keeps the round (its tally, its value), re-delegates it on every
// beat, and after ProxyTakeBackBeats unanswered re-delegations takes it
// back and runs the classic Phase 2. Safety never rests on the fallback:
// two fan-outs of one (slot, ballot, value) are one vote at every acceptor.
//
// Delegation waits for a settled leadership: an election's recovery and
// its gap fills run on the leader (pinned rounds), and no round is
// delegated while a recovery waits on a damaged record or the election
// fence is not yet chosen, so a fresh leadership depends on no proxy. A
// handoff successor re-delegates what it inherited with itself as the
// leader.
//
// With no proxies none of this runs: the message stream is the plain
// deployment's, message for message.

// turnProxy is the proxy whose turn it is: the rounds pumped until the
// next flush go to it.
func (n *Node) turnProxy(l *leading) NodeID {
	return n.cfg.Proxies[l.proxyTurn%len(n.cfg.Proxies)]
}

// healthyProxy is the first proxy after the turn's that is not suspect
// (0 when every proxy is).
func (n *Node) healthyProxy(l *leading) NodeID {
	k := len(n.cfg.Proxies)
	for i := 1; i < k; i++ {
		if p := n.cfg.Proxies[(l.proxyTurn+i)%k]; !l.suspect[p] {
			return p
		}
	}
	return 0
}

// delegating reports whether l hands its new rounds to proxies now.
func (n *Node) delegating(l *leading) bool {
	return len(n.cfg.Proxies) > 0 && l.ctrl == nil && n.lrn.chosenIndex >= l.recoverEnd
}

// pin keeps slot s's round on the leader (a recovery's or a gap fill's).
func (n *Node) pin(l *leading, s Slot) {
	if r := l.rs.log.at(s); r != nil {
		r.pinned = true
	}
}

// custodyOf decides, as the round's Accept first leaves, who runs it: the
// proxy whose turn it is. A suspect proxy (one that lost a round to a
// take-back and announced nothing since: likely dead, and delegating to it
// would stall each round for the whole take-back budget) is skipped for
// the next healthy one, or for the leader itself when every proxy is
// suspect; the round also goes to the suspect as a probe, and the proxy's
// first Commit clears the suspicion.
func (n *Node) custodyOf(l *leading, _ Slot, r *round) {
	if r.pinned || !n.delegating(l) {
		return
	}
	p := n.turnProxy(l)
	if l.suspect[p] {
		r.probe = p
		if p = n.healthyProxy(l); p == 0 {
			n.counters.ProxyBypassed++
			return
		}
	}
	r.custody = p
	r.delegations = 0
	l.delegatedSinceFlush = true
	n.counters.ProxyDelegated++
}

// redelegate is a beat's re-send of a delegated round: to its proxy again,
// or, past the budget, back to the leader for good (and the proxy is
// suspect from then on).
func (n *Node) redelegate(l *leading, r *round) {
	if r.custody == 0 {
		return
	}
	r.delegations++
	if r.delegations > n.opts.ProxyTakeBackBeats {
		if l.suspect == nil {
			l.suspect = map[NodeID]bool{}
		}
		l.suspect[r.custody] = true
		r.custody = 0
		n.counters.ProxyTakenBack++
	}
}

// flushDelegations sends each proxy one Accept with the entries in its
// custody, naming the configuration whose quorums decide them; it returns
// the entries the leader runs itself.
func (n *Node) flushDelegations(l *leading, all []SlotCommand) []SlotCommand {
	if len(n.cfg.Proxies) == 0 {
		return all
	}
	var own []SlotCommand
	byProxy := make([][]SlotCommand, len(n.cfg.Proxies))
	add := func(proxy NodeID, e SlotCommand) {
		i, _ := slices.BinarySearch(n.cfg.Proxies, proxy)
		byProxy[i] = append(byProxy[i], e)
	}
	for _, e := range all {
		r := l.rs.at(e.Slot)
		if r == nil || r.custody == 0 {
			own = append(own, e)
			if r != nil && r.probe != 0 && l.suspect[r.probe] {
				add(r.probe, e)
				r.probe = 0 // one probe per round
			}
			continue
		}
		add(r.custody, e)
	}
	for i, id := range n.cfg.Proxies {
		entries := byProxy[i]
		n.ownVotes(l, id, entries)
		inPages(entries, func(page []SlotCommand) {
			n.send(Message{Type: MsgAccept, To: id, Ballot: l.ballot, Config: n.sys, Entries: page})
		})
	}
	if l.delegatedSinceFlush {
		l.proxyTurn++ // the next batch goes to the next proxy
		l.delegatedSinceFlush = false
	}
	return own
}

// SetProxies replaces the deployment's proxy list (the operator added,
// removed or replaced a proxy machine). No safety argument moves: a proxy
// decides nothing. A leader takes back at once every open round in the
// custody of a proxy that left the list (its classic Phase 2 runs from the
// next beat, or from the next flush for a round not sent yet), and
// forgets what it suspected of it; new rounds take turns among the new
// list. Proxies of rounds in flight answer or are evicted as before.
func (n *Node) SetProxies(ids []NodeID) error {
	n.wake() // a quiet journal has work (node_quiet.go)
	c := n.cfg
	c.Proxies = slices.Clone(ids)
	slices.Sort(c.Proxies)
	if err := c.Validate(); err != nil {
		return err
	}
	for _, id := range c.Proxies {
		if n.sys.Contains(id) {
			return fmt.Errorf("%w: proxy %d is an acceptor of the configuration in force %s", ErrConfig, id, n.sys)
		}
	}
	n.cfg.Proxies = c.Proxies
	if l, ok := n.phase.(*leading); ok {
		for s := l.rs.log.base; s < l.rs.log.end; s++ {
			if r := l.rs.at(s); r != nil && r.custody != 0 && !slices.Contains(n.cfg.Proxies, r.custody) {
				r.custody = 0
				n.counters.ProxyTakenBack++
			}
			if r := l.rs.at(s); r != nil && r.probe != 0 && !slices.Contains(n.cfg.Proxies, r.probe) {
				r.probe = 0
			}
		}
		for id := range l.suspect {
			if !slices.Contains(n.cfg.Proxies, id) {
				delete(l.suspect, id)
			}
		}
		if len(n.cfg.Proxies) > 0 {
			l.proxyTurn %= len(n.cfg.Proxies)
		}
	}
	n.afterEvent()
	n.assertInvariants()
	return nil
}

// Delegated is the number of open rounds the leader holds in a proxy's
// custody (0 on a follower).
func (n *Node) Delegated() int {
	l, ok := n.phase.(*leading)
	if !ok {
		return 0
	}
	k := 0
	for s := l.rs.log.base; s < l.rs.log.end; s++ {
		if r := l.rs.at(s); r != nil && r.custody != 0 {
			k++
		}
	}
	return k
}

// ownVotes tells proxy the leader's own votes on the entries it delegates:
// the proxy fans out to the other addressees only, and the leader's vote
// reaches it as the Accepted every acceptor sends, once the leader's
// record is durable (an Accepted is never early). So the leader sends the
// delegation and its vote, and receives the proxy's Commit: two messages
// out and one in per batch and proxy, whatever the width of the
// configuration.
func (n *Node) ownVotes(l *leading, proxy NodeID, entries []SlotCommand) {
	var votes []SlotVote
	for _, e := range entries {
		if !n.inColumn(e.Slot) {
			continue
		}
		if b, cmd, ok := n.acc.Record(e.Slot); ok && b == l.ballot && cmd.Equal(e.Command) {
			votes = append(votes, SlotVote{Slot: e.Slot, VHash: e.Command.Fingerprint()})
		}
	}
	if len(votes) > 0 {
		n.send(Message{Type: MsgAccepted, To: proxy, Ballot: l.ballot, Votes: votes})
	}
}

// fromProxy reports whether m comes from one of the deployment's proxies
// and is of a kind a proxy sends.
func (n *Node) fromProxy(m Message) bool {
	switch m.Type {
	case MsgAccept, MsgCommit, MsgNack:
		return slices.Contains(n.cfg.Proxies, m.From)
	}
	return false
}

// handleProxyCommit learns the slots a proxy saw a Phase-2 quorum accept at
// m.Ballot, each named with its value's fingerprint. The leader of that
// ballot decides its open rounds whose value has that fingerprint; an
// acceptor marks a slot chosen when its own record at that ballot holds
// that value (it voted for it: one value per slot and ballot). Anything
// else waits for the leader's watermark.
func (n *Node) handleProxyCommit(m Message) {
	if m.Ballot.IsZero() || len(m.Votes) == 0 {
		return
	}
	if l, ok := n.phase.(*leading); ok && l.ballot == m.Ballot {
		if l.suspect[m.From] {
			delete(l.suspect, m.From)
			n.counters.ProxyRecovered++
		}
		for _, v := range m.Votes {
			r := l.rs.at(v.Slot)
			if r != nil && r.tally.Fingerprint() == v.VHash {
				n.counters.ProxyDecided++
				r.open = false
				n.settle(l, v.Slot)
			}
		}
		return
	}
	if m.Ballot.Less(n.acc.Promised()) && n.ownBallot().IsZero() {
		// A stale leadership's decision is still a decision, but this node
		// learns it from its own leader's watermark.
		return
	}
	for _, v := range m.Votes {
		if v.Slot <= n.lrn.chosenIndex {
			continue
		}
		if b, cmd, ok := n.acc.Record(v.Slot); ok && b == m.Ballot && cmd.Fingerprint() == v.VHash {
			n.counters.ProxyLearned++
			n.lrn.markChosen(v.Slot, cmd)
		}
	}
}

// leaderOf is the leader a message from a leader or a proxy names.
func leaderOf(m Message) NodeID {
	if m.Leader != 0 {
		return m.Leader
	}
	return m.From
}
