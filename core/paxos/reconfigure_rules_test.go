package paxos_test

// This file pins safety rules of reconfiguration with matchmakers
// (Whittaker et al., "Matchmaker Paxos", §3 and §4, and the spec's
// "Matchmakers and reconfiguration", "reads carry Since" and "The GC
// watermark and retirement" sections) that mutation testing found no other
// core test holds: a quorum read on a grid waits for answers that meet every
// Phase-1 quorum; a leader collects older configurations only once its
// recovery is drained and a Phase-2 quorum of its configuration reports the
// election fence chosen; an acceptor votes only in a ballot whose
// configuration it knows and names it; a matchmaker's reply leaves only
// once the registry write it answers for is durable; a follower's quorum
// read is served at or past the election fence of the leadership whose beat
// taught it its configuration; and a follower with no such beat opens no
// read. Each test is a script over the test network of
// matchmaker_harness_test.go (real nodes and real matchmakers, a message
// pool the script delivers, drops and holds back by hand), with the
// expected state checked inline; each fails when its rule is deleted from
// the code.

import (
	"fmt"
	"slices"
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

// node_reads.go, QuorumRead: "A follower reads at or past the fence of the
// leadership that taught it its configuration: a write chosen in an older
// configuration is below that fence (the leadership's Phase 1 met a quorum
// of that configuration, which refused the older ballot from then on), but
// the acceptors of the newer one may not have voted for it yet" (Matchmaker
// Paxos §3: Phase 2 of a new configuration starts only after its leader's
// Phase 1 over every older one; the simulator's seeds 1702 and 1718). Old
// {1,2,3}: a write is chosen at slot s by {1,2} alone, node 3 hears nothing
// of it. Node 3 moves to {3,4,5}; its Phase 1 meets {1,2,3} and finds s,
// and its recovery re-proposes s, but the recovery's Accepts and Commits to
// the joiners 4 and 5 are held back (node 3's own vote at s is cast with
// the recovery and cannot be held, so node 3's answer to the read is late
// too). The joiners hear the new leader's beat and learn {3,4,5} and its
// fence. Node 4 reads; {4,5}, a Phase-1 quorum of {3,4,5} that blocks every
// other, answers with vote watermarks below s. The read must not be served
// below s: it waits, and is served at or past s once the recovery reaches
// the joiners. (The read oracle fails the run on its own if the read is
// served without the write: s was acknowledged before the read opened.)
func TestReconfigureJoinerReadsEveryWriteTheOldConfigurationChose(t *testing.T) {
	mn, _ := mmCell(t, scenarioOpts())
	n1, n2, n3 := mn.node(1), mn.node(2), mn.node(3)
	cNew := majorityOf(3, 4, 5)
	n4, n5 := mn.addJoiner(4, cNew), mn.addJoiner(5, cNew)
	var held []paxos.Message
	block := func(paxos.Message) bool { return false }
	mn.drop = func(m paxos.Message) bool {
		if block(m) {
			held = append(held, m)
			return true
		}
		return false
	}
	voteAt := func(tn *tnode, s paxos.Slot) bool { _, _, ok := tn.node.Acceptor().Record(s); return ok }

	// old {1,2,3}: slot s is chosen by {1,2}; node 3 never gets the Accept.
	block = func(m paxos.Message) bool {
		return m.From == 1 && m.To == 3 &&
			(m.Type == paxos.MsgAccept || m.Type == paxos.MsgCommit || m.Type == paxos.MsgHeartbeat)
	}
	s := mn.proposeW(n1, "old")
	mn.exchange()
	expectEq(t, "node 1's chosen index", n1.node.ChosenIndex(), s)
	expectEq(t, "node 2 voted at s", voteAt(n2, s), true)
	expectEq(t, "node 3 voted at s", voteAt(n3, s), false)
	expectEq(t, "node 3's chosen index", n3.node.ChosenIndex(), s-1)
	held = nil // node 1's Accept to node 3 is lost for good

	// node 3 moves to {3,4,5}; its recovery's Accepts and Commits to the
	// joiners are held, its first beat passes.
	toJoiners := func(m paxos.Message) bool { return m.From == 3 && (m.To == 4 || m.To == 5) }
	block = func(m paxos.Message) bool {
		return toJoiners(m) && (m.Type == paxos.MsgAccept || m.Type == paxos.MsgCommit)
	}
	if err := n3.node.Reconfigure(cNew); err != nil {
		t.Fatal(err)
	}
	mn.drainNode(n3)
	mn.exchange()
	expectEq(t, "node 3 leads", n3.node.IsLeader(), true)
	expectSystem(t, "node 3 leads under", n3.node.Configuration().Acceptors, cNew)
	expectEq(t, "node 3's chosen index (recovery held)", n3.node.ChosenIndex(), s-1)
	if !slices.Contains(acceptSlots(held), s) {
		t.Fatalf("held Accepts carry slots %v, want the recovery of slot %d among them", acceptSlots(held), s)
	}
	for _, tn := range []*tnode{n4, n5} {
		expectSystem(t, fmt.Sprintf("node %d learned from the beat", tn.id), tn.node.Configuration().Acceptors, cNew)
		if w := tn.node.Acceptor().VoteWatermark(); w >= s {
			t.Fatalf("node %d's vote watermark %d, want below s=%d", tn.id, w, s)
		}
	}

	// node 4 reads; node 3's answer is late, {4,5} answer below s.
	recovery := block
	block = func(m paxos.Message) bool {
		return recovery(m) || m.Type == paxos.MsgPreRead && m.From == 4 && m.To == 3
	}
	ctx := uint64(0x1702)
	mn.oracles.readOpened(ctx)
	if !n4.node.QuorumRead(ctx) {
		t.Fatalf("node 4 refused to open the read: the scenario needs it open (it learned {3,4,5} from node 3's beat)")
	}
	mn.drainNode(n4)
	mn.exchange()
	if rs, ok := n4.reads[ctx]; ok {
		t.Fatalf("node 4 answered the read on {4,5}'s watermarks alone: %+v (applied %d); the old configuration chose slot %d",
			rs, n4.node.Applied(), s)
	}

	// the recovery reaches the joiners: s is chosen under {3,4,5}.
	block = func(paxos.Message) bool { return false }
	late := held
	held = nil
	mn.deliverMsgs(late...)
	mn.exchange()

	rs, ok := n4.reads[ctx]
	if !ok || !rs.OK || rs.Index < s {
		t.Fatalf("read after the recovery: %+v (answered %v), want served at or past %d", rs, ok, s)
	}
	expectFolded(t, mn.network, s, unfenced("old"), n3, n4)
}

// node_reads.go, QuorumRead: "No basis (a belief from the matchmakers, not
// from a leader) opens no read." A belief the matchmakers taught (a boot
// probe's answer, or a StaleConfiguration) names the configuration in force
// but not the election fence of any leadership of it, so a follower holding
// it opens no read; the next beat of a leader at its belief's ballot gives
// it the fence, and reads open again. Old {1,2,3}, new {1,2,4}, node 2
// misses the change and a write is chosen under {1,2,4} at slot s; node 1's
// messages to node 2 are lost while node 2 learns the change from the
// matchmakers.
func TestReconfigureFollowerWithoutALeadersBasisOpensNoRead(t *testing.T) {
	for _, how := range []string{"probe", "stale configuration"} {
		t.Run(how, func(t *testing.T) {
			mn, _ := mmCell(t, scenarioOpts())
			n1, n2 := mn.node(1), mn.node(2)
			cNew := majorityOf(1, 2, 4)
			mn.addJoiner(4, cNew)
			if how == "probe" {
				mn.crash(n2)
			} else {
				mn.cut = map[paxos.NodeID]bool{2: true}
			}
			if err := n1.node.Reconfigure(cNew); err != nil {
				t.Fatal(err)
			}
			mn.drainNode(n1)
			mn.exchange()
			expectEq(t, "node 1 leads", n1.node.IsLeader(), true)
			b := n1.node.LeaderBallot()
			s := mn.proposeW(n1, "under-new")
			mn.exchange()
			mn.cut = nil
			// node 1's messages to node 2 are lost, and so are node 2's
			// Matches once an answer named {1,2,4} (after a
			// StaleConfiguration it campaigns again at once: it must not win).
			mn.drop = func(m paxos.Message) bool {
				return m.From == 1 && m.To == 2 ||
					m.Type == paxos.MsgMatch && m.From == 2 && n2.node.Counters().StaleConfigurations > 0
			}
			if how == "probe" {
				mn.boot(n2)
			}

			// node 2 learns {1,2,4} from the matchmakers.
			learned := func() bool { return paxos.SameSystem(n2.node.Configuration().Acceptors, cNew) }
			for k := 0; k < 100 && !learned(); k++ {
				mn.tick(n2)
				mn.exchange()
			}
			if !learned() {
				t.Fatalf("node 2 never learned %v from the matchmakers: %s", cNew.Members(), mn)
			}
			c := n2.node.Counters()
			if how == "probe" {
				expectEq(t, "node 2's probes", c.Probes, uint64(1))
				expectEq(t, "node 2's role", n2.node.Role(), "follower")
			} else {
				expectEq(t, "node 2's stale configurations", c.StaleConfigurations, uint64(1))
				expectEq(t, "node 2's role (campaigning again)", n2.node.Role(), "candidate")
			}
			expectEq(t, "node 2's belief is the reconfiguration", n2.node.Configuration().Ballot, b)
			if n2.node.QuorumRead(0xba5e) {
				t.Fatalf("node 2 opened a read on a belief from the matchmakers (%s), with no leader's fence", n2.node.Configuration())
			}

			// a leader's beat at node 2's belief arrives: reads open again.
			// After a StaleConfiguration node 2 promised its new campaign's
			// ballot, above node 1's: it refuses node 1's beat, node 1 steps
			// down and is elected again above it (node 2's campaigns stay
			// unmatched), and that leadership's beat is the basis.
			mn.drop = func(m paxos.Message) bool { return m.Type == paxos.MsgMatch && m.From == 2 }
			for range scenarioOpts().HeartbeatTicks {
				mn.tick(n1)
			}
			mn.exchange()
			if how == "stale configuration" {
				expectEq(t, "node 1 deposed by node 2's promise", n1.node.IsLeader(), false)
				mn.electLeader(n1)
				expectEq(t, "node 2 promised node 1's new ballot", n2.node.Promised(), n1.node.LeaderBallot())
			}
			expectEq(t, "node 2 follows node 1's ballot", n2.node.Configuration().Ballot, n1.node.LeaderBallot())
			expectEq(t, "node 2's role", n2.node.Role(), "follower")
			ctx := uint64(0xba5f)
			mn.oracles.readOpened(ctx)
			if !n2.node.QuorumRead(ctx) {
				t.Fatalf("node 2 refused a read after node 1's beat at %s", n1.node.LeaderBallot())
			}
			mn.drainNode(n2)
			mn.exchange()

			rs, ok := n2.reads[ctx]
			if !ok || !rs.OK || rs.Index < s {
				t.Fatalf("read after the beat: %+v (answered %v), want served at or past %d", rs, ok, s)
			}
		})
	}
}
