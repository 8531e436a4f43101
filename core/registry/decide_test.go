// This file checks the fold's decision table (doc.go) rule by rule. Every
// row folds one entry onto the same base registry (setup below) and names
// the outcome the rule gives and the change it makes: none at all, only
// the recorded outcome of its request, or a change a check function
// describes. One row per outcome kind of every entry, and one per way a
// placement is invalid.
package registry

import (
	"reflect"
	"slices"
	"testing"

	"github.com/parosdb/paros/core/journal"
)

func req(s string) []byte { return []byte(s) }

// majority is a single-writer majority placement on members.
func majority(members ...uint64) Placement {
	return Placement{Members: members, QuorumSystem: QuorumMajority, WriterMode: WriterSingle}
}

// foldAll folds es at the positions after s.At and returns their outcomes.
func foldAll(s *State, es ...Entry) []Outcome {
	var out []Outcome
	for _, e := range es {
		out = append(out, s.Fold(s.At(), e))
	}
	return out
}

// The base registry every row starts from:
//
//	machines  1 (a), 2 (b), 3 (c) up; 4 (a) draining
//	tenants   acme 10, empty 20; gone 30 deleted ({30,0} tombstoned)
//	journals  acme/live {10,100} live, acme/dying {10,101} deleting, both on 1,2,3;
//	          acme/old {10,102} deleted and tombstoned (its name is free)
var (
	idLive  = journal.ID{Tenant: 10, Journal: 100}
	idDying = journal.ID{Tenant: 10, Journal: 101}
	idOld   = journal.ID{Tenant: 10, Journal: 102}
)

const setupLen = 15

func setup(t *testing.T) *State {
	t.Helper()
	s := New()
	got := foldAll(s,
		RegisterMachine(1, "m1:7000", "a"),
		RegisterMachine(2, "m2:7000", "b"),
		RegisterMachine(3, "m3:7000", "c"),
		RegisterMachine(4, "m4:7000", "a"),
		DrainMachine(4),
		CreateTenant(req("t-acme"), "acme", 10),
		CreateTenant(req("t-empty"), "empty", 20),
		CreateTenant(req("t-gone"), "gone", 30),
		DeleteTenant(req("d-gone"), "gone"),
		CreateJournal(req("j-live"), "acme", "live", 100, majority(1, 2, 3)),
		CreateJournal(req("j-dying"), "acme", "dying", 101, majority(1, 2, 3)),
		DeleteJournal(req("d-dying"), "acme", "dying"),
		CreateJournal(req("j-old"), "acme", "old", 102, majority(1, 2, 3)),
		DeleteJournal(req("d-old"), "acme", "old"),
		JournalGone(idOld),
	)
	want := []Outcome{{}, {}, {}, {}, {},
		{OutcomeCreated, journal.ID{Tenant: 10}}, {OutcomeCreated, journal.ID{Tenant: 20}},
		{OutcomeCreated, journal.ID{Tenant: 30}}, {OutcomeDeleted, journal.ID{Tenant: 30}},
		{OutcomeCreated, idLive}, {OutcomeCreated, idDying}, {OutcomeDeleted, idDying},
		{OutcomeCreated, idOld}, {OutcomeDeleted, idOld}, {}}
	if !slices.Equal(got, want) {
		t.Fatalf("setup outcomes = %v, want %v", got, want)
	}
	if s.At() != setupLen+1 {
		t.Fatalf("setup At = %d, want %d", s.At(), setupLen+1)
	}
	return s
}

// change says what a row may change.
type change int

const (
	changesNothing   change = iota // the snapshot is as it was
	recordsOnly                    // only the request's outcome is added
	changesAsChecked               // check describes the change
)

type decideCase struct {
	name   string
	entry  Entry
	want   Outcome
	change change
	check  func(t *testing.T, s *State)
}

