// This file checks the replica machine (role.go): cell init names the
// replicas in the plan and joins them; every acceptor's journal spec names
// them and a replica serves each journal as a replica node; a replica
// machine votes on nothing (PrepareCell, FormCell and JoinJournal are
// refused "replica"); cell init refuses a member started as a replica and a
// replica started as a node; and a formed replica's data dir started as a
// node, or a node's started as a replica, is refused with ErrRoleMismatch,
// while the right role starts it again from its stores. It opens real
// machines (Pebble stores in a temporary dir, gRPC on 127.0.0.1, plaintext).
package machine_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/internal/testcell"
	"github.com/parosdb/paros/machine"
	"github.com/parosdb/paros/wire"
)

// quiet discards the machines' logs.
var quiet = slog.New(slog.DiscardHandler)

// serveMachine opens a machine of role in dir and serves it on 127.0.0.1:0
// until the test ends; it returns the machine and its address.
func serveMachine(t *testing.T, dir string, role machine.Role) (*machine.Machine, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m, err := machine.Open(machine.Config{DataDir: dir, Advertise: lis.Addr().String(), Tunables: testcell.FastTunables(), Role: role,
		Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(m.ServerOptions()...)
	m.Register(gs)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(func() {
		gs.Stop()
		_ = m.Close()
	})
	return m, lis.Addr().String()
}

// machineClient dials the Machine service at addr in plaintext.
func machineClient(t *testing.T, addr string) pb.MachineClient {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return pb.NewMachineClient(cc)
}

func TestReplicasAreNamedInThePlanAndServeEveryJournalAsReplicas(t *testing.T) {
	// Arrange and act: a cell of three nodes and two replicas, two journals.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := testcell.Start(ctx, t.TempDir(), testcell.Options{Journals: 2, Replicas: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// Check: the plan names the two replicas; each machine's specs name
	// them; a replica serves every journal as a replica node, a node as a
	// member.
	var want []paxos.NodeID
	for _, r := range c.Plan.GetReplicas() {
		want = append(want, paxos.NodeID(r.GetNodeId()))
	}
	if len(want) != 2 || !slices.IsSorted(want) {
		t.Fatalf("the plan names replicas %v, want two, sorted", want)
	}
	for i, n := range c.Nodes {
		m := c.Machine(i)
		if got := slices.Contains(want, paxos.NodeID(m.NodeID())); got != n.Replica {
			t.Fatalf("machine %d: named a replica %v, started as one %v", i+1, got, n.Replica)
		}
		for _, id := range c.Journals {
			spec, ok := m.Runtime().Spec(id)
			if !ok || spec.Replica != n.Replica || !slices.Equal(spec.Replicas, want) || len(spec.Members) != 3 {
				t.Fatalf("machine %d journal %s: spec %+v (served %v)", i+1, id, spec, ok)
			}
		}
		r, err := machineClient(t, n.Addr).Identify(ctx, &pb.IdentifyRequest{})
		if wantRole := map[bool]string{true: "replica", false: "node"}[n.Replica]; err != nil || r.GetRole() != wantRole {
			t.Fatalf("machine %d identifies as %q (%v), want %q", i+1, r.GetRole(), err, wantRole)
		}
		in, err := c.Inspect(ctx, i, c.Journals[0])
		if err != nil || (in.Role == "replica") != n.Replica {
			t.Fatalf("machine %d inspects as %q (%v)", i+1, in.Role, err)
		}
	}
}

func TestAReplicaVotesOnNothing(t *testing.T) {
	// Arrange: an idle replica machine, and a formed cell's replica.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, idle := serveMachine(t, t.TempDir(), machine.RoleReplica)
	c, err := testcell.Start(ctx, t.TempDir(), testcell.Options{Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	formed := machineClient(t, c.ReplicaAddrs()[0])
	b := &pb.Ballot{Round: 1, Node: 7}

	// Act and check.
	if r, err := machineClient(t, idle).PrepareCell(ctx, &pb.PrepareCellRequest{Ballot: b}); err != nil || r.GetPromised() || r.GetRefusal() != "replica" {
		t.Fatalf("prepare at a replica: %+v, %v; want refused replica", r, err)
	}
	if r, err := machineClient(t, idle).FormCell(ctx, &pb.FormCellRequest{Ballot: b, Plan: c.Plan}); err != nil || r.GetFormed() || r.GetRefusal() != "replica" {
		t.Fatalf("form at a replica: %+v, %v; want refused replica", r, err)
	}
	jj := &pb.JoinJournalRequest{Journal: wire.JournalIDToPB(c.Journals[0]), Members: []uint64{c.Machine(3).NodeID()}}
	if r, err := formed.JoinJournal(ctx, jj); err != nil || r.GetJoined() || r.GetRefusal() != "replica" {
		t.Fatalf("join journal at a replica: %+v, %v; want refused replica", r, err)
	}
}

func TestCellInitRefusesAMachineStartedAsTheOtherRole(t *testing.T) {
	// Arrange: three nodes and a replica, idle.
	var nodes []string
	for range 3 {
		_, a := serveMachine(t, t.TempDir(), machine.RoleNode)
		nodes = append(nodes, a)
	}
	_, replica := serveMachine(t, t.TempDir(), machine.RoleReplica)

	for name, tc := range map[string]struct{ members, replicas []string }{
		"a replica named as a member": {members: []string{nodes[0], nodes[1], replica}},
		"a node named as a replica":   {members: nodes[:2], replicas: []string{nodes[2]}},
	} {
		// Act.
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		_, err := machine.InitCell(ctx, tc.members[0], tc.members, tc.replicas, 1, machine.Access{})
		cancel()

		// Check.
		if err == nil || !strings.Contains(err.Error(), "member_role_mismatch") {
			t.Errorf("%s: %v, want member_role_mismatch", name, err)
		}
	}
}

func TestAMachineRestartsOnlyAsTheRoleItWasFormedWith(t *testing.T) {
	// Arrange: a formed cell with one replica; a node and the replica
	// stopped.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := testcell.Start(ctx, t.TempDir(), testcell.Options{Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, i := range []int{0, 3} {
		if err := c.Stop(i); err != nil {
			t.Fatal(err)
		}
	}

	// Act and check: each started as the other role is refused.
	for i, role := range map[int]machine.Role{0: machine.RoleReplica, 3: machine.RoleNode} {
		m, err := machine.Open(machine.Config{DataDir: c.Nodes[i].Dir, Advertise: c.Nodes[i].Addr, Role: role, Logger: quiet})
		if !errors.Is(err, machine.ErrRoleMismatch) {
			if m != nil {
				_ = m.Close()
			}
			t.Fatalf("machine %d started as a %s: %v, want ErrRoleMismatch", i+1, role, err)
		}
	}

	// Act and check: the replica started as a replica serves again from its
	// stores.
	if err := c.Restart(3); err != nil {
		t.Fatalf("the replica restarted as a replica: %v", err)
	}
	if in, err := c.Inspect(ctx, 3, c.Journals[0]); err != nil || in.Role != "replica" {
		t.Fatalf("the restarted replica inspects as %q, %v", in.Role, err)
	}
}
