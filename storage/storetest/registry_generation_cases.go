package storetest

// The generation tests of RunRegistry (see registry.go): the handover ops
// (matchmaker.WriteOp.IsGeneration) change the generation state a store
// boots, and an activation replaces its registries. Each test checks Boot
// against the model, whose generation is folded with matchmaker.Apply too.

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage"
)

// MatchmakerSet is the matchmaker set of generation g.
func MatchmakerSet(g uint64, members ...paxos.NodeID) matchmaker.Set {
	return matchmaker.Set{Generation: g, Members: members}
}

// Stop is an OpStop of generation g.
func Stop(g uint64) matchmaker.WriteOp {
	return matchmaker.WriteOp{Kind: matchmaker.OpStop, Generation: g}
}

// Decree is an OpDecree: the acceptor promised promised and voted for v
// at vote (zero: no vote).
func Decree(promised, vote paxos.Ballot, v matchmaker.Set) matchmaker.WriteOp {
	return matchmaker.WriteOp{Kind: matchmaker.OpDecree, Decree: paxos.DecreeAcceptor[matchmaker.Set]{
		Promised: promised, Vote: paxos.DecreeVote[matchmaker.Set]{Ballot: vote, Value: v}}}
}

// Chosen is an OpChosen of successor s.
func Chosen(s matchmaker.Set) matchmaker.WriteOp {
	return matchmaker.WriteOp{Kind: matchmaker.OpChosen, Set: s}
}

// Bootstrap is an OpBootstrap of page page of pages of proposal b of s.
func Bootstrap(s matchmaker.Set, b paxos.Ballot, page, pages uint32, js ...matchmaker.JournalRegistry) matchmaker.WriteOp {
	return matchmaker.WriteOp{Kind: matchmaker.OpBootstrap, Set: s, Ballot: b, Page: page, Pages: pages, Journals: js}
}

// Activate is an OpActivate of s.
func Activate(s matchmaker.Set) matchmaker.WriteOp {
	return matchmaker.WriteOp{Kind: matchmaker.OpActivate, Set: s}
}

// RegistryOf is the registry journal ops on one journal fold to (a
// reconstruction a bootstrap page carries).
func RegistryOf(ops ...matchmaker.WriteOp) matchmaker.Registry {
	regs := map[journal.ID]*matchmaker.Registry{}
	var g matchmaker.Generation
	for _, op := range ops {
		matchmaker.Apply(&g, regs, op)
	}
	for _, r := range regs {
		return *r
	}
	return matchmaker.Registry{}
}

func jr(j journal.ID, r matchmaker.Registry) matchmaker.JournalRegistry {
	return matchmaker.JournalRegistry{Journal: j, Registry: r}
}

// testRegGenStopDecreeChosen: freezing, the decree acceptor and the chain
// link survive reboots, beside the registries they leave alone.
func testRegGenStopDecreeChosen(t *testing.T, s storage.RegistryStore) {
	regFormatted(t, s)
	m := newRegModel()
	j := JournalID
	regApply(t, s, m, Register(j, 1, 1, majority3, false))
	regApply(t, s, m, Stop(2)) // not its generation: nothing
	if b := regCheck(t, s, m); b.Generation.Phase() != matchmaker.PhaseActive {
		t.Fatalf("a stop of another generation froze %s", b.Generation.Set)
	}
	regApply(t, s, m, Stop(1))
	if b := regCheck(t, s, m); b.Generation.Phase() != matchmaker.PhaseStopped {
		t.Fatalf("after the stop: phase %s", b.Generation.Phase())
	}
	g2 := MatchmakerSet(2, 5, 6, 7)
	regApply(t, s, m, Decree(ballot(3, 4), paxos.Ballot{}, matchmaker.Set{}))
	regCheck(t, s, m)
	regApply(t, s, m, Decree(ballot(4, 6), ballot(4, 6), g2))
	if b := regCheck(t, s, m); !b.Generation.Decree.Vote.Value.Equal(g2) || b.Generation.Decree.Promised != ballot(4, 6) {
		t.Fatalf("decree after the vote: %+v", b.Generation.Decree)
	}
	regApply(t, s, m, Chosen(g2), Register(RegistryJournals[1], 2, 2, grid4, true))
	b := regCheck(t, s, m)
	if !b.Generation.Successor.Equal(g2) || !b.Generation.Newest().Equal(g2) || len(b.Registries) != 2 {
		t.Fatalf("after the chain link: %s, %d registries", RenderGeneration(b.Generation), len(b.Registries))
	}
}

