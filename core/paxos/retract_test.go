package paxos_test

import "testing"

// A stale belief once registered stayed in every later candidate's history
// until a collection above it, and a collection above it needs a leader
// that won a Phase-1 quorum of it: once that configuration lost a quorum
// for good, no election could ever be won again (sweep seed 3101048: a
// node cut off during a reconfiguration registered the founding
// configuration after two of its machines were gone).
//
// Old {1,2,3}, new {1,3,4}. Node 3 misses the change, campaigns, registers
// {1,2,3}, learns from the matchmakers' answers that its belief was
// superseded and campaigns again under {1,3,4}: its new Match says it ran
// no Phase 1 above its last one, and the matchmakers retract the stale
// registration. Nodes 1 and 2 then go for good. Nodes 3 and 4, a majority
// of the configuration in force, elect a leader: no Phase 1 needs {1,2,3}.
func TestRetractedStaleBeliefNeedsNoPhase1(t *testing.T) {
	cNew := majorityOf(1, 3, 4)
	mn := reconfiguredWithout3(t, cNew)
	n1, n3, n4 := mn.node(1), mn.node(3), mn.node(4)
	// node 1's collection makes {1,2,3} unneeded below its ballot.
	collected := func() bool { _, _, ok := n1.node.Collected(); return ok }
	for k := 0; k < 40 && !collected(); k++ {
		mn.exchange()
		mn.tick(n1)
	}
	expectEq(t, "node 1's collection is effective", collected(), true)

	// node 3, still cut off from the nodes, campaigns under {1,2,3}: its
	// registration is stale, and it campaigns again under {1,3,4}.
	mn.campaignOnce(n3)
	mn.exchange()
	expectEq(t, "node 3's stale configurations", n3.node.Counters().StaleConfigurations, uint64(1))
	expectSystem(t, "node 3 believes", n3.node.Configuration().Acceptors, cNew)
	for _, x := range mn.mms {
		reg, _ := x.mm.Registry(mmJournal)
		for _, r := range reg.Regs {
			if r.Ballot.Node == 3 && r.Acceptors.Contains(2) {
				t.Fatalf("matchmaker %d still holds node 3's stale registration %s", x.id, r)
			}
		}
	}

	// nodes 1 and 2 go for good; 3 and 4 elect a leader.
	mn.drop = nil
	mn.crash(n1)
	mn.crash(mn.node(2))
	if !mn.settleUntil(200, func() bool { return n3.node.IsLeader() || n4.node.IsLeader() }) {
		t.Fatalf("no leader among nodes 3 and 4: %s", mn)
	}
}
