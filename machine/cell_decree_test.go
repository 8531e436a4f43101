// This file checks the cell decree as the machines run it (cell_init.go's
// proposer over cell_acceptor.go's acceptors): an acceptor grants a ballot
// equal to its promise without a write and refuses one below it; a plan
// voted by one member only, the last one asked, is adopted by a second
// initiator; a formation interrupted after a member formatted the plan's
// stores and before its vote was recorded is resumed by the next CellInit,
// which forms the same plan; two initiators racing, one overtaking the
// other between its phases or both retrying at random, end in one plan at
// every member; and two CellInits sent to one machine at once form one
// plan. It opens real machines (Pebble stores in a temporary dir, gRPC on
// 127.0.0.1) and calls their Services in process (localClient), so a test
// can stand between a proposer and an acceptor.
package machine

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"google.golang.org/grpc"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/storage/machinerecord"
	"github.com/parosdb/paros/wire"
)

// decreeNode is one machine of a decree test, served over gRPC at addr so
// the cell it forms runs, and a restart comes back at the same address.
type decreeNode struct {
	t    *testing.T
	dir  string
	addr string
	m    *Machine
	gs   *grpc.Server
	fs   *crashingRecordFS
}

// startDecreeNode opens a node machine in dir and serves it at addr (""
// picks a port) until the test ends.
func startDecreeNode(t *testing.T, dir, addr string) *decreeNode {
	t.Helper()
	n := &decreeNode{t: t, dir: dir, addr: addr}
	n.open()
	t.Cleanup(n.stop)
	return n
}

