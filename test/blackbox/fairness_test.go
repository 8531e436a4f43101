package blackbox

// TestOneTokenCannotStarveAnother plays the hostile-input probe's flood
// against a real secure cell: one read-write token opens floodStreams
// WriteStreams to the leader on one connection (as many as the server lets
// it: the connection's stream limit makes the gRPC client queue the rest,
// and the per-principal stream bound refuses some; both are fine), sends
// writes on each under a made-up fence at an old position and never reads
// a reply, while an honest writer with another token appends one record at
// a time through the client library. It checks that
//
//   - every honest append during the flood is acknowledged and their p99
//     latency stays under honestP99Max;
//   - no leadership changed: the same machine leads at the same ballot
//     before and after, no member promised a higher ballot, and no member
//     won an election or dropped a peer's Deliver (their metrics);
//   - every member's resident memory (VmRSS) grows by at most floodRSSMax.
//
// The measured numbers (the writer's latencies without and with the flood,
// streams opened and refused, writes sent, slots chosen, synced commits,
// each member's RSS) are logged. The flooder runs in a child process at
// the lowest CPU priority (see floodMain), and the test stops it after
// floodWarmup + floodFor.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/security"
	"github.com/parosdb/paros/wire"
)

// Bounds of TestOneTokenCannotStarveAnother.
const (
	// floodStreams is how many WriteStreams the flooding token opens on its
	// one connection (the probe's number).
	floodStreams = 2000
	// floodWritesPerMessage and floodRecordBytes shape each flood message:
	// as many writes as the server hands the event loop in one turn, each
	// of one small record.
	floodWritesPerMessage = 256
	floodRecordBytes      = 64
	// floodWarmup is how long the flood runs before the honest writer
	// starts measuring (the streams are open and their first writes in),
	// floodFor how long it measures while the flood goes on.
	floodWarmup = 500 * time.Millisecond
	floodFor    = 3 * time.Second
	// quietFor is how long the writer appends before the flood, for scale.
	quietFor = time.Second
	// honestAppendTimeout bounds one honest append: one that takes longer
	// counts as unacknowledged and fails the test.
	honestAppendTimeout = 5 * time.Second
	// honestP99Max is the bound on the honest writer's p99. Without the
	// flood its appends take 1.7-2.5 ms at p50 and 5-7 ms at p99 here. The
	// flood keeps the cell busy with the flooder's fair share (the event
	// loop's turn, runtime.submitterSlotCallsMax writes of it in
	// consensus), so an honest append waits for about one more saturated
	// round: measured p50 7-8 ms and p99 25-41 ms on the 2-core test
	// machine (before the bounds: 9 to 55 appends in 3 s, p99 0.5-0.7 s,
	// and one append held 5 s). On a machine shared with other test runs
	// at load 5-7 the p99 reached 55-270 ms: the cell's own CPU is then
	// the bottleneck.
	honestP99Max = 50 * time.Millisecond
	// honestP99Factor scales the bound with the machine: the honest p99
	// during the flood must stay under max(honestP99Max, honestP99Factor
	// times its own p99 without the flood, measured in the same run). On
	// a quiet machine the first term decides (5-7 ms × 8 is under 50 ms);
	// on one shared with other test packages (go test ./... runs them side
	// by side on two cores) the cell's own latency grows with the load,
	// and the bound with it. Without the bounds the flood's p99 was 90 to
	// 130 times the quiet one (0.5-0.7 s against 5-7 ms).
	honestP99Factor = 8
	// floodRSSMax bounds how much a member's resident memory may grow
	// during the flood. What the flooder can make the leader hold: 256
	// streams of its connection, each with up to a 256 KiB window of data
	// unread (64 open ones held by the write budget, the others about to
	// be refused): 64 MiB; the replies of its 64 open streams not yet sent,
	// 64 KiB each: 4 MiB; one decoded message per open stream (256 small
	// writes): about 5 MiB; and the 1,024 writes of its budget: under
	// 1 MiB. About 75 MiB live, which the garbage collector (GOGC=100) may
	// let grow to twice that before it collects. Measured: at most 74 MiB
	// (the leader; before the bounds 227-457 MiB).
	floodRSSMax = 160 << 20
	// rssEvery is how often each member's VmRSS is sampled.
	rssEvery = 50 * time.Millisecond
)

