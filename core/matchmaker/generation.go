package matchmaker

import (
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
)

// Set is one generation of a matchmaker set (the founding set is
// generation 1; each later one is chosen by a decree over its predecessor).
type Set = paxos.MatchmakerSet

// Phase is where a matchmaker stands in the chain of sets.
type Phase uint8

const (
	// PhaseFresh: a member of no set, holding no bootstrap (a machine
	// added to the pool).
	PhaseFresh Phase = iota + 1
	// PhaseInactive: a member of no set yet, holding the bootstrap of a
	// proposed successor until the decree's outcome activates it.
	PhaseInactive
	// PhaseActive: serving its set's generation.
	PhaseActive
	// PhaseStopped: its set's generation is frozen by a handover; it
	// registers nothing for it again, votes in the decree, and points
	// late requesters at the successor once it learns it.
	PhaseStopped
)

func (p Phase) String() string {
	switch p {
	case PhaseFresh:
		return "fresh"
	case PhaseInactive:
		return "inactive"
	case PhaseActive:
		return "active"
	case PhaseStopped:
		return "stopped"
	}
	return fmt.Sprintf("phase(%d)", uint8(p))
}

// Generation is a matchmaker's durable place in the chain of sets.
//
// Invariants: Set is zero (fresh) or a valid set naming this matchmaker;
// Successor is zero or the set of generation Set.Generation+1, and a known
// successor implies Stopped; Pending is zero or of a generation above
// Set's.
type Generation struct {
	// Set is the generation this matchmaker serves or served.
	Set Set
	// Stopped: Set's generation is frozen (a durable fact: a frozen
	// matchmaker never registers for it again).
	Stopped bool
	// Successor is Set's chosen successor once learned (the chain link).
	Successor Set
	// Decree is this matchmaker's acceptor in the decree over Set that
	// chooses its successor.
	Decree paxos.DecreeAcceptor[Set]
	// Pending is the bootstrap of a proposed successor naming this
	// matchmaker, held until the decree's outcome activates it.
	Pending Pending
}

// Founding is the generation state of a founding matchmaker: active in
// the founding set, generation 1.
func Founding(members []paxos.NodeID) Generation {
	return Generation{Set: Set{Generation: 1, Members: slices.Clone(members)}}
}

// BootGeneration is the generation state of a matchmaker whose store
// holds none yet: a founder is active in the founding set, any other
// machine is fresh (added later, a member of no set until a handover
// names it).
func BootGeneration(id paxos.NodeID, founders []paxos.NodeID) Generation {
	if slices.Contains(founders, id) {
		return Founding(founders)
	}
	return Generation{}
}

// Phase is where the state stands.
func (g Generation) Phase() Phase {
	switch {
	case g.Set.IsZero() && g.Pending.Generation == 0:
		return PhaseFresh
	case g.Set.IsZero():
		return PhaseInactive
	case g.Stopped:
		return PhaseStopped
	}
	return PhaseActive
}

// Newest is the newest chosen set this matchmaker knows: the successor
// once learned, else its own set (chosen too: founded, or activated by a
// decree's outcome). Zero when fresh.
func (g Generation) Newest() Set {
	if !g.Successor.IsZero() {
		return g.Successor
	}
	return g.Set
}

// Clone returns a deep copy.
func (g Generation) Clone() Generation {
	g.Set, g.Successor = g.Set.Clone(), g.Successor.Clone()
	g.Decree.Vote.Value = g.Decree.Vote.Value.Clone()
	g.Pending = g.Pending.Clone()
	return g
}

// Validate checks the invariants for matchmaker id (a store's boot).
func (g Generation) Validate(id paxos.NodeID) error {
	for _, s := range []Set{g.Set, g.Successor, g.Decree.Vote.Value, g.Pending.set()} {
		if err := s.Validate(); err != nil {
			return err
		}
	}
	switch {
	case !g.Set.IsZero() && !g.Set.Has(id):
		return fmt.Errorf("set %s does not name matchmaker %d", g.Set, id)
	case !g.Successor.IsZero() && (g.Successor.Generation != g.Set.Generation+1 || !g.Stopped):
		return fmt.Errorf("successor %s of %s (stopped %v)", g.Successor, g.Set, g.Stopped)
	case g.Pending.Generation != 0 && g.Pending.Generation <= g.Set.Generation:
		return fmt.Errorf("pending generation %d at or below %s", g.Pending.Generation, g.Set)
	case g.Decree.Promised.Less(g.Decree.Vote.Ballot):
		return fmt.Errorf("decree vote %s above the promise %s", g.Decree.Vote.Ballot, g.Decree.Promised)
	}
	for j, r := range g.Pending.Regs {
		if err := check(r); err != nil {
			return fmt.Errorf("pending journal %s: %v", j, err)
		}
	}
	return nil
}

