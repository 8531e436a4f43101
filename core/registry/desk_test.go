// This file checks the coordinator desk's decisions (desk.go) rule by
// rule: how Judge answers each request of a batch and which entries it
// writes, how BuildCreation and BuildTenant build their entries, which
// deleted journals need a seal, and how Tombstones batches.
package registry

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/parosdb/paros/core/journal"
)

// deskState is a registry of machines 1 to up (domains a, b, c, ...), all
// up and empty, and the tenant acme (10).
func deskState(t *testing.T, up int) *State {
	t.Helper()
	st := New()
	for i := 1; i <= up; i++ {
		foldAll(st, RegisterMachine(uint64(i), fmt.Sprintf("m%d:7000", i), string(rune('a'+i-1))))
	}
	if o := st.Fold(st.At(), CreateTenant(req("t-acme"), "acme", 10)); o.Kind != OutcomeCreated {
		t.Fatalf("create acme: %+v", o)
	}
	return st
}

// scripted is a draw that returns ids in order and fails t once they run out.
func scripted(t *testing.T, ids ...uint64) func() uint64 {
	t.Helper()
	return func() uint64 {
		if len(ids) == 0 {
			t.Fatalf("draw called more often than scripted")
		}
		id := ids[0]
		ids = ids[1:]
		return id
	}
}

// counter is a draw that returns next, next+1, ...
func counter(next uint64) func() uint64 {
	return func() uint64 { next++; return next - 1 }
}

// noDraw is a draw that fails t if it is ever called.
func noDraw(t *testing.T) func() uint64 {
	return func() uint64 { t.Fatal("draw called"); return 0 }
}

// buildEntry is a Build that always writes e.
func buildEntry(e Entry) func(*State, Pending) (Entry, string, bool) {
	return func(*State, Pending) (Entry, string, bool) { return e, "", true }
}

// noBuild is a Build that fails t if it is ever called.
func noBuild(t *testing.T) func(*State, Pending) (Entry, string, bool) {
	return func(*State, Pending) (Entry, string, bool) {
		t.Fatal("Build called")
		return Entry{}, "", false
	}
}

// acmeCreation asks for acme/name, one request id per name.
func acmeCreation(name string, members int, p Placement) Creation {
	return Creation{Request: req("c-" + name), Tenant: "acme", Name: name, Members: members, Placement: p}
}

func TestJudgeDeniesARefusedCallerEvenForADecidedRequest(t *testing.T) {
	// Arrange: the request id t-acme is decided (created), and the caller
	// is not allowed.
	st := deskState(t, 3)
	asked := false
	batch := []Request{{
		ID:      req("t-acme"),
		Allowed: func(*State) bool { asked = true; return false },
		Build:   noBuild(t),
	}}

	// Act
	entries, verdicts := Judge(st, batch)

	// Check: denied with no outcome leaked, and nothing written.
	if !asked {
		t.Errorf("Allowed was not asked")
	}
	if want := []Verdict{{Kind: VerdictDenied}}; !reflect.DeepEqual(verdicts, want) {
		t.Errorf("verdicts = %+v, want %+v", verdicts, want)
	}
	if len(entries) != 0 {
		t.Errorf("entries = %+v, want none", entries)
	}
}

func TestJudgeAnswersADecidedRequestWithItsOutcomeWithoutBuilding(t *testing.T) {
	// Arrange: t-beta is decided (created, tenant 20); the caller is allowed.
	st := deskState(t, 3)
	recorded := st.Fold(st.At(), CreateTenant(req("t-beta"), "beta", 20))
	batch := []Request{{ID: req("t-beta"), Allowed: func(*State) bool { return true }, Build: noBuild(t)}}

	// Act
	entries, verdicts := Judge(st, batch)

	// Check: decided with the recorded outcome, and nothing written.
	want := []Verdict{{Kind: VerdictDecided, Outcome: Outcome{Kind: OutcomeCreated, Journal: journal.ID{Tenant: 20}}}}
	if recorded != want[0].Outcome || !reflect.DeepEqual(verdicts, want) {
		t.Errorf("verdicts = %+v (recorded %+v), want %+v", verdicts, recorded, want)
	}
	if len(entries) != 0 {
		t.Errorf("entries = %+v, want none", entries)
	}
}

