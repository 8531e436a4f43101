package paxos_test

import (
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
)

// A member told to campaign soon campaigns at its next tick, however long
// its election timeout; the others still wait theirs out.
func TestCampaignSoonCampaignsAtTheNextTick(t *testing.T) {
	opts := paxos.Options{ElectionTicks: 20, HeartbeatTicks: 2, PipelineWindow: 4, ProposeQueueMax: 16}
	net := newNetwork(t, majority(3), journal.ModeSingle, opts, 7)
	n1, n2 := net.node(1), net.node(2)
	n1.node.SetElectionTimeout(20)
	n2.node.SetElectionTimeout(20)
	n1.node.CampaignSoon()
	net.tick(n1)
	net.tick(n2)
	if !n1.node.Campaigning() {
		t.Fatalf("node 1 was told to campaign soon and is %s after one tick", n1.node.Role())
	}
	if n2.node.Campaigning() {
		t.Fatalf("node 2 campaigns after one tick of a 20-tick timeout")
	}
}

// A campaign told to be soon is eager: its Prepares to members that were
// not serving the journal yet (here: cut off, so they never heard them)
// are sent again at every tick, and the node leads one tick after the
// members can hear it, not an election timeout later. A campaign that was
// not told so asks once and waits its timeout out.
func TestCampaignSoonReasksTheSilentMembers(t *testing.T) {
	for _, soon := range []bool{true, false} {
		opts := paxos.Options{ElectionTicks: 20, HeartbeatTicks: 2, PipelineWindow: 4, ProposeQueueMax: 16}
		net := newNetwork(t, majority(3), journal.ModeSingle, opts, 7)
		n1 := net.node(1)
		for _, tn := range net.nodes {
			tn.node.SetElectionTimeout(20)
		}
		if soon {
			n1.node.CampaignSoon()
		} else {
			for range 19 {
				net.tick(n1)
			}
		}
		net.cut = map[paxos.NodeID]bool{1: true} // its peers do not serve the journal yet
		net.tick(n1)
		net.deliverAll()
		if !n1.node.Campaigning() {
			t.Fatalf("soon=%v: node 1 is %s, want campaigning", soon, n1.node.Role())
		}
		net.cut = nil // the peers serve it now
		net.tick(n1)
		net.deliverAll()
		if got := n1.node.IsLeader(); got != soon {
			t.Fatalf("soon=%v: node 1 leads=%v one tick after its peers could hear it (reasked %d)", soon, got, n1.node.Counters().Reasked)
		}
		if soon && n1.node.Counters().Reasked != 2 {
			t.Errorf("reasked %d Prepares, want one to each silent peer (2)", n1.node.Counters().Reasked)
		}
	}
}

// With matchmakers a fresh node's first campaign is a probe that learns
// the configuration in force. An eager node campaigns at the tick after
// its probe is answered, not an election timeout later: it leads within
// a few ticks of being told, where a node that was not told has not even
// probed yet.
func TestCampaignSoonCampaignsRightAfterTheProbe(t *testing.T) {
	opts := paxos.Options{ElectionTicks: 20, HeartbeatTicks: 2, PipelineWindow: 4, ProposeQueueMax: 16}
	mn := newMNet(t, majority(3), 3, journal.ModeSingle, opts, 1)
	n1 := mn.find(1)
	for _, tn := range mn.nodes {
		tn.node.SetElectionTimeout(20)
	}
	n1.node.CampaignSoon()
	for range 4 {
		mn.tick(n1)
		mn.exchange()
	}
	if !n1.node.IsLeader() {
		t.Fatalf("node 1 is %s four ticks after CampaignSoon with a 20-tick timeout, want leader", n1.node.Role())
	}
}
