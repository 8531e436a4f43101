package main

// The read-heavy rows (paros only: "paros" and "paros (2 replicas)"). On
// journal readHeavyJournal, after filling it to at least readHeavyPrefill
// records:
//
//  1. With readers: a W2-style closed-loop writer (one client.Writer, 64
//     single-record appends in flight) while readHeavyReaders scanners,
//     each a client.Reader on its own Client, read the journal from
//     position 1 to the tail it had when the scan began, then start over
//     from 1, until the phase ends. Reads go where the library sends them:
//     replica-first when the Client dialled replicas (readerAddrs).
//  2. Alone: the same writer with no readers, for the cost of the readers.
//
// Both phases have the closed-loop timing (warm-up, then the measured
// window). Records read count when their page arrived inside the measured
// window. Over phase 1 the harness also takes, from every process's
// /metrics, the Read calls each answered (where the reads went), the CPU
// of the members, of the replicas and of the load generator, and CPU
// profiles of the journal's leader and of one process that serves reads
// (a follower, or a replica).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
)

// Read-heavy parameters.
const (
	readHeavyJournal  = 2     // the journal index in the plan (W1–W3, W5: 0; W4: 1)
	readHeavyReaders  = 16    // scanners
	readHeavyInflight = 64    // the writer's appends in flight
	readHeavyPrefill  = 20000 // records the journal holds before the phases, at least
	// readHeavyFillBatch and readHeavyFillInflight shape the pre-fill:
	// appends of 64 records, 16 in flight.
	readHeavyFillBatch    = 64
	readHeavyFillInflight = 16
)

// readHeavyResult is what the read-heavy rows measured.
type readHeavyResult struct {
	Journal  string `json:"journal"`
	Readers  int    `json:"readers"`
	Inflight int    `json:"writes_in_flight"`
	// RecordsBefore is the journal's length when the phase with readers
	// opened (after the pre-fill).
	RecordsBefore int64 `json:"records_before"`
	// WithReaders and Alone are the writer's figures with the scanners
	// running and with none.
	WithReaders loadResult `json:"writer_with_readers"`
	Alone       loadResult `json:"writer_alone"`
	// RecordsRead is what every scanner read in the measured window;
	// ReadsPerS the same per second; Pages the Reader.Next calls that
	// returned records in the window.
	RecordsRead int64   `json:"records_read"`
	ReadsPerS   float64 `json:"records_read_per_s"`
	Pages       int64   `json:"pages_read"`
	// RecordsReadPhase is what the scanners read over the whole phase,
	// warm-up included.
	RecordsReadPhase int64 `json:"records_read_phase"`
	// Scans are the scans (1 to the tail at their start) that ended in
	// the measured window.
	Scans          int64  `json:"scans_completed"`
	ReadErrors     int64  `json:"read_errors"`
	FirstReadError string `json:"first_read_error,omitempty"`
	// BadRecords are records that came back with a length other than
	// recordBytes (none expected).
	BadRecords int64 `json:"bad_records"`
	// CPU cores over the whole phase with readers (warm-up included), and
	// over the phase alone: the members, the replicas, the load generator.
	MembersCores       float64 `json:"members_cpu_cores"`
	ReplicasCores      float64 `json:"replicas_cpu_cores"`
	LoadGenCores       float64 `json:"loadgen_cpu_cores"`
	MembersCoresAlone  float64 `json:"members_cpu_cores_alone"`
	ReplicasCoresAlone float64 `json:"replicas_cpu_cores_alone"`
	LoadGenCoresAlone  float64 `json:"loadgen_cpu_cores_alone"`
	// Procs names every process; ReadsBy is each one's read counters
	// over the phase with readers (warm-up included), from /metrics.
	Procs   []string       `json:"procs"`
	ReadsBy []readCounters `json:"reads_by_proc"`
	Error   string         `json:"error,omitempty"`
}

// readHeavySeconds is the planned length of the read-heavy rows.
func readHeavySeconds(t timing) int { return 2*int((t.warmup+t.measure).Seconds()) + 3 }

