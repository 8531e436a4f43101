package registry

import (
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/parosdb/paros/core/journal"
)

// Snapshot is the whole fold in canonical order, the plain mirror of
// pb.RegistryState: machines by id, tenants by id with their journals by
// id, outcomes by request bytes, tombstones by (tenant, journal). Equal
// states give equal snapshots (reflect.DeepEqual) and so equal encodings.
// It leaves out At: a checkpoint depends on the state alone.
type Snapshot struct {
	Machines []Machine
	Tenants  []TenantSnapshot
	Outcomes []RecordedOutcome
	Gone     []journal.ID
}

// TenantSnapshot is one tenant and its journals (live and deleting).
type TenantSnapshot struct {
	Tenant
	// Journals, by id; each one's ID.Tenant and Tenant are the tenant's.
	Journals []Journal
}

// RecordedOutcome is one decided request and what it folded to.
type RecordedOutcome struct {
	Request []byte
	Outcome
}

// Snapshot is s in canonical order. It shares no memory with s.
func (s *State) Snapshot() Snapshot {
	snap := Snapshot{Machines: s.Machines()}
	for _, id := range slices.Sorted(maps.Keys(s.tenantIDs)) {
		t := s.tenantIDs[id]
		ts := TenantSnapshot{Tenant: Tenant{ID: t.id, Name: t.name}}
		for _, jid := range slices.SortedFunc(maps.Values(t.names), compareIDs) {
			ts.Journals = append(ts.Journals, s.journals[jid].clone())
		}
		snap.Tenants = append(snap.Tenants, ts)
	}
	for _, req := range slices.Sorted(maps.Keys(s.outcomes)) {
		snap.Outcomes = append(snap.Outcomes, RecordedOutcome{Request: []byte(req), Outcome: s.outcomes[req]})
	}
	snap.Gone = slices.SortedFunc(maps.Keys(s.gone), compareIDs)
	return snap
}

// RestoreSnapshot replaces s with snap, a state that covers every position
// below coversUpTo (At becomes coversUpTo). The order of snap's lists does
// not matter. It refuses, with an error wrapping ErrBadSnapshot and s left
// as it was, a snapshot the fold cannot reach: a zero or duplicate id, a
// duplicate or invalid name, an unknown machine state or standing, a
// placement that could never have been created or that names an
// unregistered machine, an outcome without request or of an unknown kind,
// or a tombstone of something still held.
func (s *State) RestoreSnapshot(coversUpTo journal.Seq, snap Snapshot) error {
	n := New()
	for _, m := range snap.Machines {
		if err := n.restoreMachine(m); err != nil {
			return err
		}
	}
	for _, ts := range snap.Tenants {
		if err := n.restoreTenant(ts); err != nil {
			return err
		}
	}
	for _, o := range snap.Outcomes {
		if len(o.Request) == 0 || !recordedKinds[o.Kind] {
			return badSnapshot("outcome %q of request %x", o.Kind, o.Request)
		}
		if _, dup := n.outcomes[string(o.Request)]; dup {
			return badSnapshot("request %x decided twice", o.Request)
		}
		n.outcomes[string(o.Request)] = o.Outcome
	}
	for _, id := range snap.Gone {
		_, held := n.journals[id]
		_, live := n.tenantIDs[id.Tenant]
		_, dup := n.gone[id]
		if id.Tenant == 0 || held || (id.Journal == 0 && live) || dup {
			return badSnapshot("tombstone %v", id)
		}
		n.addGone(id)
	}
	n.at = coversUpTo
	*s = *n
	return nil
}

func (s *State) restoreMachine(m Machine) error {
	if m.ID == 0 || m.Addr == "" || !utf8.ValidString(m.Addr) || !utf8.ValidString(m.FailureDomain) ||
		(m.State != MachineUp && m.State != MachineDraining) {
		return badSnapshot("machine %d (%q, %s)", m.ID, m.Addr, m.State)
	}
	if _, dup := s.machines[m.ID]; dup {
		return badSnapshot("machine %d twice", m.ID)
	}
	s.machines[m.ID] = m
	return nil
}

func (s *State) restoreTenant(ts TenantSnapshot) error {
	if ts.ID == 0 || ValidTenantName(ts.Name) != nil {
		return badSnapshot("tenant %d %q", ts.ID, ts.Name)
	}
	if _, dup := s.tenantIDs[ts.ID]; dup {
		return badSnapshot("tenant id %d twice", ts.ID)
	}
	if _, dup := s.tenants[ts.Name]; dup {
		return badSnapshot("tenant name %q twice", ts.Name)
	}
	t := &tenant{id: ts.ID, name: ts.Name, names: map[string]journal.ID{}}
	s.tenants[t.name], s.tenantIDs[t.id] = t, t
	for _, j := range ts.Journals {
		if j.ID.Tenant != t.id || j.Tenant != t.name || j.ID.Journal == 0 || ValidName(j.Name) != nil ||
			(j.Standing != StandingLive && j.Standing != StandingDeleting) {
			return badSnapshot("journal %v %q of tenant %d %q (%s)", j.ID, j.Name, t.id, t.name, j.Standing)
		}
		if _, dup := s.journals[j.ID]; dup {
			return badSnapshot("journal %v twice", j.ID)
		}
		if _, dup := t.names[j.Name]; dup {
			return badSnapshot("journal name %q twice in tenant %q", j.Name, t.name)
		}
		if err := j.Placement.Check(); err != nil {
			return badSnapshot("journal %v: %v", j.ID, err)
		}
		for _, m := range j.Placement.Members {
			if _, ok := s.machines[m]; !ok {
				return badSnapshot("journal %v placed on unregistered machine %d", j.ID, m)
			}
			s.load[m]++
		}
		s.journals[j.ID] = j.clone()
		t.names[j.Name] = j.ID
	}
	return nil
}

func badSnapshot(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadSnapshot, fmt.Sprintf(format, args...))
}
