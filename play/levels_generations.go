package play

import (
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
)

// staleMatch finds a Match in flight that names a generation its
// matchmaker has handed over.
func (g *game) staleMatch() (flight, bool) {
	for _, f := range g.pool {
		if f.hv != nil || f.msg.Type != paxos.MsgMatch {
			continue
		}
		if x := g.matchmaker(f.msg.To); x != nil && x.mm != nil {
			if gen := x.mm.Generation(); gen.Stopped && !gen.Successor.IsZero() && f.msg.Generation <= gen.Set.Generation {
				return f, true
			}
		}
	}
	return flight{}, false
}

// activeAt reports whether every matchmaker of ids is active at generation
// gen.
func (g *game) activeAt(ids []paxos.NodeID, gen uint64) bool {
	for _, id := range ids {
		x := g.matchmaker(id)
		if x == nil || x.mm == nil || x.mm.Generation().Phase() != matchmaker.PhaseActive || x.mm.Generation().Set.Generation != gen {
			return false
		}
	}
	return true
}

var newSet = []paxos.NodeID{104, 105, 106}

var matchmakerGenerations = &Level{
	ID: "act4/matchmaker-generations", Act: "Act IV: matchmakers", Title: "Matchmaker generations",
	Intro: []string{
		"The matchmakers are machines too, and machines get replaced. Their set is itself a chosen value with a generation: the founders are generation 1, and each later set is chosen by a decree over the one before it.",
		"A handover has five steps: stop a quorum of the old set (it freezes and hands over its registries), reconstruct their union, bootstrap it onto every new member, decide the new set by single-decree Paxos over the old one, and publish the outcome. A node still talking to the old set is refused and pointed at the new one.",
	},
	Goal: "Hand the matchmaker set over from m1, m2, m3 to m4, m5, m6, then get a campaign registered with generation 2.",
	Setup: Setup{Acceptors: 3, Matchmakers: 3, SpareMatchmakers: 3, Quorum: majority,
		Moves: []string{"campaign", "tick", "crash", "handover"}},
	Ask: func(g *game) *prompt {
		f, ok := g.staleMatch()
		if !ok || g.facts["answered:generation-fence"] > 0 {
			return nil
		}
		to := f.msg.To
		return &prompt{kind: "generation-fence",
			question: fmt.Sprintf("Matchmaker %s handed generation %d over. Node %s's Match (message %d) still names generation %d. What does %s answer?",
				name(to), f.msg.Generation, name(f.msg.From), f.id, f.msg.Generation, name(to)),
			choices: []string{"registers it", "refuses, naming generation 2", "refuses, naming nothing"},
			because: "a stopped matchmaker never registers for its generation again, and it points late callers at the successor it knows",
			judge: func(g *game, answer string) (bool, string) {
				c := g.future(func(c *game) {
					i, _ := c.flightAt(f.id)
					fl := c.pool[i]
					c.pool = slices.Delete(c.pool, i, i+1)
					c.deliverFlight(fl)
				})
				want := "registers it"
				for _, r := range c.pool {
					if r.hv == nil && r.msg.Type == paxos.MsgMatchReply && r.msg.From == to && r.msg.Ballot == f.msg.Ballot && r.msg.Refusal != paxos.MatchOK {
						want = "refuses, naming nothing"
						if !r.msg.Successor.IsZero() {
							want = fmt.Sprintf("refuses, naming generation %d", r.msg.Successor.Generation)
						}
					}
				}
				if answer == want {
					return true, ""
				}
				return false, fmt.Sprintf("%s %s: it is stopped at generation %d, so registering at ballot %s could let a campaign pass a set that no longer decides anything", name(to), want, f.msg.Generation, ballotText(f.msg.Ballot))
			}}
	},
	Check: func(g *game) (Status, string) {
		if !g.activeAt(newSet, 2) {
			if g.rec != nil {
				return Open, fmt.Sprintf("the handover is %s", g.rec.Step())
			}
			return Open, "start the handover to m4, m5, m6"
		}
		for _, id := range newSet {
			reg, ok := g.matchmaker(id).mm.Registry(playJournal)
			if !ok {
				continue
			}
			for _, r := range reg.Regs {
				if g.facts["registered-after-handover"] > 0 && r.Ballot.Round > 1 {
					return Reached, fmt.Sprintf("generation 2 is active and %s registered ballot %s", name(id), ballotText(r.Ballot))
				}
			}
		}
		return Open, "generation 2 is active; now make a node campaign, through to its registration"
	},
	Hint: func(g *game) string {
		return "Elect node 1 (campaign twice: a Probe, then a Match) and write r1. Start the handover and deliver everything. Then crash node 1, make node 2 campaign, answer for the old matchmaker, deliver everything, and make node 2 campaign again."
	},
	Reference: []string{"campaign 1", "run", "campaign 1", "run", "write 1 r1", "run", "handover m4,m5,m6", "run",
		"crash 1", "campaign 2", "answer refuses, naming generation 2", "run", "campaign 2", "run"},
	Wrong: []string{"campaign 1", "run", "campaign 1", "run", "write 1 r1", "run", "handover m4,m5,m6", "run",
		"crash 1", "campaign 2", "answer registers it"},
}