func TestJudgeWritesNothingForARefusedBuildAndKeepsTheOthersInOrder(t *testing.T) {
	// Arrange: a write, a refused build, then two writes.
	st := deskState(t, 3)
	first := CreateTenant(req("r1"), "one", 21)
	third := CreateTenant(req("r3"), "three", 23)
	fourth := CreateTenant(req("r4"), "four", 24)
	batch := []Request{
		{ID: req("r1"), Build: buildEntry(first)},
		{ID: req("r2"), Build: func(*State, Pending) (Entry, string, bool) { return Entry{}, "no_reason", false }},
		{ID: req("r3"), Build: buildEntry(third)},
		{ID: req("r4"), Build: buildEntry(fourth)},
	}

	// Act
	entries, verdicts := Judge(st, batch)

	// Check: the refusal is answered as given, and the written entries keep
	// their requests' order.
	want := []Verdict{{Kind: VerdictWrite}, {Kind: VerdictRefused, Refusal: "no_reason"}, {Kind: VerdictWrite}, {Kind: VerdictWrite}}
	if !reflect.DeepEqual(verdicts, want) {
		t.Errorf("verdicts = %+v, want %+v", verdicts, want)
	}
	if wantEntries := []Entry{first, third, fourth}; !reflect.DeepEqual(entries, wantEntries) {
		t.Errorf("entries = %+v, want %+v", entries, wantEntries)
	}
}

func TestJudgeSpreadsABatchsCreationsByItsPendingPlacements(t *testing.T) {
	// Arrange: three up machines, no journals, three one-member creations.
	st := deskState(t, 3)
	draw := counter(100)
	var batch []Request
	for _, name := range []string{"x", "y", "z"} {
		c := acmeCreation(name, 1, Placement{})
		batch = append(batch, Request{ID: c.Request, Build: func(st *State, p Pending) (Entry, string, bool) {
			return BuildCreation(st, p, c, draw)
		}})
	}

	// Act
	entries, verdicts := Judge(st, batch)

	// Check: each lands on its own machine ...
	var placed []uint64
	for i, e := range entries {
		if verdicts[i].Kind != VerdictWrite || len(e.Placement.Members) != 1 {
			t.Fatalf("request %d: verdict %+v, members %v", i, verdicts[i], e.Placement.Members)
		}
		placed = append(placed, e.Placement.Members[0])
	}
	if !slices.Equal(placed, []uint64{1, 2, 3}) {
		t.Errorf("placed on %v, want [1 2 3]", placed)
	}
	// ... where, without a shared pending, all would take the least loaded.
	for _, name := range []string{"x", "y", "z"} {
		e, _, ok := BuildCreation(st, Pending{}, acmeCreation(name, 1, Placement{}), counter(200))
		if !ok || !slices.Equal(e.Placement.Members, []uint64{1}) {
			t.Errorf("alone, %s placed on %v (ok %v), want [1]", name, e.Placement.Members, ok)
		}
	}
	// ... and, folded, every request is created.
	foldAll(st, entries...)
	for _, r := range batch {
		if o, ok := st.Outcome(r.ID); !ok || o.Kind != OutcomeCreated {
			t.Errorf("outcome of %s = %+v (%v), want created", r.ID, o, ok)
		}
	}
}

func TestBuildCreationRefusesAnUnknownTenant(t *testing.T) {
	// Arrange
	st := deskState(t, 3)
	c := acmeCreation("j", 0, Placement{})
	c.Tenant = "nobody"
	pending := Pending{}

	// Act
	_, refusal, ok := BuildCreation(st, pending, c, noDraw(t))

	// Check: refused, and nothing counted as pending.
	if ok || refusal != OutcomeUnknownTenant {
		t.Errorf("= %q, %v; want %q, false", refusal, ok, OutcomeUnknownTenant)
	}
	if len(pending) != 0 {
		t.Errorf("pending = %v, want empty", pending)
	}
}

