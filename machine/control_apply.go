package machine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/registry"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/runtime"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/machinerecord"
)

// applyPlacements makes this machine serve what the registry st (folded
// up to, not including, position at) places on it, carrying out the step
// its registry.Follower plans (the rules, and why every crash between the
// steps is safe, are registry.Follower's): it starts every live journal
// placed here that its record does not list, and removes every journal it
// serves whose tombstone st holds. Only the control plane's follower
// calls it, one call at a time; a failed call is simply made again.
//
// The record is the machine record: the step's journals are listed (not
// yet formatted) and its removals retired before any store is formatted
// or deleted; the journals a call formats are marked formatted, and
// ControlApplied moved past them, by the next call's record write. A burst
// of creations so costs each member one record write and one synced store
// commit per registry page it applies.
func (m *Machine) applyPlacements(ctx context.Context, st *registry.State, at journal.Seq) error {
	rec := m.Record()
	rt := m.Runtime()
	if rt == nil {
		return fmt.Errorf("paros/machine: not serving")
	}
	// Sets, not scans: a machine may hold tens of thousands of journals,
	// and this runs on every registry page.
	listed := make(map[journal.ID]bool, len(rec.Joined)+len(rec.Retired))
	serving := make([]journal.ID, 0, len(rec.Joined))
	for _, j := range rec.Joined {
		listed[j.ID()] = true
		serving = append(serving, j.ID())
	}
	for _, j := range rec.Retired {
		listed[j.ID()] = true
	}
	step := m.follower.Next(st, at, registry.Holding{Node: rec.NodeID, Applied: journal.Seq(rec.ControlApplied),
		Known: func(id journal.ID) bool { return listed[id] }, Serving: serving})
	if step.Empty() {
		return nil
	}
	// 1. One record write: list the new journals (unformatted), retire the
	// removed ones, mark the last call's journals formatted.
	if step.Writes() {
		err := m.updateRecord(func(r *machinerecord.Record) {
			for _, j := range step.Record {
				r.Joined = append(r.Joined, createdJournal(j))
			}
			removed := make(map[journal.ID]bool, len(step.Remove))
			for _, id := range step.Remove {
				removed[id] = true
				r.Retired = append(r.Retired, machinerecord.JournalID{Tenant: id.Tenant, Journal: id.Journal})
			}
			r.Joined = slices.DeleteFunc(r.Joined, func(x machinerecord.JoinedJournal) bool { return removed[x.ID()] })
			formatted := make(map[journal.ID]bool, len(step.Formatted))
			for _, id := range step.Formatted {
				formatted[id] = true
			}
			for i := range r.Joined {
				if formatted[r.Joined[i].ID()] {
					r.Joined[i].Formatted = true
				}
			}
			r.ControlApplied = max(r.ControlApplied, uint64(step.AppliedTo))
		})
		m.follower.Recorded(step, err)
		if err != nil {
			return fmt.Errorf("paros/machine: record placements: %w", err)
		}
	}
	// 2. Format and serve the new ones, all in one synced commit; stop and
	// delete the removed ones.
	startErr := m.startPlaced(ctx, rt, step, at)
	if len(step.Remove) > 0 {
		// Even when a start failed: the removals are recorded, and no later
		// step would name them again.
		if err := rt.RemoveJournals(ctx, step.Remove); err != nil {
			return errors.Join(startErr, fmt.Errorf("paros/machine: remove %d deleted journals: %w", len(step.Remove), err))
		}
		m.log.Info("removed deleted journals", "journals", len(step.Remove))
	}
	return startErr
}

// startPlaced formats and starts a step's journals in one batch and tells
// the Follower which started (marked formatted by the next record write)
// and which did not (started again with the next page). A retried journal
// the host holds already, down after its store refused to boot, is left
// down until the process restarts, as any journal whose boot is refused;
// it is neither started again nor marked formatted.
func (m *Machine) startPlaced(ctx context.Context, rt *runtime.Runtime, step registry.Step, at journal.Seq) error {
	if len(step.Start) == 0 {
		return nil
	}
	held := map[journal.ID]bool{}
	if len(step.Retry) > 0 {
		ids := make([]journal.ID, len(step.Retry))
		for i, j := range step.Retry {
			ids[i] = j.ID
		}
		var err error
		if held, err = rt.Holds(ctx, ids); err != nil {
			m.follower.StartFailed(step)
			return fmt.Errorf("paros/machine: start %d journals: %w", len(step.Start), err)
		}
	}
	var start []host.JournalSpec
	for _, j := range step.Start {
		m.mu.Lock()
		hs := m.joinedSpec(createdJournal(j), storage.ClaimFirstBoot)
		m.mu.Unlock()
		if hs.Claim != storage.ClaimFirstBoot {
			continue // formatted by an earlier attempt: the next start adopts it
		}
		if _, served := rt.Spec(j.ID); served || held[j.ID] {
			continue
		}
		start = append(start, hs)
	}
	err := rt.AddJournals(ctx, start)
	// The journals served now are marked formatted by the next record
	// write; the others (none unless err) are started again.
	var started, failed registry.Step
	for _, j := range step.Start {
		if _, served := rt.Spec(j.ID); served {
			started.Start = append(started.Start, j)
		} else if !held[j.ID] {
			failed.Start = append(failed.Start, j)
		}
	}
	if err != nil {
		m.follower.StartFailed(failed)
	}
	m.follower.Started(started, at)
	if err != nil {
		return fmt.Errorf("paros/machine: start %d journals: %w", len(start), err)
	}
	if len(started.Start) > 0 {
		m.log.Info("serving journals the control plane created", "journals", len(started.Start))
	}
	return nil
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
