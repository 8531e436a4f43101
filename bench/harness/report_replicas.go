package main

// The report's replica-tier section: paros without replicas against paros
// with two (W4, the read-heavy rows, and what the replicas cost the write
// path), and the goal for them. Only when the run has both.

import (
	"fmt"
	"strings"
)

// replicaTargetSlack is how far the write throughput with readers may
// fall when replicas are added: 10 %.
const replicaTargetSlack = 0.10

// replicaFigures are the derived figures of the replica tier: reads/s per
// added replica, and the write throughput with readers, with replicas ÷
// without.
type replicaFigures struct {
	reads0, reads2   float64
	writes0, writes2 float64
	perReplica       float64
	writeRatio       float64
	replicas         int
}

// replicaFiguresOf computes them (ok false: the run lacks one side).
func replicaFiguresOf(r *report) (replicaFigures, bool) {
	a, b := r.sys("paros"), r.sys("paros-replicas")
	if a == nil || b == nil || a.ReadHeavy == nil || b.ReadHeavy == nil ||
		a.ReadHeavy.WithReaders.WritesPerS == 0 || b.ReadHeavy.WithReaders.WritesPerS == 0 {
		return replicaFigures{}, false
	}
	f := replicaFigures{reads0: a.ReadHeavy.ReadsPerS, reads2: b.ReadHeavy.ReadsPerS,
		writes0: a.ReadHeavy.WithReaders.WritesPerS, writes2: b.ReadHeavy.WithReaders.WritesPerS, replicas: parosReplicas}
	f.perReplica = (f.reads2 - f.reads0) / float64(f.replicas)
	f.writeRatio = f.writes2 / f.writes0
	return f, true
}

// replicaTarget checks "adding replicas raises read capacity without
// lowering write throughput more than 10%" on the read-heavy rows.
func replicaTarget(r *report) (targetCheck, bool) {
	f, ok := replicaFiguresOf(r)
	if !ok {
		return targetCheck{}, false
	}
	return targetCheck{
		Target: "replicas: adding 2 raises read capacity without lowering write throughput (with readers) more than 10%",
		Value: fmt.Sprintf("reads %s → %s records/s (%s per added replica); writes with readers %s → %s /s = %.2f×",
			thousands(f.reads0), thousands(f.reads2), signed(f.perReplica), thousands(f.writes0), thousands(f.writes2), f.writeRatio),
		Met: f.reads2 > f.reads0 && f.writeRatio >= 1-replicaTargetSlack,
	}, true
}

