package paxos_test

// This file checks changing a journal's membership with matchmakers
// (Matchmaker Paxos §3 and §4, docs/guide/reconfiguration.md): Phase 1 over
// every configuration, a plain deployment's refusal, replacing a node, a
// stale node adopting the effective configuration, removing the leader, and
// majority to grid to majority under writes. Scenarios run over the test
// network of matchmaker_harness_test.go with the helpers of
// reconfigure_test.go; the oracles of oracles_test.go run after every batch.

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

// Matchmaker Paxos §3; spec: "Phase 1 then fans out to H_b ∪ C_b, and it
// completes only with a promise quorum of every configuration in H_b. It is
// never a quorum of the union." Old {1,2,3}, new {1,4,5}: promises from 1, 4
// and 5 are three of the union's five, a majority of it and of the new
// configuration, and only one of the old one. The campaign stays a
// candidate; node 2's promise completes the old configuration's quorum and
// wins it.
func TestReconfigurePhase1NeedsEveryConfigurationNotTheUnion(t *testing.T) {
	mn, _ := mmCell(t, scenarioOpts())
	n1, n2 := mn.node(1), mn.node(2)
	cNew := majorityOf(1, 4, 5)
	n4, n5 := mn.addJoiner(4, cNew), mn.addJoiner(5, cNew)
	var parked []paxos.Message
	mn.drop = func(m paxos.Message) bool {
		if m.Type == paxos.MsgPrepare && (m.To == 2 || m.To == 3) {
			parked = append(parked, m)
			return true
		}
		return false
	}

	// reconfigure: matchmaking, then Phase 1; only 4 and 5 hear the Prepare.
	if err := n1.node.Reconfigure(cNew); err != nil {
		t.Fatalf("Reconfigure: %v", err)
	}
	mn.drainNode(n1)
	mn.exchange()

	b := n1.node.Promised()
	expectEq(t, "node 4 promised the new ballot", n4.node.Promised(), b)
	expectEq(t, "node 5 promised the new ballot", n5.node.Promised(), b)
	expectEq(t, "role with promises from 1, 4, 5 only", n1.node.Role(), "candidate")
	if len(parked) != 2 {
		t.Fatalf("parked %d Prepares, want the ones to 2 and 3", len(parked))
	}

	// node 2's promise: a quorum of {1,2,3} as well.
	mn.drop = nil
	for _, m := range parked {
		if m.To == 2 {
			mn.deliverMsgs(m)
		}
	}
	mn.exchange()

	expectEq(t, "node 1 leads", n1.node.IsLeader(), true)
	expectEq(t, "leader ballot", n1.node.LeaderBallot(), b)
	expectSystem(t, "leader's configuration", n1.node.Configuration().Acceptors, cNew)
	expectEq(t, "node 2 promised", n2.node.Promised(), b)
}

// Spec: "On a cluster with no matchmakers a reconfiguration request is
// refused, and it is never quietly honored." The leader keeps leading under
// its configuration and emits nothing.
func TestReconfigurePlainDeploymentRefuses(t *testing.T) {
	net := newNetwork(t, majority(3), journal.ModeMulti, scenarioOpts(), 1)
	n1 := net.node(1)
	net.electLeader(n1)
	exchange(net)
	before := n1.node.Counters()

	err := n1.node.Reconfigure(majorityOf(1, 2, 4))

	if !errors.Is(err, paxos.ErrNoMatchmakers) {
		t.Fatalf("Reconfigure on a plain deployment = %v, want ErrNoMatchmakers", err)
	}
	if n1.node.HasReady() {
		rd := n1.node.Ready()
		t.Fatalf("a refused reconfiguration emitted %d messages, %d writes", len(rd.Messages), len(rd.Writes))
	}
	expectEq(t, "still leading", n1.node.IsLeader(), true)
	expectSystem(t, "configuration", n1.node.Configuration().Acceptors, majority(3))
	expectEq(t, "reconfigurations counted", n1.node.Counters().Reconfigurations, before.Reconfigurations)
	expectEq(t, "campaigns", n1.node.Counters().Campaigns, before.Campaigns)
	if n1.node.Matchmakers() != nil {
		t.Fatalf("a plain node names matchmakers %v", n1.node.Matchmakers())
	}
	if got := n1.node.MayRetire(paxos.Ballot{Round: 1, Node: 1}); got != paxos.RetirePlain {
		t.Fatalf("MayRetire on a plain deployment = %s, want plain", got)
	}
}

