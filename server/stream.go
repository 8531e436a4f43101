package server

import (
	"context"
	"errors"
	"io"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/wire"
)

// Bounds of one WriteStream, so one stream holds a bounded amount of a
// server's memory.
const (
	// WriteStreamWindow bounds a stream's requests read and not yet
	// answered; past it the server stops reading (gRPC flow control then
	// holds the client). Its principal's write budget (PrincipalWritesMax,
	// fair.go) is smaller and shared by all the principal's streams, so
	// under ServerOptions the budget is what holds a stream; the window is
	// the bound of a server built without it, and of one message.
	WriteStreamWindow = 4096
	// submitBatchMax bounds the requests handed to the event loop in one
	// turn (they share a Ready: one persist, one Accept per peer).
	submitBatchMax = 256
	// answersPerReplyMax bounds the answers packed into one reply message.
	answersPerReplyMax = 256
)

// The principal's budget is at most one stream's window: the window never
// holds a stream that the budget would have let read.
var _ [WriteStreamWindow - PrincipalWritesMax]struct{}

// streamVerdict is one answer on its way to the stream's sender.
type streamVerdict struct {
	id    uint64
	reply *pb.WriteReply // set for answers given before consensus
	v     journal.Reply
	cost  int // the write's cost in its principal's budget (writeBudget.cost)
}

// admittedWrite is a request admitted into the stream's window and its
// principal's budget.
type admittedWrite struct {
	w    *pb.StreamWrite
	cost int
}

// streamOut holds a stream's verdicts until its sender sends them. put
// never blocks (the event loop calls it); memory grows with the verdicts
// waiting, at most the window. Once the stream ended, a verdict still
// arriving (a write the host answers after the client went away) gives its
// budget back at once.
type streamOut struct {
	budget writeBudget
	wake   chan struct{} // holds a token while verdicts wait (cap 1)

	mu       sync.Mutex
	verdicts []streamVerdict
	ended    bool
}