// Pending is the bootstrap a matchmaker holds for a proposed successor
// set of one generation. Several reconfigurers may bootstrap the same
// generation (concurrent handovers, a finisher): their reconstructions are
// merged, and each proposal's pages are counted on their own, so a
// proposal is complete here only once every one of its pages is durable.
//
// Why merging is safe: every reconstruction is taken from a stop quorum,
// so it holds every registration that completed at a matchmaker quorum;
// the merge (Reconstruct) keeps the highest watermark and every
// registration above it from either, so it holds them too.
type Pending struct {
	Generation uint64
	Regs       map[journal.ID]Registry
	// Origins are the proposals bootstrapped here, by decree ballot.
	Origins []Origin
}

// Origin is one proposal's bootstrap at a matchmaker: its pages held.
type Origin struct {
	Ballot paxos.Ballot
	Set    Set
	Pages  uint32
	Held   []bool
}

// Complete reports whether every page is held.
func (o Origin) Complete() bool {
	return uint32(len(o.Held)) == o.Pages && !slices.Contains(o.Held, false)
}

func (p Pending) set() Set {
	for _, o := range p.Origins {
		return o.Set
	}
	return Set{}
}

// Complete reports whether a proposal of s is wholly held.
func (p Pending) Complete(s Set) bool {
	return slices.ContainsFunc(p.Origins, func(o Origin) bool { return o.Set.Equal(s) && o.Complete() })
}

// Clone returns a deep copy.
func (p Pending) Clone() Pending {
	regs := make(map[journal.ID]Registry, len(p.Regs))
	for j, r := range p.Regs {
		regs[j] = r.Clone()
	}
	p.Regs = regs
	p.Origins = slices.Clone(p.Origins)
	for i := range p.Origins {
		p.Origins[i].Set = p.Origins[i].Set.Clone()
		p.Origins[i].Held = slices.Clone(p.Origins[i].Held)
	}
	return p
}

// OriginsMax bounds the proposals one matchmaker tracks for a generation:
// past it the lowest incomplete one is forgotten (its reconfigurer stalls
// and is abandoned by its budget; a later one opens above it), and when
// every one held is whole a new proposal is refused (bootstrap).
const OriginsMax = 8

// PagesMax bounds the pages of one reconstruction (RegistryPage journals
// each).
const PagesMax = 1 << 16

// RegistryPage is the number of journals one page of a stop answer or a
// bootstrap carries: one message cannot carry every journal's registry.
const RegistryPage = 64

// JournalRegistry is one journal's registry on a page.
type JournalRegistry struct {
	Journal  journal.ID
	Registry Registry
}

// Reconstruct merges registries of one journal taken from the members of
// a stop quorum (or two reconstructions of it) into the registry the next
// generation starts from: the highest watermark, every registration at or
// above it from any of them (one per ballot), the highest effective
// configuration, and the highest ballot any of them counted as registered
// (so no registration at or below it is accepted again: a candidate that
// completed matchmaking at it learned a history without the newcomer).
//
// The union is conservative: a belief one member retracted and another
// still holds comes back (it costs its candidate's retraction again, never
// safety).
func Reconstruct(rs ...Registry) Registry {
	var out Registry
	var highest paxos.Ballot
	for _, r := range rs {
		if out.Watermark.Less(r.Watermark) {
			out.Watermark = r.Watermark
		}
		if out.Effective.Ballot.Less(r.Effective.Ballot) {
			out.Effective = r.Effective
		}
		if h := r.highest(); highest.Less(h) {
			highest = h
		}
	}
	for _, r := range rs {
		for _, reg := range r.Regs {
			if reg.Ballot.Less(out.Watermark) {
				continue
			}
			i, found := slices.BinarySearchFunc(out.Regs, reg.Ballot, func(x paxos.Registration, b paxos.Ballot) int { return x.Ballot.Compare(b) })
			if !found {
				out.Regs = slices.Insert(out.Regs, i, reg)
			}
		}
	}
	if out.highest().Less(highest) {
		out.Retracted = highest // every registration is below it
	}
	return out
}

