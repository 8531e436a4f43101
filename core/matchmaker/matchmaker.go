package matchmaker

import (
	"errors"
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
)

// OpKind names a durable matchmaker change.
type OpKind uint8

const (
	// OpRegister appends Reg to Journal's registry.
	OpRegister OpKind = iota + 1
	// OpWatermark raises Journal's watermark to Watermark and deletes the
	// registrations below it.
	OpWatermark
	// OpRetract deletes Journal's belief registration at Reg.Ballot (its
	// candidate abandoned it before Phase 1: retract in match) and raises
	// the retracted ballot to it.
	OpRetract
	// OpStop freezes generation Generation (the matchmaker's set's).
	OpStop
	// OpBootstrap merges page Page of Pages of proposal Ballot of Set
	// (Journals) into the pending bootstrap.
	OpBootstrap
	// OpDecree sets the decree acceptor's state to Decree.
	OpDecree
	// OpChosen records Set as the chosen successor of the matchmaker's set
	// (the chain link), and freezes it.
	OpChosen
	// OpActivate makes the pending bootstrap of Set the matchmaker's
	// registries, and Set its active generation.
	OpActivate
)

// WriteOp is one durable change. Every op must be synced before the reply
// it precedes leaves (a registration is a promise to every later
// candidate).
type WriteOp struct {
	Kind      OpKind
	Journal   journal.ID
	Reg       paxos.Registration
	Watermark paxos.Ballot
	// The generation ops' fields (handover.go).
	Generation  uint64
	Set         Set
	Ballot      paxos.Ballot
	Page, Pages uint32
	Journals    []JournalRegistry
	Decree      paxos.DecreeAcceptor[Set]
}

// IsGeneration reports whether op changes the generation state rather
// than one journal's registry.
func (op WriteOp) IsGeneration() bool { return op.Kind >= OpStop }

// Apply folds op into the state gen and regs (the matchmaker, the stores
// and the boot path share it). Activation replaces regs wholesale.
func Apply(gen *Generation, regs map[journal.ID]*Registry, op WriteOp) {
	if op.IsGeneration() {
		applyGeneration(gen, regs, op)
		return
	}
	r := regs[op.Journal]
	if r == nil {
		r = &Registry{}
		regs[op.Journal] = r
	}
	switch op.Kind {
	case OpRegister:
		r.register(op.Reg)
	case OpWatermark:
		if r.Watermark.Less(op.Watermark) {
			r.collect(op.Watermark)
		}
	case OpRetract:
		r.retract(op.Reg.Ballot)
	}
}

// Envelope is one message with the journal it concerns.
type Envelope struct {
	Journal journal.ID
	Msg     paxos.Message
}

// Ready is one batch of effects: persist Writes (synced), then send
// Messages.
type Ready struct {
	Writes    []WriteOp
	Messages  []Envelope
	Handovers []Handover
}

// Counters are observation only.
type Counters struct {
	Registered, Refused, Probes, Collected, Repeats, Retracted uint64
	// The handover (handover.go): generations frozen, bootstrap pages
	// taken, chain links recorded, bootstraps activated, handover
	// requests refused, matchmaking requests refused for their generation.
	Stops, Bootstraps, Links, Activations, HandoverRefusals, GenerationRefusals uint64
}

// ErrStorage marks a registry the matchmaker cannot run from.
var ErrStorage = errors.New("paros/matchmaker: storage")

// Matchmaker is one matchmaker of a set: a registry per journal.
type Matchmaker struct {
	id  paxos.NodeID
	gen Generation
	// regs are the registries of gen.Set's generation.
	regs      map[journal.ID]*Registry
	writes    []WriteOp
	messages  []Envelope
	handovers []Handover
	readyOut  bool
	closed    error
	counters  Counters
}

