package paxos

import (
	"errors"
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/quorum"
)

// ErrNoMatchmakers refuses a reconfiguration on a plain deployment: the
// membership of plain Multi-Paxos is fixed at formation, and a request to
// change it is refused, never quietly honoured.
var ErrNoMatchmakers = errors.New("paros/paxos: no_matchmakers: this deployment has no matchmakers")

// Reconfigure starts a round change to a new acceptor configuration sys (a
// new membership, a new quorum system, or both): a fresh ballot registered
// with the matchmakers as a reconfiguration, then Phase 1 over every
// configuration that may hold a chosen value and over sys. New commands
// stall for that matchmaking round trip and Phase 1. If sys leaves this
// node out, it resigns once Phase 1 is won and the members of sys take
// over. The call only starts the change: the caller watches Configuration.
func (n *Node) Reconfigure(sys quorum.System) error {
	n.wake() // a quiet journal has work (node_quiet.go)
	if !n.matchmakers() {
		return ErrNoMatchmakers
	}
	if err := validateSystem(sys); err != nil {
		return err
	}
	if n.contract.fault != nil {
		return fmt.Errorf("%w: the node stopped on a contract fault", ErrContract)
	}
	n.stepDown()
	n.phase = following{}
	n.campaignMatched(sys, true)
	n.afterEvent()
	n.assertInvariants()
	return nil
}

// validateSystem refuses an acceptor configuration no node may run (see
// Config.Validate).
func validateSystem(sys quorum.System) error {
	if sys.IsZero() {
		return fmt.Errorf("%w: no acceptors", ErrConfig)
	}
	// One member alone may not be a Phase-1 quorum of several (flexible
	// q1 = 1, or a grid of one column): such a candidate wins on its own
	// promise before that promise is durable and sends Accepts early, so a
	// crash could make it reuse the ballot for another value.
	if sys.Size() > 1 {
		for _, id := range sys.Members() {
			if sys.Phase1(sys.SetOf(id), 0) == quorum.Won {
				return fmt.Errorf("%w: member %d alone is a Phase-1 quorum of %s", ErrConfig, id, sys)
			}
		}
	}
	return nil
}

// Configuration is the acceptor configuration this node believes in force
// (zero: a joiner that has not learned it yet).
func (n *Node) Configuration() Configuration { return n.belief }

// Matchmakers is the matchmaker set the node matchmakes with (nil on a
// plain deployment).
func (n *Node) Matchmakers() []NodeID { return n.mms.Members }

// MatchmakerSet is the matchmaker set and its generation (zero on a plain
// deployment).
func (n *Node) MatchmakerSet() MatchmakerSet { return n.mms.Clone() }

// collection is one leadership's garbage collection of the configurations
// its ballot supersedes (Matchmaker Paxos §4, with the condition of the
// spec's "GC watermark" section).
type collection struct {
	// fenced: members of C_b whose reported chosen index reached the
	// election fence (HeartbeatAck.Commit).
	fenced quorum.Set
	acks   map[NodeID]bool
	// effective: a matchmaker quorum holds the watermark durably.
	effective bool
}

// collect runs on every beat of a leader with matchmakers. Two conditions
// license raising the watermark to the leader's ballot: the leadership is
// settled (its recovery is drained: every slot up to the election fence is
// chosen), and a Phase-2 quorum of C_b reports a chosen index at or past
// the fence. A node records a slot it learns chosen as its accepted record
// before its chosen index moves, so every later Phase 1 over C_b finds every
// value an older configuration may have chosen: no future leader needs an
// older configuration's quorum.
func (n *Node) collect(l *leading) {
	if !n.matchmakers() || l.gc.effective || n.lrn.chosenIndex < l.recoverEnd {
		return
	}
	l.gc.fenced = l.gc.fenced.Add(n.me)
	if !hasPhase2Quorum(n.sys, l.gc.fenced) {
		return
	}
	for _, id := range n.mms.Members {
		if !l.gc.acks[id] {
			n.send(Message{Type: MsgGarbageCollect, To: id, GC: l.ballot, Generation: n.mms.Generation})
		}
	}
}

