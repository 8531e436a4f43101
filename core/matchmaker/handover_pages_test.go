package matchmaker_test

import (
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
)

// A handover of a cell with more journals than one registry page holds
// (65 > RegistryPage) completes: a Stop asks for page 1 before it knows
// the page count, and the matchmakers answer every page.
func TestAHandoverOfMoreJournalsThanAPageCompletes(t *testing.T) {
	// Arrange: matchmakers 1, 2, 3 of generation 1, each holding a
	// registration for 65 journals; a reconfigurer at 1 moving to 1, 2, 4.
	olds := []paxos.NodeID{1, 2, 3}
	mms := map[paxos.NodeID]*matchmaker.Matchmaker{}
	for _, id := range []paxos.NodeID{1, 2, 3, 4} {
		mm, err := matchmaker.New(id, matchmaker.BootGeneration(id, olds), nil)
		if err != nil {
			t.Fatal(err)
		}
		mms[id] = mm
	}
	const journals = matchmaker.RegistryPage + 1
	for _, id := range olds {
		for k := range journals {
			j := journal.ID{Tenant: 1, Journal: uint64(k + 1)}
			mms[id].Step(j, paxos.Message{Type: paxos.MsgMatch, From: 1, To: id, Ballot: bal(9, 1),
				Config: majorityOf(1, 2, 3), Prepared: bal(9, 1), Generation: 1})
		}
		mms[id].Ready()
		mms[id].Advance()
	}
	r := matchmaker.NewReconfigurer(1, matchmaker.Set{Generation: 1, Members: olds}, []paxos.NodeID{1, 2, 4},
		matchmaker.ReconfigurerOptions{ResendTicks: 2, PhaseBudget: 50})

	// Act: carry every message both ways until the handover ends.
	for tick := 0; tick < 200 && r.Step() != matchmaker.RDone && r.Step() != matchmaker.RAbandoned; tick++ {
		for _, h := range r.Messages() {
			mms[h.To].StepHandover(h)
		}
		for _, mm := range mms {
			rd := mm.Ready()
			mm.Advance()
			for _, h := range rd.Handovers {
				if h.To == 1 {
					r.StepHandover(h)
				}
			}
		}
		r.Tick()
	}

	// Check: the new set is chosen at generation 2 and activated.
	if r.Step() != matchmaker.RDone {
		t.Fatalf("the handover of %d journals ended at step %v", journals, r.Step())
	}
	if got := r.Chosen(); got.Generation != 2 || len(got.Members) != 3 {
		t.Fatalf("chosen %v, want generation 2 of three members", got)
	}
}
