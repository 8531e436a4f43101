package blackbox

// These tests play the hostile-input probe's attacks against a real secure
// cell (three `paros serve` processes with TLS, see cell_test.go) and then
// check the cell is intact: every machine still runs, the real writer's
// next write lands at the position it expected, and the journal reads back
// with exactly the records written.
//
//   - TestCellServesThroughIdleAndSlowConnections: with 500 idle TCP
//     connections held open to the leader (plain TCP, no handshake; the
//     server drops each after its handshake timeout and the test dials it
//     again), a slowloris client trickling a TLS ClientHello one byte every
//     500 ms and another trickling the HTTP/2 preface the same way after a
//     completed TLS handshake, 200 appends through the client library all
//     complete, each in under 2 s; the p50 and p99 latencies are logged.
//     Every slowloris connection, and every idle one, is closed by the
//     server within 10 s of being opened.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/security"
)

// Bounds of TestCellServesThroughIdleAndSlowConnections.
const (
	// idleConnsWanted is how many idle TCP connections the test holds open
	// to the leader, if the file descriptor limits allow.
	idleConnsWanted = 500
	// fdsSpare is the file descriptors left free beside the idle
	// connections, in the test process and in the machine.
	fdsSpare = 256
	// appendsUnderLoad is how many appends run while the connections are
	// held, one every appendPace at most; each must take under
	// appendLatencyMax. The pace spreads them over the server's handshake
	// timeout, so that they also run while it drops every idle connection
	// at once and the test dials them all again.
	appendsUnderLoad = 200
	appendPace       = 30 * time.Millisecond
	appendLatencyMax = 2 * time.Second
	// slowByteEvery is a slowloris client's pace: one byte per tick.
	slowByteEvery = 500 * time.Millisecond
	// slowCloseMax is how soon the server must drop a connection that does
	// not finish its handshake: its handshake timeout (5 s) and slack.
	slowCloseMax = 10 * time.Second
	// slowReadMax is when a slowloris client stops waiting for the server
	// to close its connection (a connection it gives up on counts as
	// kept open).
	slowReadMax = 2 * slowCloseMax
)

