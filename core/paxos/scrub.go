package paxos

// Background scrubbing: a record that rots where no client reads goes
// unseen until a second copy of its slot rots too, so the journal's leader
// pages through every retained chosen slot again, one pass after the
// other, and asks each acceptor of its configuration for its own copy of a
// page. Each acceptor reads the page from its disk through the ScrubLog
// port, checks every checksum and answers the ballot and a hash of each
// record, never the bytes (node_scrub.go). Repair is never the
// scrubber's to decide: which path writes a damaged record again, and why
// each is safe, is in docs/design/ctrl.md.

// ScrubEntry is one record as a scrub read it from disk: its identity, the
// CRC-32C of its value, and whether the value failed its checksum (then
// Hash is 0 and only the identity survived).
type ScrubEntry struct {
	Slot    Slot
	Ballot  Ballot
	Hash    uint32
	Damaged bool
}

// ScrubLog reads records back from disk and checks them. It is a port like
// ColdLog: the driver's store implements it (storage.LogStore.Scrub) and
// the core calls it synchronously.
type ScrubLog interface {
	// Scrub reads and checksums up to count records from slot from,
	// ascending. A damaged value is an entry with Damaged set, never an
	// error; an error is a failed read (the node raises StorageFault).
	Scrub(from Slot, count int) ([]ScrubEntry, error)
}

// ScrubSource is implemented by a Storage that can hand NewNode a ScrubLog
// and the durable scrub cursor (OpScrubCursor; 0 when none was written).
type ScrubSource interface {
	ScrubLog() ScrubLog
	ScrubCursor() Slot
}

// Scrub bounds, so one scrub pass costs a bounded amount of work.
const (
	// ScrubPageSlotsMax bounds the slots of one scrub page.
	ScrubPageSlotsMax = 4096
	// ScrubPassTicksMin is the floor of the full-pass bound.
	ScrubPassTicksMin = 100
)
