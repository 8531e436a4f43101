// Package modelsweep runs a sans-IO model checker over many seeds in
// go test: the proxy leaders' (core/proxymodel) and the matchmaker-set
// handover's (core/handovermodel). A checker is a seeded world that runs a
// number of chaos steps and reports the first violation, the paths it
// reached and, when asked, its trace; the sweep runs the seeds, prints the
// reach table, and requires every path to have fired.
package modelsweep

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// World is one seed's run of a model checker.
type World struct {
	Run   func(steps int) error
	Reach func() map[string]uint64
	Trace func() []string
}

// Checker names a model checker and how to build its worlds.
type Checker struct {
	// Env is the prefix of its environment knobs: Env_SEEDS, Env_STEPS,
	// Env_FROM, and Env_SEED to replay one seed with its trace.
	Env string
	// Package is its import path's tail, for the replay line.
	Package string
	// Seeds and Steps are the defaults of a go test run.
	Seeds, Steps int
	// Paths must each fire at least once over a sweep of 100 seeds or more.
	Paths []string
	New   func(seed uint64, tracing bool) World
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// Sweep runs the checker's seeds and requires every path of its reach
// table to have fired.
func Sweep(t *testing.T, c Checker) {
	t.Helper()
	steps := envInt(c.Env+"_STEPS", c.Steps)
	if s := os.Getenv(c.Env + "_SEED"); s != "" {
		seed, _ := strconv.ParseUint(s, 10, 64)
		w := c.New(seed, true)
		err := w.Run(steps)
		t.Log("\n" + strings.Join(w.Trace(), "\n"))
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	seeds := envInt(c.Env+"_SEEDS", c.Seeds)
	from := uint64(envInt(c.Env+"_FROM", 1))
	total := map[string]uint64{}
	for seed := from; seed < from+uint64(seeds); seed++ {
		w := c.New(seed, false)
		if err := w.Run(steps); err != nil {
			t.Fatalf("%v\n  replay: %s_SEED=%d %s_STEPS=%d go test ./%s -run %s -v", err, c.Env, seed, c.Env, steps, c.Package, t.Name())
		}
		for k, v := range w.Reach() {
			total[k] += v
		}
	}
	width := 0
	for _, p := range c.Paths {
		width = max(width, len(p))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "reach over %d seeds × %d steps:\n", seeds, steps)
	for _, p := range c.Paths {
		fmt.Fprintf(&b, "  %-*s %d\n", width, p, total[p])
	}
	t.Log(b.String())
	if seeds < 100 {
		return // a narrow replay need not fire every path
	}
	for _, p := range c.Paths {
		if total[p] == 0 {
			t.Errorf("path never fired: %s", p)
		}
	}
}
