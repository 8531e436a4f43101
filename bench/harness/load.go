package main

// The one load generator. Every system is driven through the same two
// interfaces (system, writer) by the same closed-loop driver: `inflight`
// goroutines, each with one write outstanding at a time, so exactly
// `inflight` writes are in flight; every write is a batch of `batch` records
// of recordBytes bytes. A write counts once the system acknowledged it
// durably (by its own definition, see durability()).

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

const recordBytes = 256

// system is one replicated log under test: three member processes on
// 127.0.0.1.
type system interface {
	key() string
	title() string
	durability() string
	start(ctx context.Context, dir string) error
	stop()
	members() []*child
	// newWriter opens a writer for W1, W2, W3 and W5 that inflight
	// goroutines may use at once. attempt bounds one try of one write.
	newWriter(ctx context.Context, inflight int, attempt time.Duration) (writer, error)
	// tailWriter opens a writer to the W4 tail (its own key, subject or
	// journal).
	tailWriter(ctx context.Context) (writer, error)
	// subscribe follows the W4 tail as reader number `reader` and calls fn
	// with each record in order until ctx ends; it calls ready once it
	// follows the tail.
	subscribe(ctx context.Context, reader int, ready func(), fn func(rec []byte)) error
	// leader is the index of the member that orders writes (W5 kills it).
	leader(ctx context.Context) (int, error)
	kill(i int)
	pprofAddr(i int) string
}

// writer writes one batch and returns once it is acknowledged; it retries
// internally (resending identically where the system allows it) until ctx
// ends. It returns when the successful attempt was sent, or the earliest
// time it can have been sent where the client resends internally without
// saying when (paros: the call's start). An error wrapping errStopped means
// the writer will not write again.
type writer interface {
	write(ctx context.Context, recs [][]byte) (time.Time, error)
	close()
}

// errStopped marks an error after which a writer refuses every later
// write (a paros Writer superseded by another claim, or out of attempts):
// the goroutine that got it stops instead of spinning on it.
var errStopped = errors.New("bench: writer stopped")

// makeRecords builds a batch: each record carries its send time in its
// first 8 bytes (W4 reads it back) and random filler.
func makeRecords(n int, filler []byte) [][]byte {
	buf := make([]byte, n*recordBytes)
	now := time.Now().UnixNano()
	out := make([][]byte, n)
	for i := range n {
		r := buf[i*recordBytes : (i+1)*recordBytes : (i+1)*recordBytes]
		copy(r[8:], filler)
		binary.LittleEndian.PutUint64(r, uint64(now))
		out[i] = r
	}
	return out
}

func randomFiller() []byte {
	b := make([]byte, recordBytes)
	_, _ = crand.Read(b)
	return b
}

// latencies is a set of samples in nanoseconds.
type latencies []int64

func (l latencies) quantile(q float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(l)))) - 1
	i = min(max(i, 0), len(l)-1)
	return time.Duration(l[i])
}

func (l latencies) mean() time.Duration {
	if len(l) == 0 {
		return 0
	}
	var s float64
	for _, v := range l {
		s += float64(v)
	}
	return time.Duration(s / float64(len(l)))
}

// loadResult is what a closed-loop phase measured.
type loadResult struct {
	Inflight   int     `json:"inflight"`
	Batch      int     `json:"records_per_write"`
	Writes     int64   `json:"writes"`
	Seconds    float64 `json:"seconds"`
	WritesPerS float64 `json:"writes_per_s"`
	RecsPerS   float64 `json:"records_per_s"`
	MBPerS     float64 `json:"mb_per_s"`
	P50ms      float64 `json:"p50_ms"`
	P99ms      float64 `json:"p99_ms"`
	P999ms     float64 `json:"p999_ms"`
	MeanMs     float64 `json:"mean_ms"`
	MaxMs      float64 `json:"max_ms"`
	Errors     int64   `json:"errors"`
	FirstError string  `json:"first_error,omitempty"`
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// runClosed drives w with `inflight` goroutines writing batches of `batch`
// records for warmup+measure, counting only writes that complete inside
// the measured window.
func runClosed(ctx context.Context, w writer, inflight, batch int, warmup, measure time.Duration, tick func()) loadResult {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	from, to := start.Add(warmup), start.Add(warmup+measure)
	filler := randomFiller()
	var wg sync.WaitGroup
	per := make([]latencies, inflight)
	var errs atomic.Int64
	var firstErr atomic.Value
	for g := range inflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine latencies
			for ctx.Err() == nil {
				recs := makeRecords(batch, filler)
				t0 := time.Now()
				if t0.After(to) {
					break
				}
				_, err := w.write(ctx, recs)
				t1 := time.Now()
				if err != nil {
					if ctx.Err() == nil {
						errs.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
						if errors.Is(err, errStopped) {
							return
						}
						sleepCtx(ctx, 10*time.Millisecond)
					}
					continue
				}
				if t1.After(from) && !t1.After(to) {
					mine = append(mine, int64(t1.Sub(t0)))
				}
			}
			per[g] = mine
		}()
	}
	// Tick the progress bar while waiting.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tk := time.NewTicker(time.Second)
	defer tk.Stop()
