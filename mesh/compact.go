package mesh

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// Retentions the supervisor compacts with.
const (
	// PeerRetention keeps an expired peer listed, and a dead stream held,
	// this long past the expiry.
	PeerRetention = 15 * time.Minute
	// HandoverRetention is how long past expiry + PeerRetention an untaken
	// handover keeps its dead publisher's stream.
	HandoverRetention = 24 * time.Hour
)

// CompactParams are Compact's arguments.
type CompactParams struct {
	Expiry    time.Duration // the liveness expiry
	Retention time.Duration // silence past the expiry before a stream is due
	Handovers time.Duration // how long past that an untaken handover pins its publisher
	Force     bool          // compact even when no bound is near
}

// CompactResult says what Compact dropped.
type CompactResult struct {
	Dropped int        // events dropped
	Streams []StreamID // streams dropped, sorted
}

// Compact drops the streams nothing live relies on (docs/guide/mesh.md,
// "Compaction, and why each rule exists"):
//
//  1. It runs if forced, if the journal holds more than journalEventsOver
//     events or journalStreamsOver streams, or if some node is crowded
//     (holds nodeCompactStreams streams or more); otherwise it drops nothing.
//  2. A stream is due if it is not this runtime's own, the journal is over
//     a bound or its node is crowded, and it has been silent for longer than
//     Expiry + Retention.
//  3. Kept are every stream not due; every due publisher of a handover
//     nobody took, while its silence is within Expiry + Retention +
//     Handovers; and, to a fixed point, every stream that took a handover
//     from a kept publisher or answered a review of a kept requester.
//     Who took and who answered is read from the fold of all held events
//     with every stream treated as expired.
//  4. Every due stream not kept is dropped and leaves a tombstone (the seq
//     it reached, the beat it was last heard at). Past tombstonesMax the
//     lexicographically smallest tombstone goes first.
//
// If anything was dropped and the journal has a Store, the Store is
// rewritten with every remaining held event. Tombstones are not persisted.
func (j *Journal) Compact(p CompactParams) CompactResult {
	over := p.Force || j.eventsHeld > journalEventsOver || len(j.streams) > journalStreamsOver
	crowded := map[NodeID]bool{}
	for n, count := range j.nodeStreams {
		if count >= nodeCompactStreams {
			crowded[n] = true
		}
	}
	if !over && len(crowded) == 0 {
		return CompactResult{}
	}

	dueAfter := p.Expiry + p.Retention
	lapseAfter := dueAfter + p.Handovers
	due := map[StreamID]bool{}
	lapsed := map[StreamID]bool{}
	for s, l := range j.streams {
		if s == j.cfg.Stream || !(over || crowded[s.Node()]) {
			continue
		}
		if silent := j.silentFor(l); silent > dueAfter {
			due[s] = true
			lapsed[s] = silent > lapseAfter
		}
	}
	if len(due) == 0 {
		return CompactResult{}
	}

	kept := j.keepSet(due, lapsed)
	var res CompactResult
	for _, s := range slices.Sorted(maps.Keys(due)) {
		if kept[s] {
			continue
		}
		l := j.streams[s]
		t := Tombstone{Seq: l.high(), Beat: l.beat}
		res.Dropped += j.removeStream(s)
		res.Streams = append(res.Streams, s)
		if len(j.tombstones) >= tombstonesMax {
			delete(j.tombstones, slices.Min(slices.Collect(maps.Keys(j.tombstones))))
		}
		j.tombstones[s] = t
		if len(j.tombstones) > tombstonesMax {
			panic(fmt.Sprintf("paros/mesh: %d tombstones, past tombstonesMax %d", len(j.tombstones), tombstonesMax))
		}
	}
	j.tallies.Compacted += uint64(res.Dropped)
	if res.Dropped > 0 && j.cfg.Store != nil {
		if err := j.cfg.Store.Rewrite(j.Lines()); err != nil && j.storeErr == nil {
			j.storeErr = err
		}
	}
	return res
}

// keepSet returns the streams compaction keeps: every held stream not due,
// the unlapsed due publishers of untaken handovers, and to a fixed point
// every stream referring to a kept one (a taker to the publishers of what it
// took, an answerer to the requester of what it answered).
func (j *Journal) keepSet(due, lapsed map[StreamID]bool) map[StreamID]bool {
	st := fold(j.Records(), func(StreamID) Liveness { return Expired })

	publishers := map[string][]StreamID{}
	for s, l := range j.streams {
		for _, e := range l.events {
			if e.body.Kind == KindHandoverPublished {
				id := e.body.Handover.ID
				if !slices.Contains(publishers[id], s) {
					publishers[id] = append(publishers[id], s)
				}
			}
		}
	}

	kept := map[StreamID]bool{}
	for s := range j.streams {
		if !due[s] {
			kept[s] = true
		}
	}
	refers := map[StreamID][]StreamID{} // from -> to
	for _, h := range st.Handovers {
		if len(h.ConsumedBy) == 0 {
			for _, s := range publishers[h.ID] {
				if due[s] && !lapsed[s] {
					kept[s] = true
				}
			}
		}
		for _, taker := range h.ConsumedBy {
			from, _, err := splitRecordKey(taker)
			if err != nil {
				panic(fmt.Sprintf("paros/mesh: fold produced taker key %q", taker))
			}
			refers[from] = append(refers[from], publishers[h.ID]...)
		}
	}
	for _, r := range st.Reviews {
		for _, a := range r.Answers {
			from, _, err := splitRecordKey(a.Session)
			if err != nil {
				panic(fmt.Sprintf("paros/mesh: fold produced answer key %q", a.Session))
			}
			refers[from] = append(refers[from], r.Stream)
		}
	}
	for changed := true; changed; {
		changed = false
		for from, tos := range refers {
			if kept[from] {
				continue
			}
			if slices.ContainsFunc(tos, func(t StreamID) bool { return kept[t] }) {
				kept[from] = true
				changed = true
			}
		}
	}
	return kept
}