func TestDecide(t *testing.T) {
	deletingOutcome := Outcome{OutcomeDeleted, idDying}
	cases := []decideCase{
		// RegisterMachine.
		{"register: node 0 is bad_request", RegisterMachine(0, "x:1", ""), Outcome{Kind: OutcomeBadRequest}, changesNothing, nil},
		{"register: empty address is bad_request", RegisterMachine(9, "", "z"), Outcome{Kind: OutcomeBadRequest}, changesNothing, nil},
		{"register: address not UTF-8 is bad_request", RegisterMachine(9, "\xff", "z"), Outcome{Kind: OutcomeBadRequest}, changesNothing, nil},
		{"register: a new machine is added up", RegisterMachine(9, "m9:7000", "z"), Outcome{}, changesAsChecked,
			func(t *testing.T, s *State) {
				if m, ok := s.Machine(9); !ok || m != (Machine{9, "m9:7000", "z", MachineUp}) {
					t.Errorf("machine 9 = %+v, %v", m, ok)
				}
			}},
		{"register: a known machine is updated and keeps its state", RegisterMachine(4, "m4:8000", "d"), Outcome{}, changesAsChecked,
			func(t *testing.T, s *State) {
				if m, _ := s.Machine(4); m != (Machine{4, "m4:8000", "d", MachineDraining}) {
					t.Errorf("machine 4 = %+v", m)
				}
			}},
		// DrainMachine.
		{"drain: an unknown machine is unknown_machine", DrainMachine(9), Outcome{Kind: OutcomeUnknownMachine}, changesNothing, nil},
		{"drain: a known machine is draining", DrainMachine(1), Outcome{}, changesAsChecked,
			func(t *testing.T, s *State) {
				if m, _ := s.Machine(1); m.State != MachineDraining {
					t.Errorf("machine 1 is %s", m.State)
				}
				if s.UpMachines() != 2 {
					t.Errorf("up machines = %d, want 2", s.UpMachines())
				}
			}},
		// CreateTenant.
		{"create tenant: no request id is bad_request", CreateTenant(nil, "new", 40), Outcome{Kind: OutcomeBadRequest}, changesNothing, nil},
		{"create tenant: a repeat reads its outcome back", CreateTenant(req("t-acme"), "other", 41),
			Outcome{OutcomeCreated, journal.ID{Tenant: 10}}, changesNothing, nil},
		{"create tenant: an invalid name is bad_name", CreateTenant(req("r"), "a/b", 40), Outcome{Kind: OutcomeBadName}, recordsOnly, nil},
		{"create tenant: id 0 is id_taken", CreateTenant(req("r"), "new", 0), Outcome{Kind: OutcomeIDTaken}, recordsOnly, nil},
		{"create tenant: a live tenant's id is id_taken", CreateTenant(req("r"), "new", 20), Outcome{Kind: OutcomeIDTaken}, recordsOnly, nil},
		{"create tenant: a deleted tenant's id is id_taken", CreateTenant(req("r"), "new", 30), Outcome{Kind: OutcomeIDTaken}, recordsOnly, nil},
		{"create tenant: a held name is name_taken", CreateTenant(req("r"), "empty", 40),
			Outcome{OutcomeNameTaken, journal.ID{Tenant: 20}}, recordsOnly, nil},
		{"create tenant: a deleted tenant's name is free", CreateTenant(req("r"), "gone", 40),
			Outcome{OutcomeCreated, journal.ID{Tenant: 40}}, changesAsChecked,
			func(t *testing.T, s *State) {
				if tn, ok := s.Tenant("gone"); !ok || tn != (Tenant{40, "gone"}) {
					t.Errorf("tenant gone = %+v, %v", tn, ok)
				}
			}},
		// DeleteTenant.
		{"delete tenant: a repeat reads its outcome back", DeleteTenant(req("d-gone"), "empty"),
			Outcome{OutcomeDeleted, journal.ID{Tenant: 30}}, changesNothing, nil},
		{"delete tenant: an unknown tenant is unknown_tenant", DeleteTenant(req("r"), "nobody"), Outcome{Kind: OutcomeUnknownTenant}, recordsOnly, nil},
		{"delete tenant: a tenant with journals is tenant_not_empty", DeleteTenant(req("r"), "acme"),
			Outcome{OutcomeTenantNotEmpty, journal.ID{Tenant: 10}}, recordsOnly, nil},
		{"delete tenant: an empty tenant is deleted and tombstoned", DeleteTenant(req("r"), "empty"),
			Outcome{OutcomeDeleted, journal.ID{Tenant: 20}}, changesAsChecked,
			func(t *testing.T, s *State) {
				if _, ok := s.Tenant("empty"); ok || !s.Gone(journal.ID{Tenant: 20}) || !s.TenantIDUsed(20) {
					t.Errorf("tenant empty still there or not tombstoned")
				}
			}},
		// CreateJournal.
		{"create journal: a repeat reads its outcome back", CreateJournal(req("j-live"), "empty", "x", 7, majority(1)),
			Outcome{OutcomeCreated, idLive}, changesNothing, nil},
		{"create journal: an unknown tenant is unknown_tenant", CreateJournal(req("r"), "nobody", "x", 200, majority(1, 2, 3)),
			Outcome{Kind: OutcomeUnknownTenant}, recordsOnly, nil},
		{"create journal: an invalid name is bad_name", CreateJournal(req("r"), "acme", "..", 200, majority(1, 2, 3)),
			Outcome{Kind: OutcomeBadName}, recordsOnly, nil},
		{"create journal: a live journal's name is name_taken", CreateJournal(req("r"), "acme", "live", 200, majority(1, 2, 3)),
			Outcome{OutcomeNameTaken, idLive}, recordsOnly, nil},
		{"create journal: a deleting journal's name is name_deleting", CreateJournal(req("r"), "acme", "dying", 200, majority(1, 2, 3)),
			Outcome{OutcomeNameDeleting, idDying}, recordsOnly, nil},
		{"create journal: id 0 is id_taken", CreateJournal(req("r"), "acme", "x", 0, majority(1, 2, 3)),
			Outcome{Kind: OutcomeIDTaken}, recordsOnly, nil},
		{"create journal: a live id is id_taken", CreateJournal(req("r"), "acme", "x", 100, majority(1, 2, 3)),
			Outcome{Kind: OutcomeIDTaken}, recordsOnly, nil},
		{"create journal: a deleting id is id_taken", CreateJournal(req("r"), "acme", "x", 101, majority(1, 2, 3)),
			Outcome{Kind: OutcomeIDTaken}, recordsOnly, nil},
		{"create journal: a gone id is id_taken", CreateJournal(req("r"), "acme", "x", 102, majority(1, 2, 3)),
			Outcome{Kind: OutcomeIDTaken}, recordsOnly, nil},
		{"create journal: the same journal id in another tenant is free", CreateJournal(req("r"), "empty", "x", 100, majority(1)),
			Outcome{OutcomeCreated, journal.ID{Tenant: 20, Journal: 100}}, changesAsChecked, nil},
		{"create journal: a gone journal's name is free", CreateJournal(req("r"), "acme", "old", 200, majority(1, 2, 3)),
			Outcome{OutcomeCreated, journal.ID{Tenant: 10, Journal: 200}}, changesAsChecked,
			func(t *testing.T, s *State) {
				j, ok := s.Resolve("acme", "old")
				want := Journal{ID: journal.ID{Tenant: 10, Journal: 200}, Tenant: "acme", Name: "old",
					Placement: majority(1, 2, 3), Standing: StandingLive, CreatedAt: setupLen + 1}
				if !ok || !reflect.DeepEqual(j, want) {
					t.Errorf("acme/old = %+v, %v; want %+v", j, ok, want)
				}
				if s.Load(1) != 3 || s.Load(4) != 0 {
					t.Errorf("loads 1, 4 = %d, %d; want 3, 0", s.Load(1), s.Load(4))
				}
			}},
		// DeleteJournal.
		{"delete journal: a repeat reads its outcome back", DeleteJournal(req("d-dying"), "acme", "live"),
			deletingOutcome, changesNothing, nil},
		{"delete journal: an unknown tenant is unknown_tenant", DeleteJournal(req("r"), "nobody", "live"),
			Outcome{Kind: OutcomeUnknownTenant}, recordsOnly, nil},
		{"delete journal: an unknown name is unknown_journal", DeleteJournal(req("r"), "acme", "nothing"),
			Outcome{Kind: OutcomeUnknownJournal}, recordsOnly, nil},
		{"delete journal: a gone journal's name is unknown_journal", DeleteJournal(req("r"), "acme", "old"),
			Outcome{Kind: OutcomeUnknownJournal}, recordsOnly, nil},
		{"delete journal: a deleting journal is deleted again", DeleteJournal(req("r"), "acme", "dying"),
			deletingOutcome, recordsOnly, nil},
		{"delete journal: a live journal is deleting", DeleteJournal(req("r"), "acme", "live"),
			Outcome{OutcomeDeleted, idLive}, changesAsChecked,
			func(t *testing.T, s *State) {
				if _, ok := s.Resolve("acme", "live"); ok {
					t.Error("a deleting journal still resolves")
				}
				if j, ok := s.JournalByID(idLive); !ok || j.Standing != StandingDeleting {
					t.Errorf("journal %v = %+v, %v", idLive, j, ok)
				}
				if d := s.Deleting(); len(d) != 2 || d[0].ID != idLive || d[1].ID != idDying {
					t.Errorf("deleting = %v", d)
				}
			}},
		// JournalGone.
		{"gone: a deleting journal is removed and tombstoned", JournalGone(idDying), Outcome{}, changesAsChecked,
			func(t *testing.T, s *State) {
				if _, ok := s.JournalByID(idDying); ok || !s.Gone(idDying) || !s.JournalIDUsed(10, 101) {
					t.Error("journal dying still held or not tombstoned")
				}
				if js := s.Journals("acme"); len(js) != 1 || js[0].ID != idLive {
					t.Errorf("acme's journals = %v", js)
				}
				if s.Load(1) != 1 || len(s.PlacedSince(1, 0)) != 1 {
					t.Errorf("load of 1 = %d, placed %v", s.Load(1), s.PlacedSince(1, 0))
				}
			}},
		{"gone: a live journal is bad_request", JournalGone(idLive), Outcome{Kind: OutcomeBadRequest}, changesNothing, nil},
		{"gone: a gone journal is bad_request", JournalGone(idOld), Outcome{Kind: OutcomeBadRequest}, changesNothing, nil},
		{"gone: an unknown journal is bad_request", JournalGone(journal.ID{Tenant: 10, Journal: 999}), Outcome{Kind: OutcomeBadRequest}, changesNothing, nil},
		// An entry of no kind.
		{"invalid entry is bad_request", Entry{}, Outcome{Kind: OutcomeBadRequest}, changesNothing, nil},
	}
	cases = append(cases, placementCases()...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Arrange.
			s := setup(t)
			before := s.Snapshot()

			// Act.
			got := s.Fold(s.At(), tc.entry)

			// Check.
			if got != tc.want {
				t.Errorf("outcome = %+v, want %+v", got, tc.want)
			}
			if s.At() != setupLen+2 {
				t.Errorf("At = %d, want %d", s.At(), setupLen+2)
			}
			after := s.Snapshot()
			switch tc.change {
			case changesNothing:
				if !reflect.DeepEqual(after, before) {
					t.Errorf("state changed:\n before %+v\n after  %+v", before, after)
				}
			case recordsOnly:
				if o, ok := s.Outcome(tc.entry.Request); !ok || o != tc.want {
					t.Errorf("recorded outcome = %+v, %v; want %+v", o, ok, tc.want)
				}
				if !reflect.DeepEqual(withoutOutcome(after, tc.entry.Request), before) {
					t.Errorf("more than the outcome changed:\n before %+v\n after  %+v", before, after)
				}
			case changesAsChecked:
				if tc.entry.Request != nil {
					if o, ok := s.Outcome(tc.entry.Request); !ok || o != tc.want {
						t.Errorf("recorded outcome = %+v, %v; want %+v", o, ok, tc.want)
					}
				}
				if reflect.DeepEqual(after, before) {
					t.Error("state did not change")
				}
				if tc.check != nil {
					tc.check(t, s)
				}
			}
		})
	}
}

