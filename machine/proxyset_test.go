// This file checks SetProxies (proxyset.go), the Machine call that changes
// a running cell's proxy-leader list, as replicaset_test.go checks
// SetReplicas: an idle proxy machine joined with a plan naming it and then
// every machine told the new list records it (machine record, journal
// specs) and is delegated rounds under writes (its metrics count them);
// telling the same list again changes nothing (the record's incarnation
// stays); a proxy taken off the list records that it was removed, is
// delegated nothing more while writes go on, stays a proxy machine and
// boots as one; and the call is refused on an idle machine (no_cell), for
// another cell (other_cell), for a malformed list (a zero id, an id twice,
// too many) and for a list naming an acceptor machine (member) or a
// replica machine (replica). It opens real machines (testcell: Pebble
// stores in a temporary dir, gRPC on 127.0.0.1, plaintext).
package machine_test

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/internal/testcell"
	"github.com/parosdb/paros/machine"
)

// setProxiesEverywhere sends list to every machine of c, and fails the
// test on a refusal.
func setProxiesEverywhere(t *testing.T, ctx context.Context, c *testcell.Cell, list []*pb.Member) {
	t.Helper()
	for i, n := range c.Nodes {
		r, err := machineClient(t, n.Addr).SetProxies(ctx, &pb.SetProxiesRequest{CellId: c.Plan.GetCellId(), Proxies: list})
		if err != nil || !r.GetSet() {
			t.Fatalf("set proxies at machine %d: %+v, %v", i+1, r, err)
		}
	}
}

