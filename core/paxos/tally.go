package paxos

import "github.com/parosdb/paros/core/quorum"

// Tally is the Phase-2 tally of one value at one ballot (Paxos Made Simple
// §2.2, phase 2): the votes for the value's fingerprint and the refusals.
// It is the one place the code base decides that a value is chosen: the
// leader's rounds, a proxy leader's delegated rounds and the single-decree
// Paxos that decides a matchmaker set (decree.go) all count through it,
// and the decision is always asked of quorum.System, so on a grid only the
// slot's column decides and a vote outside it counts for nothing.
//
// Invariant: granted and refused are disjoint after every Grant (a member
// that voted for the value is no longer counted as refusing it).
type Tally struct {
	fp      uint64
	granted quorum.Set
	refused quorum.Set
}

// NewTally opens the tally of the value whose fingerprint is fp.
func NewTally(fp uint64) Tally { return Tally{fp: fp} }

// Fingerprint is the fingerprint of the value tallied.
func (t *Tally) Fingerprint() uint64 { return t.fp }

// Grant folds a vote by member idx (its index in sys) for the value whose
// fingerprint is fp at slot s. A vote for another value is not counted.
// It reports whether the vote is new, and whether the votes now hold a
// Phase-2 quorum of sys at s.
func (t *Tally) Grant(sys quorum.System, s Slot, idx int, fp uint64) (counted, decided bool) {
	if fp != t.fp {
		return false, false
	}
	counted = !t.granted.Has(idx)
	t.granted = t.granted.Add(idx)
	t.refused &^= quorum.Set(0).Add(idx)
	return counted, sys.Phase2(s, t.granted, t.refused) == quorum.Won
}

// Refuse folds a refusal by member idx (it promised a higher ballot).
func (t *Tally) Refuse(idx int) {
	if !t.granted.Has(idx) {
		t.refused = t.refused.Add(idx)
	}
}

// Lost reports whether the refusals leave no Phase-2 quorum of sys at s.
func (t *Tally) Lost(sys quorum.System, s Slot) bool {
	return sys.Phase2(s, t.granted, t.refused) == quorum.Lost
}
