package main

// paros: three `paros serve` processes (built from the parent module with
// `go build`), formed into a cell with the Machine.CellInit RPC, driven
// through the generated gRPC client. The writer claims its journal with the
// sans-IO client.Writer (SetLeader with a fresh uuid) and then pipelines
// fenced writes at consecutive positions.
//
// Why the pipeline does not use client.Writer for the writes themselves:
// client.WritesInFlightMax bounds one Writer at 256 writes in flight, and W2
// needs 1,000 in flight on one journal. The pipeline below judges each
// verdict by the same rules client.Writer documents (Accepted/Duplicate at
// the write's position: done; Refused under our own fence at or past the
// tail: an earlier write has not landed yet, resend identically once the
// predecessor settled or was resent; Refused naming another leader:
// superseded; no verdict: resend the identical request).

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/machine"
	"github.com/parosdb/paros/wire"
)

// parosJournals is how many journals cell init creates (its maximum): journal 0 carries
// W1, W2, W3 and W5; journal 1 carries the W4 tail; the W2 "several
// journals" variant writes all 64.
const parosJournals = 64

type parosSys struct {
	root  string // the parent module (where `go build` runs)
	bin   string
	addrs []string
	pprof []string
	procs []*child
	conns []*grpc.ClientConn
	jcs   []pb.JournalClient
	adm   []pb.AdminClient
	nodes map[uint64]int // node id -> member index
	jids  []journal.ID
	// refusals counts writes refused because an earlier write of the same
	// writer had not landed yet (reordered arrival); each cost a slot.
	refusals atomic.Int64
}

func newParos(root string) *parosSys { return &parosSys{root: root} }

func (s *parosSys) key() string   { return "paros" }
func (s *parosSys) title() string { return "paros" }
func (s *parosSys) durability() string {
	return "default: every batch is fsynced (one synced Pebble commit per group of batches) on a majority before the client is answered"
}
func (s *parosSys) members() []*child { return s.procs }

// build compiles `paros` from the parent module into dir.
func (s *parosSys) build(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		return err
	}
	s.bin = filepath.Join(dir, "bin", "paros")
	cmd := exec.Command("go", "build", "-o", s.bin, "github.com/parosdb/paros/cmd/paros")
	cmd.Dir = s.root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build paros: %v\n%s", err, out)
	}
	return nil
}

