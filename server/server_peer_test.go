// This file checks the gRPC edge's Peer stream against the fake Backend of
// server_test.go: it hands decoded batches to the backend and ends a stream
// that sends a malformed Deliver. The Peer stream runs over a real gRPC
// server on an in-memory listener (bufconn).
package server_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/server"
	"github.com/parosdb/paros/wire"
)

// peerClient serves a Peer over an in-memory listener.
func peerClient(t *testing.T, b server.Backend) pb.PeerClient {
	return pb.NewPeerClient(bufconnServe(t, func(gs *grpc.Server) { pb.RegisterPeerServer(gs, &server.Peer{B: b}) }))
}

// bufconnServe starts a gRPC server with what register adds, on an
// in-memory listener, and returns a client connection to it.
func bufconnServe(t *testing.T, register func(*grpc.Server)) *grpc.ClientConn {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	register(gs)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(context.Context, string) (net.Conn, error) { return lis.Dial() }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func heartbeat(from, to paxos.NodeID) host.Envelope {
	return host.Envelope{Journal: jid, Msg: paxos.Message{Type: paxos.MsgHeartbeat, From: from, To: to}}
}

func TestPeerStreamDeliversDecodedBatches(t *testing.T) {
	// Arrange.
	b := &fakeBackend{}
	c := peerClient(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := c.Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// Act: two Delivers from node 7.
	for range 2 {
		if err := s.Send(wire.DeliverToPB(7, []host.Envelope{heartbeat(7, 8)})); err != nil {
			t.Fatal(err)
		}
	}

	// Check: both reach the backend, decoded.
	for deadline := time.Now().Add(5 * time.Second); ; {
		b.mu.Lock()
		n := len(b.delivered)
		b.mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d envelopes delivered, want 2", n)
		}
		time.Sleep(time.Millisecond)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.from[0] != 7 || b.delivered[0].Journal != jid || b.delivered[0].Msg.Type != paxos.MsgHeartbeat || b.delivered[0].Msg.To != 8 {
		t.Fatalf("delivered %+v from %v", b.delivered[0], b.from)
	}
}

func tooMany() []*pb.Envelope {
	out := make([]*pb.Envelope, wire.EnvelopesMax+1)
	for i := range out {
		out[i] = &pb.Envelope{}
	}
	return out
}

func TestPeerStreamRefusesMalformedDelivers(t *testing.T) {
	good := wire.DeliverToPB(7, []host.Envelope{heartbeat(7, 8)})
	cases := map[string]*pb.Deliver{
		"from node 0":         {From: 0, Envelopes: good.Envelopes},
		"another sender":      wire.DeliverToPB(5, []host.Envelope{heartbeat(7, 8)}),
		"unset journal":       {From: 7, Envelopes: []*pb.Envelope{{Msg: good.Envelopes[0].Msg}}},
		"unknown message":     {From: 7, Envelopes: []*pb.Envelope{{Journal: jidPB, Msg: &pb.ConsensusMessage{Type: 99, From: 7, To: 8}}}},
		"unset addressee":     {From: 7, Envelopes: []*pb.Envelope{{Journal: jidPB, Msg: &pb.ConsensusMessage{Type: pb.MsgType_MSG_TYPE_HEARTBEAT, From: 7}}}},
		"command no variant":  {From: 7, Envelopes: []*pb.Envelope{{Journal: jidPB, Msg: &pb.ConsensusMessage{Type: pb.MsgType_MSG_TYPE_ACCEPT, From: 7, To: 8, Entries: []*pb.SlotCommand{{Slot: 1, Command: &pb.Command{}}}}}}},
		"too many envelopes":  {From: 7, Envelopes: tooMany()},
		"bad sealed state":    {From: 7, Envelopes: []*pb.Envelope{{Journal: jidPB, Msg: &pb.ConsensusMessage{Type: pb.MsgType_MSG_TYPE_TRIMMED_TO, From: 7, To: 8, State: &pb.SealedState{NextSeq: 1, FirstSeq: 5}}}}},
		"message from a peer": {From: 7, Envelopes: []*pb.Envelope{{Journal: jidPB, Msg: &pb.ConsensusMessage{Type: pb.MsgType_MSG_TYPE_HEARTBEAT, From: 6, To: 8}}}},
	}
	for name, d := range cases {
		t.Run(name, func(t *testing.T) {
			// Arrange.
			b := &fakeBackend{}
			c := peerClient(t, b)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			s, err := c.Stream(ctx)
			if err != nil {
				t.Fatal(err)
			}

			// Act.
			_ = s.Send(d)
			_, err = s.Recv()

			// Check: the stream ends InvalidArgument and nothing is delivered.
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "malformed") {
				t.Fatalf("stream ended with %v; want InvalidArgument naming the malformed message", err)
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			if len(b.delivered) != 0 {
				t.Fatalf("a malformed deliver reached the backend: %+v", b.delivered)
			}
		})
	}
}
