package play

import (
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

var majority = quorum.Spec{Kind: quorum.KindMajority}

// upNodes are the nodes that run now.
func (g *game) upNodes() []*gnode {
	var out []*gnode
	for _, n := range g.nodes {
		if n.up() {
			out = append(out, n)
		}
	}
	return out
}

// firstSeq is the journal's first position as node n's fold holds it.
func firstSeq(n *gnode) journal.Seq { return n.node.State().FirstSeq }

var truncateByConsensus = &Level{
	ID: "act3/truncate-by-consensus", Act: "Act III: truncation", Title: "Truncate by consensus",
	Intro: []string{
		"A log that only grows fills its disk. paros drops a prefix, but no node decides that alone: the Truncate is a command like a write, proposed by the leader and chosen in a slot of its own.",
		"Each node drops the prefix when its own walk over the chosen log reaches that slot, so every node cuts at the same point, whatever order its messages came in.",
		"Two numberings meet here. A position numbers the client's records (1, 2, 3); a slot numbers the log's decisions, and every decision takes one, the client's writes and its Truncate alike. The client's first decision claims the journal (slot 1), so its records land in slots 2 to 4, and a floor counts slots.",
		"You are the network. Elect node 1, write three records, then ask it to drop the first two.",
	},
	Goal:  "Every node keeps position 3 and drops 1 and 2: the journal's first position is 3 on all three nodes.",
	Setup: Setup{Acceptors: 3, Quorum: majority, Moves: []string{"campaign", "tick", "crash", "truncate"}},
	Check: func(g *game) (Status, string) {
		for _, n := range g.upNodes() {
			if firstSeq(n) > 3 {
				return Failed, fmt.Sprintf("node %d dropped through position %d: record 3 was to be kept", n.id, firstSeq(n)-1)
			}
		}
		if g.written < 3 {
			return Open, fmt.Sprintf("%d of 3 records written", g.written)
		}
		for _, n := range g.nodes {
			if !n.up() {
				return Open, fmt.Sprintf("node %d is down", n.id)
			}
			if firstSeq(n) != 3 {
				return Open, fmt.Sprintf("node %d still starts at position %d", n.id, firstSeq(n))
			}
		}
		return Reached, "all three nodes start at position 3: one decision, one cut"
	},
	Hint: func(g *game) string {
		switch {
		case g.leader() == nil:
			return "Make node 1 campaign, then deliver everything: its Prepares and the Promises."
		case g.written < 3:
			return "Write three records through the leader and deliver their Accepts and Accepteds."
		default:
			return "Truncate below position 3, say when a follower cuts, then deliver everything."
		}
	},
	Ask: func(g *game) *prompt {
		if g.facts["truncate-proposed"] == 0 || g.facts["answered:cut-point"] > 0 {
			return nil
		}
		const onAccept, onApply = "when its Accept arrives", "when it applies the Truncate's slot"
		return &prompt{kind: "cut-point",
			question: "The leader proposed the Truncate. When does node 2 drop positions 1 and 2 from its journal?",
			choices:  []string{onAccept, onApply},
			because:  "a vote is not a decision: the cut is applied in log order, once the slot is known chosen",
			judge: func(g *game, answer string) (bool, string) {
				want := onApply
				c := g.future(func(c *game) {
					for i := 0; i < len(c.pool); {
						if f := c.pool[i]; f.hv == nil && f.msg.To == 2 && f.msg.Type == paxos.MsgAccept {
							c.pool = slices.Delete(c.pool, i, i+1)
							c.deliverFlight(f)
							continue
						}
						i++
					}
				})
				if firstSeq(c.node(2)) > firstSeq(g.node(2)) {
					want = onAccept
				}
				if answer == want {
					return true, ""
				}
				return false, fmt.Sprintf("node 2 still starts at position %d after voting for the Truncate: it cuts %s. A vote can lose (another leader may fill that slot with something else), so only a chosen slot, applied in order, moves the floor",
					firstSeq(c.node(2)), want)
			}}
	},
	Reference: []string{"campaign 1", "run", "write 1 r1", "write 1 r2", "write 1 r3", "run", "truncate 1 3", "answer when it applies the Truncate's slot", "run"},
	Wrong:     []string{"campaign 1", "run", "write 1 r1", "write 1 r2", "write 1 r3", "run", "truncate 1 3", "answer when its Accept arrives"},
}

var strandedNode = &Level{
	ID: "act3/the-stranded-node", Act: "Act III: truncation", Title: "The stranded node",
	Intro: []string{
		"A node that was down comes back needing slots that every disk has dropped. No peer can replay them. It is stranded, and catch-up cannot save it.",
		"What saves it is a jump: a peer answers with TrimmedTo, its floor and the journal's state sealed below it, and the node adopts that floor as its own, skipping the prefix it missed.",
	},
	Goal:  "Node 3 comes back below the floor and ends with the cluster's floor, caught up, its promise never lower than before it crashed.",
	Setup: Setup{Acceptors: 3, Quorum: majority, Moves: []string{"campaign", "tick", "crash", "truncate"}},
	Check: func(g *game) (Status, string) {
		n3 := g.node(3)
		if g.facts["truncated-while-3-down"] == 0 {
			return Open, "strand node 3: crash it, then write and truncate past it"
		}
		if !n3.up() {
			return Open, "node 3 is down"
		}
		l := g.leader()
		if l == nil {
			return Open, "no node leads"
		}
		if n3.node.Floor() != l.node.Floor() || n3.node.ChosenIndex() < l.node.ChosenIndex() {
			return Open, fmt.Sprintf("node 3 has floor %d and chosen %d; the leader has floor %d and chosen %d",
				n3.node.Floor(), n3.node.ChosenIndex(), l.node.Floor(), l.node.ChosenIndex())
		}
		if g.facts["answered:trim-point"] == 0 {
			return Open, "say what node 3 holds after the jump"
		}
		return Reached, fmt.Sprintf("node 3 jumped to floor %d and caught up to slot %d", n3.node.Floor(), n3.node.ChosenIndex())
	},
	Hint: func(g *game) string {
		if g.facts["truncated-while-3-down"] == 0 {
			return "Elect node 1, crash node 3, write two records and truncate below position 3 while it is down."
		}
		return "Restart node 3, answer, then tick the leader a few times (tick node 1 five times) and deliver: its heartbeat shows node 3 behind, and a peer answers the catch-up with TrimmedTo."
	},
	Ask: func(g *game) *prompt {
		n3, l := g.node(3), g.leader()
		if !n3.up() || l == nil || g.facts["truncated-while-3-down"] == 0 || g.facts["answered:trim-point"] > 0 ||
			n3.node.Floor() >= l.node.Floor() {
			return nil
		}
		return &prompt{kind: "trim-point",
			question: fmt.Sprintf("Node 3 is back with floor %d and chosen index %d; the leader's floor is %d and its chosen index %d. Once a peer answers it with TrimmedTo, what floor does node 3 hold?",
				n3.node.Floor(), n3.node.ChosenIndex(), l.node.Floor(), l.node.ChosenIndex()),
			choices: []string{fmt.Sprint(n3.node.Floor()), fmt.Sprint(l.node.Floor()), fmt.Sprint(l.node.ChosenIndex()), "0"},
			because: "a stranded node adopts the peer's floor: it jumps over the prefix nobody holds, and catches up above it",
			judge: func(g *game, answer string) (bool, string) {
				want := g.future(func(f *game) { f.settle() }).node(3).node.Floor()
				if answer == fmt.Sprint(want) {
					return true, ""
				}
				return false, fmt.Sprintf("node 3 ends with floor %d, not %s. Slots below %d are on no disk, so it cannot replay them; it cannot keep floor %d either, since that would claim it still holds them",
					want, answer, want, n3.node.Floor())
			}}
	},
	Reference: []string{"campaign 1", "run", "crash 3", "write 1 r1", "write 1 r2", "run", "truncate 1 3", "run", "tick 1", "tick 1", "run", "restart 3", "answer 5", "tick 1", "tick 1", "run"},
	Wrong:     []string{"campaign 1", "run", "crash 3", "write 1 r1", "write 1 r2", "run", "truncate 1 3", "run", "restart 3", "answer 1"},
}