// placementCases are the rows of the placement rule: each way a placement
// is invalid is bad_placement (recorded), and each valid system creates.
func placementCases() []decideCase {
	bad := func(name string, p Placement) decideCase {
		return decideCase{"create journal: bad_placement: " + name,
			CreateJournal(req("r"), "acme", "x", 200, p), Outcome{Kind: OutcomeBadPlacement}, recordsOnly, nil}
	}
	good := func(name string, p Placement) decideCase {
		return decideCase{"create journal: created: " + name,
			CreateJournal(req("r"), "acme", "x", 200, p), Outcome{OutcomeCreated, journal.ID{Tenant: 10, Journal: 200}},
			changesAsChecked, nil}
	}
	withMode := func(p Placement, m WriterMode) Placement { p.WriterMode = m; return p }
	return []decideCase{
		bad("no members", majority()),
		bad("a member twice", majority(1, 1, 2)),
		bad("an unregistered member", majority(1, 2, 9)),
		bad("a draining member", majority(1, 2, 4)),
		bad("member 0", majority(0, 1, 2)),
		bad("flexible quorums that do not intersect",
			Placement{Members: []uint64{1, 2, 3}, QuorumSystem: QuorumFlexible, Phase1Quorum: 1, Phase2Quorum: 2, WriterMode: WriterSingle}),
		bad("flexible quorum larger than the members",
			Placement{Members: []uint64{1, 2, 3}, QuorumSystem: QuorumFlexible, Phase1Quorum: 4, Phase2Quorum: 1, WriterMode: WriterSingle}),
		bad("a grid of the wrong shape",
			Placement{Members: []uint64{1, 2, 3}, QuorumSystem: QuorumGrid, Rows: 2, Cols: 2, WriterMode: WriterSingle}),
		bad("an unknown quorum system", Placement{Members: []uint64{1, 2, 3}, QuorumSystem: 3, WriterMode: WriterSingle}),
		bad("a quorum system past uint8", Placement{Members: []uint64{1, 2, 3}, QuorumSystem: 256, WriterMode: WriterSingle}),
		bad("writer mode unspecified", withMode(majority(1, 2, 3), WriterUnspecified)),
		bad("an unknown writer mode", withMode(majority(1, 2, 3), 7)),
		good("majority, multi-writer", withMode(majority(1, 2, 3), WriterMulti)),
		good("flexible 2+2 of 3",
			Placement{Members: []uint64{1, 2, 3}, QuorumSystem: QuorumFlexible, Phase1Quorum: 2, Phase2Quorum: 2, WriterMode: WriterSingle}),
		good("grid 1x3", Placement{Members: []uint64{3, 1, 2}, QuorumSystem: QuorumGrid, Rows: 1, Cols: 3, WriterMode: WriterSingle}),
	}
}

