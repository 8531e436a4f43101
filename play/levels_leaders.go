package play

import (
	"fmt"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
)

// The Act IV levels about who leads and who only learns: proxy leaders,
// the replica tier and the cooperative handoff.

var proxyLeaders = &Level{
	ID: "act4/proxy-leaders", Act: "Act IV: quorums and leaders", Title: "Proxy leaders",
	Intro: []string{
		"A leader's bottleneck is fan-out: one Accept to every acceptor and one Accepted back from each, per batch. A proxy leader takes that work: the leader hands a batch to a proxy (p1, p2, in turns), the proxy sends the Accepts, counts the votes with the same tally and tells the leader what was chosen.",
		"A proxy decides nothing and keeps no disk. If it dies holding a round, the leader takes the round back after a few beats and runs it itself.",
	},
	Goal:  "Get r1 chosen through a proxy, then crash the proxy holding r2 and watch the leader take r2 back and get it chosen.",
	Setup: Setup{Acceptors: 3, Proxies: 2, Quorum: majority, Moves: []string{"campaign", "tick", "crash"}},
	Ask: func(g *game) *prompt {
		if g.written != 1 || g.facts["answered:proxy-votes"] > 0 {
			return nil
		}
		proxy := "its proxy"
		for _, f := range g.pool {
			if f.hv == nil && f.msg.Type == paxos.MsgAccept && g.proxyOf(f.msg.To) != nil && len(f.msg.Entries) > 0 &&
				f.msg.Entries[len(f.msg.Entries)-1].Command.Kind == journal.KindWrite {
				proxy = "proxy " + name(f.msg.To)
			}
		}
		return quorumPrompt(g, "proxy-votes", fmt.Sprintf("Node 1 handed r1 to %s. How many Accepted votes (the leader's own included) must the proxy count before it reports r1 chosen?", proxy), false, 2)
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

var theHandoff = &Level{
	ID: "act4/the-handoff", Act: "Act IV: quorums and leaders", Title: "The handoff",
	Intro: []string{
		"A leader that must go (its machine is draining) can hand its leadership on instead of letting it lapse: it sends a Relinquish with everything its ballot has decided or left open, and the successor leads under the same ballot, with no election.",
		"Only the ballot's owner may hand on, and only once: a successor that inherited a ballot cannot pass it on again.",
	},
	Goal:  "Hand node 1's leadership to node 2 under the same ballot, write through node 2, then try a second hop to node 3 and see it refused.",
	Setup: Setup{Acceptors: 3, Quorum: majority, Moves: []string{"campaign", "tick", "handoff"}},
	Ask: func(g *game) *prompt {
		relinquish := false
		for _, f := range g.pool {
			relinquish = relinquish || (f.hv == nil && f.msg.Type == paxos.MsgRelinquish && f.msg.To == 2)
		}
		if !relinquish || g.facts["answered:handoff-ballot"] > 0 {
			return nil
		}
		return &prompt{kind: "handoff-ballot", question: "Node 1's Relinquish is on its way to node 2. Once it arrives, under which ballot does node 2 lead?",
			choices: []string{"1.1", "2.2", "1.2"}, because: "a handoff passes the ballot itself: no Phase 1, no new ballot",
			judge: func(g *game, answer string) (bool, string) {
				c := g.future(func(c *game) { c.settle() })
				want := ballotText(c.node(2).node.LeaderBallot())
				if answer == want {
					return true, ""
				}
				return false, fmt.Sprintf("node 2 leads under %s, not %s: it inherited node 1's ballot (round 1 of node 1), so every vote node 1 gathered still counts", want, answer)
			}}
	},
	Check: func(g *game) (Status, string) {
		n2 := g.node(2)
		switch {
		case !n2.up() || !n2.node.IsLeader():
			return Open, "node 2 does not lead yet"
		case n2.node.LeaderBallot().Node != 1:
			return Failed, fmt.Sprintf("node 2 leads under its own ballot %s: that was an election, not a handoff", ballotText(n2.node.LeaderBallot()))
		case g.written < 2 || n2.node.ChosenIndex() < writeSlot(n2, 2):
			return Open, "node 2 leads under node 1's ballot; now write r2 through it and get it chosen"
		case g.facts["handoff-refused"] == 0:
			return Open, "now try to hand on a second time, from node 2 to node 3"
		}
		return Reached, "one hop under one ballot; the second was refused"
	},
	Hint: func(g *game) string {
		return "Elect node 1 and write r1. Hand leadership to node 2, answer, and deliver the Relinquish. Write r2 at node 2, deliver, then try a handoff from node 2 to node 3."
	},
	Reference: []string{"campaign 1", "run", "write 1 r1", "run", "handoff 1 2", "answer 1.1", "run", "write 2 r2", "run", "handoff 2 3"},
	Wrong:     []string{"campaign 1", "run", "write 1 r1", "run", "handoff 1 2", "answer 2.2"},
}

var replicaTier = &Level{
	ID: "act4/the-replica-tier", Act: "Act IV: quorums and leaders", Title: "The replica tier",
	Intro: []string{
		"Acceptors vote; they need not all serve readers. A replica is a learner that never votes: it learns what was chosen from the leader's commits and serves reads, so readers scale without making a quorum any larger.",
		"Node 4 is a replica. Its votes do not exist, so it never counts toward a quorum.",
	},
	Goal:  "Get r1 chosen by the acceptors, have replica 4 learn it, and serve a read at node 4 that includes it.",
	Setup: Setup{Acceptors: 3, Replicas: 1, Quorum: majority, Moves: []string{"campaign", "tick", "read", "crash"}},
	Ask: func(g *game) *prompt {
		if g.written == 1 && g.facts["answered:replica-votes"] == 0 {
			return quorumPrompt(g, "replica-votes", "r1 is proposed. The cell has three acceptors and one replica; how many Accepted votes (the leader's own included) choose it?", false, 2)
		}
		return nil
	},
	Check: func(g *game) (Status, string) {
		n4 := g.node(4)
		if !n4.up() {
			return Open, "replica 4 is down"
		}
		l := g.node(1)
		s := writeSlot(l, 1)
		if s == 0 || l.node.ChosenIndex() < s {
			return Open, "elect node 1 and get r1 chosen"
		}
		if n4.node.Applied() < s {
			return Open, fmt.Sprintf("replica 4 has applied through slot %d; r1 is at slot %d", n4.node.Applied(), s)
		}
		for _, rs := range n4.reads {
			if rs.OK && rs.Index >= s {
				return Reached, fmt.Sprintf("replica 4 served a read through slot %d", rs.Index)
			}
		}
		return Open, "open a read at node 4 and deliver what it asks"
	},
	Hint: func(g *game) string {
		return "Elect node 1 and write r1; deliver everything: the leader's commit teaches the replica. Then read at node 4 and deliver."
	},
	Reference: []string{"campaign 1", "run", "write 1 r1", "answer 2", "run", "tick 1", "run", "read 4", "run", "tick 1", "run"},
	Wrong:     []string{"campaign 1", "run", "write 1 r1", "answer 3"},
}
