package registry

import (
	"slices"

	"github.com/parosdb/paros/core/journal"
)

// A member machine applies the registry to itself: it starts the journals
// the registry places on it and removes the ones with a tombstone. The
// Follower decides what each folded page asks of the member; the machine's
// follower loop carries the steps out against its record and its stores,
// and the simulator carries them out against a model of both, so both run
// these decisions.
//
// A Step is carried out in this order, and every order of crashes is safe:
//
//  1. One record write: list Record (not yet formatted), retire Remove
//     (never served again), mark Formatted formatted, and raise the
//     record's applied mark to AppliedTo.
//  2. Format and start Start, in one synced commit; stop Remove and delete
//     their stores.
//  3. Tell the Follower: Started, or StartFailed.
//
// A crash between 1 and 2 leaves journals listed but not formatted, which
// a restart formats (or adopts, finding their stores formatted under the
// configuration the record lists). A crash between 2 and the next page's
// record write leaves them listed as not formatted over formatted stores,
// which a restart adopts the same way. A retired journal is never served
// again, so a removal recorded and not yet carried out is finished at the
// next start.
//
// Invariant: a journal is formatted only if the member's record lists it,
// and the applied mark moves up only past live journals that are listed
// (formatted, or formatted by the next start) or retired. A journal created below the mark that the record does not list
// was removed here, or lost with the record: formatting it again would
// make a member that forgot its promises, so no Step ever starts it.

// Holding is what a member's record says of the journals it holds, as a
// Step is planned.
type Holding struct {
	// Node is the member's node id.
	Node uint64
	// Applied is the record's applied mark: every journal created below
	// it and placed here that was live when the mark passed it is listed,
	// or retired. (One deleted before this member first applied it is
	// neither, and is never started.)
	Applied journal.Seq
	// Known reports whether the record names a journal at all: listed as
	// served, or retired.
	Known func(journal.ID) bool
	// Serving is every journal the record lists as served (not retired).
	Serving []journal.ID
}

// Step is what one applied page asks of the member.
type Step struct {
	// Record is the journals to list, not yet formatted: live, placed
	// here, created at or above the applied mark, and not listed.
	Record []Journal
	// Retry is the journals an earlier Step listed and could not start,
	// still listed as served and with no tombstone: started again.
	Retry []Journal
	// Start is the journals to format and start: Record, then Retry.
	Start []Journal
	// Remove is every served journal whose tombstone the registry holds.
	// A single-writer journal gets one only once sealed, so it takes no
	// write any more; a multi-writer journal has no fence and stops
	// taking writes when its members remove it.
	Remove []journal.ID
	// Formatted is the journals an earlier Step started, to mark formatted
	// in this Step's record write.
	Formatted []journal.ID
	// AppliedTo raises the record's applied mark (0: leave it).
	AppliedTo journal.Seq
}

// Writes reports whether the Step needs a record write at all: one that
// lists, retires or marks nothing (a page that places nothing here and
// follows no start) costs the member no write.
func (s Step) Writes() bool {
	return len(s.Record) > 0 || len(s.Remove) > 0 || len(s.Formatted) > 0
}

// Empty reports whether the Step asks nothing of the member.
func (s Step) Empty() bool { return !s.Writes() && len(s.Start) == 0 }

// Follower is one member's application of the registry, from one start of
// the member: a restart begins with a new Follower (what it held in memory
// is lost, which costs nothing but a lower applied mark). The zero value is
// ready.
type Follower struct {
	// started is what the last Step started, to mark formatted by the
	// next record write, and the page position every journal below which
	// is then formatted and listed.
	started   []journal.ID
	startedAt journal.Seq
	// unstarted is what a Step listed and could not start: started again
	// by the next Step (a failed start must not leave a journal the member
	// lists and never serves until its next restart).
	unstarted []Journal
}

// Next plans the Step for the registry st, folded up to (not including)
// position at. It is judged on the whole state, not on the entries since
// the last page, so a Step that failed is simply planned again. Next hands
// over what the Follower held (the marks, the journals to start again);
// the caller reports how the Step went with Recorded, Started or
// StartFailed.
func (f *Follower) Next(st *State, at journal.Seq, h Holding) Step {
	var s Step
	for _, j := range st.PlacedSince(h.Node, h.Applied) {
		if j.Standing == StandingLive && !h.Known(j.ID) {
			s.Record = append(s.Record, j)
		}
	}
	for _, id := range h.Serving {
		if st.Gone(id) {
			s.Remove = append(s.Remove, id)
		}
	}
	if len(f.unstarted) > 0 {
		// Only a journal still listed as served: one retired meanwhile
		// (a reconfiguration moved it away) is never formatted again.
		serving := make(map[journal.ID]bool, len(h.Serving))
		for _, id := range h.Serving {
			serving[id] = true
		}
		for _, j := range f.unstarted {
			if serving[j.ID] && !st.Gone(j.ID) {
				s.Retry = append(s.Retry, j)
			}
		}
	}
	s.Start = append(slices.Clone(s.Record), s.Retry...)
	if len(f.started) > 0 {
		s.Formatted, s.AppliedTo = f.started, f.startedAt
	}
	f.started, f.startedAt, f.unstarted = nil, 0, nil
	return s
}

// Recorded reports the Step's record write. A failed write gives back what
// Next handed over (the marks, the journals to start again), so the next
// Step carries them; nothing of the failed Step is done.
func (f *Follower) Recorded(s Step, err error) {
	if err == nil {
		return
	}
	f.started, f.startedAt = s.Formatted, s.AppliedTo
	for _, j := range s.Start {
		if !slices.ContainsFunc(s.Record, func(r Journal) bool { return r.ID == j.ID }) {
			f.unstarted = append(f.unstarted, j)
		}
	}
}

// Started reports that the journals of s.Start were formatted and
// started: the next record write marks them formatted and raises the
// applied mark to at, the position of the page this Step applied. The
// caller passes in s.Start only the journals it started (a journal whose
// store failed to format must never be marked formatted: a restart would
// then refuse it as a member that lost its promises).
func (f *Follower) Started(s Step, at journal.Seq) {
	if len(s.Start) == 0 {
		return
	}
	f.started, f.startedAt = make([]journal.ID, len(s.Start)), at
	for i, j := range s.Start {
		f.started[i] = j.ID
	}
}

// StartFailed reports that the Step's journals could not be started: they
// are listed, and the next Step starts them again (its Retry) unless they
// were retired or tombstoned meanwhile. The caller skips a retried journal
// it already holds, served or not.
func (f *Follower) StartFailed(s Step) {
	f.unstarted = append(f.unstarted, s.Start...)
}
