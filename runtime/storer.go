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
	// remove: delete the journal's store (no token, no ops). It is queued
	// behind every batch of the journal, so no group commit ever holds a
	// batch for a store already deleted (which would fail the whole
	// group, and with it every other journal in it).
	remove bool
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
		regErr := s.applyRegistry(reqs)
		// A journal removed in this turn: its batches are moot (its store
		// goes), and committing them after another journal's would be
		// refused once the store is gone; they are dropped.
		var removed map[journal.ID]bool
		for _, p := range reqs {
			if p.remove {
				if removed == nil {
					removed = map[journal.ID]bool{}
				}
				removed[p.journal] = true
			}
		}
		for _, p := range reqs {
			if p.registry == nil && !p.remove && !removed[p.journal] {
				batches = append(batches, pebblestore.Batch{Journal: p.journal, Ops: p.ops, Sync: p.sync})
				sync = sync || p.sync
			}
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
		for id := range removed {
			if rerr := s.r.cfg.DB.DeleteJournal(id); rerr != nil {
				s.r.log.Error("deleting a removed journal's store failed", "journal", id, "err", rerr)
			}
		}
		done := reqs
		_ = s.r.postStorage(func() {
			for _, p := range done {
				if p.remove {
					continue
				}
				if p.registry != nil {
					s.r.h.OnPersisted(p.token, regErr)
					continue
				}
				s.r.h.OnPersisted(p.token, err)
			}
		})
	}
}

// applyRegistry applies the turn's matchmaker batches, in order, before
// the journals' group, and returns the first error (every later batch is
// then skipped: a failed write closes the matchmaker). Consecutive batches
// without a generation op are applied as one synced commit (group commit
// for the matchmaker too): each op builds on the registry heads the
// earlier ops of the same commit staged, exactly as if applied one by one,
// and 10,000 journals electing at once register in a few fsyncs instead of
// 10,000. A batch with a generation op (a handover step) is applied alone.
func (s *storer) applyRegistry(reqs []persistReq) error {
	var run []matchmaker.WriteOp
	flush := func() error {
		if len(run) == 0 {
			return nil
		}
		err := s.r.cfg.DB.Registry().Apply(run)
		run = run[:0]
		return err
	}
	for _, p := range reqs {
		if p.registry == nil {
			continue
		}
		if hasGeneration(p.registry) || len(run)+len(p.registry) > registryGroupOpsMax {
			if err := flush(); err != nil {
				return err
			}
		}
		if hasGeneration(p.registry) {
			if err := s.r.cfg.DB.Registry().Apply(p.registry); err != nil {
				return err
			}
			continue
		}
		run = append(run, p.registry...)
	}
	return flush()
}

// registryGroupOpsMax bounds the ops of one grouped registry commit (the
// store refuses more than 65,536 in one Apply).
const registryGroupOpsMax = 1 << 14

func hasGeneration(ops []matchmaker.WriteOp) bool {
	for _, op := range ops {
		if op.IsGeneration() {
			return true
		}
	}
	return false
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
