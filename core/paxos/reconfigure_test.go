package paxos_test

// This file checks reconfiguration with matchmakers (Whittaker et al.,
// "Matchmaker Paxos: A Reconfigurable Consensus Protocol", §3 and §4, and
// docs/guide/reconfiguration.md, "What happens underneath") over the test
// network of matchmaker_harness_test.go: real nodes and real matchmakers, a
// message pool the script delivers, drops and holds back by hand. Each
// scenario opens with the sentence of the paper or the rule it plays, then
// its steps with the expected state checked inline; the oracles of
// oracles_test.go run after every batch. A randomized run at the end mixes
// reconfigurations, crashes, reboots, drops and duplicates over many seeds
// and checks that at most one value is ever chosen per slot.

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

func majorityOf(members ...quorum.ID) quorum.System {
	s, err := quorum.NewMajority(members)
	if err != nil {
		panic(err)
	}
	return s
}

func expectSystem(t *testing.T, what string, got, want quorum.System) {
	t.Helper()
	if !paxos.SameSystem(got, want) {
		t.Fatalf("%s: %s %v, want %s %v", what, got, got.Members(), want, want.Members())
	}
}

// mmCell is three nodes {1,2,3} under a majority, three matchmakers, and
// node 1 elected with one write chosen everywhere.
func mmCell(t *testing.T, opts paxos.Options) (*mnet, paxos.Slot) {
	t.Helper()
	mn := newMNet(t, majority(3), 3, journal.ModeMulti, opts, 1)
	mn.trace = true
	n1 := mn.node(1)
	mn.electLeader(n1)
	s := mn.proposeW(n1, "before")
	mn.exchange()
	return mn, s
}

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

