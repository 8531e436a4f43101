// This file checks the fold's properties over random entry streams: 200
// fixed seeds of 300 entries each, a mix of every entry kind drawn from
// small alphabets (so names, ids and machines collide), placements both
// chosen by Place and random (often invalid), repeats of earlier requests,
// entries without request id and entries of no kind. At every step:
//
//  1. two States folding the same entries have equal snapshots (so equal
//     checkpoint bytes: the encoding is a function of the snapshot);
//  2. a State restored from the snapshot at a random point and folding the
//     rest ends equal to the uninterrupted fold: a checkpoint equals the
//     prefix it replaces;
//  3. a request folds to one outcome: after its first decision its
//     recorded outcome never changes, and a repeat returns it and leaves
//     the state as it was;
//  4. no journal id and no tenant id is created twice;
//
// and, every tenth step, the state passes its own RestoreSnapshot
// validation (the invariants of doc.go) with loads that match the
// placements. The run must see every
// outcome kind, so a generator that stops reaching a rule fails the test.
package registry

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/parosdb/paros/core/journal"
)

const (
	propSeeds   = 200
	propEntries = 300
)

var (
	propTenantNames  = []string{"t0", "t1", "t2", "bad/name", ""}
	propJournalNames = []string{"j0", "j1", "j2", "j3", "0123456789abcdef"}
	propDomains      = []string{"a", "b", "c", ""}
)

// entryGen draws entries. It may look at the state, as a coordinator does.
type entryGen struct {
	r        *rand.Rand
	requests [][]byte
}

func (g *entryGen) pick(n int) int { return g.r.IntN(n) }

func (g *entryGen) request() []byte {
	switch {
	case g.pick(100) < 3:
		return nil
	case len(g.requests) > 0 && g.pick(100) < 25:
		return g.requests[g.pick(len(g.requests))]
	}
	r := fmt.Appendf(nil, "r%d", len(g.requests))
	g.requests = append(g.requests, r)
	return r
}

func (g *entryGen) placement(s *State) Placement {
	if g.pick(100) < 60 {
		if members, err := s.Place(1+g.pick(3), nil); err == nil {
			p := majority(members...)
			if g.pick(4) == 0 {
				p.WriterMode = WriterMulti
			}
			return p
		}
	}
	p := Placement{
		QuorumSystem: QuorumSystem(g.pick(4)),
		Phase1Quorum: uint32(g.pick(4)), Phase2Quorum: uint32(g.pick(4)),
		Rows: uint32(g.pick(3)), Cols: uint32(g.pick(3)),
		WriterMode: WriterMode(g.pick(4)),
	}
	for range g.pick(5) {
		p.Members = append(p.Members, uint64(g.pick(8)))
	}
	return p
}

func (g *entryGen) entry(s *State) Entry {
	tenant := propTenantNames[g.pick(len(propTenantNames))]
	if ts := s.Tenants(); len(ts) > 0 && g.pick(100) < 70 {
		tenant = ts[g.pick(len(ts))].Name // mostly a tenant that exists
	}
	name := propJournalNames[g.pick(len(propJournalNames))]
	switch k := g.pick(100); {
	case k < 10:
		return RegisterMachine(uint64(g.pick(7)), []string{"", "m:1", "m:2"}[g.pick(3)], propDomains[g.pick(len(propDomains))])
	case k < 13:
		return DrainMachine(uint64(g.pick(8)))
	case k < 25:
		return CreateTenant(g.request(), propTenantNames[g.pick(len(propTenantNames))], uint64(g.pick(7)))
	case k < 31:
		return DeleteTenant(g.request(), tenant)
	case k < 61:
		return CreateJournal(g.request(), tenant, name, uint64(g.pick(9)), g.placement(s))
	case k < 80:
		return DeleteJournal(g.request(), tenant, name)
	case k < 97:
		if d := s.Deleting(); len(d) > 0 && g.pick(100) < 90 {
			return JournalGone(d[g.pick(len(d))].ID)
		}
		return JournalGone(journal.ID{Tenant: uint64(g.pick(7)), Journal: uint64(g.pick(9))})
	}
	return Entry{Kind: EntryKind(8 + g.pick(3)*100)}
}

