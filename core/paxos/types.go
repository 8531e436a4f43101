package paxos

import (
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/quorum"
)

// NodeID names a process in one journal's deployment. 0 is reserved (unset).
type NodeID = quorum.ID

// Slot is a position in the Paxos log. Slots start at 1; 0 means "none"
// (no chosen slot yet, terminal page), so no field needs an Option.
type Slot = uint64

// Ballot orders proposals: by Round, then by Node. Node makes ballots of
// different proposers distinct, so one (slot, ballot) names one proposer.
type Ballot struct {
	Round uint64
	Node  NodeID
}

// IsZero reports whether b is the zero ballot (below every real ballot).
func (b Ballot) IsZero() bool { return b.Round == 0 && b.Node == 0 }

// Less reports whether b orders before o.
func (b Ballot) Less(o Ballot) bool {
	return b.Round < o.Round || (b.Round == o.Round && b.Node < o.Node)
}

// Compare returns -1, 0 or +1.
func (b Ballot) Compare(o Ballot) int {
	switch {
	case b.Less(o):
		return -1
	case o.Less(b):
		return 1
	}
	return 0
}

// String prints the round in decimal and the node id in the one form node
// ids take everywhere: 16 hex digits.
func (b Ballot) String() string { return fmt.Sprintf("%d.%016x", b.Round, uint64(b.Node)) }

// SlotCommand is one slot's value with the ballot it was accepted (or chosen)
// at: a Promise's report, an Accept's entry, a catch-up entry.
type SlotCommand struct {
	Slot    Slot
	Ballot  Ballot
	Command journal.Command
}

// SlotVote is one vote in an Accepted: the slot and the fingerprint of the
// value voted for.
type SlotVote struct {
	Slot  Slot
	VHash uint64
}

// SlotBallot names a record whose identity survived and whose value did not
// (CTRL: a faulty entry). It must never count as "nothing accepted".
type SlotBallot struct {
	Slot   Slot
	Ballot Ballot
}

// HardState is the pair of scalars persisted whole: the promise and the
// chosen index (0 = nothing chosen).
type HardState struct {
	Promised    Ballot
	ChosenIndex Slot
}

// Config is static per incarnation and recorded in the store's format marker.
type Config struct {
	// ID is this node.
	ID NodeID
	// Acceptors is the acceptor set and its quorum system. A plain
	// Multi-Paxos deployment uses quorum.NewMajority.
	Acceptors quorum.System
	// Mode is the journal's writer mode.
	Mode journal.WriterMode
	// Matchmakers is the matchmaker set (sorted, distinct). Empty: plain
	// Multi-Paxos, whose acceptor set never changes; otherwise Matchmaker
	// Paxos, whose configuration changes by reconfiguration and for which
	// Acceptors is only the bootstrap belief.
	Matchmakers []NodeID
	// MatchmakerGeneration is the generation of Matchmakers (zero: the
	// founding set, generation 1). The node follows the chain of
	// generations from there: a matchmaker of a replaced set points it at
	// the chosen successor (node_matchmaking.go).
	MatchmakerGeneration uint64
	// Joiner: the store was formatted for a node joining Acceptors by
	// reconfiguration. A joiner believes nothing until a leader or the
	// matchmakers tell it its configuration: it never campaigns under the
	// configuration it was formatted with.
	Joiner bool
	// Replica: this node is a replica node (the replica tier): it learns
	// the chosen log, persists it as Learned records and serves reads, and
	// it never votes — it is in no configuration, answers no Prepare, no
	// Accept and no PreRead, acks no beat and never campaigns.
	Replica bool
	// Replicas are the deployment's replica nodes (sorted, distinct, none an
	// acceptor): a leader adds them to every Learners message (Commit and
	// Heartbeat), and slot s's reply owner is Replicas[s % len(Replicas)].
	// A replica node not in its own list was removed: it boots and folds
	// what it holds, but no acceptor answers it.
	Replicas []NodeID
	// Proxies are the deployment's proxy leaders (sorted, distinct, none an
	// acceptor or a replica; node_proxy.go): a settled leader delegates
	// slot s's Phase 2 to Proxies[s % len(Proxies)]. Empty: the leader runs
	// every round itself, message for message the plain deployment.
	Proxies []NodeID
}

