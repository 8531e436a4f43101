package sim

import (
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/celldecree"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
)

// Every seed's cell is formed through the cell decree before it serves:
// its founders (the shape's nodes) run core/celldecree's Acceptor, one or
// two initiators run its Proposer with the operator's retry (a new attempt
// from above the initiator machine's own promise, until one ends with the
// plan chosen and formed everywhere), over a network that drops,
// duplicates and delays, with founders crashing at each durability seam:
// after a promise is written, between formatting the plan's stores and
// recording the vote (the commit point), and after the vote. A caller
// holding a founder's certificate may push one founder's promise as far
// up as the bound allows, so the proposer's step ladder runs. The world
// then serves the plan chosen: its journals are the plan's.
//
// Oracles: at most one plan is chosen (a majority's durable votes at one
// ballot); a founder's vote never changes plan, its promise never falls
// and its vote is never above it; an initiator told "chosen" holds the
// plan chosen; and at the end every founder voted the chosen plan and
// every initiator is done (liveness under a quiet tail).

// formationGates are the gates of the cell decree.
var formationGates = []string{
	"formation: two initiators contend for the cell decree",
	"formation: an initiator adopts a plan another voted",
	"formation: a founder crashes between formatting and its vote, and resumes",
	"formation: the step ladder lifts a founder's promise",
	"formation: a chosen plan is formed at a founder that missed it",
}

// simPlan is a plan of the simulated decree: its id, the founders and the
// journals it names.
type simPlan struct {
	ID       uint64
	Founders []paxos.NodeID
	Journals []journal.ID
}

var simPlans = celldecree.Plans[simPlan]{
	ID:       func(p simPlan) uint64 { return p.ID },
	Founders: func(p simPlan) []paxos.NodeID { return p.Founders },
}

// founder is one founding machine. rec and formatted are durable (the
// machine record and the plan whose stores are formatted); everything
// else is lost in a crash.
type founder struct {
	rec       celldecree.Acceptor[simPlan]
	formatted uint64
	up        bool
	epoch     int
}

// initiator is an operator's InitCell at one founder's machine.
type initiator struct {
	at      paxos.NodeID
	prop    *celldecree.Proposer[simPlan]
	fresh   map[uint64]bool // the plan ids its attempts drew
	attempt int
	done    bool
}

// formation is one seed's cell decree.
type formation struct {
	w          *World
	s          scheduler
	g          rng
	ids        []paxos.NodeID
	journals   []journal.ID
	founders   map[paxos.NodeID]*founder
	inits      []*initiator
	answered   map[uint64]bool // ask keys answered or given up
	askSeq     uint64
	drop, dup  int
	crashPct   int
	chaosEnd   int64
	votes      map[paxos.Ballot]map[uint64][]paxos.NodeID // durable votes, by ballot and plan
	chosen     uint64
	formatOnly map[paxos.NodeID]uint64 // crashed between format and vote: the plan formatted
	pushed     map[paxos.Ballot]bool   // the ballots push promised
}

// formCell runs the decree for w's shape: the world serves the plan chosen.
func (w *World) formCell() {
	f := &formation{w: w, g: newRNG(w.seed*0x2545f4914f6cdd1d + 0x5eed), ids: slices.Clone(w.shape.Nodes),
		founders: map[paxos.NodeID]*founder{}, answered: map[uint64]bool{}, votes: map[paxos.Ballot]map[uint64][]paxos.NodeID{},
		formatOnly: map[paxos.NodeID]uint64{}, pushed: map[paxos.Ballot]bool{}}
	f.s.trace = w.opts.Trace
	for _, j := range w.shape.Journals {
		f.journals = append(f.journals, j.ID)
	}
	for _, id := range f.ids {
		f.founders[id] = &founder{rec: celldecree.Acceptor[simPlan]{Self: id}, up: true}
	}
	f.drop, f.dup = f.g.intn(16), f.g.intn(11)
	if f.g.pct(60) {
		f.crashPct = 3 + f.g.intn(10)
	}
	f.chaosEnd = f.g.between(100, 600) * ms
	// One or two initiators, at distinct machines: a machine runs one
	// CellInit at a time, so two never share a ballot.
	at := slices.Clone(f.ids)
	for i := range 1 + f.g.intn(2) {
		k := f.g.intn(len(at))
		in := &initiator{at: at[k], fresh: map[uint64]bool{}}
		at = slices.Delete(at, k, k+1)
		f.inits = append(f.inits, in)
		f.s.at(f.g.between(0, 20)*ms, lbl("formation: initiator %d starts", uint64(i)), func() { f.start(in) })
	}
	if f.g.pct(25) {
		f.s.at(f.g.between(0, 10)*ms, lbl("formation: a founder's promise is pushed"), f.push)
	}
	f.s.at(f.chaosEnd, lbl("formation: chaos over"), f.quiet)
	f.s.runUntil(30_000 * ms)
	f.conclude()
	w.sched.mix(0, fmt.Sprintf("formation %x", f.s.hash))
	for _, line := range f.s.lines {
		w.sched.lines = append(w.sched.lines, "formation "+line)
	}
	w.sched.note("cell formed: plan %x over %v", f.chosen, f.ids)
}

