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