// open opens the machine in n.dir and serves it at n.addr.
func (n *decreeNode) open() {
	n.t.Helper()
	if n.addr == "" {
		n.addr = "127.0.0.1:0"
	}
	lis, err := net.Listen("tcp", n.addr)
	if err != nil {
		n.t.Fatal(err)
	}
	tun := host.Production()
	tun.TickMs, tun.ElectionTicks = 20, 25
	m, err := Open(Config{DataDir: n.dir, Advertise: lis.Addr().String(), Tunables: tun,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		lis.Close()
		n.t.Fatal(err)
	}
	n.addr, n.m, n.fs = lis.Addr().String(), m, &crashingRecordFS{FS: vfs.Default}
	m.fs = n.fs
	n.gs = grpc.NewServer(m.ServerOptions()...)
	m.Register(n.gs)
	go func() { _ = n.gs.Serve(lis) }()
}

// stop stops serving and closes the machine (idempotent).
func (n *decreeNode) stop() {
	if n.gs == nil {
		return
	}
	n.gs.Stop()
	_ = n.m.Close()
	n.gs = nil
}

// restart is a crash and a start: whatever the machine did not record is
// lost, its stores and its record stay.
func (n *decreeNode) restart() {
	n.t.Helper()
	n.stop()
	n.open()
}

func (n *decreeNode) service() *Service        { return &Service{M: n.m} }
func (n *decreeNode) client() pb.MachineClient { return localClient{n.service()} }

// crashingRecordFS fails every rewrite of the machine record while armed:
// what a crash right before the record is written leaves on disk.
type crashingRecordFS struct {
	vfs.FS
	armed atomic.Bool
}

func (f *crashingRecordFS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	if f.armed.Load() {
		return nil, errors.New("crashed before the record was written")
	}
	return f.FS.Create(name, cat)
}

// gatedClient runs before ahead of each FormCell it forwards; an error
// from it is the call's (the FormCell never reaches the acceptor).
type gatedClient struct {
	pb.MachineClient
	before func() error
}

func (g gatedClient) FormCell(ctx context.Context, in *pb.FormCellRequest, opts ...grpc.CallOption) (*pb.FormCellReply, error) {
	if err := g.before(); err != nil {
		return nil, err
	}
	return g.MachineClient.FormCell(ctx, in, opts...)
}

var errLost = errors.New("lost on the wire")

// decreeCell starts n idle node machines.
func decreeCell(t *testing.T, n int) []*decreeNode {
	t.Helper()
	var out []*decreeNode
	for i := range n {
		out = append(out, startDecreeNode(t, filepath.Join(t.TempDir(), string(rune('a'+i))), ""))
	}
	return out
}

// formationOf is a formation over ns, every member reached through the
// client clients gives it (nil: in process).
func formationOf(ns []*decreeNode, clients func(i int, c pb.MachineClient) pb.MachineClient) *formation {
	f := &formation{journals: 1}
	for i, n := range ns {
		c := n.client()
		if clients != nil {
			c = clients(i, c)
		}
		f.addrs, f.ids, f.peers = append(f.addrs, n.addr), append(f.ids, n.m.Record().NodeID), append(f.peers, c)
	}
	return f
}

// proposeFrom runs decide as n's proposer would: from above n's promise.
func proposeFrom(ctx context.Context, n *decreeNode, f *formation) (*pb.CellPlan, string) {
	r := n.m.Record()
	return decide(ctx, f, r.NodeID, r.PromisedRound+1)
}

// wantFormed checks every node voted the plan whose cell id is cell and
// serves it, and that each one's vote is at or below its promise.
func wantFormed(t *testing.T, ns []*decreeNode, cell uint64) {
	t.Helper()
	for i, n := range ns {
		r := n.m.Record()
		if r.CellID != cell || r.VoteRound == 0 {
			t.Errorf("machine %d: cell %x vote round %d; want a vote for cell %x", i, r.CellID, r.VoteRound, cell)
		}
		if recBallot(r.PromisedRound, r.PromisedNode).Less(recBallot(r.VoteRound, r.VoteNode)) {
			t.Errorf("machine %d: vote %d.%d above the promise %d.%d", i, r.VoteRound, r.VoteNode, r.PromisedRound, r.PromisedNode)
		}
		if n.m.Runtime() == nil {
			t.Errorf("machine %d serves no cell", i)
		}
	}
}

func TestCellAcceptorGrantsItsPromiseAgainWithoutAWrite(t *testing.T) {
	// Arrange: one idle machine that promised 5.id.
	ctx := context.Background()
	n := decreeCell(t, 1)[0]
	id := n.m.Record().NodeID
	prep := func(round uint64) *pb.PrepareCellReply {
		t.Helper()
		r, err := n.client().PrepareCell(ctx, &pb.PrepareCellRequest{Ballot: &pb.Ballot{Round: round, Node: id}, Members: []uint64{id}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := prep(5); !r.GetPromised() {
		t.Fatalf("a first promise: %v", r)
	}
	before := n.m.Record()

	// Act: the same ballot again, then a lower one.
	again := prep(5)
	afterAgain := n.m.Record()
	lower := prep(4)

	// Check: the equal ballot is granted and writes nothing; the lower one
	// is refused naming the promise.
	if !again.GetPromised() || wire.BallotFromPB(again.GetPromise()) != recBallot(5, id) {
		t.Errorf("the promised ballot asked again: %v; want granted", again)
	}
	if afterAgain.Incarnation != before.Incarnation {
		t.Errorf("granting the promise again rewrote the record (incarnation %d, was %d)", afterAgain.Incarnation, before.Incarnation)
	}
	if lower.GetPromised() || lower.GetRefusal() != "promised_higher" || wire.BallotFromPB(lower.GetPromise()) != recBallot(5, id) {
		t.Errorf("a ballot below the promise: %v; want promised_higher naming 5", lower)
	}
}

func TestASecondInitiatorAdoptsAPlanOneMemberVoted(t *testing.T) {
	// Arrange: three idle machines; the first initiator's FormCells to the
	// first two are lost, so only the last member asked votes its plan.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ns := decreeCell(t, 3)
	lossy := formationOf(ns, func(i int, c pb.MachineClient) pb.MachineClient {
		if i == 2 {
			return c
		}
		return gatedClient{c, func() error { return errLost }}
	})
	first, refusal := proposeFrom(ctx, ns[0], lossy)
	if refusal != "contended" || first == nil || ns[2].m.Record().CellID != first.GetCellId() {
		t.Fatalf("the first initiator: %v %q, last member's cell %x; want contended, the last member voting its plan",
			first, refusal, ns[2].m.Record().CellID)
	}

	// Act: a second initiator over the whole cell. Its Phase 1 hears the
	// two members without a vote first: a majority, but not every member.
	second, refusal := proposeFrom(ctx, ns[1], formationOf(ns, nil))

	// Check: it chose the voted plan, and every member formed it.
	if refusal != "" || second.GetCellId() != first.GetCellId() {
		t.Fatalf("the second initiator: plan %x %q; want the voted plan %x chosen", second.GetCellId(), refusal, first.GetCellId())
	}
	wantFormed(t, ns, first.GetCellId())
}

func TestCellInitResumesAFormationCrashedBeforeTheVoteWasRecorded(t *testing.T) {
	// Arrange: three idle machines. The first initiator's FormCell reaches
	// every member, but the last two crash after formatting the plan's
	// stores and before recording their vote; only the first votes.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ns := decreeCell(t, 3)
	crashing := formationOf(ns, func(i int, c pb.MachineClient) pb.MachineClient {
		if i == 0 {
			return c
		}
		return gatedClient{c, func() error { ns[i].fs.armed.Store(true); return nil }}
	})
	plan, refusal := proposeFrom(ctx, ns[0], crashing)
	if refusal != "contended" || plan == nil {
		t.Fatalf("the interrupted formation: %v %q; want contended with its plan", plan, refusal)
	}
	j := wire.JournalIDFromPB(plan.GetJournals()[0])
	for _, i := range []int{1, 2} {
		bs, err := ns[i].m.db.Journal(j).Boot()
		if err != nil || bs.Marker == nil || ns[i].m.Record().CellID != 0 {
			t.Fatalf("machine %d before the crash: marker %v (%v), cell %x; want a formatted store and no vote",
				i, bs.Marker, err, ns[i].m.Record().CellID)
		}
		ns[i].restart()
	}

	// Act: the operator's next CellInit, sent to a machine that crashed.
	reply, err := ns[2].service().CellInit(ctx, &pb.CellInitRequest{Members: []string{ns[0].addr, ns[1].addr, ns[2].addr}, Journals: 1})

	// Check: the same plan is chosen and formed at every member, over the
	// stores formatted before the crash.
	if err != nil || !reply.GetInitialized() || reply.GetPlan().GetCellId() != plan.GetCellId() {
		t.Fatalf("the resumed CellInit: %v, %v; want the plan %x initialized", reply, err, plan.GetCellId())
	}
	wantFormed(t, ns, plan.GetCellId())
	for i, n := range ns {
		if got := n.m.Record().Journals; len(got) != 1 || got[0] != (machinerecord.JournalID{Tenant: j.Tenant, Journal: j.Journal}) {
			t.Errorf("machine %d holds journals %v; want the plan's %s", i, got, j)
		}
	}
}

func TestAnInitiatorOvertakenBetweenItsPhasesAdoptsTheOtherPlan(t *testing.T) {
	// Arrange: three idle machines. The first initiator wins Phase 1; before
	// its first FormCell leaves, a second initiator runs the whole decree.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ns := decreeCell(t, 3)
	var once sync.Once
	var overtaker *pb.CellPlan
	var overtakerRefusal string
	slow := formationOf(ns, func(_ int, c pb.MachineClient) pb.MachineClient {
		return gatedClient{c, func() error {
			once.Do(func() { overtaker, overtakerRefusal = proposeFrom(ctx, ns[2], formationOf(ns, nil)) })
			return nil
		}}
	})

	// Act: the first initiator, then its retry (what InitCell does).
	first, firstRefusal := proposeFrom(ctx, ns[0], slow)
	retry, retryRefusal := proposeFrom(ctx, ns[0], formationOf(ns, nil))

	// Check: the second initiator chose its plan; the first lost Phase 2 at
	// its ballot (every member promised the higher one) and its retry
	// adopted the chosen plan.
	if overtakerRefusal != "" || overtaker == nil {
		t.Fatalf("the overtaking initiator: %v %q; want its plan chosen", overtaker, overtakerRefusal)
	}
	if firstRefusal != "contended" || first.GetCellId() == overtaker.GetCellId() {
		t.Errorf("the overtaken initiator: plan %x %q; want contended over a plan of its own", first.GetCellId(), firstRefusal)
	}
	if retryRefusal != "" || retry.GetCellId() != overtaker.GetCellId() {
		t.Errorf("the retry: plan %x %q; want the chosen plan %x", retry.GetCellId(), retryRefusal, overtaker.GetCellId())
	}
	wantFormed(t, ns, overtaker.GetCellId())
}

func TestTwoInitiatorsRacingFormOnePlan(t *testing.T) {
	for round := range 4 {
		// Arrange: three idle machines; two initiators.
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		ns := decreeCell(t, 3)

		// Act: each proposes until it has a chosen plan, as InitCell retries.
		var plans [2]*pb.CellPlan
		var wg sync.WaitGroup
		for k, via := range []*decreeNode{ns[0], ns[2]} {
			wg.Go(func() {
				for ctx.Err() == nil {
					if p, refusal := proposeFrom(ctx, via, formationOf(ns, nil)); refusal == "" {
						plans[k] = p
						return
					}
					time.Sleep(time.Millisecond)
				}
			})
		}
		wg.Wait()
		cancel()

		// Check: both learned one plan, and every member formed it.
		if plans[0] == nil || plans[1] == nil || plans[0].GetCellId() != plans[1].GetCellId() {
			t.Fatalf("race %d: the initiators chose %x and %x; want one plan", round, plans[0].GetCellId(), plans[1].GetCellId())
		}
		wantFormed(t, ns, plans[0].GetCellId())
		for _, n := range ns {
			n.stop()
		}
	}
}

func TestConcurrentCellInitsAtOneMachineFormOnePlan(t *testing.T) {
	// Arrange: three idle machines.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ns := decreeCell(t, 3)
	req := &pb.CellInitRequest{Members: []string{ns[0].addr, ns[1].addr, ns[2].addr}, Journals: 1}

	// Act: two CellInits at the same machine at once (two operators): the
	// same node, and the same first round.
	var replies [2]*pb.CellInitReply
	var errs [2]error
	var wg sync.WaitGroup
	for k := range replies {
		wg.Go(func() { replies[k], errs[k] = ns[0].service().CellInit(ctx, req) })
	}
	wg.Wait()

	// Check: both initialized the one plan every member formed.
	for k := range replies {
		if errs[k] != nil || !replies[k].GetInitialized() {
			t.Fatalf("CellInit %d: %v, %v; want initialized", k, replies[k], errs[k])
		}
	}
	if replies[0].GetPlan().GetCellId() != replies[1].GetPlan().GetCellId() {
		t.Fatalf("the CellInits chose %x and %x; want one plan", replies[0].GetPlan().GetCellId(), replies[1].GetPlan().GetCellId())
	}
	wantFormed(t, ns, replies[0].GetPlan().GetCellId())
}

// recBallot is a ballot as the machine record keeps it (round and node).
func recBallot(round, node uint64) paxos.Ballot {
	return paxos.Ballot{Round: round, Node: paxos.NodeID(node)}
}
