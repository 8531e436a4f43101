package paxos

import (
	"slices"

	"github.com/parosdb/paros/core/quorum"
)

// matchmaking: the first step of a round change on a deployment with
// matchmakers (Matchmaker Paxos §3). The candidate registers (ballot, C_b)
// with the matchmakers and sends no Prepare before a matchmaker quorum has
// answered; their replies carry the registrations below the ballot, whose
// union above the highest watermark is the history H_b.
type matchmaking struct {
	ballot  Ballot
	own     Configuration
	reconf  bool
	replies map[NodeID]Message
}

func (*matchmaking) phaseName() string { return "candidate" }

// probe is a node learning the effective configuration before its first
// campaign since boot: it registers nothing, so a node that rebooted to its
// bootstrap belief cannot put a superseded configuration into the registry.
type probe struct {
	replies map[NodeID]Message
}

// matchmakers reports whether this deployment runs Matchmaker Paxos.
func (n *Node) matchmakers() bool { return len(n.mms.Members) > 0 }

// matchQuorum reports whether answers from ids hold a majority of the
// matchmaker set (matchmaker quorums are majorities only).
func (n *Node) matchQuorum(replies map[NodeID]Message) bool {
	return 2*len(replies) > len(n.mms.Members)
}

// campaignMatched opens a round change with matchmakers: an ordinary
// campaign registers the configuration the node believes in force (a
// belief); a reconfiguration registers the operator's sys (a fact).
func (n *Node) campaignMatched(sys quorum.System, reconf bool) {
	if !reconf {
		switch {
		case !n.learned:
			n.startProbe()
			return
		case n.belief.IsZero() || !n.belief.Acceptors.Contains(n.cfg.ID):
			// A joiner that has not learned its configuration, and a
			// removed node, never campaign: they answer Phase 1 and wait.
			n.resetElectionTimer()
			n.retractAbandoned()
			return
		}
		sys = n.belief.Acceptors
	}
	b, ok := n.nextBallot()
	if !ok {
		return
	}
	own := Configuration{Ballot: b, Since: n.belief.Since, Acceptors: sys}
	if reconf {
		n.counters.Reconfigurations++
		own.Since = b
	}
	// The registration binds b to sys at the matchmakers: if sys names this
	// node, the node is a member of a configuration at b, and no retire
	// below b may be honoured (a stale belief registered by a node cut off
	// from its removal would otherwise let it retire while a later Phase 1
	// still needs it; found by the core's retirement test).
	if sys.Contains(n.cfg.ID) && n.ownMember.Less(b) {
		n.ownMember = b
	}
	n.probe = nil // a reconfiguration needs no probe: it names its configuration
	n.phase = &matchmaking{ballot: b, own: own, reconf: reconf, replies: map[NodeID]Message{}}
	n.registered, n.retractedBy = b, nil
	// The candidate promises its ballot before it registers it: the Match
	// waits for that promise to be durable, so a candidate that crashes
	// mid-matchmaking never reuses the ballot after reboot for another
	// configuration (a ballot is bound to one configuration, never
	// edited; the simulator's binding oracle found the reuse).
	n.acc.raisePromise(b)
	for _, id := range n.mms.Members {
		n.send(Message{Type: MsgMatch, To: id, Ballot: b, Config: sys, Reconf: reconf, Prepared: n.prepared, Generation: n.mms.Generation})
	}
}

// retractAbandoned is a node that will not campaign again for now (a
// removed node, a joiner) giving up the registrations it made and never
// ran Phase 1 at: any matchmaking in flight is abandoned first, and every
// matchmaker is asked to retract the node's beliefs in (prepared,
// registered] (a Match without a configuration). A campaigning node needs
// no such message: its next Match carries prepared and retracts them. The
// request is repeated at every election timeout until every matchmaker
// answered MatchRetracted (handleRetracted): a matchmaker that missed it,
// or was down, still holds the stale registration, and a lost request
// must not keep every later candidate from winning.
func (n *Node) retractAbandoned() {
	if _, ok := n.phase.(*matchmaking); ok {
		n.phase = following{}
	}
	if !n.prepared.Less(n.registered) || n.retracted == n.registered {
		return
	}
	n.counters.Retractions++
	for _, id := range n.mms.Members {
		n.send(Message{Type: MsgMatch, To: id, Ballot: n.registered, Prepared: n.prepared, Generation: n.mms.Generation})
	}
}

