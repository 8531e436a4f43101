package memstore_test

// This file checks memstore's scrub support beyond the conformance suite.
// Scrub walks slots instead of sorting the store, with a sorted fallback
// when the walk meets mostly empty slots, so it is compared against a naive
// model (sort every slot held, filter, cut) over random stores that are
// dense, sparse, or both, with rotted records and a floor. The scrub cursor
// is a relaxed durable scalar: lost with an unsynced batch in a Crash,
// carried by Clone, kept by a truncation, and handed over by Boot and by
// the store itself as a paxos.ScrubSource.

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/memstore"
)

// naiveEntries is every slot held, sorted: the model Scrub pages are cut from.
func naiveEntries(s *memstore.Store) []storage.ScrubEntry {
	var all []storage.ScrubEntry
	for _, r := range s.Records() {
		all = append(all, storage.ScrubEntry{Slot: r.Slot, Ballot: r.Ballot, Hash: storage.CRC32C(storage.AppendCommand(nil, r.Command))})
	}
	for _, f := range s.FaultyEntries() {
		all = append(all, storage.ScrubEntry{Slot: f.Slot, Ballot: f.Ballot, Damaged: true})
	}
	slices.SortFunc(all, func(a, b storage.ScrubEntry) int { return cmp.Compare(a.Slot, b.Slot) })
	return all
}

// naiveScrub is Scrub as a filter of every slot held.
func naiveScrub(all []storage.ScrubEntry, from paxos.Slot, count int) []storage.ScrubEntry {
	var out []storage.ScrubEntry
	for _, e := range all {
		if e.Slot >= from && len(out) < count {
			out = append(out, e)
		}
	}
	return out
}

func TestScrubMatchesNaiveModel(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		s := memstore.New()
		var ops []paxos.WriteOp
		base := paxos.Slot(1)
		for run := rng.IntN(4); run >= 0; run-- {
			gap := paxos.Slot(rng.IntN(3)) * paxos.Slot(rng.IntN(5000)) // 0, or up to 10,000 empty slots
			base += gap
			for i := rng.IntN(60); i >= 0; i-- {
				if rng.IntN(4) > 0 { // a quarter of the slots stay empty
					ops = append(ops, accept(base, bal(1, 1), write(fmt.Sprint(base))))
				}
				base++
			}
		}
		s.Append(ops)
		if rng.IntN(2) == 0 {
			s.Append([]paxos.WriteOp{{Kind: paxos.OpTruncate, Slot: paxos.Slot(rng.IntN(int(base))) + 1, State: sealed(t, 1, 1)}})
		}
		s.Sync()
		for _, r := range s.Records() {
			if rng.IntN(5) == 0 {
				s.Rot(r.Slot)
			}
		}

		all := naiveEntries(s)
		for range 40 {
			from := paxos.Slot(rng.IntN(int(base) + 2))
			count := rng.IntN(70)
			got, err := s.Scrub(from, count)

			if err != nil {
				t.Fatalf("seed %d: scrub(%d, %d): %v", seed, from, count, err)
			}
			if want := naiveScrub(all, from, count); !slices.Equal(got, want) {
				t.Fatalf("seed %d: scrub(%d, %d) =\n%+v\nwant\n%+v", seed, from, count, got, want)
			}
		}
	}
}

func TestScrubCursorIsRelaxedAndDurable(t *testing.T) {
	cursor := func(s paxos.Slot) paxos.WriteOp { return paxos.WriteOp{Kind: paxos.OpScrubCursor, Slot: s} }
	s := memstore.New()
	if s.ScrubCursor() != 0 || s.ScrubLog() == nil {
		t.Fatalf("a fresh store: cursor %d, scrub log %v", s.ScrubCursor(), s.ScrubLog())
	}

	s.Append([]paxos.WriteOp{cursor(4)})
	s.Crash()
	lost := s.ScrubCursor()
	s.Append([]paxos.WriteOp{cursor(6)})
	s.Append([]paxos.WriteOp{accept(1, bal(1, 1), write("a"))})
	s.Sync()
	img := s.Clone()
	s.Append([]paxos.WriteOp{{Kind: paxos.OpTruncate, Slot: 2, State: sealed(t, 2, 1)}})
	s.Sync()
	b, err := s.Boot()

	if err != nil {
		t.Fatal(err)
	}
	if lost != 0 {
		t.Fatalf("an unsynced cursor survived a crash: %d", lost)
	}
	var src paxos.ScrubSource = b
	if img.ScrubCursor() != 6 || s.ScrubCursor() != 6 || src.ScrubCursor() != 6 || src.ScrubLog() == nil {
		t.Fatalf("cursor: clone %d, after a truncation %d, boot %d, want 6", img.ScrubCursor(), s.ScrubCursor(), src.ScrubCursor())
	}
}
