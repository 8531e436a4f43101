// This file checks Snapshot and RestoreSnapshot: a snapshot restores to
// the state it was taken of (in any list order, At set to coversUpTo), and
// every snapshot the fold cannot reach is refused with ErrBadSnapshot,
// leaving the state as it was. One row per refusal.
package registry

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/parosdb/paros/core/journal"
)

func TestRestoreSnapshotRoundTrips(t *testing.T) {
	// Arrange.
	s := setup(t)
	snap := s.Snapshot()
	shuffled := s.Snapshot()
	slices.Reverse(shuffled.Machines)
	slices.Reverse(shuffled.Tenants)
	for _, ts := range shuffled.Tenants {
		slices.Reverse(ts.Journals)
	}
	slices.Reverse(shuffled.Outcomes)
	slices.Reverse(shuffled.Gone)

	for _, in := range []Snapshot{snap, shuffled} {
		// Act.
		r := New()
		err := r.RestoreSnapshot(77, in)

		// Check.
		if err != nil {
			t.Fatalf("restore: %v", err)
		}
		if !reflect.DeepEqual(r.Snapshot(), snap) || r.At() != 77 {
			t.Errorf("restored %+v at %d, want %+v at 77", r.Snapshot(), r.At(), snap)
		}
		for _, node := range []uint64{1, 2, 3, 4} {
			if r.Load(node) != s.Load(node) {
				t.Errorf("load of %d = %d, want %d", node, r.Load(node), s.Load(node))
			}
		}
		if !r.TenantIDUsed(30) || !r.JournalIDUsed(10, 102) {
			t.Error("tombstones not restored as used ids")
		}
	}
}

func TestRestoreSnapshotRefuses(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(s *Snapshot)
	}{
		{"machine id 0", func(s *Snapshot) { s.Machines[0].ID = 0 }},
		{"a machine twice", func(s *Snapshot) { s.Machines[1].ID = s.Machines[0].ID }},
		{"a machine without address", func(s *Snapshot) { s.Machines[0].Addr = "" }},
		{"a machine address not UTF-8", func(s *Snapshot) { s.Machines[0].Addr = "\xff" }},
		{"a machine state unspecified", func(s *Snapshot) { s.Machines[0].State = MachineUnspecified }},
		{"an unknown machine state", func(s *Snapshot) { s.Machines[0].State = 3 }},
		{"tenant id 0", func(s *Snapshot) { s.Tenants[1].ID = 0 }},
		{"a tenant id twice", func(s *Snapshot) { s.Tenants[1].ID = s.Tenants[0].ID }},
		{"a tenant name twice", func(s *Snapshot) { s.Tenants[1].Name = s.Tenants[0].Name }},
		{"an invalid tenant name", func(s *Snapshot) { s.Tenants[1].Name = "a/b" }},
		{"journal id 0", func(s *Snapshot) { s.Tenants[0].Journals[0].ID.Journal = 0 }},
		{"a journal twice", func(s *Snapshot) { s.Tenants[0].Journals = append(s.Tenants[0].Journals, s.Tenants[0].Journals[0]) }},
		{"a journal name twice", func(s *Snapshot) { s.Tenants[0].Journals[1].Name = s.Tenants[0].Journals[0].Name }},
		{"an invalid journal name", func(s *Snapshot) { s.Tenants[0].Journals[0].Name = "" }},
		{"a journal standing unspecified", func(s *Snapshot) { s.Tenants[0].Journals[0].Standing = StandingUnspecified }},
		{"an unknown journal standing", func(s *Snapshot) { s.Tenants[0].Journals[0].Standing = 9 }},
		{"a journal of another tenant's id", func(s *Snapshot) { s.Tenants[0].Journals[0].ID.Tenant = 20 }},
		{"a journal of another tenant's name", func(s *Snapshot) { s.Tenants[0].Journals[0].Tenant = "empty" }},
		{"a placement without members", func(s *Snapshot) { s.Tenants[0].Journals[0].Placement.Members = nil }},
		{"a placement on an unregistered machine", func(s *Snapshot) { s.Tenants[0].Journals[0].Placement.Members[0] = 9 }},
		{"a placement of no writer mode", func(s *Snapshot) { s.Tenants[0].Journals[0].Placement.WriterMode = 0 }},
		{"an outcome without request", func(s *Snapshot) { s.Outcomes[0].Request = nil }},
		{"an outcome of an unknown kind", func(s *Snapshot) { s.Outcomes[0].Kind = "maybe" }},
		{"an outcome no request records", func(s *Snapshot) { s.Outcomes[0].Kind = OutcomeBadRequest }},
		{"a request decided twice", func(s *Snapshot) { s.Outcomes[1].Request = s.Outcomes[0].Request }},
		{"a tombstone of tenant 0", func(s *Snapshot) { s.Gone[0] = journal.ID{Journal: 5} }},
		{"a tombstone of a held journal", func(s *Snapshot) { s.Gone[0] = idLive }},
		{"a tombstone of a deleting journal", func(s *Snapshot) { s.Gone[0] = idDying }},
		{"a tombstone of a live tenant", func(s *Snapshot) { s.Gone[0] = journal.ID{Tenant: 20} }},
		{"a tombstone twice", func(s *Snapshot) { s.Gone[1] = s.Gone[0] }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Arrange.
			snap := setup(t).Snapshot()
			tc.mutate(&snap)
			s := New()
			foldAll(s, RegisterMachine(5, "m5:7000", "e"), CreateTenant(req("x"), "x", 5))
			before, at := s.Snapshot(), s.At()

			// Act.
			err := s.RestoreSnapshot(99, snap)

			// Check.
			if !errors.Is(err, ErrBadSnapshot) {
				t.Fatalf("err = %v, want ErrBadSnapshot", err)
			}
			if !reflect.DeepEqual(s.Snapshot(), before) || s.At() != at {
				t.Error("a refused restore changed the state")
			}
		})
	}
}