// runReadHeavy runs the read-heavy rows on s and keeps their profiles in
// rep and their Writer counters in res.
func runReadHeavy(ctx context.Context, s *parosSys, t timing, pb *progress, profDir string, rep *report, res *sysResult) *readHeavyResult {
	out := &readHeavyResult{Journal: s.jids[readHeavyJournal].String(), Readers: readHeavyReaders, Inflight: readHeavyInflight}
	tick := func() { pb.add(1) }
	pb.phase(s.title() + ": read-heavy: pre-fill")
	n, err := s.prefill(ctx, readHeavyPrefill)
	res.addWriterStats("rh-fill", s.takeStats())
	pb.add(3)
	if err != nil {
		out.Error = "pre-fill: " + err.Error()
		return out
	}
	out.RecordsBefore = n

	pb.phase(fmt.Sprintf("%s: read-heavy: writer + %d readers", s.title(), readHeavyReaders))
	w, err := s.claim(ctx, []int{readHeavyJournal}, readHeavyInflight)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	rctx, stopReaders := context.WithCancel(ctx)
	var st scanStats
	st.from.Store(1 << 62)
	st.to.Store(1 << 62)
	var wg sync.WaitGroup
	ready := make(chan error, readHeavyReaders)
	for r := range readHeavyReaders {
		wg.Go(func() { s.scan(rctx, r, &st, ready) })
	}
	for range readHeavyReaders {
		if err := <-ready; err != nil {
			out.Error = "reader: " + err.Error()
			stopReaders()
			wg.Wait()
			w.close()
			return out
		}
	}
	reads0, cpu0, rcpu0, self0 := s.scrapeReads(), membersCPU(s.procs), membersCPU(s.rprocs), procCPU(os.Getpid())
	var profDone chan []memberProfile
	if t.measure >= 2*time.Second {
		profDone = s.profileReads(ctx, profDir, t)
	}
	start := time.Now()
	st.from.Store(start.Add(t.warmup).UnixNano())
	st.to.Store(start.Add(t.warmup + t.measure).UnixNano())
	out.WithReaders = runClosed(ctx, w, readHeavyInflight, 1, t.warmup, t.measure, tick)
	secs := time.Since(start).Seconds()
	out.MembersCores = (membersCPU(s.procs) - cpu0).Seconds() / secs
	out.ReplicasCores = (membersCPU(s.rprocs) - rcpu0).Seconds() / secs
	out.LoadGenCores = (procCPU(os.Getpid()) - self0).Seconds() / secs
	reads1, all := s.scrapeReads(), st.all.Load()
	stopReaders()
	wg.Wait()
	w.close()
	res.addWriterStats("rh-readers", s.takeStats())
	out.Procs = s.procNames()
	for i := range reads1 {
		out.ReadsBy = append(out.ReadsBy, reads1[i].minus(reads0[i]))
	}
	out.RecordsRead, out.Pages, out.Scans, out.RecordsReadPhase = st.records.Load(), st.pages.Load(), st.scans.Load(), all
	out.ReadsPerS = float64(out.RecordsRead) / t.measure.Seconds()
	out.ReadErrors, out.BadRecords = st.errors.Load(), st.bad.Load()
	if v := st.firstErr.Load(); v != nil {
		out.FirstReadError = v.(string)
	}
	if profDone != nil {
		names := s.procNames()
		for _, mp := range <-profDone {
			if sum := summarizeProc(s, mp, names[mp.i]); sum != "" {
				rep.Profiles = append(rep.Profiles, profileSummary{System: s.key(), Phase: "read-heavy", Top: sum})
			}
		}
	}

	pb.phase(s.title() + ": read-heavy: the writer alone")
	w, err = s.claim(ctx, []int{readHeavyJournal}, readHeavyInflight)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	cpu0, rcpu0, self0, start = membersCPU(s.procs), membersCPU(s.rprocs), procCPU(os.Getpid()), time.Now()
	out.Alone = runClosed(ctx, w, readHeavyInflight, 1, t.warmup, t.measure, tick)
	secs = time.Since(start).Seconds()
	out.MembersCoresAlone = (membersCPU(s.procs) - cpu0).Seconds() / secs
	out.ReplicasCoresAlone = (membersCPU(s.rprocs) - rcpu0).Seconds() / secs
	out.LoadGenCoresAlone = (procCPU(os.Getpid()) - self0).Seconds() / secs
	w.close()
	res.addWriterStats("rh-alone", s.takeStats())
	return out
}

