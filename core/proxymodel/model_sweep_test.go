package proxymodel

import (
	"testing"

	"github.com/parosdb/paros/internal/modelsweep"
)

// TestProxyModel sweeps the model: PROXY_MODEL_SEEDS seeds (300) of
// PROXY_MODEL_STEPS chaos steps (1,000) each, from PROXY_MODEL_FROM (1),
// then requires every path of the reach table to have fired.
// PROXY_MODEL_SEED replays one seed and prints its trace.
func TestProxyModel(t *testing.T) {
	modelsweep.Sweep(t, modelsweep.Checker{Env: "PROXY_MODEL", Package: "core/proxymodel", Seeds: 300, Steps: 1000,
		Paths: Paths, New: func(seed uint64, tracing bool) modelsweep.World {
			w := New(seed, tracing)
			return modelsweep.World{Run: w.Run, Reach: func() map[string]uint64 { return w.Reach() }, Trace: w.Trace}
		}})
}