// serves reports whether a matchmaking request of generation g is served:
// g is this matchmaker's set's, and it is neither frozen nor fresh.
func (m *Matchmaker) serves(g uint64) bool {
	return m.gen.Phase() == PhaseActive && m.gen.Set.Generation == g
}

// refuseGeneration answers a matchmaking request this matchmaker does not
// serve with what it knows (the node's decision table is in
// core/paxos/node_generations.go). A frozen generation names its successor
// once it is known; an older generation names the newest chosen set known;
// anything else (fresh, a bootstrap not yet activated, a generation never
// heard chosen) is inactive.
func (m *Matchmaker) refuseGeneration(j journal.ID, msg paxos.Message, reply paxos.Message) {
	m.counters.GenerationRefusals++
	reply.Type = paxos.MsgMatchReply
	g := m.gen
	switch {
	case !g.Set.IsZero() && g.Set.Generation == msg.Generation && g.Stopped:
		reply.Refusal, reply.Successor = paxos.MatchStopped, g.Successor.Clone()
	case !g.Set.IsZero() && msg.Generation < g.Newest().Generation:
		reply.Refusal, reply.Successor = paxos.MatchGeneration, g.Newest().Clone()
	default:
		reply.Refusal = paxos.MatchInactive
	}
	m.send(j, reply)
}

// applyGeneration folds a generation op (Apply).
func applyGeneration(gen *Generation, regs map[journal.ID]*Registry, op WriteOp) {
	switch op.Kind {
	case OpStop:
		if gen.Set.Generation == op.Generation {
			gen.Stopped = true
		}
	case OpDecree:
		gen.Decree = op.Decree
		gen.Decree.Vote.Value = op.Decree.Vote.Value.Clone()
	case OpChosen:
		gen.Successor, gen.Stopped = op.Set.Clone(), true
	case OpBootstrap:
		gen.Pending.take(op)
	case OpActivate:
		clear(regs)
		for j, r := range gen.Pending.Regs {
			c := r.Clone()
			regs[j] = &c
		}
		*gen = Generation{Set: op.Set.Clone()}
	}
}

// take merges one bootstrap page into the pending bootstrap; a page of a
// newer generation replaces an older pending one (that generation was
// decided without this matchmaker).
func (p *Pending) take(op WriteOp) {
	if p.Generation < op.Set.Generation {
		*p = Pending{Generation: op.Set.Generation, Regs: map[journal.ID]Registry{}}
	}
	if p.Regs == nil {
		p.Regs = map[journal.ID]Registry{}
	}
	for _, jr := range op.Journals {
		p.Regs[jr.Journal] = Reconstruct(p.Regs[jr.Journal], jr.Registry)
	}
	// A proposal is its ballot and its set together: two incarnations of
	// one reconfigurer may open the same ballot for different sets (the
	// later one's stop quorum missed the earlier one's promises), and the
	// earlier proposal, if some acceptor voted for it, may still be chosen:
	// its pages must not be forgotten (the model checker's seed 7 chose a
	// set whose member had).
	i := slices.IndexFunc(p.Origins, func(o Origin) bool { return o.Ballot == op.Ballot && o.Set.Equal(op.Set) })
	if i < 0 || p.Origins[i].Pages != op.Pages {
		if i >= 0 {
			p.Origins = slices.Delete(p.Origins, i, i+1)
		}
		p.Origins = append(p.Origins, Origin{Ballot: op.Ballot, Set: op.Set.Clone(), Pages: op.Pages, Held: make([]bool, op.Pages)})
		i = len(p.Origins) - 1
		if len(p.Origins) > OriginsMax {
			// Forget the lowest incomplete proposal (never a complete one:
			// the decree may have chosen it).
			low := -1
			for k, o := range p.Origins {
				if k != i && !o.Complete() && (low < 0 || o.Ballot.Less(p.Origins[low].Ballot)) {
					low = k
				}
			}
			if low >= 0 {
				p.Origins = slices.Delete(p.Origins, low, low+1)
				if low < i {
					i--
				}
			}
		}
	}
	p.Origins[i].Held[op.Page] = true
}
