// This file checks the proxy machine (proxy.go), as replica_test.go checks
// the replica machine: cell init names the proxies in the plan and joins
// them; every acceptor's and replica's journal spec names them, and a
// proxy serves no journal and keeps no store; under writes the leader
// delegates to both proxies and they decide rounds (their metrics count
// it) while every write is acknowledged; a proxy votes on nothing
// (PrepareCell, FormCell and JoinJournal are refused "proxy") and answers
// a write as for a journal it does not serve; cell init refuses a node
// named as a proxy; and a proxy's data dir started as a node, or a node's
// started as a proxy, is refused with ErrRoleMismatch, while the right
// role starts it again. It opens real machines (Pebble stores in a
// temporary dir, gRPC on 127.0.0.1, plaintext).
package machine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/internal/testcell"
	"github.com/parosdb/paros/machine"
	"github.com/parosdb/paros/wire"
)

func TestParseRoleNamesEveryRole(t *testing.T) {
	for name, want := range map[string]machine.Role{"node": machine.RoleNode, "replica": machine.RoleReplica, "proxy": machine.RoleProxy} {
		// Act.
		got, err := machine.ParseRole(name)

		// Check: each name reads as its role and prints back as itself.
		if err != nil || got != want || got.String() != name {
			t.Errorf("ParseRole(%q) = %v (%q), %v; want %v", name, got, got.String(), err, want)
		}
	}
	for _, bad := range []string{"", "learner", "Proxy", "proxies"} {
		if _, err := machine.ParseRole(bad); err == nil {
			t.Errorf("ParseRole(%q) accepted", bad)
		}
	}
}

