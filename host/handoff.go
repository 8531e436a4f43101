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
// from lately (paxos.Node.HandoffCandidates), and reports how many it
// handed on. A journal whose candidates all refuse is left to the election
// that follows the process's exit.
func (h *Host) HandOffAll() int {
	handed := 0
	for _, j := range h.journals {
		if j.status != Live || j.node.CanRelinquish() != nil {
			continue
		}
		for _, to := range j.node.HandoffCandidates() {
			if err := j.node.RelinquishTo(to); err == nil {
				handed++
				h.counters.HandedOff++
				break
			} else if !errors.Is(err, paxos.ErrCannotRelinquish) {
				break
			}
		}
		h.drain(j)
	}
	h.flush()
	return handed
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
