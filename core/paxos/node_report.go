package paxos

import "github.com/parosdb/paros/core/journal"

// This file is what a node reports of itself, read only: its role and
// leader, the acceptor's promise, the learner's progress and fold, the
// recovery counters, and pages of the fold.

// ID is this node's id.
func (n *Node) ID() NodeID { return n.cfg.ID }

// IsLeader reports whether the node leads (Phase 1 won, not deposed).
func (n *Node) IsLeader() bool { _, ok := n.phase.(*leading); return ok }

// Role names the proposer phase (follower, candidate or leader), or
// "replica" on a replica node.
func (n *Node) Role() string {
	if n.cfg.Replica {
		return "replica"
	}
	return n.phase.phaseName()
}

// LeaderBallot is the ballot the node leads at (zero when not leading).
func (n *Node) LeaderBallot() Ballot {
	if l, ok := n.phase.(*leading); ok {
		return l.ballot
	}
	return Ballot{}
}

// LeaderHint names the node believed to lead (0 = unknown).
func (n *Node) LeaderHint() NodeID {
	if n.IsLeader() {
		return n.cfg.ID
	}
	return n.leaderHint
}

// Promised is the acceptor's promise.
func (n *Node) Promised() Ballot { return n.acc.Promised() }

// ChosenIndex is the highest contiguous chosen slot.
func (n *Node) ChosenIndex() Slot { return n.lrn.ChosenIndex() }

// Applied is the highest slot folded.
func (n *Node) Applied() Slot { return n.lrn.Applied() }

// Floor is the first retained slot.
func (n *Node) Floor() Slot { return n.lrn.Floor() }

// State is the journal state the fold reached.
func (n *Node) State() journal.State { return n.lrn.State() }

// Acceptor exposes the acceptor for audits (read only).
func (n *Node) Acceptor() *Acceptor { return n.acc }

// Learner exposes the learner for audits (read only).
func (n *Node) Learner() *Learner { return n.lrn }

// Counters returns how often each recovery path fired.
func (n *Node) Counters() Counters {
	c := n.counters
	c.ColdReads = n.cold.reads
	return c
}

// ReadLog serves a page from the fold. Call it after
// a ReadState for the read came back OK.
func (n *Node) ReadLog(from journal.Seq, limit, maxBytes int) LogRead {
	return n.lrn.Read(from, limit, maxBytes)
}
