// This file checks Place: least loaded first, spread over failure domains
// while an unused one remains, ties by node id, only up machines, exclude
// honoured, pending loads counted (PlaceWith), and the typed refusals.
package registry

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/parosdb/paros/core/journal"
)

// placeState registers machines (id, domain) up, drains the ones in
// drained, and places load[id] single-member journals on each.
func placeState(t *testing.T, machines map[uint64]string, drained []uint64, load map[uint64]int) *State {
	t.Helper()
	s := New()
	for _, id := range slices.Sorted(maps.Keys(machines)) {
		foldAll(s, RegisterMachine(id, "addr", machines[id]))
	}
	foldAll(s, CreateTenant(req("t"), "t", 1))
	next := uint64(1)
	for _, id := range slices.Sorted(maps.Keys(load)) {
		for range load[id] {
			o := s.Fold(s.At(), CreateJournal(fmt.Appendf(nil, "r%d", next), "t", fmt.Sprintf("j%d", next), next, majority(id)))
			if o.Kind != OutcomeCreated {
				t.Fatalf("placing load: %+v", o)
			}
			next++
		}
	}
	for _, id := range drained {
		foldAll(s, DrainMachine(id))
	}
	return s
}

func TestPlace(t *testing.T) {
	cases := []struct {
		name     string
		machines map[uint64]string
		drained  []uint64
		load     map[uint64]int
		n        int
		exclude  []uint64
		pending  map[uint64]int
		want     []uint64
		err      error
	}{
		{name: "ties by node id", machines: map[uint64]string{1: "", 2: "", 3: "", 4: ""}, n: 3, want: []uint64{1, 2, 3}},
		{name: "least loaded first", machines: map[uint64]string{1: "", 2: "", 3: "", 4: ""},
			load: map[uint64]int{1: 2, 2: 1}, n: 2, want: []uint64{3, 4}},
		{name: "spread over domains before load", machines: map[uint64]string{1: "a", 2: "a", 3: "b", 4: "c"},
			load: map[uint64]int{3: 1, 4: 1}, n: 3, want: []uint64{1, 3, 4}},
		{name: "a domain again once every domain is used", machines: map[uint64]string{1: "a", 2: "a", 3: "b", 4: "b"},
			load: map[uint64]int{1: 1}, n: 3, want: []uint64{2, 3, 4}},
		{name: "within a domain the least loaded", machines: map[uint64]string{1: "a", 2: "a", 3: "b"},
			load: map[uint64]int{1: 3, 3: 1}, n: 2, want: []uint64{2, 3}},
		{name: "draining machines are not chosen", machines: map[uint64]string{1: "a", 2: "b", 3: "c"},
			drained: []uint64{1}, n: 2, want: []uint64{2, 3}},
		{name: "excluded machines are not chosen", machines: map[uint64]string{1: "a", 2: "b", 3: "c"},
			exclude: []uint64{2}, n: 2, want: []uint64{1, 3}},
		{name: "pending loads count", machines: map[uint64]string{1: "", 2: "", 3: ""},
			pending: map[uint64]int{1: 1}, n: 2, want: []uint64{2, 3}},
		{name: "not enough up machines", machines: map[uint64]string{1: "a", 2: "b", 3: "c"},
			drained: []uint64{3}, n: 3, err: ErrNotEnoughMachines},
		{name: "not enough once excluded", machines: map[uint64]string{1: "a", 2: "b"},
			exclude: []uint64{1}, n: 2, err: ErrNotEnoughMachines},
		{name: "no machines", n: 1, err: ErrNotEnoughMachines},
		{name: "zero machines asked", machines: map[uint64]string{1: "a"}, n: 0, err: ErrBadCount},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Arrange.
			s := placeState(t, tc.machines, tc.drained, tc.load)
			before := s.Snapshot()

			// Act.
			var got []uint64
			var err error
			if tc.pending != nil {
				got, err = s.PlaceWith(tc.n, tc.pending)
			} else {
				got, err = s.Place(tc.n, tc.exclude)
			}

			// Check.
			if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("placed on %v, want %v", got, tc.want)
			}
			if err == nil {
				o := s.Clone().Fold(s.At(), CreateJournal(req("new"), "t", "new", 1000, majority(got...)))
				if o != (Outcome{OutcomeCreated, journal.ID{Tenant: 1, Journal: 1000}}) {
					t.Errorf("the fold refuses the placement Place chose: %+v", o)
				}
			}
			if !reflect.DeepEqual(s.Snapshot(), before) {
				t.Error("Place changed the state")
			}
		})
	}
}
