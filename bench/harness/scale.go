package main

// The scale rows: paros with many journals beside JetStream (sync always)
// with as many streams. Every size gets a fresh cell (paros forms its
// journals at cell init, so a cell cannot grow) or a fresh cluster
// (JetStream, for symmetry: no figure carries the memory of an earlier
// size's load).
//
//   - W2 over N journals: 1,000 single-record appends in flight in total,
//     spread round robin over N journals, one default client.Writer per
//     journal (paros); the same 1,000 spread over N streams (JetStream).
//   - Idle: the members' CPU over a window, and each member's RSS, with N
//     idle journals (streams), after a settle period; a cell of 1 journal
//     (1 stream) is the baseline for the memory per journal.
//   - Restart (paros): kill -9 a member, restart it on its data dir, time
//     until it answers Inspect and until every journal has served a read
//     through it (scale_paros.go).
//   - Failover (paros): kill -9 the member that leads the most journals,
//     time until every journal acknowledged an append again
//     (scale_paros.go).
//
// A step that fails keeps its error and the run goes on; a cell that does
// not start fails every step planned on it.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Scale parameters that do not change with --quick.
const (
	scaleInflight      = 1000 // W2 appends (publishes) in flight, in total
	scaleClaimers      = 64   // claims of Writers in parallel
	scaleSurveyors     = 32   // Inspects of journals in parallel
	scaleReaders       = 64   // restart: journals read in parallel
	natsStreamCreators = 32   // JetStream: streams created in parallel
	scaleWorkers       = 256  // failover: journals written in parallel (64 per Client)
	// scaleRestartMember is the member the restart row kills (m3): not m1,
	// through which the cell was formed.
	scaleRestartMember = 2
)

// scaleBudget bounds every wait of a step on a cell of n journals
// (formation, the leaders, the claims, a restart, a failover): 60 s plus
// 12 ms per journal, 72 s at 1,000 and 3 min at 10,000. A cell slower than
// that fails the step with an error naming the wait.
func scaleBudget(n int) time.Duration { return 60*time.Second + time.Duration(n)*12*time.Millisecond }

// scalePlan is which sizes run which rows.
type scalePlan struct {
	W2Sizes   []int   `json:"w2_sizes"`
	IdleSizes []int   `json:"idle_sizes"`            // paros, besides the 1-journal baseline
	NATSIdle  int     `json:"nats_idle_streams"`     // JetStream's idle row
	Recover   int     `json:"restart_failover_size"` // paros: the restart and failover rows
	Inflight  int     `json:"inflight"`
	WarmupS   float64 `json:"warmup_s"`
	MeasureS  float64 `json:"measure_s"`
	SettleS   float64 `json:"idle_settle_s"`
	WindowS   float64 `json:"idle_window_s"`
}