// nodeConfigOr is the node's believed acceptor set, or def when it is down.
func (tn *tnode) nodeConfigOr(def quorum.System) quorum.System {
	if !tn.up {
		return def
	}
	return tn.node.Configuration().Acceptors
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

// Spec ("reads carry Since"): a quorum read is argued over one
// configuration; an answer naming a newer one, or this node adopting a newer
// one, abandons it: the client is answered unserved and asks again.
func TestReconfigureQuorumReadAbandonedOnANewerConfiguration(t *testing.T) {
	t.Run("an answer names a newer configuration", func(t *testing.T) {
		mn, _ := mmCell(t, scenarioOpts())
		n2 := mn.node(2)
		ctx := uint64(0x5eed)
		mn.oracles.readOpened(ctx)
		if !n2.node.QuorumRead(ctx) {
			t.Fatalf("node 2 did not open the read")
		}
		mn.drainNode(n2)
		takeWhere(mn, func(m paxos.Message) bool { return m.Type == paxos.MsgPreRead })
		mn.syncAll()

		mn.deliverMsgs(paxos.Message{Type: paxos.MsgPreReadAck, From: 3, To: 2, Ctx: ctx,
			Watermark: 1, Since: paxos.Ballot{Round: 40, Node: 1}})

		rs, ok := n2.reads[ctx]
		if !ok || rs.OK {
			t.Fatalf("read after a newer answer: %+v (answered %v), want unserved", rs, ok)
		}
		expectEq(t, "reads abandoned", n2.node.Counters().ReadsAbandoned, uint64(1))
	})
	t.Run("the reader adopts a newer configuration", func(t *testing.T) {
		mn, _ := mmCell(t, scenarioOpts())
		n1, n2 := mn.node(1), mn.node(2)
		mn.addJoiner(4, majorityOf(1, 2, 4))
		ctx := uint64(0x5eee)
		mn.oracles.readOpened(ctx)
		if !n2.node.QuorumRead(ctx) {
			t.Fatalf("node 2 did not open the read")
		}
		mn.drainNode(n2)
		takeWhere(mn, func(m paxos.Message) bool { return m.Type == paxos.MsgPreRead })

		if err := n1.node.Reconfigure(majorityOf(1, 2, 4)); err != nil {
			t.Fatal(err)
		}
		mn.drainNode(n1)
		mn.exchange()

		rs, ok := n2.reads[ctx]
		if !ok || rs.OK {
			t.Fatalf("read after adopting a newer configuration: %+v (answered %v), want unserved", rs, ok)
		}
		if n2.node.Counters().ReadsAbandoned == 0 {
			t.Fatalf("no read counted abandoned")
		}
	})
}

// node_reads.go's argument: "a reconfiguration that superseded [the read's
// configuration] needed a Phase-1 quorum of it, whose members learned the
// new configuration with the Prepare, so one of them is among the answerers
// and names it." The reader itself may be that member: node 2 promised the
// change from {1,2,3} to {1,3,4} (and heard nothing else of it), node 3 heard
// nothing, and a write is chosen under {1,3,4}. Node 2's read is answered by
// itself and node 3, a Phase-1 quorum of {1,2,3} that blocks every other; it
// must not be served without the write.
func TestReconfigureQuorumReadByANodeThatPromisedTheChange(t *testing.T) {
	mn, _ := mmCell(t, scenarioOpts())
	n1, n2 := mn.node(1), mn.node(2)
	cNew := majorityOf(1, 3, 4)
	mn.addJoiner(4, cNew)
	mn.drop = func(m paxos.Message) bool {
		switch {
		case m.From == 1 && m.To == 3:
			return true // node 3 hears nothing of the change
		case m.From == 1 && m.To == 2 && m.Type != paxos.MsgPrepare:
			return true // node 2 hears only its Prepare
		case m.From == 2 && m.To == 1 && m.Type == paxos.MsgPreRead:
			return true // the read's question to node 1 is lost
		}
		return false
	}
	if err := n1.node.Reconfigure(cNew); err != nil {
		t.Fatal(err)
	}
	mn.drainNode(n1)
	mn.exchange()
	expectEq(t, "node 1 leads", n1.node.IsLeader(), true)
	s := mn.proposeW(n1, "chosen-under-new")
	mn.exchange()
	if _, ok := n1.applied[s]; !ok {
		t.Fatalf("the write at slot %d was not chosen under {1,3,4}", s)
	}

	ctx := uint64(0xbead)
	mn.oracles.readOpened(ctx)
	if !n2.node.QuorumRead(ctx) {
		return // refusing to open is a correct answer
	}
	mn.drainNode(n2)
	mn.exchange()

	if rs, ok := n2.reads[ctx]; ok && rs.OK && rs.Index < s {
		t.Fatalf("node 2 served a read at index %d, missing the write chosen at slot %d under the newer configuration", rs.Index, s)
	}
}

// Spec: "The effective configuration is the highest-ballot reconfiguration
// registration that a matchmaker quorum holds." A reconfiguration that
// reached one matchmaker of three is no such fact: node 2 is elected under
// {1,2,3} above it without seeing it. When node 2 crashes, the others'
// campaigns see the lone registration; whatever they make of it, someone
// must be elected (two of three nodes and every matchmaker are up).
func TestReconfigureMinorityRegistrationDoesNotWedgeElections(t *testing.T) {
	mn, _ := mmCell(t, scenarioOpts())
	n1, n2 := mn.node(1), mn.node(2)
	cNew := majorityOf(1, 2, 4)
	mn.addJoiner(4, cNew)
	// node 1's reconfiguration reaches matchmaker 101 only.
	mn.drop = func(m paxos.Message) bool { return m.Type == paxos.MsgMatch && m.From == 1 && m.To != 101 }
	if err := n1.node.Reconfigure(cNew); err != nil {
		t.Fatal(err)
	}
	mn.drainNode(n1)
	mn.exchange()
	expectEq(t, "node 1 is stuck matchmaking", n1.node.Role(), "candidate")
	// node 2's ordinary campaign misses matchmaker 101.
	mn.drop = func(m paxos.Message) bool { return m.Type == paxos.MsgMatch && m.From == 2 && m.To == 101 }
	mn.electLeader(n2)
	mn.drop = nil
	mn.exchange()
	expectSystem(t, "node 2 leads under", n2.node.Configuration().Acceptors, majority(3))

	mn.crash(n2)
	ok := mn.settleUntil(60, func() bool { return mn.leader() != nil })

	if !ok {
		t.Fatalf("no leader after node 2 crashed: %s; stale configurations: node 1 %d, node 3 %d",
			mn, n1.node.Counters().StaleConfigurations, mn.node(3).node.Counters().StaleConfigurations)
	}
}

// reconfiguredWithout3 is the matchmaker cell with node 1 leading {1,2,3},
// reconfigured by node 1 to cNew (node 4 a joiner) while node 3 is cut off
// from every node (not from the matchmakers): node 3 still believes
// {1,2,3}. The cut stays in place.
func reconfiguredWithout3(t *testing.T, cNew quorum.System) *mnet {
	t.Helper()
	mn, _ := mmCell(t, scenarioOpts())
	n1 := mn.node(1)
	mn.addJoiner(4, cNew)
	isNode := func(id paxos.NodeID) bool { return id < 100 }
	mn.drop = func(m paxos.Message) bool {
		return (m.From == 3 && isNode(m.To)) || (m.To == 3 && isNode(m.From))
	}
	if err := n1.node.Reconfigure(cNew); err != nil {
		t.Fatal(err)
	}
	mn.drainNode(n1)
	mn.exchange()
	expectEq(t, "node 1 leads", n1.node.IsLeader(), true)
	return mn
}

// Spec, "The GC watermark and retirement": a configuration may be forgotten
// when "no future leader may need its Phase-1 quorum", and a node honoring a
// retire request is one "the cluster is done with". Node 3 is removed by
// {1,2,3} → {1,2,4} while cut off from the nodes; the collection becomes
// effective and names it retirable. It then campaigns once through the
// matchmakers, learns the change, and its retire request is honored: it is
// shut down. When node 1 crashes, nodes 2 and 4 are a majority of the
// configuration in force, so one of them must be elected without node 3.
func TestReconfigureRetiredConfigurationIsNotNeededAgain(t *testing.T) {
	cNew := majorityOf(1, 2, 4)
	mn := reconfiguredWithout3(t, cNew)
	n1, n3 := mn.node(1), mn.node(3)
	// Settle without ticking node 3 (it would campaign too early).
	var w paxos.Ballot
	for range 40 {
		mn.exchange()
		if wm, retirable, ok := n1.node.Collected(); ok {
			if !slices.Equal(retirable, []paxos.NodeID{3}) {
				t.Fatalf("retirable %v, want [3]", retirable)
			}
			w = wm
			break
		}
		for _, tn := range mn.nodes {
			if tn != n3 {
				mn.tick(tn)
			}
		}
	}
	if w.IsZero() {
		t.Fatalf("the collection never became effective: %s", mn)
	}

	// node 3 campaigns once, through the matchmakers only, and learns.
	mn.campaignOnce(n3)
	mn.exchange()
	expectSystem(t, "node 3 believes", n3.node.Configuration().Acceptors, cNew)
	mn.drop = nil
	switch got := n3.node.MayRetire(w); got {
	case paxos.RetireOK:
		// The request carrying w is honored.
	case paxos.RetireNotCollected:
		// Also correct: node 3's own registration bound a configuration
		// naming it above w, so it is still needed until a later
		// collection covers that ballot. Run until one does and a request
		// carrying the new watermark is honored. A leadership collects
		// once, so the next one does it: node 1 steps down.
		old := w
		w = paxos.Ballot{}
		n1.node.StepDown()
		mn.drainNode(n1)
		if !mn.settleUntil(80, func() bool {
			l := mn.leader()
			if l == nil {
				return false
			}
			wm, _, ok := l.node.Collected()
			if ok && old.Less(wm) && n3.node.MayRetire(wm) == paxos.RetireOK {
				w = wm
				return true
			}
			return false
		}) {
			t.Fatalf("node 3 never became retirable again: %s", mn)
		}
	default:
		t.Fatalf("node 3 MayRetire(%s) = %s, want ok or not_collected", w, got)
	}
	mn.crash(n3) // retired: the operator shuts it down

	mn.crash(n1)
	ok := mn.settleUntil(80, func() bool { return mn.leader() != nil })

	if !ok {
		var hist []string
		for _, x := range mn.mms {
			if reg, ok := x.mm.Registry(mmJournal); ok {
				for _, r := range reg.Regs {
					kind := "belief"
					if r.Reconfiguration {
						kind = "reconf"
					}
					hist = append(hist, fmt.Sprintf("mm%d:%s %s %v", x.id, r.Ballot, kind, r.Acceptors.Members()))
				}
			}
		}
		if len(hist) > 12 {
			hist = hist[:12]
		}
		t.Fatalf("nodes 2 and 4 (a majority of %v) elect no leader after node 3 retired at watermark %s and node 1 crashed: %s\nregistries (first 12): %v",
			cNew.Members(), w, mn, hist)
	}
}

// Multi-Paxos pages Phase 1 (PromiseBatch): a candidate behind the others
// asks for the next page with another Prepare. With matchmakers every
// Prepare must name its configuration, or the acceptor drops it and the
// campaign never completes. Node 3 misses four writes and then campaigns
// alone with one record per page; on a plain deployment the same script
// elects it.
func TestReconfigurePagedPhase1WithMatchmakers(t *testing.T) {
	opts := scenarioOpts()
	opts.PromiseBatch = 1
	t.Run("plain", func(t *testing.T) {
		net := newNetwork(t, majority(3), journal.ModeMulti, opts, 1)
		n1, n3 := net.node(1), net.node(3)
		net.electLeader(n1)
		exchange(net)
		net.cut = map[paxos.NodeID]bool{3: true}
		for i := range 4 {
			propose(net, n1, unfenced(fmt.Sprintf("w%d", i)))
		}
		exchange(net)
		net.cut = nil

		net.electLeader(n3)

		expectEq(t, "node 3 leads", n3.node.IsLeader(), true)
	})
	t.Run("matchmakers", func(t *testing.T) {
		mn, _ := mmCell(t, opts)
		n1, n3 := mn.node(1), mn.node(3)
		mn.cut = map[paxos.NodeID]bool{3: true}
		for i := range 4 {
			mn.proposeW(n1, fmt.Sprintf("w%d", i))
		}
		mn.exchange()
		mn.cut = nil

		mn.electLeader(n3)

		expectEq(t, "node 3 leads", n3.node.IsLeader(), true)
	})
}

// The randomized run: three nodes {1,2,3}, joiners 4 and 5 standing by, three
// matchmakers. Each step delivers a burst of pooled messages in random order
// with duplicates and drops, syncs, ticks, proposes at the leader, and now
// and then reconfigures (majority, grid and flexible systems over ids 1–5,
// from the leader or any node), crashes a node before or after its batch is
// durable, reboots one, crashes or reboots a matchmaker, or cuts a node off.
// After every batch the oracles check that every node folds each slot to one
// value; every 20 steps and at the end the durable-quorum oracle checks
// every store against the configuration each ballot ran under.
//
// MM_CHECK_SEEDS and MM_CHECK_STEPS widen the sweep; MM_CHECK_SEED replays
// one seed with a trace.
func TestReconfigureRandomizedSafety(t *testing.T) {
	if s := os.Getenv("MM_CHECK_SEED"); s != "" {
		seed, _ := strconv.ParseUint(s, 10, 64)
		r := runMMSeed(t, seed, envInt("MM_CHECK_STEPS", 300), true)
		if r.stuck != "" {
			t.Logf("quiet tail did not converge: %s", r.stuck)
		}
		return
	}
	seeds, results := mmSweep(t)
	var total paxos.Counters
	reconfs := 0
	for _, r := range results {
		c := r.counters
		total.ReconfiguredElections += c.ReconfiguredElections
		total.StaleConfigurations += c.StaleConfigurations
		total.Collections += c.Collections
		total.JoinerVotes += c.JoinerVotes
		total.Decided += c.Decided
		reconfs += r.reconfs
	}
	t.Logf("over %d seeds: reconfigure calls %d, reconfigured elections %d, stale %d, collections %d, joiner votes %d, decided %d",
		seeds, reconfs, total.ReconfiguredElections, total.StaleConfigurations, total.Collections, total.JoinerVotes, total.Decided)
	for name, v := range map[string]uint64{
		"a reconfiguration wins its election":   total.ReconfiguredElections,
		"a collection becomes effective":        total.Collections,
		"a joiner votes":                        total.JoinerVotes,
		"values are chosen":                     total.Decided,
		"a stale node adopts the effective one": total.StaleConfigurations,
	} {
		if v == 0 && seeds >= 50 {
			t.Errorf("gate never fired: %s", name)
		}
	}
}

// The same sweep, for liveness: once every node and matchmaker is back and
// the faults stop, a leader is elected and the members of its
// configuration converge to its chosen prefix.
func TestReconfigureRandomizedLiveness(t *testing.T) {
	if os.Getenv("MM_CHECK_SEED") != "" {
		t.Skip("replaying one seed: see TestReconfigureRandomizedSafety")
	}
	seeds, results := mmSweep(t)
	var stuck []string
	for seed, r := range results {
		if r.stuck != "" {
			stuck = append(stuck, fmt.Sprintf("seed %d: %s", seed, r.stuck))
		}
	}
	if len(stuck) > 0 {
		slices.Sort(stuck)
		t.Errorf("%d of %d seeds did not converge in the quiet tail, e.g. (replay with MM_CHECK_SEED):\n%s", len(stuck), seeds,
			strings.Join(stuck[:min(len(stuck), 5)], "\n"))
	}
}

// mmSweep runs seeds 1..MM_CHECK_SEEDS (default 60) of MM_CHECK_STEPS
// (default 300) steps each; a safety violation fails the seed's subtest.
func mmSweep(t *testing.T) (int, map[uint64]mmSeedResult) {
	seeds := envInt("MM_CHECK_SEEDS", 60)
	steps := envInt("MM_CHECK_STEPS", 300)
	results := map[uint64]mmSeedResult{}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		ok := t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			results[seed] = runMMSeed(t, seed, steps, false)
		})
		if !ok {
			t.Fatalf("seed %d failed; replay with MM_CHECK_SEED=%d", seed, seed)
		}
	}
	return seeds, results
}

