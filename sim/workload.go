package sim

import (
	"encoding/binary"
	"errors"
	"hash/fnv"

	cl "github.com/parosdb/paros/client/sansio"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/sim/lincheck"
)

// The chain workload (docs/design/simulation.md, "The workload: chain
// clients"): per journal one owner that claims the journal and writes, and
// readers that fold every record into a hash chain. The clients are the
// shipped client library's sans-IO types: a single-writer owner's writes go
// through sansio.Pipeline (the network Writer's scheduler) over a simulated
// WriteStream (pipe.go), a multi-writer owner uses sansio.Writer, and readers
// move a sansio.Reader. Every call goes through the same host.Call and reply
// types the server uses. Timeouts are ambiguous, never assumed aborted; a
// retry keeps identical bytes at the same position. Truncations are clamped
// below the cursor of every reader still folding (the trim fence); skimming
// readers are not part of the fence and read across the gaps truncations
// leave.

type op uint8

// The op alphabet (ids are stable).
const (
	opWrite op = iota
	opWriteToNonLeader
	opTruncate
	opRead
	opPause
	opDupWrite
	opSetLeader
	opLaggingRead
	opWrongMode
	opForgedRetry
	opPipedWrite
)

type role uint8

const (
	owner role = iota + 1
	reader
)

type client struct {
	idx  int
	j    JournalShape
	role role
	busy bool
	hint paxos.NodeID
	// owner state: the client library's own sans-IO types decide claims,
	// fences, positions, coalescing and resends, so the sweep proves the
	// library. A single-writer owner drives a Pipeline (pipe.go) over a
	// simulated stream; a multi-writer owner a Writer, one call at a time.
	wr      *cl.Writer
	p       *cl.Pipeline
	appends map[cl.AppendID][][]byte // the records of each append outstanding
	stream  *simStream
	retry   *host.Call // a call to resend identically (ambiguous, or redirected)
	retryOp op
	acked   *journal.Entry
	used    []journal.LeaderUUID
	writes  int
	// reader state: the library's sans-IO Reader keeps the cursor.
	rd      *cl.Reader
	folding bool // never skipped a gap: part of the trim fence (skimmers never are)
	// reg: a coordinator's or folder's part in the control plane
	// (registry.go); nil off the registry journal.
	reg     *regClient
	chain   uint64
	lagging journal.Seq
}

type inflight struct {
	c      *client
	call   host.Call
	op     op
	sentAt int64
	to     paxos.NodeID
	done   bool
	// A piped write's attempt and the stream that carries it.
	write  cl.WriteID
	stream *simStream
}

type clients struct {
	w       *World
	all     []*client
	calls   map[host.CallID]*inflight
	nextID  host.CallID
	stopped bool
	hist    map[journal.ID][]lincheck.Op
}

func newClients(w *World) *clients {
	cs := &clients{w: w, calls: map[host.CallID]*inflight{}, hist: map[journal.ID][]lincheck.Op{}}
	for _, j := range w.shape.Journals {
		if j.Idle {
			continue
		}
		cs.all = append(cs.all, cs.newOwner(j))
		if j.Rival {
			// A second owner contends for the fence: each supersedes the other.
			cs.all = append(cs.all, cs.newOwner(j))
		}
		for i := range j.Readers {
			// A third of the readers skim: they are not part of the trim
			// fence, so truncations overtake them and their Reader reports
			// the gap.
			c := &client{idx: len(cs.all), j: j, role: reader, rd: cl.NewReader(j.ID, 1),
				folding: !w.g.pct(33), lagging: 1}
			if j.Control {
				// The registry's folders: its truncations follow its
				// checkpoints, not their cursors; the last starts late.
				c.folding, c.reg = false, newRegClient(i == j.Readers-1)
				// Each is also a member applying the registry to itself
				// (registry_member.go).
				servers := w.shape.Servers()
				c.reg.member = newRegMember(uint64(servers[i%len(servers)]))
			}
			cs.all = append(cs.all, c)
		}
	}
	return cs
}