// start opens an attempt of in, above its machine's own promise (the
// ballots of its earlier attempts are its own and all below it).
func (f *formation) start(in *initiator) {
	if in.done || in.prop != nil {
		return
	}
	fd := f.founders[in.at]
	if !fd.up {
		f.s.after(f.g.between(10, 40)*ms, lbl("formation: operator retries at n%d", uint64(in.at)), func() { f.start(in) })
		return
	}
	in.attempt++
	prop, asks := celldecree.NewProposer(celldecree.Config[simPlan]{
		Plans: simPlans, Founders: f.ids, Node: in.at, Round: fd.rec.Promised.Round + 1,
		Fresh: func() simPlan {
			id := f.g.u64() | 1
			in.fresh[id] = true
			return simPlan{ID: id, Founders: f.ids, Journals: f.journals}
		},
		Names: func(p simPlan) bool { return slices.Equal(p.Founders, f.ids) },
	})
	in.prop = prop
	f.send(in, prop, asks)
	f.settle(in, prop)
}

// send carries asks of prop: each to its founder after a latency (or
// dropped, or twice), and a timeout that gives it up unanswered.
func (f *formation) send(in *initiator, prop *celldecree.Proposer[simPlan], asks []celldecree.Ask[simPlan]) {
	if in.prop != prop {
		return // the attempt died with its machine
	}
	for _, ask := range asks {
		f.askSeq++
		key := f.askSeq
		copies := 1
		if f.s.now < f.chaosEnd {
			if f.g.pct(f.drop) {
				copies = 0
			} else if f.g.pct(f.dup) {
				copies = 2
			}
		}
		for range copies {
			f.s.after(f.g.between(1, 8)*ms, lbl("formation: n%d asks n%d phase %d", uint64(in.at), uint64(ask.To), uint64(ask.Phase)),
				func() { f.deliver(in, prop, key, ask) })
		}
		f.s.after(60*ms, lbl("formation: ask %d times out", key), func() {
			if !f.answered[key] {
				f.answered[key] = true
				f.send(in, prop, prop.Unanswered(ask))
				f.settle(in, prop)
			}
		})
	}
}

// deliver runs ask at its founder and sends the answer back once what it
// revealed is durable; the founder may crash at the seam instead.
func (f *formation) deliver(in *initiator, prop *celldecree.Proposer[simPlan], key uint64, ask celldecree.Ask[simPlan]) {
	fd := f.founders[ask.To]
	if !fd.up {
		return
	}
	var next celldecree.Acceptor[simPlan]
	var ans celldecree.Answer[simPlan]
	var effect celldecree.Effect
	if ask.Phase == celldecree.Prepare {
		next, ans, effect = fd.rec.Prepare(simPlans, ask.Ballot, ask.Named)
	} else {
		next, ans, effect = fd.rec.Form(simPlans, ask.Ballot, ask.Plan)
	}
	if effect == celldecree.FormatThenVote {
		fd.formatted = next.Plan.ID
		if f.crashHere() {
			f.formatOnly[ask.To] = next.Plan.ID
			f.crash(ask.To, "between formatting and its vote")
			return
		}
	}
	if effect != celldecree.Nothing {
		f.write(ask.To, next)
		if f.crashHere() {
			f.crash(ask.To, "after a durable write, before the answer")
			return
		}
	}
	if ans.Granted && ask.Phase == celldecree.Form {
		if id, ok := f.formatOnly[ask.To]; ok && id == ask.Plan.ID {
			f.w.audit.gate("formation: a founder crashes between formatting and its vote, and resumes")
			delete(f.formatOnly, ask.To)
		}
	}
	if f.s.now < f.chaosEnd && f.g.pct(f.drop) {
		return
	}
	f.s.after(f.g.between(1, 8)*ms, lbl("formation: n%d answers n%d", uint64(ask.To), uint64(in.at)), func() {
		if f.answered[key] || in.prop != prop {
			return
		}
		f.answered[key] = true
		if ans.Refusal == celldecree.PromisedHigher && ans.Promise.Node != in.at && !f.pushed[ans.Promise] {
			f.w.audit.gate("formation: two initiators contend for the cell decree")
		}
		if ans.Refusal == celldecree.RoundTooFar {
			f.w.audit.gate("formation: the step ladder lifts a founder's promise")
		}
		f.send(in, prop, prop.Answered(ask, ans))
		f.settle(in, prop)
	})
}

