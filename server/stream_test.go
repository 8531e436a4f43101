package server_test

// This file checks Journal.WriteStream over a real gRPC server on an
// in-memory listener, against the fake Backend: requests reach the backend
// in stream order and each reply names its request's id; a write naming an
// unset journal and one over the batch limits are refused in-band and the
// stream carries on; an idle machine answers UNKNOWN_JOURNAL and a failed
// hand-over an ambiguous LOST, never an error read as "not done"; a message
// may carry many Writes and a reply many answers, each id answered once;
// a message over the window ends the stream with InvalidArgument; and a
// half-closed stream ends cleanly once every request was answered.

import (
	"context"
	"errors"
	"io"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/server"
	"github.com/parosdb/paros/wire"
)

func journalClient(t *testing.T, b server.Backend) pb.JournalClient {
	return pb.NewJournalClient(bufconnServe(t, func(gs *grpc.Server) { pb.RegisterJournalServer(gs, &server.Journal{B: b}) }))
}

// streamAll sends reqs on one stream, half-closes it and returns the
// replies by id.
func streamAll(t *testing.T, c pb.JournalClient, reqs []*pb.StreamWrite) map[uint64]journal.Reply {
	t.Helper()
	st, err := c.WriteStream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Two messages: the first carries one Write, the second all the rest.
	if err := st.Send(&pb.WriteStreamRequest{Writes: reqs[:1]}); err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&pb.WriteStreamRequest{Writes: reqs[1:]}); err != nil {
		t.Fatal(err)
	}
	if err := st.CloseSend(); err != nil {
		t.Fatal(err)
	}
	got := map[uint64]journal.Reply{}
	for {
		m, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			t.Fatalf("recv after %d replies: %v", len(got), err)
		}
		for _, a := range m.GetAnswers() {
			if _, dup := got[a.GetId()]; dup {
				t.Fatalf("id %d answered twice", a.GetId())
			}
			got[a.GetId()] = wire.VerdictFromPB(a.GetReply().GetVerdict())
		}
	}
}

func write(id uint64, seq uint64, recs ...[]byte) *pb.StreamWrite {
	return &pb.StreamWrite{Id: id, Write: &pb.WriteRequest{Journal: jidPB, Leader: fence, Seq: seq, Records: recs}}
}

func TestWriteStreamOrderAndInBandRefusals(t *testing.T) {
	// Arrange: a backend that accepts everything; 100 writes with an unset
	// journal at id 50 and an oversized batch at id 70.
	b := &fakeBackend{resp: host.Response{Reply: journal.Reply{Outcome: journal.Outcome{Kind: journal.Accepted}}}}
	c := journalClient(t, b)
	var reqs []*pb.StreamWrite
	for i := uint64(1); i <= 100; i++ {
		switch i {
		case 50:
			reqs = append(reqs, &pb.StreamWrite{Id: i, Write: &pb.WriteRequest{Leader: fence, Seq: i}})
		case 70:
			big := make([][]byte, journal.WriteRecordsMax+1)
			reqs = append(reqs, write(i, i, big...))
		default:
			reqs = append(reqs, write(i, i, []byte("r")))
		}
	}

	// Act.
	got := streamAll(t, c, reqs)

	// Check: every id answered once; the 98 valid writes reached the
	// backend in stream order.
	if len(got) != 100 {
		t.Fatalf("%d replies, want 100", len(got))
	}
	if got[50].NoVerdict != journal.UnknownJournal || got[70].NoVerdict != journal.TooLarge {
		t.Fatalf("in-band refusals: id 50 %v, id 70 %v", got[50], got[70])
	}
	if got[99].Outcome.Kind != journal.Accepted {
		t.Fatalf("the stream did not carry on after the refusals: %v", got[99])
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.calls) != 98 {
		t.Fatalf("backend got %d calls, want 98", len(b.calls))
	}
	for i := 1; i < len(b.calls); i++ {
		if b.calls[i].Write.Seq <= b.calls[i-1].Write.Seq {
			t.Fatalf("call %d at seq %d after seq %d: not in stream order", i, b.calls[i].Write.Seq, b.calls[i-1].Write.Seq)
		}
	}
}

func TestWriteStreamBackendErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want journal.Reply
	}{
		{"an idle machine", server.ErrNotServing, journal.Reply{NoVerdict: journal.UnknownJournal}},
		{"a failed hand-over is ambiguous", errors.New("stopped"), journal.Reply{NoVerdict: journal.Lost}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := journalClient(t, &fakeBackend{err: tc.err})

			got := streamAll(t, c, []*pb.StreamWrite{write(7, 1, []byte("r"))})

			if got[7].NoVerdict != tc.want.NoVerdict {
				t.Fatalf("reply %v, want %v", got[7], tc.want)
			}
		})
	}
}

func TestWriteStreamRefusesAMessageOverTheWindow(t *testing.T) {
	c := journalClient(t, &fakeBackend{})
	st, err := c.WriteStream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ws := make([]*pb.StreamWrite, server.WriteStreamWindow+1)
	for i := range ws {
		ws[i] = write(uint64(i+1), uint64(i+1))
	}

	_ = st.Send(&pb.WriteStreamRequest{Writes: ws})
	_, err = st.Recv()

	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("a message of %d writes: %v, want InvalidArgument", len(ws), err)
	}
}