// hasPhase2Quorum reports whether set holds a Phase-2 quorum of sys for some
// slot (on a grid, some full column: slots 0..cols-1 name every column).
func hasPhase2Quorum(sys quorum.System, set quorum.Set) bool {
	cols := 1
	if sys.Kind() == quorum.KindGrid {
		cols = sys.Spec().Cols
	}
	for s := range cols {
		if sys.Phase2(uint64(s), set, 0) == quorum.Won {
			return true
		}
	}
	return false
}

func (n *Node) handleGarbageCollectAck(m Message) {
	l, ok := n.phase.(*leading)
	if !ok || l.gc.effective || m.GC.Less(l.ballot) || !n.mms.Has(m.From) || m.Generation != n.mms.Generation {
		return
	}
	if l.gc.acks == nil {
		l.gc.acks = map[NodeID]bool{}
	}
	l.gc.acks[m.From] = true
	if 2*len(l.gc.acks) > len(n.mms.Members) {
		l.gc.effective = true
		n.counters.Collections++
	}
}

// Collected reports this leader's effective GC watermark and the acceptors
// it retired: members of its history H_b outside C_b. ok is false until a
// matchmaker quorum holds the watermark (and on a follower).
func (n *Node) Collected() (watermark Ballot, retirable []NodeID, ok bool) {
	l, leads := n.phase.(*leading)
	if !leads || !l.gc.effective {
		return Ballot{}, nil, false
	}
	for _, sys := range l.history {
		for _, id := range sys.Members() {
			if !n.sys.Contains(id) && !slices.Contains(retirable, id) {
				retirable = append(retirable, id)
			}
		}
	}
	slices.Sort(retirable)
	return l.ballot, retirable, true
}

// RetireRefusal is why a node refuses to retire.
type RetireRefusal uint8

const (
	RetireOK RetireRefusal = iota
	// RetirePlain: a plain deployment never retires a member.
	RetirePlain
	// RetireLeader: the node leads.
	RetireLeader
	// RetireStale: the configuration the node believes in force is not
	// bound to the watermark (it missed the newest, or rebooted).
	RetireStale
	// RetireMember: the node is a member of that configuration.
	RetireMember
	// RetireNotCollected: the watermark is not above every ballot of a
	// configuration naming this node.
	RetireNotCollected
)

func (r RetireRefusal) String() string {
	switch r {
	case RetireOK:
		return "ok"
	case RetirePlain:
		return "plain"
	case RetireLeader:
		return "leader"
	case RetireStale:
		return "stale"
	case RetireMember:
		return "member"
	case RetireNotCollected:
		return "not_collected"
	}
	return fmt.Sprintf("retire(%d)", uint8(r))
}

// MayRetire judges an operator's retire request carrying the effective GC
// watermark w. All five conditions are required. "Not a member" and "not
// the leader" are beliefs; the watermark above every ballot of a
// configuration naming this node makes "the cluster is done with me" a
// protocol fact; and a belief bound to exactly w makes the membership
// belief fresh (a node that missed the configuration naming it, or
// rebooted to its bootstrap belief, would pass the rest).
func (n *Node) MayRetire(w Ballot) RetireRefusal {
	switch {
	case !n.matchmakers():
		return RetirePlain
	case n.IsLeader():
		return RetireLeader
	case n.belief.IsZero() || n.belief.Ballot != w:
		return RetireStale
	case n.belief.Acceptors.Contains(n.cfg.ID):
		return RetireMember
	case !n.lastMember.Less(w) || !n.ownMember.Less(w):
		return RetireNotCollected
	}
	return RetireOK
}

// heartbeatAddressees is every acceptor the leader beats: C_b, and on a
// deployment with matchmakers every member of its history too, so a
// removed node learns the configuration that removed it (a retirement needs
// that belief) and keeps its election timer quiet.
func (n *Node) heartbeatAddressees(l *leading) []NodeID {
	out := n.sys.Members()
	if len(l.history) == 0 {
		return out
	}
	out = slices.Clone(out)
	for _, sys := range l.history {
		for _, id := range sys.Members() {
			if !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	return out
}
