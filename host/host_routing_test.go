// This file checks, from outside package host, the routing of Delivers,
// the Observer, Inspect and the accessors, and determinism under a seed.
// Hosts are driven by hand through fakeEnv (fakeenv_test.go); helpers are
// in host_test.go.
package host_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
)

// ---------------------------------------------------------------------------
// 6. Routing (docs/design/host.md, OnDeliver).

// docs/design/host.md: OnDeliver "routes each message to its journal's node
// by the (tenant, journal) it carries; a message for an unknown, quarantined
// or down journal is dropped (the sender's resend repairs)."
func TestRouting_DeliverReachesOwnJournalOrIsDropped(t *testing.T) {
	// Arrange.
	h, env := newHost(t, 3, testTunables(), spec(jA, multi, first), spec(jB, multi, first))
	bA, bB := paxos.Ballot{Round: 1, Node: 2}, paxos.Ballot{Round: 4, Node: 2}
	prepare := func(from, to paxos.NodeID, b paxos.Ballot) paxos.Message {
		return paxos.Message{Type: paxos.MsgPrepare, From: from, To: to, Ballot: b, Slot: 1}
	}

	// Act: one Deliver carrying a message of each journal.
	h.OnDeliver(2, append(env1(jA, prepare(2, 3, bA)), env1(jB, prepare(2, 3, bB))...))

	// Check: each journal's node got its own message.
	if got := h.Node(jA).Promised(); got != bA {
		t.Fatalf("jA promised %v, want %v", got, bA)
	}
	if got := h.Node(jB).Promised(); got != bB {
		t.Fatalf("jB promised %v, want %v", got, bB)
	}
	byJournal := map[journal.ID]int{}
	for _, p := range env.queue {
		byJournal[p.Journal]++
	}
	if byJournal[jA] != 1 || byJournal[jB] != 1 {
		t.Fatalf("persists per journal = %v, want one each", byJournal)
	}
	if h.Counters().Dropped != 0 || h.Counters().Delivers != 1 {
		t.Fatalf("counters = %+v, want 1 Deliver, nothing dropped", h.Counters())
	}

	cases := []struct {
		name string
		from paxos.NodeID
		e    host.Envelope
	}{
		{"unknown journal", 2, host.Envelope{Journal: journal.ID{Tenant: 7, Journal: 0xC}, Msg: prepare(2, 3, paxos.Ballot{Round: 9, Node: 2})}},
		{"Msg.From is not the Deliver's sender", 1, host.Envelope{Journal: jA, Msg: prepare(2, 3, paxos.Ballot{Round: 9, Node: 2})}},
		{"Msg.To is not this node", 2, host.Envelope{Journal: jA, Msg: prepare(2, 1, paxos.Ballot{Round: 9, Node: 2})}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Act.
			h.OnDeliver(tc.from, []host.Envelope{tc.e})

			// Check.
			if got := h.Counters().Dropped; got != uint64(i+1) {
				t.Fatalf("Dropped = %d, want %d", got, i+1)
			}
			if h.Node(jA).Promised() != bA {
				t.Fatalf("a dropped message reached jA's node")
			}
		})
	}
}

// docs/design/host.md "Peer mailboxes": "A full lane evicts its own oldest
// message of the same kind … Nothing blocks the loop", and at most
// FlushDeliversMax Delivers of at most DeliveryBatch messages leave per peer
// per event.
func TestRouting_FullLaneEvictsOldestAndFlushIsBounded(t *testing.T) {
	// Arrange: a lane of 16; one Deliver of 8 per peer per event.
	tun := testTunables()
	tun.LaneMessagesMax, tun.DeliveryBatch, tun.FlushDeliversMax = 16, 8, 1
	h, env := newHost(t, 3, tun, spec(jA, multi, first))
	var burst []paxos.Message
	for i := range 40 {
		burst = append(burst, paxos.Message{Type: paxos.MsgPreRead, From: 2, To: 3, Ctx: uint64(1000 + i)})
	}

	// Act: 40 PreReads in one Deliver: 40 PreReadAcks for one lane.
	h.OnDeliver(2, env1(jA, burst...))

	// Check: 24 evicted, the 16 newest kept, 8 of them sent.
	if got := h.Counters().Evictions; got != 24 {
		t.Fatalf("Evictions = %d, want 24", got)
	}
	sent := env.takeSent()
	if len(sent) != 1 || len(sent[0].Batch) != 8 || sent[0].Batch[0].Msg.Ctx != 1024 || sent[0].Batch[7].Msg.Ctx != 1031 {
		t.Fatalf("sent %d Delivers, first %v; want one Deliver of acks 1024..1031", len(sent), sent)
	}

	// Act: the next event drains the next 8.
	h.OnTick()

	// Check.
	acks := envelopes(env.takeSent())
	if countType(acks, paxos.MsgPreReadAck) != 8 || acks[0].Msg.Ctx != 1032 {
		t.Fatalf("second event sent %v, want acks 1032..1039", msgTypes(acks))
	}
}

