// This file checks the Follower (follow.go) rule by rule, as member node 1
// sees it, then over random registry streams against a model member whose
// record writes and starts fail and which restarts.
package registry

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/parosdb/paros/core/journal"
)

var errWrite = errors.New("record write failed")

// followState is a registry of machines 1 to 4 and the tenant acme (10).
func followState(t *testing.T) *State {
	t.Helper()
	st := New()
	foldAll(st,
		RegisterMachine(1, "m1:7000", "a"), RegisterMachine(2, "m2:7000", "b"), RegisterMachine(3, "m3:7000", "c"),
		RegisterMachine(4, "m4:7000", "d"), CreateTenant(req("t-acme"), "acme", 10))
	return st
}

// followCreate folds the creation of acme/j<id> placed on members.
func followCreate(t *testing.T, st *State, id uint64, members ...uint64) Journal {
	t.Helper()
	name := fmt.Sprintf("j%d", id)
	o := st.Fold(st.At(), CreateJournal(req("c-"+name), "acme", name, id, majority(members...)))
	j, ok := st.JournalByID(o.Journal)
	if o.Kind != OutcomeCreated || !ok {
		t.Fatalf("create %s: %+v", name, o)
	}
	return j
}

// followDelete folds the deletion of j and, if gone, its tombstone.
func followDelete(t *testing.T, st *State, j Journal, gone bool) {
	t.Helper()
	if o := st.Fold(st.At(), DeleteJournal(req("d-"+j.Name), "acme", j.Name)); o.Kind != OutcomeDeleted {
		t.Fatalf("delete %s: %+v", j.Name, o)
	}
	if gone {
		st.Fold(st.At(), JournalGone(j.ID))
	}
}

// holds is node 1's record: its applied mark and what it lists and serves.
func holds(applied journal.Seq, listed ...journal.ID) Holding {
	return Holding{Node: 1, Applied: applied, Serving: listed,
		Known: func(id journal.ID) bool { return slices.Contains(listed, id) }}
}

// idsOf is the ids of js, in order.
func idsOf(js []Journal) []journal.ID {
	var out []journal.ID
	for _, j := range js {
		out = append(out, j.ID)
	}
	return out
}

// wantIDs fails t unless got lists exactly want, in order.
func wantIDs(t *testing.T, what string, got, want []journal.ID) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// firstStep runs a Follower's first Step on st, whose record lists
// nothing, with a successful record write, and then starts it (started)
// or fails to. It returns the Follower and the position it applied.
func firstStep(st *State, started bool) (*Follower, journal.Seq) {
	f, at := &Follower{}, st.At()
	s := f.Next(st, at, holds(0))
	f.Recorded(s, nil)
	if started {
		f.Started(s, at)
	} else {
		f.StartFailed(s)
	}
	return f, at
}

func TestFollowerListsAndStartsAJournalPlacedOnTheMember(t *testing.T) {
	// Arrange.
	st := followState(t)
	j := followCreate(t, st, 1, 1, 2, 3)

	// Act.
	s := new(Follower).Next(st, st.At(), holds(0))

	// Check.
	wantIDs(t, "Record", idsOf(s.Record), []journal.ID{j.ID})
	wantIDs(t, "Start", idsOf(s.Start), []journal.ID{j.ID})
	if !s.Writes() || s.Formatted != nil || s.AppliedTo != 0 || s.Remove != nil {
		t.Errorf("step = %+v", s)
	}
}

// A page that places nothing here and removes nothing is Empty.
func TestFollowerIgnoresAJournalPlacedElsewhere(t *testing.T) {
	// Arrange.
	st := followState(t)
	followCreate(t, st, 1, 2, 3, 4)

	// Act.
	s := new(Follower).Next(st, st.At(), holds(0))

	// Check.
	if !s.Empty() || s.Writes() {
		t.Errorf("a journal placed on 2, 3, 4 asks of node 1: %+v", s)
	}
}

func TestFollowerDoesNotListAJournalTwice(t *testing.T) {
	// Arrange.
	st := followState(t)
	j := followCreate(t, st, 1, 1, 2, 3)

	// Act.
	s := new(Follower).Next(st, st.At(), holds(0, j.ID))

	// Check.
	if !s.Empty() {
		t.Errorf("a listed journal is planned again: %+v", s)
	}
}

