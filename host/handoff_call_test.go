// This file checks the operator's handoff call (CallHandoff, Admin.Handoff)
// on the three-host cluster of fakeenv_test.go, driven by hand: a follower
// refuses it not_leader and names the leader; the leader hands its
// leadership to the node named, and the Relinquish leaves only once the
// batch of its open round is durable (persist before send);
// the successor then leads at the very ballot the old leader won (no
// election, no Phase 1: nobody is ticked after the first election), holds
// the write that was open at the handoff, and accepts the next one. An
// inherited leadership refuses to hand on again (one hop only), and so do
// a successor that is the leader itself or no acceptor. With no successor
// named the leader picks one of the others. DPaxos §4 (Relinquishment).
package host_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
)

// handoffCall is a CallHandoff of journal j to node to.
func handoffCall(id host.CallID, j journal.ID, to paxos.NodeID) host.Call {
	return host.Call{ID: id, Kind: host.CallHandoff, Handoff: host.HandoffRequest{Journal: j, To: to}}
}

func TestHandoff_FollowerRefusesWithTheLeadersName(t *testing.T) {
	// Arrange: node 1 leads.
	c := newCluster(t, testTunables(), spec(jA, multi, first))
	c.elect(1, jA)

	// Act.
	r, ok := c.call(2, handoffCall(1, jA, 3))
	unknown, _ := c.call(2, handoffCall(2, jB, 3))

	// Check: answered at once, nothing changed.
	if !ok || r.Kind != host.CallHandoff || r.Admin.Refusal != "not_leader" || r.Admin.LeaderHint != 1 {
		t.Fatalf("handoff at a follower: %+v (answered %v); want not_leader naming node 1", r, ok)
	}
	if unknown.Admin.Refusal != "unknown_journal" {
		t.Errorf("handoff of a journal not served: %+v", unknown.Admin)
	}
	if !c.hosts[1].Node(jA).IsLeader() {
		t.Errorf("node 1 stopped leading after a follower refused a handoff")
	}
}

func TestHandoff_LeaderHandsOnAfterItsRoundsAreDurable(t *testing.T) {
	// Arrange: node 1 leads at ballot b with one record chosen, and a
	// second write's round open whose persist has not completed.
	c := newCluster(t, testTunables(), spec(jA, multi, first))
	c.elect(1, jA)
	b := c.hosts[1].Node(jA).LeaderBallot()
	c.call(1, write(10, jA, "r1"))
	c.settle()
	c.call(1, write(11, jA, "r2"))
	if len(c.envs[1].persistsOf(jA)) == 0 {
		t.Fatalf("the open round's batch is durable already: nothing to wait for")
	}

	// Act: hand the leadership to node 3.
	r, ok := c.call(1, handoffCall(12, jA, 3))

	// Check: accepted at once, node 1 steps down, and no Relinquish left
	// before the batch it rides behind is durable.
	if !ok || r.Admin.Refusal != "" || r.Admin.Successor != 3 {
		t.Fatalf("handoff at the leader: %+v (answered %v); want handed to 3", r.Admin, ok)
	}
	if c.hosts[1].Node(jA).IsLeader() {
		t.Fatalf("node 1 still leads after handing on")
	}
	if n := countType(envelopes(c.envs[1].outbox), paxos.MsgRelinquish); n != 0 {
		t.Fatalf("%d Relinquish sent before the open round was durable", n)
	}

	// Act: node 1's persists complete.
	c.envs[1].completeAll()

	// Check: the Relinquish leaves, to node 3 only, at ballot b.
	var relinquish []sentDeliver
	for _, d := range c.envs[1].outbox {
		if countType(d.Batch, paxos.MsgRelinquish) > 0 {
			relinquish = append(relinquish, d)
		}
	}
	if len(relinquish) != 1 || relinquish[0].To != 3 {
		t.Fatalf("Relinquish sent as %+v; want one, to node 3", relinquish)
	}

	// Act: deliver everything, tick nobody; then write through node 3.
	c.settle()
	r2, _ := c.call(3, write(13, jA, "r3"))
	c.settle()

	// Check: node 3 leads at b (no election ran), the open write is
	// chosen there, and the next write is accepted after it.
	n3 := c.hosts[3].Node(jA)
	if !n3.IsLeader() || n3.LeaderBallot() != b || !n3.Inherited() {
		t.Fatalf("node 3: role %s ballot %v inherited %v; want leading at %v by handoff", n3.Role(), n3.LeaderBallot(), n3.Inherited(), b)
	}
	if h := c.hosts[1].Node(jA).LeaderHint(); h != 3 {
		t.Errorf("node 1's leader hint %d, want 3", h)
	}
	if r2.Kind != 0 {
		t.Fatalf("the write at node 3 was answered before its slot was chosen: %+v", r2)
	}
	w := c.mustReply(3, 13)
	if w.Reply.Outcome.Kind != journal.Accepted || w.Reply.Outcome.Seq != 3 {
		t.Fatalf("write after the handoff: %+v; want accepted at position 3 (r1, r2 before it)", w.Reply)
	}
	if _, ok := c.envs[1].reply(11); !ok {
		t.Errorf("the write open at the handoff was never answered at node 1")
	}
}