// replicaSection writes the comparison, when the run has paros and paros
// with replicas.
func (r *report) replicaSection(w func(string, ...any)) {
	a, b := r.sys("paros"), r.sys("paros-replicas")
	if a == nil || b == nil {
		return
	}
	w("## Replica tier: paros with 0 and %d replicas\n\n", parosReplicas)
	w("paros (the headline system) against the same cell with %d replica machines (`paros serve --role replica`, named at cell init: they learn every journal from the leader's pushes, serve linearizable reads, never vote). ", parosReplicas)
	w("The writers' Client dials the three members only; every reader's Client dials the replicas and the members, and the library reads from a replica first. ")
	w("**Read-heavy**: on one journal, pre-filled to at least %d records, %d readers (a `client.Reader` each, on its own Client) scan from position 1 to the tail the scan began at, over and over, while one `client.Writer` keeps %d single-record appends in flight; then the same writer runs alone. Records read count when their page arrived in the measured window. ",
		readHeavyPrefill, readHeavyReaders, readHeavyInflight)
	w("Every process, the load generator's included, shares the machine's %d cores: a replica adds a process, not a core. Ratio = 2 replicas ÷ 0.\n\n", r.Host.CPUs)
	w("| workload | metric | paros (0 replicas) | paros (%d replicas) | ratio |\n|---|---|---:|---:|---:|\n", parosReplicas)
	rh := func(f func(*readHeavyResult) float64) func(*sysResult) float64 {
		return func(s *sysResult) float64 {
			if s.ReadHeavy == nil {
				return 0
			}
			return f(s.ReadHeavy)
		}
	}
	tail := func(f func(*tailResult) float64) func(*sysResult) float64 {
		return func(s *sysResult) float64 {
			if s.Tail == nil || s.Tail.Delivered == 0 {
				return 0
			}
			return f(s.Tail)
		}
	}
	ph := func(id string, f func(*loadResult) float64) func(*sysResult) float64 {
		return func(s *sysResult) float64 {
			if p := r.phase(s.Key, id); p != nil {
				return f(p)
			}
			return 0
		}
	}
	cores := func(id string) func(*sysResult) float64 {
		return func(s *sysResult) float64 { return s.CPUCores[id] }
	}
	replicaCores := func(id string) func(*sysResult) float64 {
		return func(s *sysResult) float64 { return s.ParosWriter[id].ReplicaCPUCores }
	}
	pct := func(v float64) string {
		if v == 0 {
			return "—"
		}
		return fmt.Sprintf("%.0f %%", 100*v)
	}
	readHeavy := fmt.Sprintf("read-heavy: %d scanners + writer (%d in flight)", readHeavyReaders, readHeavyInflight)
	rows := []struct {
		label, metric string
		get           func(*sysResult) float64
		format        func(float64) string
	}{
		{fmt.Sprintf("W4 tail: %d rec/s, %d readers", r.Params.W4Rate, r.Params.W4Readers), "delay p50 ms", tail(func(t *tailResult) float64 { return t.P50ms }), f1},
		{fmt.Sprintf("W4 tail: %d rec/s, %d readers", r.Params.W4Rate, r.Params.W4Readers), "delay p99 ms", tail(func(t *tailResult) float64 { return t.P99ms }), f1},
		{readHeavy, "records read/s (all readers)", rh(func(x *readHeavyResult) float64 { return x.ReadsPerS }), thousands},
		{readHeavy, "records per read call", rh(func(x *readHeavyResult) float64 { return perCall(x) }), f1},
		{readHeavy, "writer: writes/s", rh(func(x *readHeavyResult) float64 { return x.WithReaders.WritesPerS }), thousands},
		{readHeavy, "writer: p50 ms", rh(func(x *readHeavyResult) float64 { return x.WithReaders.P50ms }), f1},
		{readHeavy, "writer: p99 ms", rh(func(x *readHeavyResult) float64 { return x.WithReaders.P99ms }), f1},
		{"the same writer alone", "writes/s", rh(func(x *readHeavyResult) float64 { return x.Alone.WritesPerS }), thousands},
		{"the same writer alone", "p50 ms", rh(func(x *readHeavyResult) float64 { return x.Alone.P50ms }), f1},
		{readHeavy, "writes/s with readers ÷ alone", rh(func(x *readHeavyResult) float64 { return safeDiv(x.WithReaders.WritesPerS, x.Alone.WritesPerS) }), f1},
		{readHeavy, "Read calls answered by replicas", rh(replicaShare), pct},
		{readHeavy, "CPU cores: the 3 members", rh(func(x *readHeavyResult) float64 { return x.MembersCores }), f1},
		{readHeavy, "CPU cores: the replicas", rh(func(x *readHeavyResult) float64 { return x.ReplicasCores }), f1},
		{readHeavy, "CPU cores: the load generator", rh(func(x *readHeavyResult) float64 { return x.LoadGenCores }), f1},
		{"the same writer alone", "CPU cores: the 3 members", rh(func(x *readHeavyResult) float64 { return x.MembersCoresAlone }), f1},
		{"the same writer alone", "CPU cores: the replicas", rh(func(x *readHeavyResult) float64 { return x.ReplicasCoresAlone }), f1},
		{"the same writer alone", "CPU cores: the load generator", rh(func(x *readHeavyResult) float64 { return x.LoadGenCoresAlone }), f1},
		{"W1 1 sequential writer", "p50 ms", ph("w1", func(l *loadResult) float64 { return l.P50ms }), f1},
		{"W2 64 in flight", "writes/s", ph("w2-64", func(l *loadResult) float64 { return l.WritesPerS }), thousands},
		{"W2 1,000 in flight", "writes/s", ph("w2-1000", func(l *loadResult) float64 { return l.WritesPerS }), thousands},
		{"W2 1,000 in flight", "CPU cores: the 3 members", cores("w2-1000"), f1},
		{"W2 1,000 in flight", "CPU cores: the replicas", replicaCores("w2-1000"), f1},
		{"W3 64 × 256 B, 16 in flight", "records/s", ph("w3-16", func(l *loadResult) float64 { return l.RecsPerS }), thousands},
		{"W3 64 × 256 B, 16 in flight", "CPU cores: the 3 members", cores("w3-16"), f1},
		{"W3 64 × 256 B, 16 in flight", "CPU cores: the replicas", replicaCores("w3-16"), f1},
		{fmt.Sprintf("W5 kill -9 leader, %d in flight", r.Params.W5Inflight), "recovery ms", func(s *sysResult) float64 {
			if s.Failover == nil || s.Failover.RecoveryMs <= 0 {
				return 0
			}
			return s.Failover.RecoveryMs
		}, f1},
	}
	for _, rw := range rows {
		x, y := rw.get(a), rw.get(b)
		w("| %s | %s | %s | %s | %s |\n", rw.label, rw.metric, rw.format(x), rw.format(y), ratio(y, x))
	}
	w("\n")
	if f, ok := replicaFiguresOf(r); ok {
		w("- **Reads/s per added replica**: (%s − %s) ÷ %d = **%s records/s**.\n", thousands(f.reads2), thousands(f.reads0), f.replicas, signed(f.perReplica))
		w("- **Write throughput with readers, %d replicas ÷ 0**: %s ÷ %s = **%.2f×**.\n\n", f.replicas, thousands(f.writes2), thousands(f.writes0), f.writeRatio)
	}
	w("Where the read-heavy phase's reads went (from each process's `/metrics`, over the phase with readers, warm-up included): Read calls answered (`paros_call_seconds` of kind read), quorum reads served (`paros_quorum_reads`), and reads back from the store for read pages below the in-memory window (`paros_cold_reads` of purpose read_page; each reads up to 16 slots):\n\n")
	w("| system | process | Read calls | quorum reads served | cold page reads |\n|---|---|---:|---:|---:|\n")
	for _, s := range []*sysResult{a, b} {
		if s.ReadHeavy == nil {
			continue
		}
		for i, rc := range s.ReadHeavy.ReadsBy {
			name := "?"
			if i < len(s.ReadHeavy.Procs) {
				name = s.ReadHeavy.Procs[i]
			}
			w("| %s | %s | %s | %s | %s |\n", s.Title, name, count(rc.Calls), count(rc.Served), count(rc.Cold))
		}
	}
	w("\n| system | journal | records before | records read (window) | scans completed (window) | read errors | records of a wrong length | error |\n|---|---|---:|---:|---:|---:|---:|---|\n")
	for _, s := range []*sysResult{a, b} {
		if x := s.ReadHeavy; x != nil {
			errs := []string{}
			for _, e := range []string{x.Error, x.FirstReadError, x.WithReaders.FirstError, x.Alone.FirstError} {
				if e != "" {
					errs = append(errs, e)
				}
			}
			w("| %s | %s | %s | %s | %d | %d | %d | %s |\n", s.Title, x.Journal, thousands(float64(x.RecordsBefore)), thousands(float64(x.RecordsRead)),
				x.Scans, x.ReadErrors, x.BadRecords, orDash(strings.Join(errs, "; "), "none"))
		}
	}
	w("\n")
}

// perCall is the records read per Read call answered (all processes),
// over the whole phase with readers (the calls include each scan's one
// read of the tail).
func perCall(x *readHeavyResult) float64 {
	var calls float64
	for _, rc := range x.ReadsBy {
		calls += rc.Calls
	}
	return safeDiv(float64(x.RecordsReadPhase), calls)
}

// replicaShare is the share of the phase's Read calls that the replicas
// answered (the processes past the three members).
func replicaShare(x *readHeavyResult) float64 {
	var all, rep float64
	for i, rc := range x.ReadsBy {
		all += rc.Calls
		if i >= 3 {
			rep += rc.Calls
		}
	}
	return safeDiv(rep, all)
}

func safeDiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// count is thousands with 0 written as 0 (a counter that did not move).
func count(v float64) string {
	if v == 0 {
		return "0"
	}
	return thousands(v)
}

func signed(v float64) string {
	if v < 0 {
		return "−" + thousands(-v)
	}
	return "+" + thousands(v)
}
