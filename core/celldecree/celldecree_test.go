package celldecree

import (
	"slices"
	"testing"

	"github.com/parosdb/paros/core/paxos"
)

type plan struct {
	id       uint64
	founders []paxos.NodeID
}

var plans = Plans[plan]{ID: func(p plan) uint64 { return p.id }, Founders: func(p plan) []paxos.NodeID { return p.founders }}

var founders = []paxos.NodeID{1, 2, 3}

func bal(r uint64, n paxos.NodeID) paxos.Ballot { return paxos.Ballot{Round: r, Node: n} }

func TestAFounderAnswersTheDecreeByItsTable(t *testing.T) {
	x, y := plan{7, founders}, plan{9, founders}
	voted := Acceptor[plan]{Self: 2, Promised: bal(5, 1), VoteBallot: bal(5, 1), Plan: x}
	fresh := Acceptor[plan]{Self: 2, Promised: bal(5, 1)}
	for _, c := range []struct {
		name    string
		a       Acceptor[plan]
		prepare bool
		b       paxos.Ballot
		p       plan
		named   []paxos.NodeID
		granted bool
		refusal Refusal
		effect  Effect
	}{
		{"phase 1 above the promise is promised durably", fresh, true, bal(6, 3), plan{}, founders, true, "", Record},
		{"phase 1 at the promise is granted without a write", fresh, true, bal(5, 1), plan{}, founders, true, "", Nothing},
		{"phase 1 below the promise is refused", fresh, true, bal(4, 3), plan{}, founders, false, PromisedHigher, Nothing},
		{"phase 1 beyond the round bound is refused", fresh, true, bal(5+RoundLeadMax+1, 3), plan{}, founders, false, RoundTooFar, Nothing},
		{"phase 1 at the round bound is promised", fresh, true, bal(5+RoundLeadMax, 3), plan{}, founders, true, "", Record},
		{"phase 1 not naming the founder is refused", fresh, true, bal(6, 3), plan{}, []paxos.NodeID{1, 3}, false, NotAMember, Nothing},
		{"phase 1 out of range is malformed", fresh, true, bal(paxos.BallotRoundMax+1, 3), plan{}, founders, false, Malformed, Nothing},
		{"a first vote formats, then records", fresh, false, bal(5, 1), x, nil, true, "", FormatThenVote},
		{"a vote below the promise is refused", fresh, false, bal(4, 1), x, nil, false, PromisedHigher, Nothing},
		{"a vote for a plan not naming the founder is refused", fresh, false, bal(6, 1), plan{7, []paxos.NodeID{1, 3}}, nil, false, NotAMember, Nothing},
		{"the plan voted, again at its ballot, is formed", voted, false, bal(5, 1), x, nil, true, "", Nothing},
		{"the plan voted, at a higher ballot, raises the vote", voted, false, bal(8, 3), x, nil, true, "", Record},
		{"another plan is refused: the vote is final", voted, false, bal(8, 3), y, nil, false, OtherCell, Nothing},
		{"a plan without an id is malformed", fresh, false, bal(6, 1), plan{}, nil, false, Malformed, Nothing},
	} {
		var next Acceptor[plan]
		var ans Answer[plan]
		var eff Effect
		if c.prepare {
			next, ans, eff = c.a.Prepare(plans, c.b, c.named)
		} else {
			next, ans, eff = c.a.Form(plans, c.b, c.p)
		}
		if ans.Granted != c.granted || ans.Refusal != c.refusal || eff != c.effect {
			t.Errorf("%s: granted %v refusal %q effect %d; want %v %q %d", c.name, ans.Granted, ans.Refusal, eff, c.granted, c.refusal, c.effect)
		}
		if eff == Nothing && (next.Promised != c.a.Promised || next.VoteBallot != c.a.VoteBallot || next.Plan.id != c.a.Plan.id) {
			t.Errorf("%s: state moved without an effect to persist", c.name)
		}
		if next.Promised.Less(c.a.Promised) || next.Promised.Less(next.VoteBallot) {
			t.Errorf("%s: promise %v vote %v (was %v)", c.name, next.Promised, next.VoteBallot, c.a.Promised)
		}
	}
}

// run carries every ask to the founders at once, in order, and returns the
// outcome; lose drops the answers it names.
func run(t *testing.T, accs map[paxos.NodeID]*Acceptor[plan], cfg Config[plan], lose func(Ask[plan]) bool) Outcome[plan] {
	t.Helper()
	p, asks := NewProposer(cfg)
	for len(asks) > 0 {
		ask := asks[0]
		asks = asks[1:]
		if !p.Wants(ask) {
			continue
		}
		if lose != nil && lose(ask) {
			asks = append(asks, p.Unanswered(ask)...)
			continue
		}
		a := accs[ask.To]
		var ans Answer[plan]
		if ask.Phase == Prepare {
			*a, ans, _ = a.Prepare(plans, ask.Ballot, ask.Named)
		} else {
			*a, ans, _ = a.Form(plans, ask.Ballot, ask.Plan)
		}
		asks = append(asks, p.Answered(ask, ans)...)
	}
	out, done := p.Done()
	if !done {
		t.Fatal("the attempt ended with no outcome")
	}
	return out
}