func (cs *clients) newOwner(j JournalShape) *client {
	c := &client{idx: len(cs.all), j: j, role: owner}
	if j.Mode == journal.ModeMulti {
		c.wr = cl.NewMultiWriter(j.ID)
		return c
	}
	w := cl.NewWriter(j.ID, func() journal.LeaderUUID {
		// Now and then a uuid that led before: the journal keeps no uuid
		// history, and the guarantees must hold when clients reinstate.
		if len(c.used) > 0 && cs.w.g.pct(10) {
			return c.used[cs.w.g.intn(len(c.used))]
		}
		u := cs.freshUUID()
		c.used = append(c.used, u)
		return u
	})
	g := cs.w.g
	c.appends = map[cl.AppendID][][]byte{}
	if j.Control {
		c.reg, c.rd = newRegClient(false), cl.NewReader(j.ID, 1)
	}
	c.p = cl.NewPipeline(w, cl.PipelineOptions{Window: 1 + g.intn(16), WritesOut: 1 + g.intn(4), NoCoalesce: g.pct(20)})
	return c
}

func (cs *clients) start() {
	for _, c := range cs.all {
		d := cs.w.g.between(0, 20*ms)
		if c.reg != nil && c.reg.late {
			d = cs.w.g.between(cs.w.chaosEnd*3/10, cs.w.chaosEnd*7/10)
		}
		if c.j.CreatedAtMs > 0 {
			d = c.j.CreatedAtMs*ms + cs.w.g.between(0, 2*createSpreadMs*ms)
		}
		cs.schedule(c, d)
	}
}

func (cs *clients) schedule(c *client, d int64) {
	cs.w.sched.after(d, lbl("client c%d", uint64(c.idx)), func() {
		if !cs.stopped && !c.busy {
			cs.step(c)
		}
	})
}

// server picks the node a call goes to: the hint, else any node.
func (cs *clients) server(c *client) paxos.NodeID {
	if c.hint != 0 && !cs.w.g.pct(10) {
		return c.hint
	}
	nodes := cs.w.shape.Servers()
	return nodes[cs.w.g.intn(len(nodes))]
}

func (cs *clients) freshUUID() journal.LeaderUUID {
	return journal.LeaderUUID{Hi: cs.w.g.u64() | 1, Lo: cs.w.g.u64()}
}

func (cs *clients) records(c *client) [][]byte {
	if c.reg != nil {
		return cs.regRecords(c)
	}
	n := 1 + cs.w.g.intn(3)
	out := make([][]byte, n)
	for i := range out {
		b := make([]byte, 8+cs.w.g.intn(24))
		binary.LittleEndian.PutUint64(b, cs.w.g.u64())
		out[i] = b
	}
	c.writes++
	return out
}

// step chooses and sends the client's next call.
func (cs *clients) step(c *client) {
	g := cs.w.g
	if c.role == reader {
		if c.reg != nil && c.reg.member != nil && c.reg.member.down {
			cs.memberRestart(c)
		}
		if g.pct(15) {
			cs.send(c, opLaggingRead, host.Call{Kind: host.CallRead, Read: journal.ReadRequest{Journal: c.j.ID,
				FromSeq: c.lagging, Limit: uint32(g.intn(8)), WaitMs: 0}}, cs.readServer(c))
			return
		}
		cs.send(c, opRead, host.Call{Kind: host.CallRead, Read: c.rd.Request(uint32(g.intn(8)), uint32(g.intn(150)))}, cs.readServer(c))
		return
	}
	if c.retry != nil {
		call, o := *c.retry, c.retryOp
		c.retry = nil
		cs.send(c, o, call, cs.server(c))
		return
	}
	single := c.j.Mode == journal.ModeSingle
	if single && !c.p.Holding() && errors.Is(c.p.Stopped(), cl.ErrJournalDeleted) {
		cs.deletedStep(c)
		return
	}
	if single && !c.p.Holding() {
		cs.claim(c)
		return
	}
	if c.reg != nil {
		cs.coordStep(c)
		return
	}
	switch r := g.intn(100); {
	case r < 68 && single:
		// Appends through the Pipeline: it coalesces, pipelines and resends
		// them over the owner's stream (pipe.go); the owner is not busy.
		cs.appendPiped(c, r >= 60)
	case r < 68:
		// A write through the Writer, sometimes sent to a node that does
		// not lead (the Writer follows the redirect).
		req, err := c.wr.Next(cs.records(c))
		if err != nil {
			cs.schedule(c, g.between(5*ms, 50*ms))
			return
		}
		call := host.Call{Kind: host.CallWrite, Write: req}
		o, to := opWrite, cs.server(c)
		if r >= 60 {
			o = opWriteToNonLeader
			for _, n := range cs.w.shape.Servers() {
				if n != c.hint {
					to = n
					break
				}
			}
		}
		cs.send(c, o, call, to)
	case r < 76 && c.acked != nil && single:
		e := *c.acked
		call := host.Call{Kind: host.CallWrite, Write: journal.WriteRequest{Journal: c.j.ID, Leader: e.Leader, Seq: e.Seq, Records: e.Records}}
		cs.send(c, opDupWrite, call, cs.server(c))
	case r < 79 && c.acked != nil && single:
		// Same uuid, same position, other bytes: never a Duplicate.
		e := *c.acked
		call := host.Call{Kind: host.CallWrite, Write: journal.WriteRequest{Journal: c.j.ID, Leader: e.Leader, Seq: e.Seq, Records: cs.records(c)}}
		cs.send(c, opForgedRetry, call, cs.server(c))
	case r < 86:
		var req journal.TruncateRequest
		var err error
		if single {
			req, err = c.p.Truncate(cs.fence(c))
		} else {
			req, err = c.wr.Truncate(cs.fence(c))
		}
		if err != nil {
			cs.schedule(c, g.between(5*ms, 50*ms))
			return
		}
		cs.send(c, opTruncate, host.Call{Kind: host.CallTruncate, Truncate: req}, cs.server(c))
	case r < 92 && single:
		cs.claim(c)
	case r < 95 && !single:
		call := host.Call{Kind: host.CallSetLeader, SetLeader: journal.SetLeaderRequest{Journal: c.j.ID, New: cs.freshUUID()}}
		cs.send(c, opWrongMode, call, cs.server(c))
	default:
		cs.schedule(c, g.between(10*ms, 100*ms)) // pause
	}
}

