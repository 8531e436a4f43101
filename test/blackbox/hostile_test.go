package blackbox

// These tests play the hostile-input probe against a real cell: messages a
// peer connection can carry that no honest member sends. A Commit at ballot
// round 2^64-1, claimed to come from a member, once made every machine of
// a cell panic on its next campaign; now the Peer service refuses the frame
// as InvalidArgument and the cell keeps serving.

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
)

func TestMaxRoundCommitCrashesNothing(t *testing.T) {
	c := newCell(t)
	j := c.initCell()
	if out, code := c.ctl("write", j, "before"); code != 0 {
		t.Fatalf("write: exit %d: %s", code, out)
	}
	jid, err := parseRef(j)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ids := make([]uint64, len(c.procs))
	conns := make([]*grpc.ClientConn, len(c.procs))
	for i, p := range c.procs {
		conn, err := grpc.NewClient(p.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conns[i] = conn
		r, err := pb.NewMachineClient(conn).Identify(ctx, &pb.IdentifyRequest{})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = r.GetNodeId()
	}

	// Each machine is sent, "from" the next member, the probe's Commit.
	for i := range c.procs {
		claimed := ids[(i+1)%len(ids)]
		stream, err := pb.NewPeerClient(conns[i]).Stream(ctx)
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
