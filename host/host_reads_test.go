// This file checks quorum reads and long-polls (docs/design/host.md
// "Reads") from outside package host. Hosts are driven by hand through
// fakeEnv (fakeenv_test.go); helpers are in host_test.go.
package host_test

import (
	"slices"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
)

// ---------------------------------------------------------------------------
// 3. Reads (docs/design/host.md "Reads").

// docs/design/host.md: "A read opens a quorum read under a random context …
// When the quorum confirms it, the host serves it from the fold: a page of
// records."
func TestReads_ServedAfterQuorumAnswers(t *testing.T) {
	// Arrange: three records written through leader 1.
	tun := testTunables()
	c := newCluster(t, tun, spec(jA, multi, first))
	c.elect(1, jA)
	c.call(1, write(1, jA, "a", "b", "c"))
	c.settle()

	// Act: a follower reads from position 1, two records at most.
	_, early := c.call(2, read(2, jA, 1, 2, 0))
	pre := envelopes(c.envs[2].outbox)
	c.settle()

	// Check.
	if early {
		t.Fatalf("read answered before its quorum answered")
	}
	if countType(pre, paxos.MsgPreRead) != 2 {
		t.Fatalf("read sent %v, want two PreReads", msgTypes(pre))
	}
	r := c.mustReply(2, 2)
	if !r.Read.Served || r.Read.BelowFloor || !slices.Equal(strs(r.Read.Records), []string{"a", "b"}) {
		t.Fatalf("read reply = %+v, want served [a b]", r.Read)
	}
	if r.Read.View.NextSeq != 4 || r.Read.FromSeq != 1 {
		t.Fatalf("read view = %+v from %d, want NextSeq 4 from 1", r.Read.View, r.Read.FromSeq)
	}
	if got := c.hosts[2].Counters().ReadsServed; got != 1 {
		t.Fatalf("ReadsServed = %d, want 1", got)
	}
}

// docs/design/host.md: "at the tail, an empty page that stays parked until
// records land …  When records land, the parked read opens a fresh quorum
// read before it is served, so every page it returns is linearizable at its
// own moment."
func TestReads_LongPollAnsweredWhenWriteLandsAfterFreshQuorumRead(t *testing.T) {
	// Arrange: "a" written; node 2 long-polls at position 2 and parks.
	c := newCluster(t, testTunables(), spec(jA, multi, first))
	c.elect(1, jA)
	c.call(1, write(1, jA, "a"))
	c.settle()
	c.call(2, read(2, jA, 2, 0, 1000))
	firstCtx := firstOf(t, c.envs[2].outbox, 1, paxos.MsgPreRead).Ctx
	c.settle()
	if _, ok := c.envs[2].reply(2); ok {
		t.Fatalf("a read at the tail was answered before anything landed")
	}

	// Act: "b" lands while node 2 cannot reach anyone.
	c.blocked = func(from, to paxos.NodeID) bool { return from == 2 }
	c.call(1, write(3, jA, "b"))
	c.settle()

	// Check: node 2 applied "b" and opened a fresh quorum read; it serves
	// nothing until that read's quorum answers.
	if c.hosts[2].Node(jA).State().NextSeq != 3 {
		t.Fatalf("node 2 did not learn the write")
	}
	if _, ok := c.envs[2].reply(2); ok {
		t.Fatalf("woken read answered without a fresh quorum read")
	}
	fresh := firstOf(t, c.envs[2].outbox, 1, paxos.MsgPreRead)
	if fresh.Ctx == firstCtx {
		t.Fatalf("woken read reused its context %d", fresh.Ctx)
	}

	// Act: the link heals.
	c.blocked = nil
	c.settle()

	// Check.
	r := c.mustReply(2, 2)
	if !r.Read.Served || !slices.Equal(strs(r.Read.Records), []string{"b"}) {
		t.Fatalf("read reply = %+v, want served [b]", r.Read)
	}
}

