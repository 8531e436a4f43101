package host_test

import (
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
)

// quietTunables is testTunables with quiescence on.
func quietTunables() host.Tunables {
	tun := testTunables()
	tun.StayAwake = false
	return tun
}

// tickCounting ticks every host once, counts the journal messages and the
// machine beats the tick sent, then settles.
func (c *cluster) tickCounting() (journalMsgs, beats int) {
	for _, id := range c.ids {
		c.hosts[id].OnTick()
	}
	for _, id := range c.ids {
		for _, d := range c.envs[id].outbox {
			for _, e := range d.Batch {
				if e.MachineBeat {
					beats++
				} else {
					journalMsgs++
				}
			}
		}
	}
	c.settle()
	return journalMsgs, beats
}

func quiescent(c *cluster, j journal.ID) bool {
	for _, id := range c.ids {
		if !c.hosts[id].Node(j).Quiescent() {
			return false
		}
	}
	return true
}

// untilQuiet ticks the cluster until journal j is quiet on every host.
func untilQuiet(t *testing.T, c *cluster, j journal.ID) {
	t.Helper()
	for i := 0; !quiescent(c, j); i++ {
		if i == 20 {
			t.Fatalf("%s never fell quiet", j)
		}
		c.settleTicks(1)
	}
}

func TestASettledJournalFallsQuietAndOnlyMachinesBeat(t *testing.T) {
	// Arrange: two journals led by node 1, one write each.
	c := newCluster(t, quietTunables(), spec(jA, multi, first), spec(jB, multi, first))
	c.elect(1, jA, jB)
	c.call(1, write(1, jA, "a"))
	c.call(1, write(2, jB, "b"))
	c.settle()
	c.mustReply(1, 1)
	c.mustReply(1, 2)

	// Act: tick until both fall quiet, then ten more ticks.
	for i := 0; !quiescent(c, jA) || !quiescent(c, jB); i++ {
		if i == 20 {
			t.Fatalf("the settled journals never fell quiet")
		}
		c.tickCounting()
	}
	msgs, beats := 0, 0
	for range 10 {
		m, b := c.tickCounting()
		msgs, beats = msgs+m, beats+b
	}

	// Check: no journal message at all; every host beat its two peers once
	// per beat period (HeartbeatTicks 1), for both journals at once.
	if msgs != 0 {
		t.Errorf("quiet journals sent %d messages in 10 ticks; want none", msgs)
	}
	if want := 10 * 3 * 2; beats != want {
		t.Errorf("%d machine beats in 10 ticks; want %d (one per peer per tick)", beats, want)
	}
	if n := c.hosts[1].Node(jA).Counters().Quiesced; n == 0 {
		t.Errorf("the leader's Quiesced counter is 0")
	}
}

func TestAWriteToAQuietJournalWakesItAndCommits(t *testing.T) {
	c := newCluster(t, quietTunables(), spec(jA, multi, first))
	c.elect(1, jA)
	untilQuiet(t, c, jA)

	c.call(1, write(3, jA, "woken"))
	c.settle()

	if r := c.mustReply(1, 3); r.Reply.Ambiguous() || r.Reply.NoVerdict != 0 {
		t.Fatalf("a write to a quiet journal: %+v", r.Reply)
	}
	for _, id := range c.ids {
		if c.hosts[id].Node(jA).Quiescent() {
			t.Errorf("node %d stayed quiet through a write", id)
		}
	}
}

func TestAQuietJournalWhoseLeaderMachineFallsSilentElectsAgain(t *testing.T) {
	// Arrange: a quiet journal led by node 1.
	tun := quietTunables()
	c := newCluster(t, tun, spec(jA, multi, first))
	c.elect(1, jA)
	untilQuiet(t, c, jA)

	// Act: node 1's machine goes silent (nothing it sends arrives).
	c.blocked = func(from, to paxos.NodeID) bool { return from == 1 }
	for range 4 * tun.ElectionTicks {
		for _, id := range []paxos.NodeID{2, 3} {
			c.hosts[id].OnTick()
		}
		c.settle()
	}

	// Check: a follower was woken by the silence and another node leads.
	woken := c.hosts[2].Counters().WokenByMachine + c.hosts[3].Counters().WokenByMachine
	if woken == 0 {
		t.Fatalf("no quiet journal was woken by its leader machine's silence")
	}
	if !c.hosts[2].Node(jA).IsLeader() && !c.hosts[3].Node(jA).IsLeader() {
		t.Fatalf("no new leader after the old one's machine went silent")
	}
}

func TestAQuietJournalStaysQuietWhileItsLeaderMachineBeats(t *testing.T) {
	tun := quietTunables()
	c := newCluster(t, tun, spec(jA, multi, first))
	c.elect(1, jA)
	untilQuiet(t, c, jA)

	woken := func() (n uint64) {
		for _, id := range c.ids {
			n += c.hosts[id].Node(jA).Counters().Woken + c.hosts[id].Counters().WokenByMachine
		}
		return n
	}
	before := woken()

	c.settleTicks(10 * tun.ElectionTicks)

	if n := woken() - before; n != 0 {
		t.Errorf("%d wakes while the leader's machine beat", n)
	}
	if !c.hosts[1].Node(jA).IsLeader() || !quiescent(c, jA) {
		t.Fatalf("a quiet journal with a beating leader machine woke or changed leader")
	}
	if n := c.hosts[2].Node(jA).Counters().Campaigns + c.hosts[3].Node(jA).Counters().Campaigns; n != 0 {
		t.Fatalf("followers campaigned %d times under a beating leader machine", n)
	}
}

func TestAReplicaNamedToAQuietJournalHearsItsLeader(t *testing.T) {
	// Arrange: a settled journal led by node 1, quiet on every host.
	const replica paxos.NodeID = 9
	c := newCluster(t, quietTunables(), spec(jA, multi, first))
	c.elect(1, jA)
	c.call(1, write(1, jA, "a"))
	c.settle()
	c.mustReply(1, 1)
	untilQuiet(t, c, jA)
	c.settleTicks(3) // the hosts stop visiting it

	// Act: every machine learns a replica list naming a new replica; the
	// hosts tick a few times.
	for _, id := range c.ids {
		if err := c.hosts[id].SetReplicas([]paxos.NodeID{replica}); err != nil {
			t.Fatalf("host %d: set replicas: %v", id, err)
		}
	}
	c.settleTicks(5)

	// Check: the leader beats the replica (its watermark is how a fresh
	// replica learns what to fetch). A quiet journal the host no longer
	// ticks would leave the replica unserved for good.
	if got := len(c.envs[1].sendLog[replica]); got == 0 {
		t.Fatalf("the leader sent the new replica nothing in 5 ticks")
	}
}
