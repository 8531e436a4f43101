package host

import (
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
)

// CallKind names a client call.
type CallKind uint8

const (
	CallWrite CallKind = iota + 1
	CallRead
	CallTruncate
	CallSetLeader
	CallInspect
)

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
}
