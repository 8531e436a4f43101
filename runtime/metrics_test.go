// This file checks the names the scrub and CTRL metrics are exported under
// (dashboards and alerts depend on them): a fresh Metrics registers each
// series, with the labels it documents.
package runtime

import (
	"testing"
)

func TestScrubAndCtrlMetricNames(t *testing.T) {
	m := NewMetrics(nil)
	m.RepairedRecords.WithLabelValues("memory")
	m.CtrlDecisions.WithLabelValues("unrecoverable")
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
		"paros_repaired_records": "from", "paros_scrub_mismatches": "", "paros_ctrl_decisions": "case"} {
		if l, ok := got[name]; !ok || l != label {
			t.Errorf("metric %s: registered %v with label %q, want label %q", name, ok, l, label)
		}
	}
}
