package paxos

import (
	"fmt"

	"github.com/parosdb/paros/core/journal"
)

// OpKind names a durable delta: one change a store persists for the core.
type OpKind uint8

const (
	OpInvalid OpKind = iota
	// OpSetPromise raises the promise to Ballot (monotone).
	OpSetPromise
	// OpAccept records (Slot, Ballot, Command), upserting by slot: a learned
	// chosen value overwrites a stale lower-ballot accept.
	OpAccept
	// OpLearned records a replica's chosen value (not a vote).
	OpLearned
	// OpSetChosenIndex records the chosen index (Slot). The only relaxed op.
	OpSetChosenIndex
	// OpTruncate drops every record below Slot (the new floor) and seals
	// State, the journal state the dropped slots folded to, in one write.
	OpTruncate
	// OpTrimmedTo installs a trim point: floor = Slot, chosen index >=
	// Slot-1, drop below, seal State. The promise is never touched.
	OpTrimmedTo
	// OpRewrite writes the record (Slot, Ballot, Command) again over a
	// damaged copy of the same record (the scrubber's repair from the value
	// the acceptor still holds in memory). It is not a vote: the slot,
	// ballot and value are the ones already on record.
	OpRewrite
	// OpScrubCursor records the scrubber's progress: every retained slot
	// below Slot was scrubbed in the pass under way. Relaxed like the chosen
	// index: losing it only makes a scrubber start a page earlier.
	OpScrubCursor
)

var opNames = [...]string{"invalid", "set-promise", "accept", "learned", "set-chosen-index", "truncate", "trimmed-to", "rewrite", "scrub-cursor"}

func (k OpKind) String() string {
	if int(k) < len(opNames) {
		return opNames[k]
	}
	return fmt.Sprintf("op(%d)", uint8(k))
}

// WriteOp is one durable delta. Which fields mean something depends on Kind.
type WriteOp struct {
	Kind    OpKind
	Slot    Slot
	Ballot  Ballot
	Command journal.Command
	State   journal.State
}

// NeedsSync reports whether the op must be synced before the batch's
// messages leave. Only the chosen index and the scrub cursor may go
// relaxed: the first is re-derivable, the second only paces a scrubber.
func (op WriteOp) NeedsSync() bool { return op.Kind != OpSetChosenIndex && op.Kind != OpScrubCursor }

func (op WriteOp) String() string {
	switch op.Kind {
	case OpSetPromise:
		return fmt.Sprintf("promise(%s)", op.Ballot)
	case OpAccept, OpLearned, OpRewrite:
		return fmt.Sprintf("%s(%d,%s,%s)", op.Kind, op.Slot, op.Ballot, op.Command)
	case OpSetChosenIndex:
		return fmt.Sprintf("chosen(%d)", op.Slot)
	case OpScrubCursor:
		return fmt.Sprintf("scrub-cursor(%d)", op.Slot)
	case OpTruncate, OpTrimmedTo:
		return fmt.Sprintf("%s(%d,%s)", op.Kind, op.Slot, op.State)
	}
	return op.Kind.String()
}