func (o *streamOut) put(v streamVerdict) {
	o.mu.Lock()
	if o.ended {
		o.mu.Unlock()
		o.budget.release(1, v.cost)
		return
	}
	o.verdicts = append(o.verdicts, v)
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// take moves up to max waiting verdicts into dst, oldest first.
func (o *streamOut) take(dst []streamVerdict, max int) []streamVerdict {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := min(len(o.verdicts), max)
	dst = append(dst, o.verdicts[:k]...)
	n := copy(o.verdicts, o.verdicts[k:])
	clear(o.verdicts[n:])
	o.verdicts = o.verdicts[:n]
	return dst
}

// end marks the stream ended and gives back the budget of every verdict
// not sent.
func (o *streamOut) end() {
	o.mu.Lock()
	o.ended = true
	rest := o.verdicts
	o.verdicts = nil
	o.mu.Unlock()
	cost := 0
	for _, v := range rest {
		cost += v.cost
	}
	o.budget.release(len(rest), cost)
}

// WriteStream implements paros.v1.Journal.WriteStream: one goroutine reads
// requests, one hands their Writes to the event loop in stream order (in
// batches of what has arrived), and the handler's own goroutine sends the
// verdicts as they land, packing those that wait together into one reply. Each request is validated like a unary Write, but every
// refusal is in-band (a TOO_LARGE write is answered with the TOO_LARGE
// refusal, not a status that would end the stream for the others); a write
// with no records, which a unary Write answers InvalidArgument, goes to the
// host and is answered REFUSED (an answer has no field for a reason).
//
// A request is read only once it fits in the stream's window and in its
// principal's write budget (fair.go), both held until its answer was sent:
// a principal with PrincipalWritesMax writes unanswered, over all its
// streams, is not read from until one is answered, and gRPC flow control
// holds its client.
//
// When the client half-closes, the stream ends once every request read was
// answered; when it ends otherwise, the unanswered requests are ambiguous
// (their writes may still land).
func (s *Journal) WriteStream(stream pb.Journal_WriteStreamServer) error {
	ctx := stream.Context()
	budget := budgetFrom(ctx)
	out := &streamOut{budget: budget, wake: make(chan struct{}, 1)}
	defer out.end()
	// window is the semaphore of requests read and not answered.
	window := make(chan struct{}, WriteStreamWindow)
	reqs := make(chan admittedWrite, submitBatchMax)
	recvErr := make(chan error, 1)

	go func() {
		defer close(reqs)
		for {
			m, err := stream.Recv()
			if err == nil && len(m.GetWrites()) > WriteStreamWindow {
				err = status.Errorf(codes.InvalidArgument, "a WriteStream message carries at most %d writes, got %d",
					WriteStreamWindow, len(m.GetWrites()))
			}
			if err != nil {
				recvErr <- err
				return
			}
			for _, w := range m.GetWrites() {
				select {
				case window <- struct{}{}:
				case <-ctx.Done():
					return
				}
				cost := budget.cost(recordBytes(w.GetWrite()))
				if budget.acquire(ctx, cost) != nil {
					return
				}
				select {
				case reqs <- admittedWrite{w: w, cost: cost}:
				case <-ctx.Done():
					budget.release(1, cost)
					return
				}
			}
		}
	}()
	go s.submitStream(ctx, reqs, out)

	recvDone := false
	batch := make([]streamVerdict, 0, answersPerReplyMax)
	answers := make([]*pb.StreamAnswer, 0, answersPerReplyMax)
	for {
		select {
		case <-out.wake:
			// Send every verdict waiting, packed answersPerReplyMax to a
			// message.
			for {
				batch = out.take(batch[:0], answersPerReplyMax)
				if len(batch) == 0 {
					break
				}
				answers, cost := answers[:0], 0
				for _, v := range batch {
					answers = append(answers, v.answer())
					cost += v.cost
				}
				err := stream.Send(&pb.WriteStreamReply{Answers: answers})
				budget.release(len(batch), cost)
				if err != nil {
					return err
				}
				for range batch {
					<-window
				}
			}
		case err := <-recvErr:
			if !errors.Is(err, io.EOF) {
				return err
			}
			recvDone = true
		case <-ctx.Done():
			return ctx.Err()
		}
		if recvDone && len(window) == 0 {
			return nil
		}
	}
}

func (v streamVerdict) answer() *pb.StreamAnswer {
	reply := v.reply
	if reply == nil {
		reply = &pb.WriteReply{Verdict: wire.VerdictToPB(v.v)}
	}
	return &pb.StreamAnswer{Id: v.id, Reply: reply}
}

// submitStream hands the stream's requests to the backend in arrival order,
// each batch being whatever has arrived (at most submitBatchMax). It reads
// reqs to its end, so that every request admitted is answered into out
// (which gives the budget back of those answered after the stream ended).
func (s *Journal) submitStream(ctx context.Context, reqs <-chan admittedWrite, out *streamOut) {
	batch := make([]admittedWrite, 0, submitBatchMax)
	for m := range reqs {
		batch = append(batch[:0], m)
	more:
		for len(batch) < submitBatchMax {
			select {
			case m, ok := <-reqs:
				if !ok {
					break more
				}
				batch = append(batch, m)
			default:
				break more
			}
		}
		calls := make([]host.Call, 0, len(batch))
		sent := make([]admittedWrite, 0, len(batch))
		for _, m := range batch {
			c, refusal, err := writeCall(m.w.GetWrite())
			switch {
			case err != nil: // over the batch limits
				out.put(streamVerdict{id: m.w.GetId(), v: journal.Reply{NoVerdict: journal.TooLarge}, cost: m.cost})
			case refusal != nil:
				out.put(streamVerdict{id: m.w.GetId(), reply: refusal, cost: m.cost})
			default:
				calls = append(calls, c)
				sent = append(sent, m)
			}
		}
		if len(calls) == 0 {
			continue
		}
		err := s.B.Submit(ctx, calls, func(i int, resp host.Response) {
			out.put(streamVerdict{id: sent[i].w.GetId(), v: resp.Reply, cost: sent[i].cost})
		})
		if err != nil {
			// None was submitted. When the stream is gone, these answers
			// only give their budget back.
			v := journal.Reply{NoVerdict: journal.Lost}
			if errors.Is(err, ErrNotServing) {
				v = journal.Reply{NoVerdict: journal.UnknownJournal}
			}
			for _, m := range sent {
				out.put(streamVerdict{id: m.w.GetId(), v: v, cost: m.cost})
			}
		}
	}
}