func (s *parosSys) start(ctx context.Context, dir string) error {
	if s.bin == "" {
		if err := s.build(dir); err != nil {
			return err
		}
	}
	ports, err := freePorts(6)
	if err != nil {
		return err
	}
	for i := range 3 {
		s.addrs = append(s.addrs, fmt.Sprintf("127.0.0.1:%d", ports[i]))
		s.pprof = append(s.pprof, fmt.Sprintf("127.0.0.1:%d", ports[3+i]))
	}
	for i := range 3 {
		data := filepath.Join(dir, fmt.Sprintf("paros-m%d", i+1))
		c, err := startChild(fmt.Sprintf("paros-m%d", i+1), data+".log", s.bin,
			"serve", "--data", data, "--listen", s.addrs[i], "--pprof", s.pprof[i])
		if err != nil {
			return err
		}
		s.procs = append(s.procs, c)
	}
	for _, a := range s.addrs {
		if err := waitTCP(a, 20*time.Second); err != nil {
			return err
		}
	}
	for _, a := range s.addrs {
		conn, err := grpc.NewClient(a, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		s.conns = append(s.conns, conn)
		s.jcs = append(s.jcs, pb.NewJournalClient(conn))
		s.adm = append(s.adm, pb.NewAdminClient(conn))
	}
	plan, err := s.cellInit(ctx)
	if err != nil {
		return err
	}
	for _, j := range plan.GetJournals() {
		s.jids = append(s.jids, wire.JournalIDFromPB(j))
	}
	s.nodes = map[uint64]int{}
	for i, m := range plan.GetMembers() {
		for k, a := range s.addrs {
			if m.GetAddr() == a {
				s.nodes[m.GetNodeId()] = k
			}
		}
		_ = i
	}
	// Wait until every journal has a consensus leader.
	for j := range s.jids {
		if _, err := s.leaderOf(ctx, j, 30*time.Second); err != nil {
			return err
		}
	}
	return nil
}

// cellInit forms the cell with the CellInit RPC (what `parosctl init` does).
func (s *parosSys) cellInit(ctx context.Context) (*pb.CellPlan, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	return machine.InitCell(ctx, s.addrs[0], s.addrs, parosJournals)
}

// leaderOf finds the member whose node leads consensus for journal j.
func (s *parosSys) leaderOf(ctx context.Context, j int, wait time.Duration) (int, error) {
	deadline := time.Now().Add(wait)
	for {
		for i, a := range s.adm {
			if !s.procs[i].alive() {
				continue
			}
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			r, err := a.Inspect(cctx, &pb.InspectRequest{Journal: wire.JournalIDToPB(s.jids[j])})
			cancel()
			if err == nil && r.GetRole() == "leader" {
				return i, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return -1, fmt.Errorf("paros: no leader for journal %d after %v", j, wait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *parosSys) leader(ctx context.Context) (int, error) {
	return s.leaderOf(ctx, 0, 10*time.Second)
}

func (s *parosSys) kill(i int) { s.procs[i].kill() }

func (s *parosSys) pprofAddr(i int) string { return s.pprof[i] }

func (s *parosSys) stop() {
	for _, c := range s.conns {
		c.Close()
	}
	for _, p := range s.procs {
		p.kill()
	}
}

func cryptoUUIDs() journal.LeaderUUID {
	var b [16]byte
	_, _ = crand.Read(b[:])
	return journal.LeaderUUID{Hi: binary.BigEndian.Uint64(b[:8]) | 1, Lo: binary.BigEndian.Uint64(b[8:])}
}

// parosWriter is one fenced writer on one journal with many writes in
// flight at consecutive positions.
type parosWriter struct {
	s       *parosSys
	id      journal.ID
	pid     *pb.JournalId
	fence   *pb.LeaderUuid
	attempt time.Duration
	leader  atomic.Int32 // member index believed to lead consensus

	mu   sync.Mutex
	next journal.Seq
	last *inflight
}

// inflight is the position bookkeeping of one write, so that its successor
// can send in order and resend after an ahead-of-tail refusal.
type inflight struct {
	pred    *inflight     // owned by the write's goroutine; dropped once settled
	sent    chan struct{} // closed at the first send
	mu      sync.Mutex
	settled bool
	lastAt  int64         // unix nanos of the latest send
	changed chan struct{} // closed and replaced at every send or settle
}

func newInflight(pred *inflight) *inflight {
	return &inflight{pred: pred, sent: make(chan struct{}), changed: make(chan struct{})}
}

func (f *inflight) mark(at int64, settled bool) {
	f.mu.Lock()
	if at > 0 {
		f.lastAt = at
	}
	if settled {
		f.settled = true
	}
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

// waitPred blocks until the predecessor settled or was sent again after
// `after` (so a resend goes out behind it).
func (f *inflight) waitPred(ctx context.Context, after int64) {
	p := f.pred
	if p == nil {
		return
	}
	for {
		p.mu.Lock()
		ok := p.settled || p.lastAt > after
		ch := p.changed
		p.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// newWriter claims journal 0.
func (s *parosSys) newWriter(ctx context.Context, _ int, attempt time.Duration) (writer, error) {
	return s.claim(ctx, 0, attempt)
}

func (s *parosSys) tailWriter(ctx context.Context) (writer, error) {
	return s.claim(ctx, 1, 2*time.Second)
}

// claim wins the journal's fence with the sans-IO client.Writer.
func (s *parosSys) claim(ctx context.Context, j int, attempt time.Duration) (*parosWriter, error) {
	id := s.jids[j]
	w := &parosWriter{s: s, id: id, pid: wire.JournalIDToPB(id), attempt: attempt}
	if l, err := s.leaderOf(ctx, j, 10*time.Second); err == nil {
		w.leader.Store(int32(l))
	}
	cw := client.NewWriter(id, cryptoUUIDs)
	req := cw.Claim()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		i := int(w.leader.Load())
		cctx, cancel := context.WithTimeout(ctx, attempt)
		r, err := s.jcs[i].SetLeader(cctx, &pb.SetLeaderRequest{Journal: w.pid, NewLeader: wire.UUIDToPB(req.New), OldLeader: wire.UUIDToPB(req.Old)})
		cancel()
		var rep journal.Reply
		if err == nil {
			rep = wire.VerdictFromPB(r.GetVerdict())
		}
		res := cw.AbsorbClaim(req, rep)
		switch res.Kind {
		case client.Won:
			w.fence = wire.UUIDToPB(cw.Fence())
			w.next = cw.NextSeq()
			return w, nil
		case client.Refused:
			req = cw.Claim() // another writer holds it (an earlier phase's): take over
		case client.Redirect:
			w.redirect(i, res.Hint)
		default:
			if err != nil {
				w.rotate(i)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil, fmt.Errorf("paros: could not claim journal %s", id)
}

func (w *parosWriter) rotate(from int) {
	n := len(w.s.jcs)
	for k := 1; k <= n; k++ {
		c := (from + k) % n
		if w.s.procs[c].alive() {
			w.leader.CompareAndSwap(int32(from), int32(c))
			return
		}
	}
}

func (w *parosWriter) redirect(from int, hint uint64) {
	if k, ok := w.s.nodes[hint]; ok && hint != 0 && w.s.procs[k].alive() {
		w.leader.CompareAndSwap(int32(from), int32(k))
		return
	}
	w.rotate(from)
}

var errSuperseded = errors.New("paros: writer superseded")

// write appends recs at the writer's next position and returns when a
// majority has it durably (Accepted or Duplicate). It returns the time the
// successful attempt was sent.
func (w *parosWriter) write(ctx context.Context, recs [][]byte) (time.Time, error) {
	w.mu.Lock()
	seq := w.next
	w.next += journal.Seq(len(recs))
	f := newInflight(w.last)
	w.last = f
	w.mu.Unlock()
	defer func() { f.pred = nil }()
	// Send in position order: wait until the predecessor's first send.
	if p := f.pred; p != nil {
		select {
		case <-p.sent:
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
	req := &pb.WriteRequest{Journal: w.pid, Leader: w.fence, Seq: uint64(seq), Records: recs}
	first := true
	for {
		if err := ctx.Err(); err != nil {
			return time.Time{}, err
		}
		i := int(w.leader.Load())
		at := time.Now()
		f.mark(at.UnixNano(), false)
		cctx, cancel := context.WithTimeout(ctx, w.attempt)
		r, err := w.s.sendWrite(cctx, i, req, func() {
			if first {
				close(f.sent)
				first = false
			}
		})
		cancel()
		if first { // the send itself failed
			close(f.sent)
			first = false
		}
		if err != nil {
			// No answer: ambiguous, resend the identical write (to another
			// server when this one is gone).
			if !w.s.procs[i].alive() || ctx.Err() == nil {
				w.rotate(i)
			}
			sleepCtx(ctx, 5*time.Millisecond)
			continue
		}
		rep := wire.VerdictFromPB(r.GetVerdict())
		out := rep.Outcome
		switch out.Kind {
		case journal.Accepted, journal.Duplicate:
			if out.Seq != seq || out.Count != uint64(len(recs)) {
				continue // a verdict that does not fit the call: resend
			}
			f.mark(0, true)
			return at, nil
		case journal.Refused:
			if out.View.Leader != wire.UUIDFromPB(w.fence) || seq < out.View.NextSeq {
				f.mark(0, true)
				return time.Time{}, errSuperseded
			}
			// Ahead of the tail: an earlier write has not landed yet.
			w.s.refusals.Add(1)
			f.waitPred(ctx, at.UnixNano())
			continue
		case journal.Truncated:
			f.mark(0, true)
			return time.Time{}, errors.New("paros: write below the floor")
		case journal.OutcomeInvalid:
			switch rep.NoVerdict {
			case journal.NotLeader:
				w.redirect(i, rep.LeaderHint)
				if rep.LeaderHint == 0 {
					sleepCtx(ctx, 10*time.Millisecond)
				}
			case journal.UnknownJournal:
				w.rotate(i)
			case journal.Busy:
				sleepCtx(ctx, time.Millisecond)
			case journal.TooLarge:
				return time.Time{}, errors.New("paros: write too large")
			default: // Lost, Unavailable: ambiguous, resend identically
				sleepCtx(ctx, time.Millisecond)
			}
			continue
		default: // Unheld and anything unexpected: ambiguous, resend
			w.rotate(i)
			continue
		}
	}
}

func (w *parosWriter) close() {}

var writeDesc = grpc.StreamDesc{StreamName: "Write", ServerStreams: false, ClientStreams: false}

// sendWrite is Journal.Write split in two: the request is queued on the
// connection (NewStream, SendMsg, CloseSend) before sent() is called, and
// only then does the caller wait for the reply. A writer calls sent() to let
// its next write go, so consecutive positions leave the client in order.
func (s *parosSys) sendWrite(ctx context.Context, i int, req *pb.WriteRequest, sent func()) (*pb.WriteReply, error) {
	cs, err := s.conns[i].NewStream(ctx, &writeDesc, pb.Journal_Write_FullMethodName)
	if err != nil {
		sent()
		return nil, err
	}
	err = cs.SendMsg(req)
	if err == nil {
		err = cs.CloseSend()
	}
	sent()
	if err != nil {
		return nil, err
	}
	out := new(pb.WriteReply)
	if err := cs.RecvMsg(out); err != nil {
		return nil, err
	}
	return out, nil
}

// subscribe follows the tail of journal 1 with the sans-IO client.Reader,
// long-polling reader-th member (readers spread over the members).
func (s *parosSys) subscribe(ctx context.Context, reader int, ready func(), fn func(rec []byte)) error {
	id := s.jids[1]
	member := reader % len(s.jcs)
	// Start at the current tail.
	var from journal.Seq
	for from == 0 {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		r, err := s.jcs[member].Read(cctx, &pb.ReadRequest{Journal: wire.JournalIDToPB(id), FromSeq: 1 << 62, Limit: 1})
		cancel()
		if err == nil && r.GetServed() {
			from = journal.Seq(r.GetState().GetNextSeq())
		} else if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	rd := client.NewReader(id, from)
	ready()
	for ctx.Err() == nil {
		req := rd.Request(journal.ReadRecordsMax, 500)
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		r, err := s.jcs[member].Read(cctx, &pb.ReadRequest{Journal: wire.JournalIDToPB(id), FromSeq: uint64(req.FromSeq), Limit: req.Limit, WaitMs: req.WaitMs})
		cancel()
		var rep journal.ReadReply
		if err == nil {
			rep = wire.ReadReplyFromPB(r)
		}
		out := rd.Absorb(req, rep)
		switch out.Kind {
		case client.ReadRecords:
			for _, b := range out.Records {
				fn(b)
			}
		case client.ReadGap:
			return fmt.Errorf("paros reader: unexpected gap %v", out)
		default:
			sleepCtx(ctx, 2*time.Millisecond)
		}
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// multiWriter spreads writes over several journals, each with its own
// fenced writer: goroutine-level round robin, so `inflight` writes in flight
// are inflight/len(ws) per journal.
type multiWriter struct {
	ws   []*parosWriter
	next atomic.Uint64
}

func (s *parosSys) newMultiWriter(ctx context.Context, journals int, attempt time.Duration) (writer, error) {
	m := &multiWriter{}
	for j := range min(journals, len(s.jids)) {
		w, err := s.claim(ctx, j, attempt)
		if err != nil {
			return nil, err
		}
		m.ws = append(m.ws, w)
	}
	return m, nil
}

func (m *multiWriter) write(ctx context.Context, recs [][]byte) (time.Time, error) {
	return m.ws[m.next.Add(1)%uint64(len(m.ws))].write(ctx, recs)
}

func (m *multiWriter) close() {}

// coalescingWriter is one fenced writer with one write in flight that
// carries every record queued by its callers meanwhile (at most
// journal.WriteRecordsMax records / WriteBytesMax bytes): group commit in
// the client.
type coalescingWriter struct {
	pw    *parosWriter
	mu    sync.Mutex
	queue []*queued
	wake  chan struct{}
	stop  chan struct{}
}

type queued struct {
	recs [][]byte
	done chan struct{}
	at   time.Time
	err  error
}

func (s *parosSys) newCoalescingWriter(ctx context.Context, attempt time.Duration) (writer, error) {
	pw, err := s.claim(ctx, 0, attempt)
	if err != nil {
		return nil, err
	}
	c := &coalescingWriter{pw: pw, wake: make(chan struct{}, 1), stop: make(chan struct{})}
	go c.flusher(ctx)
	return c, nil
}

func (c *coalescingWriter) write(ctx context.Context, recs [][]byte) (time.Time, error) {
	q := &queued{recs: recs, done: make(chan struct{})}
	c.mu.Lock()
	c.queue = append(c.queue, q)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	select {
	case <-q.done:
		return q.at, q.err
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
}

func (c *coalescingWriter) flusher(ctx context.Context) {
	for {
		select {
		case <-c.wake:
		case <-c.stop:
			return
		case <-ctx.Done():
			return
		}
		for {
			c.mu.Lock()
			var take []*queued
			var recs [][]byte
			n, bytes := 0, 0
			for len(c.queue) > 0 {
				q := c.queue[0]
				qb := len(q.recs) * recordBytes
				if n > 0 && (n+len(q.recs) > journal.WriteRecordsMax || bytes+qb > journal.WriteBytesMax) {
					break
				}
				take = append(take, q)
				recs = append(recs, q.recs...)
				n, bytes = n+len(q.recs), bytes+qb
				c.queue = c.queue[1:]
			}
			c.mu.Unlock()
			if len(take) == 0 {
				break
			}
			at, err := c.pw.write(ctx, recs)
			for _, q := range take {
				q.at, q.err = at, err
				close(q.done)
			}
		}
	}
}

func (c *coalescingWriter) close() { close(c.stop) }
