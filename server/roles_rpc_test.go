package server_test

// This file checks the parts of the rule table that judge who a principal
// is beyond the gate's yes or no: Inspect shows the cell's machines (every
// machine's id, address and role) only to a peer machine or a token whose
// scopes cover every journal, never to a token of a tenant or a journal,
// whose reply is otherwise the same; CallerOf hands a handler the caller
// the gate established (its certificate's node, whether its token is an
// admin's) and Caller.Denied words a PermissionDenied naming the caller
// and the method; and a backend that is a CellVetter refuses a
// Reconfigure or a Handoff naming machines the cell does not know before
// the host sees it.

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/security"
	"github.com/parosdb/paros/server"
)

// The rest of the Machine service answers every call with a success (the
// rule table's check needs each reachable past the gate).
func (fakeMachine) Admit(context.Context, *pb.AdmitRequest) (*pb.AdmitReply, error) {
	return &pb.AdmitReply{Admitted: true}, nil
}

func (fakeMachine) JoinCell(context.Context, *pb.JoinCellRequest) (*pb.JoinCellReply, error) {
	return &pb.JoinCellReply{Joined: true}, nil
}

func (fakeMachine) JoinJournal(context.Context, *pb.JoinJournalRequest) (*pb.JoinJournalReply, error) {
	return &pb.JoinJournalReply{Joined: true}, nil
}

func (fakeMachine) SetReplicas(context.Context, *pb.SetReplicasRequest) (*pb.SetReplicasReply, error) {
	return &pb.SetReplicasReply{Set: true}, nil
}

func (fakeMachine) SetProxies(context.Context, *pb.SetProxiesRequest) (*pb.SetProxiesReply, error) {
	return &pb.SetProxiesReply{Set: true}, nil
}

// cellMachines is the cell the Admin of serveCell reports.
var cellMachines = []server.CellMachine{{NodeID: serverID, Addr: "10.0.0.1:7401"}, {NodeID: memberID, Addr: "10.0.0.2:7401"},
	{NodeID: replicaID, Addr: "10.0.0.3:7401", Role: "replica"}}

// callerMachine answers Identify with the caller CallerOf gives (node id:
// its certificate's node, addr: "admin" for an admin's token) and JoinCell
// with Caller.Denied.
type callerMachine struct {
	pb.UnimplementedMachineServer
}

func (callerMachine) Identify(ctx context.Context, _ *pb.IdentifyRequest) (*pb.IdentifyReply, error) {
	c, ok := server.CallerOf(ctx)
	if !ok || !c.Secured {
		return &pb.IdentifyReply{Addr: "no gate"}, nil
	}
	out := &pb.IdentifyReply{NodeId: c.Node}
	if c.AdminAll {
		out.Addr = "admin"
	}
	return out, nil
}

func (callerMachine) JoinCell(ctx context.Context, _ *pb.JoinCellRequest) (*pb.JoinCellReply, error) {
	c, _ := server.CallerOf(ctx)
	return nil, c.Denied(pb.Machine_JoinCell_FullMethodName, "a test says no")
}

// serveWith serves what register adds with ServerOptions(sec) on a
// loopback TCP listener and returns its address.
func serveWith(t *testing.T, sec server.Security, register func(*grpc.Server)) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(server.ServerOptions(sec)...)
	register(gs)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return lis.Addr().String()
}

// serveCell serves Admin (reporting cellMachines) and callerMachine with
// ServerOptions(sec) and returns the address.
func serveCell(t *testing.T, sec server.Security, b server.Backend) string {
	t.Helper()
	return serveWith(t, sec, func(gs *grpc.Server) {
		pb.RegisterAdminServer(gs, &server.Admin{B: b, Info: func() server.AdminInfo {
			return server.AdminInfo{NodeID: serverID, CellID: 9, Journals: allJour, Machines: cellMachines, Role: "node"}
		}})
		pb.RegisterMachineServer(gs, callerMachine{})
	})
}

