package runtime

import (
	"cmp"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/parosdb/paros/core/journal"
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
	// PeerMessagesSent and PeerMessagesReceived count the consensus
	// messages (envelopes, over every journal) this process queued for its
	// peers and took in from them; a Deliver dropped on a full queue or
	// inbox counts in neither (the Dropped counters count it).
	PeerMessagesSent     prometheus.Counter
	PeerMessagesReceived prometheus.Counter
	// HandedOff counts leaderships a graceful shutdown handed on.
	HandedOff prometheus.Counter
	Elections prometheus.Gauge
	Inbox     prometheus.Gauge
	// Journals counts this process's journals by state (awake, quiet,
	// quarantined, down); JournalsLeading those whose leader is this
	// process's node.
	Journals        *prometheus.GaugeVec
	JournalsLeading prometheus.Gauge
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
	// The scrubber and CTRL (paxos node_scrub.go, ctrl.go), summed over
	// live journals like the hot window's: pages asked as the scrubbing
	// leader and answered as an acceptor, passes completed and those that
	// overran the full-pass bound, the last pass's duration (the longest
	// over journals), damaged records repaired by source, mismatches (two
	// copies of one slot at one ballot that differ: a bug, never rot —
	// alert on any) and CTRL decisions by case.
	ScrubPages         prometheus.Gauge
	ScrubPagesAnswered prometheus.Gauge
	ScrubPasses        prometheus.Gauge
	ScrubPassOverruns  prometheus.Gauge
	ScrubLastPass      prometheus.Gauge
	RepairedRecords    *prometheus.GaugeVec
	ScrubMismatches    prometheus.Gauge
	CtrlDecisions      *prometheus.GaugeVec
	// Role is 1 for the process's role (SetRole): role="node" on an
	// acceptor machine, "replica" on a replica machine, "proxy" on a proxy
	// machine (paros serve --role).
	Role *prometheus.GaugeVec
	// The learner's paths, summed over live journals like the hot
	// window's: Commits a replica learned pushed values from (a node counts
	// none), catch-ups asked (a gap below the commit watermark), jumps past
	// a trimmed range (TrimmedTo), and quorum reads served and expired
	// unconfirmed. On a replica they tell whether it keeps up from the
	// leader's pushes or fetches by catch-up.
	ReplicaPushes prometheus.Gauge
	CatchUps      prometheus.Gauge
	TrimJumps     prometheus.Gauge
	QuorumReads   *prometheus.GaugeVec
	// Proxy leaders. On a proxy process (paros serve --role proxy): rounds
	// delegated to it, decided (announced by its Commit) and evicted
	// unanswered, summed over journals, and the rounds it holds open. On
	// an acceptor: delegated rounds its leaders took back from a silent
	// proxy and ran themselves.
	ProxyDelegated prometheus.Counter
	ProxyDecided   prometheus.Counter
	ProxyEvicted   prometheus.Counter
	ProxyOpen      prometheus.Gauge
	ProxyTakenBack prometheus.Counter
	// The last sums the proxy counters were advanced to (loop-owned).
	proxyDelegated, proxyDecided, proxyEvicted, proxyTakenBack counterSum

	// alarms is what the loop already logged, per served journal, and
	// statuses each journal's last status seen (loop-owned: a Metrics
	// serves one Runtime). Bounded by the journals served: entries of
	// journals no longer served are dropped each sample.
	alarms   map[journal.ID]*journalAlarms
	statuses map[journal.ID]host.JournalStatus
}

