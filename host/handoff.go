package host

import (
	"errors"

	"github.com/parosdb/paros/core/paxos"
)

// Graceful shutdown hands every journal this process leads to a live
// follower before the process exits (core/paxos/node_handoff.go), so a
// rolling restart costs no election: the successor continues Phase 2 at
// the same ballot, and the cell sees one heartbeat from a new sender.
//
// The order is the core's persist-before-send: RelinquishTo leaves the
// leadership at once, the Relinquish rides in the journal's next batch, and
// it leaves for the successor only once that batch (every round the old
// leader opened, its durable frontier) is on disk. Settled reports when
// nothing of the kind is left in the process: every batch released and
// every mailbox empty. The caller then gives the transport a moment and
// stops.

// HandOffAll hands the leadership of every journal this process leads and
// may hand on (paxos.Node.CanRelinquish) to the most caught-up member heard
// from lately (paxos.Node.HandoffCandidates). It reports how many it handed
// on, and how many journals it still waits for: a leadership inherited by
// a handoff is handed on only once (one hop), so it first runs its own
// Phase 1 (paxos.Node.Reelect) and is handed on by a later call once it
// won; a leadership whose open tail is too long waits for it to shrink.
// The caller calls again until nothing waits, or gives up and leaves the
// rest to the election that follows the process's exit.
func (h *Host) HandOffAll() (handed, waiting int) {
	for _, j := range h.journals {
		if j.status != Live {
			continue
		}
		n := j.node
		switch {
		case n.IsLeader() && n.CanRelinquish() == nil:
			done := false
			for _, to := range n.HandoffCandidates() {
				if err := n.RelinquishTo(to); err == nil {
					done = true
					break
				} else if !errors.Is(err, paxos.ErrCannotRelinquish) {
					break
				}
			}
			if !done {
				// No member answered this leadership yet (a re-election
				// just won hears its followers' first acks a round trip
				// later): wait for one.
				waiting++
				break
			}
			handed++
			h.counters.HandedOff++
			if j.reelecting {
				h.counters.HandedOnAgain++
			}
			j.reelecting = false
		case n.Inherited():
			if n.Reelect() == nil {
				j.reelecting = true
				waiting++
			}
		case n.IsLeader() || j.reelecting && n.Role() == "candidate":
			waiting++
		default:
			j.reelecting = false
		}
		h.drain(j)
	}
	h.flush()
	return handed, waiting
}

// Settled reports whether every live journal's batches were released (their
// messages handed to the mailboxes) and every mailbox was flushed to the
// transport.
func (h *Host) Settled() bool {
	for _, j := range h.journals {
		if j.status == Live && len(j.batches) > 0 {
			return false
		}
	}
	for _, mb := range h.mailboxes {
		if mb != nil && mb.count > 0 {
			return false
		}
	}
	return true
}