// New boots a matchmaker from what its store holds: its generation state
// and the registries of its set's generation.
func New(id paxos.NodeID, gen Generation, boot map[journal.ID]Registry) (*Matchmaker, error) {
	if id == 0 {
		return nil, fmt.Errorf("%w: matchmaker id 0", paxos.ErrConfig)
	}
	if err := gen.Validate(id); err != nil {
		return nil, fmt.Errorf("%w: generation: %v", ErrStorage, err)
	}
	m := &Matchmaker{id: id, gen: gen.Clone(), regs: make(map[journal.ID]*Registry, len(boot))}
	for j, r := range boot {
		if err := check(r); err != nil {
			return nil, fmt.Errorf("%w: journal %s: %v", ErrStorage, j, err)
		}
		c := r.Clone()
		m.regs[j] = &c
	}
	return m, nil
}

// check refuses a registry that breaks the invariants (a damaged or edited
// store).
func check(r Registry) error {
	if !r.Watermark.InRange() || !r.Effective.Ballot.InRange() || !r.Retracted.InRange() {
		return fmt.Errorf("watermark %s, effective %s or retracted %s out of range", r.Watermark, r.Effective.Ballot, r.Retracted)
	}
	if !r.Effective.IsZero() && (r.Effective.Acceptors.IsZero() || !r.Effective.Reconfiguration) {
		return fmt.Errorf("effective configuration at %s malformed", r.Effective.Ballot)
	}
	for i, reg := range r.Regs {
		if reg.Ballot.IsZero() {
			return fmt.Errorf("registration %d at the zero ballot", i)
		}
		if reg.Ballot == r.Effective.Ballot && (!reg.Reconfiguration || !paxos.SameSystem(reg.Acceptors, r.Effective.Acceptors)) {
			return fmt.Errorf("registration %s disagrees with the effective configuration", reg.Ballot)
		}
		if !reg.Ballot.InRange() || reg.Acceptors.IsZero() {
			return fmt.Errorf("registration %d malformed", i)
		}
		if reg.Ballot.Less(r.Watermark) {
			return fmt.Errorf("registration %s below the watermark %s", reg.Ballot, r.Watermark)
		}
		if reg.Ballot == r.Retracted {
			return fmt.Errorf("registration %s was retracted", reg.Ballot)
		}
		if i > 0 && !r.Regs[i-1].Ballot.Less(reg.Ballot) {
			return fmt.Errorf("registrations out of order at %s", reg.Ballot)
		}
		if reg.Reconfiguration && r.Effective.Ballot.Less(reg.Ballot) {
			return fmt.Errorf("reconfiguration %s above the effective %s", reg.Ballot, r.Effective.Ballot)
		}
	}
	return nil
}

// ID is this matchmaker's id.
func (m *Matchmaker) ID() paxos.NodeID { return m.id }

// Generation returns a copy of the generation state (audits, Inspect).
func (m *Matchmaker) Generation() Generation { return m.gen.Clone() }

// apply records op and folds it into the state (persist-before-send: the
// op rides in the Ready that carries the answers it licenses).
func (m *Matchmaker) apply(op WriteOp) {
	m.writes = append(m.writes, op)
	Apply(&m.gen, m.regs, op)
}

// Counters returns the counters.
func (m *Matchmaker) Counters() Counters { return m.counters }

// Registry returns a copy of journal j's registry (audits, Inspect).
func (m *Matchmaker) Registry(j journal.ID) (Registry, bool) {
	r, ok := m.regs[j]
	if !ok {
		return Registry{}, false
	}
	return r.Clone(), true
}

// Journals lists the journals with a registry, sorted.
func (m *Matchmaker) Journals() []journal.ID {
	out := make([]journal.ID, 0, len(m.regs))
	for j := range m.regs {
		out = append(out, j)
	}
	slices.SortFunc(out, journal.ID.Compare)
	return out
}

// Close ends the matchmaker after a storage fault: the whole set of
// registries is closed, and every later request is answered MatchClosed
// (a closed matchmaker registers nothing, so it can promise nothing).
func (m *Matchmaker) Close(err error) {
	if m.closed == nil {
		m.closed = fmt.Errorf("%w: %w", ErrStorage, err)
	}
}

