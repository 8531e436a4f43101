package blackbox

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/parosdb/paros/client"
)

// appender is a load: a Writer appending records prefix0, prefix1, … in
// a loop, recording every acknowledgement, until stopped.
type appender struct {
	mu   sync.Mutex
	acks []ack
	stop chan struct{}
	done chan error
}

// startAppender starts appending through wr; each append waits at most
// attempt for its verdict.
func startAppender(ctx context.Context, wr *client.Writer, prefix string, attempt time.Duration) *appender {
	a := &appender{stop: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		for i := 0; ; i++ {
			select {
			case <-a.stop:
				a.done <- nil
				return
			default:
			}
			r := []byte(fmt.Sprintf("%s%d", prefix, i))
			actx, cancel := context.WithTimeout(ctx, attempt)
			seq, err := wr.Append(actx, r)
			cancel()
			if err != nil {
				a.done <- fmt.Errorf("append %s: %w", r, err)
				return
			}
			a.mu.Lock()
			a.acks = append(a.acks, ack{seq: seq, rec: r, at: time.Now()})
			a.mu.Unlock()
		}
	}()
	return a
}

// acked is the number of acknowledged appends so far.
func (a *appender) acked() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.acks)
}

// wait waits until n appends were acknowledged; the test fails if the
// appender stopped or ctx ended first.
func (a *appender) wait(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	for a.acked() < n {
		select {
		case err := <-a.done:
			t.Fatalf("the writer stopped: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
		if ctx.Err() != nil {
			t.Fatalf("only %d appends acknowledged, want %d", a.acked(), n)
		}
	}
}

// pace lets the appender run for d; the test fails if it stopped.
func (a *appender) pace(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case err := <-a.done:
		t.Fatalf("the writer stopped: %v", err)
	case <-time.After(d):
	}
}

// finish stops the appender and returns every acknowledgement, in order.
func (a *appender) finish(t *testing.T) []ack {
	t.Helper()
	close(a.stop)
	if err := <-a.done; err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.acks
}