// appendSome appends n records to c's first journal through a Writer.
func appendSome(t *testing.T, ctx context.Context, c *testcell.Cell, n int) {
	t.Helper()
	cl, err := client.Dial(ctx, c.Addrs(), c.ClientOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	w := cl.Journal(c.Journals[0]).NewWriter()
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := w.Append(ctx, []byte{byte(i)}); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
}

// checkSpecs fails the test unless every acceptor machine of c serves
// every journal with proxies as its proxy list.
func checkSpecs(t *testing.T, c *testcell.Cell, proxies []paxos.NodeID) {
	t.Helper()
	for i, n := range c.Nodes {
		if n.Proxy {
			continue
		}
		for _, id := range c.Journals {
			if spec, ok := c.Machine(i).Runtime().Spec(id); !ok || !slices.Equal(spec.Proxies, proxies) {
				t.Fatalf("machine %d journal %s: spec %+v (served %v), want proxies %v", i+1, id, spec, ok, proxies)
			}
		}
	}
}

func TestSetProxiesAddsAndRemovesAProxyAndRecordsIt(t *testing.T) {
	// Arrange: a cell of three nodes and one proxy; an idle proxy machine
	// joined with a plan naming both.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := testcell.Start(ctx, t.TempDir(), testcell.Options{Proxies: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	old := c.Plan.GetProxies()[0]
	idle, err := c.AddIdleProxy()
	if err != nil {
		t.Fatal(err)
	}
	fresh := &pb.Member{NodeId: c.Machine(4).NodeID(), Addr: idle.Addr}
	both := []*pb.Member{old, fresh}
	slices.SortFunc(both, func(a, b *pb.Member) int { return cmp.Compare(a.GetNodeId(), b.GetNodeId()) })
	plan := c.Plan
	plan.Proxies = both
	if r, err := machineClient(t, idle.Addr).JoinCell(ctx, &pb.JoinCellRequest{Plan: plan}); err != nil || !r.GetJoined() {
		t.Fatalf("join cell as a proxy: %+v, %v", r, err)
	}

	// Act: every machine learns the list, twice; writes.
	setProxiesEverywhere(t, ctx, c, both)
	inc := c.Machine(0).Record().Incarnation
	setProxiesEverywhere(t, ctx, c, both)
	appendSome(t, ctx, c, 40)

	// Check: every record names both proxies and every journal spec too;
	// the second call rewrote nothing; the new proxy was delegated rounds.
	ids := []paxos.NodeID{paxos.NodeID(both[0].GetNodeId()), paxos.NodeID(both[1].GetNodeId())}
	for i := range c.Nodes {
		if ps := c.Machine(i).Record().Proxies; len(ps) != 2 || paxos.NodeID(ps[0].NodeID) != ids[0] || paxos.NodeID(ps[1].NodeID) != ids[1] {
			t.Fatalf("machine %d records proxies %+v, want %v", i+1, ps, ids)
		}
	}
	checkSpecs(t, c, ids)
	if got := c.Machine(0).Record().Incarnation; got != inc {
		t.Fatalf("the same list again rewrote the record: incarnation %d, was %d", got, inc)
	}
	waitDelegated(t, idle)

	// Act: the first proxy is taken off the list; writes go on.
	setProxiesEverywhere(t, ctx, c, []*pb.Member{fresh})
	appendSome(t, ctx, c, 10) // rounds delegated before the change settle
	before := value(c.Nodes[3].Metrics.ProxyDelegated)
	appendSome(t, ctx, c, 40)

	// Check: the removed proxy was delegated nothing more, the new one
	// still is; the removed one records its removal, and restarts as a
	// proxy machine.
	if after := value(c.Nodes[3].Metrics.ProxyDelegated); after != before {
		t.Fatalf("the removed proxy was delegated %v rounds after its removal", after-before)
	}
	checkSpecs(t, c, []paxos.NodeID{paxos.NodeID(fresh.GetNodeId())})
	rec := c.Machine(3).Record()
	if !rec.ProxyRemoved || !rec.Proxy() || len(rec.Proxies) != 1 || rec.Proxies[0].NodeID != fresh.GetNodeId() {
		t.Fatalf("the removed proxy's record: %+v", rec)
	}
	if err := c.Stop(3); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(3); err != nil {
		t.Fatalf("the removed proxy restarted as a proxy: %v", err)
	}
	if js := c.Machine(3).Runtime().Journals(); len(js) != 0 || !c.Machine(3).Record().ProxyRemoved {
		t.Fatalf("the restarted removed proxy serves %v, record %+v", js, c.Machine(3).Record())
	}
	t.Logf("the removed proxy was delegated %v rounds in all, the new one %v", before, value(idle.Metrics.ProxyDelegated))
}

// waitDelegated waits a few seconds for proxy n to be delegated a round.
func waitDelegated(t *testing.T, n *testcell.Node) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for value(n.Metrics.ProxyDelegated) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the new proxy was delegated no round")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSetProxiesRefusals(t *testing.T) {
	// Arrange: a cell of three nodes, one replica and one proxy, and an
	// idle proxy machine.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := testcell.Start(ctx, t.TempDir(), testcell.Options{Replicas: 1, Proxies: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, idle := serveMachine(t, t.TempDir(), machine.RoleProxy)
	cell := c.Plan.GetCellId()
	proxy := c.Plan.GetProxies()[0]
	replica := c.Plan.GetReplicas()[0]
	founder := &pb.Member{NodeId: c.Machine(1).NodeID(), Addr: c.Nodes[1].Addr}
	var tooMany []*pb.Member
	for i := range paxos.ProxiesMax + 1 {
		tooMany = append(tooMany, &pb.Member{NodeId: uint64(1000 + i), Addr: "x:1"})
	}
	inc := c.Machine(0).Record().Incarnation

	for name, tc := range map[string]struct {
		addr string
		req  *pb.SetProxiesRequest
		want string
	}{
		"an idle machine":   {idle, &pb.SetProxiesRequest{CellId: cell, Proxies: []*pb.Member{proxy}}, "no_cell"},
		"another cell":      {c.Nodes[0].Addr, &pb.SetProxiesRequest{CellId: cell + 1, Proxies: []*pb.Member{proxy}}, "other_cell"},
		"a zero id":         {c.Nodes[0].Addr, &pb.SetProxiesRequest{CellId: cell, Proxies: []*pb.Member{{Addr: "x:1"}}}, "malformed"},
		"an id twice":       {c.Nodes[0].Addr, &pb.SetProxiesRequest{CellId: cell, Proxies: []*pb.Member{proxy, proxy}}, "malformed"},
		"too many":          {c.Nodes[0].Addr, &pb.SetProxiesRequest{CellId: cell, Proxies: tooMany}, "malformed"},
		"a founder":         {c.Nodes[0].Addr, &pb.SetProxiesRequest{CellId: cell, Proxies: []*pb.Member{founder}}, "member"},
		"itself, a node":    {c.Nodes[1].Addr, &pb.SetProxiesRequest{CellId: cell, Proxies: []*pb.Member{founder}}, "member"},
		"a replica":         {c.Nodes[0].Addr, &pb.SetProxiesRequest{CellId: cell, Proxies: []*pb.Member{proxy, replica}}, "replica"},
		"itself, a replica": {c.Nodes[3].Addr, &pb.SetProxiesRequest{CellId: cell, Proxies: []*pb.Member{replica}}, "replica"},
		"at the proxy":      {c.Nodes[4].Addr, &pb.SetProxiesRequest{CellId: cell, Proxies: []*pb.Member{proxy, founder}}, "member"},
	} {
		// Act.
		r, err := machineClient(t, tc.addr).SetProxies(ctx, tc.req)

		// Check.
		if err != nil || r.GetSet() || !strings.HasPrefix(r.GetRefusal(), tc.want) {
			t.Errorf("%s: %+v, %v; want refused %s", name, r, err, tc.want)
		}
	}
	for i := range c.Nodes {
		if got := c.Machine(i).Record(); len(got.Proxies) != 1 || got.Proxies[0].NodeID != proxy.GetNodeId() || i == 0 && got.Incarnation != inc {
			t.Fatalf("a refused list changed machine %d's record: %+v", i+1, got)
		}
	}

	// Act and check: a replica named as a proxy is refused the other way
	// round too, and a proxy named as a replica.
	r, err := machineClient(t, c.Nodes[0].Addr).SetReplicas(ctx, &pb.SetReplicasRequest{CellId: cell, Replicas: []*pb.Member{replica, proxy}})
	if err != nil || r.GetSet() || !strings.HasPrefix(r.GetRefusal(), "proxy") {
		t.Fatalf("a proxy named as a replica: %+v, %v; want refused proxy", r, err)
	}
}
