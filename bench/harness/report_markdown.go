package main

// The report's Markdown file: the main table (every figure of every phase,
// and the ratio paros/peer for each), the sections that follow it, and the
// summary compare prints at the end.

import (
	"fmt"
	"slices"
	"strings"
)

// peers are the columns the ratios are taken against.
var peerKeys = []string{"etcd", "nats-always", "nats-default"}

// row is one line of the main table: a metric of a phase, paros's value
// (possibly from a paros variant) and each peer's.
type row struct {
	label   string
	parosID string // phase id for paros
	peerID  string // phase id for the peers
	get     func(*loadResult) float64
	format  func(float64) string
	lower   bool // lower is better
}

func (r *report) markdown(stamp string) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# paros vs etcd vs NATS JetStream — %s\n\n", stamp)
	mode := "full run"
	if r.Quick {
		mode = "quick run (`--quick`: short phases, figures are noisier)"
	}
	w("Measured %s, %s, paros at %s. Host: %d CPUs (%s), %s, Linux %s, %s. Load average before %s, after %s",
		r.Date, mode, orDash(r.Host.ParosCommit, "?"), r.Host.CPUs, r.Host.CPUModel, r.Host.MemTotal, r.Host.Kernel, r.Host.GoVersion, r.LoadBefore, r.LoadAfter)
	w(" (other programs running on the machine share its 2 cores and disk and make every figure noisier).\n\n")
	w("Every system: three member processes on 127.0.0.1, one load generator (this harness) driving it through its own Go client, records of %d B. ", r.RecordBytes)
	w("Each closed-loop phase: %.1f s warm-up, then %.1f s measured; a write counts when it is acknowledged inside the measured window; latency is from the call to the acknowledgement, retries included.\n\n",
		r.Params.WarmupS, r.Params.MeasureS)

	w("## Durability\n\n| system | what an acknowledged write survives |\n|---|---|\n")
	for _, s := range r.Systems {
		w("| %s | %s |\n", s.Title, s.Durability)
	}
	w("\n")

	w("## Raw disk (same run, same file system)\n\n| append + fdatasync | appends/s | MB/s | p50 ms | p99 ms |\n|---|---:|---:|---:|---:|\n")
	for _, d := range r.Disk {
		w("| %d KiB | %s | %s | %s | %s |\n", d.BlockBytes/1024, thousands(d.PerS), f1(d.MBPerS), f1(d.P50ms), f1(d.P99ms))
	}
	w("\n")

	titles := map[string]string{}
	for _, s := range r.Systems {
		titles[s.Key] = s.Title
	}
	w("## Results\n\nRatio = paros ÷ peer. For throughput higher is better (ratio > 1: paros ahead); for latency and time lower is better (ratio < 1: paros ahead). ")
	w("JetStream (default sync) is **not durable on acknowledgement**; its column is for scale only. ")
	w("paros runs as shipped: TLS 1.3 (mutual TLS between its members) and a bearer token checked on every call; etcd and JetStream run plaintext without authentication (their defaults in this harness), so the comparison favours the peers by whatever TLS costs them: the TLS cost section below gives paros's own. ")
	w("paros runs its client library's default `client.Writer`, which coalesces the appends in flight into writes (group commit in the client; each append still waits for its own acknowledgement): the Details give the appends per write of every phase.\n\n")
	w("| workload | metric | paros |")
	for _, k := range peerKeys {
		w(" %s |", orDash(titles[k], k))
	}
	for _, k := range peerKeys {
		w(" paros/%s |", shortName(k))
	}
	w("\n|---|---|---:|")
	for range peerKeys {
		w("---:|")
	}
	for range peerKeys {
		w("---:|")
	}
	w("\n")

	wps := func(l *loadResult) float64 { return l.WritesPerS }
	rps := func(l *loadResult) float64 { return l.RecsPerS }
	mbps := func(l *loadResult) float64 { return l.MBPerS }
	p50 := func(l *loadResult) float64 { return l.P50ms }
	p99 := func(l *loadResult) float64 { return l.P99ms }
	p999 := func(l *loadResult) float64 { return l.P999ms }
	mean := func(l *loadResult) float64 { return l.MeanMs }
	rows := []row{
		{"W1 1 sequential writer", "w1", "w1", p50, f1, true},
		{"W1", "w1", "w1", p99, f1, true},
		{"W1", "w1", "w1", p999, f1, true},
		{"W1", "w1", "w1", mean, f1, true},
		{"W1", "w1", "w1", wps, thousands, false},
		{"W2 64 in flight", "w2-64", "w2-64", wps, thousands, false},
		{"W2 64 in flight", "w2-64", "w2-64", p50, f1, true},
		{"W2 64 in flight", "w2-64", "w2-64", p99, f1, true},
		{"W2 1,000 in flight", "w2-1000", "w2-1000", wps, thousands, false},
		{"W2 1,000 in flight", "w2-1000", "w2-1000", p50, f1, true},
		{"W2 1,000 in flight", "w2-1000", "w2-1000", p99, f1, true},
		{"W2 64 — paros over 64 journals", "w2-64-journals", "w2-64", wps, thousands, false},
		{"W2 64 — paros over 64 journals", "w2-64-journals", "w2-64", p50, f1, true},
		{"W2 1,000 — paros over 64 journals", "w2-1000-journals", "w2-1000", wps, thousands, false},
		{"W2 1,000 — paros over 64 journals", "w2-1000-journals", "w2-1000", p50, f1, true},
		{"W3 64 × 256 B, 1 in flight", "w3-1", "w3-1", rps, thousands, false},
		{"W3 64 × 256 B, 1 in flight", "w3-1", "w3-1", p50, f1, true},
		{"W3 64 × 256 B, 16 in flight", "w3-16", "w3-16", rps, thousands, false},
		{"W3 64 × 256 B, 16 in flight", "w3-16", "w3-16", mbps, f1, false},
		{"W3 64 × 256 B, 16 in flight", "w3-16", "w3-16", p50, f1, true},
		{"W3 64 × 256 B, 16 in flight", "w3-16", "w3-16", p99, f1, true},
	}
	names := []string{"p50 ms", "p99 ms", "p99.9 ms", "mean ms", "writes/s",
		"writes/s", "p50 ms", "p99 ms", "writes/s", "p50 ms", "p99 ms",
		"writes/s", "p50 ms", "writes/s", "p50 ms",
		"records/s", "p50 ms", "records/s", "MB/s", "p50 ms", "p99 ms"}
	if len(names) != len(rows) {
		panic("bench: report rows and metric names differ in length")
	}
	for i, rw := range rows {
		pv := 0.0
		if p := r.phase("paros", rw.parosID); p != nil {
			pv = rw.get(p)
		}
		w("| %s | %s | %s |", rw.label, names[i], rw.format(pv))
		var vals []float64
		for _, k := range peerKeys {
			v := 0.0
			if p := r.phase(k, rw.peerID); p != nil {
				v = rw.get(p)
			}
			vals = append(vals, v)
			w(" %s |", rw.format(v))
		}
		for _, v := range vals {
			w(" %s |", ratio(pv, v))
		}
		w("\n")
	}
	// W4, W5, RSS, CPU.
	tailGet := func(key string, f func(*tailResult) float64) float64 {
		if s := r.sys(key); s != nil && s.Tail != nil && s.Tail.Delivered > 0 {
			return f(s.Tail)
		}
		return 0
	}
	failGet := func(key string, f func(*failoverResult) float64) float64 {
		if s := r.sys(key); s != nil && s.Failover != nil && s.Failover.RecoveryMs > 0 {
			return f(s.Failover)
		}
		return 0
	}
	rssGet := func(key string) float64 {
		s := r.sys(key)
		if s == nil {
			return 0
		}
		m := 0.0
		for id, v := range s.PeakRSSMiB {
			if strings.HasPrefix(id, "w2") {
				m = max(m, slices.Max(append(v, 0)))
			}
		}
		return m
	}
	cpuGet := func(key, id string) float64 {
		if s := r.sys(key); s != nil {
			return s.CPUCores[id]
		}
		return 0
	}
	// diskGet is the members' storage writes over a phase, in MB/s; per
	// record, in bytes per acknowledged record (both over the whole phase).
	diskGet := func(key, id string, perRecord bool) float64 {
		s := r.sys(key)
		if s == nil || s.DiskBytes[id] == 0 {
			return 0
		}
		rate := float64(s.DiskBytes[id]) / (r.Params.WarmupS + r.Params.MeasureS)
		if !perRecord {
			return rate / 1e6
		}
		if p := s.Phases[id]; p != nil && p.RecsPerS > 0 {
			return rate / p.RecsPerS
		}
		return 0
	}
	extra := []struct {
		label, metric string
		get           func(key string) float64
		format        func(float64) string
	}{
		{fmt.Sprintf("W4 tail: %d rec/s, %d readers", r.Params.W4Rate, r.Params.W4Readers), "delay p50 ms", func(k string) float64 { return tailGet(k, func(t *tailResult) float64 { return t.P50ms }) }, f1},
		{fmt.Sprintf("W4 tail: %d rec/s, %d readers", r.Params.W4Rate, r.Params.W4Readers), "delay p99 ms", func(k string) float64 { return tailGet(k, func(t *tailResult) float64 { return t.P99ms }) }, f1},
		{fmt.Sprintf("W5 kill -9 leader, %d in flight", r.Params.W5Inflight), "recovery ms", func(k string) float64 { return failGet(k, func(f *failoverResult) float64 { return f.RecoveryMs }) }, f1},
		{fmt.Sprintf("W5 kill -9 leader, %d in flight", r.Params.W5Inflight), "longest ack gap ms", func(k string) float64 { return failGet(k, func(f *failoverResult) float64 { return f.GapMs }) }, f1},
		{"memory under W2", "peak RSS of a member, MiB", rssGet, f1},
		{"CPU of the 3 members, W2 1,000", "cores", func(k string) float64 { return cpuGet(k, "w2-1000") }, f1},
		{"CPU of the 3 members, W3 16 in flight", "cores", func(k string) float64 { return cpuGet(k, "w3-16") }, f1},
		{"disk writes of the 3 members, W3 16 in flight", "MB/s", func(k string) float64 { return diskGet(k, "w3-16", false) }, f1},
		{"disk writes of the 3 members, W3 16 in flight", "bytes per 256 B record", func(k string) float64 { return diskGet(k, "w3-16", true) }, thousands},
		{"disk writes of the 3 members, W2 1,000", "bytes per 256 B record", func(k string) float64 { return diskGet(k, "w2-1000", true) }, thousands},
	}
	for _, e := range extra {
		pv := e.get("paros")
		w("| %s | %s | %s |", e.label, e.metric, e.format(pv))
		var vals []float64
		for _, k := range peerKeys {
			v := e.get(k)
			vals = append(vals, v)
			w(" %s |", e.format(v))
		}
		for _, v := range vals {
			w(" %s |", ratio(pv, v))
		}
		w("\n")
	}
	w("\n")
	r.tlsCostSection(w)
	r.replicaSection(w)
	r.proxySection(w)
	r.scaleSection(w)

	w("## Targets\n\n| target | measured | met |\n|---|---|:-:|\n")
	for _, t := range r.Targets {
		m := "no"
		if t.Met {
			m = "yes"
		}
		w("| %s | %s | %s |\n", t.Target, t.Value, m)
	}
	w("\n")

	w("## Details\n\n")
	w("| system | start s | W4 records written / deliveries to the 4 readers (measured window) | W5 killed | W5 acked before / after | errors |\n|---|---:|---|---|---|---|\n")
	for _, s := range r.Systems {
		tw, fw, fk := "—", "—", "—"
		if s.Tail != nil {
			tw = fmt.Sprintf("%d / %d", s.Tail.Written, s.Tail.Delivered)
		}
		if s.Failover != nil {
			fk = s.Failover.Killed
			fw = fmt.Sprintf("%d / %d", s.Failover.AckedBefore, s.Failover.AckedAfter)
		}
		var errs []string
		if s.Error != "" {
			errs = append(errs, s.Error)
		}
		ids := make([]string, 0, len(s.Phases))
		for id := range s.Phases {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			if p := s.Phases[id]; p.Errors > 0 || (p.FirstError != "" && p.Writes == 0) {
				errs = append(errs, fmt.Sprintf("%s: %d errors (%s)", id, p.Errors, p.FirstError))
			}
		}
		if s.Tail != nil && s.Tail.Error != "" {
			errs = append(errs, "W4: "+s.Tail.Error)
		}
		if s.Failover != nil && s.Failover.Error != "" {
			errs = append(errs, "W5: "+s.Failover.Error)
		}
		w("| %s | %.1f | %s | %s | %s | %s |\n", s.Title, s.StartS, tw, fk, fw, orDash(strings.Join(errs, "; "), "none"))
	}
	w("\n")
	for _, key := range []string{"paros", "paros-replicas", "paros-plaintext", "paros-proxies"} {
		s := r.sys(key)
		if s == nil || len(s.ParosWriter) == 0 {
			continue
		}
		w("%s `client.Writer` counters by phase (`Writer.Stats`, summed over the phase's Writers, warm-up included): appends completed, writes they were coalesced into, attempts sent (resends included), writes refused for overtaking an earlier one, ambiguous replies, attempts that reached no server:\n\n| phase | Writers | appends | writes | appends per write | sends | refused | ambiguous | unsent |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n", s.Title)
		ids := make([]string, 0, len(s.ParosWriter))
		for id := range s.ParosWriter {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			st := s.ParosWriter[id]
			per := 0.0
			if st.Writes > 0 {
				per = float64(st.Appends) / float64(st.Writes)
			}
			w("| %s | %d | %s | %s | %s | %s | %d | %d | %d |\n", id, st.Writers, thousands(float64(st.Appends)), thousands(float64(st.Writes)),
				f1(per), thousands(float64(st.Sends)), st.Refused, st.Ambiguous, st.Unsent)
		}
		w("\n")
	}
	w("Peak RSS per member (MiB) by phase:\n\n| system | phase | member 1 | member 2 | member 3 |\n|---|---|---:|---:|---:|\n")
	for _, s := range r.Systems {
		ids := make([]string, 0, len(s.PeakRSSMiB))
		for id := range s.PeakRSSMiB {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			v := s.PeakRSSMiB[id]
			w("| %s | %s |", s.Title, id)
			for _, x := range v {
				w(" %.0f |", x)
			}
			w("\n")
		}
	}
	w("\n")
	if len(r.Profiles) > 0 {
		w("## CPU profiles of paros processes: the leader and a follower, or a replica (`go tool pprof -top`)\n\n")
		for _, p := range r.Profiles {
			w("### %s %s\n\n```\n%s\n```\n\n", p.System, p.Phase, p.Top)
		}
	}
	w("![throughput vs latency](%s.svg)\n", stamp)
	return b.String()
}