// testRegGenBootstrap: bootstrap pages merge into the pending registries,
// each proposal's pages held are counted, and a page of a newer
// generation replaces the whole pending bootstrap; the registries of the
// active generation are untouched throughout.
func testRegGenBootstrap(t *testing.T, s storage.RegistryStore) {
	regFormatted(t, s)
	m := newRegModel()
	j0, j1, j2, j3 := RegistryJournals[0], RegistryJournals[1], RegistryJournals[2], RegistryJournals[3]
	regApply(t, s, m, Register(j0, 7, 1, majority3, false))
	g2 := MatchmakerSet(2, 4, 5, 7)
	r0 := RegistryOf(Register(j0, 1, 1, majority3, true), Register(j0, 2, 1, flexible4, false))
	r1 := RegistryOf(Register(j1, 3, 2, grid4, true), Watermark(j1, 3, 2))
	r2 := RegistryOf(Register(j2, 1, 3, majority3, false), Register(j2, 4, 3, majority3, false), Retract(j2, 4, 3))
	regApply(t, s, m, Bootstrap(g2, ballot(1, 4), 0, 2, jr(j0, r0), jr(j1, r1)))
	b := regCheck(t, s, m)
	if p := b.Generation.Pending; p.Generation != 2 || p.Complete(g2) || len(p.Regs) != 2 || b.Generation.Phase() != matchmaker.PhaseActive {
		t.Fatalf("after page 0 of 2:\n%s", RenderGeneration(b.Generation))
	}
	// The last page, and the first again (a resent page changes nothing).
	regApply(t, s, m, Bootstrap(g2, ballot(1, 4), 1, 2, jr(j2, r2)), Bootstrap(g2, ballot(1, 4), 0, 2, jr(j0, r0), jr(j1, r1)))
	if p := regCheck(t, s, m).Generation.Pending; !p.Complete(g2) || len(p.Regs) != 3 {
		t.Fatalf("after both pages: complete %t, %d journals", p.Complete(g2), len(p.Regs))
	}
	// A second proposal of the set merges its reconstruction: j0 gets a
	// higher watermark (dropping 1.1) and a registration above it.
	r0b := RegistryOf(Register(j0, 2, 1, flexible4, false), Register(j0, 5, 2, grid4, false), Watermark(j0, 2, 1))
	r3 := RegistryOf(Register(j3, 9, 9, flexible4, true))
	regApply(t, s, m, Bootstrap(g2, ballot(2, 7), 0, 1, jr(j0, r0b), jr(j3, r3)))
	b = regCheck(t, s, m)
	if p := b.Generation.Pending; len(p.Origins) != 2 || len(p.Regs) != 4 || p.Regs[j0].Watermark != ballot(2, 1) || len(p.Regs[j0].Regs) != 2 {
		t.Fatalf("after a second proposal:\n%s", RenderGeneration(b.Generation))
	}
	// A page of generation 3 replaces the pending bootstrap of 2.
	g3 := MatchmakerSet(3, 5, 6)
	regApply(t, s, m, Bootstrap(g3, ballot(1, 6), 0, 3, jr(j3, r3)))
	b = regCheck(t, s, m)
	if p := b.Generation.Pending; p.Generation != 3 || len(p.Origins) != 1 || len(p.Regs) != 1 {
		t.Fatalf("after a newer generation's page:\n%s", RenderGeneration(b.Generation))
	}
	if len(b.Registries) != 1 || len(b.Registries[j0].Regs) != 1 {
		t.Fatalf("bootstraps changed the active registries:\n%s", RenderRegistries(b.Registries))
	}
}

