package paxos_test

// This file holds the scenario tests of cooperative leader handoff
// (node_handoff.go; DPaxos, Nawab, Agrawal and El Abbadi, SIGMOD 2018,
// "Relinquishment"): a leader that is alive hands its Phase-2 authority on
// instead of letting the cell elect, and the successor continues Phase 2 at
// the same ballot without a Phase 1. Each test opens with the sentence of the
// rule it plays, in the style of scenario_test.go.

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
)

// handoffOpts are scenarioOpts with an explicit fence bound.
func handoffOpts() paxos.Options {
	opts := scenarioOpts()
	opts.HandoffFenceElections = 2
	return opts
}

// relinquishOf hands tn's leadership to successor, syncs tn so the
// Relinquish leaves, and takes it out of the pool (exactly one).
func relinquishOf(t *testing.T, net *network, tn *tnode, successor paxos.NodeID) paxos.Message {
	t.Helper()
	if err := tn.node.RelinquishTo(successor); err != nil {
		t.Fatalf("node %d relinquish to %d: %v", tn.id, successor, err)
	}
	net.drain(tn)
	net.sync(tn)
	ms := take(net, match{typ: paxos.MsgRelinquish, from: tn.id, to: successor})
	if len(ms) != 1 {
		t.Fatalf("Relinquish messages from %d to %d: %v", tn.id, successor, ms)
	}
	return ms[0]
}

// cloneMsg copies m deeply enough that editing its entry lists leaves m alone.
func cloneMsg(m paxos.Message) paxos.Message {
	m.Entries = slices.Clone(m.Entries)
	m.Decided = slices.Clone(m.Decided)
	return m
}

// DPaxos, Relinquishment. A leader hands on: it is a follower in the same
// call, pointing at its successor; the successor leads at the very same
// ballot, with no Phase 1, re-proposes the open round it was told about,
// and goes on choosing new values. Node 1 chooses w1, opens w2 (its Accepts
// lost) and hands on to node 2, which decides w2 and then chooses w3.
func TestHandoffSuccessorContinuesPhase2(t *testing.T) {
	net := newNetwork(t, majority(3), journal.ModeMulti, handoffOpts(), 101)
	n1, n2 := net.node(1), net.node(2)
	w1, w2, w3 := unfenced("w1"), unfenced("w2"), unfenced("w3")

	// node 1 chooses w1 everywhere; w2 is open at slot 2, its Accepts lost.
	net.electLeader(n1)
	b := n1.node.LeaderBallot()
	propose(net, n1, w1)
	exchange(net)
	expectEq(t, "w2's slot", propose(net, n1, w2), paxos.Slot(2))
	take(net, match{typ: paxos.MsgAccept})
	expectEq(t, "node 1 may relinquish", n1.node.CanRelinquish(), error(nil))

	// hand on to node 2: node 1 follows in the same call.
	if err := n1.node.RelinquishTo(2); err != nil {
		t.Fatalf("relinquish: %v", err)
	}
	expectEq(t, "node 1 leads after relinquishing", n1.node.IsLeader(), false)
	expectEq(t, "node 1's hint", n1.node.LeaderHint(), paxos.NodeID(2))
	expectEq(t, "node 1 relinquished", n1.node.Counters().Relinquished, uint64(1))
	res := n1.node.Propose(journal.Entry{Records: [][]byte{[]byte("late")}})
	expectEq(t, "proposal at the old leader", res.Status, paxos.NotLeader)
	expectEq(t, "old leader's answer hint", res.LeaderHint, paxos.NodeID(2))
	net.drain(n1)
	net.sync(n1)
	rel := take(net, match{typ: paxos.MsgRelinquish, from: 1, to: 2})
	if len(rel) != 1 {
		t.Fatalf("Relinquish messages: %v", rel)
	}
	r := rel[0]
	expectEq(t, "relinquished ballot", r.Ballot, b)
	expectEq(t, "tail [from, next)", [2]paxos.Slot{r.Slot, r.Next}, [2]paxos.Slot{2, 3})
	expectEq(t, "pending entries", len(r.Entries), 1)
	if !r.Entries[0].Command.Equal(w2) || r.Entries[0].Slot != 2 {
		t.Fatalf("pending entry %v, want w2 at slot 2", r.Entries[0])
	}

	// node 2 takes the authority: same ballot, inherited, no Prepare.
	expectEq(t, "node 2 leads before the Relinquish", n2.node.IsLeader(), false)
	deliverMsgs(net, r)
	expectEq(t, "node 2 leads", n2.node.IsLeader(), true)
	expectEq(t, "node 2's ballot", n2.node.LeaderBallot(), b)
	expectEq(t, "node 2 inherited", n2.node.Inherited(), true)
	expectEq(t, "node 2 installed", n2.node.Counters().Inherited, uint64(1))
	expectEq(t, "node 2 campaigns", n2.node.Counters().Campaigns, uint64(0))
	expectEq(t, "Prepares pooled by node 2", len(inPool(net, match{typ: paxos.MsgPrepare, from: 2})), 0)
	expectEq(t, "Prepares held by node 2", len(heldBy(n2, match{typ: paxos.MsgPrepare, from: 2})), 0)

	// the open round is decided, and every node folds it.
	exchange(net)
	expectFolded(t, net, 2, w2)
	expectEq(t, "node 2's ballot after the round", n2.node.LeaderBallot(), b)

	// a new proposal at the successor is chosen and folded everywhere.
	expectEq(t, "w3's slot", propose(net, n2, w3), paxos.Slot(3))
	exchange(net)
	expectFolded(t, net, 1, w1)
	expectFolded(t, net, 3, w3)
	for _, tn := range net.nodes {
		expectEq(t, "promise", tn.node.Promised(), b)
	}

	// the inherited fence is covered: the successor keeps its office.
	net.settle(4 * 2 * net.opts.ElectionTicks)
	expectEq(t, "node 2 leads after the settle", n2.node.IsLeader(), true)
	expectEq(t, "handoff resignations", n2.node.Counters().HandoffResigned, uint64(0))
	net.oracles.converged()
	net.oracles.durableQuorums()
}

