// Command paros-sim runs the deterministic simulator.
//
//	paros-sim sweep --seeds N [--from S] [--workers W] [--crosscheck]
//	paros-sim replay SEED [--trace] [--crosscheck]
//
// sweep exits 1 on any violation, unfired gate or non-convergence, and ends
// with a table of faults, gates and linearizability results. replay runs one
// seed and prints its timeline.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"

	"github.com/schollz/progressbar/v3"

	"github.com/parosdb/paros/sim"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	switch os.Args[1] {
	case "sweep":
		os.Exit(sweep(os.Args[2:]))
	case "replay":
		os.Exit(replay(os.Args[2:]))
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: paros-sim sweep --seeds N [--from S] [--workers W]\n       paros-sim replay SEED [--trace] [--crosscheck]")
	os.Exit(2)
}

func sweep(args []string) int {
	fs := flag.NewFlagSet("sweep", flag.ExitOnError)
	seeds := fs.Int("seeds", 200, "number of seeds")
	from := fs.Uint64("from", 1, "first seed")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "worlds run in parallel")
	chaos := fs.Int64("chaos-ms", 4000, "chaos window (simulated ms)")
	tail := fs.Int64("tail-ms", 6000, "quiet tail (simulated ms)")
	nodes := fs.Int("nodes", 0, "force the node count of majority worlds (0: drawn)")
	cross := fs.Bool("crosscheck", false, "check every history with porcupine too (else only small ones) and fail a seed where it disagrees")
	_ = fs.Parse(args)
	var bar *progressbar.ProgressBar
	if isTTY() {
		bar = progressbar.NewOptions(*seeds, progressbar.OptionSetDescription("seeds"),
			progressbar.OptionShowCount(), progressbar.OptionSetWriter(os.Stderr), progressbar.OptionClearOnFinish())
	}
	sum := sim.Sweep(*from, *seeds, *workers, sim.Options{ChaosMs: *chaos, TailMs: *tail, Nodes: *nodes, CrossCheck: *cross}, func(done int, r sim.Result) {
		if bar != nil {
			_ = bar.Add(1)
		}
		if !r.OK() {
			if bar != nil {
				_ = bar.Clear()
			}
			fmt.Fprintln(os.Stderr, r.Describe())
		}
	})
	if bar != nil {
		_ = bar.Finish()
	}
	sum.WriteTable(os.Stdout)
	if !sum.OK() {
		for _, g := range sum.UnfiredGates() {
			fmt.Printf("UNFIRED gate: %s\n", g)
		}
		return 1
	}
	return 0
}

func replay(args []string) int {
	if len(args) < 1 {
		usage()
	}
	seed, err := strconv.ParseUint(args[0], 10, 64)
	if err != nil {
		usage()
	}
	fs := flag.NewFlagSet("replay", flag.ExitOnError)
	trace := fs.Bool("trace", false, "print the timeline")
	chaos := fs.Int64("chaos-ms", 4000, "chaos window (simulated ms)")
	tail := fs.Int64("tail-ms", 6000, "quiet tail (simulated ms)")
	cross := fs.Bool("crosscheck", false, "check every history with porcupine too")
	_ = fs.Parse(args[1:])
	r := sim.Run(seed, sim.Options{Trace: *trace, ChaosMs: *chaos, TailMs: *tail, CrossCheck: *cross})
	if *trace {
		fmt.Println(r.Trace)
	}
	fmt.Println(r.Describe())
	for _, v := range r.Violations {
		fmt.Println("  ", v)
	}
	fmt.Printf("trace hash %016x, %d events, lincheck %v\n", r.TraceHash, r.Counts.Events, r.Lincheck)
	if !r.OK() {
		return 1
	}
	return 0
}

func isTTY() bool {
	fi, err := os.Stderr.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
