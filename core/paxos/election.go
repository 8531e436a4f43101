package paxos

import (
	"github.com/parosdb/paros/core/quorum"
)

// election is the Phase-1 tally of one campaign (Paxos Made Simple §2.2,
// phase 1). Promises are paged: a sender counts only after its terminal
// page. The merge keeps, per slot, the report with the highest ballot (P2c);
// two reports at one (slot, ballot) must agree, since one proposer proposes
// one value per slot and ballot.
//
// configs are the configurations whose Phase-1 quorums the campaign needs:
// on a plain deployment the one static configuration; with matchmakers
// every configuration of the history H_b and the campaign's own C_b
// (Matchmaker Paxos §3). The tally is kept by node id, and the campaign
// wins only when every configuration holds a Phase-1 quorum of its own
// members — never a quorum of the union, which could be all new members
// and none of an old configuration that may have chosen a value.
type election struct {
	ballot  Ballot
	from    Slot
	configs []quorum.System
	granted idSet
	refused idSet
	pages   map[NodeID]Slot // next page's first slot per sender
	found   map[Slot]SlotCommand
	// faultyBy holds each damaged-record report, by slot and answerer: a
	// damaged record is its own answer and never "nothing accepted"
	// (ctrl.go decides the slots it tops).
	faultyBy map[Slot]map[NodeID]Ballot
	maxSlot  Slot
	// contract receives a peer's contract violation (contract.go).
	contract *contract
}

// idSet is a set of node ids (an election's answers span configurations,
// so member indexes of one system cannot name them).
type idSet map[NodeID]struct{}

func (s idSet) has(id NodeID) bool { _, ok := s[id]; return ok }

// in is the members of sys that are in s, as sys's index set.
func (s idSet) in(sys quorum.System) quorum.Set {
	var out quorum.Set
	for i, id := range sys.Members() {
		if s.has(id) {
			out = out.Add(i)
		}
	}
	return out
}

func newElection(b Ballot, from Slot, configs []quorum.System, c *contract) *election {
	return &election{ballot: b, from: from, configs: configs, granted: idSet{}, refused: idSet{},
		found: make(map[Slot]SlotCommand), maxSlot: from - 1, contract: c}
}

// addressees is every member of every configuration, once, in order.
func (e *election) addressees() []NodeID {
	var out []NodeID
	seen := idSet{}
	for _, sys := range e.configs {
		for _, id := range sys.Members() {
			if !seen.has(id) {
				seen[id] = struct{}{}
				out = append(out, id)
			}
		}
	}
	return out
}

// addressed reports whether id is a member of some configuration.
func (e *election) addressed(id NodeID) bool {
	for _, sys := range e.configs {
		if sys.Contains(id) {
			return true
		}
	}
	return false
}

// result is Won when every configuration holds a Phase-1 quorum of
// granted members, Lost when some configuration can no longer hold one.
func (e *election) result() quorum.Result {
	out := quorum.Won
	for _, sys := range e.configs {
		switch sys.Phase1(e.granted.in(sys), e.refused.in(sys)) {
		case quorum.Lost:
			return quorum.Lost
		case quorum.Pending:
			out = quorum.Pending
		}
	}
	return out
}

// refuse records a refusal from id.
func (e *election) refuse(id NodeID) {
	if !e.granted.has(id) {
		e.refused[id] = struct{}{}
	}
}

// absorb folds one Promise page from id.
func (e *election) absorb(id NodeID, entries []SlotCommand, faulty []SlotBallot, terminal bool) {
	if e.granted.has(id) || e.refused.has(id) {
		return // a duplicate page after the terminal one
	}
	for _, sc := range entries {
		if sc.Slot < e.from {
			continue
		}
		cur, ok := e.found[sc.Slot]
		switch {
		case !ok || cur.Ballot.Less(sc.Ballot):
			e.found[sc.Slot] = sc
		case cur.Ballot == sc.Ballot && !cur.Command.Equal(sc.Command):
			e.contract.raise("two values reported at slot %d ballot %s: %s and %s", sc.Slot, sc.Ballot, cur.Command, sc.Command)
			continue
		}
		e.maxSlot = max(e.maxSlot, sc.Slot)
	}
	for _, f := range faulty {
		if f.Slot < e.from {
			continue
		}
		if e.faultyBy == nil {
			e.faultyBy = make(map[Slot]map[NodeID]Ballot)
		}
		if e.faultyBy[f.Slot] == nil {
			e.faultyBy[f.Slot] = make(map[NodeID]Ballot)
		}
		e.faultyBy[f.Slot][id] = f.Ballot
		e.maxSlot = max(e.maxSlot, f.Slot)
	}
	if e.contract.fault != nil {
		return // a contradicting page is no promise
	}
	if terminal {
		e.granted[id] = struct{}{}
	}
}

// pageFrom is the slot the next Promise page from id must start at.
func (e *election) pageFrom(id NodeID) Slot {
	if s, ok := e.pages[id]; ok {
		return s
	}
	return e.from
}

func (e *election) setPageFrom(id NodeID, s Slot) {
	if e.pages == nil {
		e.pages = make(map[NodeID]Slot)
	}
	e.pages[id] = s
}
