package mesh

import (
	"sync"
	"time"
)

// Clock is the only way the mesh reads time. Mono is a monotonic reading
// from an arbitrary origin: liveness, silence and link expiry use it, and no
// two machines' readings are ever compared. Wall is the wall clock: it stamps
// an event's informational "at" and a hello's "ts" (checked within
// helloSkewMax), and decides nothing else.
type Clock interface {
	Mono() time.Duration
	Wall() time.Time
}

// SystemClock returns a Clock on the process's monotonic and wall clocks.
func SystemClock() Clock { return systemClock{start: time.Now()} }

type systemClock struct{ start time.Time }

func (c systemClock) Mono() time.Duration { return time.Since(c.start) }
func (c systemClock) Wall() time.Time     { return time.Now() }

// ManualClock is a Clock that moves only when told to. Tests share one among
// several runtimes and Advance it instead of sleeping. It is safe for
// concurrent use.
type ManualClock struct {
	mu   sync.Mutex
	mono time.Duration
	wall time.Time
}

// NewManualClock starts a manual clock at monotonic zero and the given wall time.
func NewManualClock(wall time.Time) *ManualClock { return &ManualClock{wall: wall} }

// Mono returns the current monotonic reading.
func (c *ManualClock) Mono() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mono
}

// Wall returns the current wall time.
func (c *ManualClock) Wall() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wall
}

// Advance moves both readings forward by d, which must not be negative.
func (c *ManualClock) Advance(d time.Duration) {
	if d < 0 {
		panic("paros/mesh: ManualClock.Advance with a negative duration")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mono += d
	c.wall = c.wall.Add(d)
}
