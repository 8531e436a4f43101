// This file checks persist before send (the Ready contract in
// docs/design/core.md and docs/design/host.md) from outside package host:
// batches release in order only once durable, the leader's verdict waits for
// its own vote, and a read reveals no undurable decision. Hosts are driven by
// hand through fakeEnv (fakeenv_test.go); helpers are in host_test.go.
package host_test

import (
	"slices"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
)

// ---------------------------------------------------------------------------
// 1. Persist before send.

// Nothing a batch produces (messages, client replies, read answers) leaves
// before that batch's writes and every earlier batch's writes are on disk,
// and one journal's batches persist in order. The exceptions are the
// messages that promise nothing and announce no decision (Accept, PreRead,
// CatchUpRequest): they may leave before their batch is durable, since a
// crash that loses the batch leaves no peer relying on it.
func TestPersistBeforeSend_BatchesReleaseInOrderOnlyWhenDurable(t *testing.T) {
	// Arrange: node 3 alone. Node 2 asks it to promise 1.2, then 2.2 (two
	// batches, each a SetPromise write and a Promise); then node 2, now
	// leading at 2.2, announces commit 5, which node 3 does not hold (a
	// third batch: a HeartbeatAck, held, and a CatchUpRequest, EarlyOK).
	h, env := newHost(t, 3, testTunables(), spec(jA, multi, first))
	b1, b2 := paxos.Ballot{Round: 1, Node: 2}, paxos.Ballot{Round: 2, Node: 2}

	// Act.
	h.OnDeliver(2, env1(jA, paxos.Message{Type: paxos.MsgPrepare, From: 2, To: 3, Ballot: b1, Slot: 1}))
	h.OnDeliver(2, env1(jA, paxos.Message{Type: paxos.MsgPrepare, From: 2, To: 3, Ballot: b2, Slot: 1}))
	h.OnDeliver(2, env1(jA, paxos.Message{Type: paxos.MsgHeartbeat, From: 2, To: 3, Ballot: b2, Commit: 5}))
	h.OnCall(read(1, jA, 1, 0, 0))

	// Check: only the EarlyOK messages left (the CatchUpRequest, then the
	// read's PreReads), and no reply.
	early := envelopes(env.takeSent())
	if got, want := msgTypes(early), []paxos.MsgType{paxos.MsgCatchUpRequest, paxos.MsgPreRead, paxos.MsgPreRead}; !slices.Equal(sortedTypes(got), sortedTypes(want)) {
		t.Fatalf("before any persist completed, sent %v; want only %v", got, want)
	}
	if len(env.replies) != 0 {
		t.Fatalf("a reply left before its batch was durable: %v", env.replies)
	}
	if len(env.queue) != 2 {
		t.Fatalf("outstanding persists = %d, want 2 (one per promise)", len(env.queue))
	}

	// Act: the second batch completes first.
	env.complete(1, nil)

	// Check: nothing is released while batch 1 is not durable.
	if sent := env.takeSent(); len(sent) != 0 {
		t.Fatalf("batch 2 durable before batch 1 released %v", msgTypes(envelopes(sent)))
	}

	// Act: the first batch completes.
	env.complete(0, nil)

	// Check: everything held leaves in batch order: Promise 1.2 (batch 1),
	// Promise 2.2 (batch 2), HeartbeatAck (batch 3).
	held := envelopes(env.takeSent())
	if got, want := msgTypes(held), []paxos.MsgType{paxos.MsgPromise, paxos.MsgPromise, paxos.MsgHeartbeatAck}; !slices.Equal(got, want) {
		t.Fatalf("released %v, want %v", got, want)
	}
	if held[0].Msg.Ballot != b1 || held[1].Msg.Ballot != b2 {
		t.Fatalf("promises released out of batch order: %v then %v", held[0].Msg.Ballot, held[1].Msg.Ballot)
	}
}

func sortedTypes(ts []paxos.MsgType) []paxos.MsgType {
	out := slices.Clone(ts)
	slices.Sort(out)
	return out
}

