package matchmaker_test

// This file fuzzes one matchmaker (Matchmaker Paxos §3 and §4, and the
// spec's "Matchmakers and reconfiguration" and "The GC watermark" sections)
// against a naive model. FuzzMatchmaker decodes bytes into a script against
// matchmaker 101: a boot (empty, or from a small decoded registry that New
// must accept exactly when it keeps the Registry invariants), then Steps of
// Match, Probe and GarbageCollect requests for three journals from a few
// senders (misaddressed, malformed and junk-typed ones too), with ballots
// drawn from a small alphabet (zero, small rounds, the journal's highest
// registration and watermark, and the edges of paxos.BallotRoundMax) and
// configurations from a few quorum systems and the zero one; Ready and
// Advance rounds whose writes are folded into a shadow disk with
// matchmaker.Apply, as a host must; Close; and reboots from the shadow disk.
//
// The model is a plain list per journal. Each Step predicts the exact
// write and reply; each Ready must hand out exactly those, in order. A
// reply's history is checked against the rule, not the code: every
// registration in [watermark, ballot) except a belief that a later one (or
// the requester's own) repeats. After every step the matchmaker's registries
// must equal the model's and keep their invariants (sorted, distinct, none
// below the watermark, no reconfiguration above the effective one); the
// watermark and the effective configuration never fall within a boot, and
// the durable ones never fall across reboots. At every Ready the registries
// must equal the shadow disk, every write must pass storage.CheckRegistryOp
// (the stores panic on one that does not), every reply must pass Validate,
// and no reply may reveal a registration, a watermark or an effective
// configuration the same or an earlier Ready did not hand out as a write
// (persist before send). Seeds are the scripts in fuzzMatchmakerSeeds and
// any files in testdata/fuzz/FuzzMatchmaker.

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/storage"
)

// fuzzMMStepsMax bounds the steps of one input.
const fuzzMMStepsMax = 256

var fuzzJournals = [...]journal.ID{{Tenant: 1, Journal: 1}, {Tenant: 1, Journal: 2}, {Tenant: 2, Journal: 1}}

// fuzzSenders: three candidates, a fourth node and the unset id.
var fuzzSenders = [...]paxos.NodeID{1, 2, 3, 4, 0}

func mustSystem(s quorum.System, err error) quorum.System {
	if err != nil {
		panic(err)
	}
	return s
}

// fuzzSystems: the zero system, four majorities, a flexible and a grid
// system over four members, a lone member, and {1,2,3} under another rule
// (the same members as cfgA: not the same system).
var fuzzSystems = [...]quorum.System{
	{}, cfgA, cfgB, cfgC, cfgD,
	mustSystem(quorum.NewFlexible([]quorum.ID{1, 2, 3, 4}, 3, 2)),
	mustSystem(quorum.NewGrid([]quorum.ID{1, 2, 3, 4}, 2, 2)),
	majorityOf(7),
	mustSystem(quorum.NewFlexible([]quorum.ID{1, 2, 3}, 2, 2)),
}

// fuzzEdgeRounds are the rounds at and past the bound.
var fuzzEdgeRounds = [...]uint64{paxos.BallotRoundMax - 1, paxos.BallotRoundMax, paxos.BallotRoundMax + 1, math.MaxUint64}

var errFuzzDisk = errors.New("fuzz: disk gone")

// mmIn reads a fuzz input one byte per decision; past the end it reads 0.
type mmIn struct {
	data []byte
	pos  int
}

func (in *mmIn) next() byte {
	if in.pos >= len(in.data) {
		return 0
	}
	in.pos++
	return in.data[in.pos-1]
}

// wantReply is one reply the model predicts. below and own are the
// registrations in [watermark, ballot) and the requester's own at the
// step, for the history rule (a registration reply with Refusal OK only).
type wantReply struct {
	env   matchmaker.Envelope
	below []paxos.Registration
	own   paxos.Registration
	match bool
}

