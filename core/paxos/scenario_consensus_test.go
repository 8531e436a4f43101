package paxos_test

// This file holds the scenario tests of choosing values: a leader's write,
// persist before send, recovery of the highest ballot's value and no-op
// fills. They are scripts over the test network of harness_test.go with the
// helpers of scenario_test.go; the oracles of oracles_test.go run after every
// step as well.

import (
	"fmt"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
)

// Paxos Made Simple §2.2. A proposer whose ballot a majority promised sends
// Accept requests; once a majority accepts a value it is chosen, and every
// learner learns the same value. Node 1 is elected, sets the writer fence
// and writes one batch of two records: every node folds both slots to the
// same outcome and serves the same records.
func TestScenarioLeaderChoosesWrite(t *testing.T) {
	net := newNetwork(t, majority(3), journal.ModeSingle, scenarioOpts(), 1)
	n1 := net.node(1)

	// elect: node 1 campaigns at ballot 1.1 and every node promises it.
	net.electLeader(n1)
	expectEq(t, "leader ballot", n1.node.LeaderBallot(), paxos.Ballot{Round: 1, Node: 1})
	for _, tn := range net.nodes {
		expectEq(t, fmt.Sprintf("node %d promise", tn.id), tn.node.Promised(), paxos.Ballot{Round: 1, Node: 1})
	}

	// propose set-leader(u), then write [a b] at position 1, and let the
	// network run.
	sl := journal.SetLeader(writerU, noLeader)
	wr := fencedWrite(writerU, 1, "a", "b")
	s1 := propose(net, n1, sl)
	s2 := propose(net, n1, wr)
	exchange(net)

	// every node chose, folded and judged both slots alike.
	expectEq(t, "slots", [2]paxos.Slot{s1, s2}, [2]paxos.Slot{1, 2})
	expectFolded(t, net, s1, sl)
	expectFolded(t, net, s2, wr)
	for _, tn := range net.nodes {
		expectEq(t, "set-leader outcome", tn.applied[s1].Outcome.Kind, journal.LeaderSet)
		out := tn.applied[s2].Outcome
		expectEq(t, "write outcome", out.String(), "accepted[1,+2)")
		expectEq(t, "next seq", tn.node.State().NextSeq, journal.Seq(3))
		expectEq(t, "records", fmt.Sprint(readPage(t, tn.node, 1)), "[a b]")
	}
	net.oracles.converged()
	net.oracles.durableQuorums()
}

