package main

// paros (2 proxies): the headline paros system (secure as shipped, three
// members, 64 journals) plus two proxy leaders, `paros serve --role
// proxy`, each with its own machine certificate from `paros cert node`,
// started before cell init and named in the plan (the CellInit RPC's
// proxies, what `parosctl cell init --proxies` sends). A settled leader hands
// the Phase 2 of slot s to proxy s % 2: it sends the proxy the Accept and
// its own vote, and learns the decision from the proxy's Commit. A proxy
// votes on nothing and persists nothing, and answers no client call, so
// no Client of the harness dials one.
//
// The system runs W2 with one client.Writer only (64 and 1,000 in
// flight): what proxies change is the leader's share of the write path.
// For every paros system the W2 single-Writer phases also measure the
// cost on the leader of journal 0 (leaderCost): its messages to and from
// its peers, from its /metrics (paros_peer_messages_sent_total and
// paros_peer_messages_received_total), and its CPU, each per acknowledged
// append.

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// parosProxies is how many proxy leaders the "paros-proxies" system runs.
const parosProxies = 2

// leaderIdleWindow is how long the leader's idle message rate is measured
// before each W2 phase (no load: heartbeats of the journals it leads).
const leaderIdleWindow = time.Second

// The metric names the leader cost reads.
const (
	metricSent      = "paros_peer_messages_sent_total"
	metricReceived  = "paros_peer_messages_received_total"
	metricDelegated = "paros_proxy_rounds_delegated_total"
	metricDecided   = "paros_proxy_rounds_decided_total"
	metricEvicted   = "paros_proxy_rounds_evicted_total"
	metricTakenBack = "paros_proxy_taken_back_total"
	// metricCommits is paros_journal_commits_total summed over its
	// journal labels: slots folded, every journal.
	metricCommits = "paros_journal_commits_total"
)

// newParosProxies is paros, secure as shipped, with parosProxies proxy
// leaders.
func newParosProxies(root string) *parosSys {
	return &parosSys{root: root, secure: true, proxies: parosProxies}
}

// proxyCostOnly reports whether s runs only W2 with one Writer (the
// system with proxies, there for the leader-cost comparison).
func proxyCostOnly(s system) bool {
	p, ok := s.(*parosSys)
	return ok && p.proxies > 0
}

// leaderCostPhase reports whether phase id measures the leader's cost:
// W2 with one Writer on journal 0.
func leaderCostPhase(id string) bool { return id == "w2-64" || id == "w2-1000" }

// startProxies starts the proxy leaders (none when the system has none).
// Like a replica they wait to be named at cell init; their data dirs hold
// their machine records alone.
func (s *parosSys) startProxies(dir string) error {
	for i := range s.proxies {
		data := filepath.Join(dir, fmt.Sprintf("paros-p%d", i+1))
		k := 3 + s.replicas + i
		args := []string{"serve", "--role", "proxy", "--tls", s.creds.nodeDirs[k],
			"--data", data, "--listen", s.paddrs[i], "--pprof", s.ppprof[i], "--metrics", s.metrics[k]}
		c, err := startChild(fmt.Sprintf("%s-p%d", s.key(), i+1), data+".log", s.bin, args...)
		if err != nil {
			return err
		}
		s.pprocs = append(s.pprocs, c)
	}
	return nil
}

// proxyMetrics are the proxies' /metrics addresses.
func (s *parosSys) proxyMetrics() []string { return s.metrics[3+s.replicas:] }

// leaderCost is what one W2 phase cost the consensus leader of journal 0,
// over the phase from the Writer's claim to its close (warm-up included),
// and what the proxies did meanwhile. Per command is per append
// acknowledged in that window (Writer.Stats).
type leaderCost struct {
	// Leader is the leader's process name; LeaderChanged is set when
	// another member led journal 0 at the end (the figures then mix two
	// processes' counters and are not per-leader).
	Leader        string  `json:"leader"`
	LeaderChanged bool    `json:"leader_changed,omitempty"`
	Seconds       float64 `json:"seconds"`
	Appends       uint64  `json:"appends"`
	Writes        uint64  `json:"writes"`
	// Sent and Received are the leader's peer messages (envelopes, every
	// journal it serves) over the window; IdleSentPerS and
	// IdleReceivedPerS its rates over leaderIdleWindow just before the
	// phase, with no load.
	// Slots are the slots the leader committed over the window, every
	// journal (only journal 0 is written).
	Slots            float64 `json:"leader_slots_committed"`
	Sent             float64 `json:"leader_messages_sent"`
	Received         float64 `json:"leader_messages_received"`
	IdleSentPerS     float64 `json:"leader_idle_sent_per_s"`
	IdleReceivedPerS float64 `json:"leader_idle_received_per_s"`
	// SentPerCommand, ReceivedPerCommand and CPUMicrosPerCommand are the
	// derived figures: messages per acknowledged append and the leader's
	// CPU per acknowledged append, in µs.
	SentPerCommand      float64 `json:"leader_sent_per_command"`
	ReceivedPerCommand  float64 `json:"leader_received_per_command"`
	CPUMicrosPerCommand float64 `json:"leader_cpu_us_per_command"`
	// LeaderCPUSeconds and ProxiesCPUSeconds are CPU time over the window
	// (/proc/PID/stat); the proxies' 0 without proxies.
	LeaderCPUSeconds  float64 `json:"leader_cpu_s"`
	ProxiesCPUSeconds float64 `json:"proxies_cpu_s,omitempty"`
	// Delegated, Decided and Evicted are the proxies' round counters
	// summed over the proxies; TakenBack is the leader's rounds taken back
	// from a silent proxy.
	Delegated float64 `json:"proxy_rounds_delegated,omitempty"`
	Decided   float64 `json:"proxy_rounds_decided,omitempty"`
	Evicted   float64 `json:"proxy_rounds_evicted,omitempty"`
	TakenBack float64 `json:"leader_rounds_taken_back,omitempty"`
	Error     string  `json:"error,omitempty"`
}