func mmCandidateSystems() []quorum.System {
	grid, _ := quorum.NewGrid(ids(4), 2, 2)
	flex, _ := quorum.NewFlexible(ids(4), 3, 2)
	return []quorum.System{
		majority(3), majorityOf(1, 2, 4), majorityOf(2, 3, 4, 5), majority(5), grid, majorityOf(3, 4, 5), flex,
	}
}

// runMMSeed runs one seed, then a quiet tail (everything booted and healed,
// 40 rounds of delivery and ticks), and reports the counters and whether
// the tail converged.
func runMMSeed(t *testing.T, seed uint64, steps int, trace bool) mmSeedResult {
	opts := paxos.Options{ElectionTicks: 6, HeartbeatTicks: 2, PipelineWindow: 4, ProposeQueueMax: 16,
		CatchUpBatch: 4, ReadTTLTicks: 8}
	mn := newMNet(t, majority(3), 3, journal.ModeMulti, opts, seed)
	mn.trace = trace
	mn.addJoiner(4, majority(5))
	mn.addJoiner(5, majority(5))
	rng := mn.rng
	systems := mmCandidateSystems()
	pick := func() *tnode { return mn.nodes[rng.IntN(len(mn.nodes))] }
	var sum paxos.Counters
	addCounters := func(c paxos.Counters) {
		sum.Elections += c.Elections
		sum.ReconfiguredElections += c.ReconfiguredElections
		sum.StaleConfigurations += c.StaleConfigurations
		sum.Collections += c.Collections
		sum.JoinerVotes += c.JoinerVotes
		sum.Decided += c.Decided
	}
	reconfs := 0
	x := uint64(seed << 24)
	for step := range steps {
		for range 1 + rng.IntN(8) {
			if len(mn.pool) == 0 {
				break
			}
			i := rng.IntN(len(mn.pool))
			switch rng.IntN(40) {
			case 0, 1:
				mn.pool = append(mn.pool, mn.pool[i])
				mn.deliver(i)
			case 2:
				mn.logf("drop %s", mn.pool[i])
				mn.pool = slices.Delete(mn.pool, i, i+1)
			default:
				mn.deliver(i)
			}
		}
		switch r := rng.IntN(10); {
		case r < 5:
			mn.sync(pick())
		case r < 8:
			mn.syncAll()
		}
		if rng.IntN(10) < 3 {
			for _, tn := range mn.nodes {
				mn.tick(tn)
			}
		} else if rng.IntN(3) == 0 {
			mn.tick(pick())
		}
		if l := mn.leader(); l != nil && rng.IntN(3) == 0 {
			x++
			res := l.node.Propose(unfenced(fmt.Sprintf("s%d-%x", seed, x)).Entry)
			mn.logf("propose at %d -> %d slot %d", l.id, res.Status, res.Slot)
			mn.drainNode(l)
		}
		switch r := rng.IntN(200); {
		case r < 4:
			tn := pick()
			if l := mn.leader(); l != nil && rng.IntN(4) > 0 {
				tn = l
			}
			if tn.up {
				sys := systems[rng.IntN(len(systems))]
				reconfs++
				mn.logf("reconfigure at %d to %v %s", tn.id, sys.Members(), sys)
				if err := tn.node.Reconfigure(sys); err != nil {
					t.Fatalf("Reconfigure(%s) at node %d: %v", sys, tn.id, err)
				}
				mn.drainNode(tn)
			}
		case r < 9:
			tn := pick()
			if tn.up {
				addCounters(tn.node.Counters())
				if rng.IntN(2) == 0 {
					mn.sync(tn)
				}
				mn.crash(tn)
			}
		case r < 16:
			if tn := pick(); !tn.up {
				mn.boot(tn)
			}
		case r < 18:
			if x := mn.mms[rng.IntN(len(mn.mms))]; x.up {
				mn.crashMM(x)
			} else {
				mn.bootMM(x)
			}
		case r < 20 && mn.cut == nil:
			mn.cut = map[paxos.NodeID]bool{pick().id: true}
			mn.logf("cut %v", mn.cut)
		case r < 26 && mn.cut != nil:
			mn.cut = nil
			mn.logf("heal")
		}
		if step%20 == 0 {
			mn.durableQuorums()
		}
	}
	mn.cut = nil
	for _, x := range mn.mms {
		if !x.up {
			mn.bootMM(x)
		}
	}
	for _, tn := range mn.nodes {
		if !tn.up {
			mn.boot(tn)
		}
	}
	for range 40 {
		mn.syncAll()
		for k := 0; len(mn.pool) > 0 && k < mmTailDeliveriesMax; k++ {
			mn.deliver(0)
			mn.syncAll()
		}
		for _, tn := range mn.nodes {
			mn.tick(tn)
		}
	}
	mn.syncAll()
	mn.durableQuorums()
	for _, tn := range mn.nodes {
		addCounters(tn.node.Counters())
	}
	res := mmSeedResult{counters: sum, reconfs: reconfs, stuck: mn.stuck()}
	if trace && res.stuck != "" {
		tail := mn.log[max(0, len(mn.log)-80):]
		res.stuck += "\ntrace tail:\n" + strings.Join(tail, "\n")
	}
	return res
}

// mmSeedResult is what one seed of the randomized run reports.
type mmSeedResult struct {
	counters paxos.Counters
	reconfs  int
	// stuck says why the quiet tail did not converge ("" when it did).
	stuck string
}

// stuck reports why the network has not converged: no leader, or a member
// of the leader's configuration behind it.
func (mn *mnet) stuck() string {
	l := mn.leader()
	if l == nil {
		return "no leader: " + mn.String()
	}
	for _, id := range l.node.Configuration().Acceptors.Members() {
		if tn := mn.find(id); tn != nil && tn.node.Applied() != l.node.Applied() {
			return fmt.Sprintf("node %d applied %d, leader %d applied %d", id, tn.node.Applied(), l.id, l.node.Applied())
		}
	}
	return ""
}

// mmTailDeliveriesMax bounds the deliveries of one round of the quiet tail:
// a livelock there is reported as a liveness failure, not a hang.
const mmTailDeliveriesMax = 500
