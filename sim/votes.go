package sim

import (
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
)

// The vote ledger: every vote each acceptor cast, kept by the audit apart
// from the stores, and the oracle that checks every durable record against
// it. A store holds two kinds of record at a slot that look alike (both are
// written as OpAccept): a vote the acceptor cast, and a chosen value it
// learned (from its own decision, a Commit, a catch-up page, a handoff, or
// a peer's copy written over a damaged record). The core names its votes
// (paxos.Ready.Votes, through host.VoteObserver); everything else it writes
// must be a copy of a chosen value. So a durable record (slot, ballot,
// value) is allowed when
//
//   - the acceptor cast a vote at exactly that slot, ballot and value, and
//     the vote reached its disk (a CTRL re-proposal over a damaged record
//     is such a vote, at the new leader's ballot); or
//   - it is a copy of a chosen value: some acceptor's vote at exactly that
//     slot, ballot and value reached a disk (every learned value is read
//     from a record, and every record chain ends at a vote), and when the
//     slot is known chosen, the value is the chosen one.
//
// The scrubber's repair from memory (OpRewrite) writes the very record the
// acceptor held, and a trim-point jump or a truncation writes no record, so
// neither needs a rule of its own: the record written again is held to the
// rules above like any other. A damaged record (identity without a value)
// is allowed only where the rot injector planted it.
//
// The ledger outlives a crash: a vote that reached a disk stays a vote. A
// vote still in an unsynced batch when its process crashed (or its store
// was reopened after a failed sync) never reached the disk, and leaves the
// ledger: nothing on disk may claim it.
type voteLedger struct {
	// pending holds the votes handed to a store and not yet synced.
	pending map[njournal]map[castVote]struct{}
	// durable holds every vote that reached its acceptor's disk.
	durable map[ownVote]struct{}
	// anywhere holds every (journal, slot, ballot, value) some acceptor's
	// vote put on a disk: what a copy of a chosen value may be.
	anywhere map[jvote]struct{}
	// reported: each bad record is reported once, not at every check.
	reported map[ownVote]bool
}

// castVote is one vote: a slot, a ballot and the value's fingerprint.
type castVote struct {
	s  paxos.Slot
	b  paxos.Ballot
	fp uint64
}

type ownVote struct {
	k njournal
	v castVote
}

type jvote struct {
	j journal.ID
	v castVote
}

// claimRecords is the oracle's claim.
const claimRecords = "acceptor: every durable record is a vote it cast or a value chosen"

func newVoteLedger() voteLedger {
	return voteLedger{pending: map[njournal]map[castVote]struct{}{}, durable: map[ownVote]struct{}{},
		anywhere: map[jvote]struct{}{}, reported: map[ownVote]bool{}}
}

// Voted implements host.VoteObserver: the votes of a batch, as the batch
// goes to the store. They count once the batch is synced (votesSynced).
func (a *audit) Voted(node paxos.NodeID, j journal.ID, votes []paxos.SlotCommand) {
	k := njournal{node, j}
	m := a.ledger.pending[k]
	if m == nil {
		m = map[castVote]struct{}{}
		a.ledger.pending[k] = m
	}
	for _, v := range votes {
		m[castVote{v.Slot, v.Ballot, v.Command.Fingerprint()}] = struct{}{}
	}
}

// votesSynced runs after p's store for j synced batch: each vote the batch
// carried is now on disk, and every record the batch wrote is checked as
// the disk now holds it.
func (a *audit) votesSynced(p *proc, j journal.ID, batch []paxos.WriteOp) {
	k := njournal{p.id, j}
	pend := a.ledger.pending[k]
	for _, op := range batch {
		if op.Kind != paxos.OpAccept {
			continue
		}
		v := castVote{op.Slot, op.Ballot, op.Command.Fingerprint()}
		if _, ok := pend[v]; ok {
			delete(pend, v)
			a.ledger.durable[ownVote{k, v}] = struct{}{}
			a.ledger.anywhere[jvote{j, v}] = struct{}{}
		}
	}
	st := p.stores[j]
	for _, op := range batch {
		if op.Kind == paxos.OpRewrite {
			a.gate("acceptor: a scrub repair's record is held to the vote ledger")
		}
		switch op.Kind {
		case paxos.OpAccept, paxos.OpLearned, paxos.OpRewrite:
			if b, cmd, ok := st.Accepted(op.Slot); ok {
				a.checkRecord(p, j, paxos.SlotCommand{Slot: op.Slot, Ballot: b, Command: cmd}, "synced")
			}
		}
	}
}

// votesLost drops the votes of p's unsynced batches of j: a crash or a
// reopened store lost them with the batches.
func (a *audit) votesLost(p *proc, j journal.ID) { delete(a.ledger.pending, njournal{p.id, j}) }

// checkStores checks every durable record and every damaged one of p's
// stores (at boot, and at the end of the run).
func (a *audit) checkStores(p *proc, when string) {
	if p.wiped {
		return // an empty disk; its boot is refused
	}
	for _, js := range a.w.shape.Journals {
		st := p.stores[js.ID]
		if st == nil {
			continue
		}
		for _, r := range st.Records() {
			a.checkRecord(p, js.ID, r, when)
		}
		for _, f := range st.FaultyEntries() {
			if !slices.Contains(a.w.rot.copies[jslot{js.ID, f.Slot}], p.id) {
				a.violation("acceptor: a damaged durable record is one the rot injector planted",
					"n%d %s slot %d: damaged at %s (%s)", p.id, short(js.ID), f.Slot, f.Ballot, when)
			}
		}
	}
}

// checkRecord holds one durable record of p to the ledger's rules.
func (a *audit) checkRecord(p *proc, j journal.ID, r paxos.SlotCommand, when string) {
	v := castVote{r.Slot, r.Ballot, r.Command.Fingerprint()}
	own := ownVote{njournal{p.id, j}, v}
	if _, ok := a.ledger.durable[own]; ok {
		return
	}
	_, copied := a.ledger.anywhere[jvote{j, v}]
	chosen, known := a.chosen[jslot{j, r.Slot}]
	if copied && (!known || chosen.Equal(r.Command)) {
		a.gate("acceptor: a durable record that is no vote of its own copies a vote cast elsewhere")
		return
	}
	if a.ledger.reported[own] {
		return
	}
	a.ledger.reported[own] = true
	why := "no acceptor's vote put it on a disk"
	if copied {
		why = fmt.Sprintf("slot %d was chosen as %s", r.Slot, chosen)
	}
	a.violation(claimRecords, "n%d %s slot %d holds %s at %s, not a vote it cast there, and %s (%s)",
		p.id, short(j), r.Slot, r.Command, r.Ballot, why, when)
}

// checkEveryStore is the end of the run's check, over every process.
func (a *audit) checkEveryStore() {
	for _, p := range a.w.procs {
		a.checkStores(p, "end")
	}
}
