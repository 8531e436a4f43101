package proxymodel

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

// TestProxyModel sweeps the model: PROXY_MODEL_SEEDS seeds (300) of
// PROXY_MODEL_STEPS chaos steps (1,000) each, from PROXY_MODEL_FROM (1),
// then requires every path of the reach table to have fired.
// PROXY_MODEL_SEED replays one seed and prints its trace.
func TestProxyModel(t *testing.T) {
	steps := envInt("PROXY_MODEL_STEPS", 1000)
	if s := os.Getenv("PROXY_MODEL_SEED"); s != "" {
		seed, _ := strconv.ParseUint(s, 10, 64)
		w := New(seed, true)
		err := w.Run(steps)
		t.Log("\n" + strings.Join(w.Trace(), "\n"))
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	seeds := envInt("PROXY_MODEL_SEEDS", 300)
	from := uint64(envInt("PROXY_MODEL_FROM", 1))
	total := Reach{}
	for seed := from; seed < from+uint64(seeds); seed++ {
		w := New(seed, false)
		if err := w.Run(steps); err != nil {
			t.Fatalf("%v\n  replay: PROXY_MODEL_SEED=%d PROXY_MODEL_STEPS=%d go test ./core/proxymodel -run TestProxyModel -v", err, seed, steps)
		}
		for k, v := range w.Reach() {
			total[k] += v
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "reach over %d seeds × %d steps:\n", seeds, steps)
	for _, p := range Paths {
		fmt.Fprintf(&b, "  %-56s %d\n", p, total[p])
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