// Persist before send. An acceptor's vote is a promise to
// remember: its Accepted may leave only once the vote is durable, and the
// leader's own vote counts for a decision only in memory until its disk
// syncs — the Commit waits for that sync. Here node 2's Accepted waits in
// its held batch until it syncs; then node 1 decides slot 1 from node 2's
// vote and its own unsynced one, and crashes before syncing. The Commit
// never left and no fold was released, so the slot was never counted: a new
// leader (node 3) whose quorum lacks node 2 chooses another value there, and
// node 2's stale vote is overwritten once it rejoins.
func TestScenarioPersistBeforeSend(t *testing.T) {
	net := newNetwork(t, majority(3), journal.ModeMulti, scenarioOpts(), 2)
	n1, n2, n3 := net.node(1), net.node(2), net.node(3)
	net.electLeader(n1)
	w, v := unfenced("w"), unfenced("v")

	// propose w at node 1: its vote is written, not synced; its Accepts are
	// EarlyOK and leave at once.
	s := propose(net, n1, w)
	expectEq(t, "node 1 unsynced batches", n1.store.Pending(), 1)
	if _, _, ok := n1.store.Accepted(s); ok {
		t.Fatalf("node 1's vote is durable before any sync")
	}
	expectEq(t, "Accepts in the pool", len(inPool(net, match{typ: paxos.MsgAccept, from: 1})), 2)

	// node 3's Accept is lost; node 2 votes. Its Accepted is held, not sent.
	take(net, match{typ: paxos.MsgAccept, to: 3})
	deliverOnly(net, match{typ: paxos.MsgAccept, to: 2})
	expectEq(t, "Accepted in the pool before sync", len(inPool(net, match{typ: paxos.MsgAccepted})), 0)
	expectEq(t, "Accepted held by node 2", len(heldBy(n2, match{typ: paxos.MsgAccepted, to: 1, slot: s})), 1)
	expectEq(t, "node 2 unsynced batches", n2.store.Pending(), 1)

	// sync node 2: the vote is durable, the Accepted leaves.
	net.sync(n2)
	if _, c, ok := n2.store.Accepted(s); !ok || !c.Equal(w) {
		t.Fatalf("node 2's durable record at %d: %v %s", s, ok, c)
	}
	expectEq(t, "Accepted in the pool after sync", len(inPool(net, match{typ: paxos.MsgAccepted, from: 2})), 1)

	// node 1 decides slot 1 from its own unsynced vote and node 2's.
	deliverOnly(net, match{typ: paxos.MsgAccepted, to: 1})
	expectEq(t, "node 1 chosen index", n1.node.ChosenIndex(), s)
	expectEq(t, "Commits in the pool", len(inPool(net, match{typ: paxos.MsgCommit})), 0)
	expectEq(t, "Commits held by node 1", len(heldBy(n1, match{typ: paxos.MsgCommit})), 2)
	if _, ok := net.oracles.chosen[s]; ok {
		t.Fatalf("a fold of slot %d was released before the leader's vote was durable", s)
	}

	// crash node 1 before it syncs: its vote, its Commits and its fold are gone.
	net.crash(n1)
	net.boot(n1)
	if _, _, ok := n1.store.Accepted(s); ok {
		t.Fatalf("node 1 kept an unsynced vote across a crash")
	}
	expectEq(t, "node 1 chosen index after boot", n1.node.ChosenIndex(), paxos.Slot(0))

	// node 2 is cut off; node 3 leads with node 1, finds nothing at slot 1
	// and chooses v there.
	net.cut = map[paxos.NodeID]bool{2: true}
	net.electLeader(n3)
	expectEq(t, "node 3 recovered", n3.node.Counters().Recovered, uint64(0))
	expectEq(t, "v's slot", propose(net, n3, v), s)
	exchange(net)
	expectFolded(t, net, s, v, n1, n3)

	// heal: node 2 learns v, and its stale vote for w is overwritten.
	net.cut = nil
	net.settle(10)
	expectFolded(t, net, s, v)
	if b, c, ok := n2.store.Accepted(s); !ok || !c.Equal(v) || b != n3.node.LeaderBallot() {
		t.Fatalf("node 2's record at %d after rejoining: %v %s %s", s, ok, b, c)
	}
	net.oracles.converged()
	net.oracles.durableQuorums()
}

// Paxos Made Simple §2.2, P2c. A proposer that wins Phase 1 must propose, at
// each slot, the value of the highest-numbered proposal reported by its
// quorum. Five nodes: leader A (node 1, ballot 1.1) gets x accepted at slot
// 1 by node 2 only; partitioned away from A, leader B (node 3, ballot 2.3)
// gets y accepted at slot 1 by node 4 only. Then C (node 5) campaigns with
// nodes 2 and 4, which report x at 1.1 and y at 2.3. In either order of the
// reports, C re-proposes y, and y is what every node folds.
func TestScenarioRecoveryHighestBallotWins(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first paxos.NodeID
	}{
		{"lower ballot reported first", 2},
		{"higher ballot reported first", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			net := newNetwork(t, majority(5), journal.ModeMulti, scenarioOpts(), 3)
			n1, n3, n5 := net.node(1), net.node(3), net.node(5)
			x, y := unfenced("x"), unfenced("y")

			// A proposes x at slot 1; only node 2's Accept arrives.
			net.electLeader(n1)
			s := propose(net, n1, x)
			deliverOnly(net, match{typ: paxos.MsgAccept, to: 2})
			syncAll(net)
			take(net, match{})

			// partition {1,2} | {3,4,5}: B proposes y at slot 1; only node 4's
			// Accept arrives.
			net.cut = map[paxos.NodeID]bool{1: true, 2: true}
			net.electLeader(n3)
			expectEq(t, "B's ballot", n3.node.LeaderBallot(), paxos.Ballot{Round: 2, Node: 3})
			expectEq(t, "B's slot", propose(net, n3, y), s)
			deliverOnly(net, match{typ: paxos.MsgAccept, to: 4})
			syncAll(net)
			take(net, match{})

			// partition {1,3} | {2,4,5}: C campaigns; nodes 2 and 4 promise.
			net.cut = map[paxos.NodeID]bool{1: true, 3: true}
			campaign(net, n5)
			deliverOnly(net, match{typ: paxos.MsgPrepare, from: 5})
			syncAll(net)
			reports := map[paxos.NodeID][]paxos.SlotCommand{}
			for _, m := range inPool(net, match{typ: paxos.MsgPromise, to: 5}) {
				reports[m.From] = m.Entries
			}
			if r := reports[2]; len(r) != 1 || r[0].Ballot != (paxos.Ballot{Round: 1, Node: 1}) || !r[0].Command.Equal(x) {
				t.Fatalf("node 2 reports %v, want x at 1.1", r)
			}
			if r := reports[4]; len(r) != 1 || r[0].Ballot != (paxos.Ballot{Round: 2, Node: 3}) || !r[0].Command.Equal(y) {
				t.Fatalf("node 4 reports %v, want y at 2.3", r)
			}

			// deliver the reports in the test's order: C leads after both and
			// re-proposes y.
			deliverOnly(net, match{typ: paxos.MsgPromise, from: tc.first, to: 5})
			expectEq(t, "C after one report", n5.node.Role(), "candidate")
			deliverOnly(net, match{typ: paxos.MsgPromise, to: 5})
			expectEq(t, "C after both reports", n5.node.Role(), "leader")
			expectEq(t, "C recovered", n5.node.Counters().Recovered, uint64(1))
			exchange(net)
			expectFolded(t, net, s, y, net.node(2), net.node(4), n5)

			// heal: everyone folds y.
			net.cut = nil
			net.settle(10)
			expectFolded(t, net, s, y)
			net.oracles.converged()
			net.oracles.durableQuorums()
		})
	}
}

