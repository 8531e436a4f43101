package handovermodel

import (
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
)

// tailSteps is the length of the quiet tail after the chaos: rounds in
// which every client ticks and every message in flight is delivered.
const tailSteps = 60

// Run plays steps chaos steps, then the quiet tail, checking after every
// step; it returns the first violation.
func (w *World) Run(steps int) error {
	for i := 0; i < steps && w.err == nil; i++ {
		w.chaos()
		w.check()
	}
	w.heal()
	for i := 0; i < tailSteps && w.err == nil; i++ {
		w.quiet()
		w.check()
	}
	if w.err == nil {
		w.converged()
	}
	return w.err
}

// chaos is one step with every fault.
func (w *World) chaos() {
	switch r := w.rng.IntN(1000); {
	case r < 780:
		w.deliverOne(true)
	case r < 840:
		c := w.clients[w.rng.IntN(len(w.clients))]
		if c.up {
			c.register(journals[w.rng.IntN(len(journals))])
		}
	case r < 860:
		c := w.clients[w.rng.IntN(len(w.clients))]
		if c.up {
			c.collect(journals[w.rng.IntN(len(journals))])
		}
	case r < 885:
		c := w.clients[w.rng.IntN(len(w.clients))]
		if c.up {
			c.startHandover()
		}
	case r < 935:
		if c := w.clients[w.rng.IntN(len(w.clients))]; c.up {
			c.tick()
		}
	case r < 955:
		p := w.mms[pool[w.rng.IntN(len(pool))]]
		if p.up {
			w.crash(p)
		} else {
			w.boot(p)
		}
	case r < 980:
		p := w.mms[pool[w.rng.IntN(len(pool))]]
		if p.up && len(p.unsynced) > 0 {
			w.syncFirst(p)
		}
	case r < 987:
		c := w.clients[w.rng.IntN(len(w.clients))]
		w.logf("reboot c%d", c.id)
		if c.rec != nil {
			w.reach["handover: a reconfigurer was killed mid-phase"]++
		}
		c.reboot()
	case r < 993:
		c := w.clients[w.rng.IntN(len(w.clients))]
		if c.rec != nil {
			w.logf("kill c%d's reconfigurer", c.id)
			w.reach["handover: a reconfigurer was killed mid-phase"]++
			c.rec = nil
		}
	default:
		// A stale message comes back (duplicate far from its original).
		if len(w.mail) > 0 {
			w.post(w.mail[w.rng.IntN(len(w.mail))])
			w.reach["mailbox: a message is duplicated"]++
		}
	}
}

// deliverOne delivers a message drawn from the mailbox; with faults it may
// be lost or duplicated.
func (w *World) deliverOne(faults bool) {
	if len(w.mail) == 0 {
		return
	}
	i := w.rng.IntN(len(w.mail))
	x := w.mail[i]
	if faults {
		switch w.rng.IntN(16) {
		case 0:
			w.mail = slices.Delete(w.mail, i, i+1)
			w.reach["mailbox: a message is lost"]++
			return
		case 1:
			w.reach["mailbox: a message is duplicated"]++
			w.deliver(x)
			return
		}
	}
	w.mail = slices.Delete(w.mail, i, i+1)
	w.logf("deliver %s", x)
	w.deliver(x)
}

// heal ends the chaos: every matchmaker is up and durable.
func (w *World) heal() {
	for _, id := range pool {
		p := w.mms[id]
		if !p.up {
			w.boot(p)
		}
		w.syncAll(p)
	}
}

// quiet is one round of the tail: every client ticks (and registers now
// and then), and every message in flight is delivered in order, with
// every batch durable at once; clients keep matchmaking and finish what
// they meet stopped.
func (w *World) quiet() {
	for _, c := range w.clients {
		if w.rng.IntN(4) == 0 {
			c.register(journals[w.rng.IntN(len(journals))])
		}
		c.tick()
	}
	for n := 0; len(w.mail) > 0 && n < 4*mailboxMax; n++ {
		x := w.mail[0]
		w.mail = w.mail[1:]
		w.deliver(x)
		for _, id := range pool {
			w.syncAll(w.mms[id])
		}
	}
}

// noteSet records s as chosen (seen how) and checks claim 1: at most one
// set is authoritative per generation.
func (w *World) noteSet(s matchmaker.Set, how string) {
	if s.IsZero() {
		return
	}
	if old, ok := w.sets[s.Generation]; ok {
		if !old.Equal(s) {
			w.fail("two sets authoritative for generation %d: %s and %s (%s)", s.Generation, old, s, how)
		}
		return
	}
	w.sets[s.Generation] = s.Clone()
	w.logf("generation %d chosen: %s (%s)", s.Generation, s, how)
	if s.Generation >= 2 {
		w.reach["handover: the decree chose a successor"]++
	}
	if s.Generation >= 3 {
		w.reach["handover: a generation was replaced twice in one run"]++
	}
	w.checkVoted(s)
	w.checkBootstrapped(s)
}