func TestCellServesThroughIdleAndSlowConnections(t *testing.T) {
	// Arrange: a formed cell, a claimed writer, the leader, and how many
	// idle connections fit in both processes' file descriptor limits.
	c := newCell(t)
	id := mustID(t, c.initCell())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn := c.dial(ctx, c.procs)
	w := conn.Journal(id).NewWriter()
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatalf("claim: %v", err)
	}
	leader := waitRole(t, ctx, conn, id, "leader")
	target := c.procs[leader]
	pid := target.cmd.Process.Pid
	n := idleConnsFitting(t, pid)
	tlsCfg, err := security.ClientConfigFile(c.caFile)
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ := net.SplitHostPort(target.addr)
	tlsCfg.ServerName, tlsCfg.NextProtos = host, []string{"h2"}
	hello := clientHello(t, tlsCfg)

	// Act: hold n idle connections to the leader and run both slowloris
	// clients at it; once the n are open, append one record at a time,
	// through the moment the server drops the first idle connections.
	attackCtx, stopAttack := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopAttack(); wg.Wait() }()
	idle := &connStats{}
	for range n {
		wg.Go(func() { holdIdle(attackCtx, target.addr, idle) })
	}
	slowHello := &connStats{}
	wg.Go(func() {
		for attackCtx.Err() == nil {
			slowloris(attackCtx, target.addr, nil, hello, slowHello)
		}
	})
	slowPreface := &connStats{}
	wg.Go(func() {
		for attackCtx.Err() == nil {
			slowloris(attackCtx, target.addr, tlsCfg, []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), slowPreface)
		}
	})
	for idle.open.Load() < int64(n) {
		if ctx.Err() != nil {
			t.Fatalf("only %d of %d idle connections opened (%d dials failed)", idle.open.Load(), n, idle.dialErrs.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		t.Logf("%d idle connections open to machine %d; it holds %d file descriptors", n, leader+1, len(fds))
	}
	first, appendsFrom := w.NextSeq(), time.Now()
	latencies := make([]time.Duration, 0, appendsUnderLoad)
	fewestOpen := int64(n)
	for i := range appendsUnderLoad {
		start := time.Now()
		if _, err := w.Append(ctx, fmt.Appendf(nil, "load-%d", i)); err != nil {
			t.Fatalf("append %d of %d while the connections are held: %v", i+1, appendsUnderLoad, err)
		}
		latencies = append(latencies, time.Since(start))
		fewestOpen = min(fewestOpen, idle.open.Load())
		time.Sleep(time.Until(start.Add(appendPace)))
	}
	appendsTook := time.Since(appendsFrom)
	// Every kind of connection is seen closed at least once.
	for slowHello.closedCount() == 0 || slowPreface.closedCount() == 0 || idle.closedCount() == 0 {
		if ctx.Err() != nil {
			t.Fatalf("the server closed %d slow ClientHellos, %d slow prefaces and %d idle connections before the deadline",
				slowHello.closedCount(), slowPreface.closedCount(), idle.closedCount())
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopAttack()
	wg.Wait()

	// Check: no append failed or took appendLatencyMax, every connection
	// that did not complete its handshake was closed by the server within
	// slowCloseMax, every append reads back, and every machine runs.
	slices.Sort(latencies)
	quantile := func(q float64) time.Duration {
		return latencies[int(math.Ceil(q*float64(len(latencies))))-1]
	}
	t.Logf("%d appends over %v while %d to %d idle connections were open: p50 %v, p99 %v, max %v",
		len(latencies), appendsTook.Round(time.Millisecond), fewestOpen, n, quantile(0.5), quantile(0.99), latencies[len(latencies)-1])
	if worst := latencies[len(latencies)-1]; worst >= appendLatencyMax {
		t.Errorf("an append took %v, want under %v", worst, appendLatencyMax)
	}
	for _, k := range []struct {
		name string
		s    *connStats
	}{{"idle connection", idle}, {"slow ClientHello", slowHello}, {"slow HTTP/2 preface", slowPreface}} {
		closed, kept, longest, failed := k.s.summary()
		t.Logf("%s: %d closed by the server (the longest after %v), %d kept open past %v, %d failed otherwise",
			k.name, closed, longest.Round(time.Millisecond), kept, slowReadMax, failed)
		if kept > 0 || longest > slowCloseMax || failed > 0 {
			t.Errorf("%s: %d kept open, the longest closed after %v, %d failed otherwise; want every one closed by the server within %v",
				k.name, kept, longest, failed, slowCloseMax)
		}
	}
	r := conn.Journal(id).NewReader(first, client.WithTailWait(0))
	for k := 0; k < appendsUnderLoad; {
		recs, err := r.Next(ctx)
		if err != nil {
			t.Fatalf("read at %d: %v", r.Cursor(), err)
		}
		for _, rec := range recs {
			if want := fmt.Sprintf("load-%d", k); string(rec.Data) != want {
				t.Fatalf("position %d reads back %q, want %q", rec.Seq, rec.Data, want)
			}
			k++
		}
	}
	checkRunning(t, c)
}

// connStats counts one kind of hostile connection.
type connStats struct {
	open     atomic.Int64 // connections open now
	dialErrs atomic.Int64

	mu sync.Mutex
	// closedAfter is how long each connection the server closed lived
	// (from the dial); kept counts those still open after slowReadMax;
	// failed those that ended another way (a failed TLS handshake).
	closedAfter  []time.Duration
	kept, failed int
}

func (s *connStats) closedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.closedAfter)
}

func (s *connStats) summary() (closed, kept int, longest time.Duration, failed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.closedAfter {
		longest = max(longest, d)
	}
	return len(s.closedAfter), s.kept, longest, s.failed
}

// ended records how a connection dialled at start ended: err is what its
// read returned, or nil when the test closed it.
func (s *connStats) ended(start time.Time, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil:
	case errors.Is(err, os.ErrDeadlineExceeded):
		s.kept++
	default:
		s.closedAfter = append(s.closedAfter, time.Since(start))
	}
}

// holdIdle keeps one plain TCP connection open to addr, sending nothing,
// until ctx ends; when the server closes it, it dials again.
func holdIdle(ctx context.Context, addr string, s *connStats) {
	var d net.Dialer
	buf := make([]byte, 64)
	for ctx.Err() == nil {
		start := time.Now()
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			if ctx.Err() == nil {
				s.dialErrs.Add(1)
				time.Sleep(50 * time.Millisecond)
			}
			continue
		}
		s.open.Add(1)
		stop := context.AfterFunc(ctx, func() { conn.Close() })
		_ = conn.SetReadDeadline(start.Add(slowReadMax))
		_, err = conn.Read(buf)
		s.open.Add(-1)
		if !stop() {
			err = nil // the test closed it
		}
		conn.Close()
		s.ended(start, err)
	}
}

