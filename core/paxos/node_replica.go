package paxos

import (
	"fmt"
	"slices"
)

// The replica tier (docs/guide/replicas.md). A replica node is a Node whose
// only role is the learner: Config.Replica. It is in no configuration and
// never votes: it answers no Prepare, no Accept, no PreRead and no Scrub,
// acks no beat and never campaigns. It steps Commit, Heartbeat,
// CatchUpResponse, TrimmedTo and PreReadAck; it persists each chosen value as
// an OpLearned record (not a vote); it serves quorum reads and journal reads
// exactly as a node does.
//
// How a replica learns values. A Commit carries only the leader's commit
// watermark (docs/design/divergences.md), and a follower learns from it the
// slots where it holds a record at the leader's ballot. A replica holds no
// such record, so the leader pushes the values to it: the Commit it sends a
// replica also carries the newly chosen slots (Entries), the values a classic
// Commit{slot, command} carries, at most one catch-up page of them. A Commit
// that is lost, or a push cut short by the page bound, leaves a gap the next
// Commit or beat shows (its watermark is above the replica's chosen index);
// the replica then asks the leader for the missing range (CatchUpRequest),
// and below the leader's floor the answer is a TrimmedTo, and the replica
// jumps as any node does.
//
// Why a replica never syncs. Every write of a replica node is relaxed: its
// Ready never asks for a sync. Nothing it persists is a promise or a vote;
// its records are values already chosen and durable on a Phase-2 quorum of
// acceptors, its floor and sealed state are re-derivable from a peer's
// TrimmedTo, and every read it serves is confirmed by a fresh quorum read.
// A crash that loses a suffix of its unsynced writes (a store keeps writes
// in order, so what survives is a prefix) boots it further behind, and it
// catches up as after any outage.
//
// Why a replica's record is never a vote. Its records are written only for
// slots already chosen (a pushed or replayed value at or below a leader's
// commit watermark), under no promise; no Prepare ever reads them, so no
// Phase-1 quorum depends on them and a replica disk lost or rotted costs
// nothing but the replica's own catch-up.

// SetReplicas replaces the deployment's replica list (the operator added
// or removed a replica machine). The list is no part of any quorum: a
// leader pushes chosen values to the listed replicas and acceptors answer
// their PreReads and catch-ups, so a change moves no safety argument, and
// the machines of a cell may learn it at different times. A leader pushes
// a new replica the values chosen from then on; what it missed it fetches
// by catch-up (or jumps to the trim point). A replica node whose own id
// leaves the list keeps its store and folds what it already has, but the
// acceptors stop answering it, so its reads go unserved.
func (n *Node) SetReplicas(ids []NodeID) error {
	n.wake() // a quiet journal has work (node_quiet.go)
	c := n.cfg
	c.Replicas = slices.Clone(ids)
	slices.Sort(c.Replicas)
	if err := c.Validate(); err != nil {
		return err
	}
	for _, id := range c.Replicas {
		if n.sys.Contains(id) {
			return fmt.Errorf("%w: replica %d is an acceptor of the configuration in force %s", ErrConfig, id, n.sys)
		}
	}
	n.cfg.Replicas = c.Replicas
	return nil
}

// ReplyOwner is the replica that answers the client for slot s (0 without
// replicas): Config.ReplyOwner.
func (n *Node) ReplyOwner(s Slot) NodeID { return n.cfg.ReplyOwner(s) }

// stepReplica dispatches the messages a replica node steps; every other
// type is dropped (a replica is in no quorum).
func (n *Node) stepReplica(m Message) {
	switch m.Type {
	case MsgCommit, MsgHeartbeat:
		n.replicaLearnCommit(m)
	case MsgCatchUpResponse:
		n.handleCatchUpResponse(m)
	case MsgTrimmedTo:
		n.handleTrimmedTo(m)
	case MsgPreReadAck:
		from, ok := n.sys.IndexOf(m.From)
		if !ok {
			from = -1
		}
		n.handlePreReadAck(m, from)
	}
}

// replicaLearnCommit folds a leader's Commit or Heartbeat: the pushed
// values first, then the watermark (which asks for whatever is missing).
// A replica keeps no promise, so a stale leader is not refused: its
// watermark still names only chosen slots, and its values are chosen ones.
// Only the highest ballot heard names the leader clients are sent to.
func (n *Node) replicaLearnCommit(m Message) {
	if m.Ballot.IsZero() {
		return
	}
	if n.matchmakers() {
		if m.Type == MsgHeartbeat && m.Config.IsZero() {
			return // a Heartbeat names its configuration exactly when matchmakers run
		}
		if m.Type == MsgHeartbeat {
			// A leader's beat is a won ballot: its configuration is in force
			// and its fence is the read basis (node_reads.go).
			n.adopt(Configuration{Ballot: m.Ballot, Since: m.Since, Acceptors: m.Config})
			if n.belief.Ballot == m.Ballot {
				if n.basisBallot != m.Ballot {
					n.basisBallot, n.basisFence = m.Ballot, 0
				}
				n.basisFence = max(n.basisFence, m.Watermark)
			}
		}
	}
	if !m.Ballot.Less(n.highestSeen) {
		n.leaderHint = m.From
	}
	if len(m.Entries) > 0 {
		n.counters.ReplicaPushes++
		n.learnChosen(m.Entries)
	}
	n.learnCommit(m.Ballot, m.Commit, m.From)
}

// pushCommit sends each replica the leader's commit watermark c with the
// values chosen since the last Commit it pushed (from the hot window, at
// most one catch-up page); what does not fit, or was evicted, the replica
// fetches by catch-up.
func (n *Node) pushCommit(l *leading, c Slot) {
	if len(n.cfg.Replicas) == 0 || c <= n.lastPushed {
		return
	}
	var entries []SlotCommand
	bytes := 0
	for s := max(n.lastPushed+1, n.acc.log.base); s <= c && !n.pageFull(len(entries), bytes); s++ {
		b, cmd, ok := n.acc.Record(s)
		if !ok {
			break
		}
		bytes += commandBytes(cmd)
		entries = append(entries, SlotCommand{Slot: s, Ballot: b, Command: cmd})
	}
	for _, id := range n.cfg.Replicas {
		n.send(Message{Type: MsgCommit, To: id, Ballot: l.ballot, Commit: c, Entries: entries})
	}
	n.lastPushed = c
}

// beatReplicas sends each replica the leader's beat: its watermark (a lost
// Commit shows as a gap) and, with matchmakers, the read basis.
func (n *Node) beatReplicas(m Message) {
	for _, id := range n.cfg.Replicas {
		m.To = id
		n.send(m)
	}
}
