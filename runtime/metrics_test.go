// This file checks the names the scrub, CTRL, role and learner metrics are
// exported under (dashboards and alerts depend on them): a fresh Metrics
// registers each series, with the labels it documents; SetRole exports
// exactly one role at 1; the proxy counters are registered under their
// names, and a counterSum adds what a sum grew by and nothing when it fell
// (a source restarted from zero). The peer message counters count the
// envelopes a send queued and a Deliver took in, and nothing of a Deliver
// dropped on a full queue or inbox: checked on a transport and a Runtime
// built by hand, with no goroutine started.
package runtime

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
)

func TestScrubAndCtrlMetricNames(t *testing.T) {
	m := NewMetrics(nil)
	m.RepairedRecords.WithLabelValues("memory")
	m.CtrlDecisions.WithLabelValues("unrecoverable")
	m.QuorumReads.WithLabelValues("served")
	m.SetRole("replica")
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range families {
		label := ""
		if ms := f.GetMetric(); len(ms) > 0 && len(ms[0].GetLabel()) > 0 {
			label = ms[0].GetLabel()[0].GetName()
		}
		got[f.GetName()] = label
	}
	for name, label := range map[string]string{"paros_scrub_pages": "", "paros_scrub_pages_answered": "",
		"paros_scrub_passes": "", "paros_scrub_pass_overruns": "", "paros_scrub_last_pass_seconds": "",
		"paros_repaired_records": "from", "paros_scrub_mismatches": "", "paros_ctrl_decisions": "case",
		"paros_role": "role", "paros_replica_pushes": "", "paros_catch_ups": "", "paros_trim_jumps": "",
		"paros_quorum_reads": "outcome", "paros_proxy_rounds_delegated_total": "", "paros_proxy_rounds_decided_total": "",
		"paros_proxy_rounds_evicted_total": "", "paros_proxy_open_rounds": "", "paros_proxy_taken_back_total": "",
		"paros_peer_messages_sent_total": "", "paros_peer_messages_received_total": ""} {
		if l, ok := got[name]; !ok || l != label {
			t.Errorf("metric %s: registered %v with label %q, want label %q", name, ok, l, label)
		}
	}
	for _, f := range families {
		if f.GetName() != "paros_role" {
			continue
		}
		for _, s := range f.GetMetric() {
			want := 0.0
			if s.GetLabel()[0].GetValue() == "replica" {
				want = 1
			}
			if got := s.GetGauge().GetValue(); got != want {
				t.Errorf("paros_role{role=%q} = %v, want %v", s.GetLabel()[0].GetValue(), got, want)
			}
		}
	}
}

func TestCounterSumAddsWhatTheSumGrewBy(t *testing.T) {
	// Arrange.
	m := NewMetrics(nil)
	var s counterSum
	value := func() float64 {
		var d dto.Metric
		if err := m.ProxyTakenBack.Write(&d); err != nil {
			t.Fatal(err)
		}
		return d.GetCounter().GetValue()
	}

	// Act and check: 5, then 7 (+2), then a source reset to 1 (+0), then 4
	// (+3).
	for _, step := range []struct {
		sum  uint64
		want float64
	}{{5, 5}, {7, 7}, {1, 7}, {4, 10}} {
		s.advance(m.ProxyTakenBack, step.sum)
		if got := value(); got != step.want {
			t.Fatalf("after a sum of %d the counter is %v, want %v", step.sum, got, step.want)
		}
	}
}

func TestPeerMessageCountersCountEnvelopesQueuedAndTakenIn(t *testing.T) {
	// Arrange: a process (node 1) whose one peer (node 2) has room for one
	// queued Deliver, and whose inbox has room for one event.
	r := &Runtime{cfg: Config{NodeID: 1}, metrics: NewMetrics(nil), inbox: make(chan func(), 1), stopped: make(chan struct{})}
	tr := &transport{r: r, peers: map[paxos.NodeID]*peerSender{
		2: {id: 2, addr: "127.0.0.1:2", q: make(chan *pb.Deliver, 1)}}}
	envelopes := func(n int) []host.Envelope { return make([]host.Envelope, n) }

	// Act: 3 envelopes queued, 2 dropped on the full queue, 1 to an
	// unknown peer; 4 envelopes taken in, 5 dropped on the full inbox.
	tr.send(2, envelopes(3))
	tr.send(2, envelopes(2))
	tr.send(9, envelopes(1))
	r.Deliver(2, envelopes(4))
	r.Deliver(2, envelopes(5))

	// Check.
	value := func(c prometheus.Counter) float64 {
		var d dto.Metric
		if err := c.Write(&d); err != nil {
			t.Fatal(err)
		}
		return d.GetCounter().GetValue()
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"paros_peer_messages_sent_total", value(r.metrics.PeerMessagesSent), 3},
		{"paros_peer_messages_received_total", value(r.metrics.PeerMessagesReceived), 4},
		{"paros_outbound_dropped_total", value(r.metrics.OutboundDropped), 1},
		{"paros_inbound_dropped_total", value(r.metrics.InboundDropped), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}
