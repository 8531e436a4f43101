// This file checks the handler's part of the cell calls' rules (server/rules.go's
// table, cell_acceptor.go, membership.go): a PrepareCell round more than 2^20
// above the promise is refused round_too_far and promises nothing, and
// cell init still forms the cell after a caller pushed one member's
// promise up by the most the bound allows (the proposer steps the others
// up); on a secure cell a machine certificate of the CA that is no
// founding member is refused PrepareCell, FormCell and JoinCell
// (PermissionDenied naming the method), a founder's certificate with a
// ballot of another node too, a peer may not join an acceptor machine,
// and SetReplicas needs an admin; Reconfigure refuses a member that is no
// machine of the cell (unknown_machine) or does not answer now
// (machine_unreachable), Handoff a successor that is no machine of the
// cell, and Admit a node id the machine at the address does not prove
// (unknown_machine) or an address nobody answers at (machine_unreachable),
// recording nothing. It opens real machines (testcell and serveMachine:
// Pebble stores in a temporary dir, gRPC on 127.0.0.1).
package machine_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/internal/testcell"
	"github.com/parosdb/paros/machine"
	"github.com/parosdb/paros/security"
	"github.com/parosdb/paros/wire"
)

// leadMax is celldecree.RoundLeadMax: how far above its promise an
// acceptor takes a PrepareCell round.
const leadMax = 1 << 20

