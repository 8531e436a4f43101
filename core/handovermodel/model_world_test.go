package handovermodel

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

// mailboxMax bounds the messages in flight: a full mailbox loses one.
const mailboxMax = 96

// Reach counts how often each path fired, by name.
type Reach map[string]uint64

// Paths are the reach entries a sweep requires.
var Paths = []string{
	"registration: a registration completes at a matchmaker quorum",
	"gc: a watermark becomes effective",
	"handover: a stop quorum froze a generation",
	"handover: every proposed member holds the whole bootstrap",
	"handover: the decree chose a successor",
	"handover: the decree adopted a vote of another proposal",
	"handover: a lost decree round reopened higher",
	"handover: a member activated its bootstrap",
	"handover: a generation was replaced twice in one run",
	"handover: a reconfigurer abandoned a phase",
	"handover: a reconfigurer was killed mid-phase",
	"handover: a finisher met a generation stopped with no successor",
	"handover: a finisher completed a handover",
	"node: a late request was pointed at the successor",
	"node: a rebooted client followed the chain from its bootstrap belief",
	"node: a member that missed a publication is told the set",
	"matchmaker: crashed before its batch was durable",
	"matchmaker: crashed after its batch was durable, before its answers left",
	"matchmaker: crashed idle",
	"mailbox: a message is duplicated",
	"mailbox: a message is lost",
	"tail: every member of the newest set is active",
}

var (
	pool     = []paxos.NodeID{101, 102, 103, 104, 105}
	founders = []paxos.NodeID{101, 102, 103}
	journals = []journal.ID{{Tenant: 1, Journal: 1}, {Tenant: 1, Journal: 2}}
)

// msg is one message in flight: a matchmaking message of a journal, or a
// handover message.
type msg struct {
	j journal.ID
	m paxos.Message
	h *matchmaker.Handover
}

func (x msg) to() paxos.NodeID {
	if x.h != nil {
		return x.h.To
	}
	return x.m.To
}

func (x msg) String() string {
	if x.h != nil {
		return x.h.String()
	}
	return fmt.Sprintf("%s %s g%d", x.j, x.m, x.m.Generation)
}

// mmProc is one matchmaker process and its disk.
type mmProc struct {
	id       paxos.NodeID
	mm       *matchmaker.Matchmaker
	up       bool
	diskGen  matchmaker.Generation
	diskRegs map[journal.ID]*matchmaker.Registry
	// unsynced are the batches written and not yet durable; held the
	// answers each waits to send.
	unsynced [][]matchmaker.WriteOp
	held     [][]msg
}

// completion is a registration that completed at a matchmaker quorum.
type completion struct {
	j      journal.ID
	b      paxos.Ballot
	cfg    quorum.System
	reconf bool
	gen    uint64
	// wm and configs are what its quorum answered: the highest watermark
	// and the history, with its own configuration.
	wm      paxos.Ballot
	configs []paxos.Registration
}

// watermark is a watermark made effective at a quorum of generation gen.
type watermark struct {
	w   paxos.Ballot
	gen uint64
}

// voteKey names a durable decree vote: generation (of the voters' set),
// ballot, value fingerprint.
type voteKey struct {
	gen uint64
	b   paxos.Ballot
	fp  uint64
}

// World is one seed's model.
type World struct {
	seed    uint64
	rng     *rand.Rand
	opts    matchmaker.ReconfigurerOptions
	mms     map[paxos.NodeID]*mmProc
	clients []*client
	mail    []msg
	configs []quorum.System
	// The audit: completed registrations, effective watermarks, the
	// authoritative set of each generation, durable decree votes.
	completed []completion
	effective map[journal.ID][]watermark
	sets      map[uint64]matchmaker.Set
	votes     map[voteKey]map[paxos.NodeID]bool
	reach     Reach
	trace     []string
	tracing   bool
	err       error
}

// New draws seed's world.
func New(seed uint64, tracing bool) *World {
	w := &World{seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x6e11)), mms: map[paxos.NodeID]*mmProc{},
		effective: map[journal.ID][]watermark{}, sets: map[uint64]matchmaker.Set{},
		votes: map[voteKey]map[paxos.NodeID]bool{}, reach: Reach{}, tracing: tracing}
	// Budgets are drawn per seed (born buggified): a reconfigurer that
	// resends every tick or rarely, and abandons fast or patiently.
	w.opts = matchmaker.ReconfigurerOptions{ResendTicks: 1 + w.rng.IntN(3), PhaseBudget: 4 + w.rng.IntN(24)}
	for _, ids := range [][]quorum.ID{{1, 2, 3}, {1, 2, 4}, {2, 3, 4, 5, 6}} {
		sys, err := quorum.NewMajority(ids)
		if err != nil {
			panic(err)
		}
		w.configs = append(w.configs, sys)
	}
	w.sets[1] = matchmaker.Set{Generation: 1, Members: founders}
	for _, id := range pool {
		p := &mmProc{id: id, up: true, diskRegs: map[journal.ID]*matchmaker.Registry{}}
		if slices.Contains(founders, id) {
			p.diskGen = matchmaker.Founding(founders)
		}
		w.mms[id] = p
		w.boot(p)
	}
	for _, id := range []paxos.NodeID{1, 2, 3} {
		w.clients = append(w.clients, newClient(w, id))
	}
	return w
}