func TestProxiesAreNamedInThePlanAndDecideTheLeadersRounds(t *testing.T) {
	// Arrange and act: a cell of three nodes, one replica and two proxies,
	// two journals.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := testcell.Start(ctx, t.TempDir(), testcell.Options{Journals: 2, Replicas: 1, Proxies: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// Check: the plan names the two proxies, sorted; every acceptor's and
	// the replica's specs name them; a proxy serves no journal, keeps no
	// store and says it is a proxy.
	var want []paxos.NodeID
	for _, p := range c.Plan.GetProxies() {
		want = append(want, paxos.NodeID(p.GetNodeId()))
	}
	if len(want) != 2 || !slices.IsSorted(want) {
		t.Fatalf("the plan names proxies %v, want two, sorted", want)
	}
	var proxies []*testcell.Node
	for i, n := range c.Nodes {
		m := c.Machine(i)
		if got := slices.Contains(want, paxos.NodeID(m.NodeID())); got != n.Proxy {
			t.Fatalf("machine %d: named a proxy %v, started as one %v", i+1, got, n.Proxy)
		}
		r, err := machineClient(t, n.Addr).Identify(ctx, &pb.IdentifyRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if n.Proxy {
			proxies = append(proxies, n)
			if js := m.Runtime().Journals(); len(js) != 0 || r.GetRole() != "proxy" || !m.Record().Proxy() {
				t.Fatalf("proxy %d: serves %v, identifies as %q", i+1, js, r.GetRole())
			}
			if _, err := os.Stat(filepath.Join(n.Dir, "store")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("proxy %d keeps a store: %v", i+1, err)
			}
			continue
		}
		for _, id := range c.Journals {
			spec, ok := m.Runtime().Spec(id)
			if !ok || !slices.Equal(spec.Proxies, want) || spec.Replica != n.Replica {
				t.Fatalf("machine %d journal %s: spec %+v (served %v)", i+1, id, spec, ok)
			}
		}
	}

	// Act: appends through the client library, to the cell's nodes.
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
	const appends = 40
	for i := range appends {
		if _, err := w.Append(ctx, []byte{byte(i)}); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}

	// Check: both proxies were delegated rounds and decided some (slot s
	// goes to the s % 2-th proxy), and their metrics say so.
	for k, n := range proxies {
		deadline := time.Now().Add(5 * time.Second)
		for value(n.Metrics.ProxyDecided) == 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		delegated, decided := value(n.Metrics.ProxyDelegated), value(n.Metrics.ProxyDecided)
		if delegated == 0 || decided == 0 || value(n.Metrics.Role.WithLabelValues("proxy")) != 1 {
			t.Fatalf("proxy %d: %v rounds delegated, %v decided, role gauge %v", k+1, delegated, decided,
				value(n.Metrics.Role.WithLabelValues("proxy")))
		}
		t.Logf("proxy %d: %v rounds delegated, %v decided", k+1, delegated, decided)
	}
}

func TestAProxyVotesOnNothingAndServesNoCall(t *testing.T) {
	// Arrange: an idle proxy machine, and a formed cell's proxy.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, idle := serveMachine(t, t.TempDir(), machine.RoleProxy)
	c, err := testcell.Start(ctx, t.TempDir(), testcell.Options{Proxies: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	formed := c.ProxyAddrs()[0]
	b := &pb.Ballot{Round: 1, Node: 7}

	// Act and check: no vote of any kind.
	if r, err := machineClient(t, idle).PrepareCell(ctx, &pb.PrepareCellRequest{Ballot: b}); err != nil || r.GetPromised() || r.GetRefusal() != "proxy" {
		t.Fatalf("prepare at a proxy: %+v, %v; want refused proxy", r, err)
	}
	if r, err := machineClient(t, idle).FormCell(ctx, &pb.FormCellRequest{Ballot: b, Plan: c.Plan}); err != nil || r.GetFormed() || r.GetRefusal() != "proxy" {
		t.Fatalf("form at a proxy: %+v, %v; want refused proxy", r, err)
	}
	jj := &pb.JoinJournalRequest{Journal: wire.JournalIDToPB(c.Journals[0]), Members: []uint64{c.Machine(3).NodeID()}}
	if r, err := machineClient(t, formed).JoinJournal(ctx, jj); err != nil || r.GetJoined() || r.GetRefusal() != "proxy" {
		t.Fatalf("join journal at a proxy: %+v, %v; want refused proxy", r, err)
	}

	// Act and check: a write to the proxy is answered as for a journal it
	// does not serve (nothing proposed), and Inspect says it is a proxy.
	cc, err := grpc.NewClient(formed, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	wr, err := pb.NewJournalClient(cc).Write(ctx, &pb.WriteRequest{Journal: wire.JournalIDToPB(c.Journals[0]), Seq: 1, Records: [][]byte{[]byte("x")}})
	if err != nil || wire.VerdictFromPB(wr.GetVerdict()).NoVerdict != journal.UnknownJournal {
		t.Fatalf("a write to a proxy: %+v, %v; want unknown journal", wr, err)
	}
	in, err := pb.NewAdminClient(cc).Inspect(ctx, &pb.InspectRequest{Journal: wire.JournalIDToPB(c.Journals[0])})
	if err != nil || in.GetMachineRole() != "proxy" || in.GetRefusal() != "unknown_journal" {
		t.Fatalf("inspect a proxy: %+v, %v; want machine role proxy, unknown_journal", in, err)
	}
}

func TestCellInitRefusesANodeNamedAsAProxy(t *testing.T) {
	// Arrange: three idle nodes.
	var nodes []string
	for range 3 {
		_, a := serveMachine(t, t.TempDir(), machine.RoleNode)
		nodes = append(nodes, a)
	}

	// Act.
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	_, err := machine.InitCellWith(ctx, nodes[0], &pb.CellInitRequest{Members: nodes[:2], Proxies: nodes[2:], Journals: 1}, machine.Access{})
	cancel()

	// Check.
	if err == nil || !strings.Contains(err.Error(), "member_role_mismatch") {
		t.Fatalf("a node named as a proxy: %v, want member_role_mismatch", err)
	}
}

func TestAProxyRestartsOnlyAsAProxy(t *testing.T) {
	// Arrange: a formed cell with one proxy; a node and the proxy stopped.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := testcell.Start(ctx, t.TempDir(), testcell.Options{Proxies: 1})
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
	for i, role := range map[int]machine.Role{0: machine.RoleProxy, 3: machine.RoleNode} {
		m, err := machine.Open(machine.Config{DataDir: c.Nodes[i].Dir, Advertise: c.Nodes[i].Addr, Role: role, Logger: quiet})
		if !errors.Is(err, machine.ErrRoleMismatch) {
			if m != nil {
				_ = m.Close()
			}
			t.Fatalf("machine %d started as a %s: %v, want ErrRoleMismatch", i+1, role, err)
		}
	}

	// Act and check: the proxy started as a proxy serves again.
	if err := c.Restart(3); err != nil {
		t.Fatalf("the proxy restarted as a proxy: %v", err)
	}
	if m := c.Machine(3); m.Runtime() == nil || !m.Record().Proxy() {
		t.Fatal("the restarted proxy does not serve as a proxy")
	}
}

// value reads a counter's or a gauge's current value.
func value(c prometheus.Metric) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}