// Rule 4, the durable frontier. The Relinquish names a frontier every round
// below which is on the relinquisher's disk, so it waits for its batch to be
// durable (it is not EarlyOK); and a successor's Accept, at a ballot it does
// not own, waits for its own record of the round, while an elected leader's
// Accept leaves at once.
func TestHandoffWaitsForDurability(t *testing.T) {
	net := newNetwork(t, majority(3), journal.ModeMulti, handoffOpts(), 102)
	n1, n2 := net.node(1), net.node(2)
	net.electLeader(n1)

	// the elected leader's Accepts are EarlyOK and leave before any sync.
	propose(net, n1, unfenced("w1"))
	acc := inPool(net, match{typ: paxos.MsgAccept, from: 1})
	expectEq(t, "elected leader's Accepts pooled", len(acc), 2)
	for _, m := range acc {
		expectEq(t, "elected leader's Accept EarlyOK", m.EarlyOK(), true)
	}
	take(net, match{typ: paxos.MsgAccept})

	// with w1's record unsynced, the Relinquish is held until node 1 syncs.
	if err := n1.node.RelinquishTo(2); err != nil {
		t.Fatalf("relinquish: %v", err)
	}
	net.drain(n1)
	expectEq(t, "Relinquish pooled before sync", len(inPool(net, match{typ: paxos.MsgRelinquish})), 0)
	held := heldBy(n1, match{typ: paxos.MsgRelinquish, to: 2})
	expectEq(t, "Relinquish held by node 1", len(held), 1)
	expectEq(t, "Relinquish EarlyOK", held[0].EarlyOK(), false)
	net.sync(n1)
	expectEq(t, "Relinquish pooled after sync", len(inPool(net, match{typ: paxos.MsgRelinquish, to: 2})), 1)
	deliverOnly(net, match{typ: paxos.MsgRelinquish, to: 2})
	expectEq(t, "node 2 leads", n2.node.IsLeader(), true)

	// the successor's Accepts (re-proposed w1, new w2) wait for its disk.
	propose(net, n2, unfenced("w2"))
	expectEq(t, "successor's Accepts pooled before sync", len(inPool(net, match{typ: paxos.MsgAccept, from: 2})), 0)
	sacc := heldBy(n2, match{typ: paxos.MsgAccept, from: 2})
	if len(sacc) == 0 {
		t.Fatalf("node 2 holds no Accept")
	}
	for _, m := range sacc {
		expectEq(t, "successor's Accept ballot owner", m.Ballot.Node, paxos.NodeID(1))
		expectEq(t, "successor's Accept EarlyOK", m.EarlyOK(), false)
	}
	net.sync(n2)
	if len(inPool(net, match{typ: paxos.MsgAccept, from: 2})) == 0 {
		t.Fatalf("node 2's Accepts did not leave after its sync")
	}
	exchange(net)
	expectFolded(t, net, 1, unfenced("w1"))
	expectFolded(t, net, 2, unfenced("w2"))
	net.oracles.converged()
}