// claim asks for the fence through the Writer: a claim in flight is resent
// identically (it may have won), else a new one.
func (cs *clients) claim(c *client) {
	req := c.p.BeginClaim()
	cs.drainPipe(c)
	cs.send(c, opSetLeader, host.Call{Kind: host.CallSetLeader, SetLeader: req}, cs.server(c))
}

// fence is the highest position a truncation may name: below the cursor of
// every reader still folding.
func (cs *clients) fence(c *client) journal.Seq {
	up := journal.Seq(1 << 62)
	if c.j.Mode == journal.ModeSingle {
		up = c.p.NextSeq()
	}
	for _, r := range cs.all {
		if r.role == reader && r.j.ID == c.j.ID && r.folding {
			up = min(up, r.rd.Cursor())
		}
	}
	if up >= 1<<62 {
		up = 1 // no folding reader to bound it: keep everything
	}
	if up > 1 {
		up = 1 + journal.Seq(cs.w.g.intn(int(up)))
	}
	return up
}

func (cs *clients) send(c *client, o op, call host.Call, to paxos.NodeID) {
	w := cs.w
	cs.nextID++
	call.ID = cs.nextID
	f := &inflight{c: c, call: call, op: o, sentAt: w.sched.now, to: to}
	cs.calls[call.ID] = f
	c.busy = true
	w.counts.Calls++
	d := w.g.between(w.shape.LatencyMin, w.shape.LatencyMax)
	w.sched.after(d, lbl("call c%d %d → n%d", uint64(c.idx), uint64(o), uint64(to)), func() { cs.arrive(to, call) })
	timeout := int64(200+w.g.intn(600)) * ms
	w.sched.after(timeout, lbl("timeout c%d call %d", uint64(c.idx), uint64(call.ID)), func() {
		if !f.done {
			cs.finish(f, host.Response{}, true)
		}
	})
}

// arrive hands a call to its server. A paused server's socket holds the
// call until it wakes (it is then handled late, perhaps by a stale leader).
func (cs *clients) arrive(to paxos.NodeID, call host.Call) {
	w := cs.w
	p := w.proc(to)
	if !p.up {
		return
	}
	if w.sched.now < p.pausedUntil {
		w.sched.at(p.pausedUntil, lbl("call %d → n%d (after pause)", uint64(call.ID), uint64(to)), func() { cs.arrive(to, call) })
		return
	}
	w.holdCall(call)
	if w.shape.CallBatchUs == 0 {
		p.h.OnCall(call)
		p.after()
		return
	}
	p.callInbox = append(p.callInbox, call)
	if p.callDrain {
		return
	}
	p.callDrain = true
	inc := p.inc
	w.sched.after(w.shape.CallBatchUs*us, lbl("calls → n%d", uint64(to)), func() {
		if p.inc != inc {
			return // the process died holding them: they were lost (crash resets the inbox)
		}
		batch := p.callInbox
		p.callInbox, p.callDrain = nil, false
		if !p.up || len(batch) == 0 {
			return
		}
		w.counts.CallBatches++
		if len(batch) > 1 {
			w.counts.CallsBatched += uint64(len(batch))
		}
		p.h.OnCalls(batch)
		p.after()
	})
}

