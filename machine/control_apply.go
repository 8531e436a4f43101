package machine

import (
	"context"
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/registry"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/machinerecord"
)

// applyPlacements makes this machine serve what the registry st (folded
// up to, not including, position at) places on it: it starts every live
// journal created at or after the record's ControlApplied that names it
// and that it does not serve yet, and removes every journal it serves
// whose tombstone st holds. It is judged on the whole state, not on the
// entries since the last call, so a failed call is simply made again.
// Only the control plane's follower calls it, one call at a time.
//
// Invariant: a journal is formatted here only if its creation is at or
// above ControlApplied, and ControlApplied moves up only once every
// journal below it is formatted and recorded. A journal created below it
// that the record does not list was deleted here, or its store was lost
// with the record: formatting it again would make a member that forgot
// its promises (amnesia), so it is never done.
//
// The order makes every crash safe: a creation is recorded (not yet
// formatted) before its store is formatted (joinedSpec adopts a store
// formatted under exactly its configuration, so a crash between the two
// costs nothing); a removal is recorded (the journal retired: never
// served again) before its store is deleted.
//
// One record write per call. The journals a call formats are marked
// formatted, and ControlApplied moved past them, by the next call's
// record write (unmarked): until then the record lists them unformatted,
// which a start reads the same way (it finds their stores formatted and
// adopts them), and ControlApplied stays low, which is always safe. A
// burst of creations so costs each member one record write and one
// synced store commit per registry page it applies, not two record
// writes and a commit per journal.
func (m *Machine) applyPlacements(ctx context.Context, st *registry.State, at journal.Seq) error {
	rec := m.Record()
	rt := m.Runtime()
	if rt == nil {
		return fmt.Errorf("paros/machine: not serving")
	}
	self := rec.NodeID
	// Sets, not scans: a machine may hold tens of thousands of journals,
	// and this runs on every registry page.
	known := make(map[journal.ID]bool, len(rec.Joined)+len(rec.Retired))
	for _, j := range rec.Joined {
		known[j.ID()] = true
	}
	for _, j := range rec.Retired {
		known[j.ID()] = true
	}
	var fresh []machinerecord.JoinedJournal
	for _, j := range st.PlacedSince(self, journal.Seq(rec.ControlApplied)) {
		if j.Standing != registry.StandingLive || known[j.ID] {
			continue
		}
		fresh = append(fresh, createdJournal(j))
	}
	var gone []journal.ID
	// Every journal this machine serves whose tombstone the registry
	// holds: the ones the registry placed here, and the ones a
	// reconfiguration moved here since (JoinJournal). Only a journal the
	// registry created can have a tombstone, and it has one only once it
	// is sealed, so no journal that may still take a write is removed.
	for _, j := range rec.Joined {
		if st.Gone(j.ID()) {
			gone = append(gone, j.ID())
		}
	}
	if len(fresh) == 0 && len(gone) == 0 {
		// Nothing here changes: ControlApplied stays where it is (a low
		// mark is safe, see above), and a page that places nothing on
		// this machine costs it no record write.
		return nil
	}
	// 1. Record the new journals (unformatted) and the removals, and mark
	// the last call's journals formatted.
	marked := m.unmarked
	m.unmarked = unmarked{}
	if err := m.updateRecord(func(r *machinerecord.Record) {
		r.Joined = append(r.Joined, fresh...)
		removed := make(map[journal.ID]bool, len(gone))
		for _, id := range gone {
			removed[id] = true
			r.Retired = append(r.Retired, machinerecord.JournalID{Tenant: id.Tenant, Journal: id.Journal})
		}
		r.Joined = slices.DeleteFunc(r.Joined, func(x machinerecord.JoinedJournal) bool { return removed[x.ID()] })
		if len(marked.formatted) > 0 {
			for i := range r.Joined {
				if marked.formatted[r.Joined[i].ID()] {
					r.Joined[i].Formatted = true
				}
			}
			r.ControlApplied = max(r.ControlApplied, uint64(marked.at))
		}
	}); err != nil {
		m.unmarked = marked // still to record
		return fmt.Errorf("paros/machine: record placements: %w", err)
	}
	// 2. Format and serve the new ones, all in one synced commit; stop and
	// delete the removed ones.
	var start []host.JournalSpec
	for _, j := range fresh {
		m.mu.Lock()
		hs := m.joinedSpec(j, storage.ClaimFirstBoot)
		m.mu.Unlock()
		if hs.Claim != storage.ClaimFirstBoot {
			continue // formatted by an earlier attempt: the next start adopts it
		}
		if _, served := rt.Spec(j.ID()); served {
			continue
		}
		start = append(start, hs)
	}
	if err := rt.AddJournals(ctx, start); err != nil {
		return fmt.Errorf("paros/machine: start %d journals: %w", len(start), err)
	}
	if len(gone) > 0 {
		if err := rt.RemoveJournals(ctx, gone); err != nil {
			return fmt.Errorf("paros/machine: remove %d deleted journals: %w", len(gone), err)
		}
		m.log.Info("removed deleted journals", "journals", len(gone))
	}
	if len(fresh) == 0 {
		return nil
	}
	// 3. The next call marks them formatted and moves ControlApplied up.
	m.unmarked = unmarked{at: at, formatted: make(map[journal.ID]bool, len(fresh))}
	for _, j := range fresh {
		m.unmarked.formatted[j.ID()] = true
	}
	m.log.Info("serving journals the control plane created", "journals", len(fresh))
	return nil
}

