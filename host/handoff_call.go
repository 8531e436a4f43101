package host

import (
	"fmt"
	"strings"

	"github.com/parosdb/paros/core/paxos"
)

// The operator's handoff (Admin.Handoff): the journal's leader hands its
// leadership to a named acceptor, or to the one it finds most caught up,
// without an election (core/paxos/node_handoff.go). The call is answered
// at once; the Relinquish leaves through the Ready path when OnCall drains
// the journal, so it reaches the successor only once the batch it rides in
// (every round the leader opened) is durable.

// handoffCall hands j's leadership on as r asks. It refuses not_leader
// (with the node this one last heard leading) when this node does not
// lead, and cannot_relinquish with the core's reason when the core
// refuses. A leadership that was itself handed on (one hop only) first
// re-elects itself, as a graceful shutdown does: the answer is reelecting,
// and the caller asks again once the node leads by its own Phase 1. A
// leadership no member answered yet (with no successor named) is settling:
// ask again.
func (h *Host) handoffCall(j *journalRT, r HandoffRequest) AdminReply {
	n := j.node
	if !n.IsLeader() {
		hint := n.LeaderHint()
		return AdminReply{Refusal: "not_leader", LeaderHint: hint,
			Detail: fmt.Sprintf("journal %s: node %d does not lead (leader hint %d)", j.spec.ID, h.id, hint)}
	}
	if n.Inherited() {
		if err := n.Reelect(); err == nil {
			return AdminReply{Refusal: "reelecting", LeaderHint: h.id,
				Detail: "the leadership was handed on once (one hop only): it re-elects itself first; ask again"}
		}
	}
	to := r.To
	if to == 0 {
		candidates := n.HandoffCandidates()
		if len(candidates) == 0 {
			return AdminReply{Refusal: "settling", LeaderHint: h.id, Detail: "no member answered this leadership yet; ask again"}
		}
		to = candidates[0]
	}
	if err := n.RelinquishTo(to); err != nil {
		// Every refusal of RelinquishTo wraps paxos.ErrCannotRelinquish.
		return AdminReply{Refusal: "cannot_relinquish", Successor: to, Detail: relinquishReason(err)}
	}
	return AdminReply{Successor: to}
}

// relinquishReason is the rule a CanRelinquish or RelinquishTo refusal
// names, without the sentinel's text.
func relinquishReason(err error) string {
	return strings.TrimPrefix(err.Error(), paxos.ErrCannotRelinquish.Error()+": ")
}
