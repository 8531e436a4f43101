package matchmaker_test

import (
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
)

func set(g uint64, ids ...paxos.NodeID) matchmaker.Set {
	return matchmaker.Set{Generation: g, Members: ids}
}

// handoverRig is one matchmaker stepped with handover requests.
type handoverRig struct {
	t  *testing.T
	mm *matchmaker.Matchmaker
}

func (r *handoverRig) ask(h matchmaker.Handover) matchmaker.Handover {
	r.t.Helper()
	h.To = r.mm.ID()
	r.mm.StepHandover(h)
	rd := r.mm.Ready()
	r.mm.Advance()
	if len(rd.Handovers) != 1 {
		r.t.Fatalf("%s: %d answers, want 1", h, len(rd.Handovers))
	}
	return rd.Handovers[0]
}

func (r *handoverRig) match(g uint64) paxos.Message {
	r.t.Helper()
	r.mm.Step(jid, paxos.Message{Type: paxos.MsgMatch, From: 1, To: r.mm.ID(), Ballot: bal(9, 1),
		Config: majorityOf(1, 2, 3), Prepared: bal(9, 1), Generation: g})
	rd := r.mm.Ready()
	r.mm.Advance()
	if len(rd.Messages) != 1 {
		r.t.Fatalf("match g%d: %d answers", g, len(rd.Messages))
	}
	return rd.Messages[0].Msg
}

// The generation fence, as a table: a matchmaker serves its own active
// generation only and answers every other with what it knows.
func TestMatchmakerServesOnlyItsActiveGeneration(t *testing.T) {
	r := &handoverRig{t: t}
	var err error
	if r.mm, err = matchmaker.New(mmID, founding, nil); err != nil {
		t.Fatal(err)
	}
	if m := r.match(1); m.Refusal != paxos.MatchOK || m.Generation != 1 {
		t.Fatalf("active generation: %s g%d, want ok g1", m.Refusal, m.Generation)
	}
	if m := r.match(2); m.Refusal != paxos.MatchInactive {
		t.Fatalf("a generation never chosen: %s, want inactive", m.Refusal)
	}
	// Stop freezes generation 1: durable before the answer, and it
	// answers its registries and its decree promise.
	ack := r.ask(matchmaker.Handover{Kind: matchmaker.HStop, From: 5, Generation: 1})
	if ack.Kind != matchmaker.HStopAck || ack.Pages != 1 || len(ack.Journals) != 1 || ack.Journals[0].Journal != jid {
		t.Fatalf("stop answered %s with %d journals", ack, len(ack.Journals))
	}
	if m := r.match(1); m.Refusal != paxos.MatchStopped || !m.Successor.IsZero() {
		t.Fatalf("frozen generation: %s successor %s, want stopped with none", m.Refusal, m.Successor)
	}
	// The decree's acceptor promises and votes, durably.
	b := bal(4, 5)
	if p := r.ask(matchmaker.Handover{Kind: matchmaker.HPrepare, From: 5, Generation: 1, Ballot: b}); p.Kind != matchmaker.HPromise {
		t.Fatalf("prepare answered %s", p)
	}
	next := set(2, mmID, 104, 105)
	if a := r.ask(matchmaker.Handover{Kind: matchmaker.HAccept, From: 5, Generation: 1, Ballot: b, Set: next}); a.Kind != matchmaker.HAccepted || !a.Set.Equal(next) {
		t.Fatalf("accept answered %s", a)
	}
	if n := r.ask(matchmaker.Handover{Kind: matchmaker.HPrepare, From: 6, Generation: 1, Ballot: bal(3, 6)}); n.Kind != matchmaker.HNack || n.Promised != b {
		t.Fatalf("a lower prepare answered %s, want a nack naming %s", n, b)
	}
	// Chosen without the bootstrap records the link but cannot activate.
	l := r.ask(matchmaker.Handover{Kind: matchmaker.HChosen, From: 5, Set: next})
	if l.Kind != matchmaker.HLearned || l.Activated || !r.mm.Generation().Successor.Equal(next) {
		t.Fatalf("chosen answered %s (successor %s)", l, r.mm.Generation().Successor)
	}
	if m := r.match(1); m.Refusal != paxos.MatchStopped || !m.Successor.Equal(next) {
		t.Fatalf("a replaced generation: %s successor %s, want stopped naming %s", m.Refusal, m.Successor, next)
	}
	if m := r.match(2); m.Refusal != paxos.MatchInactive {
		t.Fatalf("a successor not activated here: %s, want inactive", m.Refusal)
	}
}