// Err is the first violation (nil: every check held).
func (w *World) Err() error { return w.err }

// Reach is the paths fired so far.
func (w *World) Reach() Reach { return w.reach }

// Trace is the event log (only when tracing).
func (w *World) Trace() []string { return w.trace }

func (w *World) logf(format string, args ...any) {
	if w.tracing {
		w.trace = append(w.trace, fmt.Sprintf(format, args...))
	}
}

func (w *World) fail(format string, args ...any) {
	if w.err == nil {
		w.err = fmt.Errorf("seed %d: "+format, append([]any{w.seed}, args...)...)
		w.logf("VIOLATION %v", w.err)
	}
}

// boot starts p's matchmaker from its disk.
func (w *World) boot(p *mmProc) {
	regs := map[journal.ID]matchmaker.Registry{}
	for j, r := range p.diskRegs {
		regs[j] = r.Clone()
	}
	mm, err := matchmaker.New(p.id, p.diskGen, regs)
	if err != nil {
		w.fail("matchmaker %d boots from its own disk: %v", p.id, err)
		return
	}
	p.mm, p.up, p.unsynced, p.held = mm, true, nil, nil
}

// post puts a message in flight; a full mailbox loses the oldest.
func (w *World) post(x msg) {
	if len(w.mail) >= mailboxMax {
		w.mail = w.mail[1:]
		w.reach["mailbox: a message is lost"]++
	}
	w.mail = append(w.mail, x)
}

// drain takes p's Ready: the batch is durable now or later (the seam).
func (w *World) drain(p *mmProc) {
	for p.mm.HasReady() {
		rd := p.mm.Ready()
		var out []msg
		for _, e := range rd.Messages {
			out = append(out, msg{j: e.Journal, m: e.Msg})
		}
		for i := range rd.Handovers {
			h := rd.Handovers[i]
			out = append(out, msg{h: &h})
		}
		p.mm.Advance()
		if len(rd.Writes) == 0 && len(p.unsynced) == 0 {
			for _, x := range out {
				w.post(x)
			}
			continue
		}
		p.unsynced = append(p.unsynced, slices.Clone(rd.Writes))
		p.held = append(p.held, out)
		if w.rng.IntN(3) != 0 {
			w.syncAll(p)
		}
	}
}

// syncAll makes p's batches durable, in order, and sends their answers.
func (w *World) syncAll(p *mmProc) {
	for len(p.unsynced) > 0 {
		w.syncFirst(p)
	}
}

func (w *World) syncFirst(p *mmProc) {
	ops, out := p.unsynced[0], p.held[0]
	p.unsynced, p.held = p.unsynced[1:], p.held[1:]
	for _, op := range ops {
		if op.Kind == matchmaker.OpDecree {
			k := voteKey{gen: p.diskGen.Set.Generation, b: op.Decree.Vote.Ballot, fp: op.Decree.Vote.Value.Fingerprint()}
			if op.Decree.Vote.Voted() {
				if w.votes[k] == nil {
					w.votes[k] = map[paxos.NodeID]bool{}
				}
				w.votes[k][p.id] = true
			}
		}
		matchmaker.Apply(&p.diskGen, p.diskRegs, op)
	}
	for _, x := range out {
		w.post(x)
	}
}

// crash stops p at a drawn durability seam.
func (w *World) crash(p *mmProc) {
	switch {
	case len(p.unsynced) > 0 && w.rng.IntN(2) == 0:
		w.reach["matchmaker: crashed before its batch was durable"]++
	case len(p.unsynced) > 0:
		for _, ops := range p.unsynced {
			for _, op := range ops {
				matchmaker.Apply(&p.diskGen, p.diskRegs, op)
			}
		}
		w.reach["matchmaker: crashed after its batch was durable, before its answers left"]++
	default:
		w.reach["matchmaker: crashed idle"]++
	}
	w.logf("crash m%d", p.id)
	p.up, p.unsynced, p.held = false, nil, nil
}

// deliver hands one message to its addressee.
func (w *World) deliver(x msg) {
	to := x.to()
	if p, ok := w.mms[to]; ok {
		if !p.up {
			return
		}
		before := p.mm.Generation().Set.Generation
		if x.h != nil {
			p.mm.StepHandover(*x.h)
		} else {
			p.mm.Step(x.j, x.m)
		}
		if after := p.mm.Generation().Set; after.Generation > before {
			w.activated(p, after)
		}
		w.drain(p)
		return
	}
	for _, c := range w.clients {
		if c.id == to && c.up {
			c.receive(x)
		}
	}
}