wait:
	for {
		select {
		case <-done:
			break wait
		case <-tk.C:
			if tick != nil {
				tick()
			}
			if time.Now().After(to.Add(2 * time.Second)) {
				cancel() // stragglers: stop waiting for them
			}
		}
	}
	var all latencies
	for _, p := range per {
		all = append(all, p...)
	}
	slices.Sort(all)
	secs := measure.Seconds()
	r := loadResult{Inflight: inflight, Batch: batch, Writes: int64(len(all)), Seconds: secs,
		WritesPerS: float64(len(all)) / secs, Errors: errs.Load()}
	r.RecsPerS = r.WritesPerS * float64(batch)
	r.MBPerS = r.RecsPerS * recordBytes / 1e6
	r.P50ms, r.P99ms, r.P999ms = ms(all.quantile(0.5)), ms(all.quantile(0.99)), ms(all.quantile(0.999))
	r.MeanMs = ms(all.mean())
	if len(all) > 0 {
		r.MaxMs = ms(time.Duration(all[len(all)-1]))
	}
	if v := firstErr.Load(); v != nil {
		r.FirstError = v.(string)
	}
	return r
}

// tailResult is W4: end-to-end delay from a write's send to each reader's
// receipt.
type tailResult struct {
	RatePerS  int     `json:"rate_per_s"`
	Readers   int     `json:"readers"`
	Written   int64   `json:"written"`
	Delivered int64   `json:"delivered"`
	P50ms     float64 `json:"p50_ms"`
	P99ms     float64 `json:"p99_ms"`
	MaxMs     float64 `json:"max_ms"`
	Error     string  `json:"error,omitempty"`
}

// runTail writes `rate` records per second (paced, up to 64 writes in
// flight) while `readers` readers follow the tail, for warmup+measure.
func runTail(ctx context.Context, s system, rate, readers int, warmup, measure time.Duration, tick func()) tailResult {
	res := tailResult{RatePerS: rate, Readers: readers}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := s.tailWriter(ctx)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer w.close()
	var mu sync.Mutex
	var delays latencies
	var delivered atomic.Int64
	var from, to atomic.Int64
	from.Store(math.MaxInt64)
	to.Store(math.MaxInt64)
	readyCh := make(chan struct{}, readers)
	errCh := make(chan error, readers)
	var rwg sync.WaitGroup
	for r := range readers {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			err := s.subscribe(ctx, r, func() { readyCh <- struct{}{} }, func(rec []byte) {
				if len(rec) < 8 {
					return
				}
				now := time.Now().UnixNano()
				sent := int64(binary.LittleEndian.Uint64(rec))
				if sent >= from.Load() && sent <= to.Load() {
					delivered.Add(1)
					mu.Lock()
					delays = append(delays, now-sent)
					mu.Unlock()
				}
			})
			if err != nil && ctx.Err() == nil {
				errCh <- err
			}
		}()
	}
	for range readers {
		select {
		case <-readyCh:
		case err := <-errCh:
			res.Error = err.Error()
			return res
		case <-time.After(30 * time.Second):
			res.Error = "readers did not start"
			return res
		}
	}
	filler := randomFiller()
	start := time.Now()
	from.Store(start.Add(warmup).UnixNano())
	to.Store(start.Add(warmup + measure).UnixNano())
	sem := make(chan struct{}, 64)
	var wwg sync.WaitGroup
	interval := time.Second / time.Duration(rate)
	next := start
	var written atomic.Int64
	lastTick := start
	for time.Now().Before(start.Add(warmup + measure)) {
		sleepCtx(ctx, time.Until(next))
		next = next.Add(interval)
		sem <- struct{}{}
		wwg.Add(1)
		go func() {
			defer wwg.Done()
			defer func() { <-sem }()
			recs := makeRecords(1, filler)
			if _, err := w.write(ctx, recs); err == nil {
				written.Add(1)
			}
		}()
		if tick != nil && time.Since(lastTick) > time.Second {
			lastTick = time.Now()
			tick()
		}
	}
	// Let the last records reach the readers.
	sleepCtx(ctx, time.Second)
	cancel()
	wwg.Wait()
	rwg.Wait()
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(delays)
	res.Written = written.Load()
	res.Delivered = delivered.Load()
	res.P50ms, res.P99ms = ms(delays.quantile(0.5)), ms(delays.quantile(0.99))
	if len(delays) > 0 {
		res.MaxMs = ms(time.Duration(delays[len(delays)-1]))
	}
	return res
}

