package paxos_test

// This file holds the scenario tests of truncation: a decided truncation and
// the trim-point jump. They are scripts over the test network of
// harness_test.go with the helpers of scenario_test.go; the oracles of
// oracles_test.go run after every step as well.

import (
	"fmt"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
)

// Truncation is a decision. A client asks the leader to
// truncate; the leader proposes Control::Truncate into the next slot, and
// every node drops its prefix lazily, when its own walk reaches that slot:
// the floor becomes the slot holding the first retained record, and the
// journal state the dropped slots folded to is sealed in the same write. The
// promise is a scalar beside the log and never moves. A restarted node folds
// the retained log from the sealed state and lands where it was.
func TestScenarioDecidedTruncation(t *testing.T) {
	net := newNetwork(t, majority(3), journal.ModeSingle, scenarioOpts(), 5)
	n1, n2, n3 := net.node(1), net.node(2), net.node(3)

	// slots 1–4: set-leader, then [a b] at 1, [c d] at 3, [e f] at 5.
	net.electLeader(n1)
	propose(net, n1, journal.SetLeader(writerU, noLeader))
	propose(net, n1, fencedWrite(writerU, 1, "a", "b"))
	propose(net, n1, fencedWrite(writerU, 3, "c", "d"))
	propose(net, n1, fencedWrite(writerU, 5, "e", "f"))
	exchange(net)
	promise := n2.node.Promised()

	// propose truncate(up_to 5) at slot 5; nodes 2 and 3 vote.
	tr := journal.Truncate(writerU, 5)
	s := propose(net, n1, tr)
	expectEq(t, "truncate slot", s, paxos.Slot(5))
	deliverOnly(net, match{typ: paxos.MsgAccept})
	syncAll(net)

	// node 1 decides: its walk reaches slot 5 and its floor moves to slot 4,
	// which holds position 5. The others have voted but not learned.
	deliverOnly(net, match{typ: paxos.MsgAccepted, to: 1})
	expectEq(t, "node 1 floor", n1.node.Floor(), paxos.Slot(4))
	expectEq(t, "node 2 floor", n2.node.Floor(), paxos.Slot(1))
	expectEq(t, "node 3 floor", n3.node.Floor(), paxos.Slot(1))

	// the Commit reaches node 2, then node 3: each floor moves at its walk.
	net.sync(n1)
	deliverOnly(net, match{typ: paxos.MsgCommit, to: 2})
	expectEq(t, "node 2 floor", n2.node.Floor(), paxos.Slot(4))
	expectEq(t, "node 3 floor", n3.node.Floor(), paxos.Slot(1))
	deliverOnly(net, match{typ: paxos.MsgCommit, to: 3})
	expectEq(t, "node 3 floor", n3.node.Floor(), paxos.Slot(4))
	exchange(net)

	// every node judged the slot Trimmed to first_seq 5; the promise is
	// untouched; the prefix is gone from disk and the sealed state is the
	// fold of slots 1–3.
	expectFolded(t, net, s, tr)
	for _, tn := range net.nodes {
		out := tn.applied[s].Outcome
		expectEq(t, "truncate outcome", out.Kind, journal.Trimmed)
		expectEq(t, "first seq", out.View.FirstSeq, journal.Seq(5))
		expectEq(t, "promise", tn.node.Promised(), promise)
		expectEq(t, "durable floor", tn.store.FirstSlot(), paxos.Slot(4))
		if _, _, ok := tn.store.Accepted(3); ok {
			t.Fatalf("node %d still holds slot 3 below its floor", tn.id)
		}
		sealed := tn.store.SealedState()
		if sealed.Leader != writerU || sealed.Term() != 1 || sealed.NextSeq != 5 || sealed.FirstSeq != 1 {
			t.Fatalf("node %d sealed %s, want the fold of slots 1-3", tn.id, sealed)
		}
		expectEq(t, "durable promise", tn.store.InitialState().Promised, promise)
	}

	// restart node 2 from its disk: same floor, same state, same reads.
	before := n2.node.State()
	net.crash(n2)
	net.boot(n2)
	expectEq(t, "floor after restart", n2.node.Floor(), paxos.Slot(4))
	expectEq(t, "state after restart", n2.node.State(), before)
	expectEq(t, "promise after restart", n2.node.Promised(), promise)
	r := n2.node.ReadLog(1, 10, 1<<20)
	expectEq(t, "read below first_seq", r.Kind, paxos.ReadTruncated)
	expectEq(t, "resume at", r.View.FirstSeq, journal.Seq(5))
	expectEq(t, "retained records", fmt.Sprint(readPage(t, n2.node, 5)), "[e f]")

	// the journal goes on from the sealed base.
	propose(net, n1, fencedWrite(writerU, 7, "g"))
	net.settle(5)
	expectEq(t, "node 2 next seq", n2.node.State().NextSeq, journal.Seq(8))
	net.oracles.converged()
	net.oracles.durableQuorums()
}

