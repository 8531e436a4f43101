package blackbox

// These tests play the hostile-input probe's attacks against a real secure
// cell (three `paros serve` processes with TLS, see cell_test.go) and then
// check the cell is intact: every machine still runs, the real writer's
// next write lands at the position it expected, and the journal reads back
// with exactly the records written.
//
//   - TestDataCallsNeedACredential: Write, Truncate, SetLeader, WriteStream
//     and Read without a credential answer Unauthenticated, through the
//     client library (client.ErrDenied) and through raw gRPC stubs; a
//     read-only token is PermissionDenied on every mutating call and reads;
//     a token of another journal is PermissionDenied on this one, reads
//     included. Afterwards the writer's fence and next position are
//     unchanged.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/wire"
)

func TestDataCallsNeedACredential(t *testing.T) {
	// Arrange: a formed cell with a claimed writer and one record, a
	// read-only token of the journal and a read-write token of another.
	c := newCell(t)
	ref := c.initCell()
	id := mustID(t, ref)
	jpb := wire.JournalIDToPB(id)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	admin := c.dial(ctx, c.procs)
	w := admin.Journal(id).NewWriter()
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatalf("claim: %v", err)
	}
	if _, err := w.Append(ctx, []byte("real")); err != nil {
		t.Fatalf("append: %v", err)
	}
	fence, next := w.Fence(), w.NextSeq()
	other := journal.ID{Tenant: id.Tenant, Journal: id.Journal + 1}
	if other.Journal == 0 {
		other.Journal = 1
	}
	readOnly := c.paros("cert", "token", "--ca", c.caDir, "--subject", "read-only", "--journal", ref, "--ops", "read", "--ttl", "1h")
	elsewhere := c.paros("cert", "token", "--ca", c.caDir, "--subject", "elsewhere", "--journal", other.String(), "--ops", "read,write", "--ttl", "1h")
	var addrs []string
	for _, p := range c.procs {
		addrs = append(addrs, p.public())
	}

	// Act and check: a Client dialled with no token is refused at Dial
	// (Dial asks every server Admin.Inspect, which needs a principal).
	if _, err := client.Dial(ctx, addrs, client.WithCAFile(c.caFile)); !errors.Is(err, client.ErrDenied) || status.Code(err) != codes.Unauthenticated {
		t.Fatalf("Dial without a token: %v; want ErrDenied, Unauthenticated", err)
	}
	callers := []struct {
		name string
		// opts dial the library's Client. Without a credential, the admin
		// token rides on Admin.Inspect alone (Dial and NotLeader hints
		// need it), so the journal calls carry none.
		opts []client.Option
		// token is what the raw stubs present ("": none).
		token string
		// mutate is the answer to Write, Truncate, SetLeader and
		// WriteStream; read the answer to Read (codes.OK: served).
		mutate, read codes.Code
	}{
		{"no credential", []client.Option{client.WithCAFile(c.caFile),
			client.WithDialOptions(grpc.WithChainUnaryInterceptor(tokenOnInspectOnly(c.token)))},
			"", codes.Unauthenticated, codes.Unauthenticated},
		{"a read-only token", []client.Option{client.WithCAFile(c.caFile), client.WithToken(readOnly)},
			readOnly, codes.PermissionDenied, codes.OK},
		{"a token of another journal", []client.Option{client.WithCAFile(c.caFile), client.WithToken(elsewhere)},
			elsewhere, codes.PermissionDenied, codes.PermissionDenied},
	}
	intruder := journal.LeaderUUID{Hi: 0xbad, Lo: 1}
	for _, cred := range callers {
		t.Run(strings.ReplaceAll(cred.name, " ", "_"), func(t *testing.T) {
			// The client library.
			cl, err := client.Dial(ctx, addrs, cred.opts...)
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer cl.Close()
			j := cl.Journal(id)
			_, err = j.Write(ctx, journal.WriteRequest{Leader: fence, Seq: next, Records: [][]byte{[]byte("intruder")}})
			wantDenied(t, "library Write", err, cred.mutate)
			_, err = j.Truncate(ctx, journal.TruncateRequest{Leader: fence, UpTo: next})
			wantDenied(t, "library Truncate", err, cred.mutate)
			_, err = j.SetLeader(ctx, journal.SetLeaderRequest{New: intruder, Old: fence})
			wantDenied(t, "library SetLeader", err, cred.mutate)
			claimer := j.NewWriter()
			wantDenied(t, "library Writer.Claim", claimer.Claim(ctx), cred.mutate)
			claimer.Close()
			rr, err := j.Read(ctx, journal.ReadRequest{FromSeq: journal.FirstSeq})
			if cred.read == codes.OK {
				if err != nil || !rr.Served || len(rr.Records) != 1 || string(rr.Records[0]) != "real" {
					t.Errorf("library Read: %+v, %v; want the record \"real\"", rr, err)
				}
			} else {
				wantDenied(t, "library Read", err, cred.read)
			}

			// Raw stubs, at every machine.
			for i, p := range c.procs {
				rctx := ctx
				if cred.token != "" {
					rctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+cred.token)
				}
				stub := pb.NewJournalClient(strangerConn(t, c, p))
				wr := &pb.WriteRequest{Journal: jpb, Leader: wire.UUIDToPB(fence), Seq: uint64(next), Records: [][]byte{[]byte("intruder")}}
				_, err := stub.Write(rctx, wr)
				wantCode(t, fmt.Sprintf("machine %d: raw Write", i+1), err, cred.mutate)
				_, err = stub.Truncate(rctx, &pb.TruncateRequest{Journal: jpb, Leader: wire.UUIDToPB(fence), UpTo: uint64(next)})
				wantCode(t, fmt.Sprintf("machine %d: raw Truncate", i+1), err, cred.mutate)
				_, err = stub.SetLeader(rctx, &pb.SetLeaderRequest{Journal: jpb, NewLeader: wire.UUIDToPB(intruder), OldLeader: wire.UUIDToPB(fence)})
				wantCode(t, fmt.Sprintf("machine %d: raw SetLeader", i+1), err, cred.mutate)
				wantCode(t, fmt.Sprintf("machine %d: raw WriteStream", i+1), rawWriteStream(rctx, stub, wr), cred.mutate)
				_, err = stub.Read(rctx, &pb.ReadRequest{Journal: jpb, FromSeq: uint64(journal.FirstSeq)})
				wantCode(t, fmt.Sprintf("machine %d: raw Read", i+1), err, cred.read)
			}
		})
	}

	// Check: nothing moved. The writer still holds the journal and its
	// next write lands at the next position; the journal holds only its
	// records.
	seq, err := w.Append(ctx, []byte("after"))
	if err != nil || seq != next {
		t.Fatalf("the writer's write after the refused calls: position %d, %v; want position %d", seq, err, next)
	}
	want := [][]byte{[]byte("real"), []byte("after")}
	if got := readBack(t, ctx, c, c.procs[0], id, w.NextSeq()); !slices.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("the journal reads back %q, want %q", got, want)
	}
	checkRunning(t, c)
}

