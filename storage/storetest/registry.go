package storetest

// RunRegistry is the conformance suite of storage.RegistryStore, the store
// of a Matchmaker Paxos matchmaker (Whittaker et al., "Matchmaker Paxos",
// §3; DESIGN §4). memstore and pebblestore run it.
//
// Every test arranges registrations, acts with Apply (or Format), and checks
// what Boot reports against a naive model: the ops folded with
// matchmaker.Apply, the fold the matchmaker itself uses. It checks that a
// registration survives a re-boot with its configuration (members and
// quorum rule), that raising a watermark deletes the registrations below it
// and only in its own journal, that the effective configuration survives
// that collection, that ops apply in order within a batch, that an
// unformatted store boots with a nil marker and refuses writes, that a
// store is formatted once, and that a failed sync surfaces as an IOError of
// unknown outcome after which the store refuses writes until reopened.
//
// A store that implements RegistryCrasher is crashed (power loss, restart)
// before every re-boot, so each check also says the data was synced; one
// that implements RegistryFaulter as well runs the failed-sync test.

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/storage"
)

// RegistryCrasher is a registry store a test can crash: Crash loses what
// was not synced, reopens the store and clears an injected failure.
type RegistryCrasher interface{ Crash() }

// RegistryFaulter is a registry store whose next synced write fails as an
// fsync does (EIO).
type RegistryFaulter interface{ FailNext() }

// TestRegistryMarker is a valid registry marker.
func TestRegistryMarker() storage.RegistryMarker {
	return storage.RegistryMarker{Node: 5, Matchmakers: []paxos.NodeID{4, 5, 6}}
}

// RegistryJournals are the journals the suite registers in: adjacent ids,
// so a range delete that strays past its journal shows.
var RegistryJournals = []journal.ID{
	JournalID,
	{Tenant: JournalID.Tenant, Journal: JournalID.Journal - 1},
	{Tenant: JournalID.Tenant, Journal: JournalID.Journal + 1},
	{Tenant: JournalID.Tenant + 1, Journal: JournalID.Journal},
}

// RunRegistry runs the suite; newStore returns a fresh, empty store.
func RunRegistry(t *testing.T, newStore func(t *testing.T) storage.RegistryStore) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s storage.RegistryStore)
	}{
		{"FreshBootHasNoMarker", testRegFreshBoot},
		{"FormatOnce", testRegFormatOnce},
		{"BootDecisionTable", testRegBootDecisions},
		{"RegistrationsSurviveReboot", testRegRegister},
		{"WatermarkDeletesBelow", testRegWatermark},
		{"RetractDeletesOne", testRegRetract},
		{"EffectiveSurvivesCollection", testRegEffective},
		{"OrderWithinBatch", testRegOrder},
		{"JournalsAreIsolated", testRegIsolation},
		{"RegressionsPanic", testRegRegressions},
		{"MatchesTheModel", testRegModel},
		{"FailedSyncRefusesWrites", testRegFailedSync},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
}

// Config returns a quorum system over members (spec: majority unless
// given), panicking on a bad one.
func Config(spec quorum.Spec, members ...paxos.NodeID) quorum.System {
	s, err := quorum.New(members, spec)
	if err != nil {
		panic(err)
	}
	return s
}

var (
	majority3 = Config(quorum.Spec{Kind: quorum.KindMajority}, 1, 2, 3)
	flexible4 = Config(quorum.Spec{Kind: quorum.KindFlexible, Q1: 3, Q2: 2}, 1, 2, 3, 4)
	grid4     = Config(quorum.Spec{Kind: quorum.KindGrid, Rows: 2, Cols: 2}, 2, 3, 7, 9)
	configs   = []quorum.System{majority3, flexible4, grid4}
)

// Register is an OpRegister of j at (r, n) with acc.
func Register(j journal.ID, r uint64, n paxos.NodeID, acc quorum.System, reconf bool) matchmaker.WriteOp {
	return matchmaker.WriteOp{Kind: matchmaker.OpRegister, Journal: j,
		Reg: paxos.Registration{Ballot: ballot(r, n), Acceptors: acc, Reconfiguration: reconf}}
}