func scalePlanFor(quick bool, t timing) scalePlan {
	p := scalePlan{W2Sizes: []int{1, 64, 1000}, IdleSizes: []int{1000, 10000}, NATSIdle: 1000, Recover: 10000,
		Inflight: scaleInflight, WarmupS: t.warmup.Seconds(), MeasureS: t.measure.Seconds(), SettleS: 10, WindowS: 20}
	if quick {
		p.IdleSizes, p.Recover, p.SettleS, p.WindowS = []int{1000}, 1000, 3, 5
	}
	return p
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// cells lists the sizes of the cells a system forms, smallest first.
func (p scalePlan) cells(paros bool) []int {
	out := append([]int{1}, p.W2Sizes...)
	if paros {
		out = append(append(out, p.IdleSizes...), p.Recover)
	} else {
		out = append(out, p.NATSIdle)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (p scalePlan) idleAt(n int, paros bool) bool {
	if n == 1 {
		return true // the baseline of the memory per journal
	}
	if paros {
		return slices.Contains(p.IdleSizes, n)
	}
	return n == p.NATSIdle
}

// seconds is the planned length of the scale rows of one system (for the
// progress bar; the start-up of large cells is a guess).
func (p scalePlan) seconds(paros bool) int {
	n := 0
	for _, c := range p.cells(paros) {
		if paros {
			n += 5 + c/500
		} else {
			n += 5 + c/25 // JetStream creates about 25 streams a second here
		}
		if slices.Contains(p.W2Sizes, c) {
			n += int(p.WarmupS+p.MeasureS) + 2
		}
		if p.idleAt(c, paros) {
			n += int(p.SettleS + p.WindowS)
		}
		if paros && c == p.Recover {
			n += 10 + 2*c/500
		}
	}
	return n
}

// scaleResult is the scale rows of one system.
type scaleResult struct {
	Key        string       `json:"key"`
	Title      string       `json:"title"`
	Durability string       `json:"durability"`
	Plan       scalePlan    `json:"plan"`
	Cells      []*scaleCell `json:"cells"`
}

// cell is the cell (cluster) of n journals (streams), or nil.
func (r *scaleResult) cell(n int) *scaleCell {
	if r == nil {
		return nil
	}
	for _, c := range r.Cells {
		if c.Journals == n {
			return c
		}
	}
	return nil
}

// scaleCell is one cell of paros (N journals) or one cluster of JetStream
// (N streams), and the rows run on it.
type scaleCell struct {
	Journals int `json:"journals"` // journals (paros) or streams (JetStream)
	// StartS: from the first process's start until the cell was formed
	// (paros: CellInit answered) or every stream was created (JetStream).
	// ReadyS: from the same start until every journal had a consensus
	// leader (Client.Inspect) or every stream acknowledged a publish.
	StartS float64 `json:"start_s"`
	ReadyS float64 `json:"ready_s"`
	// Leaders is how many journals each member led once ready (paros).
	Leaders  []int          `json:"leaders_per_member,omitempty"`
	Idle     *scaleIdle     `json:"idle,omitempty"`
	W2       *scaleW2       `json:"w2,omitempty"`
	Restart  *scaleRestart  `json:"restart,omitempty"`
	Failover *scaleFailover `json:"failover,omitempty"`
	Error    string         `json:"error,omitempty"`
}

// scaleIdle is the idle row of one cell.
type scaleIdle struct {
	SettleS float64 `json:"settle_s"`
	WindowS float64 `json:"window_s"`
	// CPUCores is the three members' CPU (utime + stime) over the window,
	// summed, in cores; MemberCores each member's.
	CPUCores    float64   `json:"cpu_cores"`
	MemberCores []float64 `json:"member_cpu_cores,omitempty"`
	// RSSMiB is each member's VmRSS at the end of the window.
	RSSMiB []float64 `json:"rss_mib,omitempty"`
	Error  string    `json:"error,omitempty"`
}

func (i *scaleIdle) meanRSS() float64 {
	if i == nil || i.Error != "" || len(i.RSSMiB) == 0 {
		return 0
	}
	var s float64
	for _, v := range i.RSSMiB {
		s += v
	}
	return s / float64(len(i.RSSMiB))
}

// scaleW2 is W2 over the journals (streams) of one cell.
type scaleW2 struct {
	Inflight int `json:"inflight"`
	// Writers are the client.Writers (one per journal) over Clients
	// client.Clients; Conns JetStream's connections.
	Writers int `json:"writers,omitempty"`
	Clients int `json:"clients,omitempty"`
	Conns   int `json:"conns,omitempty"`
	// SetupS is how long the Writers' claims took (paros).
	SetupS   float64      `json:"setup_s,omitempty"`
	Load     *loadResult  `json:"load,omitempty"`
	CPUCores float64      `json:"members_cpu_cores,omitempty"`
	Stats    *writerStats `json:"paros_writer_stats,omitempty"`
	// Counters (paros): scaleCounterNames summed over the members, from
	// before the claims to the Writers' close.
	Counters map[string]float64 `json:"members_counters_delta,omitempty"`
	Error    string             `json:"error,omitempty"`
}

// runScale runs the scale rows of one system: a fresh cell per size.
func runScale(ctx context.Context, paros bool, root, bin, self, work string, p scalePlan, pb *progress) scaleResult {
	res := scaleResult{Key: "nats-scale", Title: "JetStream (sync always)", Plan: p,
		Durability: newNATS(self, true).durability() + "; N R3 file streams, written round robin"}
	if paros {
		res.Key, res.Title = "paros-scale", "paros"
		res.Durability = newParos(root, true).durability() + "; every journal a single-writer journal of the cell plan"
	}
	for _, n := range p.cells(paros) {
		if ctx.Err() != nil {
			break
		}
		c := &scaleCell{Journals: n}
		res.Cells = append(res.Cells, c)
		dir := filepath.Join(work, fmt.Sprintf("%s-%d", res.Key, n))
		_ = os.MkdirAll(dir, 0o755)
		if paros {
			runParosCell(ctx, root, bin, dir, c, p, pb)
		} else {
			runNATSCell(ctx, self, dir, c, p, pb)
		}
		_ = os.RemoveAll(dir)
	}
	return res
}

// failPlanned marks every row planned on a cell that did not start.
func failPlanned(c *scaleCell, p scalePlan, paros bool, why string) {
	c.Error = why
	if p.idleAt(c.Journals, paros) {
		c.Idle = &scaleIdle{Error: why}
	}
	if slices.Contains(p.W2Sizes, c.Journals) {
		c.W2 = &scaleW2{Inflight: p.Inflight, Error: why}
	}
	if paros && c.Journals == p.Recover {
		c.Restart = &scaleRestart{Error: why}
		c.Failover = &scaleFailover{Error: why}
	}
}

// runParosCell forms a secure paros cell of c.Journals journals (three
// members, as the paros system starts them) and runs the rows planned on
// it: idle, W2, restart, failover, in that order.
func runParosCell(ctx context.Context, root, bin, dir string, c *scaleCell, p scalePlan, pb *progress) {
	n := c.Journals
	s := &parosSys{root: root, bin: bin, secure: true, journals: n}
	defer s.stop()
	label := fmt.Sprintf("paros scale, %s journals", thousands(float64(n)))
	pb.phase(label + ": forming the cell")
	t0 := time.Now()
	if err := s.start(ctx, dir); err != nil {
		failPlanned(c, p, true, "start: "+err.Error())
		noteCrashes(c, s.procs, map[string]bool{})
		return
	}
	c.StartS = time.Since(t0).Seconds()
	pb.add(3)
	lead, err := s.surveyLeaders(ctx, scaleBudget(n))
	c.ReadyS = time.Since(t0).Seconds()
	c.Leaders = leaderCounts(lead, len(s.procs))
	if err != nil {
		// The rows still run: each fails on its own if the cell cannot
		// serve it, and the note says the cell was not fully led.
		c.Error = err.Error()
	}
	// The members sample their metrics once a second: let the gauges the
	// W2 and failover rows read (elections won) catch up with formation,
	// so that its elections are not counted as the row's.
	sleepCtx(ctx, 1500*time.Millisecond)
	seen := map[string]bool{}
	defer func() { noteCrashes(c, s.procs, seen) }()
	if p.idleAt(n, true) {
		pb.phase(label + ": idle")
		c.Idle = measureIdle(ctx, s.procs, secs(p.SettleS), secs(p.WindowS))
		pb.add(int(p.SettleS + p.WindowS))
	}
	noteCrashes(c, s.procs, seen)
	if slices.Contains(p.W2Sizes, n) {
		pb.phase(label + ": W2 1,000 in flight")
		c.W2 = s.scaleW2(ctx, p, func() { pb.add(1) })
	}
	noteCrashes(c, s.procs, seen)
	if n == p.Recover {
		pb.phase(label + ": restart of a member")
		c.Restart = s.scaleRestart(ctx, scaleBudget(n))
		pb.add(5)
		noteCrashes(c, s.procs, seen)
		pb.phase(label + ": failover")
		c.Failover = s.scaleFailover(ctx, scaleBudget(n))
		pb.add(5)
	}
}

// runNATSCell starts a JetStream cluster (sync always) with c.Journals R3
// streams and runs the rows planned on it: idle, then W2.
func runNATSCell(ctx context.Context, self, dir string, c *scaleCell, p scalePlan, pb *progress) {
	n := c.Journals
	s := newNATS(self, true)
	s.name = "nats-scale"
	defer s.stop()
	label := fmt.Sprintf("JetStream scale, %s streams", thousands(float64(n)))
	pb.phase(label + ": starting")
	t0 := time.Now()
	if err := s.start(ctx, dir); err != nil {
		failPlanned(c, p, false, "start: "+err.Error())
		return
	}
	subjects, ready, err := s.addStreams(ctx, n, scaleBudget(n))
	if err != nil {
		failPlanned(c, p, false, err.Error())
		return
	}
	c.StartS = ready.Sub(t0).Seconds()
	c.ReadyS = time.Since(t0).Seconds()
	pb.add(3)
	if p.idleAt(n, false) {
		pb.phase(label + ": idle")
		c.Idle = measureIdle(ctx, s.procs, secs(p.SettleS), secs(p.WindowS))
		pb.add(int(p.SettleS + p.WindowS))
	}
	if slices.Contains(p.W2Sizes, n) {
		pb.phase(label + ": W2 1,000 in flight")
		c.W2 = s.scaleW2(ctx, subjects, p, func() { pb.add(1) })
	}
	noteCrashes(c, s.procs, map[string]bool{})
}

// measureIdle waits settle, then measures the members' CPU over window
// and their RSS at its end.
func measureIdle(ctx context.Context, procs []*child, settle, window time.Duration) *scaleIdle {
	out := &scaleIdle{SettleS: settle.Seconds(), WindowS: window.Seconds()}
	sleepCtx(ctx, settle)
	cpu0 := make([]time.Duration, len(procs))
	for i, c := range procs {
		cpu0[i] = membersCPU([]*child{c})
	}
	t0 := time.Now()
	sleepCtx(ctx, window)
	if ctx.Err() != nil {
		out.Error = "interrupted"
		return out
	}
	el := time.Since(t0).Seconds()
	for i, c := range procs {
		if !c.alive() {
			out.Error = "during the idle window: " + exitNote(c)
			return out
		}
		cores := (membersCPU([]*child{c}) - cpu0[i]).Seconds() / el
		out.MemberCores = append(out.MemberCores, cores)
		out.CPUCores += cores
		out.RSSMiB = append(out.RSSMiB, float64(c.rssBytes())/(1<<20))
	}
	return out
}

// exitNote says how a process the harness did not kill ended, with the
// end of its log: a member that crashes fails the row with its own words.
func exitNote(c *child) string {
	st := "exited"
	if ps := c.cmd.ProcessState; ps != nil {
		st = ps.String()
	}
	return fmt.Sprintf("%s ended (%s); its log ends: %s", c.name, st, logTail(c.log.Name(), 4))
}

// crashNotes is exitNote of every process in procs that ended without the
// harness killing it ("" when none did).
func crashNotes(procs []*child) string {
	var out []string
	for _, c := range procs {
		c.killedMu.Lock()
		killed := c.killed
		c.killedMu.Unlock()
		if !killed && !c.alive() {
			out = append(out, exitNote(c))
		}
	}
	return strings.Join(out, "; ")
}

// logTail is the last n non-empty lines of the file at path, joined by
// " | ", each cut to 400 bytes.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l[:min(len(l), 400)])
		}
	}
	return orDash(strings.Join(lines[max(len(lines)-n, 0):], " | "), "(empty)")
}

