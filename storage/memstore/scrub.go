package memstore

import (
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage"
)

// scrubEntriesMax bounds one scrub page; a larger count is clamped (the
// Pebble store's bound, and the core's page bound).
const scrubEntriesMax = paxos.ScrubPageSlotsMax

// Scrub implements storage.LogStore over the durable records: up to count
// entries (at most scrubEntriesMax) from slot max(from, floor), ascending,
// intact and damaged ones alike (a damaged one has Hash 0). It walks the
// slots up from there, so a page costs about its span, never a sort of the
// whole store (the simulator scrubs every few ticks); only a walk through
// mostly empty slots gives up and sorts the slots held past where it got.
func (s *Store) Scrub(from paxos.Slot, count int) ([]storage.ScrubEntry, error) {
	st := &s.durable
	count = min(count, scrubEntriesMax)
	start := max(from, st.floor, 1)
	if count <= 0 || start > st.last {
		return nil, nil
	}
	out := make([]storage.ScrubEntry, 0, min(count, len(st.records)+len(st.faulty)))
	walkSlotsMax := scrubWalkSlotsPerEntry*count + scrubWalkSlotsMin
	for slot, walked := start, 0; len(out) < count; slot, walked = slot+1, walked+1 {
		if walked == walkSlotsMax {
			return s.scrubSorted(out, slot, count), nil
		}
		if e, ok := s.scrubEntry(slot); ok {
			out = append(out, e)
		}
		if slot == st.last { // not slot <= last: last may be the top slot
			break
		}
	}
	return out, nil
}

// The walk's bound, so one Scrub costs work in proportion to what it asks
// for: past scrubWalkSlotsPerEntry empty slots per entry asked (and
// scrubWalkSlotsMin), Scrub sorts the held slots.
const (
	scrubWalkSlotsPerEntry = 8
	scrubWalkSlotsMin      = 64
)

// scrubSorted appends to out the entries from slot start on, up to count in
// all, by sorting the slots held there (a sparse store).
func (s *Store) scrubSorted(out []storage.ScrubEntry, start paxos.Slot, count int) []storage.ScrubEntry {
	var slots []paxos.Slot
	for slot := range s.durable.records {
		if slot >= start {
			slots = append(slots, slot)
		}
	}
	for slot := range s.durable.faulty {
		if slot >= start {
			slots = append(slots, slot)
		}
	}
	slices.Sort(slots)
	for _, slot := range slots[:min(count-len(out), len(slots))] {
		e, _ := s.scrubEntry(slot)
		out = append(out, e)
	}
	return out
}

// scrubEntry is the entry of the durable record at slot, if there is one.
func (s *Store) scrubEntry(slot paxos.Slot) (storage.ScrubEntry, bool) {
	if r, ok := s.durable.records[slot]; ok {
		if _, faulty := s.durable.faulty[slot]; faulty {
			panic(fmt.Sprintf("memstore: slot %d both intact and faulty", slot))
		}
		return storage.ScrubEntry{Slot: slot, Ballot: r.ballot, Hash: storage.CRC32C(storage.AppendCommand(nil, r.cmd))}, true
	}
	if b, ok := s.durable.faulty[slot]; ok {
		return storage.ScrubEntry{Slot: slot, Ballot: b, Damaged: true}, true
	}
	return storage.ScrubEntry{}, false
}

// ScrubLog implements paxos.ScrubSource: the store scrubs itself.
func (s *Store) ScrubLog() paxos.ScrubLog { return s }

// ScrubCursor implements paxos.ScrubSource: the durable scrub cursor (0
// when none was written).
func (s *Store) ScrubCursor() paxos.Slot { return s.durable.scrub }

var _ paxos.ScrubSource = (*Store)(nil)
