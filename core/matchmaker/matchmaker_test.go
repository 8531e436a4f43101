package matchmaker_test

// This file checks the matchmaker role against Matchmaker Paxos §3 and §4
// (Whittaker et al.) and docs/guide/reconfiguration.md ("What happens
// underneath", "The GC watermark and retirement"). One matchmaker, id 101, is
// driven by hand: the test plays the candidates, steps a request, takes the
// Ready and reads what the matchmaker wrote and answered. Every Ready's
// writes are folded into a "disk" with matchmaker.Apply before its messages
// are read, as a host must, so a reboot from that disk can be checked too.

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

const mmID paxos.NodeID = 101

var jid = journal.ID{Tenant: 1, Journal: 1}

func majorityOf(ids ...quorum.ID) quorum.System {
	s, err := quorum.NewMajority(ids)
	if err != nil {
		panic(err)
	}
	return s
}

var (
	cfgA = majorityOf(1, 2, 3)
	cfgB = majorityOf(1, 2, 4)
	cfgC = majorityOf(1, 4, 5)
	cfgD = majorityOf(2, 3, 4)
)

// founding is the rig's matchmaker's generation state: the founding set.
var founding = matchmaker.Founding([]paxos.NodeID{mmID})

func bal(round uint64, node paxos.NodeID) paxos.Ballot { return paxos.Ballot{Round: round, Node: node} }

// rig is one matchmaker and the disk its Readies were persisted to.
type rig struct {
	t    *testing.T
	mm   *matchmaker.Matchmaker
	disk map[journal.ID]*matchmaker.Registry
}

