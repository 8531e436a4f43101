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

// streamWritesPerMessageMax bounds the Writes one request message carries
// (the server's window, 4,096, bounds what a message may hold).
const streamWritesPerMessageMax = 1024

// WriteStream is a pipelined write session with one server: Send queues
// Writes, Recv returns their replies in whatever order the verdicts land,
// each named by the id Send returned. One goroutine of the stream sends
// whatever has been queued as one message (at most 1,024 Writes), in Send
// order, and the server proposes the Writes in that order, so a fenced
// writer's pipelined writes at consecutive positions never overtake one
// another (unary Writes in flight together may, and the overtaking one is
// refused and must be resent). Each Write is still its own slot, position
// check and verdict: a message shares a frame, never a slot.
//
// It does not follow redirects: a reply NotLeader means this server does
// not lead; the handle learns the hinted leader (the Client remembers it), so
// closing the stream and opening another sends the next ones there. The
// replies mean what Journal.Write's mean; in addition, when the stream
// breaks (Send or Recv returns ErrStreamBroken), every Write sent and not
// answered is ambiguous: resend it identically, on a new stream or with
// Write.
//
// Send may be called from many goroutines (ids and order follow the calls'
// order); Recv from one.
type WriteStream struct {
	j      *Journal
	stream pb.Journal_WriteStreamClient
	cancel context.CancelFunc
	server int
	wake   chan struct{}
	done   chan struct{} // closed when the sender goroutine ends

	mu      sync.Mutex
	nextID  uint64
	queue   []*pb.StreamWrite
	closing bool
	sendErr error

	// answers buffers the last reply message's answers (Recv's goroutine).
	answers []*pb.StreamAnswer
}

// ErrStreamBroken wraps the transport error of a WriteStream that ended
// with Writes unanswered: they are ambiguous.
var ErrStreamBroken = fmt.Errorf("paros/client: write stream broken: %w", ErrAmbiguous)

// ErrStreamDone: every Write sent before CloseSend was answered.
var ErrStreamDone = errors.New("paros/client: write stream done")