// journalAlarms is what was logged of one journal's node: a node replaced
// by a quarantine reopen starts again (its counts restart from zero).
type journalAlarms struct {
	node *paxos.Node
	// mismatches is the node's Counters.ScrubMismatches already logged.
	mismatches uint64
	// ctrlUnrecoverable is the node's Counters.CtrlUnrecoverable when its
	// unrecoverable slots were last read; unrecoverable holds the slots
	// logged (bounded by the node's own list, paxos unrecoverableMax).
	ctrlUnrecoverable uint64
	unrecoverable     map[paxos.Slot]bool
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
		HandedOff:       prometheus.NewCounter(prometheus.CounterOpts{Name: "paros_handed_off_total", Help: "Leaderships a graceful shutdown handed to a follower."}),
		Elections:       prometheus.NewGauge(prometheus.GaugeOpts{Name: "paros_elections", Help: "Elections won by this process, summed over journals."}),
		Inbox:           prometheus.NewGauge(prometheus.GaugeOpts{Name: "paros_inbox_depth", Help: "Events waiting for the loop."}),
		Journals: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "paros_journals",
			Help: "Journals served by state: awake (ticked), quiet (settled, costs nothing), quarantined, down."}, []string{"state"}),
		JournalsLeading: prometheus.NewGauge(prometheus.GaugeOpts{Name: "paros_journals_leading", Help: "Journals this process leads."}),
		PeerMessagesSent: prometheus.NewCounter(prometheus.CounterOpts{Name: "paros_peer_messages_sent_total",
			Help: "Consensus messages queued for peers (envelopes, over every journal); a dropped Deliver's are not counted."}),
		PeerMessagesReceived: prometheus.NewCounter(prometheus.CounterOpts{Name: "paros_peer_messages_received_total",
			Help: "Consensus messages taken in from peers (envelopes, over every journal); a dropped Deliver's are not counted."}),
		Evicted: prometheus.NewGauge(prometheus.GaugeOpts{Name: "paros_hot_window_evicted_slots",
			Help: "Applied slots moved out of memory (read back from the store when asked for), summed over live journals."}),
		ColdReads: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "paros_cold_reads",
			Help: "Reads of evicted records back from the store, by purpose, summed over live journals."}, []string{"purpose"}),
		ColdReadFaults: prometheus.NewGauge(prometheus.GaugeOpts{Name: "paros_cold_read_faults",
			Help: "Journals quarantined because an evicted record could not be read back."}),
		ContractFaults: prometheus.NewGauge(prometheus.GaugeOpts{Name: "paros_contract_faults",
			Help: "Journals quarantined because a peer broke the Paxos contract (a bug or a lying member)."}),
		ScrubPages: prometheus.NewGauge(prometheus.GaugeOpts{Name: "paros_scrub_pages",
			Help: "Scrub pages asked as the scrubbing leader, summed over live journals."}),
		ScrubPagesAnswered: prometheus.NewGauge(prometheus.GaugeOpts{Name: "paros_scrub_pages_answered",
			Help: "Scrub pages read from disk and answered as an acceptor, summed over live journals."}),
		ScrubPasses: prometheus.NewGauge(prometheus.GaugeOpts{Name: "paros_scrub_passes",
			Help: "Full scrub passes completed as the scrubbing leader, summed over live journals."}),
		ScrubPassOverruns: prometheus.NewGauge(prometheus.GaugeOpts{Name: "paros_scrub_pass_overruns",
			Help: "Scrub passes that took longer than the full-pass bound (--scrub-pass), summed over live journals."}),
		ScrubLastPass: prometheus.NewGauge(prometheus.GaugeOpts{Name: "paros_scrub_last_pass_seconds",
			Help: "Duration of the last completed scrub pass, the longest over live journals."}),
		RepairedRecords: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "paros_repaired_records",
			Help: "Damaged records rewritten, from the value held in memory or a peer's chosen copy, summed over live journals."}, []string{"from"}),
		ScrubMismatches: prometheus.NewGauge(prometheus.GaugeOpts{Name: "paros_scrub_mismatches",
			Help: "Slots whose copies differ at one ballot (a bug, never rot: alert on any), summed over live journals."}),
		CtrlDecisions: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "paros_ctrl_decisions",
			Help: "CTRL decisions over damaged records by case, summed over live journals (unrecoverable: alert on any)."}, []string{"case"}),
		Role: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "paros_role",
			Help: "1 for the role the process serves as: node (an acceptor machine), replica or proxy (paros serve --role)."}, []string{"role"}),
		ReplicaPushes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "paros_replica_pushes",
			Help: "Commits a replica learned pushed values from, summed over live journals (0 on a node)."}),
		CatchUps: prometheus.NewGauge(prometheus.GaugeOpts{Name: "paros_catch_ups",
			Help: "Catch-ups asked of the leader for a gap below its commit watermark, summed over live journals."}),
		TrimJumps: prometheus.NewGauge(prometheus.GaugeOpts{Name: "paros_trim_jumps",
			Help: "Jumps past a range the leader already trimmed, summed over live journals."}),
		QuorumReads: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "paros_quorum_reads",
			Help: "Quorum reads served, or expired unconfirmed, summed over live journals."}, []string{"outcome"}),
		ProxyDelegated: prometheus.NewCounter(prometheus.CounterOpts{Name: "paros_proxy_rounds_delegated_total",
			Help: "Rounds leaders delegated to this proxy process, over every journal (paros serve --role proxy)."}),
		ProxyDecided: prometheus.NewCounter(prometheus.CounterOpts{Name: "paros_proxy_rounds_decided_total",
			Help: "Delegated rounds this proxy process saw a Phase-2 quorum accept and announced, over every journal."}),
		ProxyEvicted: prometheus.NewCounter(prometheus.CounterOpts{Name: "paros_proxy_rounds_evicted_total",
			Help: "Delegated rounds this proxy process dropped unanswered after its re-fan-out budget, over every journal."}),
		ProxyOpen: prometheus.NewGauge(prometheus.GaugeOpts{Name: "paros_proxy_open_rounds",
			Help: "Delegated rounds this proxy process holds open, over every journal."}),
		ProxyTakenBack: prometheus.NewCounter(prometheus.CounterOpts{Name: "paros_proxy_taken_back_total",
			Help: "Delegated rounds this process's leaders took back from a silent proxy and ran themselves, over live journals."}),
		alarms: map[journal.ID]*journalAlarms{}, statuses: map[journal.ID]host.JournalStatus{},
	}
	reg.MustRegister(m.Journals, m.JournalsLeading)
	reg.MustRegister(m.Commits, m.CallLatency, m.SyncBatches, m.SyncLatency, m.PeerQueue, m.InboundDropped,
		m.OutboundDropped, m.HandedOff, m.Elections, m.Inbox, m.Evicted, m.ColdReads, m.ColdReadFaults, m.ContractFaults,
		m.ScrubPages, m.ScrubPagesAnswered, m.ScrubPasses, m.ScrubPassOverruns, m.ScrubLastPass, m.RepairedRecords,
		m.ScrubMismatches, m.CtrlDecisions, m.Role, m.ReplicaPushes, m.CatchUps, m.TrimJumps, m.QuorumReads,
		m.ProxyDelegated, m.ProxyDecided, m.ProxyEvicted, m.ProxyOpen, m.ProxyTakenBack, m.PeerMessagesSent, m.PeerMessagesReceived)
	return m
}