// leaderProbe measures one phase's leaderCost: leaderIdle before the
// phase's Writer opens, begin after, end after it closed.
type leaderProbe struct {
	s      *parosSys
	leader int
	cost   leaderCost
	// At begin: when, the leader's counters and CPU, the proxies' CPU and
	// counters.
	at          time.Time
	counters    map[string]float64
	cpu, pcpu   time.Duration
	proxyCounts map[string]float64
}

// leaderIdle finds journal 0's leader and measures its idle message rates
// over leaderIdleWindow.
func (s *parosSys) leaderIdle(ctx context.Context) *leaderProbe {
	pr := &leaderProbe{s: s, leader: -1}
	l, err := s.leader(ctx)
	if err != nil {
		pr.cost.Error = err.Error()
		return pr
	}
	pr.leader, pr.cost.Leader = l, s.procs[l].name
	before, t0 := scrapeMetrics(s.metrics[l]), time.Now()
	sleepCtx(ctx, leaderIdleWindow)
	after, secs := scrapeMetrics(s.metrics[l]), time.Since(t0).Seconds()
	pr.cost.IdleSentPerS = (after[metricSent] - before[metricSent]) / secs
	pr.cost.IdleReceivedPerS = (after[metricReceived] - before[metricReceived]) / secs
	return pr
}

// begin takes the counters at the start of the measured window.
func (pr *leaderProbe) begin() {
	if pr.leader < 0 {
		return
	}
	pr.at = time.Now()
	pr.counters = scrapeMetrics(pr.s.metrics[pr.leader])
	pr.cpu = membersCPU(pr.s.procs[pr.leader : pr.leader+1])
	pr.pcpu = membersCPU(pr.s.pprocs)
	pr.proxyCounts = sumMetrics(pr.s.proxyMetrics())
}

// end takes them again and returns the phase's cost; st is the phase's
// Writer counters.
func (pr *leaderProbe) end(ctx context.Context, st writerStats) *leaderCost {
	c := pr.cost
	if pr.leader < 0 {
		return &c
	}
	s := pr.s
	after := scrapeMetrics(s.metrics[pr.leader])
	cpu := membersCPU(s.procs[pr.leader : pr.leader+1])
	pcpu := membersCPU(s.pprocs)
	proxyCounts := sumMetrics(s.proxyMetrics())
	c.Seconds = time.Since(pr.at).Seconds()
	c.Appends, c.Writes = st.Appends, st.Writes
	c.Sent = after[metricSent] - pr.counters[metricSent]
	c.Received = after[metricReceived] - pr.counters[metricReceived]
	c.TakenBack = after[metricTakenBack] - pr.counters[metricTakenBack]
	c.Slots = after[metricCommits] - pr.counters[metricCommits]
	c.LeaderCPUSeconds = (cpu - pr.cpu).Seconds()
	c.ProxiesCPUSeconds = (pcpu - pr.pcpu).Seconds()
	c.Delegated = proxyCounts[metricDelegated] - pr.proxyCounts[metricDelegated]
	c.Decided = proxyCounts[metricDecided] - pr.proxyCounts[metricDecided]
	c.Evicted = proxyCounts[metricEvicted] - pr.proxyCounts[metricEvicted]
	if _, ok := after[metricSent]; !ok {
		c.Error = "the leader's /metrics has no " + metricSent
	}
	if l, err := s.leader(ctx); err != nil || l != pr.leader {
		c.LeaderChanged = true
	}
	if c.Appends > 0 {
		n := float64(c.Appends)
		c.SentPerCommand, c.ReceivedPerCommand = c.Sent/n, c.Received/n
		c.CPUMicrosPerCommand = c.LeaderCPUSeconds / n * 1e6
	}
	return &c
}

// leaderCores is the leader's CPU over the window, in cores.
func (c *leaderCost) leaderCores() float64 { return safeDiv(c.LeaderCPUSeconds, c.Seconds) }

// proxiesCores is the proxies' CPU over the window, in cores.
func (c *leaderCost) proxiesCores() float64 { return safeDiv(c.ProxiesCPUSeconds, c.Seconds) }

// scrapeMetrics reads the leader-cost metrics of the process serving
// /metrics at addr (none where it does not answer).
func scrapeMetrics(addr string) map[string]float64 {
	out := map[string]float64{}
	for series, v := range scrapeSeries(addr) {
		switch {
		case strings.HasPrefix(series, metricCommits+"{"):
			out[metricCommits] += v
		case series == metricSent, series == metricReceived, series == metricDelegated, series == metricDecided,
			series == metricEvicted, series == metricTakenBack:
			out[series] = v
		}
	}
	return out
}

// sumMetrics is scrapeMetrics summed over addrs.
func sumMetrics(addrs []string) map[string]float64 {
	out := map[string]float64{}
	for _, a := range addrs {
		for k, v := range scrapeMetrics(a) {
			out[k] += v
		}
	}
	return out
}
