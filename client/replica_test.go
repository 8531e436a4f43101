// This file checks how the client uses replica machines (replicas.go)
// against real cells from internal/testcell with two replica machines
// beside their three nodes (started as `paros serve --role replica` is and
// named in the cell plan), counting the gRPC calls each machine receives.
// It checks: a Client dialled with nodes and replicas sends every read to a
// replica and none to a node, and never sends a write, a claim or a write
// stream to a replica, while every record reads back in order; with
// WithReplicaReads(false) the nodes serve the reads and the replicas get
// none; a stopped replica sends the reads to the other replica, and with
// both stopped to the nodes, every read still served; a replica that
// answers unserved (a fake gRPC server that says it is a replica and serves
// nothing) sends the read on to the nodes in the same call; and a Client
// given only replicas reads, and refuses to write at once with ErrNoServer
// (nothing sent); a Reconfigure that moves the journal to a machine it
// admits tells the replica of it (the replica is listed among the cell's
// machines), so the replica keeps learning from the new leader, and a
// Reconfigure naming a replica as a member is refused. Reads of a replica
// are linearizable like a node's (a quorum read), so each read here also
// checks it sees every append acknowledged before it.
package client_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/internal/testcell"
)

// The gRPC methods counted on each machine.
const (
	methodRead        = "/paros.v1.Journal/Read"
	methodWrite       = "/paros.v1.Journal/Write"
	methodWriteStream = "/paros.v1.Journal/WriteStream"
	methodSetLeader   = "/paros.v1.Journal/SetLeader"
)

// replicaCell starts a cell of three nodes and two replicas with one
// journal, closed when the test ends, once that journal has a leader.
func replicaCell(t *testing.T) (*testcell.Cell, journal.ID) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a cell of five machines")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := testcell.Start(ctx, t.TempDir(), testcell.Options{Journals: 1, Replicas: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.WaitLeader(ctx, c.Journals[0]); err != nil {
		t.Fatal(err)
	}
	return c, c.Journals[0]
}

// calls sums the calls of method the machines of c received, replicas or
// nodes.
func calls(c *testcell.Cell, replicas bool, method string) int64 {
	var n int64
	for _, m := range c.Nodes {
		if m.Replica == replicas {
			n += m.Calls(method)
		}
	}
	return n
}

func TestReadsGoToReplicasAndWritesNever(t *testing.T) {
	// Arrange: a Client of the three nodes and the two replicas.
	c, id := replicaCell(t)
	ctx := testCtx(t)
	j := dial(t, append(c.Addrs(), c.ReplicaAddrs()...)...).Journal(id)

	// Act: a Writer claims and appends twenty records; a Reader reads them.
	testcell.AppendN(t, ctx, j, 20)
	testcell.CheckRecords(t, ctx, j, 20)

	// Check: the replicas served every read, and received no write of any
	// kind.
	if n := calls(c, false, methodRead); n != 0 {
		t.Errorf("the nodes received %d reads, want 0: the replicas serve them", n)
	}
	if n := calls(c, true, methodRead); n == 0 {
		t.Error("the replicas received no read")
	}
	for _, m := range []string{methodWrite, methodWriteStream, methodSetLeader} {
		if n := calls(c, true, m); n != 0 {
			t.Errorf("the replicas received %d calls of %s, want none", n, m)
		}
	}
}