func TestFollowerNeverStartsAJournalBelowTheAppliedMark(t *testing.T) {
	// Arrange: the record does not list j, though its mark is past it.
	st := followState(t)
	j := followCreate(t, st, 1, 1, 2, 3)

	// Act.
	s := new(Follower).Next(st, st.At(), holds(j.CreatedAt+1))

	// Check.
	if !s.Empty() {
		t.Errorf("a journal below the applied mark is started: %+v", s)
	}
}

func TestFollowerRemovesAServedJournalOnlyOnceTombstoned(t *testing.T) {
	// Arrange: gone is deleted and tombstoned; dying is deleted only.
	st := followState(t)
	gone, dying := followCreate(t, st, 1, 1, 2, 3), followCreate(t, st, 2, 1, 2, 3)
	followDelete(t, st, gone, true)
	followDelete(t, st, dying, false)

	// Act.
	s := new(Follower).Next(st, st.At(), holds(0, gone.ID, dying.ID))

	// Check.
	wantIDs(t, "Remove", s.Remove, []journal.ID{gone.ID})
	if s.Record != nil || s.Start != nil || !s.Writes() {
		t.Errorf("step = %+v", s)
	}
}

func TestFollowerHandsStartedMarksOverOnce(t *testing.T) {
	// Arrange: a first Step lists and starts a and b.
	st := followState(t)
	a, b := followCreate(t, st, 1, 1, 2), followCreate(t, st, 2, 1, 3)
	f, at1 := firstStep(st, true)

	// Act.
	s2 := f.Next(st, st.At(), holds(0, a.ID, b.ID))
	f.Recorded(s2, nil)
	f.Started(s2, st.At())
	s3 := f.Next(st, st.At(), holds(at1, a.ID, b.ID))

	// Check.
	wantIDs(t, "second Formatted", s2.Formatted, []journal.ID{a.ID, b.ID})
	if s2.AppliedTo != at1 || !s2.Writes() || s2.Start != nil {
		t.Errorf("second step = %+v, want AppliedTo %d and nothing to start", s2, at1)
	}
	if !s3.Empty() || s3.AppliedTo != 0 {
		t.Errorf("the marks are handed over twice: %+v", s3)
	}
}

func TestFollowerGetsItsMarksBackOnlyWhenTheRecordWriteFails(t *testing.T) {
	// Arrange: a started, and two Followers each planning the Step that
	// marks it formatted.
	st := followState(t)
	a := followCreate(t, st, 1, 1, 2)
	failing, at1 := firstStep(st, true)
	succeeding, _ := firstStep(st, true)
	sf := failing.Next(st, st.At(), holds(0, a.ID))
	ss := succeeding.Next(st, st.At(), holds(0, a.ID))

	// Act.
	failing.Recorded(sf, errWrite)
	succeeding.Recorded(ss, nil)
	again := failing.Next(st, st.At(), holds(0, a.ID))
	after := succeeding.Next(st, st.At(), holds(at1, a.ID))

	// Check.
	wantIDs(t, "Formatted after a failed write", again.Formatted, []journal.ID{a.ID})
	if again.AppliedTo != at1 {
		t.Errorf("AppliedTo after a failed write = %d, want %d", again.AppliedTo, at1)
	}
	if !after.Empty() || after.AppliedTo != 0 {
		t.Errorf("a successful write left something behind: %+v", after)
	}
}

// A Step of retried starts only is not Empty, yet needs no record write.
func TestFollowerRetriesAFailedStart(t *testing.T) {
	// Arrange: a is listed, and its start fails.
	st := followState(t)
	a := followCreate(t, st, 1, 1, 2)
	f, _ := firstStep(st, false)

	// Act.
	s := f.Next(st, st.At(), holds(0, a.ID))

	// Check.
	wantIDs(t, "Start", idsOf(s.Start), []journal.ID{a.ID})
	if s.Record != nil || s.Formatted != nil || s.AppliedTo != 0 {
		t.Errorf("a listed journal is listed again, or marked: %+v", s)
	}
	if s.Empty() || s.Writes() {
		t.Errorf("retried starts only: Empty %v, Writes %v; want false, false", s.Empty(), s.Writes())
	}
}

// A journal retired without a tombstone (a reconfiguration moved it away
// from this member, which deleted its store) is never formatted again,
// even if its last start had failed.
func TestFollowerDropsARetryOnceRetired(t *testing.T) {
	// Arrange: a is listed and its start fails; then the record retires
	// it (known, no longer served).
	st := followState(t)
	a := followCreate(t, st, 1, 1, 2)
	f, _ := firstStep(st, false)
	retired := Holding{Node: 1, Known: func(id journal.ID) bool { return id == a.ID }}

	// Act.
	s := f.Next(st, st.At(), retired)

	// Check.
	if len(s.Start) != 0 || len(s.Retry) != 0 {
		t.Errorf("a retired journal is started again: Start %v, Retry %v", idsOf(s.Start), idsOf(s.Retry))
	}
}