func TestOneTokenCannotStarveAnother(t *testing.T) {
	// Arrange: a formed cell, an honest writer with its own token that
	// claimed the journal, the leader and its ballot, and the flooder's
	// token and connection to the leader.
	metricsAt := make([]string, 3)
	c := newCellWith(t, func(i int, p *proc) {
		metricsAt[i] = freeAddr(t)
		p.args = append(p.args, "--metrics", metricsAt[i])
	})
	ref := c.initCell()
	id := mustID(t, ref)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := c.dial(ctx, c.procs)
	honestToken := c.paros("cert", "token", "--ca", c.caDir, "--subject", "honest", "--journal", ref, "--ops", "read,write", "--ttl", "1h")
	floodToken := c.paros("cert", "token", "--ca", c.caDir, "--subject", "flood", "--all", "--ops", "read,write", "--ttl", "1h")
	var addrs []string
	for _, p := range c.procs {
		addrs = append(addrs, p.public())
	}
	honest, err := client.Dial(ctx, addrs, client.WithCAFile(c.caFile), client.WithToken(honestToken))
	if err != nil {
		t.Fatal(err)
	}
	defer honest.Close()
	w := honest.Journal(id).NewWriter()
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatalf("claim: %v", err)
	}
	// The writer's latency without the flood, for scale (and a warm
	// stream and cell).
	quiet, _ := appendFor(ctx, w, "quiet", quietFor)
	if len(quiet) == 0 {
		t.Fatal("no append acknowledged without the flood")
	}
	before := leaderOf(t, ctx, admin, id)
	leader := slices.IndexFunc(c.procs, func(p *proc) bool { return p.public() == before.Addr })
	if leader < 0 {
		t.Fatalf("the leader's address %s is no machine's", before.Addr)
	}
	rss := newRSSWatch(t, c)
	defer rss.stop()
	rssBefore := rss.now()
	scrapeAll := func() []metrics {
		out := make([]metrics, len(c.procs))
		for i, a := range metricsAt {
			out[i] = scrape(t, a)
		}
		return out
	}
	mBefore := scrapeAll()
	statsBefore := w.Stats()
	flooder := startFlooder(t, c, c.procs[leader], floodToken, id)
	defer flooder.stop()

	// Act: after floodWarmup of the flood, append one record at a time
	// for floodFor; then stop the flood.
	time.Sleep(floodWarmup)
	from := time.Now()
	lat, failures := appendFor(ctx, w, "honest", floodFor)
	mAfter := scrapeAll()
	took := time.Since(from)
	rssPeak := rss.peak()
	report := flooder.stop()
	rss.stop()

	// Check: every honest append acknowledged with its p99 under the bound,
	// the same leader at the same ballot, memory under the bound, every
	// machine running.
	after := leaderOf(t, ctx, admin, id)
	t.Logf("flood: %s; the leader chose %d slots", report, after.ChosenIndex-before.ChosenIndex)
	for i := range c.procs {
		delta := func(series string) float64 { return mAfter[i].get(series) - mBefore[i].get(series) }
		commits := delta("paros_storage_commit_seconds_count")
		t.Logf("machine %d: %v synced commits during the flood, %.1f ms each on average; %v Delivers dropped; %v elections won",
			i+1, commits, 1000*delta("paros_storage_commit_seconds_sum")/max(commits, 1),
			delta("paros_inbound_dropped_total"), mAfter[i].get("paros_elections"))
		if d := delta("paros_inbound_dropped_total"); d > 0 {
			t.Errorf("machine %d dropped %v peer Delivers during the flood, want none", i+1, d)
		}
		if d := delta("paros_elections"); d > 0 {
			t.Errorf("machine %d won %v elections during the flood, want none", i+1, d)
		}
	}
	for i := range c.procs {
		t.Logf("machine %d: VmRSS %d MiB before the flood, peak %d MiB during it", i+1, rssBefore[i]>>20, rssPeak[i]>>20)
	}
	if len(lat) == 0 {
		t.Fatalf("no honest append acknowledged in %v: %v", took, failures)
	}
	q := quantile(lat)
	t.Logf("honest writer without the flood: %d appends in %v, p50 %v, p99 %v, max %v",
		len(quiet), quietFor, quantile(quiet)(0.5), quantile(quiet)(0.99), quantile(quiet)(1))
	t.Logf("honest writer during the flood: %d appends acknowledged in %v, p50 %v, p99 %v, max %v; writer counters %+v, before %+v",
		len(lat), took.Round(time.Millisecond), q(0.5), q(0.99), q(1), w.Stats(), statsBefore)
	for _, f := range failures {
		t.Errorf("honest writer: %s", f)
	}
	bound := max(honestP99Max, honestP99Factor*quantile(quiet)(0.99))
	if p99 := q(0.99); p99 >= bound {
		t.Errorf("honest writer's p99 %v, want under %v (max of %v and %d× its p99 without the flood, %v)",
			p99, bound, honestP99Max, honestP99Factor, quantile(quiet)(0.99))
	}
	if after.Addr != before.Addr || after.Promised.Round != before.Promised.Round || after.Promised.Node != before.Promised.Node {
		t.Errorf("leadership changed during the flood: %s led at round %d (node %x) before, %s at round %d (node %x) after",
			before.Addr, before.Promised.Round, before.Promised.Node, after.Addr, after.Promised.Round, after.Promised.Node)
	}
	for i, st := range inspect(ctx, admin, id) {
		if st.Err == nil && st.Promised.Round > before.Promised.Round {
			t.Errorf("machine %d promised round %d, above the leader's %d before the flood: an election ran", i+1, st.Promised.Round, before.Promised.Round)
		}
	}
	for i := range c.procs {
		if grew := rssPeak[i] - rssBefore[i]; grew > floodRSSMax {
			t.Errorf("machine %d's VmRSS grew by %d MiB during the flood (%d to %d MiB), want at most %d MiB",
				i+1, grew>>20, rssBefore[i]>>20, rssPeak[i]>>20, floodRSSMax>>20)
		}
	}
	if _, err := w.Append(ctx, []byte("after")); err != nil {
		t.Errorf("the honest append after the flood: %v", err)
	}
	checkRunning(t, c)
}