// ProxiesMax bounds the proxy leaders of one journal.
const ProxiesMax = 16

// ReplicasMax bounds the replica tier of one journal.
const ReplicasMax = 16

// ReplyOwner is the replica that answers the client for slot s (s %
// replica_count); 0 when the deployment runs no replicas.
func (c Config) ReplyOwner(s Slot) NodeID {
	if len(c.Replicas) == 0 {
		return 0
	}
	return c.Replicas[s%Slot(len(c.Replicas))]
}

// MatchmakersMax bounds the matchmaker set.
const MatchmakersMax = 16

// Validate refuses a configuration the node cannot run.
func (c Config) Validate() error {
	switch {
	case c.ID == 0:
		return fmt.Errorf("%w: node id 0", ErrConfig)
	case c.Acceptors.IsZero():
		return fmt.Errorf("%w: no acceptors", ErrConfig)
	case !c.Replica && !c.Acceptors.Contains(c.ID):
		return fmt.Errorf("%w: node %d is not an acceptor (colocated nodes must be)", ErrConfig, c.ID)
	case c.Replica && c.Acceptors.Contains(c.ID):
		return fmt.Errorf("%w: replica %d is an acceptor (a replica never votes)", ErrConfig, c.ID)
	case c.Replica && c.Joiner:
		return fmt.Errorf("%w: replica %d formatted as a joiner", ErrConfig, c.ID)
	case len(c.Replicas) > ReplicasMax:
		return fmt.Errorf("%w: %d replicas (at most %d)", ErrConfig, len(c.Replicas), ReplicasMax)
	case c.Mode != journal.ModeSingle && c.Mode != journal.ModeMulti:
		return fmt.Errorf("%w: writer mode unset", ErrConfig)
	case c.Joiner && len(c.Matchmakers) == 0:
		return fmt.Errorf("%w: a joiner needs matchmakers", ErrConfig)
	case len(c.Matchmakers) > MatchmakersMax:
		return fmt.Errorf("%w: %d matchmakers (at most %d)", ErrConfig, len(c.Matchmakers), MatchmakersMax)
	case c.MatchmakerGeneration > GenerationMax || c.MatchmakerGeneration != 0 && len(c.Matchmakers) == 0:
		return fmt.Errorf("%w: matchmaker generation %d of %v", ErrConfig, c.MatchmakerGeneration, c.Matchmakers)
	}
	for i, id := range c.Matchmakers {
		if id == 0 || (i > 0 && c.Matchmakers[i-1] >= id) {
			return fmt.Errorf("%w: matchmakers %v not sorted, distinct and nonzero", ErrConfig, c.Matchmakers)
		}
	}
	if err := validateReplicas(c); err != nil {
		return err
	}
	if err := validateProxies(c); err != nil {
		return err
	}
	return validateSystem(c.Acceptors)
}

// validateProxies checks the proxy list: sorted, distinct, nonzero, no
// acceptor or replica among them, at most ProxiesMax.
func validateProxies(c Config) error {
	if len(c.Proxies) > ProxiesMax {
		return fmt.Errorf("%w: %d proxies (at most %d)", ErrConfig, len(c.Proxies), ProxiesMax)
	}
	for i, id := range c.Proxies {
		if id == 0 || (i > 0 && c.Proxies[i-1] >= id) || c.Acceptors.Contains(id) || slices.Contains(c.Replicas, id) {
			return fmt.Errorf("%w: proxies %v not sorted, distinct, nonzero and outside the acceptors and replicas", ErrConfig, c.Proxies)
		}
	}
	return nil
}

// validateReplicas checks the replica list alone: sorted, distinct,
// nonzero, outside the acceptors, at most ReplicasMax.
func validateReplicas(c Config) error {
	if len(c.Replicas) > ReplicasMax {
		return fmt.Errorf("%w: %d replicas (at most %d)", ErrConfig, len(c.Replicas), ReplicasMax)
	}
	for i, id := range c.Replicas {
		if id == 0 || (i > 0 && c.Replicas[i-1] >= id) || c.Acceptors.Contains(id) {
			return fmt.Errorf("%w: replicas %v not sorted, distinct, nonzero and outside the acceptors", ErrConfig, c.Replicas)
		}
	}
	return nil
}