// ---------------------------------------------------------------------------
// Observation: Observer, Inspect and the accessors.

type recordingObserver struct{ got []paxos.Applied }

func (o *recordingObserver) Applied(node paxos.NodeID, j journal.ID, c paxos.Applied) {
	o.got = append(o.got, c)
}

// host.Observer: "Applied is a slot folded on this node, released once
// durable."
func TestObserver_SeesAppliedOnlyOnceDurable(t *testing.T) {
	// Arrange.
	c := newCluster(t, testTunables(), spec(jA, multi, first))
	c.elect(1, jA)
	obs := &recordingObserver{}
	c.hosts[1].SetObserver(obs)

	// Act: decide a write, its leader vote still outstanding.
	c.call(1, write(1, jA, "a"))
	vote := c.envs[1].persistsOf(jA)[0]
	for _, id := range []paxos.NodeID{2, 3} {
		c.deliver()
		c.envs[id].completeAll()
	}
	c.deliver()
	before := len(obs.got)
	c.envs[1].completeToken(vote.Token, nil)
	c.settle()

	// Check.
	if before != 0 {
		t.Fatalf("observer saw %d slots before the vote was durable", before)
	}
	if len(obs.got) != 1 || obs.got[0].Command.Kind != journal.KindWrite || obs.got[0].Outcome.Kind != journal.Accepted {
		t.Fatalf("observer saw %+v, want the write's slot", obs.got)
	}
}

// host.InspectReply: "a journal's consensus facts on this node"; and the
// host's accessors.
func TestInspectAndAccessors(t *testing.T) {
	// Arrange.
	c := newCluster(t, testTunables(), spec(jB, multi, first), spec(jA, multi, first))
	c.elect(1, jA)
	c.call(1, write(1, jA, "a"))
	c.settle()

	// Act.
	r, ok := c.call(2, host.Call{ID: 2, Kind: host.CallInspect, Inspect: host.InspectRequest{Journal: jA}})

	// Check.
	if !ok {
		t.Fatalf("Inspect not answered at once")
	}
	in := r.Inspect
	if in.Node != 2 || in.Role != "follower" || in.Leader != 1 || in.ChosenIndex != 1 || in.Applied != 1 ||
		in.Floor != 1 || in.State.NextSeq != 2 || in.Quarantined || in.UnknownJournal {
		t.Fatalf("inspect = %+v", in)
	}
	h := c.hosts[2]
	if h.ID() != 2 || !slices.Equal(h.Journals(), []journal.ID{jA, jB}) {
		t.Fatalf("ID %d journals %v, want 2 and [jA jB] sorted", h.ID(), h.Journals())
	}
	if st, err := h.Status(journal.ID{Tenant: 1, Journal: 1}); st != 0 || err != nil {
		t.Fatalf("status of an unknown journal = %v, %v", st, err)
	}
	if h.Node(journal.ID{Tenant: 1, Journal: 1}) != nil {
		t.Fatalf("Node of an unknown journal is not nil")
	}
	for _, s := range []host.JournalStatus{host.Live, host.Quarantined, host.Down, 0} {
		if s.String() == "" {
			t.Fatalf("status %d has no name", s)
		}
	}
	if host.Production().ElectionTicks != 10 || host.Production().Validate() != nil {
		t.Fatalf("Production() = %+v", host.Production())
	}
}

// host.Env.Rand: "The host draws every random number it needs (election
// jitter, read contexts) from Env.Rand": two hosts on the same seed make
// the same choices, so a run replays.
func TestDeterminism_SameSeedSameRun(t *testing.T) {
	run := func() []string {
		c := newCluster(t, testTunables(), spec(jA, multi, first))
		c.elect(2, jA)
		c.call(2, write(1, jA, "a"))
		c.call(3, read(2, jA, 1, 0, 0))
		c.settle()
		var out []string
		for _, id := range members {
			for _, to := range members {
				for _, d := range c.envs[id].sendLog[to] {
					for _, e := range d {
						out = append(out, e.Msg.String())
					}
				}
			}
		}
		return out
	}
	a, b := run(), run()
	if !slices.Equal(a, b) {
		t.Fatalf("two runs on one seed differ:\n%s\n---\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
}