// A proposed member activates only a bootstrap it holds whole, and then
// serves the new generation from the reconstruction.
func TestMatchmakerActivatesOnlyAWholeBootstrap(t *testing.T) {
	r := &handoverRig{t: t}
	var err error
	if r.mm, err = matchmaker.New(104, matchmaker.Generation{}, nil); err != nil {
		t.Fatal(err)
	}
	if g := r.mm.Generation(); g.Phase() != matchmaker.PhaseFresh {
		t.Fatalf("a new matchmaker is %s, want fresh", g.Phase())
	}
	next := set(2, mmID, 104, 105)
	reg := matchmaker.Registry{Regs: []paxos.Registration{{Ballot: bal(5, 2), Acceptors: majorityOf(1, 2, 4)}}}
	other := journal.ID{Tenant: 1, Journal: 9}
	page := func(p uint32, j journal.ID) matchmaker.Handover {
		return matchmaker.Handover{Kind: matchmaker.HBootstrap, From: 5, Set: next, Ballot: bal(4, 5), Page: p, Pages: 2,
			Journals: []matchmaker.JournalRegistry{{Journal: j, Registry: reg}}}
	}
	if a := r.ask(page(0, jid)); a.Kind != matchmaker.HBootstrapAck || a.Page != 0 {
		t.Fatalf("bootstrap page 0 answered %s", a)
	}
	if l := r.ask(matchmaker.Handover{Kind: matchmaker.HChosen, From: 5, Set: next}); l.Activated {
		t.Fatal("activated with one page of two")
	}
	r.ask(page(1, other))
	if l := r.ask(matchmaker.Handover{Kind: matchmaker.HChosen, From: 5, Set: next}); !l.Activated || l.Phase != matchmaker.PhaseActive {
		t.Fatalf("chosen after every page answered %s", l)
	}
	m := r.match(2)
	if m.Refusal != paxos.MatchOK || len(m.History) != 1 || m.History[0].Ballot != bal(5, 2) {
		t.Fatalf("the activated registry answered %s history %v, want the reconstruction's 5.2", m.Refusal, m.History)
	}
	if m := r.match(1); m.Refusal != paxos.MatchGeneration || !m.Successor.Equal(next) {
		t.Fatalf("an older generation: %s naming %s, want generation naming %s", m.Refusal, m.Successor, next)
	}
}

// Reconstruct keeps the highest watermark, the union above it, the
// highest effective configuration, and counts the highest ballot any
// member registered.
func TestReconstructIsTheUnionAboveTheHighestWatermark(t *testing.T) {
	cfg := majorityOf(1, 2, 3)
	a := matchmaker.Registry{Watermark: bal(2, 1), Regs: []paxos.Registration{{Ballot: bal(3, 1), Acceptors: cfg}}}
	b := matchmaker.Registry{Watermark: bal(4, 2), Regs: []paxos.Registration{{Ballot: bal(4, 2), Acceptors: cfg}, {Ballot: bal(6, 3), Acceptors: cfg, Reconfiguration: true}},
		Effective: paxos.Registration{Ballot: bal(6, 3), Acceptors: cfg, Reconfiguration: true}}
	c := matchmaker.Registry{Retracted: bal(9, 1)}
	got := matchmaker.Reconstruct(a, b, c)
	expectBallots(t, "union", got.Regs, bal(4, 2), bal(6, 3))
	if got.Watermark != bal(4, 2) || got.Effective.Ballot != bal(6, 3) || got.Retracted != bal(9, 1) {
		t.Fatalf("reconstruction %+v", got)
	}
}
