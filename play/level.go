package play

import (
	"github.com/parosdb/paros/core/quorum"
)

// A level is data: a setup the world is built from, a goal judged on the
// world after every move, hints, the questions it asks, and two recorded
// scripts the tests replay: the reference solution (which must reach the
// goal) and a wrong path (which must end failed, or in a wrong answer the
// world refuses with its numbers).

// Setup is the cell a level starts with.
type Setup struct {
	// Acceptors are nodes 1..Acceptors, under Quorum; Replicas follow
	// them, then Spares (formatted to join by reconfiguration).
	Acceptors, Replicas, Spares int
	// Matchmakers is the matchmaker set's size (m1…; 0: plain Multi-Paxos).
	Matchmakers int
	// SpareMatchmakers are matchmaker machines outside the founding set
	// (after m1…), for a handover to move onto.
	SpareMatchmakers int
	// Proxies is the number of proxy leaders (p1…, ids 201…).
	Proxies int
	Quorum  quorum.Spec
	// Moves lists the verbs offered as buttons (empty: every verb).
	Moves []string
	// Reconfigurations are the acceptor sets offered as a move.
	Reconfigurations []string
}

// Level is one level of the game.
type Level struct {
	ID, Act, Title string
	Intro          []string
	// Goal is the goal in one sentence.
	Goal  string
	Setup Setup
	// Check judges the position: open, reached or failed, with a sentence.
	Check func(g *game) (Status, string)
	// Hint is the hint for the position.
	Hint func(g *game) string
	// Ask opens a question after a move, or returns nil.
	Ask func(g *game) *prompt
	// Reference reaches the goal; Wrong ends failed or in a wrong answer.
	Reference, Wrong []string
}

func (l *Level) hint(g *game) string {
	if l.Hint == nil {
		return ""
	}
	return l.Hint(g)
}

// prompt is a question asked for a role the level made manual. Its judge
// computes the core's own answer (on a world rebuilt from the log when the
// answer is what the core would do next) and compares.
type prompt struct {
	kind, question string
	choices        []string
	// because is said when the answer is right.
	because string
	judge   func(g *game, answer string) (ok bool, why string)
}

// levels are every level, in play order: the order the mechanisms are
// taught in.
var levels = []*Level{
	truncateByConsensus, strandedNode,
	flexibleQuorums, theGrid, quorumReads, proxyLeaders, replicaTier, theHandoff,
	matchmaking, reconfigure, garbageCollection, matchmakerGenerations,
	faultyRecords, wipedNode,
}

func levelByID(id string) (*Level, bool) {
	for _, l := range levels {
		if l.ID == id {
			return l, true
		}
	}
	return nil, false
}