// mmFuzz plays one input against one matchmaker.
type mmFuzz struct {
	t  testing.TB
	in *mmIn
	mm *matchmaker.Matchmaker
	// model is what the matchmaker's registries must be after every step;
	// shadow is the disk (what every handed-out write made durable).
	model    map[journal.ID]*matchmaker.Registry
	shadow   map[journal.ID]*matchmaker.Registry
	closed   bool
	counters matchmaker.Counters
	writes   []matchmaker.WriteOp
	replies  []wantReply
	// durable and durableEffs are every registration and every effective
	// configuration the disk ever held, per journal and ballot: what a
	// reply may reveal.
	durable, durableEffs map[journal.ID]map[paxos.Ballot]paxos.Registration
	// seen: the watermark and effective ballot last observed in memory
	// (monotone within a boot) and on disk (monotone across boots).
	seenWM, seenEff       map[journal.ID]paxos.Ballot
	durableWM, durableEff map[journal.ID]paxos.Ballot
	trace                 []string
	// reached counts the paths the input took (for the seed test).
	reached map[string]int
}

func (f *mmFuzz) fail(format string, args ...any) {
	f.t.Helper()
	tail := f.trace[max(0, len(f.trace)-30):]
	f.t.Fatalf("%s\ntrace (last %d):\n%s", fmt.Sprintf(format, args...), len(tail), strings.Join(tail, "\n"))
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

// absBallot decodes a ballot without registry context (boot registries).
func (f *mmFuzz) absBallot(inRange bool) paxos.Ballot {
	b := f.in.next()
	node := paxos.NodeID(1 + b/48%4)
	switch {
	case b%8 == 0 && b >= 224 && !inRange:
		return paxos.Ballot{Round: fuzzEdgeRounds[(b-224)/8], Node: node}
	case b%8 == 0:
		return paxos.Ballot{}
	}
	return paxos.Ballot{Round: uint64(b / 8 % 6), Node: node}
}

// ballot decodes a request's ballot near journal j's registry.
func (f *mmFuzz) ballot(j journal.ID, from paxos.NodeID) paxos.Ballot {
	b := f.in.next()
	r := f.model[j]
	h := highestOf(r)
	var wm paxos.Ballot
	if r != nil {
		wm = r.Watermark
	}
	switch b % 8 {
	case 0:
		if b >= 224 {
			return paxos.Ballot{Round: fuzzEdgeRounds[(b-224)/8], Node: from}
		}
		return paxos.Ballot{}
	case 1, 2:
		return paxos.Ballot{Round: uint64(b / 8 % 6), Node: from}
	case 3:
		return paxos.Ballot{Round: uint64(b / 8 % 6), Node: paxos.NodeID(1 + b/48%4)}
	case 4:
		return h
	case 5:
		return paxos.Ballot{Round: h.Round + 1, Node: from}
	case 6:
		return wm
	}
	return paxos.Ballot{Round: h.Round, Node: from}
}

func (f *mmFuzz) system() quorum.System { return fuzzSystems[int(f.in.next())%len(fuzzSystems)] }

func (f *mmFuzz) registration(inRange bool) paxos.Registration {
	return paxos.Registration{Ballot: f.absBallot(inRange), Acceptors: f.system(), Reconfiguration: f.in.next()%2 == 1}
}

// boot decodes the matchmaker's first boot: empty, or from 1-3 decoded
// registries whose watermark and effective configuration are what a
// verified store hands out (in range; the effective one a reconfiguration
// with acceptors) and whose registrations are anything. New must accept
// them exactly when they keep the invariants.
func (f *mmFuzz) boot() {
	f.shadow = map[journal.ID]*matchmaker.Registry{}
	f.durable = map[journal.ID]map[paxos.Ballot]paxos.Registration{}
	f.durableEffs = map[journal.ID]map[paxos.Ballot]paxos.Registration{}
	f.durableWM, f.durableEff = map[journal.ID]paxos.Ballot{}, map[journal.ID]paxos.Ballot{}
	b := f.in.next()
	boot := map[journal.ID]matchmaker.Registry{}
	if b%2 == 1 {
		for range 1 + b/2%3 {
			j := fuzzJournals[f.in.next()%3]
			r := matchmaker.Registry{Watermark: f.absBallot(true)}
			if eff := f.registration(true); !eff.Ballot.IsZero() && !eff.Acceptors.IsZero() {
				eff.Reconfiguration = true
				r.Effective = eff
			}
			for range f.in.next() % 5 {
				r.Regs = append(r.Regs, f.registration(false))
			}
			boot[j] = r
		}
	}
	var bad error
	for j, r := range boot {
		if err := keepsInvariants(r); err != nil {
			bad = fmt.Errorf("journal %s: %w", j, err)
		}
	}
	mm, err := matchmaker.New(mmID, founding, boot)
	switch {
	case err != nil && bad == nil:
		f.fail("New refused a sound registry: %v (%+v)", err, boot)
	case err == nil && bad != nil:
		f.fail("New booted from a broken registry: %v", bad)
	case err != nil && !errors.Is(err, matchmaker.ErrStorage):
		f.fail("New refused a broken registry with %v, want ErrStorage", err)
	case err != nil:
		f.reached["boot refused"]++
		f.trace = append(f.trace, fmt.Sprintf("boot refused: %v", err))
		boot = nil
		if mm, err = matchmaker.New(mmID, founding, nil); err != nil {
			f.fail("New(empty): %v", err)
		}
	case len(boot) > 0:
		f.reached["boot from a registry"]++
		f.trace = append(f.trace, fmt.Sprintf("boot from %d registries", len(boot)))
	}
	for j, r := range boot {
		c := r.Clone()
		f.shadow[j] = &c
		f.noteDurable(j)
	}
	f.mm = mm
	f.reset()
}

// reset makes the model the disk's state (a boot).
func (f *mmFuzz) reset() {
	f.model = map[journal.ID]*matchmaker.Registry{}
	for j, r := range f.shadow {
		c := r.Clone()
		f.model[j] = &c
	}
	f.closed, f.counters, f.writes, f.replies = false, matchmaker.Counters{}, nil, nil
	f.seenWM, f.seenEff = map[journal.ID]paxos.Ballot{}, map[journal.ID]paxos.Ballot{}
}

// noteDurable records what journal j's disk registry now holds.
func (f *mmFuzz) noteDurable(j journal.ID) {
	r := f.shadow[j]
	if f.durable[j] == nil {
		f.durable[j] = map[paxos.Ballot]paxos.Registration{}
		f.durableEffs[j] = map[paxos.Ballot]paxos.Registration{}
	}
	for _, reg := range r.Regs {
		f.durable[j][reg.Ballot] = reg
	}
	if !r.Effective.IsZero() {
		f.durableEffs[j][r.Effective.Ballot] = r.Effective
	}
	if r.Watermark.Less(f.durableWM[j]) || r.Effective.Ballot.Less(f.durableEff[j]) {
		f.fail("journal %s: the disk's watermark or effective fell: %s/%s after %s/%s",
			j, r.Watermark, r.Effective.Ballot, f.durableWM[j], f.durableEff[j])
	}
	f.durableWM[j], f.durableEff[j] = r.Watermark, r.Effective.Ballot
}

// wellFormed says what Message.Validate must: every ballot, slot and
// registration the request carries is within the bounds.
func wellFormed(m paxos.Message) bool {
	for _, b := range []paxos.Ballot{m.Ballot, m.Refused, m.Since, m.GC, m.Effective.Ballot, m.Prepared} {
		if b.Round > paxos.BallotRoundMax {
			return false
		}
	}
	for _, s := range []paxos.Slot{m.Slot, m.Next, m.Commit, m.Watermark} {
		if s > paxos.SlotMax {
			return false
		}
	}
	for _, r := range m.History {
		if r.Ballot.Round > paxos.BallotRoundMax || r.Acceptors.IsZero() {
			return false
		}
	}
	return m.Refusal <= paxos.MatchClosed && (m.Effective.Ballot.IsZero() || !m.Effective.Acceptors.IsZero())
}

// junk decorates a request with fields a request does not use: mostly
// none, sometimes one out of its bounds (the request is malformed), and
// sometimes well-formed ones the matchmaker must ignore.
func (f *mmFuzz) junk(m *paxos.Message) {
	switch f.in.next() % 16 {
	case 11:
		m.Slot = paxos.SlotMax + 1
	case 12:
		m.Refused = paxos.Ballot{Round: paxos.BallotRoundMax + 1, Node: 2}
	case 13:
		m.History = []paxos.Registration{{Ballot: paxos.Ballot{Round: 1, Node: 1}}}
	case 14:
		m.Effective = paxos.Registration{Ballot: paxos.Ballot{Round: 1, Node: 1}, Reconfiguration: true}
	case 15:
		m.Since, m.Commit, m.Refusal = paxos.Ballot{Round: 1, Node: 2}, 3, paxos.MatchStale
		m.History = []paxos.Registration{{Ballot: paxos.Ballot{Round: 1, Node: 2}, Acceptors: cfgA}}
	}
}

var fuzzJunkTypes = [...]paxos.MsgType{paxos.MsgMatchReply, paxos.MsgGarbageCollectAck, paxos.MsgPrepare,
	paxos.MsgType(99), paxos.MsgInvalid}

// request decodes one request of type typ.
func (f *mmFuzz) request(typ paxos.MsgType) (journal.ID, paxos.Message) {
	j := fuzzJournals[f.in.next()%3]
	from := fuzzSenders[f.in.next()%5]
	m := paxos.Message{Type: typ, From: from, To: mmID, Generation: 1}
	to := f.in.next()
	if to%16 == 4 {
		m.Generation = [...]uint64{0, 2, 3, 1 << 40}[to/16%4] // not the matchmaker's generation
	}
	if to%8 == 0 {
		m.To = [...]paxos.NodeID{0, 102, 1, mmID}[to/8%4]
	}
	switch typ {
	case paxos.MsgMatch:
		m.Ballot, m.Config, m.Reconf = f.ballot(j, from), f.system(), f.in.next()%2 == 1
		// The addressing byte also picks what the sender may have
		// prepared: everything (retract nothing; the seed corpus), nothing,
		// half its rounds, or a ballot of another node.
		switch to / 8 % 4 {
		case 0:
			m.Prepared = m.Ballot
		case 2:
			m.Prepared = paxos.Ballot{Round: m.Ballot.Round / 2, Node: from}
		case 3:
			m.Prepared = paxos.Ballot{Round: 1, Node: 4}
		}
	case paxos.MsgProbe:
		if f.in.next()%4 == 3 {
			m.Ballot = f.ballot(j, from)
		}
	case paxos.MsgGarbageCollect:
		m.GC = f.ballot(j, from)
	default:
		m.Ballot, m.GC, m.Config = f.ballot(j, from), f.ballot(j, from), f.system()
	}
	f.junk(&m)
	return j, m
}

// retract is the model of a retraction: the sender's own beliefs above
// m.Prepared and below m.Ballot leave the registry (one OpRetract each, in
// ballot order) and the reply's history.
func (f *mmFuzz) retract(j journal.ID, r *matchmaker.Registry, m paxos.Message, below []paxos.Registration, through bool) []paxos.Registration {
	gone := func(reg paxos.Registration) bool {
		inRange := reg.Ballot.Less(m.Ballot) || through && reg.Ballot == m.Ballot
		return reg.Ballot.Node == m.From && !reg.Reconfiguration && m.Prepared.Less(reg.Ballot) && inRange
	}
	for _, reg := range r.Regs {
		if gone(reg) {
			f.reached["retracted"]++
			f.counters.Retracted++
			f.writes = append(f.writes, matchmaker.WriteOp{Kind: matchmaker.OpRetract, Journal: j, Reg: paxos.Registration{Ballot: reg.Ballot}})
		}
	}
	for _, reg := range r.Regs {
		if gone(reg) && r.Retracted.Less(reg.Ballot) {
			r.Retracted = reg.Ballot
		}
	}
	r.Regs = slices.DeleteFunc(r.Regs, gone)
	return slices.DeleteFunc(below, gone)
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

// ready takes a Ready, persists its writes to the shadow disk, and checks
// the writes and replies against the model's predictions.
func (f *mmFuzz) ready() {
	if got, want := f.mm.HasReady(), len(f.writes)+len(f.replies) > 0; got != want {
		f.fail("HasReady %v, model says %v", got, want)
	}
	rd := f.mm.Ready()
	writes, msgs := slices.Clone(rd.Writes), slices.Clone(rd.Messages)
	// 1. persist: every write is what the model predicted and what a store
	// accepts (the stores panic on an op that breaks a registry).
	if len(writes) != len(f.writes) {
		f.fail("Ready wrote %+v, want %+v", writes, f.writes)
	}
	for i, op := range writes {
		w := f.writes[i]
		if op.Kind != w.Kind || op.Journal != w.Journal || !sameReg(op.Reg, w.Reg) || op.Watermark != w.Watermark {
			f.fail("write %d: %+v, want %+v", i, op, w)
		}
		var head storage.RegistryHead
		if r := f.shadow[op.Journal]; r != nil {
			head = storage.RegistryHead{Watermark: r.Watermark, Effective: r.Effective.Ballot, Highest: highestOf(r)}
		}
		if err := storage.CheckRegistryOp(head, op); err != nil {
			f.fail("write %+v would panic a store: %v", op, err)
		}
		matchmaker.Apply(&matchmaker.Generation{}, f.shadow, op)
		f.noteDurable(op.Journal)
	}
	f.mm.Advance()
	// 2. send: every reply is the predicted one, well formed, and reveals
	// only what is durable.
	if len(msgs) != len(f.replies) {
		f.fail("Ready answered %d messages %v, want %d", len(msgs), msgs, len(f.replies))
	}
	for i, env := range msgs {
		w, m := f.replies[i], env.Msg
		wm := w.env.Msg
		if env.Journal != w.env.Journal || m.Type != wm.Type || m.From != wm.From || m.To != wm.To || m.Ballot != wm.Ballot ||
			m.Refusal != wm.Refusal || m.Refused != wm.Refused || m.GC != wm.GC || !sameReg(m.Effective, wm.Effective) {
			f.fail("reply %d for %s: %s refused=%s gc=%s eff=%s, want %s refused=%s gc=%s eff=%s for %s", i, env.Journal,
				m, m.Refused, m.GC, m.Effective, wm, wm.Refused, wm.GC, wm.Effective, w.env.Journal)
		}
		if w.match {
			f.checkHistory(w, m.History)
		} else if len(m.History) > 0 {
			f.fail("reply %s carries a history %v", m, m.History)
		}
		if err := m.Validate(); err != nil {
			f.fail("reply %s is malformed: %v", m, err)
		}
		if !m.Config.IsZero() || m.Reconf || !m.Since.IsZero() || m.Slot != 0 || m.Commit != 0 {
			f.fail("reply %s carries request fields", m)
		}
		j := env.Journal
		for _, reg := range m.History {
			if d, ok := f.durable[j][reg.Ballot]; !ok || !sameReg(d, reg) {
				f.fail("reply %s reveals %s, which no write handed out so far made durable", m, reg)
			}
		}
		if d, ok := f.durableEffs[j][m.Effective.Ballot]; !m.Effective.IsZero() && (!ok || !sameReg(d, m.Effective)) {
			f.fail("reply %s reveals the effective %s, which no write handed out so far made durable", m, m.Effective)
		}
		if f.durableWM[j].Less(m.GC) {
			f.fail("reply %s names watermark %s above the durable %s", m, m.GC, f.durableWM[j])
		}
	}
	f.writes, f.replies = nil, nil
	// The disk and the memory now agree.
	for j, r := range f.shadow {
		got, ok := f.mm.Registry(j)
		if !ok || !sameRegistry(got, *r) {
			f.fail("journal %s: registry %+v in memory, %+v on disk", j, got, *r)
		}
	}
	for _, j := range f.mm.Journals() {
		if f.shadow[j] == nil {
			f.fail("journal %s has a registry in memory and none on disk", j)
		}
	}
	f.trace = append(f.trace, fmt.Sprintf("ready: %d writes, %d replies", len(writes), len(msgs)))
}

// reboot boots a new matchmaker from the shadow disk: what no Ready handed
// out is lost, replies never sent included.
func (f *mmFuzz) reboot() {
	boot := map[journal.ID]matchmaker.Registry{}
	for j, r := range f.shadow {
		boot[j] = r.Clone()
	}
	mm, err := matchmaker.New(mmID, founding, boot)
	if err != nil {
		f.fail("reboot from the disk the matchmaker wrote: %v", err)
	}
	f.mm = mm
	f.reset()
	f.reached["reboot"]++
	f.trace = append(f.trace, "reboot")
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

func (f *mmFuzz) step() {
	switch op := f.in.next() % 10; op {
	case 0, 1, 2, 3, 4, 5:
		typ := [...]paxos.MsgType{paxos.MsgMatch, paxos.MsgMatch, paxos.MsgMatch, paxos.MsgProbe,
			paxos.MsgGarbageCollect, paxos.MsgGarbageCollect}[op]
		j, m := f.request(typ)
		f.trace = append(f.trace, fmt.Sprintf("step %s %s gc=%s", j, m, m.GC))
		f.predict(j, m)
		f.mm.Step(j, m)
	case 6:
		j, m := f.request(fuzzJunkTypes[f.in.next()%byte(len(fuzzJunkTypes))])
		f.trace = append(f.trace, fmt.Sprintf("step %s %s (junk)", j, m))
		f.predict(j, m)
		f.mm.Step(j, m)
	case 7, 8:
		f.ready()
	default:
		if f.in.next()%4 == 0 {
			f.trace = append(f.trace, "close")
			f.mm.Close(errFuzzDisk)
			f.closed = true
			if err := f.mm.Closed(); !errors.Is(err, matchmaker.ErrStorage) || !errors.Is(err, errFuzzDisk) {
				f.fail("Closed() = %v, want ErrStorage wrapping the cause", err)
			}
		} else {
			f.reboot()
		}
	}
	f.check()
}

func playFuzzMatchmaker(t *testing.T, data []byte) { runFuzzMatchmaker(t, data) }

// runFuzzMatchmaker plays one input to its end and returns the paths it
// reached; any panic or broken check fails it.
func runFuzzMatchmaker(t *testing.T, data []byte) map[string]int {
	f := &mmFuzz{t: t, in: &mmIn{data: data}, reached: map[string]int{}}
	defer func() {
		if r := recover(); r != nil {
			f.fail("panic: %v", r)
		}
	}()
	f.boot()
	f.check()
	for i := 0; i < fuzzMMStepsMax && f.in.pos < len(data); i++ {
		f.step()
	}
	if f.mm.HasReady() || len(f.writes)+len(f.replies) > 0 {
		f.ready() // the last predictions are checked too
	}
	return f.reached
}

// Seed encoders: each returns the bytes one step decodes. Ballots are
// encoded for the ballot decoder: bOwn(r) is round r at the sender, bAt(r,
// n) round r at node n, bHighest the journal's highest registration,
// bAbove one round above it at the sender, bWatermark its watermark, and
// bEdge(k) the k-th of fuzzEdgeRounds at the sender.
const (
	bZero      = 0
	bHighest   = 4
	bAbove     = 5
	bWatermark = 6
)

func bOwn(round byte) byte                   { return 1 + 8*round }               // round < 6
func bAt(round, node byte) byte              { return 3 + 8*round + 48*(node-1) } // round < 6, node 1-4
func bEdge(k byte) byte                      { return 224 + 8*k }                 // k < 4
func sysIdx(s int) byte                      { return byte(s) }                   // index into fuzzSystems
func sender(id paxos.NodeID) byte            { return byte(slices.Index(fuzzSenders[:], id)) }
func jIdx(j int) byte                        { return byte(j) }
func sReady() []byte                         { return []byte{7} }
func sReboot() []byte                        { return []byte{9, 1} }
func sClose() []byte                         { return []byte{9, 0} }
func sProbe(j int, from paxos.NodeID) []byte { return []byte{3, jIdx(j), sender(from), 1, 0, 0} }

// sMatch registers (ballot, system) for journal j from a sender.
func sMatch(j int, from paxos.NodeID, ballot byte, sys int, reconf bool) []byte {
	r := byte(0)
	if reconf {
		r = 1
	}
	return []byte{0, jIdx(j), sender(from), 1, ballot, sysIdx(sys), r, 0}
}

func sCollect(j int, from paxos.NodeID, ballot byte) []byte {
	return []byte{4, jIdx(j), sender(from), 1, ballot, 0}
}

func script(boot []byte, steps ...[]byte) []byte {
	return slices.Concat(append([][]byte{boot}, steps...)...)
}

// fuzzMatchmakerSeeds: the paper's life of a registry (registrations, a
// reconfiguration, a resend, an edit and stale refusals, a collection and a
// refusal below it, probes, a reboot, a close); a boot from a registry and
// one from a broken one; and edges (rounds at the bound, misaddressed,
// malformed and junk requests).
func fuzzMatchmakerSeeds() [][]byte {
	const sA, sB, sC, sD, sFlex3 = 1, 2, 3, 4, 8
	life := script([]byte{0},
		sMatch(0, 1, bOwn(1), sA, false), sReady(), // 1.1 belief A
		sMatch(0, 2, bOwn(2), sB, true), sReady(), // 2.2 reconfiguration B
		sMatch(0, 3, bOwn(3), sA, false), // 3.3 belief A: 1.1 A is left out, 2.2 B is not
		sMatch(0, 3, bOwn(3), sA, false), // resend: the same answer
		sMatch(0, 3, bOwn(3), sC, false), // an edit at 3.3: stale
		sMatch(0, 1, bOwn(2), sA, false), // 2.1 below the highest: stale
		sReady(),
		sMatch(0, 1, bAbove, sFlex3, false), // 4.1: {1,2,3} under another rule
		sCollect(0, 3, bOwn(3)),             // the watermark to 3.3
		sMatch(0, 2, bOwn(2), sA, false),    // 2.2 below the watermark
		sProbe(0, 2), sProbe(1, 2), sReady(),
		sMatch(1, 4, bOwn(1), sD, true), // another journal
		sReboot(),                       // its registration was never handed out: lost
		sProbe(1, 4), sProbe(0, 4), sReady(),
		sMatch(0, 2, bAbove, sB, false), sReady(),
		sClose(), sMatch(0, 3, bAbove, sC, true), sCollect(0, 3, bOwn(5)), sProbe(0, 1), sReady(),
		sReboot(), sMatch(0, 3, bAbove, sC, true), sReady(),
	)
	// A registry that keeps the invariants: journal 0, watermark 1.2,
	// effective 2.3 over B, registrations 1.2 A and 2.3 B (reconfiguration).
	booted := script([]byte{1, jIdx(0), bAt(1, 2), bAt(2, 3), sB, 1, 2, bAt(1, 2), sA, 0, bAt(2, 3), sB, 1},
		sMatch(0, 1, bAbove, sC, false), sProbe(0, 1), sReady(),
		sMatch(0, 2, bAbove, sC, true), sCollect(0, 2, bHighest), sReady(), sReboot(),
		sMatch(0, 3, bAbove, sA, false), sReady(),
	)
	// Registrations out of order: New refuses, the matchmaker boots empty.
	broken := script([]byte{1, jIdx(1), bZero, bZero, 0, 0, 2, bAt(2, 3), sB, 0, bAt(1, 2), sA, 0},
		sMatch(1, 1, bOwn(1), sA, false), sReady(),
	)
	edges := script([]byte{0},
		sMatch(2, 1, bEdge(1), sA, false),   // round BallotRoundMax: registered
		sMatch(2, 2, bEdge(2), sA, false),   // past the bound: malformed
		sMatch(2, 2, bEdge(3), sA, true),    // round 2^64-1: malformed
		sMatch(2, 2, bWatermark, sB, false), // the zero ballot
		sMatch(2, 2, bOwn(1), 0, false),     // no configuration
		sMatch(2, 2, bAt(5, 3), sA, false),  // someone else's ballot
		sCollect(2, 1, bEdge(1)),            // collect at the bound
		sCollect(2, 2, bEdge(2)),            // past it
		sProbe(2, 3), sReady(),
		[]byte{0, 0, sender(1), 0, bOwn(1), sA, 0, 0},  // addressed to node 0
		[]byte{0, 0, sender(1), 8, bOwn(1), sA, 0, 0},  // to another matchmaker
		[]byte{0, 0, sender(0), 1, bOwn(1), sA, 0, 0},  // from node 0
		[]byte{0, 0, sender(1), 1, bOwn(1), sA, 0, 11}, // a slot past the bound
		[]byte{0, 0, sender(1), 1, bOwn(1), sA, 0, 13}, // a history entry without acceptors
		[]byte{0, 0, sender(1), 1, bOwn(1), sA, 0, 15}, // well-formed extra fields
		[]byte{6, 0, 0, sender(1), 1, bOwn(1), bOwn(1), sA, 0},
		[]byte{6, 4, 0, sender(1), 1, bOwn(1), bOwn(1), sA, 0},
		sReady(),
	)
	// Retraction: node 1 registers a belief and a reconfiguration, then
	// a belief whose Match says it prepared nothing (addressing byte 9):
	// the earlier belief is retracted, the reconfiguration stays; a resend
	// retracts nothing more, and node 2 prepared nothing either but
	// retracts none of node 1's.
	retracted := script([]byte{0},
		sMatch(0, 1, bOwn(1), sA, false), sMatch(0, 1, bOwn(2), sB, true), sReady(),
		[]byte{0, jIdx(0), sender(1), 9, bOwn(3), sA, 0, 0}, sReady(),
		[]byte{0, jIdx(0), sender(1), 9, bOwn(3), sA, 0, 0}, sReady(),
		[]byte{0, jIdx(0), sender(2), 9, bOwn(4), sA, 0, 0}, sReady(),
		// node 2 abandons its 4.2, the highest, and will not campaign: a
		// Match without a configuration retracts it, and 4.2 is stale
		// after a reboot too.
		[]byte{0, jIdx(0), sender(2), 9, bOwn(4), 0, 0, 0}, sReady(),
		sReboot(), sProbe(0, 1), sMatch(0, 2, bOwn(4), sA, false), sReady(),
		// A Match naming generation 2 (the addressing byte's 20): the
		// founding matchmaker knows no such set, and answers inactive.
		[]byte{0, jIdx(0), sender(2), 20, bOwn(5), sA, 0, 0}, sReady(),
	)
	return [][]byte{life, booted, broken, edges, retracted}
}

// The seeds alone reach every path of the matchmaker's Step and boot, so
// `go test` covers them without fuzzing.
func TestFuzzMatchmakerSeedsReachEveryPath(t *testing.T) {
	reached := map[string]int{}
	for _, seed := range fuzzMatchmakerSeeds() {
		for k, v := range runFuzzMatchmaker(t, seed) {
			reached[k] += v
		}
	}

	for _, path := range []string{"boot refused", "boot from a registry", "dropped", "closed", "below the watermark",
		"repeat", "stale", "registered", "registered a reconfiguration", "probe", "collected",
		"history left a belief out", "reboot", "retracted", "retraction request", "refused for its generation"} {
		if reached[path] == 0 {
			t.Errorf("no seed reaches %q (reached %v)", path, reached)
		}
	}
}

func FuzzMatchmaker(f *testing.F) {
	for _, seed := range fuzzMatchmakerSeeds() {
		f.Add(seed)
	}
	f.Fuzz(playFuzzMatchmaker)
}