// Rule 3, one hop only. Only an elected leadership (whose ballot is its
// own) relinquishes, and a receiver takes an authority only from the
// ballot's owner: a successor cannot hand on again, and a Relinquish whose
// ballot is not its sender's is refused.
func TestHandoffOneHopOnly(t *testing.T) {
	net := newNetwork(t, majority(3), journal.ModeMulti, handoffOpts(), 103)
	n1, n2, n3 := net.node(1), net.node(2), net.node(3)
	net.electLeader(n1)
	propose(net, n1, unfenced("w1"))
	exchange(net)
	r := relinquishOf(t, net, n1, 2)

	// a forged second hop: node 3 passes node 1's ballot on to node 2.
	forged := cloneMsg(r)
	forged.From = 3
	deliverMsgs(net, forged)
	expectEq(t, "node 2 leads on a forged hop", n2.node.IsLeader(), false)
	expectEq(t, "node 2 refused", n2.node.Counters().RelinquishRefused, uint64(1))
	expectEq(t, "node 2 installed", n2.node.Counters().Inherited, uint64(0))

	// the owner's own Relinquish is installed.
	deliverMsgs(net, r)
	expectEq(t, "node 2 leads", n2.node.IsLeader(), true)
	expectEq(t, "node 2 inherited", n2.node.Inherited(), true)

	// the successor may not hand on again.
	err := n2.node.CanRelinquish()
	if !errors.Is(err, paxos.ErrCannotRelinquish) {
		t.Fatalf("successor's CanRelinquish: %v, want ErrCannotRelinquish", err)
	}
	if err := n2.node.RelinquishTo(3); !errors.Is(err, paxos.ErrCannotRelinquish) {
		t.Fatalf("successor's RelinquishTo: %v, want ErrCannotRelinquish", err)
	}
	net.drain(n2)
	expectEq(t, "node 2 leads after a refused hand-on", n2.node.IsLeader(), true)
	expectEq(t, "node 2 relinquished", n2.node.Counters().Relinquished, uint64(0))
	expectEq(t, "Relinquish from node 2 pooled", len(inPool(net, match{typ: paxos.MsgRelinquish, from: 2})), 0)
	expectEq(t, "Relinquish from node 2 held", len(heldBy(n2, match{typ: paxos.MsgRelinquish, from: 2})), 0)
	expectEq(t, "node 3 leads", n3.node.IsLeader(), false)
	net.settle(5)
	net.oracles.converged()
}

// handedTo2 is node 1 choosing w1 and handing on to node 2, which leads.
// It returns the Relinquish, for replays.
func handedTo2(t *testing.T, seed uint64) (*network, *tnode, paxos.Message) {
	t.Helper()
	net := newNetwork(t, majority(3), journal.ModeMulti, handoffOpts(), seed)
	n1, n2 := net.node(1), net.node(2)
	net.electLeader(n1)
	propose(net, n1, unfenced("w1"))
	exchange(net)
	r := relinquishOf(t, net, n1, 2)
	deliverMsgs(net, cloneMsg(r))
	expectEq(t, "node 2 leads", n2.node.IsLeader(), true)
	return net, n2, r
}

