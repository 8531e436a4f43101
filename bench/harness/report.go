package main

// The results: one JSON file with every figure, one Markdown file with the
// tables (every figure and the ratio paros/peer), one SVG chart of
// throughput against latency. The SVG is written by hand: no plotting
// dependency.

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

type hostFacts struct {
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpu_model"`
	MemTotal  string `json:"mem_total"`
	Kernel    string `json:"kernel"`
	OS        string `json:"os"`
	GoVersion string `json:"go_version"`
	// ParosCommit is the parent module's HEAD when paros was built, with
	// "+dirty" when tracked files differed from it.
	ParosCommit string `json:"paros_commit"`
}

type params struct {
	W2Low      int     `json:"w2_inflight_low"`
	W2High     int     `json:"w2_inflight_high"`
	W3Batch    int     `json:"w3_records_per_write"`
	W3Inflight int     `json:"w3_inflight"`
	W4Rate     int     `json:"w4_rate_per_s"`
	W4Readers  int     `json:"w4_readers"`
	W5Inflight int     `json:"w5_inflight"`
	WarmupS    float64 `json:"warmup_s"`
	MeasureS   float64 `json:"measure_s"`
}

type sysResult struct {
	Key        string                 `json:"key"`
	Title      string                 `json:"title"`
	Durability string                 `json:"durability"`
	StartS     float64                `json:"start_s"`
	Phases     map[string]*loadResult `json:"phases"`
	Tail       *tailResult            `json:"w4_tail,omitempty"`
	Failover   *failoverResult        `json:"w5_failover,omitempty"`
	ReadHeavy  *readHeavyResult       `json:"read_heavy,omitempty"` // paros systems only
	PeakRSSMiB map[string][]float64   `json:"peak_rss_mib_per_member"`
	CPUCores   map[string]float64     `json:"members_cpu_cores"`
	// DiskBytes is what the three members wrote to storage over a phase
	// (warm-up included), from /proc/PID/io.
	DiskBytes map[string]int64 `json:"members_disk_write_bytes,omitempty"`
	// ParosWriter holds, per phase, the counters of the paros
	// client.Writers that phase used (warm-up included).
	ParosWriter map[string]writerStats `json:"paros_writer_stats,omitempty"`
	// LeaderCost holds, per W2 phase with one Writer (paros systems), what
	// the phase cost journal 0's leader (proxies.go).
	LeaderCost map[string]*leaderCost `json:"leader_cost,omitempty"`
	Error      string                 `json:"error,omitempty"`
}

// addLeaderCost keeps the leader cost of phase id.
func (s *sysResult) addLeaderCost(id string, c *leaderCost) {
	if s.LeaderCost == nil {
		s.LeaderCost = map[string]*leaderCost{}
	}
	s.LeaderCost[id] = c
}

// addWriterStats keeps the Writer counters of phase id (none: nothing).
func (s *sysResult) addWriterStats(id string, st writerStats) {
	if st.Writers == 0 {
		return
	}
	if s.ParosWriter == nil {
		s.ParosWriter = map[string]writerStats{}
	}
	s.ParosWriter[id] = st
}

type profileSummary struct {
	System string `json:"system"`
	Phase  string `json:"phase"`
	Top    string `json:"top"`
}

type targetCheck struct {
	Target string `json:"target"`
	Value  string `json:"value"`
	Met    bool   `json:"met"`
}

type report struct {
	Date        string           `json:"date"`
	Quick       bool             `json:"quick"`
	Host        hostFacts        `json:"host"`
	LoadBefore  string           `json:"loadavg_before"`
	LoadAfter   string           `json:"loadavg_after"`
	RecordBytes int              `json:"record_bytes"`
	Params      params           `json:"params"`
	Disk        []diskResult     `json:"disk"`
	Systems     []sysResult      `json:"systems"`
	Targets     []targetCheck    `json:"targets"`
	Profiles    []profileSummary `json:"profiles,omitempty"`
	// Scale holds the scale rows (scale.go), per system: paros-scale and
	// nats-scale.
	Scale []scaleResult `json:"scale,omitempty"`
}

func (r *report) sys(key string) *sysResult {
	for i := range r.Systems {
		if r.Systems[i].Key == key {
			return &r.Systems[i]
		}
	}
	return nil
}

func (r *report) phase(key, id string) *loadResult {
	s := r.sys(key)
	if s == nil {
		return nil
	}
	p := s.Phases[id]
	if p == nil || p.Writes == 0 {
		return nil
	}
	return p
}

func (r *report) disk(block int) *diskResult {
	for i := range r.Disk {
		if r.Disk[i].BlockBytes == block && r.Disk[i].Error == "" {
			return &r.Disk[i]
		}
	}
	return nil
}