// withoutOutcome is snap without the outcome of request.
func withoutOutcome(snap Snapshot, request []byte) Snapshot {
	snap.Outcomes = slices.DeleteFunc(slices.Clone(snap.Outcomes), func(o RecordedOutcome) bool {
		return string(o.Request) == string(request)
	})
	if len(snap.Outcomes) == 0 {
		snap.Outcomes = nil // as a snapshot without outcomes has it
	}
	return snap
}

// TestQueriesDoNotAlias checks that what a query returns is a copy: editing
// it, or folding into a clone, leaves the state as it was.
func TestQueriesDoNotAlias(t *testing.T) {
	// Arrange.
	s := setup(t)
	before := s.Snapshot()

	// Act.
	j, _ := s.Resolve("acme", "live")
	j.Placement.Members[0] = 99
	for _, q := range [][]Journal{s.Journals("acme"), s.PlacedSince(1, 0), s.Deleting()} {
		q[0].Placement.Members[0] = 99
	}
	snap := s.Snapshot()
	snap.Tenants[0].Journals[0].Placement.Members[0] = 99
	snap.Outcomes[0].Request[0] = 'X'
	c := s.Clone()
	foldAll(c, DrainMachine(1), DeleteJournal(req("r"), "acme", "live"), JournalGone(idDying),
		CreateJournal(req("r2"), "acme", "new", 300, majority(2, 3)), DeleteTenant(req("r3"), "empty"))

	// Check.
	if !reflect.DeepEqual(s.Snapshot(), before) {
		t.Errorf("state changed through a query or a clone:\n before %+v\n after  %+v", before, s.Snapshot())
	}
	if s.At() != setupLen+1 || c.At() != setupLen+6 {
		t.Errorf("At = %d, clone's %d", s.At(), c.At())
	}
}