// Spec: a reconfiguration is a round change to a fresh ballot registered
// with C_new; "a joining node promises the new ballot before Phase 2 reaches
// it, and it heals as a replica. A removed node keeps answering Phase 1."
// Then garbage collection: once a Phase-2 quorum of C_b reports the election
// fence chosen, a matchmaker quorum raises the watermark to the leader's
// ballot, and only then does the leader name the retirable acceptors,
// members(H_b) \ C_b. A retire request carrying that watermark is honored
// by the removed node once its belief is bound to it, refused by a member,
// by the leader and with a wrong watermark.
func TestReconfigureReplaceANode(t *testing.T) {
	mn, s1 := mmCell(t, scenarioOpts())
	n1, n2, n3 := mn.node(1), mn.node(2), mn.node(3)
	cNew := majorityOf(1, 2, 4)
	n4 := mn.addJoiner(4, cNew)
	expectEq(t, "a joiner believes nothing", n4.node.Configuration().IsZero(), true)
	beatsTo3 := true
	mn.drop = func(m paxos.Message) bool { return !beatsTo3 && m.Type == paxos.MsgHeartbeat && m.To == 3 }
	beatsTo3 = false

	// reconfigure to {1,2,4}: new commands stall meanwhile.
	if err := n1.node.Reconfigure(cNew); err != nil {
		t.Fatalf("Reconfigure: %v", err)
	}
	mn.drainNode(n1)
	if res := n1.node.Propose(unfenced("stalled").Entry); res.Status != paxos.NotLeader {
		t.Fatalf("a write during the round change: status %d, want NotLeader", res.Status)
	}
	mn.exchange()

	expectEq(t, "node 1 leads the new ballot", n1.node.IsLeader(), true)
	b := n1.node.LeaderBallot()
	cfg := n1.node.Configuration()
	expectSystem(t, "leader's configuration", cfg.Acceptors, cNew)
	expectEq(t, "configuration bound to the ballot", cfg.Ballot, b)
	expectEq(t, "a reconfiguration introduces its membership", cfg.Since, b)
	expectEq(t, "reconfigured elections", n1.node.Counters().ReconfiguredElections, uint64(1))
	if n3.node.Counters().RemovedPromises == 0 {
		t.Fatalf("node 3 did not answer the reconfiguration's Phase 1")
	}
	expectEq(t, "node 3 promised the new ballot", n3.node.Promised(), b)

	// writes after it are chosen by the new set; the joiner votes.
	s2 := mn.proposeW(n1, "after")
	mn.settle(4)
	if n4.node.Counters().JoinerVotes == 0 {
		t.Fatalf("the joiner never voted")
	}
	expectFolded(t, mn.network, s1, unfenced("before"), n1, n2, n4)
	expectFolded(t, mn.network, s2, unfenced("after"), n1, n2, n4)

	// garbage collection becomes effective.
	if !mn.settleUntil(20, func() bool { _, _, ok := n1.node.Collected(); return ok }) {
		t.Fatalf("the collection never became effective: %s", mn)
	}
	w, retirable, _ := n1.node.Collected()
	expectEq(t, "watermark", w, b)
	if !slices.Equal(retirable, []paxos.NodeID{3}) {
		t.Fatalf("retirable %v, want [3]", retirable)
	}
	held := 0
	for _, x := range mn.mms {
		if reg, ok := x.mm.Registry(mmJournal); ok && reg.Watermark == w {
			held++
			for _, r := range reg.Regs {
				if r.Ballot.Less(w) {
					t.Fatalf("matchmaker %d kept %s below the watermark %s", x.id, r, w)
				}
			}
		}
	}
	if 2*held <= len(mn.mms) {
		t.Fatalf("only %d of %d matchmakers hold the watermark", held, len(mn.mms))
	}

	// retirement: node 3 has not heard a beat of the new ballot yet.
	expectEq(t, "node 3 before a beat", n3.node.MayRetire(w), paxos.RetireStale)
	beatsTo3 = true
	mn.settle(2)
	expectEq(t, "node 3 after a beat", n3.node.MayRetire(w), paxos.RetireOK)
	expectEq(t, "node 3 with a wrong watermark", n3.node.MayRetire(paxos.Ballot{Round: b.Round - 1, Node: 1}), paxos.RetireStale)
	expectEq(t, "node 2, a member", n2.node.MayRetire(w), paxos.RetireMember)
	expectEq(t, "node 4, a member", n4.node.MayRetire(w), paxos.RetireMember)
	expectEq(t, "node 1, the leader", n1.node.MayRetire(w), paxos.RetireLeader)

	// a reboot returns node 3 to its bootstrap belief: stale until a beat.
	mn.crash(n3)
	mn.boot(n3)
	expectEq(t, "node 3 rebooted", n3.node.MayRetire(w), paxos.RetireStale)
	mn.settle(2)
	expectEq(t, "node 3 rebooted, after a beat", n3.node.MayRetire(w), paxos.RetireOK)
	expectEq(t, "node 3 never campaigned since", n3.node.Role(), "follower")

	// the operator names node 3 again before the retire request lands: once
	// it promised a ballot whose configuration names it, the watermark is
	// no longer above every such ballot, and the request is refused.
	mn.drop = func(m paxos.Message) bool { return m.To == 3 && m.From < 100 && m.Type != paxos.MsgPrepare }
	if err := n1.node.Reconfigure(majority(3)); err != nil {
		t.Fatalf("Reconfigure back: %v", err)
	}
	mn.drainNode(n1)
	mn.exchange()
	expectEq(t, "node 3 promised the ballot naming it", n3.node.Promised(), n1.node.Promised())
	expectEq(t, "node 3 named again", n3.node.MayRetire(w), paxos.RetireNotCollected)
}

