package paxos

import "github.com/parosdb/paros/core/journal"

// Storage is the read-only recovery port a node boots from. The driver's
// store verifies and classifies every record before the core reads anything,
// so the port is infallible.
type Storage interface {
	// InitialState is the durable promise and chosen index.
	InitialState() HardState
	// FirstSlot is the floor: the first retained slot (1 on a fresh store).
	FirstSlot() Slot
	// LastSlot is the highest slot holding a record (0 if none).
	LastSlot() Slot
	// Accepted is the record at slot, if one is held and intact.
	Accepted(slot Slot) (Ballot, journal.Command, bool)
	// SealedState is the journal state the dropped prefix folded to
	// (journal.Initial() if nothing was ever dropped).
	SealedState() journal.State
	// FaultyEntries lists records whose identity survived and whose value
	// did not. They never count as "nothing accepted".
	FaultyEntries() []SlotBallot
}