// noteCrashes adds to the cell's error every process that ended on its
// own, once.
func noteCrashes(c *scaleCell, procs []*child, seen map[string]bool) {
	for _, p := range procs {
		if seen[p.name] {
			continue
		}
		if note := crashNotes([]*child{p}); note != "" {
			seen[p.name] = true
			c.Error = strings.TrimPrefix(c.Error+"; "+note, "; ")
		}
	}
}

// forEach calls fn(i) for i in [0, n) from `workers` goroutines, until
// ctx ends.
func forEach(ctx context.Context, n, workers int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		})
	}
	wg.Wait()
}

// firstError keeps the first of many errors, and counts them.
type firstError struct {
	mu    sync.Mutex
	n     int
	first error
}

func (f *firstError) add(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if f.first == nil {
		f.first = err
	}
}

func (f *firstError) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.first == nil {
		return ""
	}
	return f.first.Error()
}

// addStreams gives the cluster n streams in all (BENCH, made by start, and
// n-1 more, SCALE_1…, each R3 on file storage like BENCH but without a
// byte limit: JetStream reserves a stream's MaxBytes on disk, and a
// thousand of BENCH's 8 GiB would not fit), then waits until each
// acknowledges a publish. It returns the subject of each stream and when
// the last stream was created.
func (s *natsSys) addStreams(ctx context.Context, n int, budget time.Duration) ([]string, time.Time, error) {
	deadline := time.Now().Add(budget)
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	subjects := []string{"bench.w"}
	for i := 1; i < n; i++ {
		subjects = append(subjects, fmt.Sprintf("scale.%d", i))
	}
	var errs firstError
	forEach(dctx, n-1, natsStreamCreators, func(k int) {
		i := k + 1
		for dctx.Err() == nil {
			cctx, cancel := context.WithTimeout(dctx, 10*time.Second)
			_, err := s.admin.CreateOrUpdateStream(cctx, jetstream.StreamConfig{
				Name: fmt.Sprintf("SCALE_%d", i), Subjects: []string{subjects[i]}, Storage: jetstream.FileStorage,
				Replicas: 3, Retention: jetstream.LimitsPolicy, Discard: jetstream.DiscardOld,
			})
			cancel()
			if err == nil {
				return
			}
			errs.add(err)
			sleepCtx(dctx, 200*time.Millisecond)
		}
	})
	created := time.Now()
	if dctx.Err() != nil {
		return nil, created, fmt.Errorf("nats: %d streams not created within %v (first error: %s)", n, budget, errs.String())
	}
	var ready atomic.Int64
	forEach(dctx, n, scaleSurveyors, func(i int) {
		for dctx.Err() == nil {
			cctx, cancel := context.WithTimeout(dctx, 5*time.Second)
			_, err := s.admin.Publish(cctx, subjects[i], []byte("ready"))
			cancel()
			if err == nil {
				ready.Add(1)
				return
			}
			errs.add(err)
			sleepCtx(dctx, 100*time.Millisecond)
		}
	})
	if int(ready.Load()) < n {
		return nil, created, fmt.Errorf("nats: %d of %d streams acknowledged a publish within %v (first error: %s)", ready.Load(), n, budget, errs.String())
	}
	return subjects, created, nil
}

