package server_test

// This file replays the hostile-input probe against a server built with
// server.ServerOptions, in both modes: bytes that do not decode, sent with
// a raw codec (grpc.ForceCodecV2) to a unary call and on both streams, are
// answered InvalidArgument, never Internal, and reach no backend; a Write
// with no records is InvalidArgument "no records" before the host; a Peer
// stream from a node that is no machine of the cell is ended with
// PermissionDenied instead of being silently dropped; and a connection
// that never completes its TLS handshake is closed by the server.

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/server"
	"github.com/parosdb/paros/wire"
)

// rawCodec sends and receives messages as the bytes given.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}

// garbage is no protobuf message: field 1, length-delimited, with a length
// past the end.
var garbage = []byte{0x0a, 0xff, 0xff, 0x03}

// rawCalls sends garbage to a unary call and to both streams and returns
// each error by name.
func rawCalls(ctx context.Context, conn *grpc.ClientConn) map[string]error {
	out := map[string]error{}
	in, reply := garbage, []byte(nil)
	out["write"] = conn.Invoke(ctx, pb.Journal_Write_FullMethodName, &in, &reply, grpc.ForceCodecV2(rawCodec{}))
	for name, method := range map[string]string{"write-stream": pb.Journal_WriteStream_FullMethodName, "peer": pb.Peer_Stream_FullMethodName} {
		s, err := conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, method, grpc.ForceCodecV2(rawCodec{}))
		if err == nil {
			_ = s.SendMsg(&in)
			err = s.RecvMsg(&reply)
		}
		out[name] = err
	}
	return out
}

func TestUndecodableBytesAreInvalidArgument(t *testing.T) {
	cell := newTestCell(t)
	srv, member := cell.node(t, serverID), cell.node(t, memberID)
	for _, mode := range []string{"insecure", "secured"} {
		t.Run(mode, func(t *testing.T) {
			// Arrange.
			b := &fakeBackend{}
			var errs map[string]error
			if mode == "insecure" {
				errs = rawCalls(context.Background(), dial(t, serveAll(t, server.Security{}, b), nil))
			} else {
				addr := serveAll(t, server.Security{Node: srv}, b)
				// Act (secured): a writer for the Journal calls, a member
				// for the Peer stream.
				errs = rawCalls(as(cell.token(t, "writer", writeJid)), cell.clientConn(t, addr))
				errs["peer"] = rawCalls(context.Background(), peerConn(t, addr, member))["peer"]
			}

			// Check.
			for call, err := range errs {
				if status.Code(err) != codes.InvalidArgument {
					t.Errorf("%s with undecodable bytes: %v, want InvalidArgument", call, err)
				}
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			if len(b.calls) != 0 || len(b.delivered) != 0 {
				t.Errorf("undecodable bytes reached the backend: %d calls, %d envelopes", len(b.calls), len(b.delivered))
			}
		})
	}
}

func TestWriteWithNoRecordsIsInvalidArgument(t *testing.T) {
	// Arrange.
	b := &fakeBackend{}
	c := pb.NewJournalClient(dial(t, serveAll(t, server.Security{}, b), nil))

	// Act.
	_, err := c.Write(context.Background(), &pb.WriteRequest{Journal: jidPB, Leader: fence, Seq: 1})

	// Check.
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "no records") {
		t.Fatalf("a write with no records: %v, want InvalidArgument naming no records", err)
	}
	if b.callCount() != 0 {
		t.Fatal("a write with no records reached the host")
	}
}

func TestPeerStreamFromANonMemberIsRefused(t *testing.T) {
	// Arrange: --insecure, so the sender is taken at its word, but it must
	// still be a member.
	b := &fakeBackend{}
	conn := dial(t, serveAll(t, server.Security{}, b), nil)

	// Act.
	err := peerStreamErr(t, conn, context.Background(), wire.DeliverToPB(strangerID, []host.Envelope{heartbeat(strangerID, serverID)}))

	// Check.
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "no machine of this cell") {
		t.Fatalf("a Deliver from a non-member: %v, want PermissionDenied", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.delivered) != 0 {
		t.Fatalf("delivered %+v", b.delivered)
	}
}

func TestStalledHandshakeIsDropped(t *testing.T) {
	// Arrange: a TCP connection that never speaks TLS.
	cell := newTestCell(t)
	addr := serveAll(t, server.Security{Node: cell.node(t, serverID)}, &fakeBackend{})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	// Act: wait for the server to give up (its bound is 5 s).
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = conn.Read(make([]byte, 1))

	// Check: the server closed it, well before our own deadline.
	var ne net.Error
	if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		t.Fatalf("read: %v after %v; want the server to close the connection", err, time.Since(start))
	}
}