// reply routes a server's answer back to its client after network latency.
func (cs *clients) reply(from *proc, id host.CallID, r host.Response) {
	w := cs.w
	w.sched.after(w.g.between(w.shape.LatencyMin, w.shape.LatencyMax), lbl("reply n%d call %d", uint64(from.id), uint64(id)), func() {
		if f, ok := cs.calls[id]; ok && !f.done {
			if f.op == opPipedWrite {
				cs.finishPiped(f, r, false)
				return
			}
			cs.finish(f, r, false)
		}
	})
}

// finish records the call in the history and folds its verdict into the
// client's state.
func (cs *clients) finish(f *inflight, r host.Response, timedOut bool) {
	w := cs.w
	f.done = true
	delete(cs.calls, f.call.ID)
	c := f.c
	c.busy = false
	cs.record(f, r, timedOut)
	if r.Reply.LeaderHint != 0 {
		c.hint = paxos.NodeID(r.Reply.LeaderHint)
	}
	think := w.g.between(0, 15*ms)
	switch f.call.Kind {
	case host.CallRead:
		cs.finishRead(f, r, timedOut)
	case host.CallWrite:
		cs.finishWrite(f, r, timedOut)
	case host.CallSetLeader:
		cs.finishSetLeader(f, r, timedOut)
	case host.CallTruncate:
		var res cl.TruncateResult
		if c.p != nil {
			res = c.p.AbsorbTruncate(f.call.Truncate, replyOf(r, timedOut))
			cs.drainPipe(c)
		} else {
			res = c.wr.AbsorbTruncate(f.call.Truncate, replyOf(r, timedOut))
		}
		switch res.Kind {
		case cl.ResultTrimmed:
			w.audit.gate("a truncation is decided")
		case cl.ResultRetry, cl.ResultRedirect, cl.ResultBusy:
			cs.retryLater(c, f)
		}
	}
	cs.schedule(c, think)
}

// replyOf is what the Writer is told: the zero Reply when the call got no
// answer (a timeout is ambiguous).
func replyOf(r host.Response, timedOut bool) journal.Reply {
	if timedOut {
		return journal.Reply{}
	}
	return r.Reply
}

// retryLater resends the identical call: after an ambiguous outcome, a
// redirect or a busy leader.
func (cs *clients) retryLater(c *client, f *inflight) {
	call := f.call
	c.retry, c.retryOp = &call, f.op
	if c.retryOp == opWriteToNonLeader {
		c.retryOp = opWrite
	}
}

func (cs *clients) finishWrite(f *inflight, r host.Response, timedOut bool) {
	c, w := f.c, cs.w
	rep := r.Reply
	out := rep.Outcome
	ambiguous := timedOut || rep.Ambiguous()
	e := journal.Entry{Leader: f.call.Write.Leader, Seq: f.call.Write.Seq, Records: f.call.Write.Records}
	if f.op == opForgedRetry {
		if !ambiguous && out.Kind == journal.Duplicate {
			w.audit.violation("journal: a retry is acked only with the bytes accepted there",
				"c%d wrote other bytes at %d and got %s", c.idx, e.Seq, out)
		}
		if !ambiguous && out.Kind == journal.Refused {
			w.audit.gate("a write of other bytes at a taken position is refused")
		}
		return
	}
	if f.op == opDupWrite {
		switch {
		case ambiguous:
		case out.Kind == journal.Duplicate:
			w.audit.gate("a retried write is acked from the log")
		case out.Kind == journal.Accepted || out.Kind == journal.Refused:
			w.audit.violation("journal: a retry is acked only with the bytes accepted there",
				"c%d retried the write acked at %d and got %s", c.idx, e.Seq, out)
		}
		return
	}
	// A multi-writer owner's write (single-writer owners pipe theirs).
	res := c.wr.AbsorbWrite(f.call.Write, replyOf(r, timedOut))
	switch res.Kind {
	case cl.ResultWritten, cl.ResultDuplicate:
		w.audit.gate("a write is accepted")
		w.audit.ack(c.j.ID, res.Seq, f.call.Write.Records)
	case cl.ResultRetry, cl.ResultRedirect, cl.ResultBusy, cl.ResultRefused:
		cs.retryLater(c, f)
	case cl.ResultWrongMode:
		w.audit.violation("journal: a multi-writer write is accepted unfenced", "c%d got wrong-mode for %s", c.idx, journal.Write(e))
	}
}

