package server

import (
	"fmt"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// inflight counts each principal's calls in flight and refuses one past
// the bound.
type inflight struct {
	max int
	mu  sync.Mutex
	// Invariant: 0 < calls[k] <= max for every key present; a principal
	// with no call in flight has no entry, so the map holds at most one
	// entry per call in flight.
	calls map[string]int
}

func newInflight(max int) *inflight {
	if max <= 0 {
		max = PrincipalCallsMaxDefault
	}
	return &inflight{max: max, calls: make(map[string]int)}
}

// acquire counts one call of p in, or refuses it with ResourceExhausted;
// the caller must call release exactly once when the call ends.
func (f *inflight) acquire(p principal) (release func(), err error) {
	key := p.key()
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.calls[key]
	if n >= f.max {
		return nil, status.Errorf(codes.ResourceExhausted, "paros/server: %s has %d calls in flight, at most %d", p, n, f.max)
	}
	f.calls[key] = n + 1
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		switch n := f.calls[key]; {
		case n <= 0 || n > f.max:
			panic(fmt.Sprintf("paros/server: %d calls in flight for %s at release (at most %d)", n, key, f.max))
		case n == 1:
			delete(f.calls, key)
		default:
			f.calls[key] = n - 1
		}
	}, nil
}