// scaleW2 runs W2 with scaleInflight publishes in flight spread round robin
// over subjects (one per stream), over the pool of connections W2 uses.
func (s *natsSys) scaleW2(ctx context.Context, subjects []string, p scalePlan, tick func()) *scaleW2 {
	out := &scaleW2{Inflight: p.Inflight, Conns: connsFor(p.Inflight)}
	js, err := s.pool(out.Conns)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	mw := &multiWriter{}
	for _, subj := range subjects {
		mw.ws = append(mw.ws, &natsWriter{js: js, subject: subj, attempt: 5 * time.Second})
	}
	cpu0, t0 := membersCPU(s.procs), time.Now()
	r := runClosed(ctx, mw, p.Inflight, 1, secs(p.WarmupS), secs(p.MeasureS), tick)
	out.CPUCores = (membersCPU(s.procs) - cpu0).Seconds() / time.Since(t0).Seconds()
	out.Load = &r
	if r.Writes == 0 {
		out.Error = "no publish acknowledged in the measured window: " + orDash(r.FirstError, "no error either")
	}
	return out
}

// multiWriter spreads writes round robin over writers.
type multiWriter struct {
	ws   []writer
	next atomic.Uint64
}

func (m *multiWriter) write(ctx context.Context, recs [][]byte) (time.Time, error) {
	return m.ws[m.next.Add(1)%uint64(len(m.ws))].write(ctx, recs)
}

func (m *multiWriter) close() {
	for _, w := range m.ws {
		w.close()
	}
}
