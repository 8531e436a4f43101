package server

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/wire"
)

// Bounds of one WriteStream (STYLE rule 11).
const (
	// WriteStreamWindow bounds a stream's requests read and not yet
	// answered; past it the server stops reading (gRPC flow control then
	// holds the client).
	WriteStreamWindow = 4096
	// submitBatchMax bounds the requests handed to the event loop in one
	// turn (they share a Ready: one persist, one Accept per peer).
	submitBatchMax = 256
	// answersPerReplyMax bounds the answers packed into one reply message.
	answersPerReplyMax = 256
)

// streamVerdict is one answer on its way to the stream's sender.
type streamVerdict struct {
	id    uint64
	reply *pb.WriteReply // set for answers given before consensus
	v     journal.Reply
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
// When the client half-closes, the stream ends once every request read was
// answered; when it ends otherwise, the unanswered requests are ambiguous
// (their writes may still land).
func (s *Journal) WriteStream(stream pb.Journal_WriteStreamServer) error {
	ctx := stream.Context()
	// out never blocks a sender: at most WriteStreamWindow requests are
	// outstanding (window is the semaphore), each answered exactly once.
	out := make(chan streamVerdict, WriteStreamWindow)
	window := make(chan struct{}, WriteStreamWindow)
	reqs := make(chan *pb.StreamWrite, submitBatchMax)
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
				select {
				case reqs <- w:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	go s.submitStream(ctx, reqs, out)

	recvDone := false
	answers := make([]*pb.StreamAnswer, 0, answersPerReplyMax)
	for {
		select {
		case v := <-out:
			// Pack every verdict already waiting into one message.
			answers = append(answers[:0], v.answer())
		more:
			for len(answers) < answersPerReplyMax {
				select {
				case v := <-out:
					answers = append(answers, v.answer())
				default:
					break more
				}
			}
			if err := stream.Send(&pb.WriteStreamReply{Answers: answers}); err != nil {
				return err
			}
			for range answers {
				<-window
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
// each batch being whatever has arrived (at most submitBatchMax).
func (s *Journal) submitStream(ctx context.Context, reqs <-chan *pb.StreamWrite, out chan<- streamVerdict) {
	batch := make([]*pb.StreamWrite, 0, submitBatchMax)
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
		ids := make([]uint64, 0, len(batch))
		for _, m := range batch {
			c, refusal, err := writeCall(m.GetWrite())
			switch {
			case err != nil: // over the batch limits
				out <- streamVerdict{id: m.GetId(), v: journal.Reply{NoVerdict: journal.TooLarge}}
			case refusal != nil:
				out <- streamVerdict{id: m.GetId(), reply: refusal}
			default:
				calls = append(calls, c)
				ids = append(ids, m.GetId())
			}
		}
		if len(calls) == 0 {
			continue
		}
		err := s.B.Submit(ctx, calls, func(i int, resp host.Response) {
			select {
			case out <- streamVerdict{id: ids[i], v: resp.Reply}:
			default: // cannot happen: the window bounds what is outstanding
			}
		})
		if err != nil {
			if ctx.Err() != nil {
				return // the stream is gone: its requests stay ambiguous
			}
			v := journal.Reply{NoVerdict: journal.Lost}
			if errors.Is(err, ErrNotServing) {
				v = journal.Reply{NoVerdict: journal.UnknownJournal}
			}
			for _, id := range ids {
				out <- streamVerdict{id: id, v: v}
			}
		}
	}
}