// prefill appends to the read-heavy journal until it holds at least n
// records, and returns how many it holds.
func (s *parosSys) prefill(ctx context.Context, n int64) (int64, error) {
	j := s.cl.Journal(s.jids[readHeavyJournal])
	next, err := tailOf(ctx, j)
	if err != nil {
		return 0, err
	}
	have := int64(next) - 1
	if have >= n {
		return have, nil
	}
	w, err := s.claim(ctx, []int{readHeavyJournal}, readHeavyFillInflight)
	if err != nil {
		return 0, err
	}
	defer w.close()
	filler := randomFiller()
	var need atomic.Int64
	need.Store(n - have)
	var wg sync.WaitGroup
	errs := make(chan error, readHeavyFillInflight)
	for range readHeavyFillInflight {
		wg.Go(func() {
			for need.Add(-readHeavyFillBatch) > -readHeavyFillBatch {
				if _, err := w.write(ctx, makeRecords(readHeavyFillBatch, filler)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	if next, err = tailOf(ctx, j); err != nil {
		return 0, err
	}
	return int64(next) - 1, nil
}

// tailOf is the journal's next position (its length + 1), by a read far
// past the tail: served empty, with the journal's view.
func tailOf(ctx context.Context, j *client.Journal) (journal.Seq, error) {
	for {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		page, err := j.Read(rctx, journal.ReadRequest{FromSeq: 1 << 62, Limit: 1})
		cancel()
		switch {
		case ctx.Err() != nil:
			return 0, ctx.Err()
		case err == nil && page.Served:
			return page.View.NextSeq, nil
		case err == nil && page.UnknownJournal:
			return 0, fmt.Errorf("%w: %s", client.ErrUnknownJournal, j.ID())
		}
		sleepCtx(ctx, 10*time.Millisecond)
	}
}

// scanStats are the scanners' shared counters; from and to bound the
// measured window (unix ns).
type scanStats struct {
	from, to                      atomic.Int64
	records, pages, scans, errors atomic.Int64
	all, bad                      atomic.Int64
	firstErr                      atomic.Value
}

func (st *scanStats) inWindow(now int64) bool { return now >= st.from.Load() && now <= st.to.Load() }

func (st *scanStats) fail(err error) {
	st.errors.Add(1)
	st.firstErr.CompareAndSwap(nil, err.Error())
}

// scan is scanner number r: its own Client (readerAddrs), then scans of
// the read-heavy journal from 1 to the tail each scan begins at, until ctx
// ends. It sends on ready once (nil: it scans; else why it cannot).
func (s *parosSys) scan(ctx context.Context, r int, st *scanStats, ready chan<- error) {
	dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	cl, err := client.Dial(dctx, s.readerAddrs(r), s.clientOpts()...)
	cancel()
	if err != nil {
		ready <- err
		return
	}
	defer cl.Close()
	j := cl.Journal(s.jids[readHeavyJournal])
	ready <- nil
	for ctx.Err() == nil {
		end, err := tailOf(ctx, j)
		if err != nil {
			if ctx.Err() == nil {
				st.fail(err)
				sleepCtx(ctx, 10*time.Millisecond)
			}
			continue
		}
		rd := j.NewReader(journal.FirstSeq, client.WithTailWait(0))
		for rd.Cursor() < end && ctx.Err() == nil {
			recs, err := rd.Next(ctx)
			now := time.Now().UnixNano()
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				var gap *client.GapError
				if !errors.As(err, &gap) {
					sleepCtx(ctx, 10*time.Millisecond)
				}
				st.fail(err) // a gap too: nothing is truncated here
				continue
			}
			if len(recs) == 0 {
				break // the tail (nothing is truncated, so not expected)
			}
			for _, rec := range recs {
				if len(rec.Data) != recordBytes {
					st.bad.Add(1)
				}
			}
			st.all.Add(int64(len(recs)))
			if st.inWindow(now) {
				st.records.Add(int64(len(recs)))
				st.pages.Add(1)
			}
		}
		if rd.Cursor() >= end && st.inWindow(time.Now().UnixNano()) {
			st.scans.Add(1)
		}
	}
}

// profileReads takes CPU profiles over the measured window of the
// read-heavy journal's leader and of one process that serves reads: the
// first replica, or without replicas a follower.
func (s *parosSys) profileReads(ctx context.Context, profDir string, t timing) chan []memberProfile {
	done := make(chan []memberProfile, 1)
	go func() {
		sleepCtx(ctx, t.warmup)
		l, err := s.leaderOf(ctx, readHeavyJournal, 5*time.Second)
		if err != nil {
			done <- nil
			return
		}
		other, role := (l+1)%len(s.procs), "follower"
		if len(s.rprocs) > 0 {
			other, role = len(s.procs), "replica"
		}
		secs := max(int(t.measure.Seconds())-1, 1)
		profs := make([]memberProfile, 2)
		var wg sync.WaitGroup
		for k, m := range []memberProfile{{i: l, role: "leader"}, {i: other, role: role}} {
			wg.Go(func() {
				m.path = profileMember(s, profDir, "read-heavy", m.i, m.role, secs)
				profs[k] = m
			})
		}
		wg.Wait()
		done <- profs
	}()
	return done
}
