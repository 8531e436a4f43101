package matchmaker_test

// This file holds FuzzMatchmaker's driver (fuzz_test.go): it decodes bytes
// into a script against matchmaker 101: a boot (empty, or from a small
// decoded registry), then Steps of Match, Probe and GarbageCollect requests
// for three journals from a few senders (misaddressed, malformed and
// junk-typed ones too), with ballots drawn from a small alphabet and
// configurations from a few quorum systems and the zero one; Ready and
// Advance rounds whose writes are folded into a shadow disk with
// matchmaker.Apply, as a host must; Close; and reboots from the shadow disk.
// At every Ready it checks the writes and replies against the model of
// fuzz_model_test.go and the shadow disk (persist before send).

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/storage"
)

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