// Spec: "An ordinary campaign whose histories name a different [effective
// configuration] abandons, adopts it and campaigns again. So a node that
// missed a completed reconfiguration cannot be elected under the superseded
// one." Node 2 misses the change from {1,2,3} to {1,2,4}; the new leader
// chooses a write and crashes. Node 2 campaigns: it learns the change from
// the matchmakers (after a probe if it rebooted, from its registration's
// replies if not), leads under {1,2,4}, and recovers the write chosen there.
func TestReconfigureStaleNodeAdoptsTheEffectiveConfiguration(t *testing.T) {
	for _, rebooted := range []bool{false, true} {
		t.Run(fmt.Sprintf("rebooted=%v", rebooted), func(t *testing.T) {
			mn, _ := mmCell(t, scenarioOpts())
			n1, n2 := mn.node(1), mn.node(2)
			cNew := majorityOf(1, 2, 4)
			mn.addJoiner(4, cNew)
			if rebooted {
				mn.crash(n2)
			} else {
				mn.cut = map[paxos.NodeID]bool{2: true}
			}

			// the reconfiguration completes without node 2.
			if err := n1.node.Reconfigure(cNew); err != nil {
				t.Fatalf("Reconfigure: %v", err)
			}
			mn.drainNode(n1)
			mn.exchange()
			expectEq(t, "node 1 leads", n1.node.IsLeader(), true)
			expectSystem(t, "node 1's configuration", n1.node.Configuration().Acceptors, cNew)
			s := mn.proposeW(n1, "under-new")
			mn.exchange()
			expectSystem(t, "node 2 still believes", n2.nodeConfigOr(majority(3)), majority(3))
			mn.crash(n1)
			mn.cut = nil
			if rebooted {
				mn.boot(n2)
			}

			// node 2 campaigns.
			mn.electLeader(n2)

			expectSystem(t, "node 2 leads under", n2.node.Configuration().Acceptors, cNew)
			c := n2.node.Counters()
			if rebooted {
				if c.Probes == 0 {
					t.Fatalf("the rebooted node did not probe")
				}
			} else if c.StaleConfigurations != 1 {
				t.Fatalf("stale configurations %d, want 1", c.StaleConfigurations)
			}
			mn.settle(3)
			expectFolded(t, mn.network, s, unfenced("under-new"), n2)
		})
	}
}

