package sim

import (
	"maps"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/host"
)

// The reconfiguration oracles (docs/design/simulation.md, "Oracles"). They
// watch the messages processes send (past persist-before-send, so what a
// crash cannot take back) and the matchmakers' disks:
//
//   - a configuration is bound to a ballot and never edited: every Match,
//     Prepare and Heartbeat of one (journal, ballot) names one configuration;
//   - an Accept reaches only the ballot's own acceptors, and only they vote;
//   - no Accept of a ballot leaves before its Phase 1 held a promise quorum
//     of its own configuration and of every configuration that started a
//     Phase 1 at a lower ballot at or above the highest watermark (those a
//     candidate's history H_b must contain: a matchmaker of both
//     matchmaker quorums registered the lower ballot first);
//   - a matchmaker's acknowledged watermark never decreases;
//   - a retire is honoured only when a matchmaker quorum durably holds a
//     watermark at or above the evidence and the configuration bound to it
//     leaves the node out.
type configAudit struct {
	bound    map[jballot]quorum.System
	prepared map[journal.ID][]paxos.Ballot // ballots whose Phase 1 started
	promised map[jballot][]paxos.NodeID
	checked  map[jballot]bool // ballots whose first Accept was judged
	acked    map[njournal]paxos.Ballot
	wmMax    map[journal.ID]paxos.Ballot
	// durableWM is each matchmaker's durable watermark per journal.
	durableWM map[njournal]paxos.Ballot
	// durableGen is the generation each matchmaker's durable registries
	// belong to.
	durableGen map[paxos.NodeID]uint64
	// systems are the distinct configurations bound so far per journal,
	// each with the lowest ballot bound to it.
	systems map[journal.ID][]boundSystem
	// retractions are the spans of its own ballots a node declared
	// abandoned before Phase 1 (a Match's Prepared): no Prepare may ever
	// leave at a ballot inside one.
	retractions map[journal.ID][]retraction
}

// retraction is a node's declaration that it sent no Prepare at any of
// its own ballots in (prepared, upTo) (through upTo with through).
type retraction struct {
	prepared, upTo paxos.Ballot
	through        bool
}

func (r retraction) covers(b paxos.Ballot) bool {
	return b.Node == r.upTo.Node && r.prepared.Less(b) && (b.Less(r.upTo) || r.through && b == r.upTo)
}

type boundSystem struct {
	sys   quorum.System
	first paxos.Ballot
}

type jballot struct {
	j journal.ID
	b paxos.Ballot
}

func newConfigAudit() configAudit {
	return configAudit{bound: map[jballot]quorum.System{}, prepared: map[journal.ID][]paxos.Ballot{},
		promised: map[jballot][]paxos.NodeID{}, checked: map[jballot]bool{},
		acked: map[njournal]paxos.Ballot{}, wmMax: map[journal.ID]paxos.Ballot{}, durableWM: map[njournal]paxos.Ballot{}, durableGen: map[paxos.NodeID]uint64{},
		systems: map[journal.ID][]boundSystem{}, retractions: map[journal.ID][]retraction{}}
}

// configOf is the configuration ballot b of journal j is bound to: the one
// its messages named, or the bootstrap configuration on a plain deployment.
func (a *audit) configOf(j journal.ID, b paxos.Ballot) (quorum.System, bool) {
	if len(a.w.shape.Matchmakers) == 0 {
		return a.w.system(), true
	}
	sys, ok := a.cfg.bound[jballot{j, b}]
	return sys, ok
}

