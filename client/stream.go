package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/wire"
)

// WriteStream is a pipelined write session with one server: Send hands it
// Writes, Recv returns their replies in whatever order the verdicts land,
// each named by the id Send returned. The server proposes the Writes in
// the order they were sent, so a fenced writer's pipelined writes at
// consecutive positions never overtake one another (unary Writes in flight
// together may, and the overtaking one is refused and must be resent).
//
// It does not follow redirects: a reply NotLeader means this server does
// not lead; the handle learns the hinted leader (Conn remembers it), so
// closing the stream and opening another sends the next ones there. The
// replies mean what Journal.Write's mean; in addition, when the stream
// breaks (Recv returns an error), every Write sent and not answered is
// ambiguous: resend it identically, on a new stream or with Write.
//
// Send is for one goroutine and Recv for one (they may be different).
type WriteStream struct {
	j      *Journal
	stream pb.Journal_WriteStreamClient
	cancel context.CancelFunc
	server int

	mu     sync.Mutex
	nextID uint64
}

// ErrStreamBroken wraps the transport error of a WriteStream that ended
// with Writes unanswered: they are ambiguous.
var ErrStreamBroken = fmt.Errorf("paros/client: write stream broken: %w", ErrAmbiguous)

// OpenWriteStream opens a WriteStream with the server believed to lead
// the journal (the first server if none is known yet). The stream lives
// until CloseSend has been answered in full, Close, or ctx ends.
func (j *Journal) OpenWriteStream(ctx context.Context) (*WriteStream, error) {
	i := j.c.leaderOf(j.id)
	if i < 0 || i >= len(j.c.servers) {
		i = 0
	}
	sctx, cancel := context.WithCancel(ctx)
	st, err := j.c.servers[i].journal.WriteStream(sctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("paros/client: open write stream to %s: %w", j.c.servers[i].addr, err)
	}
	return &WriteStream{j: j, stream: st, cancel: cancel, server: i}, nil
}

// Server is the address the stream writes to.
func (ws *WriteStream) Server() string { return ws.j.c.servers[ws.server].addr }

// Send queues one Write and returns its id. An error means the stream is
// broken; whether this Write was received is unknown (ambiguous).
func (ws *WriteStream) Send(req journal.WriteRequest) (uint64, error) {
	req.Journal = ws.j.check(req.Journal)
	ws.mu.Lock()
	ws.nextID++
	id := ws.nextID
	ws.mu.Unlock()
	in := &pb.WriteStreamRequest{Id: id, Write: &pb.WriteRequest{Journal: wire.JournalIDToPB(req.Journal),
		Leader: wire.UUIDToPB(req.Leader), Seq: uint64(req.Seq), Records: req.Records}}
	if err := ws.stream.Send(in); err != nil {
		return id, fmt.Errorf("%w: send: %w", ErrStreamBroken, err)
	}
	return id, nil
}

// Recv returns the next reply and the id of the Write it answers. After
// CloseSend it returns ErrStreamDone once every Write was answered; any
// other error means the stream broke and every Write not yet answered is
// ambiguous (ErrStreamBroken).
func (ws *WriteStream) Recv() (uint64, journal.Reply, error) {
	m, err := ws.stream.Recv()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return 0, journal.Reply{}, ErrStreamDone
		}
		return 0, journal.Reply{}, fmt.Errorf("%w: %w", ErrStreamBroken, err)
	}
	r := wire.VerdictFromPB(m.GetReply().GetVerdict())
	switch {
	case r.Outcome.Kind != journal.OutcomeInvalid:
		ws.j.c.setLeader(ws.j.id, ws.server)
	case r.NoVerdict == journal.NotLeader && r.LeaderHint != 0:
		if h := ws.j.c.knownNode(r.LeaderHint); h >= 0 {
			ws.j.c.setLeader(ws.j.id, h)
		}
	}
	return m.GetId(), r, nil
}

// ErrStreamDone: every Write sent before CloseSend was answered.
var ErrStreamDone = errors.New("paros/client: write stream done")

// CloseSend says no more Writes follow; Recv then drains the replies.
func (ws *WriteStream) CloseSend() error { return ws.stream.CloseSend() }

// Close ends the stream at once: Writes not yet answered are ambiguous.
func (ws *WriteStream) Close() { ws.cancel() }