// failoverResult is W5.
type failoverResult struct {
	Inflight int    `json:"inflight"`
	Killed   string `json:"killed"`
	// RecoveryMs: from the kill to the first acknowledgement of a write
	// whose successful attempt was sent after the kill, by the time
	// writer.write returns. For paros that is a write whose Append was
	// called after the kill: conservative by about one write's latency.
	RecoveryMs float64 `json:"recovery_ms"`
	// GapMs: the longest stretch around the kill with no acknowledgement.
	GapMs       float64 `json:"max_ack_gap_ms"`
	AckedBefore int64   `json:"acked_before_kill"`
	AckedAfter  int64   `json:"acked_after_kill"`
	Error       string  `json:"error,omitempty"`
}

// runFailover runs a W2 load with `inflight` writes in flight, kills the
// leader with SIGKILL after `before`, and keeps the load on until `after`
// past the kill.
func runFailover(ctx context.Context, s system, inflight int, before, after time.Duration, tick func()) failoverResult {
	res := failoverResult{Inflight: inflight}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := s.newWriter(ctx, inflight, time.Second)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer w.close()
	type ack struct{ sent, at int64 }
	var mu sync.Mutex
	var acks []ack
	var killAt atomic.Int64
	killAt.Store(math.MaxInt64)
	filler := randomFiller()
	var wg sync.WaitGroup
	for range inflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				sent, err := w.write(ctx, makeRecords(1, filler))
				if err != nil {
					if errors.Is(err, errStopped) {
						return
					}
					sleepCtx(ctx, 5*time.Millisecond)
					continue
				}
				now := time.Now().UnixNano()
				mu.Lock()
				acks = append(acks, ack{sent.UnixNano(), now})
				mu.Unlock()
			}
		}()
	}
	for range int(before / time.Second) {
		sleepCtx(ctx, time.Second)
		if tick != nil {
			tick()
		}
	}
	leader, err := s.leader(ctx)
	if err != nil {
		res.Error = err.Error()
		cancel()
		wg.Wait()
		return res
	}
	res.Killed = s.members()[leader].name
	k := time.Now()
	s.kill(leader)
	killAt.Store(k.UnixNano())
	for range int(after / time.Second) {
		sleepCtx(ctx, time.Second)
		if tick != nil {
			tick()
		}
	}
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	kn := k.UnixNano()
	rec := int64(math.MaxInt64)
	var times []int64
	for _, a := range acks {
		times = append(times, a.at)
		if a.at < kn {
			res.AckedBefore++
			continue
		}
		res.AckedAfter++
		if a.sent >= kn && a.at < rec {
			rec = a.at
		}
	}
	if rec == math.MaxInt64 {
		res.Error = "writes were not acknowledged again within the window"
		res.RecoveryMs = -1
	} else {
		res.RecoveryMs = ms(time.Duration(rec - kn))
	}
	slices.Sort(times)
	prev := kn
	for _, t := range times {
		if t < kn {
			prev = t
			continue
		}
		res.GapMs = max(res.GapMs, ms(time.Duration(t-prev)))
		prev = t
		if t > kn+int64(10*time.Second) {
			break
		}
	}
	return res
}
