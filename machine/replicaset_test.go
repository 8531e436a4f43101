// This file checks SetReplicas (replicaset.go), the Machine call that
// changes a running cell's replica list: an idle replica machine joined
// with a plan naming it and then every machine told the new list records
// it (machine record, journal specs); telling the same list again changes
// nothing (the record's incarnation stays); a replica taken off the list
// records that it was removed, stays a replica machine and boots as one;
// and the call is refused on an idle machine (no_cell), for another cell
// (other_cell), for a malformed list (a zero id, an id twice) and for a
// list naming an acceptor machine (member). It opens real machines
// (testcell: Pebble stores in a temporary dir, gRPC on 127.0.0.1,
// plaintext).
package machine_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/internal/testcell"
	"github.com/parosdb/paros/machine"
)

// setEverywhere sends list to the first n machines of c, and fails the
// test on a refusal.
func setEverywhere(t *testing.T, ctx context.Context, c *testcell.Cell, n int, list []*pb.Member) {
	t.Helper()
	for i, n := range c.Nodes[:n] {
		r, err := machineClient(t, n.Addr).SetReplicas(ctx, &pb.SetReplicasRequest{CellId: c.Plan.GetCellId(), Replicas: list})
		if err != nil || !r.GetSet() {
			t.Fatalf("set replicas at machine %d: %+v, %v", i+1, r, err)
		}
	}
}

func TestSetReplicasAddsAndRemovesAReplicaAndRecordsIt(t *testing.T) {
	// Arrange: a cell of three nodes and no replica; an idle replica
	// machine joined with a plan naming it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := testcell.Start(ctx, t.TempDir(), testcell.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	idle, err := c.AddIdleReplica()
	if err != nil {
		t.Fatal(err)
	}
	rid := c.Machine(3).NodeID()
	list := []*pb.Member{{NodeId: rid, Addr: idle.Addr}}

	// Act: every node learns the list, then the replica joins.
	setEverywhere(t, ctx, c, 3, list)
	plan := c.Plan
	plan.Replicas = list
	if r, err := machineClient(t, idle.Addr).JoinCell(ctx, &pb.JoinCellRequest{Plan: plan}); err != nil || !r.GetJoined() {
		t.Fatalf("join cell as a replica: %+v, %v", r, err)
	}
	inc := c.Machine(0).Record().Incarnation
	setEverywhere(t, ctx, c, 4, list) // again: a no-op

	// Check: every record and every journal spec names the replica; the
	// second call rewrote nothing.
	for i := range c.Nodes {
		m := c.Machine(i)
		if rs := m.Record().Replicas; len(rs) != 1 || rs[0].NodeID != rid || rs[0].Addr != idle.Addr {
			t.Fatalf("machine %d records replicas %+v", i+1, rs)
		}
		for _, id := range c.Journals {
			if spec, ok := m.Runtime().Spec(id); !ok || !slices.Equal(spec.Replicas, []paxos.NodeID{paxos.NodeID(rid)}) {
				t.Fatalf("machine %d journal %s: spec %+v (served %v)", i+1, id, spec, ok)
			}
		}
	}
	if got := c.Machine(0).Record().Incarnation; got != inc {
		t.Fatalf("the same list again rewrote the record: incarnation %d, was %d", got, inc)
	}

	// Act: the replica is taken off the list, then restarted.
	setEverywhere(t, ctx, c, 4, nil)
	if err := c.Stop(3); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(3); err != nil {
		t.Fatalf("the removed replica restarted as a replica: %v", err)
	}

	// Check: the nodes list no replica; the removed one records its
	// removal and is still a replica machine, booted as one.
	for i := range 3 {
		if rs := c.Machine(i).Record().Replicas; len(rs) != 0 {
			t.Fatalf("machine %d still records replicas %+v", i+1, rs)
		}
	}
	rec := c.Machine(3).Record()
	if !rec.ReplicaRemoved || !rec.Replica() || len(rec.Replicas) != 0 {
		t.Fatalf("the removed replica's record: %+v", rec)
	}
	if in, err := c.Inspect(ctx, 3, c.Journals[0]); err != nil || in.Role != "replica" {
		t.Fatalf("the removed replica inspects as %q, %v", in.Role, err)
	}
}

func TestSetReplicasRefusals(t *testing.T) {
	// Arrange: a cell of three nodes and one replica, and an idle replica
	// machine.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := testcell.Start(ctx, t.TempDir(), testcell.Options{Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, idle := serveMachine(t, t.TempDir(), machine.RoleReplica)
	cell := c.Plan.GetCellId()
	replica := c.Plan.GetReplicas()[0]
	founder := &pb.Member{NodeId: c.Machine(1).NodeID(), Addr: c.Nodes[1].Addr}
	inc := c.Machine(0).Record().Incarnation

	for name, tc := range map[string]struct {
		addr string
		req  *pb.SetReplicasRequest
		want string
	}{
		"an idle machine": {idle, &pb.SetReplicasRequest{CellId: cell, Replicas: []*pb.Member{replica}}, "no_cell"},
		"another cell":    {c.Nodes[0].Addr, &pb.SetReplicasRequest{CellId: cell + 1, Replicas: []*pb.Member{replica}}, "other_cell"},
		"a zero id":       {c.Nodes[0].Addr, &pb.SetReplicasRequest{CellId: cell, Replicas: []*pb.Member{{Addr: "x:1"}}}, "malformed"},
		"an id twice":     {c.Nodes[0].Addr, &pb.SetReplicasRequest{CellId: cell, Replicas: []*pb.Member{replica, replica}}, "malformed"},
		"a founder":       {c.Nodes[0].Addr, &pb.SetReplicasRequest{CellId: cell, Replicas: []*pb.Member{founder}}, "member"},
		"itself, a node":  {c.Nodes[1].Addr, &pb.SetReplicasRequest{CellId: cell, Replicas: []*pb.Member{founder}}, "member"},
		"at the replica":  {c.Nodes[3].Addr, &pb.SetReplicasRequest{CellId: cell, Replicas: []*pb.Member{replica, founder}}, "member"},
	} {
		// Act.
		r, err := machineClient(t, tc.addr).SetReplicas(ctx, tc.req)

		// Check.
		if err != nil || r.GetSet() || !strings.HasPrefix(r.GetRefusal(), tc.want) {
			t.Errorf("%s: %+v, %v; want refused %s", name, r, err, tc.want)
		}
	}
	if got := c.Machine(0).Record(); got.Incarnation != inc || len(got.Replicas) != 1 {
		t.Fatalf("a refused list changed the record: %+v", got)
	}
}
