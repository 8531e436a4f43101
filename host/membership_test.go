package host_test

import (
	"errors"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/storage"
)

var jC = journal.ID{Tenant: 7, Journal: 0xC}

// Journals created together (one registry page) are formatted in one
// synced commit, then served and elected like any journal.
func TestJournalsAddedTogetherAreFormattedInOneCommit(t *testing.T) {
	// Arrange: a cell serving jA.
	c := newCluster(t, testTunables(), spec(jA, multi, first))
	c.elect(1, jA)
	before := map[int]int{}
	for i, id := range c.ids {
		before[i] = c.envs[id].formatCalls
	}

	// Act: every member adds jB and jC in one call.
	for _, id := range c.ids {
		if err := c.hosts[id].AddJournals([]host.JournalSpec{spec(jB, multi, first), spec(jC, multi, first)}); err != nil {
			t.Fatalf("host %d: add journals: %v", id, err)
		}
	}
	c.settleTicks(10)

	// Check: one format call per member for both, each store formatted
	// once, both live, and each elected a leader.
	for i, id := range c.ids {
		env := c.envs[id]
		if got := env.formatCalls - before[i]; got != 1 {
			t.Errorf("host %d: %d format calls for two journals, want 1", id, got)
		}
		for _, j := range []journal.ID{jB, jC} {
			if env.formats[j] != 1 {
				t.Errorf("host %d: %s formatted %d times, want 1", id, j, env.formats[j])
			}
			if st, err := c.hosts[id].Status(j); st != host.Live {
				t.Errorf("host %d: %s is %v (%v), want live", id, j, st, err)
			}
		}
	}
	for _, j := range []journal.ID{jB, jC} {
		leaders := 0
		for _, id := range c.ids {
			if n := c.hosts[id].Node(j); n != nil && n.IsLeader() {
				leaders++
			}
		}
		if leaders != 1 {
			t.Errorf("%s has %d leaders after 10 ticks, want 1", j, leaders)
		}
	}
}

// A batch with one unacceptable spec adds nothing, and formats nothing.
func TestAnUnacceptableSpecAddsNoneOfItsBatch(t *testing.T) {
	h, env := newHost(t, 1, testTunables(), spec(jA, multi, first))
	for name, batch := range map[string][]host.JournalSpec{
		"a journal already served": {spec(jB, multi, first), spec(jA, multi, first)},
		"one journal twice":        {spec(jB, multi, first), spec(jB, multi, first)},
		"a claim not a first boot": {spec(jB, multi, first), spec(jC, multi, storage.ClaimExistingMember)},
		"an unset id":              {spec(jB, multi, first), spec(journal.ID{}, multi, first)},
	} {
		calls := env.formatCalls
		if err := h.AddJournals(batch); err == nil {
			t.Errorf("%s: accepted", name)
		}
		for _, j := range []journal.ID{jB, jC} {
			if st, _ := h.Status(j); st != 0 {
				t.Errorf("%s: %s was added (%v)", name, j, st)
			}
		}
		if env.formatCalls != calls {
			t.Errorf("%s: %d format calls", name, env.formatCalls-calls)
		}
	}
}

// A failed format leaves every journal of its commit down, named in the
// error, and the host serving the others.
func TestAFailedFormatLeavesItsJournalsDown(t *testing.T) {
	h, env := newHost(t, 1, testTunables(), spec(jA, multi, first))
	env.formatErr = map[journal.ID]error{jC: errors.New("disk full")}
	err := h.AddJournals([]host.JournalSpec{spec(jB, multi, first), spec(jC, multi, first)})
	if err == nil {
		t.Fatal("a failed format was not reported")
	}
	for _, j := range []journal.ID{jB, jC} {
		if st, _ := h.Status(j); st != host.Down {
			t.Errorf("%s is %v, want down (its commit failed)", j, st)
		}
	}
	if st, _ := h.Status(jA); st != host.Live {
		t.Errorf("jA is %v, want live", st)
	}
}

// Adding a journal leaves the quiet ones resting: the next tick visits the
// new journal, not the whole table.
func TestAnAddedJournalWakesNoQuietOne(t *testing.T) {
	// Arrange: two quiet journals the hosts no longer visit.
	c := newCluster(t, quietTunables(), spec(jA, multi, first), spec(jB, multi, first))
	c.elect(1, jA, jB)
	untilQuiet(t, c, jA)
	untilQuiet(t, c, jB)
	c.settleTicks(3)

	// Act: node 1 adds jC; one tick.
	if err := c.hosts[1].AddJournals([]host.JournalSpec{spec(jC, multi, first)}); err != nil {
		t.Fatal(err)
	}
	before := c.hosts[1].Counters().TickVisits
	c.hosts[1].OnTick()

	// Check: the tick visited jC alone.
	if got := c.hosts[1].Counters().TickVisits - before; got != 1 {
		t.Fatalf("the tick after adding one journal visited %d, want 1 (the new one)", got)
	}
}

// Journals removed together are all gone with their stores (a journal
// named twice or not served is no error), and the journals left keep
// serving theirs.
func TestJournalsRemovedTogetherAreAllGone(t *testing.T) {
	h, env := newHost(t, 1, testTunables(), spec(jA, multi, first), spec(jB, multi, first), spec(jC, multi, first))
	if err := h.RemoveJournals([]journal.ID{jA, jC, jA, {Tenant: 7, Journal: 0xD}}); err != nil {
		t.Fatal(err)
	}
	for _, j := range []journal.ID{jA, jC} {
		if st, _ := h.Status(j); st != 0 {
			t.Errorf("%s is still in the table (%v)", j, st)
		}
	}
	if st, _ := h.Status(jB); st != host.Live {
		t.Errorf("jB is %v, want live", st)
	}
	if got := h.Counters().Retired; got != 2 {
		t.Errorf("%d journals retired, want 2", got)
	}
	for j, want := range map[journal.ID]bool{jA: false, jB: true, jC: false} {
		if _, held := env.stores[j]; held != want {
			t.Errorf("store of %s held: %v, want %v", j, held, want)
		}
	}
}
