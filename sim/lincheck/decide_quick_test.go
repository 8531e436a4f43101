package lincheck

// This file cross-checks Decide against porcupine's plain search (every
// ambiguous operation open to +∞, nothing left out) on the random small
// histories of bounds_quick_test.go: both checkers must give the same
// verdict on every history, Decide must never answer Unknown, and every
// Illegal verdict must name a set of operations that is itself illegal to
// porcupine.

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/parosdb/paros/core/journal"
)

func TestDecideAgreesWithPorcupine(t *testing.T) {
	g := &quickGen{r: rand.New(rand.NewPCG(24, 3100421))}
	for range 3 {
		g.pool = append(g.pool, journal.LeaderUUID{Hi: g.r.Uint64() | 1, Lo: g.r.Uint64()})
	}
	verdicts := map[Result]int{}
	n := quickHistories
	if testing.Short() {
		n = quickHistoriesShort
	}
	if v, err := strconv.Atoi(os.Getenv("LINCHECK_HISTORIES")); err == nil && v > 0 {
		n = v
	}
	for h := range n {
		ops, _ := g.history()
		want := unbounded(ops)
		got := Decide(journal.ModeSingle, ops)
		if got.Result != want {
			t.Fatalf("history %d: Decide %s, porcupine %s, for:\n%s", h, got.Describe(ops), want, describe(ops))
		}
		verdicts[want]++
		if got.Result != porcupine.Illegal {
			continue
		}
		sub := make([]Op, len(got.Ops))
		for k, i := range got.Ops {
			sub[k] = ops[i]
		}
		if r := unbounded(sub); r != porcupine.Illegal {
			t.Fatalf("history %d: the contradiction Decide names is %s to porcupine:\n%s", h, r, got.Describe(ops))
		}
	}
	if verdicts[porcupine.Ok] == 0 || verdicts[porcupine.Illegal] == 0 {
		t.Errorf("verdicts %v: want both", verdicts)
	}
	t.Logf("verdicts %v", verdicts)
}
