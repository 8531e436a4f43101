package handovermodel

import (
	"strings"
	"testing"

	"github.com/parosdb/paros/internal/modelsweep"
)

// TestHandoverModel sweeps the model: HANDOVER_MODEL_SEEDS seeds (400) of
// HANDOVER_MODEL_STEPS chaos steps (700) each, from HANDOVER_MODEL_FROM
// (1), then requires every path of the reach table to have fired.
// HANDOVER_MODEL_SEED replays one seed and prints its trace.
func TestHandoverModel(t *testing.T) {
	modelsweep.Sweep(t, modelsweep.Checker{Env: "HANDOVER_MODEL", Package: "core/handovermodel", Seeds: 400, Steps: 700,
		Paths: Paths, New: func(seed uint64, tracing bool) modelsweep.World {
			w := New(seed, tracing)
			return modelsweep.World{Run: w.Run, Reach: func() map[string]uint64 { return w.Reach() }, Trace: w.Trace}
		}})
}

// TestHandoverModelReplaysBitForBit: a seed is a pure function of its
// number (the trace of two runs is identical).
func TestHandoverModelReplaysBitForBit(t *testing.T) {
	for _, seed := range []uint64{3, 17} {
		a, b := New(seed, true), New(seed, true)
		_ = a.Run(300)
		_ = b.Run(300)
		if strings.Join(a.Trace(), "\n") != strings.Join(b.Trace(), "\n") {
			t.Fatalf("seed %d: two runs differ", seed)
		}
	}
}