func TestFollowerDropsARetryOnceTombstoned(t *testing.T) {
	// Arrange: a is listed, its start fails, and it is deleted and gone.
	st := followState(t)
	a := followCreate(t, st, 1, 1, 2)
	f, _ := firstStep(st, false)
	followDelete(t, st, a, true)

	// Act.
	s := f.Next(st, st.At(), holds(0, a.ID))

	// Check.
	wantIDs(t, "Remove", s.Remove, []journal.ID{a.ID})
	if s.Start != nil {
		t.Errorf("a tombstoned journal is started again: %v", idsOf(s.Start))
	}
}

func TestFollowerKeepsRetriesButNotRecordOnAFailedWrite(t *testing.T) {
	// Arrange: a's start failed; b is created; the Step lists b and starts
	// both.
	st := followState(t)
	a := followCreate(t, st, 1, 1, 2)
	f, _ := firstStep(st, false)
	b := followCreate(t, st, 2, 1, 3)
	s2 := f.Next(st, st.At(), holds(0, a.ID))
	wantIDs(t, "second Start", idsOf(s2.Start), []journal.ID{b.ID, a.ID})

	// Act.
	f.Recorded(s2, errWrite)
	s3 := f.Next(st, st.At(), holds(0, a.ID))

	// Check: b comes back from Record (still unlisted), a from the retry.
	wantIDs(t, "third Record", idsOf(s3.Record), []journal.ID{b.ID})
	wantIDs(t, "third Start", idsOf(s3.Start), []journal.ID{b.ID, a.ID})
}

// followModel is member node 1 as follow.go describes it: its record
// (listed, retired, formatted, the applied mark) and its stores.
type followModel struct {
	f                                  *Follower
	listed, retired, formatted, stores map[journal.ID]bool
	applied                            journal.Seq
	removes, retries                   int
}

func (m *followModel) holding() Holding {
	var serving []journal.ID
	for id := range m.listed {
		if !m.retired[id] {
			serving = append(serving, id)
		}
	}
	slices.SortFunc(serving, compareIDs)
	return Holding{Node: 1, Applied: m.applied, Serving: serving, Known: func(id journal.ID) bool { return m.listed[id] }}
}

// restart begins a new Follower: a listed, unformatted journal is
// formatted or adopted, and a retired journal's store is deleted.
func (m *followModel) restart() {
	m.f = &Follower{}
	for id := range m.listed {
		if m.retired[id] {
			delete(m.stores, id)
		} else if !m.formatted[id] {
			m.stores[id] = true
		}
	}
}

// step plans and carries out one Step, in follow.go's order, and counts
// the removals and retried starts it planned.
func (m *followModel) step(st *State, failWrite, failStart bool) error {
	at := st.At()
	s := m.f.Next(st, at, m.holding())
	m.removes += len(s.Remove)
	m.retries += len(s.Start) - len(s.Record)
	for _, j := range s.Start {
		if m.stores[j.ID] || m.retired[j.ID] || st.Gone(j.ID) {
			return fmt.Errorf("starts %v: store %v, retired %v, gone %v", j.ID, m.stores[j.ID], m.retired[j.ID], st.Gone(j.ID))
		}
	}
	if !s.Writes() && s.AppliedTo != 0 {
		return fmt.Errorf("a Step that writes nothing raises the mark to %d", s.AppliedTo)
	}
	if s.Writes() {
		if failWrite {
			m.f.Recorded(s, errWrite)
			return nil
		}
		for _, j := range s.Record {
			m.listed[j.ID] = true
		}
		for _, id := range s.Remove {
			m.retired[id] = true
		}
		for _, id := range s.Formatted {
			m.formatted[id] = true
		}
		if s.AppliedTo != 0 && s.AppliedTo < m.applied {
			return fmt.Errorf("the mark goes down from %d to %d", m.applied, s.AppliedTo)
		}
		m.applied = max(m.applied, s.AppliedTo)
	}
	m.f.Recorded(s, nil)
	if err := m.check(st); err != nil {
		return err
	}
	if failStart {
		m.f.StartFailed(s)
		return nil
	}
	for _, j := range s.Start {
		m.stores[j.ID] = true
	}
	for _, id := range s.Remove {
		delete(m.stores, id)
	}
	m.f.Started(s, at)
	return nil
}

