package paxos

import "github.com/parosdb/paros/core/quorum"

// The proposer's phases are types, so no field is read in a phase where it
// means nothing: each holds only the fields valid in it, and the node's
// proposer field is exactly one of them.
type phase interface{ phaseName() string }

// following: no proposal rights; the node tracks a leader hint and its
// election timer.
type following struct{}

// campaigning: Phase 1 of ballot el.ballot is running.
type campaigning struct {
	el *election
	// own is the ballot's configuration C_b (zero on a plain deployment).
	own Configuration
}

// leading: Phase 1 of ballot was won. The leadership is Phase-1-backed: it
// may gap-fill with Noops (only such a leadership may). Recovery re-proposes
// every value Phase 1 found and Noop-fills every hole up to recoverEnd;
// those slots are proposed first, through the same pipeline window.
type leading struct {
	ballot Ballot
	rs     *rounds
	// Invariant: every slot in [rs.log.base, nextSlot) has a round or is chosen.
	nextSlot Slot
	// unsent is the first slot whose round is open but whose Accept has not
	// left (held behind the pipeline window); == nextSlot when none.
	unsent Slot
	// inflight counts open rounds whose Accept has left.
	inflight int
	// recoverEnd is the read fence: the highest slot the winning Phase 1
	// could have found chosen.
	recoverEnd Slot
	// CheckQuorum: members heard from at this ballot in the current window;
	// heard is the previous window's (a handoff's candidates are the
	// members of either).
	live             quorum.Set
	heard            quorum.Set
	checkElapsed     int
	heartbeatElapsed int
	resendCursor     Slot
	// fillTo: the highest vote watermark reported by an acceptor; the
	// leader Noop-fills up to it so quorum reads never wait forever on a
	// slot a previous leadership opened and nobody decided.
	fillTo Slot

	// Matchmaker Paxos (nil/zero on a plain deployment): history is every
	// configuration the winning Phase 1 needed a quorum of (H_b and C_b);
	// gc is the garbage collection of the configurations it supersedes.
	history []quorum.System
	gc      collection
	// config is C_b: the configuration the ballot is bound to (with
	// matchmakers), which every Phase-2 tally of the leadership asks; own
	// is C_b with its ballot and since (zero on a plain deployment).
	config quorum.System
	own    Configuration

	// inherited: the leadership was handed on to this node (node_handoff.go),
	// not won by its own Phase 1. It may not gap-fill below its frontier
	// nor hand the leadership on again; uncovered counts the ticks its
	// inherited fence stays above the chosen index. acked is each member's
	// chosen index as its last HeartbeatAck reported it.
	inherited bool
	uncovered int
	acked     map[NodeID]Slot
	// suspect names the proxies a round was taken back from and that
	// announced nothing since (node_proxy.go): their slots run on the
	// leader, with a probe copy to the proxy.
	suspect map[NodeID]bool
	// proxyTurn counts the batches delegated: the proxies take turns by
	// batch; delegatedSinceFlush says the current batch delegated a round.
	proxyTurn           int
	delegatedSinceFlush bool
	// ownDecided: a round the leader tallied itself was decided since its
	// last Commit (a delegating leader announces only those).
	ownDecided bool

	// ctrl is non-nil while the recovery waits on a slot whose highest
	// report is a damaged record (ctrl.go): nothing is proposed past it.
	ctrl *ctrlWaiting

	// quiet: every member acked a quiet beat at the chosen index and the
	// leader stopped beating (node_quiet.go); quietAcks are the members
	// that acked the quiet beats since the leader last had work.
	quiet     bool
	quietAcks map[NodeID]bool
}

func (following) phaseName() string    { return "follower" }
func (*campaigning) phaseName() string { return "candidate" }
func (*leading) phaseName() string     { return "leader" }

// ProposeStatus says what became of a proposal.
type ProposeStatus uint8

const (
	// Proposed: the command was given Slot; its verdict arrives as the
	// Applied entry for that slot — unless the slot is decided for another
	// command, which the caller must answer as lost (ambiguous).
	Proposed ProposeStatus = iota + 1
	// NotLeader: nothing was proposed; LeaderHint may name the leader.
	NotLeader
	// Busy: the leader's proposal queue is full; nothing was proposed.
	Busy
)

// ProposeResult is the answer of Propose and ProposeControl.
type ProposeResult struct {
	Status     ProposeStatus
	Slot       Slot
	LeaderHint NodeID
}
