package host

import (
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage"
)

// Envelope is one protocol message with the journal it belongs to. The
// journal id rides every message so the receiving host routes before a core
// sees a byte.
type Envelope struct {
	Journal journal.ID
	Msg     paxos.Message
	// Handover, when set, is a message of a matchmaker-set handover
	// instead (Journal and Msg unset): it concerns every journal of the
	// set.
	Handover *matchmaker.Handover
	// MachineBeat, when set, is the whole envelope (Journal, Msg and
	// Handover unset): the sender's machine is alive (host/quiet.go).
	MachineBeat bool
}

// Token names one persisted batch; OnPersisted reports it back.
type Token uint64

// CallID names one client call; Env.Reply answers it.
type CallID uint64

// Env is how a host acts on the world. Every method returns at once: the
// host's loop never blocks.
type Env interface {
	// Send hands one Deliver (a batch of envelopes, possibly of several
	// journals) to the transport for peer to. Delivery is best effort.
	Send(to paxos.NodeID, batch []Envelope)
	// Persist applies ops to journal j's store in order after every
	// earlier Persist of j, synced when sync is set, and reports back with
	// OnPersisted(t, err). The host does not touch ops afterwards.
	Persist(t Token, j journal.ID, ops []paxos.WriteOp, sync bool)
	// Reply answers a client call. Every call is answered exactly once.
	Reply(id CallID, r Response)
	// BootStore scans journal j's store (synchronously; boot only).
	BootStore(j journal.ID) (*storage.BootState, error)
	// FormatStores writes each marker to its journal's store (first boot
	// only), all or nothing, durable when it returns: one synced commit
	// however many there are.
	FormatStores(ms []storage.Marker) error
	// ReopenStore reopens a store after a fault (quarantine's end).
	ReopenStore(j journal.ID) error
	// Rand draws 64 random bits (election jitter, read contexts).
	Rand() uint64
	// PersistRegistry applies a matchmaker batch to the process's registry
	// store, synced, after every earlier one, and reports back with
	// OnPersisted(t, err). Only called on a process with a matchmaker.
	PersistRegistry(t Token, ops []matchmaker.WriteOp)
	// DeleteStore deletes journal j's store (an honoured retire: the
	// journal is gone from this process, and its identity with it).
	DeleteStore(j journal.ID) error
}

// NodeIDOf converts a wire node id.
func NodeIDOf(id uint64) paxos.NodeID { return paxos.NodeID(id) }
