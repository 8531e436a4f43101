package blackbox

// These tests play the hostile-input probe against a real cell: messages a
// peer connection can carry that no honest member sends. A Commit at ballot
// round 2^64-1, claimed to come from a member, once made every machine of
// a cell panic on its next campaign; now the Peer service refuses the frame
// as InvalidArgument and the cell keeps serving.
//
// The cell runs with TLS, so a stranger cannot open a Peer stream at all:
// the probe first checks that a connection without a machine certificate
// (the cell's CA and an admin token, no more) is refused, then plays a
// member gone rogue, holding the next member's certificate and sending as
// that member.

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/security"
	"github.com/parosdb/paros/wire"
)

func TestMaxRoundCommitCrashesNothing(t *testing.T) {
	c := newCell(t)
	j := c.initCell()
	if out, code := c.ctl("write", j, "before"); code != 0 {
		t.Fatalf("write: exit %d: %s", code, out)
	}
	jid := wire.JournalIDToPB(mustID(t, j))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ids := make([]uint64, len(c.procs))
	for i, p := range c.procs {
		ids[i] = c.node(p).NodeID
	}

	// A Peer stream without a machine certificate is refused, whatever
	// token it carries.
	tlsCfg, err := security.ClientConfigFile(c.caFile)
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := grpc.NewClient(c.procs[0].addr, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	sctx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+c.token)
	stream, err := pb.NewPeerClient(stranger).Stream(sctx)
	if err == nil {
		_ = stream.Send(&pb.Deliver{From: ids[1]})
		_, err = stream.Recv()
	}
	if code := status.Code(err); code != codes.Unauthenticated && code != codes.PermissionDenied {
		t.Fatalf("a Peer stream without a machine certificate was answered %v, want Unauthenticated or PermissionDenied", err)
	}

	// Each machine is sent, by the next member (its certificate), the
	// probe's Commit.
	for i := range c.procs {
		claimed := ids[(i+1)%len(ids)]
		conn := c.peerConn(c.procs[i], c.procs[(i+1)%len(c.procs)])
		stream, err := pb.NewPeerClient(conn).Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		forged := &pb.Deliver{From: claimed, Envelopes: []*pb.Envelope{{Journal: jid, Msg: &pb.ConsensusMessage{
			Type: pb.MsgType_MSG_TYPE_COMMIT, From: claimed, To: ids[i],
			Ballot: &pb.Ballot{Round: math.MaxUint64, Node: claimed}, Commit: 1}}}}
		if err := stream.Send(forged); err != nil {
			t.Fatalf("machine %d: send: %v", i, err)
		}
		_, err = stream.Recv()
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "ballot round") {
			t.Fatalf("machine %d: the forged Commit was answered %v, want InvalidArgument naming the ballot round", i, err)
		}
	}

	// Several election timeouts later every machine still runs and the
	// journal still takes writes.
	time.Sleep(1500 * time.Millisecond)
	for i, p := range c.procs {
		select {
		case err := <-p.done:
			t.Fatalf("machine %d exited: %v\n%s", i, err, p.stderr)
		default:
		}
	}
	if out, code := c.ctl("write", j, "after"); code != 0 {
		t.Fatalf("write after the probe: exit %d: %s", code, out)
	}
	if out, code := c.ctl("read", j); code != 0 || !strings.Contains(out, "before") || !strings.Contains(out, "after") {
		t.Fatalf("read: exit %d: %s", code, out)
	}
}