// handleRetracted counts a matchmaker's answer that it retracted this
// node's abandoned registrations through m.Ballot. Once every matchmaker
// did, none holds a registration of this node's own naming it that no
// Phase 1 ran at: its own registrations no longer keep it from retiring
// (MayRetire), and it stops asking.
func (n *Node) handleRetracted(m Message) {
	if m.Ballot != n.registered || n.retracted == n.registered {
		return
	}
	if n.retractedBy == nil {
		n.retractedBy = map[NodeID]bool{}
	}
	n.retractedBy[m.From] = true
	if len(n.retractedBy) < len(n.mms.Members) {
		return
	}
	// A registration of its own it ran Phase 1 at raised lastMember when
	// the Phase 1 opened (learnBallotConfig), so ownMember is no longer
	// needed for any of them.
	n.retracted, n.retractedBy, n.ownMember = n.registered, nil, Ballot{}
}

// startProbe asks every matchmaker for the effective configuration.
func (n *Node) startProbe() {
	n.resetElectionTimer()
	n.counters.Probes++
	n.probe = &probe{replies: map[NodeID]Message{}}
	for _, id := range n.mms.Members {
		n.send(Message{Type: MsgProbe, To: id, Generation: n.mms.Generation})
	}
}

// handleMatchReply folds a matchmaker's answer to a probe or to this
// node's registration.
func (n *Node) handleMatchReply(m Message) {
	if !n.mms.Has(m.From) || m.Generation != n.mms.Generation {
		return // an answer about another generation of the set
	}
	if m.Refusal >= MatchStopped {
		n.handleGenerationRefusal(m)
		return
	}
	if m.Ballot.IsZero() {
		n.handleProbeReply(m)
		return
	}
	if m.Refusal == MatchRetracted {
		n.handleRetracted(m)
		return
	}
	mk, ok := n.phase.(*matchmaking)
	if !ok || m.Ballot != mk.ballot || m.Refusal == MatchClosed {
		return // a closed matchmaker judged nothing: it is no answer
	}
	if m.Refusal != MatchOK {
		// A refusal abandons the campaign; the next one opens above the
		// refuser's highest registration (no leapfrogging below it). The
		// ballot is diagnostic only: Validate bounded it.
		n.counters.MatchRefusals++
		if n.highestSeen.Less(m.Refused) {
			n.highestSeen = m.Refused
		}
		n.stepDown()
		return
	}
	mk.replies[m.From] = m
	if !n.matchQuorum(mk.replies) {
		return
	}
	n.finishMatchmaking(mk)
}

// finishMatchmaking turns a matchmaker quorum's answers into Phase 1: H_b is
// the union of the registrations at or above the highest watermark any of
// them reported, and the effective configuration is the highest-ballot
// reconfiguration any of them holds.
func (n *Node) finishMatchmaking(mk *matchmaking) {
	var wm Ballot
	var eff Registration
	for _, r := range mk.replies {
		if wm.Less(r.GC) {
			wm = r.GC
		}
		if eff.Ballot.Less(r.Effective.Ballot) {
			eff = r.Effective
		}
	}
	if !mk.reconf && !eff.IsZero() && n.belief.Ballot.Less(eff.Ballot) && !SameSystem(eff.Acceptors, mk.own.Acceptors) {
		// StaleConfiguration: this node missed a completed reconfiguration.
		// It may not be elected under the superseded configuration: it
		// adopts the effective one and campaigns again. Only facts abort
		// a campaign; beliefs never do (two candidates adopting each
		// other's beliefs would flip-flop forever). A reconfiguration below
		// the ballot of the leadership this node believes in does not
		// abort either: that leadership matchmade after it, so it either
		// saw it or it never reached a matchmaker quorum (a livelock the
		// core's randomized check found: the "adoption" changed nothing
		// and the campaign restarted at once, forever). Adopting strictly
		// raises the belief's ballot, so this branch runs once per fact.
		n.counters.StaleConfigurations++
		n.adopt(Configuration{Ballot: eff.Ballot, Since: eff.Ballot, Acceptors: eff.Acceptors})
		n.phase = following{}
		n.campaign()
		return
	}
	configs := []quorum.System{mk.own.Acceptors}
	for _, id := range n.mms.Members { // matchmaker order: deterministic
		r, ok := mk.replies[id]
		if !ok {
			continue
		}
		for _, reg := range r.History {
			if reg.Ballot.Less(wm) || !reg.Ballot.Less(mk.ballot) {
				continue
			}
			if !slices.ContainsFunc(configs, func(s quorum.System) bool { return SameSystem(s, reg.Acceptors) }) {
				configs = append(configs, reg.Acceptors)
			}
		}
	}
	n.startPhase1(mk.ballot, configs, mk.own)
}

