// Package matchmaker is the Matchmaker Paxos matchmaker role (Whittaker et
// al., "Matchmaker Paxos: A Reconfigurable Consensus Protocol", §3), sans-IO
// like the rest of the core. A matchmaker is consulted only on a round
// change, never on the command path: a candidate registers its ballot and
// the configuration it will use, and learns every configuration registered
// below it that may still hold a chosen value (its history H_b).
//
// One matchmaker serves every journal of its set: it keeps one Registry per
// journal, all in one store. Every change is durable before the answer that
// reveals it leaves (Ready: persist Writes, then send Messages), and a
// storage fault closes the whole set.
package matchmaker

import (
	"slices"

	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

// Registry is one journal's registrations.
//
// Invariants: Regs is sorted by ballot, ascending, without duplicates;
// every registration is at or above Watermark; Effective is the
// highest-ballot reconfiguration ever registered (a monotone scalar that
// garbage collection never removes); Retracted is the highest ballot ever
// retracted (monotone too: a retracted registration still counts as
// registered, so nothing registers at or below it again).
type Registry struct {
	Watermark paxos.Ballot
	Effective paxos.Registration
	Retracted paxos.Ballot
	Regs      []paxos.Registration
}

// highest is the highest registered ballot (zero when none). The effective
// configuration was registered too, and survives collection, so it counts:
// a registration at or below it is stale even once its own entry is gone
// (found by FuzzMatchmaker: a belief registered at the effective ballot).
func (r *Registry) highest() paxos.Ballot {
	h := r.Effective.Ballot
	if len(r.Regs) > 0 && h.Less(r.Regs[len(r.Regs)-1].Ballot) {
		h = r.Regs[len(r.Regs)-1].Ballot
	}
	if h.Less(r.Retracted) {
		h = r.Retracted
	}
	return h
}

// history is what a reply to a registration at ballot b carries: every
// registration in [Watermark, b), leaving out a belief when a later
// registration (in the history, or the requester's own at b) repeats its
// configuration. The requester needs a Phase-1 quorum of each distinct
// configuration once; a registry that failed campaigns filled with one
// configuration then fits in one reply. One pass from the newest down,
// remembering the configurations seen (few: a registry holds a handful of
// distinct ones between two collections).
func (r *Registry) history(b paxos.Ballot, own paxos.Registration) []paxos.Registration {
	seen := []quorum.System{own.Acceptors}
	var out []paxos.Registration
	for i := len(r.Regs) - 1; i >= 0; i-- {
		reg := r.Regs[i]
		if !reg.Ballot.Less(b) {
			continue
		}
		repeated := slices.ContainsFunc(seen, func(s quorum.System) bool { return paxos.SameSystem(s, reg.Acceptors) })
		if !repeated {
			seen = append(seen, reg.Acceptors)
		} else if !reg.Reconfiguration {
			continue
		}
		out = append(out, reg)
	}
	slices.Reverse(out)
	return out
}

// register adds reg (the caller checked it is above every registration).
func (r *Registry) register(reg paxos.Registration) {
	r.Regs = append(r.Regs, reg)
	if reg.Reconfiguration && r.Effective.Ballot.Less(reg.Ballot) {
		r.Effective = reg
	}
}

// retract deletes the registration at b and remembers b as retracted.
func (r *Registry) retract(b paxos.Ballot) {
	r.Regs = slices.DeleteFunc(r.Regs, func(reg paxos.Registration) bool { return reg.Ballot == b })
	if r.Retracted.Less(b) {
		r.Retracted = b
	}
}

// collect raises the watermark to w and forgets every registration below it.
func (r *Registry) collect(w paxos.Ballot) {
	r.Watermark = w
	i := 0
	for i < len(r.Regs) && r.Regs[i].Ballot.Less(w) {
		i++
	}
	r.Regs = slices.Delete(r.Regs, 0, i)
}

// Clone returns a deep copy (the audit keeps snapshots).
func (r Registry) Clone() Registry {
	r.Regs = slices.Clone(r.Regs)
	return r
}