// testRegGenActivate: an activation makes the pending registries the
// registries (every other journal's are gone) and clears the pending
// state; ops after it, in its batch and later, build on what it made.
func testRegGenActivate(t *testing.T, s storage.RegistryStore) {
	regFormatted(t, s)
	m := newRegModel()
	j0, j1, j2, j3 := RegistryJournals[0], RegistryJournals[1], RegistryJournals[2], RegistryJournals[3]
	regApply(t, s, m, Register(j0, 5, 1, majority3, true), Register(j1, 8, 1, grid4, false), Watermark(j1, 6, 1))
	g2 := MatchmakerSet(2, 5, 6, 7)
	r1 := RegistryOf(Register(j1, 2, 1, flexible4, true), Register(j1, 3, 1, majority3, false))
	r2 := RegistryOf(Register(j2, 4, 2, grid4, false))
	regApply(t, s, m, Stop(1), Bootstrap(g2, ballot(1, 4), 0, 2, jr(j1, r1), jr(j2, r2)))
	regCheck(t, s, m)
	// The last page, the activation and ops on the activated registries in
	// one batch: j1 becomes the merged reconstruction (not the registry it
	// had, watermark 6.1), and j0, registered before the activation in the
	// batch, is gone.
	r3 := RegistryOf(Register(j3, 1, 3, majority3, false))
	r1b := RegistryOf(Register(j1, 3, 1, majority3, false), Register(j1, 4, 2, majority3, false))
	regApply(t, s, m, Register(j0, 9, 1, majority3, false), Bootstrap(g2, ballot(1, 4), 1, 2, jr(j1, r1b), jr(j3, r3)),
		Activate(g2), Register(j1, 4, 3, grid4, false), Watermark(j2, 4, 2))
	b := regCheck(t, s, m)
	if _, ok := b.Registries[j0]; ok || len(b.Registries) != 3 || len(b.Registries[j1].Regs) != 4 {
		t.Fatalf("after the activation:\n%s", RenderRegistries(b.Registries))
	}
	if g := b.Generation; !g.Set.Equal(g2) || g.Phase() != matchmaker.PhaseActive || g.Pending.Generation != 0 || len(g.Pending.Regs) != 0 {
		t.Fatalf("after the activation:\n%s", RenderGeneration(g))
	}
	// Later batches read the activated registries from the store: j0
	// registers from scratch, below the ballots it held before.
	regApply(t, s, m, Register(j0, 1, 1, flexible4, false), Register(j1, 5, 1, majority3, false))
	regCheck(t, s, m)
	// A bootstrap and its activation in one batch, nothing pending on disk;
	// a journal the store never held registers before the activation and
	// again, lower, after it, and one it holds (j1, at 5.1) registers
	// lower after it.
	g3 := MatchmakerSet(3, 4, 5)
	j4 := journal.ID{Tenant: JournalID.Tenant + 2, Journal: JournalID.Journal}
	regApply(t, s, m, Register(j4, 6, 1, majority3, false), Stop(2), Chosen(g3),
		Bootstrap(g3, ballot(1, 4), 0, 1, jr(j3, RegistryOf(Register(j3, 2, 2, grid4, true)))),
		Activate(g3), Register(j4, 2, 1, flexible4, false), Register(j1, 1, 2, grid4, false))
	if b := regCheck(t, s, m); len(b.Registries) != 3 || !b.Generation.Set.Equal(g3) {
		t.Fatalf("after the second activation:\n%s", renderRegBoot(b.Registries, b.Generation))
	}
}