// write makes next the founder's durable state, checking its invariants
// and recording a vote in the ledger.
func (f *formation) write(id paxos.NodeID, next celldecree.Acceptor[simPlan]) {
	fd := f.founders[id]
	old := fd.rec
	switch {
	case next.Promised.Less(old.Promised):
		f.w.audit.violation("formation: a founder's promise never falls", "n%d: %v after %v", uint64(id), next.Promised, old.Promised)
	case next.Promised.Less(next.VoteBallot):
		f.w.audit.violation("formation: a founder's vote is never above its promise", "n%d: vote %v promise %v", uint64(id), next.VoteBallot, next.Promised)
	case old.Plan.ID != 0 && next.Plan.ID != old.Plan.ID:
		f.w.audit.violation("formation: a founder's vote is final", "n%d voted %x, then %x", uint64(id), old.Plan.ID, next.Plan.ID)
	}
	fd.rec = next
	if next.Plan.ID == 0 || next.VoteBallot.IsZero() || next.VoteBallot == old.VoteBallot {
		return
	}
	byPlan := f.votes[next.VoteBallot]
	if byPlan == nil {
		byPlan = map[uint64][]paxos.NodeID{}
		f.votes[next.VoteBallot] = byPlan
	}
	byPlan[next.Plan.ID] = append(byPlan[next.Plan.ID], id)
	if len(byPlan[next.Plan.ID]) >= len(f.ids)/2+1 {
		if f.chosen != 0 && f.chosen != next.Plan.ID {
			f.w.audit.violation("formation: at most one plan is chosen", "%x and %x", f.chosen, next.Plan.ID)
		}
		f.chosen = next.Plan.ID
	}
}

func (f *formation) crashHere() bool { return f.s.now < f.chaosEnd && f.g.pct(f.crashPct) }

// crash stops founder id; it restarts from its durable state a little
// later (at the latest when the chaos ends).
func (f *formation) crash(id paxos.NodeID, seam string) {
	fd := f.founders[id]
	fd.up = false
	fd.epoch++
	f.s.note("formation: n%d crashes %s", id, seam)
	for _, in := range f.inits {
		if in.at == id && in.prop != nil { // the attempt dies with its machine; the operator retries
			in.prop = nil
			f.s.after(f.g.between(10, 40)*ms, lbl("formation: operator retries at n%d", uint64(in.at)), func() { f.start(in) })
		}
	}
	epoch := fd.epoch
	f.s.after(f.g.between(5, 80)*ms, lbl("formation: n%d restarts", uint64(id)), func() {
		if fd.epoch == epoch {
			fd.up = true
		}
	})
}

// push is a caller with a founder's certificate promising one founder a
// ballot as far above its promise as the bound allows: the others are now
// out of the bound's reach of the rounds that win it.
func (f *formation) push() {
	target := f.ids[f.g.intn(len(f.ids))]
	fd := f.founders[target]
	if !fd.up {
		return
	}
	b := paxos.Ballot{Round: fd.rec.Promised.Round + celldecree.RoundLeadMax, Node: f.ids[f.g.intn(len(f.ids))]}
	if next, ans, effect := fd.rec.Prepare(simPlans, b, f.ids); ans.Granted && effect != celldecree.Nothing {
		f.pushed[b] = true
		f.write(target, next)
	}
}

// settle ends in's attempt once prop has an outcome: done when every
// founder formed the chosen plan, else the operator retries.
func (f *formation) settle(in *initiator, prop *celldecree.Proposer[simPlan]) {
	out, ok := prop.Done()
	if !ok || in.prop != prop {
		return
	}
	in.prop = nil
	if out.Chosen {
		if out.Plan.ID != f.chosen {
			f.w.audit.violation("formation: an initiator told chosen holds the plan chosen", "n%d: %x, chosen %x", uint64(in.at), out.Plan.ID, f.chosen)
		}
		if !in.fresh[out.Plan.ID] {
			f.w.audit.gate("formation: an initiator adopts a plan another voted")
		}
	}
	if out.Refusal == "" {
		in.done = true
		return
	}
	if out.Refusal == celldecree.MemberUnformed {
		f.w.audit.gate("formation: a chosen plan is formed at a founder that missed it")
	}
	f.s.after(f.g.between(10, 40)*ms, lbl("formation: operator retries at n%d", uint64(in.at)), func() { f.start(in) })
}

// quiet ends the chaos: every founder comes back.
func (f *formation) quiet() {
	for _, fd := range f.founders {
		if !fd.up {
			fd.epoch++
			fd.up = true
		}
	}
}

// conclude checks liveness: every initiator done, every founder holding
// the chosen plan with its stores formatted.
func (f *formation) conclude() {
	for _, in := range f.inits {
		if !in.done {
			f.w.audit.violation("formation: every initiator's init returns", "n%d after %d attempts", uint64(in.at), in.attempt)
		}
	}
	for _, id := range f.ids {
		fd := f.founders[id]
		if f.chosen == 0 || fd.rec.Plan.ID != f.chosen || fd.formatted != f.chosen {
			f.w.audit.violation("formation: every founder serves the plan chosen", "n%d holds %x (formatted %x), chosen %x",
				uint64(id), fd.rec.Plan.ID, fd.formatted, f.chosen)
		}
	}
}
