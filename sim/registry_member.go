package sim

import (
	"errors"
	"maps"
	"slices"

	"github.com/parosdb/paros/client/checkpoint"
	cl "github.com/parosdb/paros/client/sansio"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/registry"
	"github.com/parosdb/paros/wire/registrypb"
)

// Members applying the registry. Every folder of the registry is also a
// member machine (a node of the world) that applies each page it folds to
// itself with the shipped registry.Follower, the type the machine's
// follower loop runs: it lists, formats and starts the journals the
// registry places on it, and removes the ones with a tombstone. Its record
// and its stores are a model here (the hosts' side of creating a journal
// is create.go's), and every seam between the Follower's steps is a fault:
// a failed record write, a failed start, and a restart between the record
// write and the starts, after which the member folds the registry again
// from the start with a new Follower, as a restarted machine does.
//
// The oracles, judged at every step:
//   - a member formats a journal only once, only if its record lists it,
//     and never one it retired;
//   - the record's applied mark passes only journals the record lists or
//     retired;
//   - after a step carried out whole, the member serves every live journal
//     the registry places on it (unless it retired it: a folder behind the
//     tombstone it already applied) and no journal with a tombstone.

// regMember is a folder's member machine: its record and its stores.
type regMember struct {
	node uint64
	f    registry.Follower
	// The record: the journals listed (served), which of them are marked
	// formatted, the retired ones, and the applied mark.
	listed    map[journal.ID]bool
	formatted map[journal.ID]bool
	retired   map[journal.ID]bool
	applied   journal.Seq
	// stores holds every journal whose store is formatted here.
	stores map[journal.ID]bool
	// down: the member crashed after a record write; it restarts at its
	// next step (not inside the read that folded the page, whose cursor
	// must not move back).
	down bool
}

func newRegMember(node uint64) *regMember {
	return &regMember{node: node, listed: map[journal.ID]bool{}, formatted: map[journal.ID]bool{},
		retired: map[journal.ID]bool{}, stores: map[journal.ID]bool{}}
}

var errRecordWrite = errors.New("sim: injected record write fault")

// holding is the member's record as the Follower is asked to read it.
func (m *regMember) holding() registry.Holding {
	serving := make([]journal.ID, 0, len(m.listed))
	for id := range m.listed {
		serving = append(serving, id)
	}
	slices.SortFunc(serving, journal.ID.Compare)
	return registry.Holding{Node: m.node, Applied: m.applied, Known: func(id journal.ID) bool { return m.listed[id] || m.retired[id] },
		Serving: serving}
}

// memberApply carries out the Follower's step for the page the folder of
// c has just folded.
func (cs *clients) memberApply(c *client) {
	w, rc := cs.w, c.reg
	m := rc.member
	if m == nil || m.down || rc.fold.Gapped() || rc.fold.InRun() {
		return
	}
	st, at := rc.fold.State().State, rc.fold.Next()
	step := m.f.Next(st, at, m.holding())
	if step.Empty() {
		// Nothing asked: the member already serves what it must.
		cs.judgeMember(c, st)
		return
	}
	w.audit.gate("member: a member applies a registry page to itself")
	if step.Writes() {
		if w.g.pct(3) {
			m.f.Recorded(step, errRecordWrite)
			w.audit.gate("member: a failed record write is planned again at the next page")
			return
		}
		m.f.Recorded(step, nil)
		cs.memberRecord(c, st, step)
		if w.g.pct(3) {
			m.down = true
			w.audit.gate("member: a member restarts between its record write and its starts")
			return
		}
	}
	// A start fails now and then; more often on a page that also removes,
	// so that the removals of a page whose starts failed are exercised.
	failPct := 3
	if len(step.Remove) > 0 {
		failPct = 25
	}
	startFailed := len(step.Start) > 0 && w.g.pct(failPct)
	if startFailed {
		m.f.StartFailed(step)
		w.audit.gate("member: a failed start is tried again at the next page")
	} else {
		for _, j := range step.Start {
			cs.memberFormat(c, j.ID)
		}
		for range step.Retry {
			w.audit.gate("member: a journal whose start failed is started at a later page")
		}
	}
	// The removals are carried out whether or not the starts failed: they
	// are recorded, and no later step names them again.
	for _, id := range step.Remove {
		delete(m.stores, id)
		w.audit.gate("member: a member removes a journal with a tombstone")
	}
	if startFailed {
		return
	}
	m.f.Started(step, at)
	cs.judgeMember(c, st)
}