func TestInspectShowsTheCellOnlyToWhoMaySeeIt(t *testing.T) {
	// Arrange.
	cell := newTestCell(t)
	addr := serveCell(t, server.Security{Node: cell.node(t, serverID)}, servedBackend())
	asToken := pb.NewAdminClient(cell.clientConn(t, addr))
	asPeer := pb.NewAdminClient(peerConn(t, addr, cell.node(t, memberID)))
	everything := security.Scope{Ops: security.OpRead} // --all, read only
	otherTenant := security.Scope{Tenant: foreign.Tenant, Ops: security.OpRead | security.OpWrite}
	cases := []struct {
		name  string
		c     pb.AdminClient
		ctx   context.Context
		req   *pb.InspectRequest
		cell  bool // sees the machines
		wantJ int  // journals listed
	}{
		{"a tenant's token, node only", asToken, as(cell.token(t, "tenant", tenantRW)), &pb.InspectRequest{NodeOnly: true}, false, 2},
		{"another tenant's token, node only", asToken, as(cell.token(t, "other", otherTenant)), &pb.InspectRequest{NodeOnly: true}, false, 1},
		{"another tenant's token, its journal", asToken, as(cell.token(t, "other", otherTenant)), &pb.InspectRequest{Journal: foreignPB}, false, 1},
		{"a journal's token", asToken, as(cell.token(t, "reader", readJid)), &pb.InspectRequest{Journal: jidPB}, false, 1},
		{"a tenant admin's token", asToken, as(cell.token(t, "tenant-admin", adminTnt)), &pb.InspectRequest{NodeOnly: true}, false, 2},
		{"a token over every journal", asToken, as(cell.token(t, "all", everything)), &pb.InspectRequest{NodeOnly: true}, true, 3},
		{"an admin's token", asToken, as(cell.token(t, "root", adminAll)), &pb.InspectRequest{Journal: jidPB}, true, 3},
		{"a peer machine", asPeer, context.Background(), &pb.InspectRequest{NodeOnly: true}, true, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Act.
			r, err := tc.c.Inspect(tc.ctx, tc.req)

			// Check: the machines only to who may see the cell; the node's
			// own facts and the journals in scope to everyone.
			if err != nil {
				t.Fatal(err)
			}
			if got := len(r.GetMachines()); (got == len(cellMachines)) != tc.cell || (got != 0 && got != len(cellMachines)) {
				t.Errorf("machines %v; want them shown: %v", r.GetMachines(), tc.cell)
			}
			if r.GetNodeId() != serverID || r.GetCellId() != 9 || r.GetMachineRole() != "node" || len(r.GetJournals()) != tc.wantJ {
				t.Errorf("node facts %v; want node %x cell 9 role node, %d journals", r, serverID, tc.wantJ)
			}
			if tc.req.GetJournal() != nil && r.GetRole() != "leader" {
				t.Errorf("journal facts %v; want the leader's", r)
			}
		})
	}

	t.Run("insecure mode", func(t *testing.T) {
		conn := dial(t, serveCell(t, server.Security{}, servedBackend()), nil)
		r, err := pb.NewAdminClient(conn).Inspect(context.Background(), &pb.InspectRequest{NodeOnly: true})
		if err != nil || len(r.GetMachines()) != len(cellMachines) {
			t.Fatalf("--insecure: %v, %v; want every machine", r, err)
		}
	})
}

