package storetest

// The tests of RunRegistry (see registry.go): each arranges registrations,
// acts with Apply or Format, and checks Boot against the model.

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/storage"
)

func testRegFreshBoot(t *testing.T, s storage.RegistryStore) {
	b := regReboot(t, s)
	if b.Marker != nil || len(b.Registries) != 0 {
		t.Fatalf("fresh store boots with marker %v, registries %v", b.Marker, b.Registries)
	}
	err := s.Apply([]matchmaker.WriteOp{Register(JournalID, 1, 1, majority3, false)})
	if !errors.Is(err, storage.ErrRegistryUnformatted) {
		t.Fatalf("apply on an unformatted store: %v, want ErrRegistryUnformatted", err)
	}
	if b := regReboot(t, s); b.Marker != nil || len(b.Registries) != 0 {
		t.Fatalf("a refused apply left marker %v, registries %v", b.Marker, b.Registries)
	}
}

func testRegFormatOnce(t *testing.T, s storage.RegistryStore) {
	for _, bad := range []storage.RegistryMarker{
		{Node: 0, Matchmakers: []paxos.NodeID{1}},
		{Node: 1},
		{Node: 1, Matchmakers: []paxos.NodeID{2, 1}},
		{Node: 1, Matchmakers: []paxos.NodeID{1, 1}},
		{Node: 1, Matchmakers: []paxos.NodeID{0, 1}},
		// A node outside the founding set is a matchmaker added later
		// (it boots fresh): not a bad marker.
	} {
		if err := s.Format(bad); !errors.Is(err, storage.ErrBadMarker) {
			t.Fatalf("format %s: %v, want ErrBadMarker", bad, err)
		}
	}
	regFormatted(t, s)
	b := regReboot(t, s)
	if b.Marker == nil || !b.Marker.Equal(TestRegistryMarker()) {
		t.Fatalf("marker %v, want %s", b.Marker, TestRegistryMarker())
	}
	other := storage.RegistryMarker{Node: 4, Matchmakers: []paxos.NodeID{4}}
	for _, m := range []storage.RegistryMarker{TestRegistryMarker(), other} {
		if err := s.Format(m); !errors.Is(err, storage.ErrFormatted) {
			t.Fatalf("second format %s: %v, want ErrFormatted", m, err)
		}
	}
	if b := regReboot(t, s); !b.Marker.Equal(TestRegistryMarker()) {
		t.Fatalf("a refused format changed the marker to %s", b.Marker)
	}
}

// testRegBootDecisions walks every row of storage.CheckRegistryBoot's table
// with what the store's Boot reports, and checks each input combination
// matches exactly one row.
func testRegBootDecisions(t *testing.T, s storage.RegistryStore) {
	want := TestRegistryMarker()
	other := storage.RegistryMarker{Node: 5, Matchmakers: []paxos.NodeID{4, 5, 7}}
	type row struct {
		claim     storage.Claim
		formatted bool
		config    storage.RegistryMarker
		decision  storage.BootDecision
		err       error
	}
	rows := []row{
		{storage.ClaimFirstBoot, false, want, storage.DecideFormat, nil},
		{storage.ClaimFirstBoot, true, want, 0, storage.ErrFormatted},
		{storage.ClaimFirstBoot, true, other, 0, storage.ErrFormatted},
		{storage.ClaimExistingMember, false, want, 0, storage.ErrAmnesia},
		{storage.ClaimExistingMember, true, want, storage.DecideBoot, nil},
		{storage.ClaimExistingMember, true, other, 0, storage.ErrConfigMismatch},
	}
	for _, formatted := range []bool{false, true} {
		if formatted {
			regFormatted(t, s)
		}
		marker := regReboot(t, s).Marker
		if (marker != nil) != formatted {
			t.Fatalf("formatted %t, boot marker %v", formatted, marker)
		}
		for _, r := range rows {
			if r.formatted != formatted {
				continue
			}
			d, err := storage.CheckRegistryBoot(r.claim, marker, r.config)
			if d != r.decision || (r.err == nil) != (err == nil) || (r.err != nil && !errors.Is(err, r.err)) {
				t.Fatalf("claim %d formatted %t config %s: %v %v, want %v %v", r.claim, formatted, r.config, d, err, r.decision, r.err)
			}
		}
	}
	if _, err := storage.CheckRegistryBoot(0, nil, want); err == nil {
		t.Fatal("an unknown claim was accepted")
	}
}

func testRegRegister(t *testing.T, s storage.RegistryStore) {
	regFormatted(t, s)
	m := newRegModel()
	j, k := RegistryJournals[0], RegistryJournals[1]
	regApply(t, s, m, Register(j, 1, 1, majority3, false))
	regApply(t, s, m, Register(j, 2, 2, flexible4, true), Register(j, 3, 1, grid4, false), Register(k, 5, 3, grid4, true))
	b := regCheck(t, s, m)
	got := b.Registries[j].Regs
	if len(got) != 3 || !paxos.SameSystem(got[1].Acceptors, flexible4) || !paxos.SameSystem(got[2].Acceptors, grid4) {
		t.Fatalf("configurations did not round-trip: %v", got)
	}
	// A later registration builds on what the store holds after a reboot.
	regApply(t, s, m, Register(j, 3, 2, majority3, false))
	regCheck(t, s, m)
}

