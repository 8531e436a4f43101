package paxos_test

// This file holds the helpers of the reconfiguration tests
// (reconfigure_*_test.go), which check reconfiguration with matchmakers
// (Whittaker et al., "Matchmaker Paxos: A Reconfigurable Consensus
// Protocol", §3 and §4, and docs/guide/reconfiguration.md, "What happens
// underneath") over the test network of matchmaker_harness_test.go: real
// nodes and real matchmakers, a message pool the script delivers, drops and
// holds back by hand. Each scenario opens with the sentence of the paper or
// the rule it plays, then its steps with the expected state checked inline;
// the oracles of oracles_test.go run after every batch.

import (
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

// nodeConfigOr is the node's believed acceptor set, or def when it is down.
func (tn *tnode) nodeConfigOr(def quorum.System) quorum.System {
	if !tn.up {
		return def
	}
	return tn.node.Configuration().Acceptors
}
