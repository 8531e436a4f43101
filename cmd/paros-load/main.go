// Command paros-load measures a local cell: it starts three machines in
// this process (internal/testcell: real Pebble stores in a temporary dir,
// gRPC on 127.0.0.1, production tunables unless --fast) and runs three
// phases, each with its own client.Writer built with the phase's options;
// each Writer claims the journal (taking it over from the previous phase's,
// which is closed first):
//
//  1. latency: one sequential client appends single records (--size bytes)
//     one at a time (WithWindow(1)) and reports p50/p99/max;
//  2. window: --window appends in flight (WithWindow(window)), coalesced by
//     the Writer into pipelined Writes (the default pipeline), for --seconds;
//  3. rpcs: --window single-record Write calls in flight at once
//     (WithoutCoalescing, WithWritesOut(window), at most
//     sansio.WritesInFlightMax), for --seconds; a Write that overtakes
//     another is refused and resent (the Writer's WriteStream keeps their
//     order, so normally none is), and the phase reports how many.
//
// After each phase it prints the Writer's counters (client.WriterStats):
// Writes, appends, sends (first attempts and resends), refusals (and how
// many came while another Write was out), ambiguous replies and unsent
// attempts.
//
// After each phase it reads every machine's storage metrics: synced
// commits (paros_storage_commit_seconds count) and journal batches per
// commit (paros_sync_batch_size), so a pathology such as one fsync per
// record shows up as commits ≈ records.
//
//	go run ./cmd/paros-load [--records 2000] [--seconds 5] [--window 64] [--size 256] [--fast]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/internal/testcell"
)

func main() {
	records := flag.Int("records", 2000, "appends in the latency phase")
	seconds := flag.Float64("seconds", 5, "duration of each throughput phase")
	window := flag.Int("window", 64, "appends in flight in the throughput phases")
	size := flag.Int("size", 256, "bytes per record")
	fast := flag.Bool("fast", false, "testcell.FastTunables (20 ms ticks, a 25-tick election base) instead of host.Production")
	flag.Parse()
	if *records < 1 || *window < 1 || *size < 1 || *seconds <= 0 {
		fmt.Fprintln(os.Stderr, "paros-load: --records, --window, --size and --seconds must be positive")
		os.Exit(2)
	}
	if err := run(*records, time.Duration(*seconds*float64(time.Second)), *window, *size, *fast); err != nil {
		fmt.Fprintln(os.Stderr, "paros-load:", err)
		os.Exit(1)
	}
}