// sent observes a Deliver as it leaves a process.
func (a *audit) sent(from paxos.NodeID, batch []host.Envelope) {
	if len(a.w.shape.Matchmakers) == 0 {
		return
	}
	for _, e := range batch {
		m, j := e.Msg, e.Journal
		switch m.Type {
		case paxos.MsgMatch:
			if !m.Config.IsZero() {
				a.bind(j, m.Ballot, m.Config, m)
			}
			a.retracts(j, retraction{prepared: m.Prepared, upTo: m.Ballot, through: m.Config.IsZero()})
		case paxos.MsgHeartbeat:
			a.bind(j, m.Ballot, m.Config, m)
		case paxos.MsgPrepare:
			for _, r := range a.cfg.retractions[j] {
				if r.covers(m.Ballot) {
					a.violation("matchmaking: a registration is retracted only if no Prepare ever leaves at its ballot",
						"%s Prepare at %s after a retraction of (%s, %s]", short(j), m.Ballot, r.prepared, r.upTo)
				}
			}
			if a.bind(j, m.Ballot, m.Config, m) {
				k := jballot{j, m.Ballot}
				if !slices.Contains(a.cfg.prepared[j], m.Ballot) {
					a.cfg.prepared[j] = append(a.cfg.prepared[j], m.Ballot)
					// The candidate's own promise rides in its batch.
					a.cfg.promised[k] = append(a.cfg.promised[k], m.Ballot.Node)
				}
			}
		case paxos.MsgPromise:
			if m.Next == 0 {
				k := jballot{j, m.Ballot}
				if !slices.Contains(a.cfg.promised[k], m.From) {
					a.cfg.promised[k] = append(a.cfg.promised[k], m.From)
				}
			}
		case paxos.MsgAccept:
			if a.w.proxyByID(m.To) == nil {
				a.accept(j, m) // a delegation to a proxy is judged as the proxy fans it out
			}
		case paxos.MsgAccepted:
			if sys, ok := a.configOf(j, m.Ballot); !ok || !sys.Contains(m.From) {
				a.violation("reconfiguration: no vote by a node outside its configuration", "%s n%d voted at %s (configuration %v)", short(j), m.From, m.Ballot, sys)
			}
		case paxos.MsgMatchReply:
			if m.Refusal == paxos.MatchOK && !m.Ballot.IsZero() {
				a.durableAnswer(from, j, func(r matchmaker.Registry) bool {
					return slices.ContainsFunc(r.Regs, func(reg paxos.Registration) bool { return reg.Ballot == m.Ballot }) ||
						m.Ballot.Less(r.Watermark)
				}, "registration "+m.Ballot.String())
			}
			// A reply reveals the matchmaker's watermark too: one raised and
			// synced by a matchmaker that crashed before its ack left (a
			// correlated outage, seed 1909) is first told here.
			if !m.GC.IsZero() && a.cfg.wmMax[j].Less(m.GC) {
				a.cfg.wmMax[j] = m.GC
			}
		case paxos.MsgGarbageCollectAck:
			a.durableAnswer(from, j, func(r matchmaker.Registry) bool { return !r.Watermark.Less(m.GC) }, "watermark "+m.GC.String())
			k := njournal{m.From, j}
			if m.GC.Less(a.cfg.acked[k]) {
				a.violation("gc: a matchmaker's watermark never decreases", "%s matchmaker %d acked %s after %s", short(j), m.From, m.GC, a.cfg.acked[k])
			}
			a.cfg.acked[k] = m.GC
			if a.cfg.wmMax[j].Less(m.GC) {
				a.cfg.wmMax[j] = m.GC
			}
			if m.GC.Node != 0 && m.GC != m.Ballot {
				a.gate("gc: a leader raises the watermark at a matchmaker")
			}
		}
	}
}

// durableAnswer checks that what a matchmaker's answer reveals (a
// registration, a watermark) is already on its disk: a matchmaker that
// crashed before its sync would otherwise take back a promise to every
// later candidate.
func (a *audit) durableAnswer(mm paxos.NodeID, j journal.ID, holds func(matchmaker.Registry) bool, what string) {
	p := a.w.proc(mm)
	if p.registry == nil {
		return
	}
	bs, err := p.registry.Boot()
	if err != nil {
		return
	}
	if !holds(bs.Registries[j]) {
		a.violation("a matchmaker's answer is durable before it leaves", "%s matchmaker %d revealed %s not on its disk", short(j), mm, what)
	}
}

// retracts judges a node's retraction span: no Prepare left at a ballot
// inside it so far (and none may later: sent checks each Prepare). A span
// that covers a registered belief passes a gate.
func (a *audit) retracts(j journal.ID, r retraction) {
	for _, b := range a.cfg.prepared[j] {
		if r.covers(b) {
			a.violation("matchmaking: a registration is retracted only if no Prepare ever leaves at its ballot",
				"%s retraction of (%s, %s] covers %s, whose Prepare left", short(j), r.prepared, r.upTo, b)
		}
	}
	for k := range a.cfg.bound {
		if k.j == j && r.covers(k.b) {
			if r.through {
				a.gate("matchmaking: a node that will not campaign retracts the registrations it abandoned")
			} else {
				a.gate("matchmaking: a campaign retracts the registrations its candidate abandoned")
			}
			break
		}
	}
	if r.prepared.Less(r.upTo) {
		a.cfg.retractions[j] = append(a.cfg.retractions[j], r)
	}
}

// bind records (or checks) the configuration of ballot b.
func (a *audit) bind(j journal.ID, b paxos.Ballot, sys quorum.System, m paxos.Message) bool {
	if sys.IsZero() {
		a.violation("a configuration is bound to a ballot and never edited", "%s %s at %s names no configuration", short(j), m.Type, b)
		return false
	}
	k := jballot{j, b}
	if prev, ok := a.cfg.bound[k]; ok {
		if !paxos.SameSystem(prev, sys) {
			a.violation("a configuration is bound to a ballot and never edited", "%s ballot %s: %s then %s (%s)", short(j), b, prev, sys, m.Type)
		}
		return true
	}
	a.cfg.bound[k] = sys
	i := slices.IndexFunc(a.cfg.systems[j], func(x boundSystem) bool { return paxos.SameSystem(x.sys, sys) })
	switch {
	case i < 0:
		a.cfg.systems[j] = append(a.cfg.systems[j], boundSystem{sys: sys, first: b})
	case b.Less(a.cfg.systems[j][i].first):
		a.cfg.systems[j][i].first = b
	}
	return true
}