// The node below the floor, and the trim-point jump.
// Node 3 is down while the cluster writes and truncates past its chosen
// prefix. When it returns, its CatchUpRequest is below the leader's floor,
// and the leader answers TrimmedTo{point, state} instead of a pretend replay.
// Node 3 persists the jump — floor = point, chosen index >= point-1, the
// state sealed — with its promise untouched, and asks again from the point.
// Until its walk reaches the Truncate, positions below what it holds are
// readable in the journal but not here (NotHeld); afterwards they are
// truncated. A TrimmedTo at or below its floor teaches it nothing.
func TestScenarioTrimPointJump(t *testing.T) {
	net := newNetwork(t, majority(3), journal.ModeSingle, scenarioOpts(), 6)
	n1, n2, n3 := net.node(1), net.node(2), net.node(3)

	// slot 1 is chosen everywhere; node 3 goes down.
	net.electLeader(n1)
	propose(net, n1, journal.SetLeader(writerU, noLeader))
	exchange(net)
	expectEq(t, "node 3 chosen", n3.node.ChosenIndex(), paxos.Slot(1))
	net.crash(n3)

	// nodes 1 and 2 choose three writes and truncate(up_to 5) at slot 5.
	propose(net, n1, fencedWrite(writerU, 1, "a", "b"))
	propose(net, n1, fencedWrite(writerU, 3, "c", "d"))
	propose(net, n1, fencedWrite(writerU, 5, "e", "f"))
	propose(net, n1, journal.Truncate(writerU, 5))
	exchange(net)
	expectEq(t, "node 1 floor", n1.node.Floor(), paxos.Slot(4))
	expectEq(t, "node 2 floor", n2.node.Floor(), paxos.Slot(4))
	expectEq(t, "read below first_seq at node 1", n1.node.ReadLog(1, 10, 1<<20).Kind, paxos.ReadTruncated)

	// node 3 returns; a heartbeat tells it slot 5 is chosen and it asks
	// node 1 for slots from 2.
	net.boot(n3)
	promise := n3.node.Promised()
	for len(inPool(net, match{typ: paxos.MsgHeartbeat, to: 3})) == 0 {
		net.tick(n1)
		net.sync(n1)
	}
	deliverOnly(net, match{typ: paxos.MsgHeartbeat, to: 3})
	reqs := take(net, match{typ: paxos.MsgCatchUpRequest, from: 3})
	if len(reqs) != 1 || reqs[0].Slot != 2 {
		t.Fatalf("catch-up requests %v, want one from slot 2", reqs)
	}

	// node 1 answers with its trim point, not a replay.
	deliverMsgs(net, reqs...)
	net.sync(n1)
	trims := take(net, match{typ: paxos.MsgTrimmedTo, to: 3})
	expectEq(t, "TrimmedTo answers", len(trims), 1)
	trim := trims[0]
	expectEq(t, "trim point", trim.Slot, paxos.Slot(4))
	expectEq(t, "trim state", trim.State, n1.store.SealedState())
	expectEq(t, "no replay", len(inPool(net, match{typ: paxos.MsgCatchUpResponse, to: 3})), 0)

	// node 3 jumps: floor 4, chosen 3, the state sealed at the point, the
	// promise as it was; it persists the jump and asks again from 4.
	deliverMsgs(net, trim)
	expectEq(t, "floor", n3.node.Floor(), paxos.Slot(4))
	expectEq(t, "chosen index", n3.node.ChosenIndex(), paxos.Slot(3))
	expectEq(t, "state", n3.node.State(), trim.State)
	expectEq(t, "promise", n3.node.Promised(), promise)
	expectEq(t, "trim jumps", n3.node.Counters().TrimJumps, uint64(1))
	net.sync(n3)
	expectEq(t, "durable floor", n3.store.FirstSlot(), paxos.Slot(4))
	expectEq(t, "durable sealed state", n3.store.SealedState(), trim.State)
	expectEq(t, "durable promise", n3.store.InitialState().Promised, promise)
	again := inPool(net, match{typ: paxos.MsgCatchUpRequest, from: 3})
	if len(again) != 1 || again[0].Slot != 4 {
		t.Fatalf("catch-up after the jump %v, want one from slot 4", again)
	}

	// reads: positions 1–4 are readable in the journal (first_seq is still 1
	// in node 3's fold) but node 3 no longer holds them.
	expectEq(t, "read at 1 on the jumped node", n3.node.ReadLog(1, 10, 1<<20).Kind, paxos.ReadNotHeld)
	expectEq(t, "read at 3 on the jumped node", n3.node.ReadLog(3, 10, 1<<20).Kind, paxos.ReadNotHeld)

	// the same TrimmedTo again, and one with a point below the floor, are ignored.
	n3.node.Step(trim)
	low := trim
	low.Slot = 2
	n3.node.Step(low)
	expectEq(t, "batch after stale trims", n3.node.HasReady(), false)
	expectEq(t, "trim jumps", n3.node.Counters().TrimJumps, uint64(1))
	expectEq(t, "floor", n3.node.Floor(), paxos.Slot(4))

	// catch-up brings slots 4 and 5; the walk reaches the Truncate and the
	// prefix is now truncated, not merely unheld.
	exchange(net)
	expectEq(t, "chosen index", n3.node.ChosenIndex(), paxos.Slot(5))
	expectEq(t, "state", n3.node.State(), n1.node.State())
	r := n3.node.ReadLog(1, 10, 1<<20)
	expectEq(t, "read at 1 after the walk", r.Kind, paxos.ReadTruncated)
	expectEq(t, "resume at", r.View.FirstSeq, journal.Seq(5))
	expectEq(t, "records", fmt.Sprint(readPage(t, n3.node, 5)), "[e f]")
	expectEq(t, "promise", n3.node.Promised(), promise)
	net.settle(5)
	net.oracles.converged()
}