func run(records int, phase time.Duration, window, size int, fast bool) error {
	dir, err := os.MkdirTemp("", "paros-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tun := host.Production()
	if fast {
		tun = testcell.FastTunables()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cell, err := testcell.Start(ctx, dir, testcell.Options{Tunables: tun})
	if err != nil {
		return err
	}
	defer cell.Close()
	id := cell.Journals[0]
	if _, err := cell.WaitLeader(ctx, id); err != nil {
		return err
	}
	conn, err := client.Dial(ctx, cell.Addrs(), cell.ClientOptions()...)
	if err != nil {
		return err
	}
	defer conn.Close()
	j := conn.Journal(id)
	rec := make([]byte, size)
	for i := range rec {
		rec[i] = byte('a' + i%26)
	}
	fmt.Printf("paros-load: 3 machines on 127.0.0.1, data in %s, tick %d ms, %d-byte records\n\n", dir, tun.TickMs, size)

	// Phase 1: sequential latency.
	if err := latency(ctx, cell, j, rec, records); err != nil {
		return err
	}

	// Phase 2: a window of appends, coalesced.
	err = throughput(ctx, cell, j, rec, phase, window, fmt.Sprintf("window    %d appends in flight, coalesced", window),
		client.WithWindow(window))
	if err != nil {
		return err
	}

	// Phase 3: a window of single-record Write calls.
	return throughput(ctx, cell, j, rec, phase, window, fmt.Sprintf("rpcs      %d single-record Writes in flight", window),
		client.WithWindow(window), client.WithWritesOut(window), client.WithoutCoalescing())
}

// claim returns a Writer of journal j built with opts that holds the
// journal: its Claim takes over from the previous phase's Writer, which
// was closed. The caller closes it.
func claim(ctx context.Context, j *client.Journal, opts ...client.WriterOption) (*client.Writer, error) {
	w := j.NewWriter(opts...)
	if err := w.Claim(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("claim: %w", err)
	}
	return w, nil
}

// latency appends rec as its own append records times, one at a time (a
// window of 1: every append waits for the previous one's verdict), and
// reports.
func latency(ctx context.Context, cell *testcell.Cell, j *client.Journal, rec []byte, records int) error {
	w, err := claim(ctx, j, client.WithWindow(1))
	if err != nil {
		return err
	}
	defer w.Close()
	before := storage(cell)
	lat := make([]time.Duration, 0, records)
	start := time.Now()
	for range records {
		t0 := time.Now()
		if _, err := w.Append(ctx, rec); err != nil {
			return err
		}
		lat = append(lat, time.Since(t0))
	}
	elapsed := time.Since(start)
	slices.Sort(lat)
	fmt.Printf("latency   %d sequential appends: p50 %v  p99 %v  max %v  (%.0f appends/s)\n",
		records, pct(lat, 50), pct(lat, 99), lat[len(lat)-1], float64(records)/elapsed.Seconds())
	report(before, storage(cell), w.Stats())
	return nil
}

// throughput claims journal j with a Writer built with opts (window is the
// window those options set), appends for d with the Writer's window full,
// and reports. Each append's latency runs from AppendAsync to the moment a
// watcher, waiting on the appends in position order, sees it done: exact
// when the Writes complete in order, an upper bound otherwise.
func throughput(ctx context.Context, cell *testcell.Cell, j *client.Journal, rec []byte, d time.Duration, window int,
	name string, opts ...client.WriterOption) error {
	w, err := claim(ctx, j, opts...)
	if err != nil {
		return err
	}
	defer w.Close()
	before := storage(cell)
	type sent struct {
		op *client.AppendOp
		at time.Time
	}
	// At most window appends are outstanding, so the watcher never holds
	// more than window of them back.
	ch := make(chan sent, window)
	lats := make(chan []time.Duration, 1)
	go func() {
		var lat []time.Duration
		for s := range ch {
			<-s.op.Done()
			lat = append(lat, time.Since(s.at))
		}
		lats <- lat
	}()
	start := time.Now()
	n := 0
	for time.Since(start) < d {
		t0 := time.Now()
		op, err := w.AppendAsync(ctx, rec)
		if err != nil {
			close(ch)
			return err
		}
		ch <- sent{op, t0}
		n++
	}
	close(ch)
	if err := w.Flush(ctx); err != nil {
		return err
	}
	elapsed := time.Since(start)
	lat := <-lats
	slices.Sort(lat)
	fmt.Printf("%s: %d appends in %v = %.0f appends/s; latency p50 %v  p99 %v\n",
		name, n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), pct(lat, 50), pct(lat, 99))
	report(before, storage(cell), w.Stats())
	return nil
}

func pct(sorted []time.Duration, p int) time.Duration {
	return sorted[min(len(sorted)-1, len(sorted)*p/100)].Round(time.Microsecond)
}

// store is one machine's storage counters.
type store struct {
	commits, syncs uint64  // storage commits, synced commits
	batches        float64 // journal batches over all commits
}

func storage(cell *testcell.Cell) []store {
	out := make([]store, len(cell.Nodes))
	for i, n := range cell.Nodes {
		mfs, err := n.Metrics.Registry.Gather()
		if err != nil {
			continue
		}
		for _, mf := range mfs {
			h := histogram(mf)
			switch mf.GetName() {
			case "paros_sync_batch_size":
				out[i].commits, out[i].batches = h.GetSampleCount(), h.GetSampleSum()
			case "paros_storage_commit_seconds":
				out[i].syncs = h.GetSampleCount()
			}
		}
	}
	return out
}

func histogram(mf *dto.MetricFamily) *dto.Histogram {
	if len(mf.GetMetric()) == 0 {
		return nil
	}
	return mf.GetMetric()[0].GetHistogram()
}

// report prints a phase's client counters (st: the phase's own Writer)
// and each machine's storage counters between before and after.
func report(before, after []store, st client.WriterStats) {
	appends := st.Appends
	fmt.Printf("          client: %d Writes carried %d appends; %d sends, %d refused and resent (%d while another Write was out), %d ambiguous, %d unsent\n",
		st.Writes, appends, st.Sends, st.Refused, st.RefusedWhileOut, st.Ambiguous, st.Unsent)
	for i := range after {
		commits := after[i].commits - before[i].commits
		syncs := after[i].syncs - before[i].syncs
		batches := after[i].batches - before[i].batches
		perCommit := 0.0
		if commits > 0 {
			perCommit = batches / float64(commits)
		}
		perSync := 0.0
		if syncs > 0 {
			perSync = float64(appends) / float64(syncs)
		}
		fmt.Printf("          machine %d: %d storage commits (%d synced), %.1f journal batches per commit, %.1f records per fsync\n",
			i+1, commits, syncs, perCommit, perSync)
	}
	fmt.Println()
}
