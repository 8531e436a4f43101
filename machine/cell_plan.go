package machine

import (
	"fmt"
	"slices"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/storage/machinerecord"
	"github.com/parosdb/paros/wire"
)

// planOf is the cell plan r holds (nil before the machine is in a cell):
// for a founder, the value of its vote in the cell decree.
func planOf(r machinerecord.Record) *pb.CellPlan {
	if r.CellID == 0 {
		return nil
	}
	p := &pb.CellPlan{CellId: r.CellID}
	for _, m := range r.Members {
		p.Members = append(p.Members, &pb.Member{NodeId: m.NodeID, Addr: m.Addr})
	}
	for _, j := range r.Journals {
		p.Journals = append(p.Journals, wire.JournalIDToPB(j.ID()))
	}
	p.Matchmakers = slices.Clone(r.Matchmakers)
	for _, m := range r.Replicas {
		p.Replicas = append(p.Replicas, &pb.Member{NodeId: m.NodeID, Addr: m.Addr})
	}
	for _, m := range r.Proxies {
		p.Proxies = append(p.Proxies, &pb.Member{NodeId: m.NodeID, Addr: m.Addr})
	}
	if r.Control != nil {
		p.ControlJournal = wire.JournalIDToPB(r.Control.ID())
		p.ElectionJournal = wire.JournalIDToPB(r.Election.ID())
	}
	return p
}

// recordWithPlan is r with the cell plan p in it, or an error if p is empty
// or would make a record Validate refuses.
func recordWithPlan(r machinerecord.Record, p *pb.CellPlan) (machinerecord.Record, error) {
	control, election := wire.JournalIDFromPB(p.GetControlJournal()), wire.JournalIDFromPB(p.GetElectionJournal())
	if p.GetCellId() == 0 || len(p.GetMembers()) == 0 || len(p.GetJournals()) == 0 && !control.IsSet() {
		return r, fmt.Errorf("empty plan")
	}
	r.Control, r.Election = nil, nil
	if p.GetControlJournal() != nil || p.GetElectionJournal() != nil {
		r.Control = &machinerecord.JournalID{Tenant: control.Tenant, Journal: control.Journal}
		r.Election = &machinerecord.JournalID{Tenant: election.Tenant, Journal: election.Journal}
	}
	r.CellID = p.GetCellId()
	r.Members, r.Journals = nil, nil
	for _, mb := range p.GetMembers() {
		r.Members = append(r.Members, machinerecord.Member{NodeID: mb.GetNodeId(), Addr: mb.GetAddr()})
	}
	for _, j := range p.GetJournals() {
		id := wire.JournalIDFromPB(j)
		r.Journals = append(r.Journals, machinerecord.JournalID{Tenant: id.Tenant, Journal: id.Journal})
	}
	r.Matchmakers = slices.Clone(p.GetMatchmakers())
	r.Replicas = nil
	for _, mb := range p.GetReplicas() {
		r.Replicas = append(r.Replicas, machinerecord.Member{NodeID: mb.GetNodeId(), Addr: mb.GetAddr()})
	}
	r.Proxies = nil
	for _, mb := range p.GetProxies() {
		r.Proxies = append(r.Proxies, machinerecord.Member{NodeID: mb.GetNodeId(), Addr: mb.GetAddr()})
	}
	check := r
	if check.Founder() {
		check.VoteRound = 1 // a founder's record comes with its vote; an admitted machine's without
	}
	return r, check.Validate()
}

// planFingerprint is the identity of a plan in the cell decree: its cell
// id. The id names one plan and only one: a proposer draws a fresh random
// id (randomID, 63 bits) with every new plan and never alters a plan it
// adopts, so two plans differ in content only if they differ in id, and
// the id is never 0 (recordWithPlan refuses such a plan). It is also the
// identity the acceptor judges by: FormCell answers formed for a plan of
// the cell it voted for and other_cell for any other, so a formed answer
// attests exactly this fingerprint. A hash of the plan's encoding would
// not do: a formed machine's plan (planOf) drifts from the one voted once
// the operator changes the replica or proxy lists, yet it is the same
// vote.
func planFingerprint(p *pb.CellPlan) uint64 { return p.GetCellId() }

// sameMembers reports whether ms name exactly the machines ids.
func sameMembers(ms []*pb.Member, ids []uint64) bool {
	var a []uint64
	for _, m := range ms {
		a = append(a, m.GetNodeId())
	}
	b := slices.Clone(ids)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
