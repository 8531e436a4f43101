package registry

import (
	"errors"
	"unicode/utf8"

	"github.com/parosdb/paros/core/journal"
)

// Errors of the package. Each is wrapped with the detail.
var (
	// ErrBadName: a tenant or journal name that ValidName refuses.
	ErrBadName = errors.New("paros/registry: bad name")
	// ErrBadPlacement: a placement that can never be used (Placement.Check).
	ErrBadPlacement = errors.New("paros/registry: bad placement")
	// ErrNotEnoughMachines: Place was asked for more machines than are up.
	ErrNotEnoughMachines = errors.New("paros/registry: not enough up machines")
	// ErrBadCount: Place was asked for fewer than one machine.
	ErrBadCount = errors.New("paros/registry: a placement needs at least one machine")
	// ErrBadSnapshot: a snapshot that is not a state the fold can reach.
	ErrBadSnapshot = errors.New("paros/registry: bad snapshot")
)

// Outcome kinds. The first ten are the ones the proto names (a request's
// recorded outcome); bad_request and unknown_machine answer entries.
const (
	OutcomeCreated        = "created"
	OutcomeDeleted        = "deleted"
	OutcomeNameTaken      = "name_taken"
	OutcomeNameDeleting   = "name_deleting"
	OutcomeUnknownTenant  = "unknown_tenant"
	OutcomeUnknownJournal = "unknown_journal"
	OutcomeTenantNotEmpty = "tenant_not_empty"
	OutcomeBadName        = "bad_name"
	OutcomeBadPlacement   = "bad_placement"
	OutcomeIDTaken        = "id_taken"
	// OutcomeBadRequest: an entry the fold cannot take (a machine without
	// id or address, a tombstone of a journal not being deleted, a request
	// without a request id). Never recorded.
	OutcomeBadRequest = "bad_request"
	// OutcomeUnknownMachine: a drain of a machine never registered. Never
	// recorded (a drain carries no request id).
	OutcomeUnknownMachine = "unknown_machine"
)

// recordedKinds are the kinds a request's outcome may have.
var recordedKinds = map[string]bool{
	OutcomeCreated: true, OutcomeDeleted: true, OutcomeNameTaken: true, OutcomeNameDeleting: true,
	OutcomeUnknownTenant: true, OutcomeUnknownJournal: true, OutcomeTenantNotEmpty: true,
	OutcomeBadName: true, OutcomeBadPlacement: true, OutcomeIDTaken: true,
}

// Outcome is what the fold decided for one entry. Kind is "" for an entry
// that is not a request and was taken (a machine registered or drained, a
// tombstone). Journal names what the outcome is about: the journal created
// or deleted ({tenant, 0} for a tenant), or the one holding a taken name;
// zero otherwise.
type Outcome struct {
	Kind    string
	Journal journal.ID
}

// Machine is a registered machine.
type Machine struct {
	ID            uint64
	Addr          string
	FailureDomain string
	State         MachineState
}

// Tenant is a named tenant.
type Tenant struct {
	ID   uint64
	Name string
}

// Journal is a journal the registry holds (live or deleting).
type Journal struct {
	ID        journal.ID
	Tenant    string
	Name      string
	Placement Placement
	Standing  Standing
	// CreatedAt is the control-journal position of the entry that created it.
	CreatedAt journal.Seq
}

func (j Journal) clone() Journal {
	j.Placement = j.Placement.Clone()
	return j
}

// tenant is a tenant and the names its journals hold.
type tenant struct {
	id   uint64
	name string
	// names maps every live or deleting journal's name to its id.
	names map[string]journal.ID
}