// slowloris dials addr, completes a TLS handshake over it when cfg is set,
// then sends payload one byte every slowByteEvery, and records when the
// server closes the connection. It returns when the server closed it,
// after slowReadMax, or when ctx ends.
func slowloris(ctx context.Context, addr string, cfg *tls.Config, payload []byte, s *connStats) {
	start := time.Now()
	raw, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, "tcp", addr)
	if err != nil {
		if ctx.Err() == nil {
			s.dialErrs.Add(1)
			time.Sleep(50 * time.Millisecond)
		}
		return
	}
	defer raw.Close()
	var conn net.Conn = raw
	if cfg != nil {
		tc := tls.Client(raw, cfg)
		hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				s.mu.Lock()
				s.failed++
				s.mu.Unlock()
			}
			return
		}
		conn = tc
	}
	_ = raw.SetReadDeadline(start.Add(slowReadMax))
	closed := make(chan error, 1)
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := conn.Read(buf); err != nil {
				closed <- err
				return
			}
		}
	}()
	tick := time.NewTicker(slowByteEvery)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case err := <-closed:
			s.ended(start, err)
			return
		case <-ctx.Done():
			raw.Close()
			<-closed
			return
		case <-tick.C:
			if i < len(payload) {
				// An error here is the server's close; the read reports it.
				_, _ = conn.Write(payload[i : i+1])
			}
		}
	}
}

// clientHello returns the first TLS record a client dialling with cfg
// sends: its ClientHello.
func clientHello(t *testing.T, cfg *tls.Config) []byte {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() { _ = tls.Client(a, cfg).Handshake() }()
	_ = b.SetReadDeadline(time.Now().Add(5 * time.Second))
	hdr := make([]byte, 5)
	if _, err := io.ReadFull(b, hdr); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, int(hdr[3])<<8|int(hdr[4]))
	if _, err := io.ReadFull(b, body); err != nil {
		t.Fatal(err)
	}
	if hdr[0] != 22 || len(body) == 0 || body[0] != 1 { // handshake record, client_hello
		t.Fatalf("the first TLS record is not a ClientHello: % x", hdr)
	}
	return append(hdr, body...)
}

// idleConnsFitting returns how many idle connections (idleConnsWanted at
// most) fit, with fdsSpare to spare, in the file descriptor limits of this
// process and of the machine pid, as /proc shows them; where /proc cannot
// be read the limit is not checked, and the log says so.
func idleConnsFitting(t *testing.T, pid int) int {
	t.Helper()
	n := idleConnsWanted
	for _, who := range []string{"self", strconv.Itoa(pid)} {
		limit, open, err := fdUse(who)
		if err != nil {
			t.Logf("the file descriptor limit of process %s was not checked: %v", who, err)
			continue
		}
		t.Logf("process %s: %d file descriptors open, at most %d", who, open, limit)
		if fit := limit - open - fdsSpare; fit < n {
			n = fit
		}
	}
	if n < 1 {
		t.Fatalf("no idle connection fits in the file descriptor limits")
	}
	if n < idleConnsWanted {
		t.Logf("only %d idle connections fit in the file descriptor limits, not %d", n, idleConnsWanted)
	}
	return n
}

// fdUse reads process who's soft limit on open files and how many it has
// open, from /proc (Linux).
func fdUse(who string) (limit, open int, err error) {
	raw, err := os.ReadFile("/proc/" + who + "/limits")
	if err != nil {
		return 0, 0, err
	}
	limit = -1
	for line := range strings.Lines(string(raw)) {
		rest, ok := strings.CutPrefix(line, "Max open files")
		if f := strings.Fields(rest); ok && len(f) > 0 {
			if f[0] == "unlimited" {
				limit = math.MaxInt32
			} else if limit, err = strconv.Atoi(f[0]); err != nil {
				return 0, 0, err
			}
		}
	}
	if limit < 0 {
		return 0, 0, fmt.Errorf("no \"Max open files\" in /proc/%s/limits", who)
	}
	fds, err := os.ReadDir("/proc/" + who + "/fd")
	if err != nil {
		return 0, 0, err
	}
	return limit, len(fds), nil
}
