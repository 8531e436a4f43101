package matchmaker_test

// This file holds FuzzMatchmaker's naive model (fuzz_test.go): a plain
// list per journal. Each Step predicts the exact write and reply; a reply's
// history is checked against the rule, not the code: every registration in
// [watermark, ballot) except a belief that a later one (or the requester's
// own) repeats. After every step the matchmaker's registries must equal the
// model's and keep their invariants (sorted, distinct, none below the
// watermark, no reconfiguration above the effective one); the watermark and
// the effective configuration never fall within a boot, and the durable
// ones never fall across reboots.

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
)

// wantReply is one reply the model predicts. below and own are the
// registrations in [watermark, ballot) and the requester's own at the
// step, for the history rule (a registration reply with Refusal OK only).
type wantReply struct {
	env   matchmaker.Envelope
	below []paxos.Registration
	own   paxos.Registration
	match bool
}

func sameReg(a, b paxos.Registration) bool {
	return a.Ballot == b.Ballot && a.Reconfiguration == b.Reconfiguration && paxos.SameSystem(a.Acceptors, b.Acceptors)
}

func sameRegistry(a, b matchmaker.Registry) bool {
	return a.Watermark == b.Watermark && sameReg(a.Effective, b.Effective) &&
		slices.EqualFunc(a.Regs, b.Regs, sameReg)
}

// highestOf is the highest ballot registered: the last registration, or
// the effective configuration's when higher (it was registered, and
// survives collection).
func highestOf(r *matchmaker.Registry) paxos.Ballot {
	if r == nil {
		return paxos.Ballot{}
	}
	h := r.Effective.Ballot
	if len(r.Regs) > 0 && h.Less(r.Regs[len(r.Regs)-1].Ballot) {
		h = r.Regs[len(r.Regs)-1].Ballot
	}
	if h.Less(r.Retracted) {
		h = r.Retracted
	}
	return h
}

// lastAt is the registration at ballot b: the last one, or the effective
// configuration once its entry was collected.
func lastAt(r *matchmaker.Registry, b paxos.Ballot) paxos.Registration {
	if n := len(r.Regs); n > 0 && r.Regs[n-1].Ballot == b {
		return r.Regs[n-1]
	}
	return r.Effective
}

// keepsInvariants is the Registry doc comment's invariants, checked
// naively, with the bounds New must refuse a store beyond (validate.go):
// no registration at the zero ballot, and the effective configuration
// agreeing with the registration at its ballot.
func keepsInvariants(r matchmaker.Registry) error {
	for i, reg := range r.Regs {
		switch {
		case reg.Ballot.IsZero() || !reg.Ballot.InRange() || reg.Acceptors.IsZero():
			return fmt.Errorf("registration %s malformed", reg)
		case reg.Ballot == r.Effective.Ballot && (!reg.Reconfiguration || !paxos.SameSystem(reg.Acceptors, r.Effective.Acceptors)):
			return fmt.Errorf("registration %s disagrees with the effective configuration", reg)
		case reg.Ballot.Less(r.Watermark):
			return fmt.Errorf("registration %s below the watermark %s", reg.Ballot, r.Watermark)
		case i > 0 && !r.Regs[i-1].Ballot.Less(reg.Ballot):
			return fmt.Errorf("registrations %s, %s not strictly ascending", r.Regs[i-1].Ballot, reg.Ballot)
		case reg.Reconfiguration && r.Effective.Ballot.Less(reg.Ballot):
			return fmt.Errorf("reconfiguration %s above the effective %s", reg.Ballot, r.Effective.Ballot)
		}
	}
	return nil
}

func (f *mmFuzz) modelRegistry(j journal.ID) *matchmaker.Registry {
	r := f.model[j]
	if r == nil {
		r = &matchmaker.Registry{}
		f.model[j] = r
	}
	return r
}