// accept judges an Accept: its addressee is one of the ballot's acceptors,
// and the first Accept of a ballot leaves only after its Phase 1 held a
// quorum of every configuration it had to hear from.
func (a *audit) accept(j journal.ID, m paxos.Message) {
	sys, ok := a.configOf(j, m.Ballot)
	if !ok || !sys.Contains(m.To) {
		a.violation("reconfiguration: an Accept reaches only the ballot's own acceptors", "%s Accept at %s to n%d (configuration %v)", short(j), m.Ballot, m.To, sys)
		return
	}
	k := jballot{j, m.Ballot}
	if a.cfg.checked[k] {
		return
	}
	a.cfg.checked[k] = true
	promised := a.cfg.promised[k]
	need := []quorum.System{sys}
	for _, b := range a.cfg.prepared[j] {
		if b.Less(m.Ballot) && !b.Less(a.cfg.wmMax[j]) {
			if s, ok := a.cfg.bound[jballot{j, b}]; ok {
				need = append(need, s)
			}
		}
	}
	for _, s := range need {
		if s.Phase1(s.SetOf(promised...), 0) != quorum.Won {
			a.violation("reconfiguration: no Accept leaves before every prior configuration promised a quorum",
				"%s Accept at %s: promises %v hold no Phase-1 quorum of %s", short(j), m.Ballot, promised, s)
			return
		}
	}
}

// retired judges an honoured retire of node n from journal j with evidence w.
func (a *audit) retired(n paxos.NodeID, j journal.ID, w paxos.Ballot) {
	sys, ok := a.configOf(j, w)
	if !ok || sys.Contains(n) {
		a.violation("gc: a retire is honoured only with evidence", "%s n%d retired at %s, whose configuration %v names it", short(j), n, w, sys)
	}
	// The watermark was made effective at a quorum of the set in force
	// when the leader collected; a handover since carried it into every
	// later generation's reconstruction. So some generation's set must
	// have a majority holding it.
	sets := []paxos.MatchmakerSet{{Generation: 1, Members: a.w.shape.Matchmakers}}
	for _, g := range slices.Sorted(maps.Keys(a.sets)) {
		sets = append(sets, a.sets[g])
	}
	best, of := 0, 0
	for _, set := range sets {
		holds := 0
		for _, mm := range set.Members {
			p := a.w.proc(mm)
			if p.wiped {
				// A matchmaker that lost its disk is refused at every boot
				// and never answers again: it cannot contradict the
				// watermark it may have acknowledged (as a wiped
				// acceptor's history counts as held in backed).
				holds++
				continue
			}
			bs, err := p.registry.Boot()
			if err != nil {
				continue
			}
			if r, ok := bs.Registries[j]; ok && !r.Watermark.Less(w) {
				holds++
			}
		}
		if 2*holds > len(set.Members) {
			return
		}
		if holds >= best {
			best, of = holds, len(set.Members)
		}
	}
	a.violation("gc: a retire is honoured only with evidence", "%s n%d retired at %s: at most %d of %d matchmakers of any generation hold the watermark", short(j), n, w, best, of)
}

// registrySynced checks a matchmaker's durable registries: sorted, above
// their watermarks (the store's own checks), and watermarks monotone.
func (a *audit) registrySynced(p *proc) {
	bs, err := p.registry.Boot()
	if err != nil {
		return // a rotted registry is refused at boot
	}
	gen := bs.Generation
	a.chosenSet(gen.Set, "a matchmaker's set")
	a.chosenSet(gen.Successor, "a chain link")
	if gen.Set.IsZero() {
		return // a fresh matchmaker holds no registry of its own
	}
	for j, r := range bs.Registries {
		// Per generation: an activation replaces the registries by the
		// reconstruction, whose watermark is the highest a stop quorum
		// held; one this matchmaker raised alone may be above it (it
		// was never effective, so nothing relied on it).
		k := njournal{p.id, j}
		if a.cfg.durableGen[p.id] != gen.Set.Generation {
			delete(a.cfg.durableWM, k)
		}
		if r.Watermark.Less(a.cfg.durableWM[k]) {
			a.violation("gc: a matchmaker's watermark never decreases", "%s matchmaker %d holds %s after %s", short(j), p.id, r.Watermark, a.cfg.durableWM[k])
		}
		a.cfg.durableWM[k] = r.Watermark
	}
	a.cfg.durableGen[p.id] = gen.Set.Generation
}
