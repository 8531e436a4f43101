package runtime

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/parosdb/paros/host"
)

// The fair queue holds client work (Call and Submit) on its way to the
// loop, one FIFO per submitter (a principal, named by WithSubmitter), and
// the loop takes it round robin counted in calls: each visit takes up to
// submitQuantumCalls of a submitter's calls, in its order (a submission
// larger than what the visit may take is cut, its rest first in line for
// the next), and a turn ends at turnCallsMax calls, the next one resuming
// where it stopped. The calls of one turn reach the host in one OnCalls,
// so a pipelined stream's batch still shares one persist and one Accept
// per peer. One submitter's backlog delays another's calls by at most one
// quantum per other active submitter, never by its length; and since
// client work never enters the inbox, it can never crowd out peers'
// Delivers or storage completions there.
//
// The host hands every proposal to its journal's consensus core, whose
// queue is first come first served: a submitter with thousands of writes
// in the core would still put all of them ahead of another's next write
// (measured: 1,024 of a flooder's writes in flight held an honest writer's
// p50 at 62 ms, about 1,024 slots at the 19,000 slots/s the cell chose).
// And every slot ahead of a write costs its round: each is persisted,
// replicated and folded (in slot order) before the write is answered. So
// while another submitter is active (it has calls queued or in the host,
// or had within activeLinger), a submitter has at most
// submitterSlotCallsMax calls that take a slot (writes, truncates, leader
// changes) in the host at once; the rest wait in its queue until some are
// answered, and another submitter's write goes into a core holding a small
// batch of it. A submitter alone may have a whole stream batch there
// (submitterSlotCallsAloneMax): its batches reach the host whole, one
// persist and one Accept per peer each.

// Bounds of the fair queue: each is a limit a hostile submitter would
// otherwise choose for us.
const (
	// submitQuantumCalls is what one visit of the round robin takes of a
	// submitter at most: one WriteStream batch (the gRPC edge hands the
	// loop at most 256 writes of a stream at once), so 256 unary calls of
	// one submitter go in one visit, like another's stream batch.
	submitQuantumCalls = 256
	// turnCallsMax bounds the client calls the loop takes in one turn:
	// four quanta. The turn's calls share one OnCalls, so one Ready and one
	// persist per journal; a turn of 1,024 small writes costs the loop on
	// the order of a millisecond, the most it keeps peers' Delivers and
	// the tick waiting for client work.
	turnCallsMax = 4 * submitQuantumCalls
	// submitterQueuedCallsMax bounds the calls one submitter may have
	// queued and not yet taken by the loop; past it its Submit and Call
	// wait (back-pressure on that submitter alone, never on another).
	// 4,096 is one WriteStream's window; the gRPC edge's per-principal
	// write budget keeps a principal well below it.
	submitterQueuedCallsMax = 4096
	// submitterSlotCallsMax bounds one submitter's slot-taking calls taken
	// by the loop and not yet answered while another submitter is active.
	// Its cost is paid by the others: each is persisted, replicated and
	// folded ahead of another's next write (a write at an old position
	// costs the fold a read from the store). Measured on the 2-core test
	// machine (test/blackbox TestOneTokenCannotStarveAnother, a flooder
	// against a writer appending one record at a time), the writer's p50
	// and p99 were 20-33 and 70-170 ms at 256, 7-9 and 35-52 ms at 64,
	// 5-6 and 24-32 ms at 32. 32 writes of the client library's default
	// Writer are 8 journals' worth (4 out each), and each write coalesces
	// the appends waiting (up to 1,024 records), so a busy principal that
	// has fewer writes out sends larger ones.
	submitterSlotCallsMax = 32
	// submitterSlotCallsAloneMax is that bound for a submitter alone: one
	// stream batch, so a lone pipelined stream's batch reaches the host
	// whole (one persist, one Accept per peer), and 256 slots per round
	// trip are more than the cell chooses (19,000 slots/s measured, about
	// 60 per 3 ms round). It is also what a submitter arriving while
	// another was alone finds ahead of its first write, once.
	submitterSlotCallsAloneMax = submitQuantumCalls
	// activeLinger is how long a submitter counts as active after its last
	// call was queued, taken or answered: a writer appending one record at
	// a time is between two calls for a round trip of its own, and the
	// flooder must not get the whole pipeline back in that gap. 100 ms is
	// two ticks.
	activeLinger = 100 * time.Millisecond
)

type submitterKey struct{}

