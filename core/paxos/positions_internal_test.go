package paxos

// This file checks the compact positions index against a naive model that
// keeps, for every applied write, its count and the full state before it
// (what the index stored before it was made compact): over random folds of
// writes, SetLeaders and truncations, find, end, covering and before agree
// with the model at every step, and after every dropBelow.

import (
	"math/rand/v2"
	"testing"

	"github.com/parosdb/paros/core/journal"
)

type naivePos struct {
	seq    journal.Seq
	count  uint64
	slot   Slot
	before journal.State
}

func TestPositionIndexMatchesTheNaiveModel(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		st := journal.Initial()
		idx := newPositionIndex(0, st)
		var model []naivePos
		floor := Slot(1)
		for s := Slot(1); s <= 300; s++ {
			before := st
			switch r := rng.IntN(10); {
			case r < 7: // a write of 1–4 records at the tail
				n := uint64(1 + rng.IntN(4))
				st, _ = journal.Restore(st.Leader, st.Term(), st.NextSeq+journal.Seq(n), st.FirstSeq)
				idx.add(before.NextSeq, s)
				model = append(model, naivePos{seq: before.NextSeq, count: n, slot: s, before: before})
			case r < 8: // a SetLeader
				st, _ = journal.Restore(journal.LeaderUUID{Hi: seed, Lo: uint64(s)}, st.Term()+1, st.NextSeq, st.FirstSeq)
			case r < 9 && st.NextSeq > st.FirstSeq: // a truncation, and the cut it makes
				up := st.FirstSeq + journal.Seq(rng.IntN(int(st.NextSeq-st.FirstSeq)+1))
				st, _ = journal.Restore(st.Leader, st.Term(), st.NextSeq, up)
				idx.noteState(s, st)
				cut := s + 1
				for _, p := range model {
					if p.seq+journal.Seq(p.count) > up {
						cut = p.slot
						break
					}
				}
				if cut > floor {
					floor = cut
					idx.dropBelow(floor)
					k := 0
					for k < len(model) && model[k].slot < floor {
						k++
					}
					model = model[k:]
				}
				continue
			}
			idx.noteState(s, st)
			if idx.len() != len(model) {
				t.Fatalf("seed %d slot %d: %d entries, model %d", seed, s, idx.len(), len(model))
			}
			for i, p := range model {
				e := idx.entries[i]
				if e.seq != p.seq || e.slot != p.slot || idx.end(i, st.NextSeq) != p.seq+journal.Seq(p.count) {
					t.Fatalf("seed %d: entry %d = %+v end %d, model %+v", seed, i, e, idx.end(i, st.NextSeq), p)
				}
				if got := idx.before(i); got != p.before {
					t.Fatalf("seed %d: before entry %d = %s, model %s", seed, i, got, p.before)
				}
				if idx.find(p.seq) != i || (p.count > 1 && idx.find(p.seq+1) != -1) {
					t.Fatalf("seed %d: find(%d) = %d, want %d", seed, p.seq, idx.find(p.seq), i)
				}
				if idx.covering(p.seq+journal.Seq(p.count)-1, st.NextSeq) != i {
					t.Fatalf("seed %d: covering the last record of entry %d", seed, i)
				}
			}
		}
	}
}
