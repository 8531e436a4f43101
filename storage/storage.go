// Package storage defines what a journal's durable store must do
// (docs/design/storage.md): boot-scan and classify every record before the
// core reads anything, apply ordered batches of WriteOps atomically, scrub
// and rewrite records for repair, and keep the format marker that says which
// configuration the store was formatted under.
//
// Two stores implement LogStore and pass one conformance suite
// (storage/storetest): storage/memstore (deterministic, for the simulator and
// tests) and storage/pebblestore (the disk engine).
package storage

import (
	"errors"
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

// LogStore is one journal's durable store.
type LogStore interface {
	// Boot scans the store: it verifies every record and classifies a
	// damaged value as faulty(slot, ballot). It never truncates on
	// corruption: a damaged identity or marker is an ErrCorruption error.
	Boot() (*BootState, error)
	// Format writes the format marker; it is the only writer of it and
	// refuses a store already formatted (ErrFormatted).
	Format(m Marker) error
	// Apply persists ops in order, atomically (all or none survive a
	// crash). With sync the batch is durable when Apply returns. An error
	// is an *IOError saying whether the outcome is lost or unknown; after
	// one the store refuses writes (ErrFailed) until reopened.
	Apply(ops []paxos.WriteOp, sync bool) error
	// Scrub reads and checksums up to count records from slot from.
	Scrub(from paxos.Slot, count int) ([]ScrubEntry, error)
	// Rewrite replaces the value of the record at slot, keeping its ballot
	// (the repair of a damaged value from a healthy copy).
	Rewrite(slot paxos.Slot, ballot paxos.Ballot, cmd journal.Command) error
}

// ScrubEntry is one scrubbed record (Hash: the CRC-32C of the stored
// value). It is the core's type: a LogStore is the node's ScrubLog port.
type ScrubEntry = paxos.ScrubEntry

// BootState is the result of a boot scan. It implements paxos.Storage, the
// read-only port a node boots from.
type BootState struct {
	Marker  *Marker // nil: never formatted
	Hard    paxos.HardState
	Floor   paxos.Slot // first retained slot (>= 1)
	Sealed  journal.State
	Records []paxos.SlotCommand // ascending by slot
	Faulty  []paxos.SlotBallot  // ascending by slot
	// Cold reads records back after the node evicted them from memory
	// (paxos.ColdLog); nil keeps every record in memory.
	Cold paxos.ColdLog
	// ColdEnd ends the cold prefix: the scan verified every record of
	// [Floor, ColdEnd] — all present, intact and at or below the durable
	// chosen index — and left them out of Records (read them with Cold, or
	// AllRecords). 0 when there is none.
	ColdEnd paxos.Slot
	// Scrubber reads records back from disk and checks them for the node's
	// scrubber (paxos.ScrubLog); the store itself. nil: no scrubbing.
	Scrubber paxos.ScrubLog
	// Cursor is the durable scrub cursor (OpScrubCursor); 0 when none was
	// written, or when the stored one did not read back (it only paces a
	// scrubber, so a store may drop a damaged one).
	Cursor paxos.Slot
}

// ColdLog implements paxos.ColdSource.
func (b *BootState) ColdLog() paxos.ColdLog { return b.Cold }

// ColdThrough implements paxos.ColdSource.
func (b *BootState) ColdThrough() paxos.Slot { return b.ColdEnd }

// ScrubLog implements paxos.ScrubSource.
func (b *BootState) ScrubLog() paxos.ScrubLog { return b.Scrubber }

// ScrubCursor implements paxos.ScrubSource.
func (b *BootState) ScrubCursor() paxos.Slot { return b.Cursor }

// AllRecords is the cold prefix read back, then Records: every intact
// record the store holds, ascending (tests and audits; a node folds the
// prefix in pages instead).
func (b *BootState) AllRecords() ([]paxos.SlotCommand, error) {
	if b.ColdEnd < b.FirstSlot() || b.Cold == nil {
		return b.Records, nil
	}
	prefix, err := b.Cold.ColdRecords(b.FirstSlot(), b.ColdEnd+1)
	if err != nil {
		return nil, err
	}
	return append(prefix, b.Records...), nil
}

// ColdPrefix tracks, over a scan in slot order, how far the records form
// the cold prefix a boot may leave on disk: dense from the floor, intact,
// and at or below the durable chosen index (the fold reads them back; any
// record after a gap, a damaged one or one above the chosen index must be
// held in memory).
type ColdPrefix struct {
	through paxos.Slot
	broken  bool
}

// NewColdPrefix starts a prefix at floor.
func NewColdPrefix(floor paxos.Slot) ColdPrefix { return ColdPrefix{through: max(floor, 1) - 1} }

// Take reports whether the record at slot (intact unless damaged) joins
// the prefix; once one does not, none after it does.
func (c *ColdPrefix) Take(slot, chosen paxos.Slot, damaged bool) bool {
	if c.broken || damaged || slot != c.through+1 || slot > chosen {
		c.broken = true
		return false
	}
	c.through = slot
	return true
}

// Through is the prefix's last slot (below the floor when it is empty).
func (c ColdPrefix) Through() paxos.Slot { return c.through }

// InitialState implements paxos.Storage.
func (b *BootState) InitialState() paxos.HardState { return b.Hard }

// FirstSlot implements paxos.Storage.
func (b *BootState) FirstSlot() paxos.Slot { return max(b.Floor, 1) }

// LastSlot implements paxos.Storage.
func (b *BootState) LastSlot() paxos.Slot {
	var last paxos.Slot
	if n := len(b.Records); n > 0 {
		last = b.Records[n-1].Slot
	}
	if n := len(b.Faulty); n > 0 {
		last = max(last, b.Faulty[n-1].Slot)
	}
	if b.ColdEnd >= b.FirstSlot() {
		last = max(last, b.ColdEnd)
	}
	return last
}

// Accepted implements paxos.Storage.
func (b *BootState) Accepted(s paxos.Slot) (paxos.Ballot, journal.Command, bool) {
	i, ok := slices.BinarySearchFunc(b.Records, s, func(r paxos.SlotCommand, s paxos.Slot) int {
		switch {
		case r.Slot < s:
			return -1
		case r.Slot > s:
			return 1
		}
		return 0
	})
	if !ok {
		return paxos.Ballot{}, journal.Command{}, false
	}
	return b.Records[i].Ballot, b.Records[i].Command, true
}

// SealedState implements paxos.Storage.
func (b *BootState) SealedState() journal.State {
	if b.Sealed.IsZero() {
		return journal.Initial()
	}
	return b.Sealed
}

// FaultyEntries implements paxos.Storage.
func (b *BootState) FaultyEntries() []paxos.SlotBallot { return b.Faulty }

var (
	_ paxos.Storage     = (*BootState)(nil)
	_ paxos.ColdSource  = (*BootState)(nil)
	_ paxos.ScrubSource = (*BootState)(nil)
	// A LogStore is the node's ScrubLog port.
	_ paxos.ScrubLog = LogStore(nil)
)

// Marker is the configuration a store was formatted under. Boot compares
// it with the operator's claim; a store is never silently reformatted.
type Marker struct {
	Journal journal.ID
	Node    paxos.NodeID
	// Members is the bootstrap acceptor set, sorted.
	Members []paxos.NodeID
	Quorum  quorum.Spec
	Mode    journal.WriterMode
	// Counts of the optional tiers; all zero on plain Multi-Paxos.
	Proxies, Replicas, Matchmakers uint32
	// Joiner: the store was formatted for a node joining Members by
	// reconfiguration (it believes nothing until told its configuration).
	Joiner bool
	// Replica: the store is a replica node's (the replica tier): Node is
	// not among Members, and its records are Learned, never votes. The
	// number of replicas is not recorded: adding one reformats nothing.
	Replica bool
}

// Equal reports whether two markers name the same configuration.
func (m Marker) Equal(o Marker) bool {
	return m.Journal == o.Journal && m.Node == o.Node && slices.Equal(m.Members, o.Members) &&
		m.Quorum == o.Quorum && m.Mode == o.Mode && m.Proxies == o.Proxies &&
		m.Replicas == o.Replicas && m.Matchmakers == o.Matchmakers && m.Joiner == o.Joiner && m.Replica == o.Replica
}

// Validate refuses a marker that names no usable configuration.
func (m Marker) Validate() error {
	if !m.Journal.IsSet() || m.Node == 0 || len(m.Members) == 0 {
		return fmt.Errorf("%w: journal %s node %d members %v", ErrBadMarker, m.Journal, m.Node, m.Members)
	}
	if m.Mode != journal.ModeSingle && m.Mode != journal.ModeMulti {
		return fmt.Errorf("%w: writer mode unset", ErrBadMarker)
	}
	if _, err := quorum.New(m.Members, m.Quorum); err != nil {
		return fmt.Errorf("%w: %v", ErrBadMarker, err)
	}
	switch {
	case m.Replica && m.Joiner:
		return fmt.Errorf("%w: replica %d formatted as a joiner", ErrBadMarker, m.Node)
	case m.Replica && slices.Contains(m.Members, m.Node):
		return fmt.Errorf("%w: replica %d among members %v", ErrBadMarker, m.Node, m.Members)
	case !m.Replica && !slices.Contains(m.Members, m.Node):
		return fmt.Errorf("%w: node %d not among members %v", ErrBadMarker, m.Node, m.Members)
	}
	return nil
}

func (m Marker) String() string {
	s := fmt.Sprintf("{journal %s node %d members %v quorum %v mode %s", m.Journal, m.Node, m.Members, m.Quorum, m.Mode)
	if m.Matchmakers > 0 {
		s += fmt.Sprintf(" matchmakers %d", m.Matchmakers)
	}
	if m.Joiner {
		s += " joiner"
	}
	if m.Replica {
		s += " replica"
	}
	return s + "}"
}

// Errors. Corruption is a class: test with errors.Is(err, ErrCorruption).
var (
	ErrCorruption = errors.New("paros/storage: corruption")
	// ErrFailed: an earlier write failed; the store refuses writes until it
	// is reopened (fsyncgate: the page cache can no longer be trusted).
	ErrFailed = errors.New("paros/storage: store failed, reopen it")
	ErrClosed = errors.New("paros/storage: store closed")
	// Boot refusals (see CheckBoot).
	ErrAmnesia        = errors.New("paros/storage: amnesia: an existing member has no formatted store")
	ErrConfigMismatch = errors.New("paros/storage: store formatted under another configuration")
	ErrFormatted      = errors.New("paros/storage: first boot on a formatted store")
	ErrBadMarker      = errors.New("paros/storage: malformed format marker")
)

// WriteOutcome says what an I/O error means for the write: Lost (it did
// not happen) or Unknown (it may have; an fsync error never means absent).
type WriteOutcome uint8

const (
	OutcomeLost WriteOutcome = iota + 1
	OutcomeUnknown
)

func (o WriteOutcome) String() string {
	switch o {
	case OutcomeLost:
		return "lost"
	case OutcomeUnknown:
		return "unknown"
	}
	return "outcome(?)"
}

// IOError is a failed read, write or sync.
type IOError struct {
	Op      string // "write", "sync", "read"
	Outcome WriteOutcome
	Err     error
}

func (e *IOError) Error() string {
	return fmt.Sprintf("paros/storage: %s failed (outcome %s): %v", e.Op, e.Outcome, e.Err)
}

func (e *IOError) Unwrap() error { return e.Err }

// CorruptionError locates a damaged record. It matches ErrCorruption.
type CorruptionError struct {
	Journal journal.ID
	What    string // "marker", "promise", "record identity", ...
	Slot    paxos.Slot
	Detail  string
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("paros/storage: corruption in journal %s: %s at slot %d: %s", e.Journal, e.What, e.Slot, e.Detail)
}

func (e *CorruptionError) Is(target error) bool { return target == ErrCorruption }

// Claim is what the operator says about a process's store at start.
type Claim uint8

const (
	// ClaimFirstBoot: this process has never been a member; format.
	ClaimFirstBoot Claim = iota + 1
	// ClaimExistingMember: this process is a member; its store must be there.
	ClaimExistingMember
)

// BootDecision is what a start does with its store.
type BootDecision uint8

const (
	// DecideFormat: write the marker, then boot.
	DecideFormat BootDecision = iota + 1
	// DecideBoot: boot from what the store holds.
	DecideBoot
)

// CheckBoot is the boot decision table, one row per case so that every
// boot decision can be read and tested in one place. Legend: claim is
// the operator's; marker is what the store holds (nil: unformatted); want
// is the configuration the process runs under.
//
//	claim            marker     marker == want   decision
//	---------------  ---------  ---------------  ---------------------
//	FirstBoot        none       -                DecideFormat
//	FirstBoot        present    -                ErrFormatted
//	ExistingMember   none       -                ErrAmnesia
//	ExistingMember   present    yes              DecideBoot
//	ExistingMember   present    no               ErrConfigMismatch
//
// A damaged marker never reaches this table: Boot reports ErrCorruption,
// and a damaged marker is a refusal, never a reformat.
func CheckBoot(claim Claim, marker *Marker, want Marker) (BootDecision, error) {
	switch claim {
	case ClaimFirstBoot:
		if marker == nil {
			return DecideFormat, nil
		}
		return 0, fmt.Errorf("%w: store holds %s", ErrFormatted, marker)
	case ClaimExistingMember:
		if marker == nil {
			return 0, fmt.Errorf("%w: journal %s node %d", ErrAmnesia, want.Journal, want.Node)
		}
		if !marker.Equal(want) {
			return 0, fmt.Errorf("%w: store %s, configured %s", ErrConfigMismatch, marker, want)
		}
		return DecideBoot, nil
	}
	return 0, fmt.Errorf("paros/storage: unknown boot claim %d", claim)
}