// appendFor appends one record at a time through w for d and returns
// each acknowledged append's latency (sorted), and why it stopped early if
// an append failed or took honestAppendTimeout.
func appendFor(ctx context.Context, w *client.Writer, prefix string, d time.Duration) ([]time.Duration, []string) {
	var lat []time.Duration
	var failures []string
	for i, from := 0, time.Now(); time.Since(from) < d; i++ {
		actx, cancel := context.WithTimeout(ctx, honestAppendTimeout)
		start := time.Now()
		_, err := w.Append(actx, fmt.Appendf(nil, "%s-%d", prefix, i))
		cancel()
		if err != nil {
			failures = append(failures, fmt.Sprintf("append %d after %v: %v", i, time.Since(start).Round(time.Millisecond), err))
			break // the writer may have stopped: its later appends say nothing new
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	return lat, failures
}

// quantile returns the q-quantile function of sorted (nonempty) lat.
func quantile(lat []time.Duration) func(q float64) time.Duration {
	return func(q float64) time.Duration { return lat[max(int(math.Ceil(q*float64(len(lat))))-1, 0)] }
}

// The flooder runs in a child process: this test binary again, which
// floods from its init function (before TestMain builds anything) when
// floodEnv is set, at the lowest CPU priority (nice 19). On a test machine
// the flooder's CPU is the cell's CPU; a real flooder spends its own
// machine's. What is measured is what the cell does with the flood it is
// sent, not how one process of a shared computer starves another.
const (
	floodEnv = "PAROS_BLACKBOX_FLOOD" // addr|caFile|token|journal ref
	// floodLifeMax stops a flooder whose parent never stopped it.
	floodLifeMax = 30 * time.Second
)

func init() {
	if spec := os.Getenv(floodEnv); spec != "" {
		os.Exit(floodMain(spec))
	}
}

// flooder is a running flood process.
type flooder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
	once  sync.Once
	rep   string
}

// startFlooder starts the flood of machine p with token and waits until
// its first message went out.
func startFlooder(t *testing.T, c *cell, p *proc, token string, id journal.ID) *flooder {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("nice", "-n", "19", exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), floodEnv+"="+strings.Join([]string{p.addr, c.caFile, token, id.String()}, "|"))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f := &flooder{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
	if !f.out.Scan() || f.out.Text() != "flooding" {
		f.stop()
		t.Fatalf("the flooder did not start: %q", f.out.Text())
	}
	return f
}

// stop ends the flood (closing the flooder's stdin) and returns its
// report.
func (f *flooder) stop() string {
	f.once.Do(func() {
		f.stdin.Close()
		var lines []string
		for f.out.Scan() {
			lines = append(lines, f.out.Text())
		}
		if err := f.cmd.Wait(); err != nil {
			lines = append(lines, fmt.Sprintf("(the flooder exited: %v)", err))
		}
		f.rep = strings.Join(lines, "; ")
	})
	return f.rep
}

// floodMain is the flooder process: it opens floodStreams WriteStreams on
// one connection to the machine at addr, sends on each until its stdin
// closes (or floodLifeMax), and prints what it achieved.
func floodMain(spec string) int {
	parts := strings.Split(spec, "|")
	if len(parts) != 4 {
		fmt.Fprintf(os.Stderr, "flooder: %s=%q\n", floodEnv, spec)
		return 2
	}
	addr, caFile, token, ref := parts[0], parts[1], parts[2], parts[3]
	id, err := journal.ParseID(ref)
	if err != nil {
		fmt.Fprintf(os.Stderr, "flooder: %v\n", err)
		return 2
	}
	cfg, err := security.ClientConfigFile(caFile)
	if err != nil {
		fmt.Fprintf(os.Stderr, "flooder: %v\n", err)
		return 2
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		fmt.Fprintf(os.Stderr, "flooder: %v\n", err)
		return 2
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token), floodLifeMax)
	defer cancel()
	go func() { // the parent closes stdin to stop the flood
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	stub := pb.NewJournalClient(cc)
	fs := &floodStats{codes: map[codes.Code]int{}, first: make(chan struct{})}
	var wg sync.WaitGroup
	jpb := wire.JournalIDToPB(id)
	for range floodStreams {
		wg.Go(func() { flood(ctx, stub, jpb, fs) })
	}
	select {
	case <-fs.first:
		fmt.Println("flooding")
	case <-ctx.Done():
		fmt.Println("no stream opened")
	}
	wg.Wait()
	fmt.Printf("%d streams opened and sent on, %d writes sent, %d streams ended by the server: %v\n",
		fs.opened, fs.writes.Load(), fs.ended(), fs.codes)
	return 0
}

// floodStats counts what the flooder achieved.
type floodStats struct {
	writes    atomic.Int64
	first     chan struct{} // closed at the first message sent
	firstOnce sync.Once
	mu        sync.Mutex
	opened    int
	codes     map[codes.Code]int // how the streams the server ended ended
}

func (fs *floodStats) ended() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n := 0
	for _, k := range fs.codes {
		n += k
	}
	return n
}