// handleProbeReply folds a probe answer; a matchmaker quorum's highest
// effective configuration replaces a bootstrap belief.
func (n *Node) handleProbeReply(m Message) {
	if n.probe == nil || m.Refusal != MatchOK {
		return
	}
	n.probe.replies[m.From] = m
	if !n.matchQuorum(n.probe.replies) {
		return
	}
	var eff Registration
	for _, r := range n.probe.replies {
		if eff.Ballot.Less(r.Effective.Ballot) {
			eff = r.Effective
		}
	}
	n.probe = nil
	n.learned = true
	if !eff.IsZero() && (n.belief.IsZero() || n.belief.Ballot.Less(eff.Ballot)) {
		n.adopt(Configuration{Ballot: eff.Ballot, Since: eff.Ballot, Acceptors: eff.Acceptors})
	}
	if n.eager {
		// The probe was the first half of an eager node's first campaign
		// (CampaignSoon): the campaign itself starts at the next tick, not
		// an election timeout later.
		n.electionElapsed = max(n.electionElapsed, n.electionTimeout-1)
	}
}

// learnBallotConfig records the configuration of a ballot the node
// promised or follows: an acceptor votes in an Accept of ballot b only when
// it knows C_b and is one of its members.
func (n *Node) learnBallotConfig(c Configuration) {
	if n.ballotCfg.IsZero() || !c.Ballot.Less(n.ballotCfg.Ballot) {
		n.ballotCfg = c
		if n.belief.Since.Less(c.Since) {
			// This node now answers for a newer configuration than the
			// one its open reads count in: its own answer in them no
			// longer names the newest configuration it knows.
			n.abandonReads()
		}
	}
	if c.Acceptors.Contains(n.cfg.ID) && n.lastMember.Less(c.Ballot) {
		n.lastMember = c.Ballot
	}
}

// adopt makes c the configuration this node believes in force. The
// quorum system every tally asks changes with it, so reads opened against
// another configuration are abandoned (their argument is
// single-configuration: the client is answered unserved and asks again).
func (n *Node) adopt(c Configuration) {
	n.learned = true
	// A configuration learned any way ends a probe: a late probe answer
	// must not replace it (the fuzzer found a leader adopting another
	// configuration than its ballot's from a boot-time probe's stragglers).
	n.probe = nil
	// The next campaign opens above the believed configuration's ballot,
	// so a ballot this node registers is never below the configuration it
	// believes (else winning it could not make C_b the belief; found by the
	// fuzzer).
	if n.highestSeen.Less(c.Ballot) {
		n.highestSeen = c.Ballot
	}
	n.learnBallotConfig(c)
	if !n.belief.IsZero() && c.Ballot.Less(n.belief.Ballot) {
		return
	}
	changed := n.belief.IsZero() || !SameSystem(n.belief.Acceptors, c.Acceptors) || n.belief.Since != c.Since
	n.belief = c
	if !changed {
		return
	}
	n.sys = c.Acceptors
	n.me = -1
	if i, ok := c.Acceptors.IndexOf(n.cfg.ID); ok {
		n.me = i
	}
	n.abandonReads()
}