// testRegGenFresh: a matchmaker outside the founding set boots fresh, holds
// a bootstrap inactive, and serves once it activates it; each boot passes
// Generation.Validate for it and starts a matchmaker.
func testRegGenFresh(t *testing.T, s storage.RegistryStore) {
	mk := storage.RegistryMarker{Node: 7, Matchmakers: TestRegistryMarker().Matchmakers}
	if err := s.Format(mk); err != nil {
		t.Fatalf("format: %v", err)
	}
	m := newRegModelOf(mk)
	if b := regCheck(t, s, m); b.Generation.Phase() != matchmaker.PhaseFresh {
		t.Fatalf("a matchmaker added later boots %s", b.Generation.Phase())
	}
	g2 := MatchmakerSet(2, 5, 6, 7)
	regApply(t, s, m, Bootstrap(g2, ballot(1, 4), 0, 1, jr(JournalID, RegistryOf(Register(JournalID, 3, 1, majority3, true)))))
	if b := regCheck(t, s, m); b.Generation.Phase() != matchmaker.PhaseInactive {
		t.Fatalf("holding a bootstrap: %s", b.Generation.Phase())
	}
	regApply(t, s, m, Activate(g2))
	regApply(t, s, m, Register(JournalID, 4, 2, grid4, false))
	if b := regCheck(t, s, m); b.Generation.Phase() != matchmaker.PhaseActive || len(b.Registries[JournalID].Regs) != 2 {
		t.Fatalf("after the activation: %s\n%s", b.Generation.Phase(), RenderRegistries(b.Registries))
	}
}

// testRegGenAtomic: a batch mixing registrations and generation ops is
// one write: a sync that fails leaves all of it or none after a restart.
func testRegGenAtomic(t *testing.T, s storage.RegistryStore) {
	regFormatted(t, s)
	m := newRegModel()
	j0, j1 := RegistryJournals[0], RegistryJournals[1]
	regApply(t, s, m, Register(j0, 1, 1, majority3, false))
	g2 := MatchmakerSet(2, 5, 6, 7)
	batches := [][]matchmaker.WriteOp{
		{Register(j0, 2, 1, grid4, true), Stop(1), Decree(ballot(2, 4), ballot(2, 4), g2),
			Bootstrap(g2, ballot(2, 4), 0, 1, jr(j1, RegistryOf(Register(j1, 3, 3, flexible4, false))))},
		{Register(j0, 3, 1, majority3, false), Chosen(g2), Activate(g2), Register(j1, 4, 1, majority3, false)},
	}
	f, faults := s.(RegistryFaulter)
	_, crashes := s.(RegistryCrasher)
	for _, ops := range batches {
		if !faults || !crashes {
			regApply(t, s, m, ops...)
			regCheck(t, s, m)
			continue
		}
		before := m.render()
		after := m.clone()
		after.apply(ops...)
		f.FailNext()
		var ioe *storage.IOError
		if err := s.Apply(ops); !errors.As(err, &ioe) {
			t.Fatalf("apply with a failed sync: %v, want an IOError", err)
		}
		b := regReboot(t, s)
		switch got := renderRegBoot(b.Registries, b.Generation); got {
		case after.render():
			m = after
		case before:
			regApply(t, s, m, ops...) // lost whole: write it again
		default:
			t.Fatalf("a failed batch left part of itself:\n%swant before\n%sor after\n%s", got, before, after.render())
		}
		regCheck(t, s, m)
	}
}

// testRegGenModel applies a long seeded sequence of batches mixing
// registry and generation ops the matchmaker could emit (handovers into
// ever newer generations, bootstraps of several proposals and pages,
// activations) and compares every reboot with the model.
func testRegGenModel(t *testing.T, s storage.RegistryStore) {
	regFormatted(t, s)
	m := newRegModel()
	rng := rand.New(rand.NewPCG(11, 5))
	activations := 0
	for step := range 200 {
		next := m.clone()
		var ops []matchmaker.WriteOp
		for range 1 + rng.IntN(4) {
			op := randomRegOp(rng, next)
			if op.Kind == matchmaker.OpActivate {
				activations++
			}
			next.apply(op)
			ops = append(ops, op)
		}
		regApply(t, s, m, ops...)
		if step%10 == 9 {
			regCheck(t, s, m)
		}
	}
	regCheck(t, s, m)
	if activations < 3 {
		t.Fatalf("the sequence activated %d bootstraps: it tests too little", activations)
	}
}