func TestWithReplicaReadsOffTheNodesServe(t *testing.T) {
	// Arrange: a Client of nodes and replicas with replica reads off.
	c, id := replicaCell(t)
	ctx := testCtx(t)
	cl, err := client.Dial(ctx, append(c.Addrs(), c.ReplicaAddrs()...), append(c.ClientOptions(), client.WithReplicaReads(false))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	j := cl.Journal(id)

	// Act.
	testcell.AppendN(t, ctx, j, 5)
	testcell.CheckRecords(t, ctx, j, 5)

	// Check.
	if n := calls(c, true, methodRead); n != 0 {
		t.Errorf("the replicas received %d reads with replica reads off, want 0", n)
	}
	if n := calls(c, false, methodRead); n == 0 {
		t.Error("the nodes received no read")
	}
}

func TestAStoppedReplicaSendsReadsToTheOtherThenToTheNodes(t *testing.T) {
	// Arrange: twenty records; the first replica stopped.
	c, id := replicaCell(t)
	ctx := testCtx(t)
	j := dial(t, append(c.Addrs(), c.ReplicaAddrs()...)...).Journal(id)
	testcell.AppendN(t, ctx, j, 20)
	first, second := len(c.Nodes)-2, len(c.Nodes)-1
	if err := c.Stop(first); err != nil {
		t.Fatal(err)
	}

	// Act and check: the other replica serves every read.
	before := c.Nodes[second].Calls(methodRead)
	testcell.CheckRecords(t, ctx, j, 20)
	if n := calls(c, false, methodRead); n != 0 {
		t.Errorf("with one replica up the nodes received %d reads, want 0", n)
	}
	if c.Nodes[second].Calls(methodRead) == before {
		t.Error("the replica still up served no read")
	}

	// Act and check: with both stopped the nodes serve every read.
	if err := c.Stop(second); err != nil {
		t.Fatal(err)
	}
	testcell.CheckRecords(t, ctx, j, 20)
	if n := calls(c, false, methodRead); n == 0 {
		t.Error("with both replicas stopped the nodes received no read")
	}
}

// unservingReplica is a fake machine that says it is a replica and answers
// every read unserved, as a replica that cannot confirm one does.
type unservingReplica struct {
	pb.UnimplementedJournalServer
	pb.UnimplementedAdminServer
	reads chan struct{}
}

func (f *unservingReplica) Inspect(context.Context, *pb.InspectRequest) (*pb.InspectReply, error) {
	return &pb.InspectReply{NodeId: 0xfa4e, CellId: 1, MachineRole: "replica"}, nil
}

func (f *unservingReplica) Read(_ context.Context, req *pb.ReadRequest) (*pb.ReadReply, error) {
	select {
	case f.reads <- struct{}{}:
	default:
	}
	return &pb.ReadReply{Served: false, FromSeq: req.GetFromSeq()}, nil
}

func TestAnUnservedReplicaSendsTheReadOnToTheNodes(t *testing.T) {
	// Arrange: records in a cell without replicas, and a Client that
	// dials a fake replica first, then the cell's nodes.
	c, id := cellJournal(t)
	ctx := testCtx(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fake := &unservingReplica{reads: make(chan struct{}, 1)}
	gs := grpc.NewServer()
	pb.RegisterJournalServer(gs, fake)
	pb.RegisterAdminServer(gs, fake)
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()
	j := dial(t, append([]string{lis.Addr().String()}, c.Addrs()...)...).Journal(id)
	testcell.AppendN(t, ctx, j, 3)

	// Act: one read.
	page, err := j.Read(ctx, journal.ReadRequest{FromSeq: 1})

	// Check: the replica was asked first, and the nodes served the page
	// within the same call.
	select {
	case <-fake.reads:
	default:
		t.Error("the replica was not asked")
	}
	if err != nil || !page.Served || len(page.Records) != 3 || string(page.Records[2]) != "r3" {
		t.Fatalf("read: %+v, %v; want the three records served by a node", page, err)
	}
}

func TestAClientOfReplicasAloneReadsAndNeverWrites(t *testing.T) {
	// Arrange: records written through the nodes; a Client of the replicas
	// alone.
	c, id := replicaCell(t)
	ctx := testCtx(t)
	testcell.AppendN(t, ctx, dial(t, c.Addrs()...).Journal(id), 4)
	j := dial(t, c.ReplicaAddrs()...).Journal(id)

	// Act.
	testcell.CheckRecords(t, ctx, j, 4)
	start := time.Now()
	_, err := j.Write(ctx, journal.WriteRequest{Leader: journal.LeaderUUID{Lo: 1}, Seq: 5, Records: rec("x")})

	// Check: the write was refused at once and sent nowhere.
	if !errors.Is(err, client.ErrNoServer) || time.Since(start) > time.Second {
		t.Fatalf("write through replicas alone: %v after %v; want ErrNoServer at once", err, time.Since(start))
	}
	if n := calls(c, true, methodWrite); n != 0 {
		t.Fatalf("the replicas received %d writes", n)
	}
}

func TestAReplicaFollowsItsJournalToAMachineAReconfigureAdmits(t *testing.T) {
	// Arrange: an idle machine, and an operator's Client of the nodes alone
	// (it finds the replicas in the cell's list of machines).
	c, id := replicaCell(t)
	ctx := testCtx(t)
	fresh, err := c.AddIdle()
	if err != nil {
		t.Fatal(err)
	}
	ops := dial(t, c.Addrs()...)
	adm := admin.New(ops)

	// Act: name a replica as a member (refused), then move the journal to
	// the new machine alone, and append through it.
	replicaErr := adm.Reconfigure(ctx, id, admin.Configuration{Members: []string{c.ReplicaAddrs()[0]},
		Quorum: admin.Majority()})
	if err := adm.Reconfigure(ctx, id, admin.Configuration{Members: []string{fresh.Addr},
		Quorum: admin.Majority()}); err != nil {
		t.Fatalf("reconfigure: %v", err)
	}
	testcell.AppendN(t, ctx, ops.Journal(id), 10)

	// Check: the replica serves every record the new leader decided.
	if !errors.Is(replicaErr, admin.ErrInvalidConfiguration) {
		t.Errorf("a replica named as a member: %v, want ErrInvalidConfiguration", replicaErr)
	}
	testcell.CheckRecords(t, ctx, dial(t, c.ReplicaAddrs()[0]).Journal(id), 10)
}