// check is the record's invariant: formatted only if listed, and the
// applied mark past no live journal placed here that is neither listed
// nor retired. (A journal deleted before the member listed it is never
// listed, and the mark may pass it: no Step would start it anyway.)
func (m *followModel) check(st *State) error {
	for id := range m.formatted {
		if !m.listed[id] {
			return fmt.Errorf("%v formatted, not listed", id)
		}
	}
	for _, j := range st.PlacedSince(1, 0) {
		if j.CreatedAt < m.applied && j.Standing == StandingLive && !m.listed[j.ID] && !m.retired[j.ID] {
			return fmt.Errorf("the mark %d passed %v (created at %d), neither listed nor retired", m.applied, j.ID, j.CreatedAt)
		}
	}
	return nil
}

// followEntry draws a journal created on a random subset of machines 1 to
// 4, a live one deleted, a deleting one gone, or an entry changing nothing.
func followEntry(r *rand.Rand, st *State, next *uint64) Entry {
	k := r.IntN(100)
	live := slices.DeleteFunc(st.Journals("acme"), func(j Journal) bool { return j.Standing != StandingLive })
	deleting := st.Deleting()
	switch {
	case k < 45:
		members := slices.DeleteFunc([]uint64{1, 2, 3, 4}, func(uint64) bool { return r.IntN(2) == 0 })
		if len(members) == 0 {
			members = []uint64{uint64(1 + r.IntN(4))}
		}
		*next++
		name := fmt.Sprintf("j%04d", *next) // by name is by age
		return CreateJournal(req("c-"+name), "acme", name, *next, majority(members...))
	case k < 65 && len(live) > 0:
		j := live[max(r.IntN(len(live)), len(live)-1-r.IntN(3))] // mostly a young one
		return DeleteJournal(req("d-"+j.Name), "acme", j.Name)
	case k < 85 && len(deleting) > 0:
		return JournalGone(deleting[r.IntN(len(deleting))].ID)
	}
	return RegisterMachine(2, "m2:7000", "b")
}

func TestFollowerModelMemberServesExactlyItsLiveJournals(t *testing.T) {
	const seeds, entries = 20, 300
	var restarts, removes, retries int
	for seed := range uint64(seeds) {
		// Arrange.
		r := rand.New(rand.NewPCG(seed, 0xf0110))
		st := followState(t)
		m := &followModel{f: &Follower{}, listed: map[journal.ID]bool{}, retired: map[journal.ID]bool{},
			formatted: map[journal.ID]bool{}, stores: map[journal.ID]bool{}}
		var next uint64

		// Act, checking every step.
		for i := range entries {
			e := followEntry(r, st, &next)
			if o := st.Fold(st.At(), e); e.Kind == EntryDeleteJournal && r.IntN(2) == 0 {
				st.Fold(st.At(), JournalGone(o.Journal)) // deleted and gone in one page
			}
			if r.IntN(100) < 5 {
				m.restart()
				restarts++
			}
			if r.IntN(100) < 20 {
				continue // the member lags: its next Step applies several pages
			}
			if err := m.step(st, r.IntN(100) < 10, r.IntN(100) < 10); err != nil {
				t.Fatalf("seed %d step %d after %s %+v: %v", seed, i, e.Kind, e, err)
			}
		}
		if err := m.step(st, false, false); err != nil {
			t.Fatalf("seed %d final step: %v", seed, err)
		}
		removes, retries = removes+m.removes, retries+m.retries

		// Check: it serves every live journal placed on 1, nothing
		// tombstoned, nothing placed elsewhere.
		for _, j := range st.PlacedSince(1, 0) {
			serves := m.stores[j.ID] && m.listed[j.ID] && !m.retired[j.ID]
			if j.Standing == StandingLive && !serves {
				t.Errorf("seed %d: live %v not served (store %v, listed %v)", seed, j.ID, m.stores[j.ID], m.listed[j.ID])
			}
		}
		for id := range m.stores {
			// A retired journal's store is a recorded removal, finished at
			// the next start.
			j, held := st.JournalByID(id)
			if !m.retired[id] && (st.Gone(id) || !held || !slices.Contains(j.Placement.Members, 1) || !m.listed[id]) {
				t.Errorf("seed %d: serves %v: gone %v, held %v, listed %v", seed, id, st.Gone(id), held, m.listed[id])
			}
		}
	}
	if restarts == 0 || removes == 0 || retries == 0 {
		t.Errorf("the run did not reach every path: %d restarts, %d removals, %d retries", restarts, removes, retries)
	}
}