func testRegWatermark(t *testing.T, s storage.RegistryStore) {
	regFormatted(t, s)
	m := newRegModel()
	j := JournalID
	regApply(t, s, m, Register(j, 1, 1, majority3, false), Register(j, 2, 1, majority3, false),
		Register(j, 2, 3, flexible4, false), Register(j, 4, 1, grid4, false))
	regApply(t, s, m, Watermark(j, 2, 3))
	b := regCheck(t, s, m)
	if r := b.Registries[j]; r.Watermark != ballot(2, 3) || len(r.Regs) != 2 || r.Regs[0].Ballot != ballot(2, 3) {
		t.Fatalf("after watermark 2.3: %+v", r)
	}
	// A lower or equal watermark changes nothing.
	regApply(t, s, m, Watermark(j, 1, 1), Watermark(j, 2, 3))
	regCheck(t, s, m)
	// A watermark above every registration empties the list, and a journal
	// that only ever saw a watermark holds it.
	regApply(t, s, m, Watermark(j, 9, 1), Watermark(RegistryJournals[2], 3, 3))
	regApply(t, s, m, Register(j, 9, 1, majority3, false))
	regCheck(t, s, m)
}

// A retraction deletes exactly one registration below the highest, in
// the batch of the registration above it, and survives a reboot; the
// watermark and the effective configuration do not move.
func testRegRetract(t *testing.T, s storage.RegistryStore) {
	regFormatted(t, s)
	m := newRegModel()
	j := JournalID
	regApply(t, s, m, Register(j, 1, 1, majority3, false), Register(j, 2, 1, flexible4, true),
		Register(j, 3, 1, grid4, false))
	regApply(t, s, m, Register(j, 4, 1, majority3, false), Retract(j, 1, 1), Retract(j, 3, 1))
	b := regCheck(t, s, m)
	r := b.Registries[j]
	if len(r.Regs) != 2 || r.Regs[0].Ballot != ballot(2, 1) || r.Regs[1].Ballot != ballot(4, 1) || r.Effective.Ballot != ballot(2, 1) {
		t.Fatalf("after retracting 1.1 and 3.1: %+v", r)
	}
	// Retracting what is not there changes nothing; retracting the
	// highest registration keeps its ballot as the highest, across a
	// reboot: nothing registers at it again.
	regApply(t, s, m, Register(j, 5, 2, majority3, false), Retract(j, 3, 1))
	regCheck(t, s, m)
	regApply(t, s, m, Retract(j, 5, 2))
	b = regCheck(t, s, m)
	if r := b.Registries[j]; r.Retracted != ballot(5, 2) || len(r.Regs) != 2 {
		t.Fatalf("after retracting the highest 5.2: %+v", r)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatalf("a registration at the retracted highest 5.2: no panic")
			}
		}()
		_ = s.Apply([]matchmaker.WriteOp{Register(j, 5, 2, majority3, false)})
	}()
	regApply(t, s, m, Register(j, 6, 1, majority3, false))
	regCheck(t, s, m)
}

func testRegEffective(t *testing.T, s storage.RegistryStore) {
	regFormatted(t, s)
	m := newRegModel()
	j := JournalID
	regApply(t, s, m, Register(j, 2, 1, flexible4, true), Register(j, 3, 1, majority3, false))
	regApply(t, s, m, Watermark(j, 4, 1))
	b := regCheck(t, s, m)
	r := b.Registries[j]
	if len(r.Regs) != 0 || r.Effective.Ballot != ballot(2, 1) || !r.Effective.Reconfiguration ||
		!paxos.SameSystem(r.Effective.Acceptors, flexible4) {
		t.Fatalf("after collection: %+v", r)
	}
	// A newer reconfiguration replaces it; a belief does not.
	regApply(t, s, m, Register(j, 5, 1, grid4, true), Register(j, 6, 1, majority3, false))
	regApply(t, s, m, Watermark(j, 7, 1))
	if r := regCheck(t, s, m).Registries[j]; r.Effective.Ballot != ballot(5, 1) {
		t.Fatalf("effective %s, want 5.1", r.Effective)
	}
}