func TestBuildCreationKeepsTheMembersAskedFor(t *testing.T) {
	// Arrange: members 3 and 1 asked for, in that order, with a Members
	// count that would place otherwise.
	st := deskState(t, 4)
	asked := Placement{Members: []uint64{3, 1}, QuorumSystem: QuorumMajority, WriterMode: WriterMulti}
	pending := Pending{}

	// Act
	e, _, ok := BuildCreation(st, pending, acmeCreation("j", 3, asked), counter(7))

	// Check: the entry is the creation as asked, its members counted pending,
	// and the caller's placement not shared.
	want := CreateJournal(req("c-j"), "acme", "j", 7, asked)
	if !ok || !reflect.DeepEqual(e, want) {
		t.Fatalf("entry = %+v (ok %v), want %+v", e, ok, want)
	}
	if wantPending := (Pending{1: 1, 3: 1}); !reflect.DeepEqual(pending, wantPending) {
		t.Errorf("pending = %v, want %v", pending, wantPending)
	}
	e.Placement.Members[0] = 99
	if asked.Members[0] != 3 {
		t.Errorf("the entry shares the caller's members")
	}
}

func TestBuildCreationPicksThreeMembersOrAsManyAsAreUp(t *testing.T) {
	for _, tc := range []struct {
		up, drained int
		want        []uint64
	}{
		{up: 4, want: []uint64{1, 2, 3}},
		{up: 3, want: []uint64{1, 2, 3}},
		{up: 3, drained: 1, want: []uint64{2, 3}},
		{up: 1, want: []uint64{1}},
	} {
		t.Run(fmt.Sprintf("%d registered %d drained", tc.up, tc.drained), func(t *testing.T) {
			// Arrange: machine 1 drained when asked.
			st := deskState(t, tc.up)
			if tc.drained > 0 {
				foldAll(st, DrainMachine(1))
			}

			// Act
			e, refusal, ok := BuildCreation(st, Pending{}, acmeCreation("j", 0, Placement{}), counter(7))

			// Check: the members, which the fold accepts.
			if !ok || !slices.Equal(e.Placement.Members, tc.want) {
				t.Fatalf("members = %v (%q, %v), want %v", e.Placement.Members, refusal, ok, tc.want)
			}
			if o := st.Fold(st.At(), e); o.Kind != OutcomeCreated {
				t.Errorf("folded: %+v, want created", o)
			}
		})
	}
}

func TestBuildCreationMakesAnUnspecifiedWriterModeSingle(t *testing.T) {
	for _, tc := range []struct{ asked, want WriterMode }{
		{WriterUnspecified, WriterSingle},
		{WriterSingle, WriterSingle},
		{WriterMulti, WriterMulti},
	} {
		// Arrange
		st := deskState(t, 3)
		c := acmeCreation("j", 0, Placement{WriterMode: tc.asked})

		// Act
		e, _, ok := BuildCreation(st, Pending{}, c, counter(7))

		// Check
		if !ok || e.Placement.WriterMode != tc.want {
			t.Errorf("asked %d: writer mode %d (ok %v), want %d", tc.asked, e.Placement.WriterMode, ok, tc.want)
		}
	}
}

