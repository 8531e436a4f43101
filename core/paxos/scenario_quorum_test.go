package paxos_test

// This file holds the scenario tests of quorums: the quorum read, check
// quorum stepping down, and flexible and grid quorums. They are scripts over
// the test network of harness_test.go with the helpers of scenario_test.go;
// the oracles of oracles_test.go run after every step as well.

import (
	"fmt"
	"slices"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

// The quorum read. A node asks a Phase-1 quorum for
// vote watermarks, takes the max, and serves once its own fold covers it: an
// acknowledged write was voted by a Phase-2 quorum, which meets every Phase-1
// quorum. Node 3 lags one slot behind (it missed slot 2's Accept and Commit);
// its read settles on watermark 2 but answers only once catch-up folds slot 2.
// With no quorum reachable, the read expires unserved after ReadTTLTicks.
func TestScenarioQuorumRead(t *testing.T) {
	opts := scenarioOpts()
	opts.ReadTTLTicks = 4
	net := newNetwork(t, majority(3), journal.ModeMulti, opts, 7)
	n1, n2, n3 := net.node(1), net.node(2), net.node(3)

	// slot 1 everywhere; slot 2 chosen by nodes 1 and 2 only, its Commit to
	// node 3 delayed.
	net.electLeader(n1)
	propose(net, n1, unfenced("w1"))
	exchange(net)
	propose(net, n1, unfenced("w2"))
	take(net, match{typ: paxos.MsgAccept, to: 3})
	deliverOnly(net, match{typ: paxos.MsgAccept, to: 2})
	net.sync(n2)
	deliverOnly(net, match{typ: paxos.MsgAccepted, to: 1})
	net.sync(n1)
	late := take(net, match{typ: paxos.MsgCommit, to: 3})
	exchange(net)
	expectEq(t, "node 3 applied", n3.node.Applied(), paxos.Slot(1))
	expectEq(t, "node 2 watermark", n2.node.Acceptor().VoteWatermark(), paxos.Slot(2))

	// node 3 opens a read; the quorum answers watermark 2, which node 3's
	// fold does not cover yet, so nothing is answered.
	net.oracles.readOpened(42)
	if !n3.node.QuorumRead(42) {
		t.Fatalf("read not opened")
	}
	net.drain(n3)
	expectEq(t, "PreReads sent", len(inPool(net, match{typ: paxos.MsgPreRead, from: 3})), 2)
	exchange(net)
	if _, ok := n3.reads[42]; ok {
		t.Fatalf("read answered before node 3's fold covers the watermark")
	}

	// the late Commit arrives; node 3 catches up slot 2 and the read is served.
	deliverMsgs(net, late...)
	exchange(net)
	rs, ok := n3.reads[42]
	if !ok || !rs.OK || rs.Index != 2 {
		t.Fatalf("read state %+v (answered %v), want OK at index 2", rs, ok)
	}
	expectEq(t, "node 3 applied", n3.node.Applied(), paxos.Slot(2))

	// nodes 1 and 2 go down; node 3's next read finds no quorum and expires
	// after exactly ReadTTLTicks ticks.
	net.crash(n1)
	net.crash(n2)
	net.oracles.readOpened(43)
	n3.node.QuorumRead(43)
	net.drain(n3)
	for range opts.ReadTTLTicks - 1 {
		net.tick(n3)
	}
	if _, ok := n3.reads[43]; ok {
		t.Fatalf("read answered before its TTL with no quorum")
	}
	net.tick(n3)
	rs, ok = n3.reads[43]
	if !ok || rs.OK {
		t.Fatalf("read state %+v (answered %v), want expired unserved", rs, ok)
	}
	expectEq(t, "reads expired", n3.node.Counters().ReadsExpired, uint64(1))
}

// CheckQuorum. A leader that hears no Phase-2 quorum
// of acks for a whole election timeout cannot commit, and steps down so that
// a reachable node may lead. The window open when the partition begins may
// already hold acks, so the leader steps down at the end of the next window:
// within two (jittered) election timeouts of the cut. A leader that hears
// its quorum never steps down.
func TestScenarioCheckQuorumStepsDown(t *testing.T) {
	opts := scenarioOpts()
	net := newNetwork(t, majority(3), journal.ModeMulti, opts, 8)
	n1 := net.node(1)

	// a healthy leader keeps its office across many windows.
	net.electLeader(n1)
	net.settle(5 * opts.ElectionTicks)
	expectEq(t, "role while connected", n1.node.Role(), "leader")
	expectEq(t, "CheckQuorum step-downs", n1.node.Counters().CheckQuorumDowns, uint64(0))

	// isolate node 1 and tick it alone.
	net.cut = map[paxos.NodeID]bool{1: true}
	maxTimeout := 2*opts.ElectionTicks - 1 // the harness jitters in [E, 2E)
	ticks := 0
	for n1.node.IsLeader() && ticks < 2*maxTimeout {
		net.tick(n1)
		exchange(net)
		ticks++
	}
	if n1.node.IsLeader() {
		t.Fatalf("isolated leader still leads after %d ticks", ticks)
	}
	t.Logf("stepped down %d ticks after the cut", ticks)
	expectEq(t, "CheckQuorum step-downs", n1.node.Counters().CheckQuorumDowns, uint64(1))
	expectEq(t, "role", n1.node.Role(), "follower")
	expectEq(t, "propose after stepping down", n1.node.Propose(journal.Entry{Records: [][]byte{[]byte("x")}}).Status, paxos.NotLeader)
}

// Flexible Paxos §3: Phase-1 and Phase-2 quorums need only intersect each
// other (q1 + q2 > n). With n = 4, q1 = 3 and q2 = 2, a candidate needs three
// promises, and a leader then decides a slot with two votes.
//
// Flexible Paxos §4, the grid: members laid out row-major in rows × cols; a
// full row is a Phase-1 quorum and slot s's column (s mod cols) is its
// Phase-2 quorum. On a 2×2 grid over nodes 1–4 (rows {1,2},{3,4}; columns
// {1,3},{2,4}), an Accept for slot 1 goes to nodes 2 and 4 only, the leader
// (node 1, column 0) casts no vote in it, and a vote from outside the column
// decides nothing.
func TestScenarioFlexibleAndGridQuorums(t *testing.T) {
	t.Run("flexible q1=3 q2=2", func(t *testing.T) {
		sys, err := quorum.NewFlexible([]quorum.ID{1, 2, 3, 4}, 3, 2)
		if err != nil {
			t.Fatal(err)
		}
		net := newNetwork(t, sys, journal.ModeMulti, scenarioOpts(), 9)
		n1 := net.node(1)

		// two promises (node 1's own and node 2's) are not a Phase-1 quorum.
		campaign(net, n1)
		deliverOnly(net, match{typ: paxos.MsgPrepare, to: 2})
		net.sync(net.node(2))
		deliverOnly(net, match{typ: paxos.MsgPromise, to: 1})
		expectEq(t, "role after 2 promises", n1.node.Role(), "candidate")
		deliverOnly(net, match{typ: paxos.MsgPrepare, to: 3})
		net.sync(net.node(3))
		deliverOnly(net, match{typ: paxos.MsgPromise, to: 1})
		expectEq(t, "role after 3 promises", n1.node.Role(), "leader")
		take(net, match{})

		// two votes (node 1's own and node 2's) decide.
		w := unfenced("w")
		s := propose(net, n1, w)
		deliverOnly(net, match{typ: paxos.MsgAccept, to: 2})
		net.sync(net.node(2))
		take(net, match{typ: paxos.MsgAccept})
		deliverOnly(net, match{typ: paxos.MsgAccepted, to: 1})
		expectEq(t, "chosen with two votes", n1.node.ChosenIndex(), s)
		for _, id := range []paxos.NodeID{3, 4} {
			if _, _, ok := net.node(id).node.Acceptor().Record(s); ok {
				t.Fatalf("node %d voted", id)
			}
		}
		net.settle(5)
		expectFolded(t, net, s, w)
		net.oracles.converged()
	})

	t.Run("grid 2x2", func(t *testing.T) {
		sys, err := quorum.NewGrid([]quorum.ID{1, 2, 3, 4}, 2, 2)
		if err != nil {
			t.Fatal(err)
		}
		net := newNetwork(t, sys, journal.ModeMulti, scenarioOpts(), 10)
		n1 := net.node(1)
		net.electLeader(n1)
		w1, w2 := unfenced("w1"), unfenced("w2")

		// slot 1 is column 1 = {2, 4}: the Accept goes there only, and the
		// leader holds no vote for it. Slot 2 is column 0 = {1, 3}.
		s1 := propose(net, n1, w1)
		s2 := propose(net, n1, w2)
		var to1, to2 []paxos.NodeID
		for _, m := range inPool(net, match{typ: paxos.MsgAccept, from: 1}) {
			for _, e := range m.Entries {
				if e.Slot == s1 {
					to1 = append(to1, m.To)
				} else {
					to2 = append(to2, m.To)
				}
			}
		}
		slices.Sort(to1)
		expectEq(t, "slot 1 addressees", fmt.Sprint(to1), "[2 4]")
		expectEq(t, "slot 2 addressees", fmt.Sprint(to2), "[3]")
		// The leader records every round it opens (the durable frontier):
		// outside its column the record is a stray copy the tally never
		// counts (checked below: slot 1 waits for its own column).
		if b, c, ok := n1.node.Acceptor().Record(s1); !ok || b != n1.node.LeaderBallot() || !c.Equal(w1) {
			t.Fatalf("leader did not record the round it opened outside its column")
		}
		if _, _, ok := n1.node.Acceptor().Record(s2); !ok {
			t.Fatalf("leader did not vote in a slot of its own column")
		}

		// the column votes; a vote from node 3 (outside column 1) decides
		// nothing, node 2's alone is not the column, node 4's completes it.
		deliverOnly(net, match{typ: paxos.MsgAccept})
		syncAll(net)
		stepAcross(net, paxos.Message{Type: paxos.MsgAccepted, From: 3, To: 1, Ballot: n1.node.LeaderBallot(),
			Votes: []paxos.SlotVote{{Slot: s1, VHash: w1.Fingerprint()}}})
		expectEq(t, "chosen after an outside vote", n1.node.ChosenIndex(), paxos.Slot(0))
		deliverOnly(net, match{typ: paxos.MsgAccepted, from: 2, to: 1})
		expectEq(t, "chosen after half the column", n1.node.ChosenIndex(), paxos.Slot(0))
		deliverOnly(net, match{typ: paxos.MsgAccepted, from: 4, to: 1})
		expectEq(t, "chosen after the full column", n1.node.ChosenIndex(), s1)
		if _, c, ok := n1.node.Acceptor().Record(s1); !ok || !c.Equal(w1) {
			t.Fatalf("leader does not hold the value it decided outside its column")
		}
		deliverOnly(net, match{typ: paxos.MsgAccepted, from: 3, to: 1})
		expectEq(t, "chosen after slot 2's column", n1.node.ChosenIndex(), s2)
		net.settle(5)
		expectFolded(t, net, s1, w1)
		expectFolded(t, net, s2, w2)
		net.oracles.converged()
		net.oracles.durableQuorums()
	})
}
