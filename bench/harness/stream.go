package main

// streamWriter is one fenced writer whose single-record writes travel over
// one Journal.WriteStream to the leader: each is still its own Write (its
// own slot, position check and verdict), but they share one HTTP/2 stream
// instead of a unary call each, and the server proposes them in stream
// order, so none is refused for overtaking another. A write whose verdict
// the stream cannot give (a broken stream, NotLeader, an ambiguous reply)
// is resent identically, at the same position, through the unary path.

import (
	"context"
	"sync"
	"time"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/wire"
)

type streamWriter struct {
	pw *parosWriter

	mu      sync.Mutex // orders position assignment with Send
	stream  pb.Journal_WriteStreamClient
	cancel  context.CancelFunc
	nextID  uint64
	waiting map[uint64]chan *pb.WriteReply
}

func (s *parosSys) newStreamWriter(ctx context.Context, attempt time.Duration) (writer, error) {
	pw, err := s.claim(ctx, 0, attempt)
	if err != nil {
		return nil, err
	}
	w := &streamWriter{pw: pw, waiting: map[uint64]chan *pb.WriteReply{}}
	if err := w.open(ctx); err != nil {
		return nil, err
	}
	return w, nil
}

// open starts a stream to the member believed to lead and its receiver.
func (w *streamWriter) open(ctx context.Context) error {
	sctx, cancel := context.WithCancel(ctx)
	st, err := w.pw.s.jcs[int(w.pw.leader.Load())].WriteStream(sctx)
	if err != nil {
		cancel()
		return err
	}
	w.stream, w.cancel = st, cancel
	go w.recv(st)
	return nil
}

// recv hands every reply to the write waiting on its id; when the stream
// breaks, every waiting write gets nil (ambiguous).
func (w *streamWriter) recv(st pb.Journal_WriteStreamClient) {
	for {
		m, err := st.Recv()
		w.mu.Lock()
		if err != nil {
			for id, ch := range w.waiting {
				ch <- nil
				delete(w.waiting, id)
			}
			if w.stream == st {
				w.stream = nil
			}
			w.mu.Unlock()
			return
		}
		if ch, ok := w.waiting[m.GetId()]; ok {
			delete(w.waiting, m.GetId())
			ch <- m.GetReply()
		}
		w.mu.Unlock()
	}
}

func (w *streamWriter) write(ctx context.Context, recs [][]byte) (time.Time, error) {
	ch := make(chan *pb.WriteReply, 1)
	w.mu.Lock()
	if w.stream == nil {
		if err := w.open(ctx); err != nil {
			w.mu.Unlock()
			return w.fallback(ctx, 0, recs, false)
		}
	}
	pw := w.pw
	pw.mu.Lock()
	seq := pw.next
	pw.next += journal.Seq(len(recs))
	pw.mu.Unlock()
	w.nextID++
	id := w.nextID
	w.waiting[id] = ch
	at := time.Now()
	err := w.stream.Send(&pb.WriteStreamRequest{Id: id, Write: &pb.WriteRequest{Journal: pw.pid, Leader: pw.fence, Seq: uint64(seq), Records: recs}})
	if err != nil {
		delete(w.waiting, id)
		w.stream = nil
		w.cancel()
	}
	w.mu.Unlock()
	if err != nil {
		return w.fallback(ctx, seq, recs, true)
	}
	var r *pb.WriteReply
	select {
	case r = <-ch:
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
	rep := wire.VerdictFromPB(r.GetVerdict())
	switch o := rep.Outcome; {
	case (o.Kind == journal.Accepted || o.Kind == journal.Duplicate) && o.Seq == seq:
		return at, nil
	case o.Kind == journal.Refused && (o.View.Leader != wire.UUIDFromPB(pw.fence) || seq < o.View.NextSeq):
		return time.Time{}, errSuperseded
	case rep.NoVerdict == journal.NotLeader:
		pw.redirect(int(pw.leader.Load()), rep.LeaderHint)
		w.mu.Lock()
		if w.stream != nil {
			w.stream, _ = nil, w.stream.CloseSend()
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
		rep := wire.VerdictFromPB(r.GetVerdict())
		switch o := rep.Outcome; {
		case (o.Kind == journal.Accepted || o.Kind == journal.Duplicate) && o.Seq == seq:
			return at, nil
		case o.Kind == journal.Refused && (o.View.Leader != wire.UUIDFromPB(pw.fence) || seq < o.View.NextSeq):
			return time.Time{}, errSuperseded
		case rep.NoVerdict == journal.NotLeader:
			pw.redirect(i, rep.LeaderHint)
		}
		sleepCtx(ctx, time.Millisecond) // ahead of the tail, or ambiguous: resend
	}
	return time.Time{}, ctx.Err()
}

func (w *streamWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cancel != nil {
		w.cancel()
	}
}