// counterSum turns a sum of counters that only grow while their sources
// live into a Prometheus counter: each sample adds what the sum grew by.
// A sum that fell (a source restarted from zero, a quarantined journal's
// node replaced) is taken as the new base, adding nothing.
type counterSum struct{ last uint64 }

func (s *counterSum) advance(c prometheus.Counter, now uint64) {
	if now > s.last {
		c.Add(float64(now - s.last))
	}
	s.last = now
}

// SetRole exports role ("node", "replica" or "proxy") as paros_role{role}
// 1, every other role 0.
func (m *Metrics) SetRole(role string) {
	for _, r := range []string{"node", "replica", "proxy"} {
		v := 0.0
		if r == role {
			v = 1
		}
		m.Role.WithLabelValues(r).Set(v)
	}
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
	var sum paxos.Counters
	var lastPassTicks uint64
	var live, quiet, leading, quarantined, down int
	r.h.EachJournal(func(id journal.ID, st host.JournalStatus, fault error, n *paxos.Node) {
		r.noteStatus(id, st, fault)
		switch st {
		case host.Quarantined:
			quarantined++
		case host.Down:
			down++
		}
		if n == nil {
			return
		}
		live++
		if n.Quiescent() {
			quiet++
		}
		if n.IsLeader() {
			leading++
		}
		c := n.Counters()
		sum.Elections += c.Elections
		sum.Evicted += c.Evicted
		for i, v := range c.ColdReads {
			sum.ColdReads[i] += v
		}
		sum.ScrubPages += c.ScrubPages
		sum.ScrubAnswered += c.ScrubAnswered
		sum.ScrubPasses += c.ScrubPasses
		sum.ScrubOverruns += c.ScrubOverruns
		lastPassTicks = max(lastPassTicks, c.ScrubLastPassTicks)
		sum.RepairedFromMemory += c.RepairedFromMemory
		sum.RepairedFromPeer += c.RepairedFromPeer
		sum.ScrubMismatches += c.ScrubMismatches
		sum.CtrlReproposed += c.CtrlReproposed
		sum.CtrlNoops += c.CtrlNoops
		sum.CtrlWaits += c.CtrlWaits
		sum.CtrlResigned += c.CtrlResigned
		sum.CtrlUnrecoverable += c.CtrlUnrecoverable
		sum.ReplicaPushes += c.ReplicaPushes
		sum.CatchUps += c.CatchUps
		sum.TrimJumps += c.TrimJumps
		sum.ReadsServed += c.ReadsServed
		sum.ReadsExpired += c.ReadsExpired
		sum.ProxyTakenBack += c.ProxyTakenBack
		r.raiseAlarms(id, n, c)
	})
	if len(r.metrics.alarms) > 0 || len(r.metrics.statuses) > 0 {
		served := r.h.Journals()
		for id := range r.metrics.alarms {
			if _, ok := slices.BinarySearchFunc(served, id, compareIDs); !ok {
				delete(r.metrics.alarms, id)
			}
		}
		for id := range r.metrics.statuses {
			if _, ok := slices.BinarySearchFunc(served, id, compareIDs); !ok {
				delete(r.metrics.statuses, id)
			}
		}
	}
	r.metrics.Journals.WithLabelValues("awake").Set(float64(live - quiet))
	r.metrics.Journals.WithLabelValues("quiet").Set(float64(quiet))
	r.metrics.Journals.WithLabelValues("quarantined").Set(float64(quarantined))
	r.metrics.Journals.WithLabelValues("down").Set(float64(down))
	r.metrics.JournalsLeading.Set(float64(leading))
	m := r.metrics
	m.Elections.Set(float64(sum.Elections))
	m.Evicted.Set(float64(sum.Evicted))
	for i, v := range sum.ColdReads {
		m.ColdReads.WithLabelValues(coldPurposeNames[i]).Set(float64(v))
	}
	m.ColdReadFaults.Set(float64(r.h.Counters().ColdReadFaults))
	m.ContractFaults.Set(float64(r.h.Counters().ContractFaults))
	m.ScrubPages.Set(float64(sum.ScrubPages))
	m.ScrubPagesAnswered.Set(float64(sum.ScrubAnswered))
	m.ScrubPasses.Set(float64(sum.ScrubPasses))
	m.ScrubPassOverruns.Set(float64(sum.ScrubOverruns))
	m.ScrubLastPass.Set(float64(lastPassTicks) * float64(r.cfg.Tunables.TickMs) / 1000)
	m.RepairedRecords.WithLabelValues("memory").Set(float64(sum.RepairedFromMemory))
	m.RepairedRecords.WithLabelValues("peer").Set(float64(sum.RepairedFromPeer))
	m.ScrubMismatches.Set(float64(sum.ScrubMismatches))
	for _, d := range []struct {
		name string
		v    uint64
	}{{"repropose", sum.CtrlReproposed}, {"noop", sum.CtrlNoops}, {"wait", sum.CtrlWaits},
		{"resigned", sum.CtrlResigned}, {"unrecoverable", sum.CtrlUnrecoverable}} {
		m.CtrlDecisions.WithLabelValues(d.name).Set(float64(d.v))
	}
	m.ReplicaPushes.Set(float64(sum.ReplicaPushes))
	m.CatchUps.Set(float64(sum.CatchUps))
	m.TrimJumps.Set(float64(sum.TrimJumps))
	m.QuorumReads.WithLabelValues("served").Set(float64(sum.ReadsServed))
	m.QuorumReads.WithLabelValues("expired").Set(float64(sum.ReadsExpired))
	m.proxyTakenBack.advance(m.ProxyTakenBack, sum.ProxyTakenBack)
}