// successorOpenedSlot2 is node 1 choosing w1 and handing on to node 2,
// which opens slot 2 with w2 and makes its record durable while nobody
// hears it. It returns the Relinquish, for replays.
func successorOpenedSlot2(t *testing.T, seed uint64) (*network, *tnode, paxos.Message) {
	t.Helper()
	net, n2, r := handedTo2(t, seed)
	expectEq(t, "w2's slot", propose(net, n2, unfenced("w2")), paxos.Slot(2))
	net.sync(n2)
	take(net, match{from: 2})
	return net, n2, r
}

// Rule 4, the durable frontier. A receiver refuses an authority at ballot b
// when its log holds a record at b at or above the frontier the message
// names: it exercised that authority before, and installing it again would
// rewind its allocator. Node 2 inherits, opens slot 2 (durably, though no
// one else hears it), crashes and reboots; the original Relinquish arrives
// again and must not reinstall the authority. A duplicate Relinquish at a
// successor still leading at that ballot is refused too, and leaves its
// allocator where it was.
func TestHandoffReplayedRelinquishRefused(t *testing.T) {
	t.Run("after the successor crashed and rebooted", func(t *testing.T) {
		// node 2 opens slot 2 and makes its record durable; nobody hears it.
		net, n2, r := successorOpenedSlot2(t, 104)
		b := r.Ballot
		if rb, c, ok := n2.store.Accepted(2); !ok || rb != b || !c.Equal(unfenced("w2")) {
			t.Fatalf("node 2's durable record at 2: %v %s %s", ok, rb, c)
		}

		// crash and reboot node 2; the original Relinquish is replayed.
		net.crash(n2)
		net.boot(n2)
		expectEq(t, "node 2 leads after boot", n2.node.IsLeader(), false)
		stepAcross(net, cloneMsg(r))
		expectEq(t, "node 2 leads after the replay", n2.node.IsLeader(), false)
		expectEq(t, "node 2 refused", n2.node.Counters().RelinquishRefused, uint64(1))
		expectEq(t, "node 2 installed", n2.node.Counters().Inherited, uint64(0))
		net.settle(40)
		net.oracles.converged()
		net.oracles.durableQuorums()
	})

	// The same, with the record of node 2's round damaged on its disk
	// while it was down: the value is gone but the damaged record at the
	// frontier still says a round may have been opened there, so the
	// replay is refused (installing it again let node 2 open slot 2 a
	// second time at b, with a Noop; sweep seed 3107823).
	t.Run("after the successor's record of its round rotted", func(t *testing.T) {
		net, n2, r := successorOpenedSlot2(t, 106)
		net.crash(n2)
		if !n2.store.Rot(2) {
			t.Fatal("no record to damage at slot 2")
		}
		net.boot(n2)
		if _, damaged := n2.node.Acceptor().Faulty(2); !damaged {
			t.Fatal("node 2 booted without the damaged record at slot 2")
		}
		stepAcross(net, cloneMsg(r))
		expectEq(t, "node 2 leads after the replay", n2.node.IsLeader(), false)
		expectEq(t, "node 2 refused", n2.node.Counters().RelinquishRefused, uint64(1))
		expectEq(t, "node 2 installed", n2.node.Counters().Inherited, uint64(0))
	})

	t.Run("duplicate at a successor still leading", func(t *testing.T) {
		net, n2, r := handedTo2(t, 105)

		// a duplicate before node 2 opened any round: the authority is
		// already held, so it is refused, not installed a second time.
		deliverMsgs(net, cloneMsg(r))
		expectEq(t, "node 2 refused", n2.node.Counters().RelinquishRefused, uint64(1))
		expectEq(t, "node 2 installed", n2.node.Counters().Inherited, uint64(1))
		expectEq(t, "node 2 leads", n2.node.IsLeader(), true)
		expectEq(t, "w2's slot", propose(net, n2, unfenced("w2")), paxos.Slot(2))

		// another after it opened slot 2: refused, and the allocator does
		// not rewind.
		deliverMsgs(net, cloneMsg(r))
		expectEq(t, "node 2 refused", n2.node.Counters().RelinquishRefused, uint64(2))
		expectEq(t, "node 2 installed", n2.node.Counters().Inherited, uint64(1))
		expectEq(t, "node 2 leads", n2.node.IsLeader(), true)
		expectEq(t, "w3's slot", propose(net, n2, unfenced("w3")), paxos.Slot(3))
		exchange(net)
		expectFolded(t, net, 2, unfenced("w2"))
		expectFolded(t, net, 3, unfenced("w3"))
		net.oracles.converged()
	})
}