func TestBuildCreationDrawsAgainPastAUsedJournalID(t *testing.T) {
	// Arrange: acme holds journal 5 live and journal 6 tombstoned; another
	// tenant's journal 8 does not count for acme.
	st := deskState(t, 3)
	foldAll(st,
		CreateJournal(req("c-five"), "acme", "five", 5, majority(1)),
		CreateJournal(req("c-six"), "acme", "six", 6, majority(1)),
		DeleteJournal(req("d-six"), "acme", "six"),
		JournalGone(journal.ID{Tenant: 10, Journal: 6}),
		CreateTenant(req("t-beta"), "beta", 20),
		CreateJournal(req("c-eight"), "beta", "eight", 8, majority(1)))
	if !st.JournalIDUsed(10, 5) || !st.JournalIDUsed(10, 6) || st.JournalIDUsed(10, 8) {
		t.Fatalf("arrange: journal ids not as intended")
	}

	// Act: the draw offers 5, 0, 6, then 8.
	e, _, ok := BuildCreation(st, Pending{}, acmeCreation("j", 0, Placement{}), scripted(t, 5, 0, 6, 8))

	// Check: the first free id is kept, and the fold creates it.
	if !ok || e.JournalID != 8 {
		t.Fatalf("journal id = %d (ok %v), want 8", e.JournalID, ok)
	}
	if o := st.Fold(st.At(), e); o != (Outcome{Kind: OutcomeCreated, Journal: journal.ID{Tenant: 10, Journal: 8}}) {
		t.Errorf("folded: %+v, want created {10 8}", o)
	}
}

func TestBuildCreationRefusesMoreMembersThanAreUp(t *testing.T) {
	// Arrange: three machines, one drained: two up, three or four asked.
	st := deskState(t, 3)
	foldAll(st, DrainMachine(3))
	pending := Pending{}

	for _, members := range []int{3, 4} {
		// Act
		_, refusal, ok := BuildCreation(st, pending, acmeCreation("j", members, Placement{}), noDraw(t))

		// Check: refused, nothing counted pending.
		if ok || refusal != OutcomeBadPlacement {
			t.Errorf("%d members: = %q, %v; want %q, false", members, refusal, ok, OutcomeBadPlacement)
		}
	}
	if len(pending) != 0 {
		t.Errorf("pending = %v, want empty", pending)
	}
}

func TestBuildTenantDrawsAgainPastAUsedIDAndZero(t *testing.T) {
	// Arrange: tenant 10 is acme, and tenant 30 was deleted (tombstoned).
	st := deskState(t, 1)
	foldAll(st, CreateTenant(req("t-gone"), "gone", 30), DeleteTenant(req("d-gone"), "gone"))

	// Act: the draw offers 10, 0, 30, then 40.
	e := BuildTenant(st, req("t-new"), "new", scripted(t, 10, 0, 30, 40))

	// Check: the first free id is kept, and the fold creates it.
	if want := CreateTenant(req("t-new"), "new", 40); !reflect.DeepEqual(e, want) {
		t.Fatalf("entry = %+v, want %+v", e, want)
	}
	if o := st.Fold(st.At(), e); o.Kind != OutcomeCreated {
		t.Errorf("folded: %+v, want created", o)
	}
}

func TestNeedsSealOnlyForASingleWriterJournal(t *testing.T) {
	for _, tc := range []struct {
		mode WriterMode
		want bool
	}{{WriterSingle, true}, {WriterMulti, false}} {
		// Arrange
		j := Journal{Placement: Placement{Members: []uint64{1}, WriterMode: tc.mode}}

		// Act
		got := j.NeedsSeal()

		// Check
		if got != tc.want {
			t.Errorf("writer mode %d: NeedsSeal = %v, want %v", tc.mode, got, tc.want)
		}
	}
}

func TestTombstonesBatchInOrderAtMostMaxAnAppend(t *testing.T) {
	// Arrange
	var ids []journal.ID
	for i := range uint64(5) {
		ids = append(ids, journal.ID{Tenant: 10, Journal: 100 + i})
	}

	// Act
	got := Tombstones(ids, 2)

	// Check: 2, 2, 1 tombstones, in the order of ids; none for no ids.
	want := [][]Entry{
		{JournalGone(ids[0]), JournalGone(ids[1])},
		{JournalGone(ids[2]), JournalGone(ids[3])},
		{JournalGone(ids[4])},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Tombstones = %+v, want %+v", got, want)
	}
	if got := Tombstones(nil, 2); len(got) != 0 {
		t.Errorf("Tombstones(nil) = %+v, want none", got)
	}
}
