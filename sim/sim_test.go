package sim

// These tests run the simulator as CI does: a smoke sweep of seeds that
// must all pass with every gate fired, and the determinism check — a sample
// of seeds run twice must give the same event-trace hash.
// SIM_SEEDS widens the sweep (SIM_FROM picks the first seed).

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func TestSweepSmoke(t *testing.T) {
	// 500 seeds: the rarest gates (a CTRL Noop over a lone damaged vote
	// needs a crashed node's only copy, damaged, to be in the next
	// election's quorum) fire a few times per thousand seeds.
	n := envInt("SIM_SEEDS", 500)
	from := uint64(envInt("SIM_FROM", 1))
	sum := Sweep(from, n, runtime.GOMAXPROCS(0), Options{}, nil)
	var b strings.Builder
	sum.WriteTable(&b)
	t.Log("\n" + b.String())
	for _, r := range sum.Failed {
		t.Errorf("%s\n  replay: go run ./cmd/paros-sim replay %d --trace", r.Describe(), r.Seed)
	}
	for _, g := range sum.UnfiredGates() {
		t.Errorf("gate never fired: %s", g)
	}
}

func TestSeedReplaysBitForBit(t *testing.T) {
	for _, seed := range []uint64{3, 17, 101, 4242} {
		a := Run(seed, Options{})
		b := Run(seed, Options{})
		if a.TraceHash != b.TraceHash || a.Counts != b.Counts {
			t.Fatalf("seed %d is not deterministic: trace hash %x vs %x", seed, a.TraceHash, b.TraceHash)
		}
	}
}
