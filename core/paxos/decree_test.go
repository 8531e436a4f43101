package paxos_test

import (
	"testing"

	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

type val uint64

func fpVal(v val) uint64 { return uint64(v) }

func decreeSys(t *testing.T) quorum.System {
	t.Helper()
	sys, err := quorum.NewMajority([]quorum.ID{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	return sys
}

// Paxos Made Simple §2.2 over a one-slot log: a proposer whose Phase 1
// meets a vote proposes the highest-ballot vote's value, not its own, so
// a value chosen stays chosen.
func TestDecreeAdoptsTheHighestVote(t *testing.T) {
	sys := decreeSys(t)
	acc := map[paxos.NodeID]*paxos.DecreeAcceptor[val]{1: {}, 2: {}, 3: {}}
	b1 := paxos.Ballot{Round: 1, Node: 7}
	p1 := paxos.NewDecreeProposer(sys, fpVal, b1, val(10))
	for _, id := range []paxos.NodeID{1, 2} {
		if ok, _ := acc[id].Prepare(b1); !ok {
			t.Fatalf("acceptor %d refused %s", id, b1)
		}
		p1.Promise(id, acc[id].Vote)
	}
	if p1.Step() != paxos.DecreeAccepting || p1.Value() != 10 {
		t.Fatalf("p1 %v value %d, want accepting 10", p1.Step(), p1.Value())
	}
	// Only acceptor 1 votes before p1 stops: 10 is not chosen.
	if ok, _ := acc[1].Accept(b1, 10); !ok || p1.Accepted(1, 10) {
		t.Fatalf("one vote decided")
	}
	b2 := paxos.Ballot{Round: 2, Node: 8}
	p2 := paxos.NewDecreeProposer(sys, fpVal, b2, val(20))
	for _, id := range []paxos.NodeID{1, 3} {
		acc[id].Prepare(b2)
		p2.Promise(id, acc[id].Vote)
	}
	if p2.Value() != 10 {
		t.Fatalf("p2 proposes %d after a Phase 1 that met a vote for 10", p2.Value())
	}
	for _, id := range []paxos.NodeID{2, 3} {
		acc[id].Prepare(b2)
		if ok, _ := acc[id].Accept(b2, p2.Value()); !ok {
			t.Fatalf("acceptor %d refused %s", id, b2)
		}
		p2.Accepted(id, fpVal(acc[id].Vote.Value))
	}
	if p2.Step() != paxos.DecreeChosen || p2.Value() != 10 {
		t.Fatalf("p2 %v value %d, want chosen 10", p2.Step(), p2.Value())
	}
	if ok, _ := acc[1].Accept(b1, 30); ok {
		t.Fatal("an Accept below the promise was admitted")
	}
}

// A refusal quorum loses the ballot; votes for another value never count.
func TestDecreeLosesOnRefusalsAndCountsOneValue(t *testing.T) {
	sys := decreeSys(t)
	b := paxos.Ballot{Round: 3, Node: 7}
	p := paxos.NewDecreeProposer(sys, fpVal, b, val(1))
	p.Promise(1, paxos.DecreeVote[val]{})
	p.Promise(2, paxos.DecreeVote[val]{})
	if p.Accepted(1, 99) || p.Accepted(2, 99) || p.Step() == paxos.DecreeChosen {
		t.Fatal("votes for another value decided")
	}
	p.Refused(2)
	if p.Step() == paxos.DecreeLost {
		t.Fatal("one refusal lost a majority of three")
	}
	if !p.Refused(3) {
		t.Fatalf("two refusals of three: step %v, want lost", p.Step())
	}
	q := paxos.NewDecreeProposer(sys, fpVal, b, val(1))
	q.Refused(1)
	if !q.Refused(2) || q.Step() != paxos.DecreeLost {
		t.Fatalf("Phase 1 refused by a majority: step %v, want lost", q.Step())
	}
}