// checkInvariants fails t unless s passes its own restore validation,
// restores to itself, and its loads match its placements.
func checkInvariants(t *testing.T, s *State) {
	t.Helper()
	r := New()
	if err := r.RestoreSnapshot(s.At(), s.Snapshot()); err != nil {
		t.Fatalf("the fold reached a state its restore refuses: %v", err)
	}
	if !reflect.DeepEqual(r.Snapshot(), s.Snapshot()) {
		t.Fatal("a state does not restore to itself")
	}
	for node := uint64(0); node < 8; node++ {
		if s.Load(node) != len(s.PlacedSince(node, 0)) || r.Load(node) != s.Load(node) {
			t.Fatalf("load of %d = %d (restored %d), %d journals placed", node, s.Load(node), r.Load(node), len(s.PlacedSince(node, 0)))
		}
	}
}

func TestFoldProperties(t *testing.T) {
	seen := map[string]int{}
	for seed := range uint64(propSeeds) {
		g := &entryGen{r: rand.New(rand.NewPCG(seed, 0x5eed))}
		a, b := New(), New()
		restoreAt := map[int]bool{g.pick(propEntries): true, g.pick(propEntries): true, g.pick(propEntries): true}
		var resumed []*State
		first := map[string]Outcome{}
		createdJournals := map[journal.ID]bool{}
		createdTenants := map[uint64]bool{}
		for i := range propEntries {
			if restoreAt[i] {
				r := New()
				if err := r.RestoreSnapshot(a.At(), a.Snapshot()); err != nil {
					t.Fatalf("seed %d step %d: restore: %v", seed, i, err)
				}
				resumed = append(resumed, r)
			}
			e := g.entry(a)
			seq := a.At()
			f, repeat := first[string(e.Request)]
			repeat = repeat && len(e.Request) > 0
			var before Snapshot
			if repeat {
				before = a.Snapshot()
			}

			o := a.Fold(seq, e)
			ob := b.Fold(seq, e)
			for _, r := range resumed {
				r.Fold(seq, e)
			}

			seen[o.Kind]++
			where := fmt.Sprintf("seed %d step %d: %s %+v", seed, i, e.Kind, e)
			// 1. Two folds agree.
			if o != ob || !reflect.DeepEqual(a.Snapshot(), b.Snapshot()) {
				t.Fatalf("%s: two folds disagree: %+v vs %+v", where, o, ob)
			}
			// 3. One outcome per request.
			switch {
			case repeat:
				if o != f {
					t.Fatalf("%s: a repeat folded to %+v, first to %+v", where, o, f)
				}
				if !reflect.DeepEqual(a.Snapshot(), before) {
					t.Fatalf("%s: a repeat changed the state", where)
				}
			case len(e.Request) > 0:
				first[string(e.Request)] = o
				// 4. No id created twice.
				if o.Kind == OutcomeCreated && e.Kind == EntryCreateJournal {
					if createdJournals[o.Journal] {
						t.Fatalf("%s: journal %v created twice", where, o.Journal)
					}
					createdJournals[o.Journal] = true
				}
				if o.Kind == OutcomeCreated && e.Kind == EntryCreateTenant {
					if createdTenants[o.Journal.Tenant] {
						t.Fatalf("%s: tenant %d created twice", where, o.Journal.Tenant)
					}
					createdTenants[o.Journal.Tenant] = true
				}
			}
			if a.At() != seq+1 {
				t.Fatalf("%s: At = %d, want %d", where, a.At(), seq+1)
			}
			if i%10 == 9 {
				checkInvariants(t, a)
			}
		}
		// 2. A checkpoint equals the prefix it replaces.
		for _, r := range resumed {
			if !reflect.DeepEqual(r.Snapshot(), a.Snapshot()) || r.At() != a.At() {
				t.Fatalf("seed %d: a fold resumed from a snapshot ends elsewhere", seed)
			}
		}
		for req, f := range first {
			if o, ok := a.Outcome([]byte(req)); !ok || o != f {
				t.Fatalf("seed %d: request %q recorded %+v, first decided %+v", seed, req, o, f)
			}
		}
	}
	for _, k := range []string{"", OutcomeCreated, OutcomeDeleted, OutcomeNameTaken, OutcomeNameDeleting,
		OutcomeUnknownTenant, OutcomeUnknownJournal, OutcomeTenantNotEmpty, OutcomeBadName, OutcomeBadPlacement,
		OutcomeIDTaken, OutcomeBadRequest, OutcomeUnknownMachine} {
		if seen[k] == 0 {
			t.Errorf("the random streams never reached outcome %q", k)
		}
	}
	t.Logf("outcomes seen: %v", seen)
}