func TestHandoff_RefusalsNameTheRule(t *testing.T) {
	// Arrange: node 1 leads, then hands on to node 2.
	c := newCluster(t, testTunables(), spec(jA, multi, first))
	c.elect(1, jA)
	self, _ := c.call(1, handoffCall(1, jA, 1))
	stranger, _ := c.call(1, handoffCall(2, jA, 9))
	if r, _ := c.call(1, handoffCall(3, jA, 2)); r.Admin.Refusal != "" {
		t.Fatalf("handoff to 2: %+v", r.Admin)
	}
	c.settle()

	// Act: the inherited leader is asked to hand on again.
	again, _ := c.call(2, handoffCall(4, jA, 3))

	// Check: a bad successor is refused with the core's reason; the
	// inherited leadership (one hop only) re-elects itself first.
	for name, r := range map[string]host.Response{"self": self, "stranger": stranger} {
		if r.Admin.Refusal != "cannot_relinquish" || r.Admin.Detail == "" {
			t.Errorf("%s: %+v; want cannot_relinquish with a reason", name, r.Admin)
		}
	}
	if again.Admin.Refusal != "reelecting" || !strings.Contains(again.Admin.Detail, "one hop only") {
		t.Errorf("again: %+v; want reelecting under the one-hop rule", again.Admin)
	}
	n2 := c.hosts[2].Node(jA)
	if n2.Inherited() || n2.Counters().Reelections != 1 {
		t.Errorf("node 2: inherited %v, re-elections %d; want its own campaign", n2.Inherited(), n2.Counters().Reelections)
	}
	c.settle()
	if !n2.IsLeader() || n2.Inherited() || n2.LeaderBallot().Node != 2 {
		t.Fatalf("node 2: leader %v inherited %v at %v; want leading at a ballot of its own", n2.IsLeader(), n2.Inherited(), n2.LeaderBallot())
	}
	// Asked again, the re-elected leader hands on.
	if r, _ := c.call(2, handoffCall(5, jA, 3)); r.Admin.Refusal != "" {
		t.Fatalf("the re-elected leader's handoff: %+v", r.Admin)
	}
}

func TestHandoff_NoSuccessorNamedPicksAnotherAcceptor(t *testing.T) {
	// Arrange: node 1 leads.
	c := newCluster(t, testTunables(), spec(jA, multi, first))
	c.elect(1, jA)
	b := c.hosts[1].Node(jA).LeaderBallot()

	// Act.
	r, _ := c.call(1, handoffCall(1, jA, 0))
	c.settle()

	// Check: the successor named is another member, and it leads at b.
	to := r.Admin.Successor
	if r.Admin.Refusal != "" || to == 1 || !slices.Contains(members, to) {
		t.Fatalf("handoff with no successor named: %+v", r.Admin)
	}
	if n := c.hosts[to].Node(jA); !n.IsLeader() || n.LeaderBallot() != b {
		t.Fatalf("node %d: role %s ballot %v; want leading at %v", to, n.Role(), n.LeaderBallot(), b)
	}
}
