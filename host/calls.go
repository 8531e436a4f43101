package host

import (
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

// CallKind names a client call.
type CallKind uint8

const (
	CallWrite CallKind = iota + 1
	CallRead
	CallTruncate
	CallSetLeader
	CallInspect
	CallReconfigure
	CallRetire
	CallHandoff
	// CallMatchmakers replaces the matchmaker set by a new generation (a
	// handover, handover.go); it concerns every journal, names none, and is
	// answered when the handover ends.
	CallMatchmakers
)

// adminCall reports whether calls of kind k are operator calls, answered
// with an AdminReply.
func adminCall(k CallKind) bool {
	return k == CallReconfigure || k == CallRetire || k == CallHandoff || k == CallMatchmakers
}

// Call is one client call. The request of its kind is set; the others are
// zero. server/ translates protobuf to these plain types; the simulator's
// clients build them directly.
type Call struct {
	ID        CallID
	Kind      CallKind
	Write     journal.WriteRequest
	Read      journal.ReadRequest
	Truncate  journal.TruncateRequest
	SetLeader journal.SetLeaderRequest
	Inspect   InspectRequest
	// Reconfigure, Retire and Handoff are operator calls (Admin).
	Reconfigure ReconfigureRequest
	Retire      RetireRequest
	Handoff     HandoffRequest
	Matchmakers MatchmakersRequest
}

// MatchmakersRequest asks for a handover of the matchmaker set to Members
// (the next generation).
type MatchmakersRequest struct {
	Members []paxos.NodeID
}

// Journal names the journal the call is for.
func (c Call) Journal() journal.ID {
	switch c.Kind {
	case CallWrite:
		return c.Write.Journal
	case CallRead:
		return c.Read.Journal
	case CallTruncate:
		return c.Truncate.Journal
	case CallSetLeader:
		return c.SetLeader.Journal
	case CallInspect:
		return c.Inspect.Journal
	case CallReconfigure:
		return c.Reconfigure.Journal
	case CallRetire:
		return c.Retire.Journal
	case CallHandoff:
		return c.Handoff.Journal
	}
	return journal.ID{}
}

// Response answers a Call: Reply for Write, Truncate and SetLeader; Read for
// Read; Inspect for Inspect.
type Response struct {
	Kind    CallKind
	Reply   journal.Reply
	Read    journal.ReadReply
	Inspect InspectReply
	// Admin is the answer to Reconfigure, Retire and Handoff.
	Admin AdminReply
}

// ReconfigureRequest asks the node to move journal to a new acceptor
// configuration.
type ReconfigureRequest struct {
	Journal journal.ID
	Members []paxos.NodeID
	Quorum  quorum.Spec
}

// RetireRequest asks the node to retire from journal, with the effective
// GC watermark as evidence.
type RetireRequest struct {
	Journal   journal.ID
	Watermark paxos.Ballot
}

// HandoffRequest asks the journal's leader to hand its leadership to To
// (0: the acceptor it finds most caught up, HandoffCandidates()[0]).
type HandoffRequest struct {
	Journal journal.ID
	To      paxos.NodeID
}

// AdminReply: Refusal is empty when the request was accepted, else a
// stable reason ("no_matchmakers", "invalid_configuration", "unavailable",
// "unknown_journal", "replica", for Retire the node's RetireRefusal names,
// for Handoff "not_leader" and "cannot_relinquish").
type AdminReply struct {
	Refusal string
	Detail  string
	// Handoff only: Successor is the node the leadership was handed to (or
	// would have been, on a cannot_relinquish refusal); LeaderHint, on a
	// not_leader refusal, the node this one last heard leading (0 unknown).
	Successor  paxos.NodeID
	LeaderHint paxos.NodeID
	// Matchmakers only: the set chosen (zero when the handover failed
	// before a decision), and the members of it that activated it.
	Chosen    paxos.MatchmakerSet
	Activated []paxos.NodeID
}

// InspectRequest asks for a journal's consensus facts.
type InspectRequest struct {
	Journal journal.ID
}

// InspectReply is a journal's consensus facts on this node.
type InspectReply struct {
	UnknownJournal bool
	Node           paxos.NodeID
	Role           string
	Leader         paxos.NodeID
	Promised       paxos.Ballot
	ChosenIndex    paxos.Slot
	Applied        paxos.Slot
	Floor          paxos.Slot
	State          journal.View
	Quarantined    bool
	// Matchmaker Paxos (zero on a plain deployment): the configuration the
	// node believes in force, the matchmaker set, and on a leader whose GC
	// is effective the watermark and the retirable acceptors.
	Config      paxos.Configuration
	Matchmakers []paxos.NodeID
	// MatchmakerGeneration is the generation of Matchmakers.
	MatchmakerGeneration uint64
	GCEffective          bool
	GCWatermark          paxos.Ballot
	Retirable            []paxos.NodeID
	// Unrecoverable names slots found lost beyond the fault budget (CTRL).
	Unrecoverable []paxos.Slot
}