func TestFormationRoundsCannotBeExhaustedAndInitStillForms(t *testing.T) {
	// Arrange: three idle machines (plaintext: the bound holds whoever
	// calls).
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var ms []*machine.Machine
	var addrs []string
	for i := range 3 {
		m, a := serveMachine(t, filepath.Join(t.TempDir(), fmt.Sprint("m", i)), machine.RoleNode)
		ms, addrs = append(ms, m), append(addrs, a)
	}
	victim := machineClient(t, addrs[1])
	const outsider = 0x0bad
	named := []uint64{outsider, ms[1].NodeID()}
	prepare := func(round uint64) *pb.PrepareCellReply {
		t.Helper()
		r, err := victim.PrepareCell(ctx, &pb.PrepareCellRequest{Ballot: &pb.Ballot{Round: round, Node: outsider}, Members: named})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	// Act: the round 2^62 the probe sent, one past the bound, and the most
	// the bound allows; then an honest cell init.
	exhaust := prepare(paxos.BallotRoundMax)
	past := prepare(leadMax + 1)
	unnamed, errUnnamed := victim.PrepareCell(ctx, &pb.PrepareCellRequest{Ballot: &pb.Ballot{Round: 5, Node: outsider}, Members: []uint64{outsider}})
	most := prepare(leadMax)
	plan, err := machine.InitCell(ctx, addrs[0], addrs, nil, 1, machine.Access{})

	// Check.
	for name, r := range map[string]*pb.PrepareCellReply{"round 2^62": exhaust, "promise+2^20+1": past} {
		if r.GetPromised() || r.GetRefusal() != "round_too_far" || r.GetPromise().GetRound() != 0 {
			t.Errorf("%s: %v; want round_too_far naming the promise 0", name, r)
		}
	}
	if errUnnamed != nil || unnamed.GetPromised() || unnamed.GetRefusal() != "not_a_member" {
		t.Errorf("a PrepareCell whose members leave the acceptor out: %v, %v; want not_a_member", unnamed, errUnnamed)
	}
	if !most.GetPromised() {
		t.Errorf("promise+2^20: %v; want promised", most)
	}
	if err != nil {
		t.Fatalf("cell init after the push: %v", err)
	}
	if len(plan.GetMembers()) != 3 {
		t.Fatalf("plan %v", plan)
	}
	for i, m := range ms {
		if r := m.Record(); r.CellID != plan.GetCellId() || r.PromisedRound <= leadMax || r.PromisedRound >= 4*leadMax {
			t.Errorf("machine %d: cell %x promised round %d; want cell %x, a round just past the push", i, r.CellID, r.PromisedRound, plan.GetCellId())
		}
	}
}

// secureConn dials addr over TLS trusting the cell's CA and presenting
// cert (nil: none).
func secureConn(t *testing.T, c *testcell.Cell, addr string, cert *security.Node) *grpc.ClientConn {
	t.Helper()
	var cfg *tls.Config
	if cert != nil {
		cfg = cert.PeerConfig(0)
	} else {
		var err error
		if cfg, err = c.ClientTLS(); err != nil {
			t.Fatal(err)
		}
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// issue makes a machine certificate of c's CA for node id: a machine of
// the CA that was never admitted to the cell.
func issue(t *testing.T, c *testcell.Cell, id uint64) *security.Node {
	t.Helper()
	dir := t.TempDir()
	crt, key, err := c.CA.IssueNode(id, []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&security.CA{Cert: c.CA.Cert}).WriteCA(dir); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{security.NodeCertFile: crt, security.NodeKeyFile: key} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	n, err := security.LoadNode(dir)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// wantDenied checks a call was refused PermissionDenied naming method.
func wantDenied(t *testing.T, what string, err error, method string) {
	t.Helper()
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(status.Convert(err).Message(), method) {
		t.Errorf("%s: %v; want PermissionDenied naming %s", what, err, method)
	}
}

func TestCellCallsComeOnlyFromTheRolesThatSendThem(t *testing.T) {
	// Arrange: a secure formed cell, an idle replica machine and an idle
	// node machine; an outsider's certificate of the CA; a founder's.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := testcell.Start(ctx, t.TempDir(), testcell.Options{Secure: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	idleReplica, err := c.AddIdleReplica()
	if err != nil {
		t.Fatal(err)
	}
	idleNode, err := c.AddIdle()
	if err != nil {
		t.Fatal(err)
	}
	outsider := issue(t, c, 0x0bad)
	founder := c.Nodes[0].TLS
	asOutsider := func(addr string) pb.MachineClient { return pb.NewMachineClient(secureConn(t, c, addr, outsider)) }
	asFounder := func(addr string) pb.MachineClient { return pb.NewMachineClient(secureConn(t, c, addr, founder)) }
	target := c.Nodes[1].Addr
	promisedBefore := c.Machine(1).Record().PromisedRound
	plan := c.Plan
	plan.Replicas = []*pb.Member{{NodeId: c.Machine(3).NodeID(), Addr: idleReplica.Addr}}
	mine := func(id uint64) *pb.Ballot { return &pb.Ballot{Round: promisedBefore + 1, Node: id} }

	// Act.
	_, prepOut := asOutsider(target).PrepareCell(ctx, &pb.PrepareCellRequest{Ballot: mine(outsider.NodeID),
		Members: []uint64{outsider.NodeID, c.Machine(1).NodeID()}})
	_, prepForged := asFounder(target).PrepareCell(ctx, &pb.PrepareCellRequest{Ballot: mine(c.Machine(2).NodeID()),
		Members: []uint64{founder.NodeID, c.Machine(1).NodeID()}})
	_, formOut := asOutsider(target).FormCell(ctx, &pb.FormCellRequest{Ballot: mine(outsider.NodeID), Plan: c.Plan})
	_, joinOut := asOutsider(idleReplica.Addr).JoinCell(ctx, &pb.JoinCellRequest{Plan: plan})
	_, joinNode := asFounder(idleNode.Addr).JoinCell(ctx, &pb.JoinCellRequest{Plan: c.Plan,
		Admitted: []*pb.Member{{NodeId: c.Machine(4).NodeID(), Addr: idleNode.Addr}}})
	_, setRep := asFounder(target).SetReplicas(ctx, &pb.SetReplicasRequest{CellId: c.Plan.GetCellId()})
	_, setProx := asOutsider(target).SetProxies(ctx, &pb.SetProxiesRequest{CellId: c.Plan.GetCellId(),
		Proxies: []*pb.Member{{NodeId: outsider.NodeID, Addr: "127.0.0.1:1"}}})
	founderJoin, errFounderJoin := asFounder(idleReplica.Addr).JoinCell(ctx, &pb.JoinCellRequest{Plan: plan})

	// Check: each refused naming its method; nothing changed; the
	// formation's proposer may still join the replica.
	wantDenied(t, "an outsider's PrepareCell", prepOut, pb.Machine_PrepareCell_FullMethodName)
	wantDenied(t, "a founder's PrepareCell under another node's ballot", prepForged, pb.Machine_PrepareCell_FullMethodName)
	wantDenied(t, "an outsider's FormCell", formOut, pb.Machine_FormCell_FullMethodName)
	wantDenied(t, "an outsider's JoinCell", joinOut, pb.Machine_JoinCell_FullMethodName)
	wantDenied(t, "a peer's JoinCell of an acceptor machine", joinNode, pb.Machine_JoinCell_FullMethodName)
	wantDenied(t, "a founder's SetReplicas", setRep, pb.Machine_SetReplicas_FullMethodName)
	wantDenied(t, "an outsider's SetProxies", setProx, pb.Machine_SetProxies_FullMethodName)
	if r := c.Machine(1).Record(); r.PromisedRound != promisedBefore || len(r.Proxies) != 0 {
		t.Errorf("the target's record moved: promised %d (was %d), proxies %v", r.PromisedRound, promisedBefore, r.Proxies)
	}
	if r := c.Machine(4).Record(); r.CellID != 0 {
		t.Errorf("the idle node joined cell %x", r.CellID)
	}
	if errFounderJoin != nil || !founderJoin.GetJoined() {
		t.Errorf("the proposer's JoinCell of a replica: %v, %v; want joined", founderJoin, errFounderJoin)
	}
}

// adminClient dials the Admin service at addr in plaintext.
func adminClient(t *testing.T, addr string) pb.AdminClient {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return pb.NewAdminClient(cc)
}

func TestOperatorCallsNameOnlyLiveMachinesOfTheCell(t *testing.T) {
	// Arrange: a cell of three nodes and an idle one; the journal's leader.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := testcell.Start(ctx, t.TempDir(), testcell.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	idle, err := c.AddIdle()
	if err != nil {
		t.Fatal(err)
	}
	id := c.Journals[0]
	jpb := wire.JournalIDToPB(id)
	li, err := c.WaitLeader(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	leader := adminClient(t, c.Nodes[li].Addr)
	other := (li + 1) % 3
	ids := func(is ...int) []uint64 {
		var out []uint64
		for _, i := range is {
			out = append(out, c.Machine(i).NodeID())
		}
		return out
	}
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	admit := func(node uint64, addr string) (*pb.AdmitReply, error) {
		return machineClient(t, c.Nodes[li].Addr).Admit(ctx, &pb.AdmitRequest{CellId: c.Plan.GetCellId(),
			Member: &pb.Member{NodeId: node, Addr: addr}})
	}

	// Act: Reconfigure to member [1] (the probe's), to members with one
	// made up, to a replica-free set including the idle machine never
	// admitted; Handoff to a made-up node; Admit of a made-up id at the
	// idle machine's address, and at an address nobody answers.
	one, err1 := leader.Reconfigure(ctx, &pb.ReconfigureRequest{Journal: jpb, Members: []uint64{1}})
	madeUp, err2 := leader.Reconfigure(ctx, &pb.ReconfigureRequest{Journal: jpb, Members: append(ids(0, 1), 0x77)})
	notAdmitted, err3 := leader.Reconfigure(ctx, &pb.ReconfigureRequest{Journal: jpb, Members: ids(0, 1, 2, 3)})
	handoff, err4 := leader.Handoff(ctx, &pb.HandoffRequest{Journal: jpb, To: 0x77})
	fakeID, err5 := admit(0x77, idle.Addr)
	nobody, err6 := admit(0x78, deadAddr)
	withOther := ids(li, other)
	if err := c.Stop(other); err != nil {
		t.Fatal(err)
	}
	empty, err7 := leader.Reconfigure(ctx, &pb.ReconfigureRequest{Journal: jpb})
	withDown, err8 := leader.Reconfigure(ctx, &pb.ReconfigureRequest{Journal: jpb, Members: withOther})

	// Check.
	for i, err := range []error{err1, err2, err3, err4, err5, err6, err7, err8} {
		if err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	for name, r := range map[string]string{"reconfigure to [1]": one.GetRefusal(), "a made-up member": madeUp.GetRefusal(),
		"a machine never admitted": notAdmitted.GetRefusal(), "handoff to a made-up node": handoff.GetRefusal(),
		"admit of a made-up id": fakeID.GetRefusal()} {
		if !strings.HasPrefix(r, "unknown_machine") {
			t.Errorf("%s: refusal %q; want unknown_machine", name, r)
		}
	}
	if !strings.HasPrefix(nobody.GetRefusal(), "machine_unreachable") {
		t.Errorf("admit at a dead address: %v; want machine_unreachable", nobody)
	}
	if !strings.HasPrefix(empty.GetRefusal(), "invalid_configuration") {
		t.Errorf("reconfigure to no member: %v; want invalid_configuration", empty)
	}
	if !strings.HasPrefix(withDown.GetRefusal(), "machine_unreachable") || withDown.GetAccepted() {
		t.Errorf("reconfigure to a stopped member: %v; want machine_unreachable", withDown)
	}
	for i := range 3 {
		if i == other {
			continue
		}
		r := c.Machine(i).Record()
		if known := len(r.Admitted); known != 0 {
			t.Errorf("machine %d admitted %v", i, r.Admitted)
		}
	}
	if st, err := c.Inspect(ctx, li, id); err != nil || st.Role != "leader" || len(st.Config.Acceptors.Members()) != 3 {
		t.Errorf("the leader after the refusals: %+v, %v; want it leading the founding configuration", st, err)
	}
}
