package paxos_test

// This file checks reads, elections and retirement across configurations
// with matchmakers (Matchmaker Paxos §3 and §4, docs/guide/reconfiguration.md):
// quorum reads meeting a newer configuration, a minority registration, a
// retired configuration not needed again, and paged Phase 1. Scenarios run
// over the test network of matchmaker_harness_test.go with the helpers of
// reconfigure_test.go; the oracles of oracles_test.go run after every batch.

import (
	"fmt"
	"slices"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

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