// TestQueries checks the sorted lists of the base registry.
func TestQueries(t *testing.T) {
	s := setup(t)
	if got := s.Tenants(); !slices.Equal(got, []Tenant{{10, "acme"}, {20, "empty"}}) {
		t.Errorf("tenants = %v", got)
	}
	var names []string
	for _, j := range s.Journals("acme") {
		names = append(names, j.Name+"/"+j.Standing.String())
	}
	if !slices.Equal(names, []string{"dying/deleting", "live/live"}) {
		t.Errorf("acme's journals = %v", names)
	}
	if s.Journals("nobody") != nil {
		t.Error("journals of an unknown tenant")
	}
	var ids []uint64
	for _, m := range s.Machines() {
		ids = append(ids, m.ID)
	}
	if !slices.Equal(ids, []uint64{1, 2, 3, 4}) {
		t.Errorf("machines = %v", ids)
	}
	if p := s.PlacedSince(2, 0); len(p) != 2 || p[0].ID != idLive || p[1].ID != idDying {
		t.Errorf("placed on 2 = %v", p)
	}
	// Since a position: only what was created at or after it.
	live, _ := s.JournalByID(idLive)
	dying, _ := s.JournalByID(idDying)
	later := max(live.CreatedAt, dying.CreatedAt)
	if p := s.PlacedSince(2, later); len(p) != 1 || p[0].CreatedAt != later {
		t.Errorf("placed on 2 since %d = %v", later, p)
	}
	if p := s.PlacedSince(2, later+1); p != nil {
		t.Errorf("placed on 2 since %d = %v, want none", later+1, p)
	}
	if s.PlacedSince(4, 0) != nil || s.Load(2) != 2 {
		t.Errorf("placed on 4 = %v, load of 2 = %d", s.PlacedSince(4, 0), s.Load(2))
	}
	if _, ok := s.Resolve("acme", "dying"); ok {
		t.Error("a deleting journal resolves")
	}
	if !s.Gone(idOld) || !s.Gone(journal.ID{Tenant: 30}) || s.Gone(idLive) {
		t.Error("tombstones wrong")
	}
	if _, ok := s.Outcome(nil); ok {
		t.Error("an empty request id has an outcome")
	}
	if New().At() != journal.FirstSeq {
		t.Errorf("a fresh registry is at %d", New().At())
	}
}