// predict is the model's step: the write and the reply the request must
// produce, and the registry it must leave.
func (f *mmFuzz) predict(j journal.ID, m paxos.Message) {
	if m.To != mmID || !m.Type.IsMatchmakerRequest() || m.From == 0 || !wellFormed(m) {
		f.reached["dropped"]++
		return
	}
	reply := paxos.Message{Type: m.Type, From: mmID, To: m.From, Ballot: m.Ballot, Generation: m.Generation}
	want := func(w wantReply) {
		w.env = matchmaker.Envelope{Journal: j, Msg: reply}
		f.replies = append(f.replies, w)
	}
	if !f.closed && m.Generation != 1 {
		// The founding matchmaker serves generation 1 only: an older
		// generation is pointed at the set it knows, any other is inactive.
		reply.Type, reply.Refusal = paxos.MsgMatchReply, paxos.MatchInactive
		if m.Generation == 0 {
			reply.Refusal, reply.Successor = paxos.MatchGeneration, founding.Set
		}
		f.reached["refused for its generation"]++
		f.counters.GenerationRefusals++
		want(wantReply{})
		return
	}
	if f.closed {
		if m.Type != paxos.MsgGarbageCollect {
			reply.Type, reply.Refusal = paxos.MsgMatchReply, paxos.MatchClosed
			f.reached["closed"]++
			want(wantReply{})
		}
		return
	}
	switch m.Type {
	case paxos.MsgMatch:
		b := m.Ballot
		if b.IsZero() || b.Node != m.From {
			return
		}
		if m.Config.IsZero() {
			f.reached["retraction request"]++
			if r := f.model[j]; r != nil {
				f.retract(j, r, m, nil, true)
			}
			reply.Type, reply.Refusal = paxos.MsgMatchReply, paxos.MatchRetracted
			want(wantReply{})
			return
		}
		r := f.modelRegistry(j)
		own := paxos.Registration{Ballot: b, Acceptors: m.Config, Reconfiguration: m.Reconf}
		h := highestOf(r)
		reply.Type, reply.GC = paxos.MsgMatchReply, r.Watermark
		var below []paxos.Registration
		for _, reg := range r.Regs {
			if !reg.Ballot.Less(r.Watermark) && reg.Ballot.Less(b) {
				below = append(below, reg)
			}
		}
		switch {
		case b.Less(r.Watermark):
			f.reached["below the watermark"]++
			f.counters.Refused++
			reply.Refusal = paxos.MatchBelowWatermark
			want(wantReply{})
		case b == h && sameReg(lastAt(r, b), own):
			f.reached["repeat"]++
			f.counters.Repeats++
			below = f.retract(j, r, m, below, false)
			reply.Effective = r.Effective
			want(wantReply{below: below, own: own, match: true})
		case !h.Less(b):
			f.reached["stale"]++
			f.counters.Refused++
			reply.Refusal, reply.Refused = paxos.MatchStale, h
			want(wantReply{})
		default:
			f.reached["registered"]++
			if own.Reconfiguration {
				f.reached["registered a reconfiguration"]++
			}
			f.counters.Registered++
			r.Regs = append(r.Regs, own)
			if own.Reconfiguration && r.Effective.Ballot.Less(b) {
				r.Effective = own
			}
			reply.Effective = r.Effective
			f.writes = append(f.writes, matchmaker.WriteOp{Kind: matchmaker.OpRegister, Journal: j, Reg: own})
			below = f.retract(j, r, m, below, false)
			want(wantReply{below: below, own: own, match: true})
		}
	case paxos.MsgProbe:
		f.reached["probe"]++
		f.counters.Probes++
		reply.Type = paxos.MsgMatchReply
		if r := f.model[j]; r != nil {
			reply.GC, reply.Effective = r.Watermark, r.Effective
		}
		want(wantReply{})
	case paxos.MsgGarbageCollect:
		if m.GC.IsZero() || m.GC.Node != m.From {
			return
		}
		r := f.modelRegistry(j)
		if r.Watermark.Less(m.GC) {
			f.reached["collected"]++
			f.counters.Collected++
			r.Watermark = m.GC
			r.Regs = slices.DeleteFunc(r.Regs, func(reg paxos.Registration) bool { return reg.Ballot.Less(m.GC) })
			f.writes = append(f.writes, matchmaker.WriteOp{Kind: matchmaker.OpWatermark, Journal: j, Watermark: m.GC})
		}
		reply.Type, reply.GC = paxos.MsgGarbageCollectAck, r.Watermark
		want(wantReply{})
	}
}

// checkHistory holds a registration reply's history to the rule: the
// registrations in [watermark, ballot), ascending, leaving out exactly the
// beliefs that a later one (or the requester's own) repeats.
func (f *mmFuzz) checkHistory(w wantReply, got []paxos.Registration) {
	var want []paxos.Registration
	for i, reg := range w.below {
		later := append(slices.Clone(w.below[i+1:]), w.own)
		repeated := slices.ContainsFunc(later, func(x paxos.Registration) bool { return paxos.SameSystem(x.Acceptors, reg.Acceptors) })
		if reg.Reconfiguration || !repeated {
			want = append(want, reg)
		} else {
			f.reached["history left a belief out"]++
		}
	}
	if !slices.EqualFunc(got, want, sameReg) {
		f.fail("reply %s: history %v, want %v (registrations in [watermark, ballot): %v)", w.env.Msg, got, want, w.below)
	}
	for _, reg := range got {
		if reg.Ballot.Less(w.env.Msg.GC) || !reg.Ballot.Less(w.env.Msg.Ballot) {
			f.fail("reply %s: history entry %s outside [%s, %s)", w.env.Msg, reg, w.env.Msg.GC, w.env.Msg.Ballot)
		}
	}
}

// check holds the matchmaker to the model and to its invariants.
func (f *mmFuzz) check() {
	var want []journal.ID
	for j, r := range f.model {
		want = append(want, j)
		got, ok := f.mm.Registry(j)
		if !ok || !sameRegistry(got, *r) {
			f.fail("journal %s: registry %+v, model %+v", j, got, *r)
		}
		if err := keepsInvariants(got); err != nil {
			f.fail("journal %s: %v", j, err)
		}
		if got.Watermark.Less(f.seenWM[j]) || got.Effective.Ballot.Less(f.seenEff[j]) {
			f.fail("journal %s: watermark %s effective %s fell from %s %s", j, got.Watermark, got.Effective.Ballot, f.seenWM[j], f.seenEff[j])
		}
		if got.Watermark.Less(f.durableWM[j]) || got.Effective.Ballot.Less(f.durableEff[j]) {
			f.fail("journal %s: watermark %s effective %s below the durable %s %s", j, got.Watermark, got.Effective.Ballot, f.durableWM[j], f.durableEff[j])
		}
		f.seenWM[j], f.seenEff[j] = got.Watermark, got.Effective.Ballot
	}
	slices.SortFunc(want, func(a, b journal.ID) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Journal, b.Journal))
	})
	if got := f.mm.Journals(); !slices.Equal(got, want) {
		f.fail("Journals() = %v, want %v", got, want)
	}
	if got := f.mm.Counters(); got != f.counters {
		f.fail("counters %+v, model %+v", got, f.counters)
	}
	if (f.mm.Closed() != nil) != f.closed {
		f.fail("Closed() = %v, model closed %v", f.mm.Closed(), f.closed)
	}
}
