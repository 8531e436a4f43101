// This file checks Client.SetProxies (proxyset.go) against a real cell from
// internal/testcell: three nodes formed with one proxy, records appended,
// then an idle proxy machine (`paros serve --role proxy` on an empty data
// dir) named by SetProxies beside the first joins the cell and is
// delegated rounds; the same call again is a no-op; a node named as a
// proxy is refused with ErrNotProxy, and a proxy named as a member of a
// reconfiguration with ErrInvalidConfiguration; a reconfiguration that
// admits a new machine tells the proxies of it (each records it, so it
// fans out to it); and once the list names the new proxy alone, the first
// records its removal and the nodes still take writes, every record
// reading back.
package admin_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/parosdb/paros/client/admin"
	"github.com/parosdb/paros/internal/testcell"
	"github.com/parosdb/paros/storage/machinerecord"
)

func TestSetProxiesAddsAFreshProxyTellsItOfAdmittedMachinesAndRemovesTheOther(t *testing.T) {
	// Arrange: a cell of three nodes and one proxy, twenty records; an
	// idle proxy machine; an operator's Client of the nodes.
	if testing.Short() {
		t.Skip("starts a cell of six machines")
	}
	ctx := testCtx(t)
	c, err := testcell.Start(ctx, t.TempDir(), testcell.Options{Journals: 1, Proxies: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	id := c.Journals[0]
	if _, err := c.WaitLeader(ctx, id); err != nil {
		t.Fatal(err)
	}
	opsc, ops := dial(t, c.Addrs()...)
	testcell.AppendN(t, ctx, opsc.Journal(id), 20)
	first := c.Nodes[3]
	fresh, err := c.AddIdleProxy()
	if err != nil {
		t.Fatal(err)
	}

	// Act: add it beside the first, twice; name a node as a proxy, and
	// the proxy as a member.
	addErr := ops.SetProxies(ctx, []string{first.Addr, fresh.Addr})
	againErr := ops.SetProxies(ctx, []string{fresh.Addr, first.Addr})
	nodeErr := ops.SetProxies(ctx, []string{fresh.Addr, c.Addrs()[0]})
	memberErr := ops.Reconfigure(ctx, id, admin.Configuration{Members: append(c.Addrs()[:2:2], fresh.Addr)})
	testcell.AppendN(t, ctx, opsc.Journal(id), 20)

	// Check: both proxies are listed everywhere and the fresh one is
	// delegated rounds.
	if addErr != nil || againErr != nil {
		t.Fatalf("set proxies: %v, again: %v", addErr, againErr)
	}
	if !errors.Is(nodeErr, admin.ErrNotProxy) {
		t.Errorf("a node named as a proxy: %v, want ErrNotProxy", nodeErr)
	}
	if !errors.Is(memberErr, admin.ErrInvalidConfiguration) {
		t.Errorf("a proxy named as a member: %v, want ErrInvalidConfiguration", memberErr)
	}
	for i := range c.Nodes {
		if ps := c.Machine(i).Record().Proxies; len(ps) != 2 {
			t.Fatalf("machine %d records proxies %+v, want two", i+1, ps)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for metricValue(fresh.Metrics.ProxyDelegated) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the fresh proxy was delegated no round")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Act: replace a follower by an idle machine (reconfigure admits it).
	idle, err := c.AddIdle()
	if err != nil {
		t.Fatal(err)
	}
	leader, err := c.WaitLeader(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	keep := []string{c.Nodes[leader].Addr, c.Nodes[(leader+1)%3].Addr, idle.Addr}
	if err := ops.Reconfigure(ctx, id, admin.Configuration{Members: keep}); err != nil {
		t.Fatalf("reconfigure: %v", err)
	}

	// Check: both proxies know the admitted machine.
	newID := c.Machine(len(c.Nodes) - 1).NodeID()
	for _, i := range []int{3, 4} {
		if !slices.ContainsFunc(c.Machine(i).Record().Admitted, func(m machinerecord.Member) bool { return m.NodeID == newID }) {
			t.Fatalf("proxy machine %d was not told of the admitted machine %016x: %+v", i+1, newID, c.Machine(i).Record().Admitted)
		}
	}

	// Act: the fresh proxy alone.
	if err := ops.SetProxies(ctx, []string{fresh.Addr}); err != nil {
		t.Fatalf("set proxies to the fresh one: %v", err)
	}
	testcell.AppendN(t, ctx, opsc.Journal(id), 20)

	// Check: the first records its removal; every record reads back (three
	// runs of r1..r20).
	if rec := c.Machine(3).Record(); !rec.ProxyRemoved || len(rec.Proxies) != 1 {
		t.Fatalf("the removed proxy's record: %+v", rec)
	}
	got := testcell.ReadAll(t, ctx, opsc.Journal(id), 1, 61)
	for i, b := range got {
		if want := fmt.Sprintf("r%d", i%20+1); string(b) != want {
			t.Fatalf("position %d holds %q, want %q", i+1, b, want)
		}
	}
	t.Logf("the first proxy was delegated %v rounds, the fresh one %v",
		metricValue(first.Metrics.ProxyDelegated), metricValue(fresh.Metrics.ProxyDelegated))
}

// metricValue reads a counter or gauge.
func metricValue(c prometheus.Metric) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(fmt.Sprintf("read metric: %v", err))
	}
	if m.GetCounter() != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}