// Rules 2 and the tiling. A Relinquish is installed only by the successor it
// names, only if its decided and pending entries tile [Slot, Next) exactly,
// and only if no higher promise dominates its ballot.
func TestHandoffRefusesMalformedOrStale(t *testing.T) {
	// setup: node 1 leads with w1 chosen and w2, w3 open; it hands on to
	// node 2 and the Relinquish is kept back.
	setup := func(t *testing.T, seed uint64) (*network, paxos.Message) {
		net := newNetwork(t, majority(3), journal.ModeMulti, handoffOpts(), seed)
		n1 := net.node(1)
		net.electLeader(n1)
		propose(net, n1, unfenced("w1"))
		exchange(net)
		propose(net, n1, unfenced("w2"))
		propose(net, n1, unfenced("w3"))
		take(net, match{typ: paxos.MsgAccept})
		r := relinquishOf(t, net, n1, 2)
		expectEq(t, "tail", [3]int{int(r.Slot), int(r.Next), len(r.Entries)}, [3]int{2, 4, 2})
		return net, r
	}

	t.Run("entries that do not tile the range", func(t *testing.T) {
		net, r := setup(t, 106)
		n2 := net.node(2)
		gap := cloneMsg(r)
		gap.Entries = gap.Entries[:1] // slot 3 left out of [2, 4)
		dup := cloneMsg(r)
		dup.Decided = append(dup.Decided, dup.Entries[0]) // slot 2 twice
		wide := cloneMsg(r)
		wide.Next++ // [2, 5) with two entries
		for i, m := range []paxos.Message{gap, dup, wide} {
			deliverMsgs(net, m)
			expectEq(t, "node 2 leads", n2.node.IsLeader(), false)
			expectEq(t, "node 2 refused", n2.node.Counters().RelinquishRefused, uint64(i+1))
		}
		// the exact tiling is installed.
		deliverMsgs(net, r)
		expectEq(t, "node 2 leads on the exact tiling", n2.node.IsLeader(), true)
		exchange(net)
		expectFolded(t, net, 3, unfenced("w3"))
		net.oracles.converged()
	})

	t.Run("addressed to another node", func(t *testing.T) {
		net, r := setup(t, 107)
		n2, n3 := net.node(2), net.node(3)
		// node 3 is handed a Relinquish naming node 2 as the successor.
		n3.node.Step(r)
		net.drain(n3)
		expectEq(t, "node 3 leads", n3.node.IsLeader(), false)
		expectEq(t, "node 3 installed", n3.node.Counters().Inherited, uint64(0))
		expectEq(t, "node 3 promise", n3.node.Promised(), r.Ballot)
		// and node 2 is handed one naming node 3.
		other := cloneMsg(r)
		other.To = 3
		n2.node.Step(other)
		net.drain(n2)
		expectEq(t, "node 2 leads", n2.node.IsLeader(), false)
		expectEq(t, "node 2 installed", n2.node.Counters().Inherited, uint64(0))
		// the right addressee still takes it.
		deliverMsgs(net, r)
		expectEq(t, "node 2 leads", n2.node.IsLeader(), true)
	})

	t.Run("ballot below the promise", func(t *testing.T) {
		net, r := setup(t, 108)
		n2, n3 := net.node(2), net.node(3)
		// node 3 is elected at a higher ballot before the Relinquish lands.
		net.electLeader(n3)
		if !r.Ballot.Less(n2.node.Promised()) {
			t.Fatalf("node 2's promise %s does not dominate %s", n2.node.Promised(), r.Ballot)
		}
		deliverMsgs(net, r)
		expectEq(t, "node 2 leads", n2.node.IsLeader(), false)
		expectEq(t, "node 2 refused", n2.node.Counters().RelinquishRefused, uint64(1))
		expectEq(t, "node 3 leads", n3.node.IsLeader(), true)
		net.settle(10)
		expectEq(t, "node 3 leads after the settle", n3.node.IsLeader(), true)
		net.oracles.converged()
	})
}