// Spec: the leader "resigns afterwards if the change removed it." Node 1
// moves {1,2,3} to {2,3,4}: it wins Phase 1 of both configurations, adopts
// the new one, resigns, and never campaigns again; a member of {2,3,4}
// leads, and the write chosen before the change and writes after it are
// folded by every member.
func TestReconfigureRemovingTheLeaderResigns(t *testing.T) {
	mn, s1 := mmCell(t, scenarioOpts())
	n1 := mn.node(1)
	cNew := majorityOf(2, 3, 4)
	mn.addJoiner(4, cNew)

	if err := n1.node.Reconfigure(cNew); err != nil {
		t.Fatalf("Reconfigure: %v", err)
	}
	mn.drainNode(n1)
	mn.exchange()

	expectEq(t, "node 1 resigned", n1.node.IsLeader(), false)
	expectEq(t, "resigned removed", n1.node.Counters().ResignedRemoved, uint64(1))
	expectSystem(t, "node 1 believes", n1.node.Configuration().Acceptors, cNew)
	campaigns := n1.node.Counters().Campaigns

	if !mn.settleUntil(60, func() bool { return mn.leader() != nil }) {
		t.Fatalf("no member of the new set took over: %s", mn)
	}
	l := mn.leader()
	if !cNew.Contains(l.id) {
		t.Fatalf("node %d leads, not a member of %v", l.id, cNew.Members())
	}
	expectSystem(t, "the leader's configuration", l.node.Configuration().Acceptors, cNew)
	s2 := mn.proposeW(l, "after")
	mn.settle(4)
	for _, id := range cNew.Members() {
		expectFolded(t, mn.network, s1, unfenced("before"), mn.node(id))
		expectFolded(t, mn.network, s2, unfenced("after"), mn.node(id))
	}
	expectEq(t, "node 1 campaigns since", n1.node.Counters().Campaigns, campaigns)
}

// Spec: a reconfiguration is "a new membership, a new quorum system, or
// both". Majority {1,2,3} → 2x2 grid {1,2,3,4} → majority {1,2,3}, with
// writes before, during and after each change: new commands stall during
// the round change, every write folded is folded the same everywhere, and
// each leadership runs Phase 2 under the configuration it registered.
func TestReconfigureMajorityGridMajorityUnderWrites(t *testing.T) {
	mn, _ := mmCell(t, scenarioOpts())
	n1 := mn.node(1)
	grid, err := quorum.NewGrid(ids(4), 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	mn.addJoiner(4, grid)
	back := majority(3)
	var written []paxos.Slot
	write := func(l *tnode, tag string) {
		for i := range 3 {
			written = append(written, mn.proposeW(l, fmt.Sprintf("%s-%d", tag, i)))
		}
	}

	for step, sys := range []quorum.System{grid, back} {
		l := mn.leader()
		if l == nil {
			t.Fatalf("step %d: no leader: %s", step, mn)
		}
		// writes in flight when the change starts.
		write(l, fmt.Sprintf("inflight%d", step))
		if err := l.node.Reconfigure(sys); err != nil {
			t.Fatalf("Reconfigure(%s): %v", sys, err)
		}
		mn.drainNode(l)
		if res := l.node.Propose(unfenced("stalled").Entry); res.Status != paxos.NotLeader {
			t.Fatalf("step %d: a write during the round change: status %d", step, res.Status)
		}
		if !mn.settleUntil(60, func() bool {
			nl := mn.leader()
			return nl != nil && paxos.SameSystem(nl.node.Configuration().Acceptors, sys)
		}) {
			t.Fatalf("step %d: no leader under %s: %s", step, sys, mn)
		}
		l = mn.leader()
		write(l, fmt.Sprintf("after%d", step))
		mn.settle(6)
		for _, s := range written[len(written)-3:] {
			for _, id := range sys.Members() {
				if _, ok := mn.node(id).applied[s]; !ok && mn.node(id).node.Applied() < s {
					t.Fatalf("step %d: node %d has not folded slot %d", step, id, s)
				}
			}
		}
	}
	expectEq(t, "node 1 still leads", mn.leader(), n1)
	mn.settle(6)
	mn.durableQuorums()
	mn.converged()
}
