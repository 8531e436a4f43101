package main

// streamWriter is one fenced writer whose single-record writes travel over
// one client.WriteStream (the client library's) to the leader: each is
// still its own Write (its own slot, position check and verdict), but they
// share one HTTP/2 stream, and the messages of that stream, instead of a
// unary call each, and the server proposes them in stream
// order, so none is refused for overtaking another. A write whose verdict
// the stream cannot give (a broken stream, NotLeader, an ambiguous reply)
// is resent identically, at the same position, through the unary path.

import (
	"context"
	"sync"
	"time"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/wire"
)

type streamWriter struct {
	pw   *parosWriter
	conn *client.Conn
	j    *client.Journal

	mu      sync.Mutex // orders position assignment with Send
	ws      *client.WriteStream
	waiting map[uint64]chan journal.Reply
}

func (s *parosSys) newStreamWriter(ctx context.Context, attempt time.Duration) (writer, error) {
	pw, err := s.claim(ctx, 0, attempt)
	if err != nil {
		return nil, err
	}
	conn, err := client.Dial(s.addrs...)
	if err != nil {
		return nil, err
	}
	w := &streamWriter{pw: pw, conn: conn, j: conn.Journal(pw.id), waiting: map[uint64]chan journal.Reply{}}
	if err := w.open(ctx); err != nil {
		return nil, err
	}
	return w, nil
}

// open starts a client.WriteStream to the member believed to lead, and its
// receiver. Caller holds mu (or is the constructor).
func (w *streamWriter) open(ctx context.Context) error {
	ws, err := w.j.OpenWriteStream(ctx)
	if err != nil {
		return err
	}
	w.ws = ws
	go w.recv(ws)
	return nil
}

// recv hands every reply to the write waiting on its id; when the stream
// ends, every write still waiting gets a reply without a verdict (ambiguous).
func (w *streamWriter) recv(ws *client.WriteStream) {
	for {
		id, r, err := ws.Recv()
		w.mu.Lock()
		if err != nil {
			for id, ch := range w.waiting {
				ch <- journal.Reply{NoVerdict: journal.Lost}
				delete(w.waiting, id)
			}
			if w.ws == ws {
				w.ws = nil
			}
			w.mu.Unlock()
			return
		}
		if ch, ok := w.waiting[id]; ok {
			delete(w.waiting, id)
			ch <- r
		}
		w.mu.Unlock()
	}
}

func (w *streamWriter) write(ctx context.Context, recs [][]byte) (time.Time, error) {
	ch := make(chan journal.Reply, 1)
	pw := w.pw
	w.mu.Lock()
	if w.ws == nil {
		if err := w.open(ctx); err != nil {
			w.mu.Unlock()
			return w.fallback(ctx, 0, recs, false)
		}
	}
	pw.mu.Lock()
	seq := pw.next
	pw.next += journal.Seq(len(recs))
	pw.mu.Unlock()
	at := time.Now()
	id, err := w.ws.Send(journal.WriteRequest{Leader: wire.UUIDFromPB(pw.fence), Seq: seq, Records: recs})
	if err == nil {
		w.waiting[id] = ch
	} else {
		w.ws.Close()
		w.ws = nil
	}
	w.mu.Unlock()
	if err != nil {
		return w.fallback(ctx, seq, recs, true)
	}
	var rep journal.Reply
	select {
	case rep = <-ch:
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
	if done, err := pw.judge(rep, seq, int(pw.leader.Load())); done {
		return at, err
	}
	if rep.NoVerdict == journal.NotLeader {
		w.mu.Lock()
		if w.ws != nil {
			w.ws.Close()
			w.ws = nil
		}
		w.mu.Unlock()
	}
	return w.fallback(ctx, seq, recs, true)
}

// fallback resends the identical write at seq (a fresh position when
// assigned is false) through the unary path until it has a verdict.
func (w *streamWriter) fallback(ctx context.Context, seq journal.Seq, recs [][]byte, assigned bool) (time.Time, error) {
	pw := w.pw
	if !assigned {
		pw.mu.Lock()
		seq = pw.next
		pw.next += journal.Seq(len(recs))
		pw.mu.Unlock()
	}
	req := &pb.WriteRequest{Journal: pw.pid, Leader: pw.fence, Seq: uint64(seq), Records: recs}
	for ctx.Err() == nil {
		i := int(pw.leader.Load())
		at := time.Now()
		cctx, cancel := context.WithTimeout(ctx, pw.attempt)
		r, err := pw.s.jcs[i].Write(cctx, req)
		cancel()
		if err != nil {
			pw.rotate(i)
			sleepCtx(ctx, 5*time.Millisecond)
			continue
		}
		if done, err := pw.judge(wire.VerdictFromPB(r.GetVerdict()), seq, i); done {
			return at, err
		}
		sleepCtx(ctx, time.Millisecond) // ahead of the tail, or ambiguous: resend
	}
	return time.Time{}, ctx.Err()
}

func (w *streamWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ws != nil {
		w.ws.Close()
	}
	_ = w.conn.Close()
}

// judge reads the reply to the write at seq sent to member i: done with no
// error when it landed, done with errSuperseded when another writer holds
// the journal, not done otherwise (resend; a NotLeader moved the writer's
// idea of the leader).
func (pw *parosWriter) judge(rep journal.Reply, seq journal.Seq, i int) (bool, error) {
	switch o := rep.Outcome; {
	case (o.Kind == journal.Accepted || o.Kind == journal.Duplicate) && o.Seq == seq:
		return true, nil
	case o.Kind == journal.Refused && (o.View.Leader != wire.UUIDFromPB(pw.fence) || seq < o.View.NextSeq):
		return true, errSuperseded
	case rep.NoVerdict == journal.NotLeader:
		pw.redirect(i, rep.LeaderHint)
	}
	return false, nil
}