// Paxos Made Simple §3 (gaps in the sequence). A new leader that finds a
// slot nobody in its quorum reports proposes a no-op there, so the log has no
// hole and later commands can be applied. Node 1 proposes w1, w2, w3 at slots
// 1–3; node 2 receives only the Accepts of slots 1 and 3; node 1 goes down.
// Node 3 wins with node 2's reports: it re-proposes w1 and w3 and fills slot
// 2 with a Noop. When node 1 returns, its own stale vote for w2 is
// overwritten by the chosen Noop.
func TestScenarioNewLeaderFillsHoleWithNoop(t *testing.T) {
	net := newNetwork(t, majority(3), journal.ModeMulti, scenarioOpts(), 4)
	n1, n2, n3 := net.node(1), net.node(2), net.node(3)
	w1, w2, w3 := unfenced("w1"), unfenced("w2"), unfenced("w3")

	// node 1 proposes three writes; only slots 1 and 3 reach node 2.
	net.electLeader(n1)
	propose(net, n1, w1)
	propose(net, n1, w2)
	propose(net, n1, w3)
	deliverOnly(net, match{typ: paxos.MsgAccept, to: 2, slot: 1})
	deliverOnly(net, match{typ: paxos.MsgAccept, to: 2, slot: 3})
	net.sync(n2)
	take(net, match{})
	net.sync(n1)
	net.crash(n1)

	// node 3 campaigns: node 2 reports slots 1 and 3, nobody reports slot 2.
	net.electLeader(n3)
	c := n3.node.Counters()
	expectEq(t, "re-proposed", c.Recovered, uint64(2))
	expectEq(t, "gap-filled", c.GapFills, uint64(1))
	exchange(net)
	expectFolded(t, net, 1, w1, n2, n3)
	expectFolded(t, net, 2, journal.Noop(), n2, n3)
	expectFolded(t, net, 3, w3, n2, n3)
	expectEq(t, "slot 2 outcome", n3.applied[2].Outcome.Kind, journal.NoopDone)
	expectEq(t, "w3's position", n3.applied[3].Outcome.Seq, journal.Seq(2))

	// node 1 returns with w2 at 1.1 on disk; it learns the Noop.
	if _, c, _ := n1.store.Accepted(2); !c.Equal(w2) {
		t.Fatalf("node 1's durable slot 2 before rejoining: %s", c)
	}
	net.boot(n1)
	net.settle(10)
	expectFolded(t, net, 2, journal.Noop())
	if b, c, _ := n1.store.Accepted(2); !c.Equal(journal.Noop()) || b != n3.node.LeaderBallot() {
		t.Fatalf("node 1's slot 2 after rejoining: %s at %s", c, b)
	}
	net.oracles.converged()
	net.oracles.durableQuorums()
}