// Inside a batch the order is: persist the Writes, send the Messages, then
// apply Applied and answer each held call with the verdict its slot
// folded to. The leader's Accepts are EarlyOK and overlap its own
// fsync; the decision (Commit messages and the client's verdict) waits for
// the leader's vote to be durable, even when a later batch is durable first.
func TestPersistBeforeSend_LeaderVerdictWaitsForItsOwnVote(t *testing.T) {
	// Arrange: a settled cluster led by node 1.
	c := newCluster(t, testTunables(), spec(jA, multi, first))
	c.elect(1, jA)
	leader := c.envs[1]

	// Act: a write reaches the leader.
	_, answered := c.call(1, write(10, jA, "r1", "r2"))

	// Check: the Accepts left at once, the leader's vote is still
	// outstanding, and the call is parked.
	if answered {
		t.Fatalf("write answered before anything was durable")
	}
	sent := leader.takeSent()
	if got := msgTypes(envelopes(sent)); !slices.Equal(got, []paxos.MsgType{paxos.MsgAccept, paxos.MsgAccept}) {
		t.Fatalf("leader sent %v, want the two EarlyOK Accepts", got)
	}
	vote := leader.persistsOf(jA)
	if len(vote) != 1 {
		t.Fatalf("leader persists outstanding = %d, want 1 (its own vote)", len(vote))
	}

	// Act: the followers vote; their Accepted waits for their own persist.
	for _, d := range sent {
		c.hosts[d.To].OnDeliver(d.From, d.Batch)
	}
	for _, id := range []paxos.NodeID{2, 3} {
		if s := c.envs[id].takeSent(); len(s) != 0 {
			t.Fatalf("follower %d sent %v before its vote was durable", id, msgTypes(envelopes(s)))
		}
		c.envs[id].completeAll()
	}
	c.deliver() // the Accepteds reach the leader: the slot is decided

	// Check: decided in memory, but nothing announced while the leader's
	// vote is not durable.
	if _, ok := leader.reply(10); ok {
		t.Fatalf("verdict left before the leader's vote was durable")
	}
	if s := leader.takeSent(); len(s) != 0 {
		t.Fatalf("leader sent %v before its vote was durable", msgTypes(envelopes(s)))
	}
	later := leader.persistsOf(jA)
	if len(later) != 2 {
		t.Fatalf("leader persists outstanding = %d, want 2 (vote, chosen index)", len(later))
	}

	// Act: the later batch (the chosen index) completes first.
	leader.completeToken(later[1].Token, nil)

	// Check: still nothing.
	if _, ok := leader.reply(10); ok {
		t.Fatalf("verdict left before the earlier batch was durable")
	}
	if s := leader.takeSent(); len(s) != 0 {
		t.Fatalf("leader sent %v before the earlier batch was durable", msgTypes(envelopes(s)))
	}

	// Act: the leader's vote completes.
	leader.completeToken(later[0].Token, nil)

	// Check: the Commits leave and the call gets the slot's verdict.
	if got := msgTypes(envelopes(leader.takeSent())); !slices.Equal(got, []paxos.MsgType{paxos.MsgCommit, paxos.MsgCommit}) {
		t.Fatalf("leader released %v, want two Commits", got)
	}
	r := c.mustReply(1, 10)
	if r.Kind != host.CallWrite || r.Reply.Outcome.Kind != journal.Accepted || r.Reply.Outcome.Seq != 1 || r.Reply.Outcome.Count != 2 {
		t.Fatalf("reply = %+v, want Accepted [1,+2)", r)
	}
	if r.Reply.Ambiguous() || r.Reply.LeaderHint != 1 {
		t.Fatalf("reply ambiguous=%v hint=%d, want a verdict from leader 1", r.Reply.Ambiguous(), r.Reply.LeaderHint)
	}
}

// No decision is announced before the vote behind it is on disk, and that
// holds for reads too: a page served from the leader's fold may carry only
// records whose decision is durable. A read confirmed in an early batch but
// released after the leader decided a later write (its own vote for that
// write not yet durable) must not reveal the later write.
func TestPersistBeforeSend_ReadDoesNotRevealUndurableDecision(t *testing.T) {
	// Regression test: this was a bug, found by this test and fixed.

	// Arrange: node 1 leads alone (node 2 answers by hand); w0 in slot 1,
	// the leader's vote durable, node 2's vote delivered: slot 1 decided,
	// its chosen-index batch outstanding.
	h, env, _ := soloLeader(t, testTunables(), multi)
	h.OnCall(write(1, jA, "w0"))
	env.completeAll()
	acc0 := firstOf(t, env.takeSent(), 2, paxos.MsgAccept)
	h.OnDeliver(2, env1(jA, acceptedFor(acc0, 2)))
	if len(env.queue) != 1 {
		t.Fatalf("outstanding = %d, want the chosen-index batch", len(env.queue))
	}
	// A read opens and its quorum confirms it (covered: slot 1 applied).
	h.OnCall(read(2, jA, 1, 0, 0))
	pre := firstOf(t, env.takeSent(), 2, paxos.MsgPreRead)
	h.OnDeliver(2, env1(jA, paxos.Message{Type: paxos.MsgPreReadAck, From: 2, To: 1, Ctx: pre.Ctx, Watermark: 1}))
	// w1 is proposed (the leader's vote outstanding) and decided.
	h.OnCall(write(3, jA, "w1"))
	acc1 := firstOf(t, env.takeSent(), 2, paxos.MsgAccept)
	h.OnDeliver(2, env1(jA, acceptedFor(acc1, 2)))

	// Act: only the first batch (w0's chosen index) becomes durable.
	env.complete(0, nil)

	// Check: w0's writer has its verdict; the read, if answered, shows no
	// record of w1, whose leader vote is still outstanding.
	if r := env.replies[1]; r.Reply.Outcome.Kind != journal.Accepted {
		t.Fatalf("w0 reply = %+v, want Accepted", r)
	}
	if _, ok := env.replies[3]; ok {
		t.Fatalf("w1 answered before the leader's vote was durable")
	}
	if r, ok := env.replies[2]; ok && slices.Contains(strs(r.Read.Records), "w1") {
		t.Fatalf("read served %q before w1's leader vote was durable", strs(r.Read.Records))
	}
}