// write stores <stamp>.json, .md and .svg in dir.
func (r *report) write(dir, stamp string) ([]string, error) {
	var paths []string
	j, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	for _, f := range []struct {
		ext  string
		body []byte
	}{{".json", append(j, '\n')}, {".md", []byte(r.markdown(stamp))}, {".svg", []byte(r.svg())}} {
		p := filepath.Join(dir, stamp+f.ext)
		if err := os.WriteFile(p, f.body, 0o644); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// peers are the columns the ratios are taken against.
var peerKeys = []string{"etcd", "nats-always", "nats-default"}

func f1(v float64) string {
	switch {
	case v == 0:
		return "—"
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func thousands(v float64) string {
	if v == 0 {
		return "—"
	}
	s := fmt.Sprintf("%.0f", v)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

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

func orDash(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// checkTargets evaluates the targets.
func checkTargets(r *report) []targetCheck {
	var out []targetCheck
	add := func(target, value string, met bool) { out = append(out, targetCheck{target, value, met}) }
	get := func(key, id string) *loadResult { return r.phase(key, id) }
	etcd2, js2 := get("etcd", "w2-1000"), get("nats-always", "w2-1000")
	for _, v := range []struct{ id, what string }{
		{"w2-1000", "one client.Writer"},
		{"w2-1000-journals", "64 journals, a client.Writer each"},
	} {
		p := get("paros", v.id)
		if p == nil || etcd2 == nil {
			continue
		}
		add(fmt.Sprintf("W2 1,000 in flight (%s): paros ≥ 5× etcd", v.what),
			fmt.Sprintf("%s vs %s writes/s = %s", thousands(p.WritesPerS), thousands(etcd2.WritesPerS), ratio(p.WritesPerS, etcd2.WritesPerS)),
			p.WritesPerS >= 5*etcd2.WritesPerS)
		if js2 != nil {
			add(fmt.Sprintf("W2 1,000 in flight (%s): paros ≥ JetStream (sync always)", v.what),
				fmt.Sprintf("%s vs %s writes/s = %s", thousands(p.WritesPerS), thousands(js2.WritesPerS), ratio(p.WritesPerS, js2.WritesPerS)),
				p.WritesPerS >= js2.WritesPerS)
		}
	}
	if p, e := get("paros", "w1"), get("etcd", "w1"); p != nil && e != nil {
		add("W1 p50: paros ≤ etcd", fmt.Sprintf("%.3f vs %.3f ms", p.P50ms, e.P50ms), p.P50ms <= e.P50ms)
	}
	if p, j := get("paros", "w1"), get("nats-always", "w1"); p != nil && j != nil {
		add("W1 p50: paros ≤ JetStream (sync always)", fmt.Sprintf("%.3f vs %.3f ms", p.P50ms, j.P50ms), p.P50ms <= j.P50ms)
	}
	if d := r.disk(64 << 10); d != nil {
		goal := 0.5 * d.MBPerS * 1e6 / recordBytes
		best, which := 0.0, ""
		for _, id := range []string{"w3-1", "w3-16"} {
			if p := get("paros", id); p != nil && p.RecsPerS > best {
				best, which = p.RecsPerS, id
			}
		}
		add("W3: paros records/s ≥ 50% of synced 64 KiB append bandwidth ÷ 256 B",
			fmt.Sprintf("%s records/s (%s) vs goal %s (disk %.0f MB/s) = %.1f%% of the bandwidth", thousands(best), which, thousands(goal), d.MBPerS, 100*best/(2*goal)),
			best >= goal)
	}
	if c, ok := tlsCostTarget(r); ok {
		out = append(out, c)
	}
	if c, ok := replicaTarget(r); ok {
		out = append(out, c)
	}
	if s := r.sys("paros"); s != nil && s.Failover != nil {
		v := s.Failover.RecoveryMs
		add("W5: failover ≤ 1 s", fmt.Sprintf("%.0f ms (longest ack gap %.0f ms)", v, s.Failover.GapMs), v > 0 && v <= 1000)
	}
	if s := r.sys("paros"); s != nil {
		peak := 0.0
		for id, v := range s.PeakRSSMiB {
			if strings.HasPrefix(id, "w2") {
				peak = max(peak, slices.Max(append(v, 0)))
			}
		}
		all, at := 0.0, ""
		for id, v := range s.PeakRSSMiB {
			if m := slices.Max(append(v, 0)); m > all {
				all, at = m, id
			}
		}
		if peak > 0 {
			add("memory: each paros member ≤ 512 MiB RSS under W2", fmt.Sprintf("peak %.0f MiB under W2 (peak of the whole run: %.0f MiB, in %s)", peak, all, at), peak <= 512)
		}
	}
	return out
}

// tlsCostTargetSlack is how far paros with TLS and tokens may fall behind
// its plaintext variant: 10 % on W1 p50 and on W2 throughput.
const tlsCostTargetSlack = 0.10

// tlsCostTarget checks "TLS on: W1 p50 and W2 throughput within 10% of
// plaintext" (ok false: the run lacks one of the figures).
func tlsCostTarget(r *report) (targetCheck, bool) {
	var parts []string
	met := true
	w1s, w1p := r.phase("paros", "w1"), r.phase("paros-plaintext", "w1")
	if w1s == nil || w1p == nil {
		return targetCheck{}, false
	}
	parts = append(parts, fmt.Sprintf("W1 p50 %.3f vs %.3f ms = %s", w1s.P50ms, w1p.P50ms, ratio(w1s.P50ms, w1p.P50ms)))
	met = met && w1s.P50ms <= (1+tlsCostTargetSlack)*w1p.P50ms
	for _, v := range []struct{ id, name string }{{"w2-64", "W2 64"}, {"w2-1000", "W2 1,000"}} {
		a, b := r.phase("paros", v.id), r.phase("paros-plaintext", v.id)
		if a == nil || b == nil {
			return targetCheck{}, false
		}
		parts = append(parts, fmt.Sprintf("%s %s vs %s writes/s = %s", v.name, thousands(a.WritesPerS), thousands(b.WritesPerS), ratio(a.WritesPerS, b.WritesPerS)))
		met = met && a.WritesPerS >= (1-tlsCostTargetSlack)*b.WritesPerS
	}
	return targetCheck{Target: "TLS on: W1 p50 and W2 throughput within 10% of plaintext", Value: strings.Join(parts, "; "), Met: met}, true
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

// svg draws throughput (records/s, log) against p50 latency (ms, log): one
// line per system through its W1, W2 64 and W2 1,000 points, and its W3
// (16 in flight) point as a square; paros's "64 journals" W2 variant as a
// dashed line.
func (r *report) svg() string {
	const W, H = 900, 560
	const left, right, top, bottom = 80, 250, 56, 60
	type pt struct {
		x, y  float64
		label string
	}
	type series struct {
		name   string
		color  string
		dashed bool
		pts    []pt
		w3     *pt
	}
	colors := map[string]string{"paros": "#d62728", "paros-plaintext": "#e8a0a0", "paros-replicas": "#9467bd", "paros-proxies": "#8c564b", "etcd": "#1f77b4", "nats-always": "#2ca02c", "nats-default": "#98df8a"}
	var ss []series
	for _, s := range r.Systems {
		se := series{name: s.Title, color: colors[s.Key]}
		switch s.Key {
		case "paros":
			se.name = "paros, one client.Writer"
		case "paros-plaintext":
			se.name = "paros (plaintext)"
			se.dashed = true
		case "paros-replicas":
			se.name = "paros, 2 replicas"
			se.dashed = true
		case "paros-proxies":
			se.name = "paros, 2 proxies"
			se.dashed = true
		}
		for _, id := range []string{"w1", "w2-64", "w2-1000"} {
			if p := r.phase(s.Key, id); p != nil {
				se.pts = append(se.pts, pt{p.RecsPerS, p.P50ms, id})
			}
		}
		if p := r.phase(s.Key, "w3-16"); p != nil {
			se.w3 = &pt{p.RecsPerS, p.P50ms, "W3"}
		}
		ss = append(ss, se)
		if s.Key == "paros" {
			for _, v := range []struct{ suffix, name, color string }{
				{"journals", "paros, 64 journals", "#ff7f0e"},
			} {
				sv := series{name: v.name, color: v.color, dashed: true}
				if p := r.phase("paros", "w1"); p != nil {
					sv.pts = append(sv.pts, pt{p.RecsPerS, p.P50ms, "w1"})
				}
				for _, id := range []string{"w2-64-" + v.suffix, "w2-1000-" + v.suffix} {
					if p := r.phase("paros", id); p != nil {
						sv.pts = append(sv.pts, pt{p.RecsPerS, p.P50ms, id})
					}
				}
				ss = append(ss, sv)
			}
		}
	}
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		all := s.pts
		if s.w3 != nil {
			all = append(append([]pt(nil), all...), *s.w3)
		}
		for _, p := range all {
			if p.x > 0 && p.y > 0 {
				xmin, xmax = math.Min(xmin, p.x), math.Max(xmax, p.x)
				ymin, ymax = math.Min(ymin, p.y), math.Max(ymax, p.y)
			}
		}
	}
	if math.IsInf(xmin, 1) {
		xmin, xmax, ymin, ymax = 1, 10, 1, 10
	}
	lx0, lx1 := math.Floor(math.Log10(xmin*0.8)), math.Ceil(math.Log10(xmax*1.25))
	ly0, ly1 := math.Floor(math.Log10(ymin*0.8)), math.Ceil(math.Log10(ymax*1.25))
	if lx1 == lx0 {
		lx1++
	}
	if ly1 == ly0 {
		ly1++
	}
	pw, ph := float64(W-left-right), float64(H-top-bottom)
	X := func(v float64) float64 { return left + (math.Log10(v)-lx0)/(lx1-lx0)*pw }
	Y := func(v float64) float64 { return top + ph - (math.Log10(v)-ly0)/(ly1-ly0)*ph }
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	w(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	w(`<text x="%d" y="20" font-size="15" font-weight="bold">Throughput vs p50 write latency</text>`+"\n", left)
	w(`<text x="%d" y="38" font-size="11" fill="#555">3 members on 127.0.0.1, %d B records, fsync before ack (JetStream default sync: lazy, not durable on ack); %s</text>`+"\n", left, r.RecordBytes, r.Date)
	for e := lx0; e <= lx1; e++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow(10, e)
			if math.Log10(v) > lx1 {
				break
			}
			x := X(v)
			stroke := "#eee"
			if m == 1 {
				stroke = "#ccc"
				w(`<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x, H-bottom+18, axisLabel(v))
			}
			w(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", x, top, x, H-bottom, stroke)
		}
	}
	for e := ly0; e <= ly1; e++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow(10, e)
			if math.Log10(v) > ly1 {
				break
			}
			y := Y(v)
			stroke := "#eee"
			if m == 1 {
				stroke = "#ccc"
				w(`<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", left-6, y, axisLabel(v))
			}
			w(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`+"\n", left, y, W-right, y, stroke)
		}
	}
	w(`<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#333"/>`+"\n", left, top, pw, ph)
	w(`<text x="%.0f" y="%d" text-anchor="middle">records/s acknowledged (log)</text>`+"\n", left+pw/2, H-18)
	w(`<text transform="translate(20 %.0f) rotate(-90)" text-anchor="middle">p50 write latency, ms (log)</text>`+"\n", top+ph/2)
	for i, s := range ss {
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		var pts []string
		for _, p := range s.pts {
			if p.x > 0 && p.y > 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", X(p.x), Y(p.y)))
			}
		}
		if len(pts) > 1 {
			w(`<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), s.color, dash)
		}
		for _, p := range s.pts {
			if p.x > 0 && p.y > 0 {
				w(`<circle cx="%.1f" cy="%.1f" r="4" fill="%s"><title>%s %s: %.0f rec/s, p50 %.2f ms</title></circle>`+"\n", X(p.x), Y(p.y), s.color, s.name, p.label, p.x, p.y)
			}
		}
		if s.w3 != nil && s.w3.x > 0 && s.w3.y > 0 {
			w(`<rect x="%.1f" y="%.1f" width="9" height="9" fill="%s" stroke="#000"><title>%s W3 16×64: %.0f rec/s, p50 %.2f ms</title></rect>`+"\n", X(s.w3.x)-4.5, Y(s.w3.y)-4.5, s.color, s.name, s.w3.x, s.w3.y)
		}
		ly := top + 10 + i*22
		w(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", W-right+15, ly, W-right+45, ly, s.color, dash)
		w(`<circle cx="%d" cy="%d" r="4" fill="%s"/>`+"\n", W-right+30, ly, s.color)
		w(`<text x="%d" y="%d" dominant-baseline="middle">%s</text>`+"\n", W-right+52, ly, s.name)
	}
	ly := top + 10 + len(ss)*22 + 10
	w(`<rect x="%d" y="%d" width="9" height="9" fill="#fff" stroke="#000"/>`+"\n", W-right+25, ly-4)
	w(`<text x="%d" y="%d" dominant-baseline="middle">W3: 16 writes × 64 records</text>`+"\n", W-right+52, ly)
	w(`<text x="%d" y="%d" font-size="11" fill="#555">circles: 1, 64, 1,000 single-record</text>`+"\n", W-right+15, ly+22)
	w(`<text x="%d" y="%d" font-size="11" fill="#555">writes in flight (W1, W2)</text>`+"\n", W-right+15, ly+36)
	w("</svg>\n")
	return b.String()
}

func axisLabel(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", v)
}
