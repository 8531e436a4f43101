package paxos

import "github.com/parosdb/paros/core/journal"

// Ready is one batch of effects. The caller must handle its buckets in this
// order, then call Advance (persist before send):
//
//  1. Writes: persist in order; sync first when MustSync. Batches of one
//     node persist in order.
//  2. Messages: send only once this batch's Writes and every earlier batch's
//     are durable. A Promise or Accepted sent before its write is durable can
//     un-make a decision. Messages whose EarlyOK is true may leave before.
//  3. Applied: newly applied slots, strictly contiguous, with the outcome
//     each folded to; answer the calls parked on them.
//  4. ReadStates: answer quorum reads, after Applied (the same batch may
//     carry the covering slots).
//
// The buckets are owned by the node and reused: they are valid until the
// next Advance, so a caller that persists asynchronously copies them first.
type Ready struct {
	// Batch numbers this Ready (1, 2, … per node): report it to MarkDurable
	// once its Writes and every earlier batch's are durable, so records may
	// leave the hot window.
	Batch      uint64
	Writes     []WriteOp
	MustSync   bool
	Messages   []Message
	Applied    []Applied
	ReadStates []ReadState
	// Votes names, in order, the records among Writes that are votes this
	// acceptor cast (an Accept it admitted). A chosen value it learned is
	// written as the same kind of record (OpAccept), so only the acceptor
	// can tell the two apart. Observation only: a driver persists Writes
	// and needs nothing here. The simulator's audit keeps a ledger of
	// votes apart from the stores, to check every durable record against it.
	Votes []SlotCommand
}

// Applied is one newly applied slot: the decided command and the verdict
// the journal fold gave it, with the state after.
type Applied struct {
	Slot    Slot
	Command journal.Command
	Outcome journal.Outcome
	State   journal.State
}

// ReadState settles one quorum read opened with QuorumRead. OK means the
// node's fold now covers every write acknowledged before the read opened:
// serve it with ReadLog. !OK means no quorum answered within the read's TTL:
// answer unserved.
type ReadState struct {
	Ctx   uint64
	Index Slot
	OK    bool
}

// IsEmpty reports whether the batch carries nothing.
func (r *Ready) IsEmpty() bool {
	return len(r.Writes) == 0 && len(r.Messages) == 0 && len(r.Applied) == 0 && len(r.ReadStates) == 0
}