func (cs *clients) finishSetLeader(f *inflight, r host.Response, timedOut bool) {
	c, w := f.c, cs.w
	out := r.Reply.Outcome
	switch f.op {
	case opSeal:
		cs.finishSeal(f, r, timedOut)
		return
	case opUnseal:
		cs.finishUnseal(f, r, timedOut)
		return
	}
	if f.op == opWrongMode {
		if !timedOut && !r.Reply.Ambiguous() && r.Reply.NoVerdict == journal.VerdictGiven && out.Kind != journal.WrongMode {
			w.audit.violation("journal: a multi-writer journal refuses every uuid-bearing call", "c%d SetLeader on a multi-writer journal got %s", c.idx, out)
		}
		return
	}
	res := c.p.AbsorbClaim(f.call.SetLeader, replyOf(r, timedOut))
	cs.drainPipe(c)
	switch res.Kind {
	case cl.ResultWon:
		w.audit.gate("a SetLeader wins")
		if res.Earlier {
			w.audit.gate("an ambiguous claim is found to have won")
		}
		if c.reg != nil {
			c.reg.booted = false // a new term bootstraps again (a no-op if done)
		}
		cs.pump(c)
	case cl.ResultDeleted:
		w.audit.gate("a writer learns its journal was sealed")
	case cl.ResultRetry, cl.ResultRedirect, cl.ResultBusy:
		cs.retryLater(c, f)
	}
}

func (cs *clients) finishRead(f *inflight, r host.Response, timedOut bool) {
	c, w := f.c, cs.w
	rr := r.Read
	if timedOut {
		rr = journal.ReadReply{} // unserved: the Reader does not move
	}
	from := f.call.Read.FromSeq
	cs.replicaServed(f, rr)
	if f.op == opLaggingRead {
		if !rr.Served {
			return
		}
		if rr.BelowFloor {
			w.audit.gate("journal read: a read below the trim point is refused")
			c.lagging = max(c.lagging, rr.View.FirstSeq)
			return
		}
		for i, rec := range rr.Records {
			w.audit.record(c.j.ID, from+journal.Seq(i), rec)
		}
		c.lagging = from + journal.Seq(len(rr.Records))
		return
	}
	before := c.rd.Cursor()
	out := c.rd.Absorb(f.call.Read, rr)
	switch out.Kind {
	case cl.ReadGap:
		w.audit.gate("journal read: a read below the trim point is refused")
		w.audit.gate("a client Reader reports a gap and reads on after it")
		if c.folding {
			w.audit.violation("chain: a client's fold is never trimmed out from under it",
				"c%d folding at %d met first_seq %d", c.idx, from, rr.View.FirstSeq)
		}
		// A gap: reported, never silent; the reader stops folding.
		c.folding = false
	case cl.ReadRecords:
		for i, rec := range out.Records {
			w.audit.record(c.j.ID, from+journal.Seq(i), rec)
			h := fnv.New64a()
			var b [16]byte
			binary.LittleEndian.PutUint64(b[:], c.chain)
			binary.LittleEndian.PutUint64(b[8:], uint64(from)+uint64(i))
			h.Write(b[:])
			h.Write(rec)
			c.chain = h.Sum64()
			if c.folding {
				w.audit.chainAt(c, from+journal.Seq(i), c.chain)
			}
		}
		c.lagging = max(c.lagging, 1)
	}
	if c.reg != nil {
		cs.regFold(c, out)
	}
	if c.rd.Cursor() < before {
		w.audit.violation("chain: a client's journal-read cursor never moves backwards", "c%d %d -> %d", c.idx, before, c.rd.Cursor())
	}
}