// OpenWriteStream opens a WriteStream with the server believed to lead
// the journal. When no leader is known yet it asks the servers
// (Admin.Inspect) which one leads, or whom they name, and falls back to
// the first server. The stream lives until CloseSend has been answered in
// full, Close, or ctx ends.
func (j *Journal) OpenWriteStream(ctx context.Context) (*WriteStream, error) {
	i := j.whereToWrite(ctx)
	sctx, cancel := context.WithCancel(ctx)
	st, err := j.c.list()[i].journal.WriteStream(sctx)
	if err != nil {
		cancel()
		j.c.forgetLeader(j.id, i) // the next open asks who leads
		return nil, fmt.Errorf("paros/client: open write stream to %s: %w", j.c.list()[i].addr, err)
	}
	ws := &WriteStream{j: j, stream: st, cancel: cancel, server: i, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go ws.sender(sctx)
	return ws, nil
}

// whereToWrite is the server a write of this journal goes to: the one
// believed to lead; else the machine a NotLeader named that this Client
// did not dial yet (a reconfiguration or an admission added it), dialled
// by the address the cell lists for it; else whoever findLeader finds.
// The hint matters to a caller that may write the journal but not Inspect
// it (a peer machine's certificate on the control journals): its
// findLeader learns nothing, and without the hint it would try the
// machines it knows forever while the journal lives on others.
func (j *Journal) whereToWrite(ctx context.Context) int {
	if i := j.c.leaderOf(j.id); i >= 0 && i < len(j.c.list()) {
		return i
	}
	if h := j.c.takeHint(j.id); h != 0 {
		if i := j.c.indexOfNode(ctx, h); i >= 0 {
			j.c.setLeader(j.id, i)
			return i
		}
	}
	return j.findLeader(ctx)
}

// findLeader asks each server in turn whether it leads the journal (or
// whom it names) and remembers the answer. When none says (an election is
// on), it returns the first node that answered at all, else the next one
// after the last it tried, so a dead server is not asked forever. A
// replica machine is asked whom it names, and never returned while the
// Client has a node to write to (it only redirects writes).
func (j *Journal) findLeader(ctx context.Context) int {
	alive := -1
	for i := range j.c.list() {
		actx, cancel := context.WithTimeout(ctx, learnTimeout)
		r, err := j.c.inspectAt(actx, i, j.id)
		cancel()
		if err != nil {
			continue
		}
		if alive < 0 && !j.c.isReplica(i) {
			alive = i
		}
		if r.GetRole() == "leader" {
			j.c.setLeader(j.id, i)
			return i
		}
		if h := j.c.indexOfNode(ctx, r.GetLeaderHint()); r.GetLeaderHint() != 0 && h >= 0 {
			j.c.setLeader(j.id, h)
			return h
		}
	}
	if alive >= 0 {
		return alive
	}
	if nodes := j.c.writeOrder(j.id); len(nodes) > 0 {
		j.c.mu.Lock()
		j.c.rotate++
		i := nodes[j.c.rotate%len(nodes)]
		j.c.mu.Unlock()
		return i
	}
	j.c.mu.Lock()
	j.c.rotate++
	i := j.c.rotate % len(j.c.list())
	j.c.mu.Unlock()
	return i
}

// Server is the address the stream writes to.
func (ws *WriteStream) Server() string { return ws.j.c.list()[ws.server].addr }

// Send queues one Write and returns its id. An error means the stream is
// broken (ErrStreamBroken): this Write was not sent, earlier ones may or
// may not have been.
func (ws *WriteStream) Send(req journal.WriteRequest) (uint64, error) {
	req.Journal = ws.j.check(req.Journal)
	in := &pb.StreamWrite{Write: &pb.WriteRequest{Journal: wire.JournalIDToPB(req.Journal),
		Leader: wire.UUIDToPB(req.Leader), Seq: uint64(req.Seq), Records: req.Records}}
	ws.mu.Lock()
	if ws.sendErr != nil || ws.closing {
		err := ws.sendErr
		ws.mu.Unlock()
		if err == nil {
			err = fmt.Errorf("%w: send after CloseSend", ErrStreamBroken)
		}
		return 0, err
	}
	ws.nextID++
	in.Id = ws.nextID
	ws.queue = append(ws.queue, in)
	ws.mu.Unlock()
	select {
	case ws.wake <- struct{}{}:
	default:
	}
	return in.Id, nil
}

// sender sends what is queued, one message per wake-up (up to
// streamWritesPerMessageMax Writes each), in order.
func (ws *WriteStream) sender(ctx context.Context) {
	defer close(ws.done)
	for {
		select {
		case <-ws.wake:
		case <-ctx.Done():
			ws.fail(ctx.Err())
			return
		}
		for {
			ws.mu.Lock()
			n := min(len(ws.queue), streamWritesPerMessageMax)
			batch := ws.queue[:n:n]
			ws.queue = ws.queue[n:]
			closing := ws.closing && len(ws.queue) == 0
			ws.mu.Unlock()
			if n > 0 {
				if err := ws.stream.Send(&pb.WriteStreamRequest{Writes: batch}); err != nil {
					ws.fail(err)
					return
				}
			}
			if closing {
				if err := ws.stream.CloseSend(); err != nil {
					ws.fail(err)
				}
				return
			}
			if n == 0 {
				break
			}
		}
	}
}

func (ws *WriteStream) fail(err error) {
	ws.mu.Lock()
	if ws.sendErr == nil {
		ws.sendErr = fmt.Errorf("%w: send: %w", ErrStreamBroken, err)
	}
	ws.mu.Unlock()
}

// Recv returns the next reply and the id of the Write it answers. After
// CloseSend it returns ErrStreamDone once every Write was answered; any
// other error means the stream broke and every Write not yet answered is
// ambiguous (ErrStreamBroken).
func (ws *WriteStream) Recv() (uint64, journal.Reply, error) {
	for len(ws.answers) == 0 {
		m, err := ws.stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return 0, journal.Reply{}, ErrStreamDone
			}
			return 0, journal.Reply{}, fmt.Errorf("%w: %w", ErrStreamBroken, err)
		}
		ws.answers = m.GetAnswers()
	}
	a := ws.answers[0]
	ws.answers[0] = nil
	ws.answers = ws.answers[1:]
	r := wire.VerdictFromPB(a.GetReply().GetVerdict())
	ws.j.c.learnFromVerdict(ws.j.id, ws.server, r)
	return a.GetId(), r, nil
}

// CloseSend says no more Writes follow: the queued ones are sent, then the
// stream is half-closed, and Recv drains the replies.
func (ws *WriteStream) CloseSend() error {
	ws.mu.Lock()
	ws.closing = true
	ws.mu.Unlock()
	select {
	case ws.wake <- struct{}{}:
	default:
	}
	<-ws.done
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.sendErr
}

// Close ends the stream at once: Writes not yet answered are ambiguous.
func (ws *WriteStream) Close() { ws.cancel() }