// unmarked is what the last applyPlacements formatted and left for the
// next one to record: its journals, formatted and served but listed
// unformatted, and the registry position every journal below which is
// formatted and recorded. The zero value marks nothing.
type unmarked struct {
	at        journal.Seq
	formatted map[journal.ID]bool
}

// createdJournal is the record entry of a journal the registry places on
// this machine: its bootstrap configuration, as its store is formatted.
func createdJournal(j registry.Journal) machinerecord.JoinedJournal {
	p := j.Placement
	return machinerecord.JoinedJournal{Tenant: j.ID.Tenant, Journal: j.ID.Journal, Members: slices.Sorted(slices.Values(p.Members)),
		Kind: uint8(p.QuorumSystem), Q1: int(p.Phase1Quorum), Q2: int(p.Phase2Quorum),
		Rows: int(p.Rows), Cols: int(p.Cols), Mode: uint8(p.WriterMode), Created: true}
}

// markDeleted turns the answer "unknown journal" to a journal call into
// "deleted" when this machine's fold of the registry holds the journal's
// tombstone: the caller learns that no server will ever serve it, instead
// of trying every server until its context ends.
func (m *Machine) markDeleted(c host.Call, resp *host.Response) {
	var id journal.ID
	switch c.Kind {
	case host.CallWrite:
		id = c.Write.Journal
	case host.CallTruncate:
		id = c.Truncate.Journal
	case host.CallSetLeader:
		id = c.SetLeader.Journal
	case host.CallRead:
		id = c.Read.Journal
	default:
		return
	}
	unknown := resp.Read.UnknownJournal || resp.Reply.NoVerdict == journal.UnknownJournal
	if !unknown || !m.tombstoned(id) {
		return
	}
	if c.Kind == host.CallRead {
		resp.Read.Deleted = true
		return
	}
	resp.Reply.NoVerdict = journal.Deleted
}

// liveNamed returns journal id as this machine's fold of the registry
// holds it, when the registry created it and no deletion has begun: a
// journal a reconfiguration may move onto this machine (JoinJournal).
func (m *Machine) liveNamed(id journal.ID) (registry.Journal, bool) {
	cp := m.controlPlane()
	if cp == nil {
		return registry.Journal{}, false
	}
	var j registry.Journal
	live := false
	cp.view(func(st *registry.State) {
		var ok bool
		j, ok = st.JournalByID(id)
		j.Placement = j.Placement.Clone() // kept past the lock
		live = ok && j.Standing == registry.StandingLive
	})
	return j, live
}

// tombstoned reports whether this machine's fold of the registry holds
// journal id's tombstone.
func (m *Machine) tombstoned(id journal.ID) bool {
	cp := m.controlPlane()
	if cp == nil {
		return false
	}
	gone := false
	cp.view(func(st *registry.State) { gone = st.Gone(id) })
	return gone
}
