package paxos

import (
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/quorum"
)

// round is the Phase-2 tally of one slot at the leader's ballot.
type round struct {
	cmd   journal.Command
	tally Tally
	open  bool // proposed and not yet decided
	sent  bool // its Accept has left (false: queued behind the window)
	// custody is the proxy leader the round is delegated to (0: the
	// leader runs it itself); delegations counts re-delegations since
	// (node_proxy.go). pinned rounds (a recovery's, a gap fill's) always
	// run on the leader.
	custody     NodeID
	delegations int
	pinned      bool
	// probe is the suspect proxy a round the leader runs itself is also
	// handed to, so the proxy's first answer clears the suspicion.
	probe NodeID
}

// rounds is the leader's Phase-2 bookkeeping: one round per slot from the
// lowest undecided slot up (Paxos Made Simple §2.2, phase 2; the tally is
// always asked of quorum.System, so on a grid only the slot's column
// decides and a vote outside it counts for nothing).
type rounds struct {
	ballot Ballot
	log    slotLog[round]
}

func newRounds(b Ballot, base Slot) *rounds {
	return &rounds{ballot: b, log: newSlotLog[round](base)}
}

func (rs *rounds) open(s Slot, cmd journal.Command) *round {
	r := rs.log.ensure(s)
	*r = round{cmd: cmd, tally: NewTally(cmd.Fingerprint()), open: true}
	return r
}

func (rs *rounds) at(s Slot) *round {
	r := rs.log.at(s)
	if r == nil || !r.open {
		return nil
	}
	return r
}

// vote folds one Accepted vote; it reports a decision when the slot's votes
// now hold a Phase-2 quorum. A vote for another fingerprint is not counted.
func (rs *rounds) vote(sys quorum.System, s Slot, idx int, fp uint64) (decided bool) {
	r := rs.at(s)
	if r == nil {
		return false
	}
	if _, decided := r.tally.Grant(sys, s, idx, fp); decided {
		r.open = false
		return true
	}
	return false
}

// release forgets rounds below s (decided and applied).
func (rs *rounds) release(s Slot) { rs.log.dropBelow(s) }
