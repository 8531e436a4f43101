package host

import (
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
)

// mailbox is one peer's outbound queue: bounded, lossy, keep-newest. Each
// journal has its own lane, and lanes are drained round-robin, so a busy
// journal can fill and evict only its own lane. A full lane evicts its
// oldest message of the new message's kind (a newer Heartbeat supersedes an
// older one), else its oldest message. Nothing here blocks: the protocol's
// resends repair what a full lane drops.
//
// The round-robin runs over the lanes that hold messages only (active), so
// a take costs what it takes, not the number of journals: with 10,000
// journals and a handful busy, walking every lane on every flush was most
// of a process's CPU.
type mailbox struct {
	lanes map[journal.ID]*lane
	// active are the lanes holding messages, in turn order: a lane joins
	// at the back when its first message arrives, and goes back to the
	// back after each message taken while it holds more. Invariant: a lane
	// is in active at most once (queued), and every lane with messages is
	// in it.
	active []*lane
	count  int
}

type lane struct {
	journal journal.ID
	msgs    []paxos.Message // oldest first
	queued  bool
}

func (mb *mailbox) lane(j journal.ID) *lane {
	if l := mb.lanes[j]; l != nil {
		return l
	}
	if mb.lanes == nil {
		mb.lanes = map[journal.ID]*lane{}
	}
	l := &lane{journal: j}
	mb.lanes[j] = l
	return l
}

// push queues m on j's lane; it reports whether a message was evicted.
func (mb *mailbox) push(j journal.ID, m paxos.Message, laneMax int) (evicted bool) {
	l := mb.lane(j)
	if len(l.msgs) >= laneMax {
		victim := 0
		for i, old := range l.msgs {
			if old.Type == m.Type {
				victim = i
				break
			}
		}
		l.msgs = slices.Delete(l.msgs, victim, victim+1)
		mb.count--
		evicted = true
	}
	l.msgs = append(l.msgs, m)
	mb.count++
	if !l.queued {
		l.queued = true
		mb.active = append(mb.active, l)
	}
	return evicted
}

// drop forgets every message of journal j (a quarantined journal sends
// nothing); its lane leaves the turn order at its next turn.
func (mb *mailbox) drop(j journal.ID) {
	if l := mb.lanes[j]; l != nil {
		mb.count -= len(l.msgs)
		clear(l.msgs)
		l.msgs = l.msgs[:0]
	}
}

// take removes up to n messages, one per lane per turn, round-robin over
// the lanes holding messages.
func (mb *mailbox) take(n int) []Envelope {
	if mb.count == 0 || n <= 0 {
		return nil
	}
	out := make([]Envelope, 0, min(n, mb.count))
	for len(out) < n && len(mb.active) > 0 {
		l := mb.active[0]
		mb.active[0] = nil
		mb.active = mb.active[1:]
		if len(l.msgs) == 0 {
			l.queued = false // dropped while queued
			continue
		}
		out = append(out, Envelope{Journal: l.journal, Msg: l.msgs[0]})
		l.msgs[0] = paxos.Message{}
		l.msgs = l.msgs[1:]
		mb.count--
		if len(l.msgs) > 0 {
			mb.active = append(mb.active, l)
		} else {
			l.queued = false
			l.msgs = nil // an idle lane holds no buffer
		}
	}
	if len(mb.active) == 0 {
		mb.active = nil
	}
	return out
}
