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

func orDash(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