// memberRecord is the step's record write, judged: the applied mark moves
// past no journal the record neither lists nor retired.
func (cs *clients) memberRecord(c *client, st *registry.State, step registry.Step) {
	w, m := cs.w, c.reg.member
	for _, j := range step.Record {
		m.listed[j.ID] = true
	}
	for _, id := range step.Remove {
		delete(m.listed, id)
		delete(m.formatted, id)
		m.retired[id] = true
	}
	for _, id := range step.Formatted {
		if m.listed[id] {
			m.formatted[id] = true
		}
	}
	if step.AppliedTo > m.applied {
		for _, j := range st.PlacedSince(m.node, 0) {
			if j.CreatedAt < step.AppliedTo && j.Standing == registry.StandingLive && !m.listed[j.ID] && !m.retired[j.ID] {
				w.audit.violation("member: the applied mark passes only journals the record lists or retired",
					"c%d (n%d) raised its mark to %d past %s, created at %d", c.idx, m.node, step.AppliedTo, short(j.ID), j.CreatedAt)
			}
		}
		m.applied = step.AppliedTo
		w.audit.gate("member: a member's record marks started journals formatted and raises its applied mark")
	}
}

// memberFormat formats and starts journal id on the member, judged.
func (cs *clients) memberFormat(c *client, id journal.ID) {
	w, m := cs.w, c.reg.member
	switch {
	case m.retired[id]:
		w.audit.violation("member: a member never serves a journal it retired", "c%d (n%d) starts %s", c.idx, m.node, short(id))
	case !m.listed[id]:
		w.audit.violation("member: a member formats only a journal its record lists", "c%d (n%d) formats %s", c.idx, m.node, short(id))
	case m.stores[id]:
		w.audit.violation("member: a member formats a journal once", "c%d (n%d) formats %s again", c.idx, m.node, short(id))
	}
	m.stores[id] = true
	w.audit.gate("member: a member starts a journal the registry placed on it")
}

// judgeMember checks, after a step carried out whole or a page that asked
// nothing, that the member
// serves what its fold of the registry places on it.
func (cs *clients) judgeMember(c *client, st *registry.State) {
	w, m := cs.w, c.reg.member
	for _, j := range st.PlacedSince(m.node, 0) {
		if j.CreatedAt < m.applied && !m.listed[j.ID] {
			// Below the mark, by the mark's own oracle (memberRecord): a
			// journal deleted before this member first applied it, which
			// a fold restarted from the start sees live again.
			continue
		}
		if j.Standing == registry.StandingLive && !m.retired[j.ID] && !(m.listed[j.ID] && m.stores[j.ID]) {
			w.audit.violation("member: a member serves every live journal the registry places on it",
				"c%d (n%d) at %d does not serve %s (listed %v, store %v)", c.idx, m.node, st.At(), short(j.ID), m.listed[j.ID], m.stores[j.ID])
		}
	}
	// In id order: a seed's report replays bit for bit.
	for _, id := range slices.SortedFunc(maps.Keys(m.stores), journal.ID.Compare) {
		if st.Gone(id) {
			w.audit.violation("member: a member serves no journal with a tombstone", "c%d (n%d) serves %s", c.idx, m.node, short(id))
		}
	}
}

// memberRestart restarts a member that crashed after a record write: its
// start formats (or adopts) every journal the record lists and finishes
// the removals it recorded; its new Follower folds the registry again from
// the start.
func (cs *clients) memberRestart(c *client) {
	rc, m := c.reg, c.reg.member
	m.down = false
	m.f = registry.Follower{}
	for id := range m.listed {
		if !m.stores[id] {
			cs.w.audit.gate("member: a restart formats a journal its record lists and no store holds")
		}
		m.stores[id] = true
	}
	for id := range m.retired {
		delete(m.stores, id)
	}
	rc.fold = checkpoint.NewFolder(registrypb.New(), journal.FirstSeq)
	c.rd = cl.NewReader(c.j.ID, 1)
	c.lagging = 1
}