// genMembers are the members of each generation's set (by generation):
// every one names the suite's matchmaker, 5.
var genMembers = [][]paxos.NodeID{{4, 5, 6}, {5, 6, 7}, {3, 5}, {5}, {4, 5, 6, 7, 8}}

func genSet(g uint64) matchmaker.Set {
	return MatchmakerSet(g, slices.Clone(genMembers[g%uint64(len(genMembers))])...)
}

// randomRegOp is an op the matchmaker could emit in state m.
func randomRegOp(rng *rand.Rand, m *regModel) matchmaker.WriteOp {
	g := m.gen
	serving := !g.Set.IsZero() && g.Successor.IsZero()
	switch rng.IntN(12) {
	case 0:
		if !g.Set.IsZero() {
			return Stop(g.Set.Generation)
		}
	case 1:
		if serving {
			acc := g.Decree
			b := ballot(uint64(1+rng.IntN(6)), paxos.NodeID(4+rng.IntN(3)))
			if rng.IntN(2) == 0 {
				acc.Prepare(b)
			} else {
				acc.Accept(b, genSet(g.Set.Generation+1))
			}
			return Decree(acc.Promised, acc.Vote.Ballot, acc.Vote.Value)
		}
	case 2:
		if serving && rng.IntN(2) == 0 {
			return Chosen(genSet(g.Set.Generation + 1))
		}
	case 3, 4, 5:
		gen := max(g.Set.Generation+1, g.Pending.Generation)
		if rng.IntN(6) == 0 {
			gen++
		}
		b := ballot(uint64(1+rng.IntN(3)), 4)
		pages := uint32(1 + b.Round%3) // a proposal's pages never change
		var js []matchmaker.JournalRegistry
		for range rng.IntN(3) {
			j := RegistryJournals[rng.IntN(len(RegistryJournals))]
			js = append(js, jr(j, randomRegistry(rng, j)))
		}
		return Bootstrap(genSet(gen), b, uint32(rng.IntN(int(pages))), pages, js...)
	case 6:
		for _, o := range g.Pending.Origins {
			if o.Complete() && g.Set.Generation < o.Set.Generation {
				return Activate(o.Set)
			}
		}
	}
	j := RegistryJournals[rng.IntN(len(RegistryJournals))]
	h := storage.RegistryHeadOf(m.registry(j))
	if rng.IntN(4) == 0 {
		return Watermark(j, uint64(rng.IntN(int(h.Highest.Round)+3)), paxos.NodeID(1+rng.IntN(3)))
	}
	return Register(j, max(h.Highest.Round, h.Watermark.Round)+1+uint64(rng.IntN(2)), paxos.NodeID(1+rng.IntN(3)),
		configs[rng.IntN(len(configs))], rng.IntN(3) == 0)
}

// randomRegistry is a reconstruction of journal j as a stop quorum could
// answer it. A ballot's configuration is a function of the ballot, as in
// a cell (one ballot names one configuration), so merged reconstructions
// agree.
func randomRegistry(rng *rand.Rand, j journal.ID) matchmaker.Registry {
	var ops []matchmaker.WriteOp
	round := uint64(0)
	for range 1 + rng.IntN(3) {
		round += 1 + uint64(rng.IntN(3))
		n := paxos.NodeID(1 + rng.IntN(3))
		ops = append(ops, Register(j, round, n, configs[(round+uint64(n))%uint64(len(configs))], (round*uint64(n))%3 == 0))
	}
	if rng.IntN(3) == 0 {
		ops = append(ops, Watermark(j, uint64(1+rng.IntN(int(round))), 1))
	}
	return RegistryOf(ops...)
}