// tokenOnInspectOnly presents token on Admin.Inspect calls only.
func tokenOnInspectOnly(token string) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if method == pb.Admin_Inspect_FullMethodName {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
}

// rawWriteStream sends wr on a new WriteStream and returns how the server
// ended it (nil if it answered).
func rawWriteStream(ctx context.Context, stub pb.JournalClient, wr *pb.WriteRequest) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	stream, err := stub.WriteStream(ctx)
	if err != nil {
		return err
	}
	if stream.Send(&pb.WriteStreamRequest{Writes: []*pb.StreamWrite{{Id: 1, Write: wr}}}) == nil {
		_ = stream.CloseSend()
	}
	_, err = stream.Recv()
	return err
}

// wantDenied checks that a library call was refused as ErrDenied with code.
func wantDenied(t *testing.T, what string, err error, code codes.Code) {
	t.Helper()
	if !errors.Is(err, client.ErrDenied) || status.Code(err) != code {
		t.Errorf("%s: %v; want ErrDenied, %v", what, err, code)
	}
}

// wantCode checks a raw call's status code (codes.OK: no error).
func wantCode(t *testing.T, what string, err error, code codes.Code) {
	t.Helper()
	if status.Code(err) != code {
		t.Errorf("%s: %v; want %v", what, err, code)
	}
}