func acceptors() map[paxos.NodeID]*Acceptor[plan] {
	m := map[paxos.NodeID]*Acceptor[plan]{}
	for _, f := range founders {
		m[f] = &Acceptor[plan]{Self: f}
	}
	return m
}

func cfgAt(node paxos.NodeID, round uint64, id uint64) Config[plan] {
	return Config[plan]{Plans: plans, Founders: founders, Node: node, Round: round,
		Fresh: func() plan { return plan{id, founders} }, Names: func(p plan) bool { return slices.Equal(p.founders, founders) }}
}

func TestASecondAttemptAdoptsTheVoteAndFormsTheFounderThatMissedIt(t *testing.T) {
	accs := acceptors()
	// The first attempt's Form to founder 3 is lost: chosen, not formed everywhere.
	out := run(t, accs, cfgAt(1, 1, 7), func(a Ask[plan]) bool { return a.Phase == Form && a.To == 3 })
	if !out.Chosen || out.Refusal != MemberUnformed || out.Member != 3 || out.Plan.id != 7 {
		t.Fatalf("first attempt: %+v; want plan 7 chosen, member_unformed naming 3", out)
	}
	// A second initiator with a plan of its own adopts 7 and forms 3.
	out = run(t, accs, cfgAt(2, accs[2].Promised.Round+1, 9), nil)
	if !out.Chosen || out.Refusal != "" || out.Plan.id != 7 {
		t.Fatalf("second attempt: %+v; want plan 7 chosen and formed", out)
	}
	for id, a := range accs {
		if a.Plan.id != 7 {
			t.Errorf("founder %d holds plan %d", id, a.Plan.id)
		}
	}
}

func TestTheLadderLiftsAFounderAPushLeftBehind(t *testing.T) {
	accs := acceptors()
	// A caller pushed founder 2's promise twice the bound up: the round
	// that beats it is out of the bound's reach of the others' promises.
	*accs[2], _, _ = accs[2].Prepare(plans, bal(RoundLeadMax, 3), founders)
	*accs[2], _, _ = accs[2].Prepare(plans, bal(2*RoundLeadMax, 3), founders)
	steps := 0
	out := run(t, accs, cfgAt(1, 1, 7), func(a Ask[plan]) bool {
		if a.Phase == Prepare && (a.Ballot.Round == RoundLeadMax || a.Ballot.Round == 1+RoundLeadMax) {
			steps++
		}
		return false
	})
	if out.Refusal != "" || out.Plan.id != 7 {
		t.Fatalf("%+v; want plan 7 chosen and formed", out)
	}
	if steps != 2 {
		t.Errorf("%d steps of the ladder; want one at each founder left behind (2)", steps)
	}
	if r := accs[1].Promised.Round; r <= RoundLeadMax {
		t.Errorf("founder 1's promise %d: the attempt won below the push", r)
	}
}

func TestAnUnansweredPhaseOneNamesTheFounder(t *testing.T) {
	out := run(t, acceptors(), cfgAt(1, 1, 7), func(a Ask[plan]) bool { return a.Phase == Prepare && a.To == 2 })
	if out.Refusal != MemberUnreachable || out.Member != 2 || out.Chosen {
		t.Fatalf("%+v; want member_unreachable naming 2", out)
	}
}

func TestAnAttemptGivesUpContendedAfterItsBallots(t *testing.T) {
	accs := acceptors()
	// Every founder promised far above: each ballot is refused, the next
	// opens above the promise named, and a rival keeps climbing.
	rival := uint64(100)
	p, asks := NewProposer(cfgAt(1, 1, 7))
	for len(asks) > 0 {
		ask := asks[0]
		asks = asks[1:]
		if !p.Wants(ask) {
			continue
		}
		rival += 10
		*accs[ask.To], _, _ = accs[ask.To].Prepare(plans, bal(rival, 3), founders)
		a := accs[ask.To]
		var ans Answer[plan]
		*a, ans, _ = a.Prepare(plans, ask.Ballot, ask.Named)
		asks = append(asks, p.Answered(ask, ans)...)
	}
	if out, _ := p.Done(); out.Refusal != Contended {
		t.Fatalf("%+v; want contended after %d ballots", out, RoundsMax)
	}
}
