package paxos

import (
	"github.com/parosdb/paros/core/quorum"
)

// election is the Phase-1 tally of one campaign (Paxos Made Simple §2.2,
// phase 1). Promises are paged: a sender counts only after its terminal
// page. The merge keeps, per slot, the report with the highest ballot (P2c);
// two reports at one (slot, ballot) must agree, since one proposer proposes
// one value per slot and ballot.
type election struct {
	ballot  Ballot
	from    Slot
	granted quorum.Set
	refused quorum.Set
	// paging: senders that answered at least one page but not the last.
	partial quorum.Set
	pages   map[int]Slot // next page's first slot per member
	found   map[Slot]SlotCommand
	// faulty reports whose value no answer has resolved (CTRL, later).
	faulty  map[Slot]Ballot
	maxSlot Slot
	// contract receives a peer's contract violation (contract.go).
	contract *contract
}

func newElection(b Ballot, from Slot, c *contract) *election {
	return &election{ballot: b, from: from, found: make(map[Slot]SlotCommand), maxSlot: from - 1, contract: c}
}

// absorb folds one Promise page from member index idx.
func (e *election) absorb(idx int, entries []SlotCommand, faulty []SlotBallot, terminal bool) {
	if e.granted.Has(idx) || e.refused.Has(idx) {
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
		if e.faulty == nil {
			e.faulty = make(map[Slot]Ballot)
		}
		if cur, ok := e.faulty[f.Slot]; !ok || cur.Less(f.Ballot) {
			e.faulty[f.Slot] = f.Ballot
		}
		e.maxSlot = max(e.maxSlot, f.Slot)
	}
	if e.contract.fault != nil {
		return // a contradicting page is no promise
	}
	if terminal {
		e.granted = e.granted.Add(idx)
	} else {
		e.partial = e.partial.Add(idx)
	}
}

// unresolvedFaulty reports a slot whose highest report is a faulty record:
// its value is unknown, so neither re-proposing nor a Noop is safe. Protocol
// -aware recovery (CTRL) resolves it; until then the campaign cannot lead.
func (e *election) unresolvedFaulty() (Slot, bool) {
	for s, fb := range e.faulty {
		if cur, ok := e.found[s]; !ok || cur.Ballot.Less(fb) {
			return s, true
		}
	}
	return 0, false
}
