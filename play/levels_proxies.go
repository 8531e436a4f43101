package play

import "fmt"

var proxyLeaders = &Level{
	ID: "act4/proxy-leaders", Act: "Act IV: quorums and leaders", Title: "Proxy leaders",
	Intro: []string{
		"A leader's bottleneck is fan-out: one Accept to every acceptor and one Accepted back from each, per batch. A proxy leader takes that work: the leader hands a batch to a proxy (p1, p2, in turns), the proxy sends the Accepts, counts the votes with the same tally and tells the leader what was chosen.",
		"A proxy decides nothing and keeps no disk. If it dies holding a round, the leader takes the round back after a few beats and runs it itself.",
	},
	Goal:  "Get r1 chosen through a proxy, then crash the proxy holding r2 and watch the leader take r2 back and get it chosen.",
	Setup: Setup{Acceptors: 3, Proxies: 2, Quorum: majority, Moves: []string{"campaign", "tick", "crash"}},
	Ask: func(g *game) *prompt {
		if g.written == 1 && g.facts["answered:proxy-votes"] == 0 {
			return quorumPrompt(g, "proxy-votes", "Node 1 handed r1 to proxy p1. How many acceptors' Accepted must p1 count before it reports r1 chosen?", false, 2)
		}
		return nil
	},
	Check: func(g *game) (Status, string) {
		l := g.node(1)
		if !l.up() || !l.node.IsLeader() {
			return Open, "elect node 1"
		}
		s1, s2 := writeSlot(l, 1), writeSlot(l, 2)
		switch {
		case s1 == 0 || g.facts["proxy-commit"] == 0:
			return Open, "write r1 and deliver its way through the proxy"
		case s2 == 0 || g.facts["proxy-crashed"] == 0:
			return Open, "write r2, then crash the proxy it was handed to before it answers"
		case l.node.ChosenIndex() < s2:
			return Open, fmt.Sprintf("r2 waits at slot %d: tick node 1 until it takes the round back, and deliver", s2)
		}
		return Reached, fmt.Sprintf("r1 chosen through a proxy; r2 (slot %d) taken back and chosen by the leader", s2)
	},
	Hint: func(g *game) string {
		return "Elect node 1, write r1 and deliver everything. Write r2, crash the proxy its Accept went to, deliver, then tick node 1 ten times and deliver."
	},
	Reference: []string{"campaign 1", "run", "write 1 r1", "answer 2", "run", "write 1 r2", "crash 201", "run", "tick 1 5", "tick 1 5", "run"},
	Wrong:     []string{"campaign 1", "run", "write 1 r1", "answer 3"},
}
