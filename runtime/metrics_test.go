// This file checks the names the scrub, CTRL, role and learner metrics are
// exported under (dashboards and alerts depend on them): a fresh Metrics
// registers each series, with the labels it documents; SetRole exports
// exactly one role at 1.
package runtime

import (
	"testing"
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
		"paros_quorum_reads": "outcome"} {
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