// Watermark is an OpWatermark of j at (r, n).
func Watermark(j journal.ID, r uint64, n paxos.NodeID) matchmaker.WriteOp {
	return matchmaker.WriteOp{Kind: matchmaker.OpWatermark, Journal: j, Watermark: ballot(r, n)}
}

// Retract is an OpRetract of j's registration at (r, n).
func Retract(j journal.ID, r uint64, n paxos.NodeID) matchmaker.WriteOp {
	return matchmaker.WriteOp{Kind: matchmaker.OpRetract, Journal: j, Reg: paxos.Registration{Ballot: ballot(r, n)}}
}

// RenderRegistries prints registries in journal order, one line each.
func RenderRegistries(regs map[journal.ID]matchmaker.Registry) string {
	ids := slices.SortedFunc(maps.Keys(regs), func(a, b journal.ID) int {
		if a.Tenant != b.Tenant {
			return cmp.Compare(a.Tenant, b.Tenant)
		}
		return cmp.Compare(a.Journal, b.Journal)
	})
	var b strings.Builder
	for _, id := range ids {
		r := regs[id]
		fmt.Fprintf(&b, "%s wm=%s eff=%s retracted=%s regs=[", id, r.Watermark, renderReg(r.Effective), r.Retracted)
		for i, reg := range r.Regs {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(renderReg(reg))
		}
		b.WriteString("]\n")
	}
	return b.String()
}

func renderReg(r paxos.Registration) string {
	if r.IsZero() && r.Acceptors.IsZero() {
		return "-"
	}
	return fmt.Sprintf("%s/%t/%v/%+v", r.Ballot, r.Reconfiguration, r.Acceptors.Members(), r.Acceptors.Spec())
}

// regModel folds ops as a matchmaker does.
type regModel map[journal.ID]*matchmaker.Registry

func (m regModel) apply(ops ...matchmaker.WriteOp) {
	var gen matchmaker.Generation
	for _, op := range ops {
		matchmaker.Apply(&gen, m, op)
	}
}

// render drops registries that hold nothing (a store keeps no trace of them).
func (m regModel) render() string {
	out := map[journal.ID]matchmaker.Registry{}
	for id, r := range m {
		if !r.Watermark.IsZero() || !r.Effective.IsZero() || !r.Retracted.IsZero() || len(r.Regs) > 0 {
			out[id] = r.Clone()
		}
	}
	return RenderRegistries(out)
}

// regReboot crashes s if it can, then boots it.
func regReboot(t *testing.T, s storage.RegistryStore) *storage.RegistryBoot {
	t.Helper()
	if c, ok := s.(RegistryCrasher); ok {
		c.Crash()
	}
	b, err := s.Boot()
	if err != nil {
		t.Fatalf("boot: %v", err)
	}
	return b
}

func regFormatted(t *testing.T, s storage.RegistryStore) storage.RegistryStore {
	t.Helper()
	if err := s.Format(TestRegistryMarker()); err != nil {
		t.Fatalf("format: %v", err)
	}
	return s
}

// regApply applies ops to s and to the model.
func regApply(t *testing.T, s storage.RegistryStore, m regModel, ops ...matchmaker.WriteOp) {
	t.Helper()
	if err := s.Apply(ops); err != nil {
		t.Fatalf("apply %v: %v", ops, err)
	}
	m.apply(ops...)
}

// regCheck reboots s and compares it with the model; the boot must also
// start a matchmaker.
func regCheck(t *testing.T, s storage.RegistryStore, m regModel) *storage.RegistryBoot {
	t.Helper()
	b := regReboot(t, s)
	if got, want := RenderRegistries(b.Registries), m.render(); got != want {
		t.Fatalf("boot holds\n%swant\n%s", got, want)
	}
	if _, err := matchmaker.New(TestRegistryMarker().Node, b.Generation, b.Registries); err != nil {
		t.Fatalf("a matchmaker refuses the boot: %v", err)
	}
	return b
}