// State is the fold of the registry. The zero value is not usable; call New.
type State struct {
	machines  map[uint64]Machine
	tenants   map[string]*tenant // by name
	tenantIDs map[uint64]*tenant // the same tenants by id
	// journals holds every live or deleting journal.
	journals map[journal.ID]Journal
	// outcomes holds every decided request's outcome, by request id. It is
	// never trimmed: an answer must read back the same for as long as a
	// caller may retry, and the registry cannot know when that ends. A
	// request costs a few dozen bytes; a cell decides far fewer requests
	// than a checkpoint can carry.
	outcomes map[string]Outcome
	// gone holds every tombstone: deleted journals, and deleted tenants as
	// {tenant, 0}. Never trimmed: an id never comes back.
	gone map[journal.ID]struct{}

	// Derived (rebuilt by RestoreSnapshot, never encoded):
	// goneTenants counts the tombstones naming each tenant id.
	goneTenants map[uint64]int
	// load counts the live or deleting journals placed on each node.
	load map[uint64]int

	// at is the position after the last folded entry.
	at journal.Seq
}

// New returns the empty registry, before the control journal's first entry.
func New() *State {
	return &State{
		machines:    map[uint64]Machine{},
		tenants:     map[string]*tenant{},
		tenantIDs:   map[uint64]*tenant{},
		journals:    map[journal.ID]Journal{},
		outcomes:    map[string]Outcome{},
		gone:        map[journal.ID]struct{}{},
		goneTenants: map[uint64]int{},
		load:        map[uint64]int{},
		at:          journal.FirstSeq,
	}
}

// Fold folds the entry at position seq and returns the outcome it decided.
// Only the folded state decides, so every machine that folds the same
// entries reaches the same state and the same outcomes. An entry the fold
// refuses changes nothing but At (and records the refusal if it is a
// request with an id).
func (s *State) Fold(seq journal.Seq, e Entry) Outcome {
	var o Outcome
	switch e.Kind {
	case EntryRegisterMachine:
		o = s.registerMachine(e)
	case EntryDrainMachine:
		o = s.drainMachine(e)
	case EntryCreateTenant:
		o = s.request(e, s.createTenant)
	case EntryDeleteTenant:
		o = s.request(e, s.deleteTenant)
	case EntryCreateJournal:
		o = s.request(e, func(e Entry) Outcome { return s.createJournal(seq, e) })
	case EntryDeleteJournal:
		o = s.request(e, s.deleteJournal)
	case EntryJournalGone:
		o = s.journalGone(e)
	default:
		o = Outcome{Kind: OutcomeBadRequest}
	}
	s.at = seq + 1
	return o
}

// request decides a request once: a repeat of a decided request id reads
// the recorded outcome back and changes nothing; a first one is decided and
// its outcome, refusals included, recorded.
func (s *State) request(e Entry, decide func(Entry) Outcome) Outcome {
	if len(e.Request) == 0 {
		return Outcome{Kind: OutcomeBadRequest}
	}
	if o, ok := s.outcomes[string(e.Request)]; ok {
		return o
	}
	o := decide(e)
	s.outcomes[string(e.Request)] = o
	return o
}

func (s *State) registerMachine(e Entry) Outcome {
	if e.NodeID == 0 || e.Addr == "" || !utf8.ValidString(e.Addr) || !utf8.ValidString(e.FailureDomain) {
		return Outcome{Kind: OutcomeBadRequest}
	}
	m, known := s.machines[e.NodeID]
	if !known {
		m = Machine{ID: e.NodeID, State: MachineUp}
	}
	m.Addr, m.FailureDomain = e.Addr, e.FailureDomain
	s.machines[e.NodeID] = m
	return Outcome{}
}

func (s *State) drainMachine(e Entry) Outcome {
	m, known := s.machines[e.NodeID]
	if !known {
		return Outcome{Kind: OutcomeUnknownMachine}
	}
	m.State = MachineDraining
	s.machines[e.NodeID] = m
	return Outcome{}
}

