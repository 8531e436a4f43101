package registry

import (
	"fmt"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/quorum"
)

// The plain Go mirror of the registry's protobuf contract
// (api/proto/paros/v1/registry.proto). core/ may not import the generated
// code, so the conversion lives outside this package (registrypb). Enum
// values keep the proto's numbers and its int32 width, so a conversion
// never wraps an out-of-range value into a valid one.

// EntryKind tags an Entry variant: one per case of the RegistryEntry oneof.
// The zero value is invalid: a decoder never produces it.
type EntryKind uint8

const (
	EntryInvalid EntryKind = iota
	EntryRegisterMachine
	EntryDrainMachine
	EntryCreateTenant
	EntryDeleteTenant
	EntryCreateJournal
	EntryDeleteJournal
	EntryJournalGone
)

var entryKindNames = [...]string{"invalid", "register_machine", "drain_machine", "create_tenant",
	"delete_tenant", "create_journal", "delete_journal", "journal_gone"}

func (k EntryKind) String() string {
	if int(k) < len(entryKindNames) {
		return entryKindNames[k]
	}
	return fmt.Sprintf("entry(%d)", uint8(k))
}

// Entry is one registry entry: a tagged struct (like journal.Command), so
// that a log of them costs no boxing.
//
// Fields by kind (the proto's field names):
//
//	RegisterMachine: NodeID, Addr, FailureDomain
//	DrainMachine:    NodeID
//	CreateTenant:    Request, Name (the tenant's), TenantID
//	DeleteTenant:    Request, Name (the tenant's)
//	CreateJournal:   Request, Tenant, Name (the journal's), JournalID, Placement
//	DeleteJournal:   Request, Tenant, Name (the journal's)
//	JournalGone:     Journal
type Entry struct {
	Kind          EntryKind
	NodeID        uint64
	Addr          string
	FailureDomain string
	Request       []byte
	Tenant        string
	Name          string
	TenantID      uint64
	JournalID     uint64
	Placement     Placement
	Journal       journal.ID
}

// RegisterMachine is the entry that adds node to the pool (or updates it).
func RegisterMachine(node uint64, addr, failureDomain string) Entry {
	return Entry{Kind: EntryRegisterMachine, NodeID: node, Addr: addr, FailureDomain: failureDomain}
}

// DrainMachine is the entry that takes node out of placement.
func DrainMachine(node uint64) Entry { return Entry{Kind: EntryDrainMachine, NodeID: node} }

// CreateTenant is the entry that names tenant id.
func CreateTenant(request []byte, name string, id uint64) Entry {
	return Entry{Kind: EntryCreateTenant, Request: request, Name: name, TenantID: id}
}

// DeleteTenant is the entry that removes an empty tenant.
func DeleteTenant(request []byte, name string) Entry {
	return Entry{Kind: EntryDeleteTenant, Request: request, Name: name}
}

// CreateJournal is the entry that names journal id of tenant, placed by p.
func CreateJournal(request []byte, tenant, name string, id uint64, p Placement) Entry {
	return Entry{Kind: EntryCreateJournal, Request: request, Tenant: tenant, Name: name, JournalID: id, Placement: p}
}

// DeleteJournal is the entry that starts a journal's deletion.
func DeleteJournal(request []byte, tenant, name string) Entry {
	return Entry{Kind: EntryDeleteJournal, Request: request, Tenant: tenant, Name: name}
}

// JournalGone is a deleted journal's tombstone.
func JournalGone(id journal.ID) Entry { return Entry{Kind: EntryJournalGone, Journal: id} }

// MachineState mirrors pb.MachineState.
type MachineState int32

const (
	MachineUnspecified MachineState = 0
	MachineUp          MachineState = 1
	MachineDraining    MachineState = 2
)

func (m MachineState) String() string {
	switch m {
	case MachineUp:
		return "up"
	case MachineDraining:
		return "draining"
	}
	return fmt.Sprintf("machine_state(%d)", int32(m))
}

// Standing mirrors pb.JournalStanding.
type Standing int32

const (
	StandingUnspecified Standing = 0
	StandingLive        Standing = 1
	StandingDeleting    Standing = 2
)

func (s Standing) String() string {
	switch s {
	case StandingLive:
		return "live"
	case StandingDeleting:
		return "deleting"
	}
	return fmt.Sprintf("standing(%d)", int32(s))
}

// QuorumSystem mirrors pb.QuorumSystem.
type QuorumSystem int32

const (
	QuorumMajority QuorumSystem = 0
	QuorumFlexible QuorumSystem = 1
	QuorumGrid     QuorumSystem = 2
)

// WriterMode mirrors pb.WriterMode.
type WriterMode int32

const (
	WriterUnspecified WriterMode = 0
	WriterSingle      WriterMode = 1
	WriterMulti       WriterMode = 2
)

// Mode is the journal package's writer mode (ModeUnset for any value but
// single and multi).
func (m WriterMode) Mode() journal.WriterMode {
	switch m {
	case WriterSingle:
		return journal.ModeSingle
	case WriterMulti:
		return journal.ModeMulti
	}
	return journal.ModeUnset
}

// Placement mirrors pb.JournalPlacement: a journal's bootstrap acceptors,
// quorum system and writer mode, fixed at creation.
type Placement struct {
	Members      []uint64
	QuorumSystem QuorumSystem
	Phase1Quorum uint32
	Phase2Quorum uint32
	Rows         uint32
	Cols         uint32
	WriterMode   WriterMode
}

// Clone is a copy of p that shares no memory with it.
func (p Placement) Clone() Placement {
	p.Members = append([]uint64(nil), p.Members...)
	return p
}

// Spec is the quorum spec p names; false for an unknown quorum system.
func (p Placement) Spec() (quorum.Spec, bool) {
	switch p.QuorumSystem {
	case QuorumMajority:
		return quorum.Spec{Kind: quorum.KindMajority}, true
	case QuorumFlexible:
		return quorum.Spec{Kind: quorum.KindFlexible, Q1: int(p.Phase1Quorum), Q2: int(p.Phase2Quorum)}, true
	case QuorumGrid:
		return quorum.Spec{Kind: quorum.KindGrid, Rows: int(p.Rows), Cols: int(p.Cols)}, true
	}
	return quorum.Spec{}, false
}

// Check reports what makes p unusable on its own, whatever the machines:
// no members, a duplicate or zero member, an impossible quorum system, or a
// writer mode other than single or multi. Nil if none.
func (p Placement) Check() error {
	if len(p.Members) == 0 {
		return fmt.Errorf("%w: no members", ErrBadPlacement)
	}
	spec, ok := p.Spec()
	if !ok {
		return fmt.Errorf("%w: unknown quorum system %d", ErrBadPlacement, p.QuorumSystem)
	}
	members := make([]quorum.ID, len(p.Members))
	for i, m := range p.Members {
		members[i] = quorum.ID(m)
	}
	// quorum.New refuses an empty, oversized, duplicated or zero membership
	// as well as an impossible system.
	if _, err := quorum.New(members, spec); err != nil {
		return fmt.Errorf("%w: %w", ErrBadPlacement, err)
	}
	if p.WriterMode != WriterSingle && p.WriterMode != WriterMulti {
		return fmt.Errorf("%w: writer mode %d", ErrBadPlacement, p.WriterMode)
	}
	return nil
}
