package play

import (
	"fmt"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

// The Act IV levels about quorums: flexible quorums, the grid, and reads
// served from a quorum's vote watermarks.

// writeSlot is the slot node n's log holds the write at position seq in
// (0: none).
func writeSlot(n *gnode, seq int) paxos.Slot {
	for _, r := range n.store.Records() {
		if r.Command.Kind == journal.KindWrite && r.Command.Entry.Seq == journal.Seq(seq) {
			return r.Slot
		}
	}
	return 0
}

// quorumPrompt asks how many answers a phase needs, judged by the
// deployment's own quorum system.
func quorumPrompt(g *game, kind, question string, phase1 bool, slot paxos.Slot) *prompt {
	want := func() int {
		members := g.sys.Members()
		for k := 1; k <= len(members); k++ {
			set := g.sys.SetOf(members[:k]...)
			r := g.sys.Phase2(uint64(slot), set, 0)
			if phase1 {
				r = g.sys.Phase1(set, 0)
			}
			if r == quorum.Won {
				return k
			}
		}
		return len(members)
	}
	var choices []string
	for k := 1; k <= g.sys.Size(); k++ {
		choices = append(choices, fmt.Sprint(k))
	}
	return &prompt{kind: kind, question: question, choices: choices,
		because: fmt.Sprintf("the quorum system %s says so", g.sys),
		judge: func(g *game, answer string) (bool, string) {
			w := want()
			if answer == fmt.Sprint(w) {
				return true, ""
			}
			return false, fmt.Sprintf("%s counts %d answers, not %s: with %d acceptors, q1 + q2 must exceed %d so every Phase 1 meets every Phase 2",
				g.sys, w, answer, g.sys.Size(), g.sys.Size())
		}}
}

var flexibleQuorums = &Level{
	ID: "act4/flexible-quorums", Act: "Act IV: quorums and leaders", Title: "Flexible quorums",
	Intro: []string{
		"Safety needs only that every Phase-1 quorum meets every Phase-2 quorum: q1 + q2 > n. Two Phase-2 quorums need not meet at all.",
		"Here four acceptors run q1 = 3 and q2 = 2: a write is chosen by two votes, and an election pays with three promises.",
	},
	Goal: "Get record r1 chosen by two votes only, then elect another leader whose three promises find it and choose it again at its own ballot.",
	Setup: Setup{Acceptors: 4, Quorum: quorum.Spec{Kind: quorum.KindFlexible, Q1: 3, Q2: 2},
		Moves: []string{"campaign", "tick", "crash"}},
	Ask: func(g *game) *prompt {
		if l := g.leader(); l != nil && g.written == 1 && g.facts["answered:phase2-size"] == 0 {
			return quorumPrompt(g, "phase2-size", "Node 1 proposed r1. How many Accepted votes (its own included) choose it?", false, 2)
		}
		return nil
	},
	Check: func(g *game) (Status, string) {
		n1 := g.node(1)
		s := writeSlot(n1, 1)
		if s == 0 {
			return Open, "write r1 through an elected node 1"
		}
		b1 := paxos.Ballot{Round: 1, Node: 1}
		if v := g.voters(s, b1); v > 2 {
			return Failed, fmt.Sprintf("%d acceptors voted for r1 at ballot %s: the level asks for two, so drop the Accepts to nodes 3 and 4", v, ballotText(b1))
		}
		if g.facts["answered:phase2-size"] == 0 {
			return Open, "say how many votes choose r1"
		}
		for _, n := range g.upNodes() {
			if n.id == 1 || !n.node.IsLeader() {
				continue
			}
			b := n.node.LeaderBallot()
			if g.voters(s, b1) > 0 && g.votes[votedKey(s, b1)][n.id] {
				return Open, fmt.Sprintf("node %d voted for r1 itself, so it had nothing to find: crash it and elect node 3 or 4, which never saw r1", n.id)
			}
			if _, c, ok := n.store.Accepted(s); ok && c.Kind == journal.KindWrite && g.voters(s, b) >= 2 && n.node.ChosenIndex() >= s {
				return Reached, fmt.Sprintf("node %d's three promises met a voter of r1, and r1 is chosen again at slot %d under ballot %s", n.id, s, ballotText(b))
			}
			return Open, fmt.Sprintf("node %d leads at %s; deliver its Accepts and the votes, so it chooses r1 again at its own ballot", n.id, ballotText(b))
		}
		if v := g.voters(s, b1); v < 2 {
			return Open, fmt.Sprintf("r1 (slot %d) has %d vote(s) of the 2 that choose it", s, v)
		}
		return Open, fmt.Sprintf("r1 is chosen at slot %d by two votes; crash node 1 and elect another node", s)
	},
	Hint: func(g *game) string {
		if g.written == 0 {
			return "Elect node 1 (campaign, deliver everything) and write r1."
		}
		return "Deliver node 1's Accepts to node 2 only, drop the ones to nodes 3 and 4, and deliver node 2's Accepteds: r1 is chosen by nodes 1 and 2. Then crash node 1, make node 3 campaign (it never saw r1), and deliver everything."
	},
	Reference: []string{"campaign 1", "run", "write 1 r1", "answer 2", "deliver 13", "deliver 16", "drop 14", "drop 15", "drop 17", "drop 18",
		"deliver 19", "deliver 20", "crash 1", "campaign 3", "run"},
	Wrong: []string{"campaign 1", "run", "write 1 r1", "answer 3"},
}

var theGrid = &Level{
	ID: "act4/the-grid", Act: "Act IV: quorums and leaders", Title: "The grid",
	Intro: []string{
		"Six acceptors in two rows of three. A Phase-1 quorum is a whole row; a Phase-2 quorum is a whole column, and each slot is decided by one column: slot s by column s mod 3.",
		"Nodes 1, 2 and 3 are row 0 and nodes 4, 5 and 6 row 1; so column 0 is nodes 1 and 4, column 1 nodes 2 and 5, column 2 nodes 3 and 6. Each write costs two votes, and different slots spread over different columns.",
		"You are the network, and a network can misroute: the stray move sends a copy of an Accept to a node outside its slot's column.",
	},
	Goal: "Decide two writes on two columns, and watch a vote from outside a slot's column count for nothing.",
	Setup: Setup{Acceptors: 6, Quorum: quorum.Spec{Kind: quorum.KindGrid, Rows: 2, Cols: 3},
		Moves: []string{"campaign", "tick"}},
	Ask: func(g *game) *prompt {
		l := g.leader()
		if l == nil || g.written == 0 || g.facts[fmt.Sprintf("answered:grid-column-%d", g.written)] > 0 {
			return nil
		}
		s := writeSlot(l, g.written)
		cols := g.sys.Spec().Cols
		column := func(c int) string {
			var ids []paxos.NodeID
			for i, id := range g.sys.Members() {
				if g.sys.MemberColumn(i) == c {
					ids = append(ids, id)
				}
			}
			return "nodes " + nameList(ids)
		}
		var choices []string
		for c := range cols {
			choices = append(choices, column(c))
		}
		return &prompt{kind: fmt.Sprintf("grid-column-%d", g.written),
			question: fmt.Sprintf("r%d went to slot %d. Whose votes decide it?", g.written, s),
			choices:  choices, because: "slot s is decided by column s mod 3, the two nodes the leader sends its Accepts to",
			judge: func(g *game, answer string) (bool, string) {
				want := column(g.sys.ColumnOf(uint64(s)))
				if answer == want {
					return true, ""
				}
				return false, fmt.Sprintf("slot %d is decided by column %d (%d mod %d): %s, not %s", s, g.sys.ColumnOf(uint64(s)), s, cols, want, answer)
			}}
	},
	Check: func(g *game) (Status, string) {
		l := g.leader()
		if l == nil {
			return Open, "elect node 1"
		}
		cols := map[int]bool{}
		for seq := 1; seq <= g.written; seq++ {
			if s := writeSlot(l, seq); s != 0 && s <= l.node.ChosenIndex() {
				cols[g.sys.ColumnOf(uint64(s))] = true
			}
		}
		switch {
		case len(cols) < 2:
			return Open, fmt.Sprintf("writes decided on %d column(s)", len(cols))
		case g.facts["stray-ignored"] == 0:
			return Open, "two columns decided; now stray an Accept outside its column and deliver the vote it earns"
		}
		return Reached, "two slots decided on two columns, and the stray vote counted for nothing"
	},
	Hint: func(g *game) string {
		if g.written < 2 {
			return "Elect node 1, write, say which nodes decide its slot, deliver everything; then write again. Keep the stray move for a third write."
		}
		return "Write once more, then use the stray move on its Accept to send a copy to a node outside the column; deliver that copy and the Accepted it earns before the column's own votes."
	},
	Reference: []string{"campaign 1", "run", "write 1 r1", "answer nodes 3,6", "run", "write 1 r2", "answer nodes 1,4", "run",
		"write 1 r3", "answer nodes 2,5", "stray 64 3", "deliver 66", "deliver 67", "run"},
	Wrong: []string{"campaign 1", "run", "write 1 r1", "answer nodes 1,4"},
}

var quorumReads = &Level{
	ID: "act4/quorum-reads", Act: "Act IV: quorums and leaders", Title: "Quorum reads",
	Intro: []string{
		"A follower can serve a linearizable read without the leader. It asks a Phase-1 quorum for the highest slot each ever voted in, and serves once its own chosen log covers the highest answer.",
		"Any write that finished before the read began was voted by a Phase-2 quorum, which meets the read's Phase-1 quorum: the read cannot miss it.",
	},
	Goal:  "Serve a read at node 3 that includes r1, written before the read began.",
	Setup: Setup{Acceptors: 3, Quorum: majority, Moves: []string{"campaign", "tick", "read"}},
	Ask: func(g *game) *prompt {
		if g.readCtx == 1 && g.facts["answered:read-quorum"] == 0 {
			return quorumPrompt(g, "read-quorum", "Node 3 asks for vote watermarks. How many answers (its own included) must it have before it knows how far to read?", true, 0)
		}
		return nil
	},
	Check: func(g *game) (Status, string) {
		n3 := g.node(3)
		l := g.node(1)
		s := writeSlot(l, 1)
		if s == 0 || l.node.ChosenIndex() < s {
			return Open, "elect node 1 and get r1 chosen"
		}
		if g.readCtx == 0 {
			return Open, "open a read at node 3"
		}
		for _, rs := range n3.reads {
			if rs.OK && rs.Index >= s {
				return Reached, fmt.Sprintf("node 3 served the read through slot %d, r1 (slot %d) included", rs.Index, s)
			}
		}
		return Open, "node 3's read waits until its chosen log covers the highest slot a quorum voted in: deliver its PreReads and their answers, and tick node 1 so its heartbeat tells node 3 what is chosen"
	},
	Hint: func(g *game) string {
		return "Elect node 1, write r1 and deliver its Accepts to node 2 only, so node 3 has not heard of it. Then read at node 3 and deliver everything."
	},
	Reference: []string{"campaign 1", "run", "write 1 r1", "run", "read 3", "answer 2", "run", "tick 1", "run"},
	Wrong:     []string{"campaign 1", "run", "write 1 r1", "run", "read 3", "answer 1"},
}
