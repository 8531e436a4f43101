package runtime

import (
	"sync"
	"time"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/storage/pebblestore"
)

type persistReq struct {
	token   host.Token
	journal journal.ID
	ops     []paxos.WriteOp
	sync    bool
	// registry: a matchmaker batch (applied alone, synced, in order).
	registry []matchmaker.WriteOp
}

// groupBatchesMax bounds the journal batches of one group commit (the
// Pebble store refuses larger groups); the rest wait for the next turn.
const groupBatchesMax = 1024

// storer is the storage goroutine. Each turn it takes every pending batch
// of every journal and puts them into one Pebble commit, synced when any
// batch needs it (group commit: one fsync per turn, not per record), then
// reports every completion back to the loop in submission order.
type storer struct {
	r       *Runtime
	mu      sync.Mutex
	cond    *sync.Cond
	pending []persistReq
	closed  bool
	done    chan struct{}
}

func newStorer(r *Runtime) *storer {
	s := &storer{r: r, done: make(chan struct{})}
	s.cond = sync.NewCond(&s.mu)
	return s
}

func (s *storer) submit(p persistReq) {
	s.mu.Lock()
	s.pending = append(s.pending, p)
	s.mu.Unlock()
	s.cond.Signal()
}

func (s *storer) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cond.Signal()
	<-s.done
}

func (s *storer) run() {
	defer close(s.done)
	var batches []pebblestore.Batch
	for {
		s.mu.Lock()
		for len(s.pending) == 0 && !s.closed {
			s.cond.Wait()
		}
		if s.closed {
			s.mu.Unlock()
			return
		}
		// Take the head without copying the rest: with tens of thousands
		// of requests queued (10,000 journals electing at once), copying
		// the tail on every group commit was quadratic and most of the
		// process's CPU. The queue's array is dropped once drained, and
		// append reallocates it with only what is left.
		k := min(len(s.pending), groupBatchesMax)
		reqs := s.pending[:k:k]
		s.pending = s.pending[k:]
		if len(s.pending) == 0 {
			s.pending = nil
		}
		s.mu.Unlock()

		batches = batches[:0]
		sync := false
		var regErr error
		for _, p := range reqs {
			if p.registry != nil {
				// Matchmaker batches are rare (a round change, a GC): each
				// is its own synced commit, before the journals' group.
				if regErr == nil {
					regErr = s.r.cfg.DB.Registry().Apply(p.registry)
				}
				continue
			}
			batches = append(batches, pebblestore.Batch{Journal: p.journal, Ops: p.ops, Sync: p.sync})
			sync = sync || p.sync
		}
		start := time.Now()
		var err error
		if len(batches) > 0 {
			err = s.r.cfg.DB.Commit(batches...)
		}
		s.r.metrics.observeCommit(len(reqs), sync, time.Since(start))
		if err != nil {
			s.r.log.Error("storage commit failed", "batches", len(reqs), "err", err)
		}
		done := reqs
		_ = s.r.postStorage(func() {
			for _, p := range done {
				if p.registry != nil {
					s.r.h.OnPersisted(p.token, regErr)
					continue
				}
				s.r.h.OnPersisted(p.token, err)
			}
		})
	}
}

// postStorage hands completions to the loop; they must not be dropped, so
// it waits for room (the loop never waits on the storer).
func (r *Runtime) postStorage(fn func()) error {
	select {
	case r.inbox <- fn:
		return nil
	case <-r.stopped:
		return ErrStopped
	}
}
