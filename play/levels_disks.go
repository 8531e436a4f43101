package play

import (
	"errors"
	"fmt"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/storage"
)

// The Act IV levels about disks that fail the protocol: a record that rots
// (protocol-aware recovery, CTRL) and a disk that is wiped.

var faultyRecords = &Level{
	ID: "act4/faulty-records", Act: "Act IV: damaged disks", Title: "Faulty records",
	Intro: []string{
		"A disk can rot a record: the acceptor knows it voted in that slot at that ballot, and no longer knows for what. Treating that as \"nothing accepted\" could let a new leader fill a chosen slot with a Noop.",
		"So a damaged record is a third answer in a Promise. The new leader settles such a slot by protocol-aware recovery: re-propose the best value when the answers that qualify hold a quorum, Noop when nothing could have been chosen, wait for more answers otherwise.",
		"An answer qualifies when it cannot hide a chosen value above the best value reported: it reports nothing at that slot, a value, or damage at a ballot no higher than the best value's. The candidate's own answer counts like any other.",
	},
	Goal:  "Rot node 2's record of r1, make node 2 lead, and say what it does with that slot.",
	Setup: Setup{Acceptors: 3, Quorum: majority, Moves: []string{"campaign", "tick", "crash", "rot"}},
	Ask: func(g *game) *prompt {
		n2 := g.node(2)
		if !n2.up() || len(n2.store.FaultyEntries()) == 0 || g.facts["answered:ctrl"] > 0 || !n2.node.Campaigning() {
			return nil
		}
		s := n2.store.FaultyEntries()[0].Slot
		return &prompt{kind: "ctrl",
			question: fmt.Sprintf("Node 2 campaigns with its own record of slot %d damaged. Node 3 still holds r1 there, at the same ballot. Once the Promises are in, what does node 2 do with slot %d?", s, s),
			choices:  []string{"repropose r1", "noop", "wait"},
			because:  "node 3's report qualifies and with node 2 they are a quorum: the best value reported is the chosen one",
			judge: func(g *game, answer string) (bool, string) {
				f := g.future(func(f *game) { f.settle() })
				_, c, ok := f.node(2).store.Accepted(s)
				want := "wait"
				switch {
				case ok && c.Kind == journal.KindWrite:
					want = "repropose r1"
				case ok && c.Kind == journal.KindNoop:
					want = "noop"
				}
				if answer == want {
					return true, ""
				}
				return false, fmt.Sprintf("node 2 answers %q for slot %d: node 3 reported a value at the ballot of the damaged record, so a Noop could erase a chosen value, and the two answers already make a quorum of 3", want, s)
			}}
	},
	Check: func(g *game) (Status, string) {
		n2 := g.node(2)
		if g.facts["answered:ctrl"] == 0 {
			return Open, "rot node 2's record of r1 while it is down, restart it and make it campaign"
		}
		s := writeSlot(g.node(3), 1)
		if _, c, ok := n2.store.Accepted(s); !ok || c.Kind != journal.KindWrite || !n2.node.IsLeader() || n2.node.ChosenIndex() < s {
			return Open, "let node 2 win and decide the slot"
		}
		return Reached, fmt.Sprintf("node 2 leads and slot %d holds r1 again, written back over the damage", s)
	},
	Hint: func(g *game) string {
		return "Elect node 1 and write r1; deliver everything. Crash node 2, rot its slot 2, restart it. Crash node 1 so it cannot answer, then make node 2 campaign."
	},
	Reference: []string{"campaign 1", "run", "write 1 r1", "run", "crash 2", "rot 2 2", "restart 2", "crash 1", "campaign 2", "answer repropose r1", "run"},
	Wrong:     []string{"campaign 1", "run", "write 1 r1", "run", "crash 2", "rot 2 2", "restart 2", "crash 1", "campaign 2", "answer noop"},
}

var wipedNode = &Level{
	ID: "act4/the-wiped-node", Act: "Act IV: damaged disks", Title: "The wiped node",
	Intro: []string{
		"A member whose disk was erased has forgotten its promises and votes. If it rejoined as if nothing happened, it could vote for a second value in a slot where it had helped choose the first.",
		"So every disk carries a format marker, and a member that finds none refuses to start: an existing member with an empty disk is amnesia, not a first boot.",
	},
	Goal:  "Wipe node 3's disk, take the refusal when it restarts, and keep nodes 1 and 2 deciding: get r2 chosen after the wipe.",
	Setup: Setup{Acceptors: 3, Quorum: majority, Moves: []string{"campaign", "tick", "crash", "wipe"}},
	Ask: func(g *game) *prompt {
		n3 := g.node(3)
		if !n3.wiped || n3.up() || g.facts["answered:wiped-rejoin"] > 0 {
			return nil
		}
		return &prompt{kind: "wiped-rejoin", question: "Node 3's disk is empty. When it restarts as an existing member, may it boot and vote again?",
			choices: []string{"yes, as a fresh node", "no, it refuses"}, because: "an existing member with no format marker is amnesia",
			judge: func(g *game, answer string) (bool, string) {
				bs, _ := g.node(3).store.Boot()
				_, err := storage.CheckBoot(storage.ClaimExistingMember, bs.Marker, g.marker(g.node(3)))
				want := "yes, as a fresh node"
				if errors.Is(err, storage.ErrAmnesia) {
					want = "no, it refuses"
				}
				if answer == want {
					return true, ""
				}
				return false, fmt.Sprintf("node 3 voted in slots 1 to %d before the wipe; with its votes forgotten it could vote again in them against a decision it made", g.node(1).node.ChosenIndex())
			}}
	},
	Check: func(g *game) (Status, string) {
		if g.facts["boot-refused"] == 0 {
			return Open, "wipe node 3's disk and restart it"
		}
		l := g.node(1)
		s := writeSlot(l, 2)
		if s == 0 || !l.up() || l.node.ChosenIndex() < s {
			return Open, "node 3 refused to start; now get r2 chosen by nodes 1 and 2"
		}
		return Reached, fmt.Sprintf("r2 chosen at slot %d by the survivors; node 3 stays out until it is replaced", s)
	},
	Hint: func(g *game) string {
		return "Elect node 1 and write r1. Crash node 3, wipe it, restart it. Then write r2 through node 1 and deliver."
	},
	Reference: []string{"campaign 1", "run", "write 1 r1", "run", "crash 3", "wipe 3", "answer no, it refuses", "restart 3", "write 1 r2", "run"},
	Wrong:     []string{"campaign 1", "run", "write 1 r1", "run", "crash 3", "wipe 3", "answer yes, as a fresh node"},
}