// docs/design/host.md: "at the tail, an empty page that stays parked until
// records land or the clamped wait runs out."
func TestReads_LongPollEndsWithEmptyServedPage(t *testing.T) {
	// Arrange: WaitMs 300 at 100 ms per tick is three ticks.
	c := newCluster(t, testTunables(), spec(jA, multi, first))
	c.elect(1, jA)
	c.call(1, write(1, jA, "a"))
	c.settle()
	c.call(2, read(2, jA, 2, 0, 300))
	c.settle()

	// Act: two ticks, then the third.
	for range 2 {
		c.hosts[2].OnTick()
		c.settle()
	}
	_, early := c.envs[2].reply(2)
	c.hosts[2].OnTick()

	// Check.
	if early {
		t.Fatalf("long-poll ended before its wait")
	}
	r := c.mustReply(2, 2)
	if !r.Read.Served || len(r.Read.Records) != 0 || r.Read.View.NextSeq != 2 {
		t.Fatalf("read reply = %+v, want an empty served page at NextSeq 2", r.Read)
	}
}

// docs/design/host.md: "the wait is clamped": a WaitMs above WaitMsMax waits
// only WaitMsMax.
func TestReads_LongPollClampedToWaitMsMax(t *testing.T) {
	tun := testTunables()
	tun.WaitMsMax = 200
	c := newCluster(t, tun, spec(jA, multi, first))
	c.elect(1, jA)
	c.call(2, read(2, jA, 1, 0, 60000))
	c.settle()

	for range 2 {
		c.hosts[2].OnTick()
		c.settle()
	}

	if r := c.mustReply(2, 2); !r.Read.Served || len(r.Read.Records) != 0 {
		t.Fatalf("read reply = %+v, want an empty served page after 2 ticks", r.Read)
	}
}

// docs/design/host.md: "truncated below FirstSeq".
func TestReads_BelowFirstSeqAfterTruncationIsTruncated(t *testing.T) {
	// Arrange: positions 1..3 written, then everything below 3 truncated.
	c := newCluster(t, testTunables(), spec(jA, multi, first))
	c.elect(1, jA)
	c.call(1, write(1, jA, "a", "b", "c"))
	c.settle()
	c.call(1, host.Call{ID: 2, Kind: host.CallTruncate, Truncate: journal.TruncateRequest{Journal: jA, UpTo: 3}})
	c.settle()
	if r := c.mustReply(1, 2); r.Reply.Outcome.Kind != journal.Trimmed {
		t.Fatalf("truncate reply = %+v, want Trimmed", r.Reply)
	}

	// Act.
	c.call(2, read(3, jA, 1, 0, 0))
	c.call(2, read(4, jA, 3, 0, 0))
	c.settle()

	// Check.
	r := c.mustReply(2, 3)
	if !r.Read.BelowFloor || len(r.Read.Records) != 0 || r.Read.View.FirstSeq != 3 {
		t.Fatalf("read below FirstSeq = %+v, want BelowFloor with FirstSeq 3", r.Read)
	}
	if r := c.mustReply(2, 4); r.Read.BelowFloor || !slices.Equal(strs(r.Read.Records), []string{"c"}) {
		t.Fatalf("read at FirstSeq = %+v, want [c]", r.Read)
	}
	if got := c.hosts[2].Counters().ReadsTruncated; got != 1 {
		t.Fatalf("ReadsTruncated = %d, want 1", got)
	}
}

// docs/design/host.md: "A read whose quorum does not answer within
// ReadRetryTicks is answered unserved."
func TestReads_UnreachablePeersUnservedAfterReadRetryTicks(t *testing.T) {
	// Arrange: node 1 alone; its peers never answer.
	tun := testTunables()
	h, env := newHost(t, 1, tun, spec(jA, multi, first))
	h.OnCall(read(1, jA, 1, 0, 0))

	// Act.
	for range tun.ReadRetryTicks - 1 {
		h.OnTick()
		env.completeAll()
	}
	_, early := env.reply(1)
	h.OnTick()
	env.completeAll()

	// Check.
	if early {
		t.Fatalf("read answered before ReadRetryTicks")
	}
	r, ok := env.reply(1)
	if !ok || r.Read.Served || r.Read.BelowFloor {
		t.Fatalf("read reply = %+v (answered %v), want unserved", r.Read, ok)
	}
	if got := h.Counters().ReadsUnserved; got != 1 {
		t.Fatalf("ReadsUnserved = %d, want 1", got)
	}
}
