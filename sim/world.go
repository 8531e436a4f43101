package sim

import (
	"container/heap"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
)

// event is one scheduled action. Events fire in (at, seq) order, so ties
// break by scheduling order and nothing depends on map iteration.
type event struct {
	at   int64 // simulated time, microseconds
	seq  uint64
	what label
	fn   func()
}

// label names an event cheaply: a constant format and up to three numbers.
// It is formatted only when a trace is kept, and hashed without fmt.
type label struct {
	format  string
	a, b, c uint64
}

func lbl(format string, args ...uint64) label {
	l := label{format: format}
	switch len(args) {
	case 3:
		l.c = args[2]
		fallthrough
	case 2:
		l.b = args[1]
		fallthrough
	case 1:
		l.a = args[0]
	}
	return l
}

func (l label) String() string {
	n := strings.Count(l.format, "%")
	args := []any{l.a, l.b, l.c}[:n]
	return fmt.Sprintf(l.format, args...)
}

type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return e
}

// scheduler is the world's clock and event queue.
type scheduler struct {
	now    int64
	seq    uint64
	q      eventQueue
	events uint64
	trace  bool
	lines  []string
	hash   uint64 // running FNV-1a of every fired event (the determinism check)
}

const (
	us = int64(1)
	ms = 1000 * us
)

func (s *scheduler) at(t int64, what label, fn func()) {
	if t < s.now {
		t = s.now
	}
	s.seq++
	heap.Push(&s.q, &event{at: t, seq: s.seq, what: what, fn: fn})
}

func (s *scheduler) after(d int64, what label, fn func()) { s.at(s.now+d, what, fn) }

// runUntil fires events until the queue is empty or time passes end.
func (s *scheduler) runUntil(end int64) {
	for s.q.Len() > 0 && s.q[0].at <= end {
		e := heap.Pop(&s.q).(*event)
		s.now = e.at
		s.events++
		s.mixLabel(e.at, e.what)
		if s.trace {
			s.lines = append(s.lines, fmt.Sprintf("%9.3fms %s", float64(e.at)/float64(ms), e.what))
		}
		e.fn()
	}
	if s.now < end {
		s.now = end
	}
}

// mixLabel folds an event into the trace hash: FNV-1a over the time, the
// label's format and its numbers.
func (s *scheduler) mixLabel(t int64, l label) {
	h := s.hash ^ 0xcbf29ce484222325
	for _, v := range [4]uint64{uint64(t), l.a, l.b, l.c} {
		for i := 0; i < 8; i++ {
			h ^= v & 0xff
			h *= 1099511628211
			v >>= 8
		}
	}
	for i := 0; i < len(l.format); i++ {
		h ^= uint64(l.format[i])
		h *= 1099511628211
	}
	s.hash = h
}

func (s *scheduler) mix(t int64, what string) {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d|%d|%s", s.hash, t, what)
	s.hash = h.Sum64()
}

func (s *scheduler) note(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	s.mix(s.now, line)
	if s.trace {
		s.lines = append(s.lines, fmt.Sprintf("%9.3fms   · %s", float64(s.now)/float64(ms), line))
	}
}

// Trace is the timeline of a traced run.
func (w *World) Trace() string { return strings.Join(w.sched.lines, "\n") }

// rng wraps the world's one PRNG with the draws the simulator needs.
type rng struct{ r *rand.Rand }

func newRNG(seed uint64) rng { return rng{rand.New(rand.NewPCG(seed, seed*0x9e3779b97f4a7c15+1))} }

func (g rng) intn(n int) int {
	if n <= 0 {
		return 0
	}
	return g.r.IntN(n)
}

// pct reports true with probability p percent.
func (g rng) pct(p int) bool { return g.r.IntN(100) < p }

// between draws an int64 in [lo, hi].
func (g rng) between(lo, hi int64) int64 {
	if hi <= lo {
		return lo
	}
	return lo + g.r.Int64N(hi-lo+1)
}

func (g rng) u64() uint64 { return g.r.Uint64() }
