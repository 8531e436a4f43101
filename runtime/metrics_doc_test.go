// This file keeps docs/reference/metrics.md whole: every metric a fresh
// Metrics registers has a row in the reference's tables, each row names
// every label its metric has, and no row names a metric that is not
// registered. Names are taken from the registry's descriptors, not from a
// scrape, so a vector no series was created for yet is counted too.
package runtime

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// metricsDoc is the metrics reference, relative to this package's directory.
var metricsDoc = filepath.Join("..", "docs", "reference", "metrics.md")

var (
	// descName and descLabels read a prometheus.Desc's String form, which
	// is the only place a descriptor shows its name and labels.
	descName   = regexp.MustCompile(`fqName: "([^"]*)"`)
	descLabels = regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
	// docRow is a table row whose first cell is a metric name.
	docRow = regexp.MustCompile("^\\| `(paros_[a-z0-9_]+)` \\|")
)

// registeredMetrics returns every metric name registered on reg, with its
// variable labels.
func registeredMetrics(t *testing.T, reg *prometheus.Registry) map[string][]string {
	t.Helper()
	ch := make(chan *prometheus.Desc)
	go func() {
		reg.Describe(ch)
		close(ch)
	}()
	out := map[string][]string{}
	for d := range ch {
		s := d.String()
		name := descName.FindStringSubmatch(s)
		labels := descLabels.FindStringSubmatch(s)
		if name == nil || labels == nil {
			t.Fatalf("cannot read a descriptor: %s", s)
		}
		var ls []string
		for l := range strings.SplitSeq(labels[1], ",") {
			if l != "" {
				ls = append(ls, l)
			}
		}
		out[name[1]] = ls
	}
	return out
}

// documentedMetrics returns each metric row of the reference: name to row.
func documentedMetrics(t *testing.T) map[string]string {
	t.Helper()
	doc, err := os.ReadFile(metricsDoc)
	if err != nil {
		t.Fatalf("the metrics reference: %v", err)
	}
	rows := map[string]string{}
	for line := range strings.Lines(string(doc)) {
		if m := docRow.FindStringSubmatch(line); m != nil {
			if _, dup := rows[m[1]]; dup {
				t.Errorf("%s: metric %s has two rows", metricsDoc, m[1])
			}
			rows[m[1]] = line
		}
	}
	return rows
}

func TestMetricsReferenceCoversEveryMetric(t *testing.T) {
	// Arrange.
	m := NewMetrics(nil)

	// Act.
	registered := registeredMetrics(t, m.Registry)
	documented := documentedMetrics(t)

	// Check.
	if len(registered) == 0 {
		t.Fatal("a fresh Metrics registered nothing; is the descriptor walk broken?")
	}
	for _, name := range slices.Sorted(maps.Keys(registered)) {
		row, ok := documented[name]
		if !ok {
			t.Errorf("metric %s is registered but has no row in %s", name, metricsDoc)
			continue
		}
		cells := strings.Split(row, "|")
		if len(cells) < 4 {
			t.Errorf("%s: the row of %s has no labels cell: %q", metricsDoc, name, row)
			continue
		}
		for _, l := range registered[name] {
			if !strings.Contains(cells[3], "`"+l+"`") {
				t.Errorf("%s: the row of %s does not name its label %q", metricsDoc, name, l)
			}
		}
	}
	for name := range documented {
		if _, ok := registered[name]; !ok {
			t.Errorf("%s documents %s, which no Metrics registers", metricsDoc, name)
		}
	}
}
