package play

import (
	"fmt"
	"slices"
	"strings"

	"github.com/parosdb/paros/core/paxos"
)

// The Act IV levels of Matchmaker Paxos: matchmaking before Phase 1,
// reconfiguration onto a spare, and the garbage collection that lets a
// removed acceptor retire.

var withMatchmakers = Setup{Acceptors: 3, Spares: 1, Matchmakers: 3, Quorum: majority,
	Moves: []string{"campaign", "tick", "crash", "retire"}, Reconfigurations: []string{"1,2,4"}}

// historyIn is the configurations the matchmakers' replies in flight to
// node id report (its registration's history) and the one it registered,
// each once: the configurations its Phase 1 must reach a quorum of.
func (g *game) historyIn(id paxos.NodeID) []string {
	var out []string
	seen := false
	for _, f := range g.pool {
		if f.msg.Type == paxos.MsgMatchReply && f.msg.To == id && len(f.msg.History) > 0 {
			seen = true
		}
	}
	if !seen {
		return nil
	}
	if n := g.node(id); n.up() {
		out = append(out, memberList(n.node.Configuration().Acceptors))
	}
	for _, f := range g.pool {
		if f.msg.Type != paxos.MsgMatchReply || f.msg.To != id {
			continue
		}
		for _, r := range f.msg.History {
			c := memberList(r.Acceptors)
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}

var matchmaking = &Level{
	ID: "act4/matchmaking", Act: "Act IV: matchmakers", Title: "Matchmaking",
	Intro: []string{
		"With matchmakers, a ballot's configuration is not fixed: before Phase 1 a candidate registers its ballot and configuration with a majority of matchmakers (m1, m2, m3), and each answers with the history of configurations registered below it.",
		"Any of those configurations may have chosen a value, so Phase 1 must reach a quorum of every one of them: not of the newest only, and not of their union.",
	},
	Goal:  "Elect node 1 through the matchmakers and move onto nodes 1, 2 and 4; then elect node 2 and close its Phase 1 over the history node 1 left.",
	Setup: withMatchmakers,
	Ask: func(g *game) *prompt {
		if g.facts["led:1"] == 0 || g.facts["answered:phase1-complete"] > 0 || len(g.historyIn(2)) == 0 {
			return nil
		}
		h := g.historyIn(2)
		return &prompt{kind: "phase1-complete",
			question: fmt.Sprintf("Node 2 registered its ballot with acceptors %s; its matchmakers answer with the configurations registered below it. Counting its own, its Phase 1 must reach a quorum of how many distinct acceptor sets?", h[0]),
			choices:  []string{"1", "2", "3"}, because: "one quorum per configuration in the history, the new one included when it differs",
			judge: func(g *game, answer string) (bool, string) {
				want := len(g.historyIn(2))
				if answer == fmt.Sprint(want) {
					return true, ""
				}
				return false, fmt.Sprintf("the acceptor sets are %v: each may have chosen a value, so Phase 1 needs a quorum of each of the %d, not %s", g.historyIn(2), want, answer)
			}}
	},
	Check: func(g *game) (Status, string) {
		if g.facts["led:1"] == 0 {
			return Open, "make node 1 campaign: first it asks the matchmakers which configuration is in force (a Probe), then it registers its ballot (a Match)"
		}
		if g.facts["reconfigured"] == 0 {
			return Open, "node 1 leads; move the journal onto 1,2,4 and deliver everything, so the matchmakers hold two configurations"
		}
		if g.facts["answered:phase1-complete"] == 0 {
			return Open, "crash node 1, make node 2 campaign, and deliver one matchmaker's answer to its Match"
		}
		if g.facts["led:2"] == 0 {
			return Open, "deliver node 2's Prepares and the Promises until it leads"
		}
		return Reached, "node 2 leads, its Phase 1 closed over every configuration the matchmakers reported"
	},
	Hint: func(g *game) string {
		return "Campaign at node 1 and deliver everything, twice (a Probe, then a Match). Write r1, move onto 1,2,4, and deliver everything. Crash node 1, make node 2 campaign, deliver one of its Matches and answer; then deliver everything."
	},
	Reference: []string{"campaign 1", "run", "campaign 1", "run", "write 1 r1", "run", "reconfigure 1 1,2,4", "run", "crash 1", "campaign 2",
		"deliver 53", "answer 2", "run"},
	Wrong: []string{"campaign 1", "run", "campaign 1", "run", "write 1 r1", "run", "reconfigure 1 1,2,4", "run", "crash 1", "campaign 2",
		"deliver 53", "answer 1"},
}

var reconfigure = &Level{
	ID: "act4/reconfigure", Act: "Act IV: matchmakers", Title: "Reconfigure",
	Intro: []string{
		"Node 4 is a spare, formatted to join. The leader moves the journal onto nodes 1, 2 and 4 by registering the new configuration with the matchmakers under a new ballot, then running Phase 1 over the old configuration and the new.",
		"Once that Phase 1 closes, every slot the old configuration might have chosen is carried into the new one, and new slots are chosen by the new configuration alone.",
	},
	Goal:  "Move the journal onto nodes 1, 2 and 4, and get a write chosen under the new configuration.",
	Setup: withMatchmakers,
	Check: func(g *game) (Status, string) {
		l := g.leader()
		if l == nil {
			return Open, "elect node 1: campaign and deliver everything, twice (a Probe, then a Match)"
		}
		if !l.node.Configuration().Acceptors.Contains(4) {
			if g.facts["reconfigured"] > 0 {
				return Open, "the move onto 1,2,4 is under way: deliver everything"
			}
			return Open, fmt.Sprintf("node %d leads with acceptors %s; move onto 1,2,4", l.id, memberList(l.node.Configuration().Acceptors))
		}
		n4 := g.node(4)
		for seq := g.facts["written-at-reconfigure"] + 1; seq <= g.written; seq++ {
			if s := writeSlot(n4, seq); s != 0 && s <= l.node.ChosenIndex() {
				return Reached, fmt.Sprintf("r%d chosen at slot %d by the new configuration, nodes 1, 2 and 4", seq, s)
			}
		}
		return Open, "the new configuration is in force; write through the leader and deliver"
	},
	Hint: func(g *game) string {
		return "Elect node 1 (campaign and deliver everything, twice: a Probe, then a Match) and write r1. Use the move onto 1,2,4, answer, and deliver everything; tick node 1 and deliver. Then write r2 and deliver."
	},
	Ask:       phase1SetsPrompt,
	Reference: []string{"campaign 1", "run", "campaign 1", "run", "write 1 r1", "run", "reconfigure 1 1,2,4", "answer 1,2,3 and 1,2,4", "run", "tick 1", "run", "write 1 r2", "run"},
	Wrong:     []string{"campaign 1", "run", "campaign 1", "run", "write 1 r1", "run", "reconfigure 1 1,2,4", "answer 1,2,4 only"},
}

var garbageCollection = &Level{
	ID: "act4/garbage-collection", Act: "Act IV: matchmakers", Title: "Garbage collection",
	Intro: []string{
		"After a reconfiguration the old configuration still sits in the matchmakers' history, and every later Phase 1 must reach it. Garbage collection ends that: once the new configuration holds every chosen value, the leader raises the matchmakers' watermark above the old ballots.",
		"Only then may a removed acceptor be retired: before, a candidate could still need its promise.",
	},
	Goal:  "Move the journal off node 3, let the leader collect the old configuration, and retire node 3 with that evidence.",
	Setup: withMatchmakers,
	Ask: func(g *game) *prompt {
		if p := phase1SetsPrompt(g); p != nil {
			return p
		}
		l := g.leader()
		n3 := g.node(3)
		if l == nil || !n3.up() || n3.retired || g.facts["answered:may-retire"] > 0 || !l.node.Configuration().Acceptors.Contains(4) {
			return nil
		}
		return &prompt{kind: "may-retire", question: "Node 1 leads on nodes 1, 2 and 4. May node 3 retire now?",
			choices: []string{"yes", "no"}, because: "node 3 may go once the watermark is above every ballot whose configuration names it",
			judge: func(g *game, answer string) (bool, string) {
				w, _, ok := g.leader().node.Collected()
				r := paxos.RetireNotCollected
				if ok {
					r = g.node(3).node.MayRetire(w)
				}
				want := "no"
				if r == paxos.RetireOK {
					want = "yes"
				}
				if answer == want {
					return true, ""
				}
				return false, fmt.Sprintf("node 3 judges watermark %s: %v", ballotText(w), r)
			}}
	},
	Check: func(g *game) (Status, string) {
		if g.facts["retired"] > 0 {
			return Reached, "node 3 retired, with the watermark above every configuration that named it"
		}
		l := g.leader()
		switch {
		case l == nil:
			return Open, "elect node 1: campaign and deliver everything, twice (a Probe, then a Match)"
		case !l.node.Configuration().Acceptors.Contains(4):
			return Open, "move the journal onto 1,2,4 and deliver everything"
		}
		if w, _, ok := l.node.Collected(); ok {
			return Open, fmt.Sprintf("the collection is effective at watermark %s: retire node 3", ballotText(w))
		}
		return Open, "the journal runs on 1,2,4; tick node 1 and deliver until its garbage collection is effective"
	},
	Hint: func(g *game) string {
		return "Elect node 1 (campaign and deliver everything, twice), write r1, move onto 1,2,4, answer, and deliver everything. Answer whether node 3 may retire yet, then tick node 1 and deliver until the collection is effective, and retire node 3."
	},
	Reference: []string{"campaign 1", "run", "campaign 1", "run", "write 1 r1", "run", "reconfigure 1 1,2,4", "answer 1,2,3 and 1,2,4", "run", "answer no", "tick 1", "run", "tick 1", "run", "retire 3"},
	Wrong:     []string{"campaign 1", "run", "campaign 1", "run", "write 1 r1", "run", "reconfigure 1 1,2,4", "answer 1,2,3 and 1,2,4", "run", "answer yes"},
}

// phase1SetsPrompt asks, right after a reconfiguration is asked for, which
// acceptor sets the new ballot's Phase 1 must reach a quorum of. The
// answer is read from the matchmakers' own registries: every acceptor set
// registered at or above the watermark, and the new one.
func phase1SetsPrompt(g *game) *prompt {
	if g.facts["reconfigured"] == 0 || g.facts["answered:phase1-sets"] > 0 {
		return nil
	}
	want := func() string {
		reg, _ := g.mms[0].mm.Registry(playJournal)
		var sets []string
		for _, r := range reg.Regs {
			if s := memberList(r.Acceptors); !r.Ballot.Less(reg.Watermark) && !slices.Contains(sets, s) {
				sets = append(sets, s)
			}
		}
		if !slices.Contains(sets, "1,2,4") {
			sets = append(sets, "1,2,4")
		}
		if len(sets) == 1 {
			return sets[0] + " only"
		}
		return strings.Join(sets, " and ")
	}
	return &prompt{kind: "phase1-sets",
		question: "Node 1 registers a new ballot for acceptors 1, 2 and 4. Its Phase 1 must reach a quorum of which acceptor sets?",
		choices:  []string{"1,2,4 only", "1,2,3 and 1,2,4", "1,2,3,4 as one set"},
		because:  "either set may have chosen a value the other never saw, so Phase 1 needs a quorum of each",
		judge: func(g *game, answer string) (bool, string) {
			w := want()
			if answer == w {
				return true, ""
			}
			return false, fmt.Sprintf("the matchmakers hold registrations naming %s, and each may have chosen a value the other never saw: Phase 1 needs a quorum of each, not %q. A quorum of the union is not a quorum of each: had the journal moved onto 4,5,6, four of the six (1,4,5,6) would miss 2 and 3, a quorum of the old set that may have chosen alone", w, answer)
		}}
}