func TestCallerOfIsWhoTheGateSaw(t *testing.T) {
	// Arrange.
	cell := newTestCell(t)
	addr := serveCell(t, server.Security{Node: cell.node(t, serverID)}, servedBackend())
	asToken := pb.NewMachineClient(cell.clientConn(t, addr))
	asPeer := pb.NewMachineClient(peerConn(t, addr, cell.node(t, memberID)))

	// Act.
	peer, errPeer := asPeer.Identify(context.Background(), &pb.IdentifyRequest{})
	root, errRoot := asToken.Identify(as(cell.token(t, "root", adminAll)), &pb.IdentifyRequest{})
	tenant, errTenant := asToken.Identify(as(cell.token(t, "tenant-admin", adminTnt)), &pb.IdentifyRequest{})
	_, denied := asPeer.JoinCell(context.Background(), &pb.JoinCellRequest{})
	insecure, errInsecure := pb.NewMachineClient(dial(t, serveCell(t, server.Security{}, servedBackend()), nil)).
		Identify(context.Background(), &pb.IdentifyRequest{})

	// Check.
	if errPeer != nil || peer.GetNodeId() != memberID || peer.GetAddr() != "" {
		t.Errorf("a peer: %v, %v; want its node, no admin", peer, errPeer)
	}
	if errRoot != nil || root.GetNodeId() != 0 || root.GetAddr() != "admin" {
		t.Errorf("an admin's token: %v, %v; want no node, admin", root, errRoot)
	}
	if errTenant != nil || tenant.GetNodeId() != 0 || tenant.GetAddr() != "" {
		t.Errorf("a tenant admin's token: %v, %v; want no node, no admin over everything", tenant, errTenant)
	}
	msg := status.Convert(denied).Message()
	if status.Code(denied) != codes.PermissionDenied || !strings.Contains(msg, "node 00000000000000b2") ||
		!strings.Contains(msg, pb.Machine_JoinCell_FullMethodName) || !strings.Contains(msg, "a test says no") {
		t.Errorf("Denied: %v; want PermissionDenied naming the caller, the method and why", denied)
	}
	if errInsecure != nil || insecure.GetAddr() != "no gate" || insecure.GetNodeId() != 0 {
		t.Errorf("--insecure: %v, %v; want a caller that is not secured", insecure, errInsecure)
	}
}

// vettingBackend is a backend that knows the cell: node ids 2 to 4 are
// its machines, and it refuses a configuration or a successor naming any
// other.
type vettingBackend struct {
	fakeBackend
	vetted [][]paxos.NodeID
}

func (b *vettingBackend) VetConfiguration(_ context.Context, members []paxos.NodeID, _ quorum.Spec) string {
	b.vetted = append(b.vetted, members)
	for _, m := range members {
		if m < 2 || m > 4 {
			return "unknown_machine: no such machine"
		}
	}
	return ""
}

func (b *vettingBackend) VetSuccessor(to paxos.NodeID) string {
	if to < 2 || to > 4 {
		return "unknown_machine: no such machine"
	}
	return ""
}

func TestACellVetterJudgesMachinesBeforeTheHost(t *testing.T) {
	// Arrange.
	b := &vettingBackend{}
	s := &server.Admin{B: b, Info: func() server.AdminInfo { return server.AdminInfo{NodeID: 1} }}
	ctx := context.Background()

	// Act.
	bad, err1 := s.Reconfigure(ctx, &pb.ReconfigureRequest{Journal: jidPB, Members: []uint64{1}})
	_, _ = s.Reconfigure(ctx, &pb.ReconfigureRequest{Journal: jidPB, Members: []uint64{2, 3, 9}})
	good, err2 := s.Reconfigure(ctx, &pb.ReconfigureRequest{Journal: jidPB, Members: []uint64{2, 3, 4}})
	badTo, err3 := s.Handoff(ctx, &pb.HandoffRequest{Journal: jidPB, To: 7})
	anyTo, err4 := s.Handoff(ctx, &pb.HandoffRequest{Journal: jidPB})

	// Check: the refusals are the vetter's, and only the calls it let
	// through reached the host.
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if bad.GetAccepted() || !strings.HasPrefix(bad.GetRefusal(), "unknown_machine") {
		t.Errorf("reconfigure to [1]: %v; want unknown_machine", bad)
	}
	if !good.GetAccepted() || !strings.HasPrefix(badTo.GetRefusal(), "unknown_machine") || !anyTo.GetHandedOff() {
		t.Errorf("reconfigure to [2 3 4]: %v; handoff to 7: %v; handoff to anyone: %v", good, badTo, anyTo)
	}
	if len(b.vetted) != 3 || !slices.Equal(b.vetted[2], []paxos.NodeID{2, 3, 4}) {
		t.Errorf("vetted %v", b.vetted)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.calls) != 2 || b.calls[0].Kind != host.CallReconfigure || b.calls[1].Kind != host.CallHandoff {
		t.Errorf("the host got %+v; want the reconfiguration to [2 3 4] and the handoff to anyone", b.calls)
	}
}
