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
type mailbox struct {
	lanes  []*lane // sorted by journal id (deterministic round-robin)
	cursor int
	count  int
}

type lane struct {
	journal journal.ID
	msgs    []paxos.Message // oldest first
}

func (mb *mailbox) lane(j journal.ID) *lane {
	i, ok := slices.BinarySearchFunc(mb.lanes, j, func(l *lane, j journal.ID) int { return l.journal.Compare(j) })
	if ok {
		return mb.lanes[i]
	}
	l := &lane{journal: j}
	mb.lanes = slices.Insert(mb.lanes, i, l)
	if mb.cursor > i {
		mb.cursor++
	}
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
	return evicted
}

// drop forgets every message of journal j (a quarantined journal sends
// nothing).
func (mb *mailbox) drop(j journal.ID) {
	for _, l := range mb.lanes {
		if l.journal == j {
			mb.count -= len(l.msgs)
			clear(l.msgs)
			l.msgs = l.msgs[:0]
		}
	}
}

// take removes up to n messages, one lane at a time round-robin.
func (mb *mailbox) take(n int) []Envelope {
	if mb.count == 0 || n <= 0 {
		return nil
	}
	out := make([]Envelope, 0, min(n, mb.count))
	idle := 0
	for len(out) < n && mb.count > 0 && idle < len(mb.lanes) {
		if mb.cursor >= len(mb.lanes) {
			mb.cursor = 0
		}
		l := mb.lanes[mb.cursor]
		mb.cursor++
		if len(l.msgs) == 0 {
			idle++
			continue
		}
		idle = 0
		out = append(out, Envelope{Journal: l.journal, Msg: l.msgs[0]})
		l.msgs[0] = paxos.Message{}
		l.msgs = l.msgs[1:]
		mb.count--
	}
	return out
}
