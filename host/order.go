package host

import (
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
)

// Fenced writes in position order. A client with many fenced writes in
// flight sends them in position order, but the server runs each call on its
// own goroutine, so they may reach the leader's loop out of order; a write
// proposed ahead of its predecessor is refused at apply (its position is not
// yet the tail) and must be resent. The leader therefore tracks the position
// its next fenced write would take (projected from what it proposed) and
// holds a write that arrives ahead of it, briefly and within bounds, until
// the writes before it are proposed.
//
// This is an optimisation only: nothing is judged here. Every write is still
// judged at apply, in slot order, on every node; a held write whose
// predecessor never comes is proposed anyway when its hold expires and gets
// whatever verdict the fold gives it.

const (
	// heldWritesMax bounds the writes held per journal.
	heldWritesMax = 4096
	// holdAheadMax bounds how far ahead of the projected tail a write may
	// be held (in positions).
	holdAheadMax = 1 << 16
	// holdTicks is how long a write is held at most.
	holdTicks = 2
)

type heldWrite struct {
	call     Call
	cmd      journal.Command
	deadline uint64
}

// ordering is one journal's projection of its leader's tail.
type ordering struct {
	ballot  paxos.Ballot // the leadership the projection belongs to
	next    journal.Seq  // position the next in-order fenced write takes
	held    []heldWrite  // ascending by position
	inOrder uint64       // writes proposed at the projected tail
	holds   uint64       // writes held at least once
}

// proposeWrite proposes a single-writer fenced write, holding it when it
// arrives ahead of the projected tail.
func (h *Host) proposeWrite(j *journalRT, c Call, cmd journal.Command) {
	o := &j.order
	if j.cfg.Mode != journal.ModeSingle || !j.node.IsLeader() {
		h.propose(j, c, cmd)
		return
	}
	if b := j.node.LeaderBallot(); b != o.ballot || len(j.calls) == 0 {
		// A new leadership, or nothing of ours in flight: the projection
		// restarts from the fold (released writes are all applied).
		o.ballot = b
		o.next = j.node.State().NextSeq
	}
	seq := cmd.Entry.Seq
	if seq > o.next && seq-o.next <= holdAheadMax && len(o.held) < heldWritesMax {
		o.holds++
		i, _ := slices.BinarySearchFunc(o.held, seq, func(hw heldWrite, s journal.Seq) int {
			switch {
			case hw.cmd.Entry.Seq < s:
				return -1
			case hw.cmd.Entry.Seq > s:
				return 1
			}
			return 0
		})
		o.held = slices.Insert(o.held, i, heldWrite{call: c, cmd: cmd, deadline: h.now + holdTicks})
		return
	}
	h.proposeInOrder(j, c, cmd)
	// Release every held write that is now in order.
	for len(o.held) > 0 && o.held[0].cmd.Entry.Seq <= o.next && j.status == Live {
		hw := o.held[0]
		o.held = o.held[1:]
		h.proposeInOrder(j, hw.call, hw.cmd)
	}
}

func (h *Host) proposeInOrder(j *journalRT, c Call, cmd journal.Command) {
	o := &j.order
	if cmd.Entry.Seq == o.next {
		o.next += journal.Seq(len(cmd.Entry.Records))
		o.inOrder++
	}
	h.propose(j, c, cmd)
}

// expireHeld proposes the writes whose hold ran out (or all of them when
// the node no longer leads): the fold judges them.
func (h *Host) expireHeld(j *journalRT) {
	o := &j.order
	if len(o.held) == 0 {
		return
	}
	lead := j.node.IsLeader() && j.node.LeaderBallot() == o.ballot
	kept := o.held[:0]
	var due []heldWrite
	for _, hw := range o.held {
		if !lead || h.now >= hw.deadline {
			due = append(due, hw)
		} else {
			kept = append(kept, hw)
		}
	}
	o.held = kept
	for _, hw := range due {
		if j.status != Live {
			h.reply(hw.call.ID, unavailable(hw.call))
			continue
		}
		h.proposeInOrder(j, hw.call, hw.cmd)
	}
}

// dropHeld answers held writes when the journal's incarnation ends.
func (h *Host) dropHeld(j *journalRT) {
	for _, hw := range j.order.held {
		h.reply(hw.call.ID, unavailable(hw.call))
	}
	j.order = ordering{}
}