// flood opens one WriteStream and sends messages of floodWritesPerMessage
// writes under a made-up fence until the stream is refused or ended, or
// ctx ends. It never reads a reply; when the server ends the stream, it
// reads only the final status (a refused stream carries no reply).
func flood(ctx context.Context, stub pb.JournalClient, j *pb.JournalId, fs *floodStats) {
	stream, err := stub.WriteStream(ctx)
	if err != nil {
		return // ctx ended while the client queued the stream
	}
	bogus := wire.UUIDToPB(journal.LeaderUUID{Hi: 0xf100d, Lo: 0xf100d})
	rec := make([]byte, floodRecordBytes)
	var next uint64
	for sent := 0; ; sent++ {
		m := &pb.WriteStreamRequest{Writes: make([]*pb.StreamWrite, floodWritesPerMessage)}
		for i := range m.Writes {
			next++
			m.Writes[i] = &pb.StreamWrite{Id: next, Write: &pb.WriteRequest{Journal: j, Leader: bogus, Seq: 1, Records: [][]byte{rec}}}
		}
		if err := stream.Send(m); err != nil {
			if ctx.Err() != nil {
				return
			}
			// The server ended the stream: its status follows the replies,
			// of which a refused stream has none.
			for {
				if _, err = stream.Recv(); err != nil {
					break
				}
			}
			if !errors.Is(err, io.EOF) {
				fs.mu.Lock()
				fs.codes[status.Code(err)]++
				fs.mu.Unlock()
			}
			return
		}
		if sent == 0 {
			fs.firstOnce.Do(func() { close(fs.first) })
			fs.mu.Lock()
			fs.opened++
			fs.mu.Unlock()
		}
		fs.writes.Add(floodWritesPerMessage)
	}
}

// rssWatch samples each machine's VmRSS every rssEvery and keeps the peak.
type rssWatch struct {
	t     *testing.T
	c     *cell
	mu    sync.Mutex
	max   []int64
	quit  chan struct{}
	done  chan struct{}
	once  sync.Once
	first []int64
}

func newRSSWatch(t *testing.T, c *cell) *rssWatch {
	r := &rssWatch{t: t, c: c, quit: make(chan struct{}), done: make(chan struct{})}
	r.first = r.sample()
	r.max = slices.Clone(r.first)
	go func() {
		defer close(r.done)
		tick := time.NewTicker(rssEvery)
		defer tick.Stop()
		for {
			select {
			case <-r.quit:
				return
			case <-tick.C:
				s := r.sample()
				r.mu.Lock()
				for i := range s {
					r.max[i] = max(r.max[i], s[i])
				}
				r.mu.Unlock()
			}
		}
	}()
	return r
}

// now is each machine's VmRSS when the watch started.
func (r *rssWatch) now() []int64 { return r.first }

// peak is each machine's highest VmRSS sampled so far.
func (r *rssWatch) peak() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.max)
}

func (r *rssWatch) stop() {
	r.once.Do(func() { close(r.quit) })
	<-r.done
}

// sample reads each machine's VmRSS in bytes (0 where it cannot be read).
func (r *rssWatch) sample() []int64 {
	out := make([]int64, len(r.c.procs))
	for i, p := range r.c.procs {
		n, err := vmRSS(p.cmd.Process.Pid)
		if err != nil {
			r.t.Logf("machine %d: %v", i+1, err)
		}
		out[i] = n
	}
	return out
}

// vmRSS reads process pid's resident set size from /proc (Linux).
func vmRSS(pid int) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(raw)) {
		rest, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("/proc/%d/status: VmRSS line %q", pid, strings.TrimSpace(line))
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		return kb << 10, err
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
}