// tlsCostSection writes the comparison of paros as shipped (TLS 1.3 +
// tokens) with its plaintext variant, when the run has both.
func (r *report) tlsCostSection(w func(string, ...any)) {
	sec, plain := r.sys("paros"), r.sys("paros-plaintext")
	if sec == nil || plain == nil {
		return
	}
	w("## TLS cost\n\n")
	w("paros as shipped (TLS 1.3 between clients and members and mutual TLS between members, a bearer token verified on every call) against the same build with `--insecure` (plaintext, no token), in the same run; the plaintext variant runs W1 and W2 (one `client.Writer`) only. ")
	w("Ratio = TLS ÷ plaintext: for throughput below 1 is the cost, for latency and CPU above 1 is the cost.\n\n")
	w("| workload | metric | paros (TLS + tokens) | paros (plaintext) | TLS ÷ plaintext |\n|---|---|---:|---:|---:|\n")
	wps := func(l *loadResult) float64 { return l.WritesPerS }
	p50 := func(l *loadResult) float64 { return l.P50ms }
	p99 := func(l *loadResult) float64 { return l.P99ms }
	phaseGet := func(id string, f func(*loadResult) float64) func(string) float64 {
		return func(key string) float64 {
			if p := r.phase(key, id); p != nil {
				return f(p)
			}
			return 0
		}
	}
	cores := func(id string) func(string) float64 {
		return func(key string) float64 { return r.sys(key).CPUCores[id] }
	}
	// cpuPerWrite is the members' CPU per acknowledged write, in µs (the
	// CPU over the whole phase, warm-up included, over its write rate).
	cpuPerWrite := func(id string) func(string) float64 {
		return func(key string) float64 {
			p := r.phase(key, id)
			c := r.sys(key).CPUCores[id]
			if p == nil || p.WritesPerS == 0 || c == 0 {
				return 0
			}
			return c / p.WritesPerS * 1e6
		}
	}
	rows := []struct {
		label, metric string
		get           func(key string) float64
		format        func(float64) string
	}{
		{"W1 1 sequential writer", "p50 ms", phaseGet("w1", p50), f1},
		{"W1 1 sequential writer", "p99 ms", phaseGet("w1", p99), f1},
		{"W2 64 in flight", "writes/s", phaseGet("w2-64", wps), thousands},
		{"W2 64 in flight", "p50 ms", phaseGet("w2-64", p50), f1},
		{"W2 1,000 in flight", "writes/s", phaseGet("w2-1000", wps), thousands},
		{"W2 1,000 in flight", "p50 ms", phaseGet("w2-1000", p50), f1},
		{"W2 1,000 in flight", "p99 ms", phaseGet("w2-1000", p99), f1},
		{"CPU of the 3 members, W2 1,000", "cores", cores("w2-1000"), f1},
		{"CPU of the 3 members, W2 1,000", "µs per write", cpuPerWrite("w2-1000"), f1},
	}
	for _, rw := range rows {
		a, b := rw.get("paros"), rw.get("paros-plaintext")
		w("| %s | %s | %s | %s | %s |\n", rw.label, rw.metric, rw.format(a), rw.format(b), ratio(a, b))
	}
	w("\n")
}

func shortName(k string) string {
	switch k {
	case "nats-always":
		return "JS always"
	case "nats-default":
		return "JS default"
	}
	return k
}

// markdownSummary is what compare prints at the end: the targets.
func (r *report) markdownSummary() string {
	var b strings.Builder
	for _, t := range r.Targets {
		m := "MISSED"
		if t.Met {
			m = "met"
		}
		fmt.Fprintf(&b, "%-6s  %s: %s\n", m, t.Target, t.Value)
	}
	return b.String()
}
