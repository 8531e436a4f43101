package runtime

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
)

// Metrics are the process's Prometheus metrics (served on the admin port's
// /metrics by the daemon).
type Metrics struct {
	Registry        *prometheus.Registry
	Commits         *prometheus.CounterVec
	CallLatency     *prometheus.HistogramVec
	SyncBatches     prometheus.Histogram
	SyncLatency     prometheus.Histogram
	PeerQueue       *prometheus.GaugeVec
	InboundDropped  prometheus.Counter
	OutboundDropped prometheus.Counter
	Elections       prometheus.Gauge
	Inbox           prometheus.Gauge
	// The hot window (paxos cold.go): slots evicted from memory and cold
	// reads by purpose, summed over this process's live journal nodes
	// (gauges: a quarantine reopen starts a node's counts again), and the
	// quarantines caused by a failed cold read.
	Evicted        prometheus.Gauge
	ColdReads      *prometheus.GaugeVec
	ColdReadFaults prometheus.Gauge
	// ContractFaults counts quarantines after a peer broke the Paxos
	// contract (a bug or a lying member: alert on any).
	ContractFaults prometheus.Gauge
}

var coldPurposeNames = [...]string{paxos.ColdCatchUp: "catch_up", paxos.ColdPromise: "promise", paxos.ColdVote: "vote",
	paxos.ColdPage: "read_page", paxos.ColdDedup: "dedup", paxos.ColdLookup: "lookup", paxos.ColdBoot: "boot"}

// NewMetrics registers the metrics on reg (a fresh registry when nil).
func NewMetrics(reg *prometheus.Registry) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{Registry: reg,
		Commits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "paros_journal_commits_total",
			Help: "Slots folded and released, per journal."}, []string{"journal"}),
		CallLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "paros_call_seconds",
			Help: "Client call latency by kind.", Buckets: prometheus.ExponentialBuckets(0.0002, 2, 16)}, []string{"kind"}),
		SyncBatches: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "paros_sync_batch_size",
			Help: "Journal batches per storage commit (group commit).", Buckets: prometheus.ExponentialBuckets(1, 2, 12)}),
		SyncLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "paros_storage_commit_seconds",
			Help: "Storage commit latency (synced commits).", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)}),
		PeerQueue: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "paros_peer_queue_depth",
			Help: "Delivers queued per peer."}, []string{"peer"}),
		InboundDropped:  prometheus.NewCounter(prometheus.CounterOpts{Name: "paros_inbound_dropped_total", Help: "Delivers dropped on a full inbox."}),
		OutboundDropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "paros_outbound_dropped_total", Help: "Delivers dropped on a full peer queue."}),
		Elections:       prometheus.NewGauge(prometheus.GaugeOpts{Name: "paros_elections", Help: "Elections won by this process, summed over journals."}),
		Inbox:           prometheus.NewGauge(prometheus.GaugeOpts{Name: "paros_inbox_depth", Help: "Events waiting for the loop."}),
		Evicted: prometheus.NewGauge(prometheus.GaugeOpts{Name: "paros_hot_window_evicted_slots",
			Help: "Applied slots moved out of memory (read back from the store when asked for), summed over live journals."}),
		ColdReads: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "paros_cold_reads",
			Help: "Reads of evicted records back from the store, by purpose, summed over live journals."}, []string{"purpose"}),
		ColdReadFaults: prometheus.NewGauge(prometheus.GaugeOpts{Name: "paros_cold_read_faults",
			Help: "Journals quarantined because an evicted record could not be read back."}),
		ContractFaults: prometheus.NewGauge(prometheus.GaugeOpts{Name: "paros_contract_faults",
			Help: "Journals quarantined because a peer broke the Paxos contract (a bug or a lying member)."}),
	}
	reg.MustRegister(m.Commits, m.CallLatency, m.SyncBatches, m.SyncLatency, m.PeerQueue, m.InboundDropped,
		m.OutboundDropped, m.Elections, m.Inbox, m.Evicted, m.ColdReads, m.ColdReadFaults, m.ContractFaults)
	return m
}

var kindNames = map[host.CallKind]string{host.CallWrite: "write", host.CallRead: "read", host.CallTruncate: "truncate",
	host.CallSetLeader: "set_leader", host.CallInspect: "inspect"}

func (m *Metrics) observeCall(k host.CallKind, d time.Duration) {
	m.CallLatency.WithLabelValues(kindNames[k]).Observe(d.Seconds())
}

func (m *Metrics) observeCommit(batches int, sync bool, d time.Duration) {
	m.SyncBatches.Observe(float64(batches))
	if sync {
		m.SyncLatency.Observe(d.Seconds())
	}
}

// sampleMetrics runs on the loop each tick.
func (r *Runtime) sampleMetrics() {
	r.metrics.Inbox.Set(float64(len(r.inbox)))
	var elections, evicted uint64
	var cold paxos.ColdReads
	for _, j := range r.cfg.Journals {
		if n := r.h.Node(j.ID); n != nil {
			c := n.Counters()
			elections += c.Elections
			evicted += c.Evicted
			for i, v := range c.ColdReads {
				cold[i] += v
			}
		}
	}
	r.metrics.Elections.Set(float64(elections))
	r.metrics.Evicted.Set(float64(evicted))
	for i, v := range cold {
		r.metrics.ColdReads.WithLabelValues(coldPurposeNames[i]).Set(float64(v))
	}
	r.metrics.ColdReadFaults.Set(float64(r.h.Counters().ColdReadFaults))
	r.metrics.ContractFaults.Set(float64(r.h.Counters().ContractFaults))
}