// Closed reports the fault that closed the matchmaker (nil while open).
func (m *Matchmaker) Closed() error { return m.closed }

func (m *Matchmaker) registry(j journal.ID) *Registry {
	r := m.regs[j]
	if r == nil {
		r = &Registry{}
		m.regs[j] = r
	}
	return r
}

// Step handles one request addressed to this matchmaker.
func (m *Matchmaker) Step(j journal.ID, msg paxos.Message) {
	if msg.To != m.id || !msg.Type.IsMatchmakerRequest() || msg.From == 0 || !j.IsSet() || msg.Validate() != nil {
		return
	}
	reply := paxos.Message{Type: msg.Type, From: m.id, To: msg.From, Ballot: msg.Ballot, Generation: msg.Generation}
	if m.closed == nil && !m.serves(msg.Generation) {
		m.refuseGeneration(j, msg, reply)
		return
	}
	if m.closed != nil {
		if msg.Type != paxos.MsgGarbageCollect {
			reply.Type = paxos.MsgMatchReply
			reply.Refusal = paxos.MatchClosed
			m.send(j, reply)
		}
		return
	}
	switch msg.Type {
	case paxos.MsgMatch:
		m.match(j, msg, reply)
	case paxos.MsgProbe:
		m.probe(j, reply)
	case paxos.MsgGarbageCollect:
		m.garbageCollect(j, msg, reply)
	}
}

// match registers (ballot, config) for journal j, or refuses.
func (m *Matchmaker) match(j journal.ID, msg paxos.Message, reply paxos.Message) {
	reply.Type = paxos.MsgMatchReply
	b := msg.Ballot
	if b.IsZero() || b.Node != msg.From {
		return
	}
	if msg.Config.IsZero() {
		// A Match without a configuration registers nothing: it retracts
		// the sender's abandoned beliefs up to and including its ballot
		// (a candidate that will not campaign again), and the answer says
		// so once the retraction is durable.
		if r := m.regs[j]; r != nil {
			m.retract(j, r, msg, true)
		}
		reply.Refusal = paxos.MatchRetracted
		m.send(j, reply)
		return
	}
	r := m.registry(j)
	own := paxos.Registration{Ballot: b, Acceptors: msg.Config, Reconfiguration: msg.Reconf}
	reply.GC = r.Watermark
	switch h := r.highest(); {
	case b.Less(r.Watermark):
		m.counters.Refused++
		reply.Refusal = paxos.MatchBelowWatermark
	case h == b:
		// A resent registration: answer it again if it is the same one
		// (the first answer was lost). Anything else at this ballot is
		// refused: a ballot names one configuration, never edited.
		last := r.Effective // collected, or still the last registration
		if n := len(r.Regs); n > 0 && r.Regs[n-1].Ballot == b {
			last = r.Regs[n-1]
		}
		if last.Reconfiguration != own.Reconfiguration || !paxos.SameSystem(last.Acceptors, own.Acceptors) {
			m.counters.Refused++
			reply.Refusal, reply.Refused = paxos.MatchStale, h
			break
		}
		m.counters.Repeats++
		m.retract(j, r, msg, false)
		reply.History, reply.Effective = r.history(b, own), r.Effective
	case b.Less(h):
		m.counters.Refused++
		reply.Refusal, reply.Refused = paxos.MatchStale, h
	default:
		m.counters.Registered++
		r.register(own)
		m.writes = append(m.writes, WriteOp{Kind: OpRegister, Journal: j, Reg: own})
		m.retract(j, r, msg, false)
		reply.History = r.history(b, own)
		reply.Effective = r.Effective
	}
	m.send(j, reply)
}

