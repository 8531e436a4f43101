package paxos_test

// This file pins four safety rules of reconfiguration with matchmakers
// (Whittaker et al., "Matchmaker Paxos", §3 and §4, and the spec's
// "Matchmakers and reconfiguration", "reads carry Since" and "The GC
// watermark and retirement" sections) that mutation testing found no other
// core test holds: a quorum read on a grid waits for answers that meet every
// Phase-1 quorum; a leader collects older configurations only once its
// recovery is drained and a Phase-2 quorum of its configuration reports the
// election fence chosen; an acceptor votes only in a ballot whose
// configuration it knows and names it; and a matchmaker's reply leaves only
// once the registry write it answers for is durable. Each test is a script
// over the test network of matchmaker_harness_test.go (real nodes and real
// matchmakers, a message pool the script delivers, drops and holds back by
// hand), with the expected state checked inline; each fails when its rule is
// deleted from the code.

import (
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

// node_reads.go, checkRead: "With matchmakers the answers must also meet
// every Phase-1 quorum of the configuration (they 'block' Phase 1): a
// reconfiguration that superseded it needed a Phase-1 quorum of it, whose
// members learned the new configuration with the Prepare, so one of them is
// among the answerers and names it." On the 2x2 grid {1,2,3,4} (rows {1,2}
// and {3,4}) node 3 moves to {3,4,5} with the promises of row {3,4} alone,
// while row {1,2} hears nothing, and a write is chosen under {3,4,5}. Node 1
// still believes the grid; its read is answered by row {1,2} only, a
// Phase-1 quorum of the grid that names no newer configuration. It must not
// be served (it misses the write): it waits. When node 3's answer arrives
// at last, it names the newer configuration and the read is abandoned.
func TestReconfigureQuorumReadOnAGridWaitsForEveryRow(t *testing.T) {
	grid, err := quorum.NewGrid(ids(4), 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	mn := newMNet(t, grid, 3, journal.ModeMulti, scenarioOpts(), 1)
	mn.trace = true
	n1, n3 := mn.node(1), mn.node(3)
	mn.electLeader(n3)
	s1 := mn.proposeW(n3, "before")
	mn.settle(2)
	expectFolded(t, mn.network, s1, unfenced("before"), mn.nodes...)
	cNew := majorityOf(3, 4, 5)
	mn.addJoiner(5, cNew)

	// reconfigure through row {3,4}: row {1,2} is cut off.
	mn.cut = map[paxos.NodeID]bool{1: true, 2: true}
	if err := n3.node.Reconfigure(cNew); err != nil {
		t.Fatal(err)
	}
	mn.drainNode(n3)
	mn.exchange()
	expectEq(t, "node 3 leads", n3.node.IsLeader(), true)
	expectSystem(t, "node 3 leads under", n3.node.Configuration().Acceptors, cNew)
	s2 := mn.proposeW(n3, "chosen-under-new")
	mn.exchange()
	if _, ok := n3.applied[s2]; !ok {
		t.Fatalf("the write at slot %d was not chosen under %v", s2, cNew.Members())
	}
	expectSystem(t, "node 1 still believes", n1.node.Configuration().Acceptors, grid)

	// node 1 reads; only row {1,2} answers (the questions to 3 and 4 are late).
	ctx := uint64(0x9a1d)
	mn.oracles.readOpened(ctx)
	if !n1.node.QuorumRead(ctx) {
		t.Fatalf("node 1 refused to open the read: the scenario needs it open (it learned the grid from node 3's beats)")
	}
	mn.drainNode(n1)
	mn.syncAll()
	late := takeWhere(mn, func(m paxos.Message) bool {
		return m.Type == paxos.MsgPreRead && (m.To == 3 || m.To == 4)
	})
	mn.exchange()
	if rs, ok := n1.reads[ctx]; ok {
		t.Fatalf("node 1 answered a read on row {1,2}'s answers alone: %+v; the write at slot %d was chosen under %v", rs, s2, cNew.Members())
	}
	if len(late) != 2 {
		t.Fatalf("held %d PreReads to row {3,4}, want 2", len(late))
	}

	// the late questions reach row {3,4}, whose answers name the new configuration.
	mn.cut = nil
	mn.deliverMsgs(late...)
	mn.exchange()

	rs, ok := n1.reads[ctx]
	if !ok || rs.OK {
		t.Fatalf("read after row {3,4} answered: %+v (answered %v), want unserved", rs, ok)
	}
	expectEq(t, "reads abandoned at node 1", n1.node.Counters().ReadsAbandoned, uint64(1))
	expectEq(t, "reads served at node 1", n1.node.Counters().ReadsServed, uint64(0))
}

// node_reconfigure.go, collect: the watermark is raised to the leader's
// ballot only when "the leadership is settled (its recovery is drained:
// every slot up to the election fence is chosen), and a Phase-2 quorum of
// C_b reports a chosen index at or past the fence" (Matchmaker Paxos §4;
// spec, "The GC watermark and retirement"). Old {1,2,3}: node 1 has a write
// chosen at slot s by {1,2,3} and crashes; node 2 never heard it chosen.
// Node 2 moves to {2,3,4}; its Phase 1 finds the write and its recovery
// re-proposes it at s, the election fence. While the recovery's Accepts are
// lost, no GarbageCollect may leave, and once they pass it leaves only
// after a Phase-2 quorum of {2,3,4} reports s chosen. Then the collection
// becomes effective at node 2's ballot.
//
// "node 3 knew s chosen": node 1's Commit reached node 3, so node 3's beat
// answers report the fence from the start; only the drained recovery holds
// the collection back. "no follower knew s chosen": the recovery is drained
// first while every Commit and beat of node 2 is lost, so only the fence
// quorum holds it back.
func TestReconfigureCollectsOnlyWhenSettled(t *testing.T) {
	for _, tc := range []struct {
		name         string
		n3KnowsFence bool
	}{
		{"node 3 knew s chosen", true},
		{"no follower knew s chosen", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mn, _ := mmCell(t, scenarioOpts())
			n1, n2, n3 := mn.node(1), mn.node(2), mn.node(3)
			cNew := majorityOf(2, 3, 4)
			n4 := mn.addJoiner(4, cNew)
			var gcs []paxos.Message
			block := func(paxos.Message) bool { return false }
			mn.drop = func(m paxos.Message) bool {
				if m.Type == paxos.MsgGarbageCollect {
					gcs = append(gcs, m)
				}
				return block(m)
			}
			toNew := func(m paxos.Message) bool { return m.From == 2 && (m.To == 3 || m.To == 4) }

			// node 1's write at s is voted by {1,2,3}; its Commit misses node 2.
			block = func(m paxos.Message) bool {
				return m.Type == paxos.MsgCommit && m.From == 1 && (m.To == 2 || m.To == 3 && !tc.n3KnowsFence)
			}
			s := mn.proposeW(n1, "old")
			mn.exchange()
			expectEq(t, "node 1's chosen index", n1.node.ChosenIndex(), s)
			expectEq(t, "node 2's chosen index", n2.node.ChosenIndex(), s-1)
			if tc.n3KnowsFence {
				expectEq(t, "node 3's chosen index", n3.node.ChosenIndex(), s)
			} else {
				expectEq(t, "node 3's chosen index", n3.node.ChosenIndex(), s-1)
			}
			mn.crash(n1)

			// node 2 reconfigures; its recovery's Accepts to 3 and 4 are lost.
			block = func(m paxos.Message) bool { return toNew(m) && m.Type == paxos.MsgAccept }
			if err := n2.node.Reconfigure(cNew); err != nil {
				t.Fatal(err)
			}
			mn.drainNode(n2)
			mn.exchange()
			expectEq(t, "node 2 leads", n2.node.IsLeader(), true)
			b := n2.node.LeaderBallot()
			expectSystem(t, "node 2 leads under", n2.node.Configuration().Acceptors, cNew)
			beats := func(k int) {
				for range k * scenarioOpts().HeartbeatTicks {
					mn.tick(n2)
					mn.exchange()
				}
			}
			beats(4)
			expectEq(t, "node 2 still leads (recovery held)", n2.node.IsLeader(), true)
			expectEq(t, "node 2's chosen index (recovery not drained)", n2.node.ChosenIndex(), s-1)
			if len(gcs) > 0 {
				t.Fatalf("node 2 sent %v before its recovery of slot %d was drained (chosen %d, node 3 chosen %d)",
					gcs, s, n2.node.ChosenIndex(), n3.node.ChosenIndex())
			}

			if !tc.n3KnowsFence {
				// the recovery is drained; no follower learns it.
				block = func(m paxos.Message) bool {
					switch m.Type {
					case paxos.MsgAccept:
						return toNew(m) && m.To == 4
					case paxos.MsgCommit, paxos.MsgHeartbeat:
						return toNew(m)
					}
					return false
				}
				beats(3)
				expectEq(t, "node 2 still leads (fence held)", n2.node.IsLeader(), true)
				expectEq(t, "node 2's chosen index (recovery drained)", n2.node.ChosenIndex(), s)
				expectEq(t, "node 3's chosen index", n3.node.ChosenIndex(), s-1)
				expectEq(t, "node 4's chosen index", n4.node.ChosenIndex(), s-1)
				if len(gcs) > 0 {
					t.Fatalf("node 2 sent %v before a Phase-2 quorum of %v reported slot %d chosen",
						gcs, cNew.Members(), s)
				}
			}

			// everything passes: the fence is reached and the collection follows.
			block = func(paxos.Message) bool { return false }
			ok := mn.settleUntil(20, func() bool { _, _, ok := n2.node.Collected(); return ok })

			if !ok {
				t.Fatalf("the collection never became effective: %s", mn)
			}
			w, _, _ := n2.node.Collected()
			expectEq(t, "watermark", w, b)
			if n3.node.ChosenIndex() < s && n4.node.ChosenIndex() < s {
				t.Fatalf("collected with neither node 3 (chosen %d) nor node 4 (chosen %d) at the fence %d",
					n3.node.ChosenIndex(), n4.node.ChosenIndex(), s)
			}
		})
	}
}

// node_phase2.go, handleAccept: "With matchmakers an acceptor votes only in
// a ballot whose configuration it knows (a Prepare or a Heartbeat of that
// ballot told it) and names it: a node outside its configuration never
// votes" (Matchmaker Paxos §3: a ballot's Phase 2 runs in C_b only). Node 1
// moves {1,2,3} to {1,2,4}; then node 2 reboots, forgetting the ballot's
// configuration (its promise of the ballot is durable). An Accept of the
// ballot reaching it before any beat gets no vote; after a Heartbeat of the
// ballot naming it, the same Accept does. Node 3, removed, never votes in
// the ballot: not with the configuration learned from the Prepare, not
// after a reboot, not after a Heartbeat.
func TestReconfigureAcceptorVotesOnlyInAKnownConfigurationNamingIt(t *testing.T) {
	mn, _ := mmCell(t, scenarioOpts())
	n1, n2, n3 := mn.node(1), mn.node(2), mn.node(3)
	cNew := majorityOf(1, 2, 4)
	mn.addJoiner(4, cNew)
	if err := n1.node.Reconfigure(cNew); err != nil {
		t.Fatal(err)
	}
	mn.drainNode(n1)
	mn.exchange()
	expectEq(t, "node 1 leads", n1.node.IsLeader(), true)
	b := n1.node.LeaderBallot()
	expectEq(t, "node 2 promised the ballot", n2.node.Promised(), b)
	expectEq(t, "node 3 promised the ballot", n3.node.Promised(), b)
	mn.crash(n2)
	mn.boot(n2)
	expectEq(t, "node 2's durable promise", n2.node.Promised(), b)
	// From here everything to nodes 2 and 3 is held for the script.
	var held []paxos.Message
	mn.drop = func(m paxos.Message) bool {
		if m.To == 2 || m.To == 3 {
			held = append(held, m)
			return true
		}
		return false
	}
	s := mn.proposeW(n1, "new")
	mn.exchange()
	for range scenarioOpts().HeartbeatTicks {
		mn.tick(n1)
	}
	mn.exchange()
	if _, ok := n1.applied[s]; !ok {
		t.Fatalf("the write at slot %d was not chosen by {1,4}", s)
	}
	var accept, beat2, beat3 paxos.Message
	for _, m := range held {
		switch {
		case m.Type == paxos.MsgAccept && m.To == 2 && accept.Type == 0:
			accept = m
		case m.Type == paxos.MsgHeartbeat && m.To == 2 && beat2.Type == 0:
			beat2 = m
		case m.Type == paxos.MsgHeartbeat && m.To == 3 && beat3.Type == 0:
			beat3 = m
		}
	}
	if accept.Type == 0 || beat2.Type == 0 || beat3.Type == 0 {
		t.Fatalf("held no Accept to 2 or Heartbeat to 2 and 3: %v", held)
	}
	toRemoved := accept
	toRemoved.To = 3
	step := func(tn *tnode, m paxos.Message) {
		tn.node.Step(m)
		mn.drainNode(tn)
		mn.sync(tn)
	}
	votedBy := func(id paxos.NodeID) []paxos.Message {
		return inPool(mn.network, match{typ: paxos.MsgAccepted, from: id})
	}
	recordAt := func(tn *tnode) bool { _, _, ok := tn.node.Acceptor().Record(s); return ok }

	// node 2, rebooted: the Accept comes before any beat.
	step(n2, accept)
	if v := votedBy(2); len(v) > 0 || recordAt(n2) {
		t.Fatalf("rebooted node 2 voted in %s without knowing its configuration: %v", b, v)
	}
	// a beat of the ballot names it; the Accept again (a resend).
	step(n2, beat2)
	expectSystem(t, "node 2 learned", n2.node.Configuration().Acceptors, cNew)
	step(n2, accept)
	if v := votedBy(2); len(v) != 1 || !recordAt(n2) {
		t.Fatalf("node 2 did not vote once it knew %s names it: %v", b, v)
	}

	// node 3, removed: it knows the ballot's configuration from the Prepare.
	step(n3, toRemoved)
	if v := votedBy(3); len(v) > 0 || recordAt(n3) {
		t.Fatalf("removed node 3 voted in %s: %v", b, v)
	}
	mn.crash(n3)
	mn.boot(n3)
	step(n3, toRemoved)
	if v := votedBy(3); len(v) > 0 || recordAt(n3) {
		t.Fatalf("removed node 3, rebooted, voted in %s: %v", b, v)
	}
	step(n3, beat3)
	expectSystem(t, "node 3 learned", n3.node.Configuration().Acceptors, cNew)
	step(n3, toRemoved)

	if v := votedBy(3); len(v) > 0 || recordAt(n3) {
		t.Fatalf("removed node 3 voted in %s after a beat naming %v: %v", b, cNew.Members(), v)
	}
}

// core/matchmaker's WriteOp: "Every op must be synced before the reply it
// precedes leaves (a registration is a promise to every later candidate)"
// (Matchmaker Paxos §3). With the harness holding each matchmaker's
// messages until its store syncs (holdMM), a reconfiguration's Match is
// answered by nobody before the syncs; a matchmaker that crashes before
// its sync has registered nothing and answered nothing. Every reply
// released is checked against the store's durable registry (syncMM), and
// the run goes on through the collection, whose acknowledgements are
// checked the same way.
func TestReconfigureMatchmakerRepliesAfterItsWriteIsDurable(t *testing.T) {
	mn, _ := mmCell(t, scenarioOpts())
	n1 := mn.node(1)
	cNew := majorityOf(1, 2, 4)
	mn.addJoiner(4, cNew)
	mn.holdMM = true
	if err := n1.node.Reconfigure(cNew); err != nil {
		t.Fatal(err)
	}
	mn.drainNode(n1)
	mn.sync(n1)
	matches := takeWhere(mn, func(m paxos.Message) bool { return m.Type == paxos.MsgMatch })
	if len(matches) != len(mn.mms) {
		t.Fatalf("node 1 sent %d Matches, want %d", len(matches), len(mn.mms))
	}
	b := matches[0].Ballot
	for _, m := range matches {
		mn.pool = append(mn.pool, m)
		mn.deliver(len(mn.pool) - 1)
	}
	durablyRegistered := func(x *tmatchmaker) bool {
		bs, err := x.store.Boot()
		if err != nil {
			t.Fatalf("boot scan of matchmaker %d: %v", x.id, err)
		}
		for _, r := range bs.Registries[mmJournal].Regs {
			if r.Ballot == b {
				return true
			}
		}
		return false
	}
	if r := inPool(mn.network, match{typ: paxos.MsgMatchReply}); len(r) > 0 {
		t.Fatalf("replies pooled before any registry sync: %v", r)
	}
	for _, x := range mn.mms {
		if len(x.held) != 1 || x.store.Pending() == 0 || durablyRegistered(x) {
			t.Fatalf("matchmaker %d: held %d replies, %d batches pending, registered durably %v; want 1, some, false",
				x.id, len(x.held), x.store.Pending(), durablyRegistered(x))
		}
	}
	expectEq(t, "node 1 matchmaking", n1.node.Role(), "candidate")

	// matchmaker 101 crashes before its sync: nothing registered, nothing said.
	mn.crashMM(mn.mm(101))
	mn.bootMM(mn.mm(101))
	if durablyRegistered(mn.mm(101)) {
		t.Fatalf("matchmaker 101 holds %s durably after crashing before its sync", b)
	}
	mn.syncMM(mn.mm(102))
	if r := inPool(mn.network, match{typ: paxos.MsgMatchReply}); len(r) != 1 || r[0].From != 102 || !durablyRegistered(mn.mm(102)) {
		t.Fatalf("after matchmaker 102's sync: pooled replies %v, registered durably %v; want one from 102, true",
			r, durablyRegistered(mn.mm(102)))
	}

	// the rest of the change and its collection, every reply checked.
	ok := mn.settleUntil(30, func() bool { _, _, ok := n1.node.Collected(); return ok })

	if !ok {
		t.Fatalf("the collection never became effective: %s", mn)
	}
	expectEq(t, "node 1 leads the new ballot", n1.node.LeaderBallot(), b)
	expectSystem(t, "node 1 leads under", n1.node.Configuration().Acceptors, cNew)
}