func (s *State) createTenant(e Entry) Outcome {
	if ValidTenantName(e.Name) != nil {
		return Outcome{Kind: OutcomeBadName}
	}
	if s.TenantIDUsed(e.TenantID) {
		return Outcome{Kind: OutcomeIDTaken}
	}
	if t, ok := s.tenants[e.Name]; ok {
		return Outcome{Kind: OutcomeNameTaken, Journal: journal.ID{Tenant: t.id}}
	}
	t := &tenant{id: e.TenantID, name: e.Name, names: map[string]journal.ID{}}
	s.tenants[t.name], s.tenantIDs[t.id] = t, t
	return Outcome{Kind: OutcomeCreated, Journal: journal.ID{Tenant: t.id}}
}

func (s *State) deleteTenant(e Entry) Outcome {
	t, ok := s.tenants[e.Name]
	if !ok {
		return Outcome{Kind: OutcomeUnknownTenant}
	}
	id := journal.ID{Tenant: t.id}
	if len(t.names) > 0 {
		return Outcome{Kind: OutcomeTenantNotEmpty, Journal: id}
	}
	delete(s.tenants, t.name)
	delete(s.tenantIDs, t.id)
	s.addGone(id)
	return Outcome{Kind: OutcomeDeleted, Journal: id}
}

func (s *State) createJournal(seq journal.Seq, e Entry) Outcome {
	t, ok := s.tenants[e.Tenant]
	if !ok {
		return Outcome{Kind: OutcomeUnknownTenant}
	}
	if ValidName(e.Name) != nil {
		return Outcome{Kind: OutcomeBadName}
	}
	if held, ok := t.names[e.Name]; ok {
		if s.journals[held].Standing == StandingDeleting {
			return Outcome{Kind: OutcomeNameDeleting, Journal: held}
		}
		return Outcome{Kind: OutcomeNameTaken, Journal: held}
	}
	id := journal.ID{Tenant: t.id, Journal: e.JournalID}
	if s.JournalIDUsed(t.id, e.JournalID) {
		return Outcome{Kind: OutcomeIDTaken}
	}
	if s.checkPlacement(e.Placement) != nil {
		return Outcome{Kind: OutcomeBadPlacement}
	}
	j := Journal{ID: id, Tenant: t.name, Name: e.Name, Placement: e.Placement.Clone(),
		Standing: StandingLive, CreatedAt: seq}
	s.journals[id] = j
	t.names[j.Name] = id
	for _, m := range j.Placement.Members {
		s.load[m]++
	}
	return Outcome{Kind: OutcomeCreated, Journal: id}
}

// checkPlacement is Placement.Check and, on top, that every member is a
// registered machine that is up.
func (s *State) checkPlacement(p Placement) error {
	if err := p.Check(); err != nil {
		return err
	}
	for _, id := range p.Members {
		if m, ok := s.machines[id]; !ok || m.State != MachineUp {
			return ErrBadPlacement
		}
	}
	return nil
}

func (s *State) deleteJournal(e Entry) Outcome {
	t, ok := s.tenants[e.Tenant]
	if !ok {
		return Outcome{Kind: OutcomeUnknownTenant}
	}
	id, ok := t.names[e.Name]
	if !ok {
		return Outcome{Kind: OutcomeUnknownJournal}
	}
	// A deleting journal answers deleted again: deleting is idempotent
	// across requests, not only across repeats of one.
	j := s.journals[id]
	j.Standing = StandingDeleting
	s.journals[id] = j
	return Outcome{Kind: OutcomeDeleted, Journal: id}
}

func (s *State) journalGone(e Entry) Outcome {
	j, ok := s.journals[e.Journal]
	if !ok || j.Standing != StandingDeleting {
		// A tombstone only follows a delete.
		return Outcome{Kind: OutcomeBadRequest}
	}
	delete(s.journals, j.ID)
	delete(s.tenantIDs[j.ID.Tenant].names, j.Name)
	for _, m := range j.Placement.Members {
		s.unload(m)
	}
	s.addGone(j.ID)
	return Outcome{}
}

func (s *State) addGone(id journal.ID) {
	s.gone[id] = struct{}{}
	s.goneTenants[id.Tenant]++
}

func (s *State) unload(node uint64) {
	if s.load[node]--; s.load[node] <= 0 {
		delete(s.load, node)
	}
}