// compareIDs orders journal ids as host.Journals sorts them.
func compareIDs(a, b journal.ID) int {
	if c := cmp.Compare(a.Tenant, b.Tenant); c != 0 {
		return c
	}
	return cmp.Compare(a.Journal, b.Journal)
}

// noteStatus logs a journal's change of status: at Error level when its
// incarnation ends (quarantined or down, with the fault), at Info level
// when it is live again. The host itself logs nothing, and a process that
// runs a matchmaker stays up with every journal down, so this line is how
// an operator learns of it.
//
// Only journals that are not Live are remembered (an absent journal is
// Live), so a sample of 10,000 healthy journals touches no map.
func (r *Runtime) noteStatus(id journal.ID, st host.JournalStatus, fault error) {
	was, seen := r.metrics.statuses[id]
	switch {
	case st == host.Live && !seen:
	case st == host.Live:
		delete(r.metrics.statuses, id)
		r.log.Info("journal live again", "journal", id.String(), "was", was.String())
	case seen && st == was:
	default:
		r.metrics.statuses[id] = st
		r.log.Error("journal stopped serving", "journal", id.String(), "status", st.String(), "fault", fault)
	}
}

// raiseAlarms logs, at Error level and once each, the scrub mismatches and
// the unrecoverable slots journal id's node reported since the last sample.
// A mismatch is two copies of one slot at one ballot that differ: Paxos
// accepts one value per slot per ballot, so it is a bug, never rot. An
// unrecoverable slot is a damaged record beyond the fault budget: the
// journal stops deciding past it until an operator restores a copy.
func (r *Runtime) raiseAlarms(id journal.ID, n *paxos.Node, c paxos.Counters) {
	if c.ScrubMismatches == 0 && c.CtrlUnrecoverable == 0 {
		return // nothing to log: most journals, and no map entry for them
	}
	a := r.metrics.alarms[id]
	if a == nil || a.node != n {
		a = &journalAlarms{node: n}
		r.metrics.alarms[id] = a
	}
	if c.ScrubMismatches > a.mismatches {
		// The node keeps the details of its first mismatches only, in the
		// order it counted them.
		kept := n.ScrubMismatches()
		for i := a.mismatches; i < c.ScrubMismatches && i < uint64(len(kept)); i++ {
			r.log.Error("scrub mismatch: two copies of one slot at one ballot differ (a bug, never rot)",
				"journal", id.String(), "mismatch", kept[i].String())
		}
		if from := max(a.mismatches, uint64(len(kept))); c.ScrubMismatches > from {
			r.log.Error("scrub mismatches beyond the details the node keeps (a bug, never rot)",
				"journal", id.String(), "new", c.ScrubMismatches-from, "total", c.ScrubMismatches)
		}
		a.mismatches = c.ScrubMismatches
	}
	if c.CtrlUnrecoverable > a.ctrlUnrecoverable {
		a.ctrlUnrecoverable = c.CtrlUnrecoverable
		for _, s := range n.Unrecoverable() {
			if a.unrecoverable[s] {
				continue
			}
			if a.unrecoverable == nil {
				a.unrecoverable = map[paxos.Slot]bool{}
			}
			a.unrecoverable[s] = true
			r.log.Error("unrecoverable slot: a damaged record beyond the fault budget; the journal stops deciding past it until a copy is restored",
				"journal", id.String(), "slot", s)
		}
	}
}