func testRegOrder(t *testing.T, s storage.RegistryStore) {
	regFormatted(t, s)
	m := newRegModel()
	j := JournalID
	regApply(t, s, m,
		Register(j, 1, 1, majority3, false), Register(j, 2, 1, grid4, true),
		Watermark(j, 2, 1), // deletes 1.1
		Register(j, 3, 1, flexible4, false),
		Watermark(j, 3, 1), // deletes 2.1, keeps 3.1 and the effective 2.1
		Register(j, 4, 1, majority3, true),
	)
	b := regCheck(t, s, m)
	if r := b.Registries[j]; len(r.Regs) != 2 || r.Effective.Ballot != ballot(4, 1) {
		t.Fatalf("batch applied out of order: %+v", r)
	}
}

func testRegIsolation(t *testing.T, s storage.RegistryStore) {
	regFormatted(t, s)
	m := newRegModel()
	for i, j := range RegistryJournals {
		regApply(t, s, m, Register(j, 1, 1, configs[i%len(configs)], i%2 == 0), Register(j, 2, 1, majority3, false))
	}
	regApply(t, s, m, Watermark(JournalID, 9, 9))
	b := regCheck(t, s, m)
	for _, j := range RegistryJournals[1:] {
		if len(b.Registries[j].Regs) != 2 {
			t.Fatalf("journal %s lost registrations to another's watermark: %+v", j, b.Registries[j])
		}
	}
}

// testRegRegressions: an op the matchmaker never emits is a programmer
// error; the store panics and writes nothing.
func testRegRegressions(t *testing.T, s storage.RegistryStore) {
	regFormatted(t, s)
	m := newRegModel()
	j := JournalID
	regApply(t, s, m, Register(j, 3, 1, majority3, false), Watermark(j, 2, 1))
	for name, op := range map[string]matchmaker.WriteOp{
		"registration at the highest ballot": Register(j, 3, 1, grid4, false),
		"registration below the highest":     Register(j, 2, 5, majority3, false),
		"registration without acceptors":     Register(j, 4, 1, quorum.System{}, false),
		"zero ballot":                        Register(RegistryJournals[1], 0, 0, majority3, false),
		"zero watermark":                     Watermark(j, 0, 0),
		"unset journal":                      Register(journal.ID{}, 5, 1, majority3, false),
		"retraction below the watermark":     Retract(j, 1, 1),
		"retraction above the highest":       Retract(j, 9, 1),
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatalf("%s: no panic", name)
				}
			}()
			_ = s.Apply([]matchmaker.WriteOp{Register(j, 8, 1, majority3, false), op})
		}()
	}
	regCheck(t, s, m)
}

// testRegModel applies a long seeded sequence of batches over the suite's
// journals and compares every reboot with the model.
func testRegModel(t *testing.T, s storage.RegistryStore) {
	regFormatted(t, s)
	m := newRegModel()
	rng := rand.New(rand.NewPCG(7, 42))
	highest := map[journal.ID]paxos.Ballot{}
	for step := range 120 {
		var ops []matchmaker.WriteOp
		for range 1 + rng.IntN(4) {
			j := RegistryJournals[rng.IntN(len(RegistryJournals))]
			if rng.IntN(4) == 0 {
				ops = append(ops, Watermark(j, uint64(rng.IntN(int(highest[j].Round)+3)), paxos.NodeID(1+rng.IntN(3))))
				continue
			}
			r := m.registry(j)
			next := ballot(max(highest[j].Round, r.Watermark.Round)+1+uint64(rng.IntN(2)), paxos.NodeID(1+rng.IntN(3)))
			highest[j] = next
			ops = append(ops, Register(j, next.Round, next.Node, configs[rng.IntN(len(configs))], rng.IntN(3) == 0))
		}
		regApply(t, s, m, ops...)
		if step%10 == 9 {
			regCheck(t, s, m)
		}
	}
	regCheck(t, s, m)
}

func testRegFailedSync(t *testing.T, s storage.RegistryStore) {
	f, faults := s.(RegistryFaulter)
	_, crashes := s.(RegistryCrasher)
	if !faults || !crashes {
		t.Skip("the store cannot fail a sync and crash")
	}
	regFormatted(t, s)
	m := newRegModel()
	j := JournalID
	regApply(t, s, m, Register(j, 1, 1, majority3, false))

	f.FailNext()
	lost := Register(j, 2, 1, grid4, true)
	err := s.Apply([]matchmaker.WriteOp{lost})

	var ioe *storage.IOError
	if !errors.As(err, &ioe) || ioe.Outcome != storage.OutcomeUnknown {
		t.Fatalf("apply with a failed sync: %v, want an IOError of unknown outcome", err)
	}
	if err := s.Apply([]matchmaker.WriteOp{Register(j, 3, 1, majority3, false)}); !errors.Is(err, storage.ErrFailed) {
		t.Fatalf("apply after a failed sync: %v, want ErrFailed", err)
	}
	// After a restart the batch is there whole or not at all.
	b := regReboot(t, s)
	if regs := b.Registries[j].Regs; len(regs) == 2 {
		m.apply(lost)
	}
	regCheck(t, s, m)
	regApply(t, s, m, Register(j, 4, 1, flexible4, false))
	regCheck(t, s, m)
}