// CanRelinquish and RelinquishTo: a follower has nothing to hand on, and a
// leader hands on only to another acceptor of its configuration.
func TestHandoffRefusesBadCallers(t *testing.T) {
	net := newNetwork(t, majority(3), journal.ModeMulti, handoffOpts(), 109)
	n1, n2 := net.node(1), net.node(2)
	net.electLeader(n1)

	err := n2.node.CanRelinquish()
	if !errors.Is(err, paxos.ErrCannotRelinquish) || !strings.Contains(err.Error(), "not leading") {
		t.Fatalf("follower's CanRelinquish: %v, want ErrCannotRelinquish (not leading)", err)
	}
	if err := n2.node.RelinquishTo(3); !errors.Is(err, paxos.ErrCannotRelinquish) {
		t.Fatalf("follower's RelinquishTo: %v, want ErrCannotRelinquish", err)
	}

	for _, to := range []paxos.NodeID{1, 4, 0} {
		if err := n1.node.RelinquishTo(to); !errors.Is(err, paxos.ErrCannotRelinquish) {
			t.Fatalf("RelinquishTo(%d): %v, want ErrCannotRelinquish", to, err)
		}
		net.drain(n1)
		expectEq(t, "node 1 leads", n1.node.IsLeader(), true)
	}
	expectEq(t, "relinquished", n1.node.Counters().Relinquished, uint64(0))
	syncAll(net)
	expectEq(t, "Relinquish messages", len(inPool(net, match{typ: paxos.MsgRelinquish})), 0)
	expectEq(t, "node 1 may still relinquish", n1.node.CanRelinquish(), error(nil))
}

// tickInherited: an inherited leadership cannot gap-fill below its
// frontier, so one whose fence (the predecessor's election fence) stays
// above its chosen index for HandoffFenceElections election timeouts
// resigns, even while its quorum answers. Node 2 is handed node 1's ballot
// with an empty tail and a fence at slot 1000 that nothing will ever cover.
func TestHandoffUncoveredFenceResigns(t *testing.T) {
	opts := handoffOpts()
	net := newNetwork(t, majority(3), journal.ModeMulti, opts, 110)
	n1, n2 := net.node(1), net.node(2)
	net.electLeader(n1)
	b := n1.node.LeaderBallot()
	net.crash(n1)

	from := n2.node.ChosenIndex() + 1
	stepAcross(net, paxos.Message{Type: paxos.MsgRelinquish, From: 1, To: 2, Ballot: b,
		Slot: from, Next: from, Watermark: 1000})
	// The owner's handoff notice, which rides with its Relinquish: node 3
	// hears node 2 at node 1's ballot from now on.
	stepAcross(net, paxos.Message{Type: paxos.MsgHeartbeat, From: 1, To: 3, Ballot: b,
		Commit: from - 1, Leader: 2})
	expectEq(t, "node 2 leads", n2.node.IsLeader(), true)
	expectEq(t, "node 2 inherited", n2.node.Inherited(), true)

	// node 3 answers the beats (CheckQuorum holds), but the fence stays
	// uncovered. The jittered election timeout lies in [E, 2E).
	e := opts.ElectionTicks
	minTicks, maxTicks := opts.HandoffFenceElections*e, opts.HandoffFenceElections*2*e
	ticks := 0
	for ; ticks < maxTicks && n2.node.IsLeader(); ticks++ {
		if ticks == minTicks-1 {
			expectEq(t, "resigned before the fence bound", n2.node.Counters().HandoffResigned, uint64(0))
		}
		net.tick(n2)
		exchange(net)
	}
	c := n2.node.Counters()
	expectEq(t, "handoff resignations", c.HandoffResigned, uint64(1))
	expectEq(t, "CheckQuorum step-downs", c.CheckQuorumDowns, uint64(0))
	expectEq(t, "node 2 leads", n2.node.IsLeader(), false)
	if ticks < minTicks {
		t.Fatalf("resigned after %d ticks, before %d", ticks, minTicks)
	}
}
