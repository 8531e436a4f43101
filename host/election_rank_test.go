package host_test

import (
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/host"
)

// host.Tunables.ElectionTicks: "a follower of election rank r in its
// journal draws base + r·base/2 + [0, base/4)": with many journals booted
// together, each is won by one campaign, and the first choices spread over
// the members.
func TestManyJournalsBootedTogetherElectWithoutDuels(t *testing.T) {
	// Arrange: 30 journals on three hosts, booted together.
	var specs []journal.ID
	for i := range 30 {
		specs = append(specs, journal.ID{Tenant: 9, Journal: uint64(i + 1)})
	}
	c := newCluster(t, testTunables(), specFor(specs)...)

	// Act: tick everyone until every journal has a leader.
	for i := 0; ; i++ {
		if i == 100 {
			t.Fatalf("not every journal elected a leader in 100 ticks")
		}
		c.settleTicks(1)
		led := 0
		for _, j := range specs {
			for _, id := range c.ids {
				if c.hosts[id].Node(j).IsLeader() {
					led++
				}
			}
		}
		if led == len(specs) {
			break
		}
	}

	// Check: one campaign per journal, and every member leads some.
	leads := map[uint64]int{}
	for _, j := range specs {
		campaigns := 0
		for _, id := range c.ids {
			n := c.hosts[id].Node(j)
			campaigns += int(n.Counters().Campaigns)
			if n.IsLeader() {
				leads[uint64(id)]++
			}
		}
		if campaigns != 1 {
			t.Errorf("%s: %d campaigns, want 1", j, campaigns)
		}
	}
	if len(leads) != len(c.ids) {
		t.Errorf("leaders %v: want every member to lead some of 30 journals", leads)
	}
}

// specFor is spec (multi-writer, first boot) for each journal.
func specFor(js []journal.ID) []host.JournalSpec {
	out := make([]host.JournalSpec, len(js))
	for i, j := range js {
		out[i] = spec(j, multi, first)
	}
	return out
}
