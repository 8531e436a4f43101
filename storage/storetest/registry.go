package storetest

// RunRegistry is the conformance suite of storage.RegistryStore, the store
// of a Matchmaker Paxos matchmaker (Whittaker et al., "Matchmaker Paxos",
// §3). memstore and pebblestore run it.
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
// The model folds the generation ops too, and every boot's Generation is
// compared with it (RenderGeneration), checked with Generation.Validate and
// handed to matchmaker.New: a stop, a decree vote and a chain link
// survive reboots; bootstrap pages merge, with the pages held per
// proposal, and a newer generation's page replaces the pending bootstrap;
// an activation replaces every registry by the pending ones and clears
// the pending state, the ops after it building on what it made; a batch
// mixing registry and generation ops is whole or absent after a failed
// sync; and a long seeded sequence of handovers matches the model.
//
// A store that implements RegistryCrasher is crashed (power loss, restart)
// before every re-boot, so each check also says the data was synced; one
// that implements RegistryFaulter as well runs the failed-sync test.

import (
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
		{"GenerationStopDecreeChosen", testRegGenStopDecreeChosen},
		{"GenerationBootstrapPages", testRegGenBootstrap},
		{"GenerationActivationReplacesRegistries", testRegGenActivate},
		{"GenerationFreshMatchmaker", testRegGenFresh},
		{"GenerationBatchIsAtomic", testRegGenAtomic},
		{"GenerationMatchesTheModel", testRegGenModel},
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
	ids := slices.SortedFunc(maps.Keys(regs), journal.ID.Compare)
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

// regModel folds ops as a matchmaker does: the registries, and the
// generation state of matchmaker node (from the marker's, as a store
// boots it).
type regModel struct {
	node paxos.NodeID
	regs map[journal.ID]*matchmaker.Registry
	gen  matchmaker.Generation
}

func newRegModel() *regModel { return newRegModelOf(TestRegistryMarker()) }

func newRegModelOf(mk storage.RegistryMarker) *regModel {
	return &regModel{node: mk.Node, regs: map[journal.ID]*matchmaker.Registry{},
		gen: matchmaker.BootGeneration(mk.Node, mk.Matchmakers)}
}

func (m *regModel) apply(ops ...matchmaker.WriteOp) {
	for _, op := range ops {
		matchmaker.Apply(&m.gen, m.regs, op)
	}
}

func (m *regModel) clone() *regModel {
	c := &regModel{node: m.node, regs: make(map[journal.ID]*matchmaker.Registry, len(m.regs)), gen: m.gen.Clone()}
	for id, r := range m.regs {
		cr := r.Clone()
		c.regs[id] = &cr
	}
	return c
}

// registry is journal j's registry (zero: none).
func (m *regModel) registry(j journal.ID) matchmaker.Registry {
	if r := m.regs[j]; r != nil {
		return *r
	}
	return matchmaker.Registry{}
}

func (m *regModel) render() string {
	regs := map[journal.ID]matchmaker.Registry{}
	for id, r := range m.regs {
		regs[id] = *r
	}
	return renderRegBoot(regs, m.gen)
}

// renderRegBoot prints what a registry store boots: the registries, then
// the generation state.
func renderRegBoot(regs map[journal.ID]matchmaker.Registry, g matchmaker.Generation) string {
	return RenderRegistries(nonEmpty(regs)) + RenderGeneration(g)
}

// nonEmpty drops registries that hold nothing (a store keeps no trace of
// them).
func nonEmpty(regs map[journal.ID]matchmaker.Registry) map[journal.ID]matchmaker.Registry {
	out := map[journal.ID]matchmaker.Registry{}
	for id, r := range regs {
		if !r.Watermark.IsZero() || !r.Effective.IsZero() || !r.Retracted.IsZero() || len(r.Regs) > 0 {
			out[id] = r.Clone()
		}
	}
	return out
}

// RenderGeneration prints a generation state deterministically: its set,
// successor and decree, then the pending bootstrap's origins (held pages
// as a string of 0 and 1) and registries, in journal order. A pending
// registry that holds nothing is left out, as in RenderRegistries.
func RenderGeneration(g matchmaker.Generation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "generation set=%s stopped=%t successor=%s decree promised=%s vote=%s:%s\n",
		g.Set, g.Stopped, g.Successor, g.Decree.Promised, g.Decree.Vote.Ballot, g.Decree.Vote.Value)
	if g.Pending.Generation == 0 && len(g.Pending.Origins) == 0 && len(nonEmpty(g.Pending.Regs)) == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, "pending g%d\n", g.Pending.Generation)
	for _, o := range g.Pending.Origins {
		fmt.Fprintf(&b, "  origin %s %s pages=%d held=", o.Ballot, o.Set, o.Pages)
		for _, h := range o.Held {
			if h {
				b.WriteByte('1')
			} else {
				b.WriteByte('0')
			}
		}
		b.WriteByte('\n')
	}
	for _, line := range strings.SplitAfter(RenderRegistries(nonEmpty(g.Pending.Regs)), "\n") {
		if line != "" {
			b.WriteString("  " + line)
		}
	}
	return b.String()
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
func regApply(t *testing.T, s storage.RegistryStore, m *regModel, ops ...matchmaker.WriteOp) {
	t.Helper()
	if err := s.Apply(ops); err != nil {
		t.Fatalf("apply %v: %v", ops, err)
	}
	m.apply(ops...)
}

// regCheck reboots s and compares it with the model, registries and
// generation state; the generation must pass its invariants and the boot
// must start a matchmaker.
func regCheck(t *testing.T, s storage.RegistryStore, m *regModel) *storage.RegistryBoot {
	t.Helper()
	b := regReboot(t, s)
	if got, want := renderRegBoot(b.Registries, b.Generation), m.render(); got != want {
		t.Fatalf("boot holds\n%swant\n%s", got, want)
	}
	if err := b.Generation.Validate(m.node); err != nil {
		t.Fatalf("the booted generation breaks an invariant: %v", err)
	}
	if _, err := matchmaker.New(m.node, b.Generation, b.Registries); err != nil {
		t.Fatalf("a matchmaker refuses the boot: %v", err)
	}
	return b
}
