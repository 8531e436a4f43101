package registry

import (
	"cmp"
	"maps"
	"slices"

	"github.com/parosdb/paros/core/journal"
)

// The read side of State. Every list is sorted and every Journal carries
// its own copy of its placement: nothing a query returns aliases the state.

// At is the position after the last folded entry: the next entry the
// registry expects (journal.FirstSeq for a fresh one, coversUpTo after a
// restore).
func (s *State) At() journal.Seq { return s.at }

// Machines is every registered machine, by id.
func (s *State) Machines() []Machine {
	return slices.SortedFunc(maps.Values(s.machines), func(a, b Machine) int { return cmp.Compare(a.ID, b.ID) })
}

// Machine is the registered machine id.
func (s *State) Machine(id uint64) (Machine, bool) {
	m, ok := s.machines[id]
	return m, ok
}

// UpMachines is how many registered machines are up.
func (s *State) UpMachines() int {
	n := 0
	for _, m := range s.machines {
		if m.State == MachineUp {
			n++
		}
	}
	return n
}

// Tenant is the tenant named name.
func (s *State) Tenant(name string) (Tenant, bool) {
	t, ok := s.tenants[name]
	if !ok {
		return Tenant{}, false
	}
	return Tenant{ID: t.id, Name: t.name}, true
}

// Tenants is every tenant, by name.
func (s *State) Tenants() []Tenant {
	out := make([]Tenant, 0, len(s.tenants))
	for _, name := range slices.Sorted(maps.Keys(s.tenants)) {
		out = append(out, Tenant{ID: s.tenants[name].id, Name: name})
	}
	return out
}

// Journals is every journal of the tenant named tenant, live or deleting,
// by name (nil for an unknown tenant).
func (s *State) Journals(tenant string) []Journal {
	t, ok := s.tenants[tenant]
	if !ok {
		return nil
	}
	out := make([]Journal, 0, len(t.names))
	for _, name := range slices.Sorted(maps.Keys(t.names)) {
		out = append(out, s.journals[t.names[name]].clone())
	}
	return out
}

// Resolve is the live journal tenant/name (a deleting one no longer
// resolves).
func (s *State) Resolve(tenant, name string) (Journal, bool) {
	t, ok := s.tenants[tenant]
	if !ok {
		return Journal{}, false
	}
	id, ok := t.names[name]
	if !ok || s.journals[id].Standing != StandingLive {
		return Journal{}, false
	}
	return s.journals[id].clone(), true
}

// JournalByID is the live or deleting journal id.
func (s *State) JournalByID(id journal.ID) (Journal, bool) {
	j, ok := s.journals[id]
	if !ok {
		return Journal{}, false
	}
	return j.clone(), true
}

// Deleting is every journal being deleted (waiting for its tombstone), by
// id.
func (s *State) Deleting() []Journal {
	return s.journalsWhere(func(j Journal) bool { return j.Standing == StandingDeleting })
}

// PlacedSince is every live or deleting journal created at or after
// position since whose placement names node, by id. A machine applying
// the registry asks only for what was created since it last applied it:
// the journals it already holds are neither copied nor sorted again, so
// one applied page costs what it created, not what the registry holds.
func (s *State) PlacedSince(node uint64, since journal.Seq) []Journal {
	return s.journalsWhere(func(j Journal) bool {
		return j.CreatedAt >= since && slices.Contains(j.Placement.Members, node)
	})
}

func (s *State) journalsWhere(keep func(Journal) bool) []Journal {
	var out []Journal
	for _, j := range s.journals {
		if keep(j) {
			out = append(out, j.clone())
		}
	}
	slices.SortFunc(out, func(a, b Journal) int { return compareIDs(a.ID, b.ID) })
	return out
}

// Load is how many live or deleting journals are placed on node.
func (s *State) Load(node uint64) int { return s.load[node] }

// Gone reports whether id has a tombstone: a deleted journal, or
// {tenant, 0} for a deleted tenant.
func (s *State) Gone(id journal.ID) bool {
	_, ok := s.gone[id]
	return ok
}

// Outcome is the recorded outcome of the request id request.
func (s *State) Outcome(request []byte) (Outcome, bool) {
	o, ok := s.outcomes[string(request)]
	return o, ok
}

// TenantIDUsed reports whether a CreateTenant with tenant id id would be
// refused id_taken: zero, a live tenant's, or named by any tombstone.
func (s *State) TenantIDUsed(id uint64) bool {
	_, live := s.tenantIDs[id]
	return id == 0 || live || s.goneTenants[id] > 0
}

// JournalIDUsed reports whether a CreateJournal of tenant id tenantID with
// journal id id would be refused id_taken: zero, live, deleting or gone.
func (s *State) JournalIDUsed(tenantID, id uint64) bool {
	jid := journal.ID{Tenant: tenantID, Journal: id}
	_, held := s.journals[jid]
	_, gone := s.gone[jid]
	return id == 0 || held || gone
}

// Clone is a deep copy of s: folding into either leaves the other as it
// was.
func (s *State) Clone() *State {
	c := &State{
		machines:    maps.Clone(s.machines),
		tenants:     make(map[string]*tenant, len(s.tenants)),
		tenantIDs:   make(map[uint64]*tenant, len(s.tenantIDs)),
		journals:    make(map[journal.ID]Journal, len(s.journals)),
		outcomes:    maps.Clone(s.outcomes),
		gone:        maps.Clone(s.gone),
		goneTenants: maps.Clone(s.goneTenants),
		load:        maps.Clone(s.load),
		at:          s.at,
	}
	for name, t := range s.tenants {
		ct := &tenant{id: t.id, name: t.name, names: maps.Clone(t.names)}
		c.tenants[name], c.tenantIDs[t.id] = ct, ct
	}
	for id, j := range s.journals {
		c.journals[id] = j.clone()
	}
	return c
}

// compareIDs orders journal ids by (tenant, journal).
func compareIDs(a, b journal.ID) int {
	return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Journal, b.Journal))
}