// WithSubmitter names who the calls made with ctx (Call, Submit) come
// from: the loop takes each submitter's calls in turn, so one submitter's
// backlog never delays another's by more than a quantum. Calls with no
// submitter share one queue.
func WithSubmitter(ctx context.Context, who string) context.Context {
	return context.WithValue(ctx, submitterKey{}, who)
}

func submitterOf(ctx context.Context) string {
	who, _ := ctx.Value(submitterKey{}).(string)
	return who
}

// submission is one Call or Submit on its way to the loop, or the part of
// one not taken yet: its calls (ids assigned), answered through reply on
// the loop, calls[i] as reply(off+i).
type submission struct {
	ctx   context.Context
	calls []host.Call
	reply func(i int, resp host.Response)
	key   string // its submitter
	off   int    // the index of calls[0] in the submission it was cut from
}

// takesSlot reports whether a call of kind k is proposed for a consensus
// slot (the calls that can queue in the core's proposal queue).
func takesSlot(k host.CallKind) bool {
	switch k {
	case host.CallWrite, host.CallTruncate, host.CallSetLeader:
		return true
	}
	return false
}

func newSubmission(ctx context.Context, calls []host.Call, reply func(int, host.Response)) *submission {
	return &submission{ctx: ctx, calls: calls, reply: reply, key: submitterOf(ctx)}
}

// submitter is one submitter's queue.
type submitter struct {
	key   string
	subs  []*submission // FIFO
	calls int           // calls in subs
	// room is closed (and cleared) when calls drop, waking the Submits
	// waiting for room; nil when none waits.
	room chan struct{}
}

// fairQueue is the per-submitter queue in front of the loop.
type fairQueue struct {
	mu sync.Mutex
	// Invariant: a submitter is in byKey and in ring exactly when it has a
	// submission queued; ring is the visit order.
	byKey map[string]*submitter
	ring  []*submitter
	// cur is the index in ring of the submitter visited now; left what
	// its visit may still take (0: the visit has not begun), so a turn
	// that ended mid-visit resumes it.
	cur, left int
	// inHost counts each submitter's slot-taking calls taken and not yet
	// answered (an entry only while positive).
	inHost map[string]int
	// seen is when each submitter's last call was queued, taken or
	// answered; active the submitters active at the last turn (or queued
	// since), which hold one another to submitterSlotCallsMax.
	seen   map[string]time.Time
	active map[string]struct{}
	now    func() time.Time
	// ready holds a token while a call can be taken (cap 1): the loop
	// selects on it.
	ready chan struct{}
}

func newFairQueue() *fairQueue {
	return &fairQueue{byKey: map[string]*submitter{}, inHost: map[string]int{}, seen: map[string]time.Time{},
		active: map[string]struct{}{}, now: time.Now, ready: make(chan struct{}, 1)}
}

// refreshActiveLocked recomputes the active submitters (calls queued or
// in the host, or seen within activeLinger) and forgets the others' last
// sighting; take calls it once a turn, and push adds a newcomer.
func (q *fairQueue) refreshActiveLocked(now time.Time) {
	clear(q.active)
	for k, t := range q.seen {
		if q.byKey[k] != nil || q.inHost[k] > 0 || now.Sub(t) < activeLinger {
			q.active[k] = struct{}{}
		} else {
			delete(q.seen, k)
		}
	}
}

// othersActiveLocked reports whether a submitter other than key is active.
func (q *fairQueue) othersActiveLocked(key string) bool {
	_, self := q.active[key]
	if self {
		return len(q.active) > 1
	}
	return len(q.active) > 0
}

// slotRoomLocked is how many more slot-taking calls submitter key may have
// taken into the host now.
func (q *fairQueue) slotRoomLocked(key string) int {
	bound := submitterSlotCallsAloneMax
	if q.othersActiveLocked(key) {
		bound = submitterSlotCallsMax
	}
	return bound - q.inHost[key]
}

