package sim

import (
	"errors"
	"time"

	cl "github.com/parosdb/paros/client/sansio"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
)

// A single-writer owner's appends go through the client library's
// sans-IO Pipeline, the very scheduler the network Writer runs, over a
// simulated WriteStream: one ordered link to one server, as the network
// Writer opens to the leader it believes in. The Pipeline decides
// coalescing, the writes in flight, resends and their backoff; this file
// only moves its attempts, replies and timers, like the Writer's goroutine
// shell does.
//
// The stream keeps the order of the attempts sent on it (each arrives no
// sooner than the one before). It breaks — every attempt it carries is
// answered ambiguous at once, as the network Writer's stream transport
// answers them Lost — when an attempt gets no reply in time, and now and
// then on its own (a reset connection). A NotLeader answer drops it, and
// the next attempt opens a stream to the hinted leader.

// simStream is one simulated WriteStream of one owner.
type simStream struct {
	to     paxos.NodeID
	last   int64 // arrival time of the latest attempt sent on it
	calls  []*inflight
	broken bool
}

// appendPiped appends a few records through the owner's Pipeline and
// sends what it releases; toOther opens a new stream to a server that is
// not the believed leader (the stream is then redirected).
func (cs *clients) appendPiped(c *client, toOther bool) {
	w := cs.w
	if toOther && c.stream != nil && c.stream.to == c.hint {
		cs.breakStream(c, c.stream, false)
	}
	recs := cs.records(c)
	if id, _, err := c.p.Append(recs); err == nil {
		c.appends[id] = recs
	} else if !errors.Is(err, cl.ErrWindowFull) {
		cs.schedule(c, w.g.between(5*ms, 50*ms))
		return
	}
	if toOther && c.stream == nil {
		for _, n := range w.shape.Servers() {
			if n != c.hint {
				c.stream = &simStream{to: n}
				break
			}
		}
	}
	cs.pump(c)
	cs.schedule(c, w.g.between(0, 15*ms))
}

// pump sends every attempt the Pipeline releases, in order, each once the
// previous one left (at once: the simulated stream takes it).
func (cs *clients) pump(c *client) {
	if cs.stopped || c.p == nil {
		return
	}
	for {
		s, ok := c.p.Next()
		if !ok {
			break
		}
		cs.sendPiped(c, s)
		c.p.Left(s.ID)
	}
	cs.drainPipe(c)
}

// sendPiped sends one attempt on the owner's stream, opening one to the
// believed leader when there is none.
func (cs *clients) sendPiped(c *client, s cl.Send) {
	w := cs.w
	st := c.stream
	if st == nil {
		st = &simStream{to: cs.server(c)}
		c.stream = st
	}
	cs.nextID++
	call := host.Call{ID: cs.nextID, Kind: host.CallWrite, Write: s.Req}
	f := &inflight{c: c, call: call, op: opPipedWrite, sentAt: w.sched.now, to: st.to, write: s.ID, stream: st}
	cs.calls[call.ID] = f
	st.calls = append(st.calls, f)
	w.counts.Calls++
	if s.Attempt > 1 {
		w.audit.gate("the client pipeline resends a write identically")
	}
	at := max(w.sched.now+w.g.between(w.shape.LatencyMin, w.shape.LatencyMax), st.last)
	st.last = at
	to := st.to
	w.sched.at(at, lbl("piped c%d call %d → n%d", uint64(c.idx), uint64(call.ID), uint64(to)), func() { cs.arrive(to, call) })
	timeout := int64(200+w.g.intn(600)) * ms
	w.sched.after(timeout, lbl("timeout c%d piped %d", uint64(c.idx), uint64(call.ID)), func() {
		if !f.done {
			cs.breakStream(c, st, true)
		}
	})
	if w.g.pct(2) {
		w.sched.after(w.g.between(0, 50*ms), lbl("reset c%d stream", uint64(c.idx)), func() { cs.breakStream(c, st, true) })
	}
}

// breakStream ends st: every attempt it carries that has no answer yet is
// answered ambiguous (the Pipeline resends it identically).
func (cs *clients) breakStream(c *client, st *simStream, gate bool) {
	if st.broken {
		return
	}
	st.broken = true
	if c.stream == st {
		c.stream = nil
	}
	open := 0
	for _, f := range st.calls {
		if !f.done {
			open++
			cs.finishPiped(f, host.Response{}, true)
		}
	}
	if gate && open > 0 {
		cs.w.audit.gate("the client pipeline resends the writes of a broken stream")
	}
}

// finishPiped feeds one attempt's answer (or its absence) to the Pipeline
// and acts on what it decided.
func (cs *clients) finishPiped(f *inflight, r host.Response, timedOut bool) {
	c, w := f.c, cs.w
	f.done = true
	delete(cs.calls, f.call.ID)
	cs.record(f, r, timedOut)
	if r.Reply.LeaderHint != 0 {
		c.hint = paxos.NodeID(r.Reply.LeaderHint)
	}
	if !timedOut && r.Reply.NoVerdict == journal.NotLeader && c.stream == f.stream {
		c.stream = nil // the next attempt opens a stream to the hinted leader
	}
	before := c.p.Stats()
	stopped := c.p.Stopped()
	c.p.Absorb(f.write, replyOf(r, timedOut), true)
	after := c.p.Stats()
	if after.Writes > before.Writes {
		w.audit.gate("a write is accepted")
		if r.Reply.Outcome.Kind == journal.Duplicate {
			w.audit.gate("a retried write is acked from the log")
		}
		wr := f.call.Write
		c.acked = &journal.Entry{Leader: wr.Leader, Seq: wr.Seq, Records: wr.Records}
		if after.Appends-before.Appends > 1 {
			w.audit.gate("the client pipeline coalesces appends into one write")
		}
	}
	if after.RefusedWhileOut > before.RefusedWhileOut {
		w.audit.gate("the client pipeline holds a write refused while earlier ones are out")
	}
	if stopped == nil && errors.Is(c.p.Stopped(), cl.ErrSuperseded) {
		w.audit.gate("a superseded writer's write is refused")
	}
	cs.drainPipe(c)
	cs.pump(c)
}

// drainPipe hands the appends the Pipeline completed to the audit (one
// completed without error must hold its bytes at its position) and arms
// its timers.
func (cs *clients) drainPipe(c *client) {
	w := cs.w
	for _, done := range c.p.Completions() {
		c.reg.runDone(done.ID, done.Err)
		if recs, ok := c.appends[done.ID]; ok {
			delete(c.appends, done.ID)
			if done.Err == nil {
				w.audit.ack(c.j.ID, done.Seq, recs)
			}
		}
	}
	for _, t := range c.p.Timers() {
		d := max(int64(t.After/time.Microsecond), 1) * us
		w.sched.after(d, lbl("wake c%d write %d", uint64(c.idx), uint64(t.ID)), func() {
			c.p.Wake(t.ID)
			cs.pump(c)
		})
	}
}