// retract deletes the belief registrations the candidate of msg abandoned
// before Phase 1: its own (the ballot names it), above msg.Prepared and
// below msg.Ballot (through it, with through: a Match without a
// configuration, from a candidate that abandoned msg.Ballot too). A
// candidate that learns from the matchmakers' answers that its belief was
// superseded abandons its ballot without a Prepare
// (node_matchmaking.go, StaleConfiguration), but its registration stayed,
// and every later candidate had to win a Phase-1 quorum of that stale
// configuration too; once it named a machine retired or lost for good, no
// election could ever be won (a cell that never elects again).
//
// Why it is safe: a value is chosen at a ballot only through Accepts its
// owner (or a successor it handed a won Phase 1 to) sends after a Phase 1
// at that ballot, and the owner's Prepared is at or above every ballot of
// its own at which a Prepare may have left (from boot, its promise, which
// covers every ballot it registered before a crash). No value is chosen at
// a ballot above Prepared, so no later Phase 1 needs its configuration;
// and the ballot is never used again, as the owner's promise is above it.
// Only beliefs are retracted: a reconfiguration stays, as the effective
// configuration is the highest one ever registered. A retracted ballot
// still counts as registered (Registry.Retracted), so the highest never
// moves down and nothing registers at or below it again.
func (m *Matchmaker) retract(j journal.ID, r *Registry, msg paxos.Message, through bool) {
	for _, reg := range slices.Clone(r.Regs) {
		above := msg.Ballot.Less(reg.Ballot) || !through && reg.Ballot == msg.Ballot
		if reg.Ballot.Node != msg.From || reg.Reconfiguration || !msg.Prepared.Less(reg.Ballot) || above {
			continue
		}
		m.counters.Retracted++
		r.retract(reg.Ballot)
		m.writes = append(m.writes, WriteOp{Kind: OpRetract, Journal: j, Reg: paxos.Registration{Ballot: reg.Ballot}})
	}
}

// probe answers the effective configuration and the watermark, registering
// nothing (a rebooted node learning its membership before it campaigns).
func (m *Matchmaker) probe(j journal.ID, reply paxos.Message) {
	reply.Type = paxos.MsgMatchReply
	m.counters.Probes++
	if r := m.regs[j]; r != nil {
		reply.GC, reply.Effective = r.Watermark, r.Effective
	}
	m.send(j, reply)
}

// garbageCollect raises journal j's watermark (durably, before the ack).
func (m *Matchmaker) garbageCollect(j journal.ID, msg paxos.Message, reply paxos.Message) {
	if msg.GC.IsZero() || msg.GC.Node != msg.From {
		return // a leader collects at its own ballot
	}
	r := m.registry(j)
	if r.Watermark.Less(msg.GC) {
		m.counters.Collected++
		r.collect(msg.GC)
		m.writes = append(m.writes, WriteOp{Kind: OpWatermark, Journal: j, Watermark: msg.GC})
	}
	reply.Type = paxos.MsgGarbageCollectAck
	reply.GC = r.Watermark
	m.send(j, reply)
}

func (m *Matchmaker) send(j journal.ID, msg paxos.Message) {
	m.messages = append(m.messages, Envelope{Journal: j, Msg: msg})
}

// HasReady reports whether Ready would carry anything.
func (m *Matchmaker) HasReady() bool {
	return len(m.writes) > 0 || len(m.messages) > 0 || len(m.handovers) > 0
}

// Ready hands out the batch: persist Writes (synced), then send Messages.
// A second Ready before Advance panics.
func (m *Matchmaker) Ready() Ready {
	if m.readyOut {
		panic("matchmaker: Ready called twice without Advance")
	}
	m.readyOut = true
	rd := Ready{Writes: m.writes, Messages: m.messages, Handovers: m.handovers}
	m.writes, m.messages, m.handovers = nil, nil, nil
	return rd
}

// Advance releases the batch handed out by Ready.
func (m *Matchmaker) Advance() {
	if !m.readyOut {
		panic("matchmaker: Advance without Ready")
	}
	m.readyOut = false
}