// push queues s, waiting while its submitter has submitterQueuedCallsMax
// calls queued (a submission alone in its queue always goes). It fails
// only when ctx ends or stopped closes first.
func (q *fairQueue) push(ctx context.Context, stopped <-chan struct{}, s *submission) error {
	for {
		select {
		case <-stopped:
			return ErrStopped
		default:
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		q.mu.Lock()
		sub := q.byKey[s.key]
		if sub == nil {
			sub = &submitter{key: s.key}
			q.byKey[s.key] = sub
			q.ring = append(q.ring, sub)
		}
		if sub.calls == 0 || sub.calls+len(s.calls) <= submitterQueuedCallsMax {
			sub.subs = append(sub.subs, s)
			sub.calls += len(s.calls)
			q.seen[s.key] = q.now()
			q.active[s.key] = struct{}{}
			ready := q.canTakeLocked(sub)
			q.mu.Unlock()
			if ready {
				q.signal()
			}
			return nil
		}
		if sub.room == nil {
			sub.room = make(chan struct{})
		}
		room := sub.room
		q.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return ctx.Err()
		case <-stopped:
			return ErrStopped
		}
	}
}

// signal leaves the ready token (once).
func (q *fairQueue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// prefixLocked is how many of s's first calls, at most max, its submitter
// may hand the host now, with room for room more slot-taking calls.
func prefixLocked(s *submission, max, room int) int {
	k := 0
	for ; k < len(s.calls) && k < max; k++ {
		if takesSlot(s.calls[k].Kind) {
			if room <= 0 {
				break
			}
			room--
		}
	}
	return k
}

func (q *fairQueue) canTakeLocked(sub *submitter) bool {
	return len(sub.subs) > 0 && prefixLocked(sub.subs[0], 1, q.slotRoomLocked(sub.key)) > 0
}

// answered counts one slot-taking call of submitter key answered (the loop
// calls it as the host replies).
func (q *fairQueue) answered(key string) {
	q.mu.Lock()
	n := q.inHost[key] - 1
	if n < 0 {
		q.mu.Unlock()
		panic("paros/runtime: a submitter's call answered twice")
	}
	if n == 0 {
		delete(q.inHost, key)
	} else {
		q.inHost[key] = n
	}
	q.seen[key] = q.now()
	wake := false
	if sub := q.byKey[key]; sub != nil && q.canTakeLocked(sub) {
		wake = true
	}
	q.mu.Unlock()
	if wake {
		q.signal()
	}
}

// take returns the next turn, round robin: each visit takes up to
// submitQuantumCalls of a submitter's calls in its order, as far as its
// slot-taking calls in the host stay within its bound (slotRoomLocked),
// until the turn holds turnCallsMax calls or no submitter can give more.
// It leaves the ready token when a call can still be taken.
func (q *fairQueue) take() []*submission {
	q.mu.Lock()
	now := q.now()
	q.refreshActiveLocked(now)
	var out []*submission
	n := 0
	idle := 0 // visits in a row that took nothing
	for len(q.ring) > 0 && n < turnCallsMax && idle < len(q.ring) {
		if q.cur >= len(q.ring) {
			q.cur = 0
		}
		sub := q.ring[q.cur]
		if q.left == 0 {
			q.left = submitQuantumCalls
		}
		took := 0
		room := q.slotRoomLocked(sub.key)
		for len(sub.subs) > 0 && n < turnCallsMax && q.left > 0 {
			s := sub.subs[0]
			k := prefixLocked(s, min(q.left, turnCallsMax-n), room)
			if k == 0 {
				break
			}
			part := s
			if k < len(s.calls) {
				part = &submission{ctx: s.ctx, calls: s.calls[:k:k], reply: s.reply, key: s.key, off: s.off}
				s.calls, s.off = s.calls[k:], s.off+k
			} else {
				sub.subs[0] = nil
				sub.subs = sub.subs[1:]
			}
			for _, c := range part.calls {
				if takesSlot(c.Kind) {
					q.inHost[sub.key]++
					room--
				}
			}
			sub.calls -= k
			q.left -= k
			n += k
			took += k
			out = append(out, part)
		}
		if took > 0 {
			idle = 0
			q.seen[sub.key] = now
			if sub.room != nil {
				close(sub.room)
				sub.room = nil
			}
		} else {
			idle++
		}
		switch {
		case len(sub.subs) == 0:
			// Done: out of the ring (cur now names the next one).
			q.ring = slices.Delete(q.ring, q.cur, q.cur+1)
			delete(q.byKey, sub.key)
			q.left = 0
		case n >= turnCallsMax && q.left > 0:
			// The turn is full mid-visit: the next turn resumes here.
		default:
			q.cur++
			q.left = 0
		}
	}
	more := false
	for _, sub := range q.ring {
		if q.canTakeLocked(sub) {
			more = true
			break
		}
	}
	q.mu.Unlock()
	if more {
		q.signal()
	}
	return out
}