func newRig(t *testing.T) *rig {
	t.Helper()
	mm, err := matchmaker.New(mmID, founding, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &rig{t: t, mm: mm, disk: map[journal.ID]*matchmaker.Registry{}}
}

// step hands one request to the matchmaker and returns its Ready, after
// persisting the writes (persist, then send).
func (r *rig) step(msg paxos.Message) matchmaker.Ready {
	r.t.Helper()
	if msg.Generation == 0 {
		msg.Generation = 1 // the rig's matchmaker founded its set
	}
	r.mm.Step(jid, msg)
	if !r.mm.HasReady() {
		return matchmaker.Ready{}
	}
	rd := r.mm.Ready()
	for _, op := range rd.Writes {
		matchmaker.Apply(&matchmaker.Generation{}, r.disk, op)
	}
	out := matchmaker.Ready{Writes: slices.Clone(rd.Writes), Messages: slices.Clone(rd.Messages)}
	r.mm.Advance()
	return out
}

// reply steps msg and returns the single answer it provoked.
func (r *rig) reply(msg paxos.Message) (paxos.Message, matchmaker.Ready) {
	r.t.Helper()
	rd := r.step(msg)
	if len(rd.Messages) != 1 {
		r.t.Fatalf("%s: %d answers, want 1", msg, len(rd.Messages))
	}
	env := rd.Messages[0]
	if env.Journal != jid || env.Msg.To != msg.From || env.Msg.From != mmID {
		r.t.Fatalf("%s: answer %s for journal %s misaddressed", msg, env.Msg, env.Journal)
	}
	return env.Msg, rd
}

// register registers (b, sys) and requires it accepted.
func (r *rig) register(b paxos.Ballot, sys quorum.System, reconf bool) paxos.Message {
	r.t.Helper()
	m, rd := r.reply(matchMsg(b, sys, reconf))
	if m.Refusal != paxos.MatchOK {
		r.t.Fatalf("register %s: refused %s", b, m.Refusal)
	}
	if len(rd.Writes) != 1 || rd.Writes[0].Kind != matchmaker.OpRegister || rd.Writes[0].Reg.Ballot != b {
		r.t.Fatalf("register %s: writes %+v, want one OpRegister", b, rd.Writes)
	}
	return m
}

func (r *rig) collect(w paxos.Ballot) (paxos.Message, matchmaker.Ready) {
	r.t.Helper()
	return r.reply(paxos.Message{Type: paxos.MsgGarbageCollect, From: w.Node, To: mmID, GC: w})
}

func (r *rig) registry() matchmaker.Registry {
	r.t.Helper()
	reg, ok := r.mm.Registry(jid)
	if !ok {
		r.t.Fatalf("no registry for %s", jid)
	}
	return reg
}

func matchMsg(b paxos.Ballot, sys quorum.System, reconf bool) paxos.Message {
	// Prepared at the ballot: the sender retracts nothing.
	return paxos.Message{Type: paxos.MsgMatch, From: b.Node, To: mmID, Ballot: b, Config: sys, Reconf: reconf, Prepared: b}
}

func ballots(regs []paxos.Registration) []paxos.Ballot {
	var out []paxos.Ballot
	for _, r := range regs {
		out = append(out, r.Ballot)
	}
	return out
}

func expectBallots(t *testing.T, what string, got []paxos.Registration, want ...paxos.Ballot) {
	t.Helper()
	if !slices.Equal(ballots(got), want) {
		t.Fatalf("%s: %v, want %v", what, ballots(got), want)
	}
}

// Matchmaker Paxos §3: a matchmaker answers a registration at ballot b with
// every configuration registered below b that it still holds, i.e. the
// registrations in [watermark, b). The one at the watermark stays (it is
// the collecting leader's own C_b), the ones below it are gone, and the
// requester's own registration is not part of its history.
func TestMatchmakerHistoryIsWatermarkToBallot(t *testing.T) {
	r := newRig(t)
	r.register(bal(1, 1), cfgA, false)
	r.register(bal(2, 2), cfgB, true)
	r.collect(bal(2, 2))
	r.register(bal(3, 3), cfgC, true)

	got := r.register(bal(5, 1), cfgD, false)

	expectBallots(t, "history of 5.1", got.History, bal(2, 2), bal(3, 3))
	if got.GC != bal(2, 2) {
		t.Fatalf("reply watermark %s, want 2.2", got.GC)
	}
	if got.Effective.Ballot != bal(3, 3) || !paxos.SameSystem(got.Effective.Acceptors, cfgC) {
		t.Fatalf("reply effective %s, want 3.3 %s", got.Effective, cfgC)
	}
	if got.Ballot != bal(5, 1) || got.Type != paxos.MsgMatchReply {
		t.Fatalf("reply %s does not echo the ballot", got)
	}
}

// Spec, "Matchmakers and reconfiguration": a reply leaves out a belief when
// a later registration repeats its configuration, so the union stays the
// same. The requester's own configuration counts as a later one. A
// reconfiguration is a fact and is never left out, and nothing leaves the
// registry itself: only the reply is shortened.
func TestMatchmakerLeavesOutRepeatedBeliefs(t *testing.T) {
	t.Run("a later belief repeats it", func(t *testing.T) {
		r := newRig(t)
		r.register(bal(1, 1), cfgA, false)
		r.register(bal(2, 2), cfgA, false)
		r.register(bal(3, 3), cfgB, false)

		got := r.register(bal(4, 1), cfgC, false)

		expectBallots(t, "history", got.History, bal(2, 2), bal(3, 3))
		expectBallots(t, "registry", r.registry().Regs, bal(1, 1), bal(2, 2), bal(3, 3), bal(4, 1))
	})
	t.Run("the requester's own configuration repeats it", func(t *testing.T) {
		r := newRig(t)
		r.register(bal(1, 1), cfgA, false)
		r.register(bal(2, 2), cfgB, true)

		got := r.register(bal(3, 3), cfgA, false)

		expectBallots(t, "history", got.History, bal(2, 2))
	})
	t.Run("a reconfiguration is never left out", func(t *testing.T) {
		r := newRig(t)
		r.register(bal(1, 1), cfgA, true)
		r.register(bal(2, 2), cfgA, false)

		got := r.register(bal(3, 3), cfgA, false)

		expectBallots(t, "history", got.History, bal(1, 1))
	})
	t.Run("failed campaigns of one configuration fit in one entry", func(t *testing.T) {
		r := newRig(t)
		for round := uint64(1); round <= 20; round++ {
			r.register(bal(round, paxos.NodeID(1+round%3)), cfgA, false)
		}

		got := r.register(bal(21, 1), cfgB, false)

		expectBallots(t, "history", got.History, bal(20, 3))
	})
}

// Matchmaker Paxos §3: a matchmaker registers a ballot only above every
// ballot it registered; a registration at or below the highest is refused as
// stale, names the highest, and writes nothing.
func TestMatchmakerRefusesAtOrBelowTheHighest(t *testing.T) {
	r := newRig(t)
	r.register(bal(3, 2), cfgA, false)

	for _, b := range []paxos.Ballot{bal(3, 1), bal(2, 3), bal(1, 1)} {
		got, rd := r.reply(matchMsg(b, cfgA, false))

		if got.Refusal != paxos.MatchStale || got.Refused != bal(3, 2) {
			t.Fatalf("register %s below 3.2: %s refused=%s, want stale naming 3.2", b, got.Refusal, got.Refused)
		}
		if len(rd.Writes) != 0 || len(got.History) != 0 {
			t.Fatalf("register %s: a refusal wrote %v and answered history %v", b, rd.Writes, got.History)
		}
	}
	expectBallots(t, "registry", r.registry().Regs, bal(3, 2))
	if c := r.mm.Counters(); c.Refused != 3 || c.Registered != 1 {
		t.Fatalf("counters %+v, want 1 registered and 3 refused", c)
	}
}

// Spec, "The GC watermark": each matchmaker refuses campaigns below its
// watermark, naming it, and writes nothing.
func TestMatchmakerRefusesBelowTheWatermark(t *testing.T) {
	r := newRig(t)
	r.register(bal(1, 1), cfgA, false)
	r.collect(bal(3, 3))

	got, rd := r.reply(matchMsg(bal(2, 2), cfgA, false))

	if got.Refusal != paxos.MatchBelowWatermark || got.GC != bal(3, 3) {
		t.Fatalf("register 2.2 under watermark 3.3: %s gc=%s", got.Refusal, got.GC)
	}
	if len(rd.Writes) != 0 {
		t.Fatalf("a refusal wrote %v", rd.Writes)
	}
	if reg := r.registry(); len(reg.Regs) != 0 {
		t.Fatalf("registry %v, want empty", reg.Regs)
	}
	// At the watermark is not below it.
	r.register(bal(3, 3), cfgA, false)
}

// A lost reply is repaired by a resend: the same registration at the same
// ballot is answered again, with the same history, and writes nothing. A
// ballot names one configuration and is never edited, so anything else at
// that ballot (another acceptor set, or a belief turned reconfiguration) is
// refused.
func TestMatchmakerResendAndEdit(t *testing.T) {
	r := newRig(t)
	r.register(bal(1, 1), cfgA, false)
	first := r.register(bal(2, 2), cfgB, true)

	again, rd := r.reply(matchMsg(bal(2, 2), cfgB, true))

	if again.Refusal != paxos.MatchOK || len(rd.Writes) != 0 {
		t.Fatalf("resend: %s with writes %v, want ok and nothing written", again.Refusal, rd.Writes)
	}
	if !slices.Equal(ballots(again.History), ballots(first.History)) || again.Effective.Ballot != first.Effective.Ballot {
		t.Fatalf("resend answered %v eff %s, first answer %v eff %s", ballots(again.History), again.Effective.Ballot,
			ballots(first.History), first.Effective.Ballot)
	}
	if c := r.mm.Counters(); c.Repeats != 1 {
		t.Fatalf("repeats %d, want 1", c.Repeats)
	}
	for name, edit := range map[string]paxos.Message{
		"another acceptor set": matchMsg(bal(2, 2), cfgC, true),
		"a belief instead":     matchMsg(bal(2, 2), cfgB, false),
	} {
		got, rd := r.reply(edit)
		if got.Refusal != paxos.MatchStale || got.Refused != bal(2, 2) || len(rd.Writes) != 0 {
			t.Fatalf("%s at 2.2: %s refused=%s writes %v, want stale naming 2.2", name, got.Refusal, got.Refused, rd.Writes)
		}
	}
	reg := r.registry()
	if last := reg.Regs[len(reg.Regs)-1]; !paxos.SameSystem(last.Acceptors, cfgB) || !last.Reconfiguration {
		t.Fatalf("the registration at 2.2 was edited to %s", last)
	}
}

// Spec, "The GC watermark": each matchmaker raises the watermark durably
// before it acks. The raise is a WriteOp in the same Ready as the ack (the
// host persists, then sends), registrations below it are deleted, and the
// effective configuration, a monotone scalar, survives the deletion. The
// disk the Ready was persisted to boots a matchmaker that answers the same.
func TestMatchmakerCollectIsDurableBeforeTheAck(t *testing.T) {
	r := newRig(t)
	r.register(bal(1, 1), cfgA, false)
	r.register(bal(2, 2), cfgB, true)
	r.register(bal(3, 3), cfgB, false)

	ack, rd := r.collect(bal(4, 3))

	if ack.Type != paxos.MsgGarbageCollectAck || ack.GC != bal(4, 3) {
		t.Fatalf("ack %s gc=%s, want GarbageCollectAck 4.3", ack.Type, ack.GC)
	}
	if len(rd.Writes) != 1 || rd.Writes[0].Kind != matchmaker.OpWatermark || rd.Writes[0].Watermark != bal(4, 3) {
		t.Fatalf("the ack's Ready wrote %+v, want one OpWatermark 4.3", rd.Writes)
	}
	reg := r.registry()
	if len(reg.Regs) != 0 || reg.Watermark != bal(4, 3) {
		t.Fatalf("registry after collect: watermark %s regs %v", reg.Watermark, ballots(reg.Regs))
	}
	if reg.Effective.Ballot != bal(2, 2) || !paxos.SameSystem(reg.Effective.Acceptors, cfgB) {
		t.Fatalf("effective %s did not survive the collection", reg.Effective)
	}

	// A lower or equal request raises nothing and writes nothing; the ack
	// names the durable watermark.
	for _, w := range []paxos.Ballot{bal(3, 1), bal(4, 3)} {
		ack, rd := r.collect(w)
		if ack.GC != bal(4, 3) || len(rd.Writes) != 0 {
			t.Fatalf("collect %s under 4.3: ack gc=%s writes %v", w, ack.GC, rd.Writes)
		}
	}

	// A collection not at the sender's own ballot is ignored.
	if rd := r.step(paxos.Message{Type: paxos.MsgGarbageCollect, From: 1, To: mmID, GC: bal(9, 2)}); len(rd.Messages) != 0 || len(rd.Writes) != 0 {
		t.Fatalf("a forged collection was answered: %+v", rd)
	}

	// Reboot from the disk: the same watermark and effective configuration.
	boot := map[journal.ID]matchmaker.Registry{}
	for j, reg := range r.disk {
		boot[j] = reg.Clone()
	}
	mm, err := matchmaker.New(mmID, founding, boot)
	if err != nil {
		t.Fatalf("reboot: %v", err)
	}
	r.mm = mm
	probe, _ := r.reply(paxos.Message{Type: paxos.MsgProbe, From: 2, To: mmID})
	if probe.GC != bal(4, 3) || probe.Effective.Ballot != bal(2, 2) {
		t.Fatalf("after reboot: gc=%s effective=%s, want 4.3 and 2.2", probe.GC, probe.Effective.Ballot)
	}
	got, _ := r.reply(matchMsg(bal(3, 3), cfgB, false))
	if got.Refusal != paxos.MatchBelowWatermark {
		t.Fatalf("after reboot a registration below the watermark was %s", got.Refusal)
	}
}

// Spec, "Matchmakers and reconfiguration": a probe asks only for the
// effective configuration; it registers nothing, so a node rebooted to its
// bootstrap belief cannot put a superseded configuration into the registry.
func TestMatchmakerProbeRegistersNothing(t *testing.T) {
	r := newRig(t)
	r.register(bal(2, 2), cfgB, true)
	r.collect(bal(2, 2))

	got, rd := r.reply(paxos.Message{Type: paxos.MsgProbe, From: 3, To: mmID})

	if got.Type != paxos.MsgMatchReply || !got.Ballot.IsZero() || got.Refusal != paxos.MatchOK {
		t.Fatalf("probe answer %s", got)
	}
	if got.Effective.Ballot != bal(2, 2) || got.GC != bal(2, 2) || len(got.History) != 0 {
		t.Fatalf("probe answer effective=%s gc=%s history=%v", got.Effective.Ballot, got.GC, got.History)
	}
	if len(rd.Writes) != 0 {
		t.Fatalf("a probe wrote %v", rd.Writes)
	}
	expectBallots(t, "registry", r.registry().Regs, bal(2, 2))
	// A probe for a journal never seen answers zero and creates nothing.
	r.mm.Step(journal.ID{Tenant: 9, Journal: 9}, paxos.Message{Type: paxos.MsgProbe, From: 3, To: mmID})
	rd = r.mm.Ready()
	r.mm.Advance()
	if len(rd.Messages) != 1 || !rd.Messages[0].Msg.Effective.IsZero() || len(rd.Writes) != 0 {
		t.Fatalf("probe of an unknown journal: %+v", rd)
	}
	if _, ok := r.mm.Registry(journal.ID{Tenant: 9, Journal: 9}); ok {
		t.Fatalf("a probe created a registry")
	}
}

// Spec: a storage fault in the store closes the whole set. A closed
// matchmaker registers nothing and answers every registration and probe
// MatchClosed (a refusal abandons the campaign); it acks no collection.
func TestMatchmakerClosedAnswersClosed(t *testing.T) {
	r := newRig(t)
	r.register(bal(1, 1), cfgA, false)
	cause := errors.New("disk gone")

	r.mm.Close(cause)

	if err := r.mm.Closed(); !errors.Is(err, matchmaker.ErrStorage) || !errors.Is(err, cause) {
		t.Fatalf("Closed() = %v, want ErrStorage wrapping the cause", err)
	}
	for name, msg := range map[string]paxos.Message{
		"match": matchMsg(bal(5, 2), cfgA, false),
		"probe": {Type: paxos.MsgProbe, From: 2, To: mmID},
	} {
		got, rd := r.reply(msg)
		if got.Type != paxos.MsgMatchReply || got.Refusal != paxos.MatchClosed || len(rd.Writes) != 0 {
			t.Fatalf("%s on a closed matchmaker: %s %s writes %v", name, got.Type, got.Refusal, rd.Writes)
		}
	}
	if rd := r.step(paxos.Message{Type: paxos.MsgGarbageCollect, From: 2, To: mmID, GC: bal(5, 2)}); len(rd.Messages)+len(rd.Writes) != 0 {
		t.Fatalf("a closed matchmaker acked a collection: %+v", rd)
	}
	expectBallots(t, "registry", r.registry().Regs, bal(1, 1))
}

// New boots only from a registry that keeps the invariants: registrations
// sorted and distinct, none below the watermark, well formed, and no
// reconfiguration above the effective one. A damaged or edited store is an
// ErrStorage, never a registry to serve from.
func TestMatchmakerNewRefusesABrokenRegistry(t *testing.T) {
	reg := func(b paxos.Ballot, s quorum.System, reconf bool) paxos.Registration {
		return paxos.Registration{Ballot: b, Acceptors: s, Reconfiguration: reconf}
	}
	good := matchmaker.Registry{Watermark: bal(2, 1), Effective: reg(bal(3, 3), cfgB, true),
		Regs: []paxos.Registration{reg(bal(2, 1), cfgA, false), reg(bal(3, 3), cfgB, true)}}
	if _, err := matchmaker.New(mmID, founding, map[journal.ID]matchmaker.Registry{jid: good}); err != nil {
		t.Fatalf("a sound registry refused: %v", err)
	}
	for name, bad := range map[string]matchmaker.Registry{
		"out of order": {Regs: []paxos.Registration{reg(bal(3, 3), cfgA, false), reg(bal(2, 1), cfgA, false)}},
		"duplicate":    {Regs: []paxos.Registration{reg(bal(3, 3), cfgA, false), reg(bal(3, 3), cfgA, false)}},
		"below the watermark": {Watermark: bal(4, 1),
			Regs: []paxos.Registration{reg(bal(3, 3), cfgA, false)}},
		"no acceptors": {Regs: []paxos.Registration{{Ballot: bal(1, 1)}}},
		"a reconfiguration above the effective": {Effective: reg(bal(1, 1), cfgA, true),
			Regs: []paxos.Registration{reg(bal(1, 1), cfgA, true), reg(bal(2, 2), cfgB, true)}},
		"a ballot out of range": {Regs: []paxos.Registration{reg(bal(paxos.BallotRoundMax+1, 1), cfgA, false)}},
	} {
		_, err := matchmaker.New(mmID, founding, map[journal.ID]matchmaker.Registry{jid: bad})
		if !errors.Is(err, matchmaker.ErrStorage) {
			t.Errorf("%s: New = %v, want ErrStorage", name, err)
		}
	}
	if _, err := matchmaker.New(0, matchmaker.Generation{}, nil); !errors.Is(err, paxos.ErrConfig) {
		t.Errorf("matchmaker id 0: New = %v, want ErrConfig", err)
	}
}

// The matchmaker answers only requests addressed to it: a message for
// another matchmaker, a reply type, or a registration whose ballot is not
// the sender's own is dropped without an answer.
func TestMatchmakerIgnoresMisaddressedRequests(t *testing.T) {
	r := newRig(t)
	for name, msg := range map[string]paxos.Message{
		"another matchmaker":  {Type: paxos.MsgMatch, From: 1, To: 102, Ballot: bal(1, 1), Config: cfgA},
		"a reply type":        {Type: paxos.MsgMatchReply, From: 1, To: mmID, Ballot: bal(1, 1)},
		"someone else's ball": {Type: paxos.MsgMatch, From: 2, To: mmID, Ballot: bal(1, 1), Config: cfgA},
		"retraction, another": {Type: paxos.MsgMatch, From: 1, To: mmID, Ballot: bal(1, 2)},
		"sender zero":         {Type: paxos.MsgProbe, To: mmID},
	} {
		if rd := r.step(msg); len(rd.Messages)+len(rd.Writes) != 0 {
			t.Errorf("%s: answered %+v", name, rd)
		}
	}
}

// A candidate that learned from the matchmakers' answers that its belief
// was superseded abandons its ballot before any Prepare, and its later
// Match says so (Prepared): the matchmaker retracts its own belief
// registrations above Prepared and below the new ballot, and no later
// candidate's history carries them. Nobody else's registration, no
// reconfiguration and nothing at or below Prepared is retracted.
func TestMatchmakerRetractsAbandonedBeliefs(t *testing.T) {
	r := newRig(t)
	r.register(bal(1, 2), cfgA, false) // node 2, prepared
	r.register(bal(2, 1), cfgA, false) // node 1, prepared (below Prepared)
	r.register(bal(3, 1), cfgB, true)  // node 1, a reconfiguration
	r.register(bal(4, 1), cfgC, false) // node 1, the stale belief it abandoned
	m := matchMsg(bal(5, 1), cfgB, false)
	m.Prepared = bal(2, 1)
	got, rd := r.reply(m)
	if got.Refusal != paxos.MatchOK {
		t.Fatalf("5.1 refused: %s", got.Refusal)
	}
	if len(rd.Writes) != 2 || rd.Writes[1].Kind != matchmaker.OpRetract || rd.Writes[1].Reg.Ballot != bal(4, 1) {
		t.Fatalf("writes %+v, want the registration of 5.1 then the retraction of 4.1", rd.Writes)
	}
	var hist []paxos.Ballot
	for _, h := range got.History {
		hist = append(hist, h.Ballot)
	}
	if fmt.Sprint(hist) != "[2.0000000000000001 3.0000000000000001]" {
		t.Fatalf("history %v, want rounds 2 and 3 of node 1 (1.2 repeated by 2.1, 4.1 retracted)", hist)
	}
	if reg := r.registry(); len(reg.Regs) != 4 || reg.Retracted != bal(4, 1) {
		t.Fatalf("registry %+v", reg)
	}
}

// A candidate that will not campaign again (a removed node) retracts
// through its ballot with a Match without a configuration, and is answered
// MatchRetracted once the retraction is durable. Its highest registration
// may go: the ballot still counts as registered, so nothing registers at
// or below it again, across a reboot too.
func TestMatchmakerRetractsThroughTheHighest(t *testing.T) {
	r := newRig(t)
	r.register(bal(1, 2), cfgA, false)
	r.register(bal(2, 3), cfgA, false)
	got, rd := r.reply(paxos.Message{Type: paxos.MsgMatch, From: 3, To: mmID, Ballot: bal(2, 3), Prepared: bal(1, 3)})
	if got.Refusal != paxos.MatchRetracted || got.Type != paxos.MsgMatchReply || got.Ballot != bal(2, 3) {
		t.Fatalf("answer %s, want MatchReply retracted at 2.3", got)
	}
	if len(rd.Writes) != 1 || rd.Writes[0].Kind != matchmaker.OpRetract {
		t.Fatalf("writes %+v, want one OpRetract", rd.Writes)
	}
	mm, err := matchmaker.New(mmID, founding, map[journal.ID]matchmaker.Registry{jid: *r.disk[jid]})
	if err != nil {
		t.Fatal(err)
	}
	r.mm = mm
	for _, b := range []paxos.Ballot{bal(2, 1), bal(2, 3)} {
		if got, _ := r.reply(matchMsg(b, cfgB, false)); got.Refusal != paxos.MatchStale || got.Refused != bal(2, 3) {
			t.Fatalf("%s after the retraction and a reboot: %s refused %s, want stale at 2.3", b, got.Refusal, got.Refused)
		}
	}
	if reg := r.registry(); len(reg.Regs) != 1 || reg.Regs[0].Ballot != bal(1, 2) {
		t.Fatalf("registry %+v, want only 1.2", reg)
	}
}
