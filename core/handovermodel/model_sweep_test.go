package handovermodel

import (
	"fmt"
	"os"
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

// TestHandoverModel sweeps the model: HANDOVER_MODEL_SEEDS seeds (400) of
// HANDOVER_MODEL_STEPS chaos steps (700) each, from HANDOVER_MODEL_FROM
// (1), then requires every path of the reach table to have fired.
// HANDOVER_MODEL_SEED replays one seed and prints its trace.
func TestHandoverModel(t *testing.T) {
	steps := envInt("HANDOVER_MODEL_STEPS", 700)
	if s := os.Getenv("HANDOVER_MODEL_SEED"); s != "" {
		seed, _ := strconv.ParseUint(s, 10, 64)
		w := New(seed, true)
		err := w.Run(steps)
		t.Log("\n" + strings.Join(w.Trace(), "\n"))
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	seeds := envInt("HANDOVER_MODEL_SEEDS", 400)
	from := uint64(envInt("HANDOVER_MODEL_FROM", 1))
	total := Reach{}
	for seed := from; seed < from+uint64(seeds); seed++ {
		w := New(seed, false)
		if err := w.Run(steps); err != nil {
			t.Fatalf("%v\n  replay: HANDOVER_MODEL_SEED=%d HANDOVER_MODEL_STEPS=%d go test ./core/handovermodel -run TestHandoverModel -v", err, seed, steps)
		}
		for k, v := range w.Reach() {
			total[k] += v
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "reach over %d seeds × %d steps:\n", seeds, steps)
	for _, p := range Paths {
		fmt.Fprintf(&b, "  %-72s %d\n", p, total[p])
	}
	t.Log(b.String())
	if seeds < 100 {
		return // a narrow replay need not fire every path
	}
	for _, p := range Paths {
		if total[p] == 0 {
			t.Errorf("path never fired: %s", p)
		}
	}
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