// checkBootstrapped is claim 5: when a set is chosen, every member holds
// its whole bootstrap durably (or already activated it, or a later one):
// a member without it could never activate, and the set would never
// serve at full strength.
func (w *World) checkBootstrapped(s matchmaker.Set) {
	if s.Generation < 2 {
		return
	}
	for _, id := range s.Members {
		g := w.mms[id].diskGen
		w.logf("  chosen %s: m%d disk set %s pending g%d origins %+v", s, id, g.Set, g.Pending.Generation, g.Pending.Origins)
		if g.Set.Generation < s.Generation && !(g.Pending.Generation == s.Generation && g.Pending.Complete(s)) &&
			g.Pending.Generation <= s.Generation {
			w.fail("generation %d's set %s was chosen while m%d holds no whole bootstrap of it (disk %s, pending g%d)",
				s.Generation, s, id, g.Set, g.Pending.Generation)
		}
	}
}

// checkVoted is claim 2: a chosen set is what a majority of its
// predecessor durably voted at one decree ballot.
func (w *World) checkVoted(s matchmaker.Set) {
	prev, ok := w.sets[s.Generation-1]
	if !ok {
		w.fail("generation %d chosen (%s) before generation %d is known", s.Generation, s, s.Generation-1)
		return
	}
	for k, voters := range w.votes {
		if k.gen != prev.Generation || k.fp != s.Fingerprint() {
			continue
		}
		var ids []paxos.NodeID
		for id := range voters {
			ids = append(ids, id)
		}
		if prev.Quorum(ids) {
			return
		}
	}
	w.fail("generation %d's set %s was not durably voted by a majority of %s at one ballot", s.Generation, s, prev)
}

// activated is claim 3: the registries a matchmaker activates for set s
// carry every registration that completed at an earlier generation at or
// above the watermark, its effective configuration, and every watermark
// made effective.
func (w *World) activated(p *mmProc, s matchmaker.Set) {
	w.reach["handover: a member activated its bootstrap"]++
	w.noteSet(s, "an activation")
	for _, j := range journals {
		r, _ := p.mm.Registry(j)
		for _, wm := range w.effective[j] {
			if wm.gen < s.Generation && r.Watermark.Less(wm.w) {
				w.fail("m%d activated %s with journal %s's watermark %s below the effective %s of generation %d", p.id, s, j, r.Watermark, wm.w, wm.gen)
			}
		}
		for _, c := range w.completed {
			if c.j != j || c.gen >= s.Generation || c.b.Less(r.Watermark) {
				continue
			}
			held := slices.ContainsFunc(r.Regs, func(x paxos.Registration) bool {
				return x.Ballot == c.b && paxos.SameSystem(x.Acceptors, c.cfg) && x.Reconfiguration == c.reconf
			})
			if !held && !(c.reconf && r.Effective.Ballot == c.b) {
				w.fail("m%d activated %s without journal %s's registration %s of generation %d", p.id, s, j, c.b, c.gen)
			}
			if c.reconf && r.Effective.Ballot.Less(c.b) {
				w.fail("m%d activated %s with effective %s below the reconfiguration %s", p.id, s, r.Effective.Ballot, c.b)
			}
		}
	}
}

// completedRegistration is claim 4: of two completed registrations of a
// journal, the higher one's history names the configuration of the lower
// one unless the lower one is below the watermark the higher one's quorum
// reported, across generations. The clients see completions in any order,
// so every pair is judged, whichever completed last.
func (w *World) completedRegistration(j journal.ID, a *attempt) {
	c := completion{j: j, b: a.b, cfg: a.cfg, reconf: a.reconf, gen: a.set.Generation,
		configs: []paxos.Registration{{Ballot: a.b, Acceptors: a.cfg}}}
	for _, r := range a.oks {
		if c.wm.Less(r.GC) {
			c.wm = r.GC
		}
		c.configs = append(c.configs, r.History...)
	}
	for _, e := range w.completed {
		if e.j != j || e.b == c.b {
			continue
		}
		lo, hi := e, c
		if c.b.Less(e.b) {
			lo, hi = c, e
		}
		if lo.b.Less(hi.wm) {
			continue
		}
		if !slices.ContainsFunc(hi.configs, func(x paxos.Registration) bool { return paxos.SameSystem(x.Acceptors, lo.cfg) }) {
			w.fail("journal %s: registration %s (generation %d) learned no history of the configuration of %s (generation %d)",
				j, hi.b, hi.gen, lo.b, lo.gen)
		}
	}
	w.completed = append(w.completed, c)
}

// check runs the claims that read every matchmaker's state.
func (w *World) check() {
	for _, id := range pool {
		p := w.mms[id]
		for _, g := range []matchmaker.Generation{p.diskGen, p.mm.Generation()} {
			w.noteSet(g.Set, "a matchmaker's set")
			w.noteSet(g.Successor, "a chain link")
		}
	}
}

// converged is the tail's requirement: every client believes the newest
// chosen set, and a majority of it is active in it.
func (w *World) converged() {
	var newest matchmaker.Set
	for _, s := range w.sets {
		if newest.Generation < s.Generation {
			newest = s
		}
	}
	for _, c := range w.clients {
		if c.set.Generation != newest.Generation {
			w.fail("the tail did not converge: c%d believes %s, the newest chosen set is %s", c.id, c.set, newest)
		}
	}
	var active []paxos.NodeID
	for _, id := range newest.Members {
		g := w.mms[id].mm.Generation()
		if g.Phase() == matchmaker.PhaseActive && g.Set.Equal(newest) {
			active = append(active, id)
		}
	}
	if !newest.Quorum(active) {
		w.fail("the tail did not converge: only %v of %s are active", active, newest)
	}
	if len(active) == len(newest.Members) {
		w.reach["tail: every member of the newest set is active"]++
	}
}
