package blackbox

// This file checks the proxy leaders end to end, as an operator runs them:
// a secure cell of three `paros serve` nodes and two `paros serve --role
// proxy` machines (every process with its admin listener, --metrics),
// formed with `parosctl cell init --proxies`. A Writer of the public client
// (dialled with the three nodes: a proxy serves no client call) appends
// one record at a time throughout (startAppendLoad). The journal's leader
// hands the Phase 2 of slot s to the s % 2-th proxy, which fans it out,
// tallies the acceptors' answers and announces the decision.
//
// What it checks:
//   - under load both proxies are delegated rounds and decide them
//     (paros_proxy_rounds_delegated_total and _decided_total on each
//     proxy's /metrics), and each says it is a proxy (paros_role);
//   - the first proxy killed with SIGKILL under load does not stop the
//     writes: the leader takes each round it delegated to the dead proxy
//     back after its budget of re-delegations and runs it itself
//     (paros_proxy_taken_back_total on the nodes), so appends go on being
//     acknowledged; the longest pause between two acknowledgements before
//     the kill, from the kill to the restart (the pauses straddling the
//     kill included) and after the restart is logged;
//   - the killed proxy restarted on its (store-less) data dir decides
//     rounds again;
//   - every acknowledged append reads back, in order and with its bytes;
//   - a proxy restarted as a node is refused (exit 78, naming the role).

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parosdb/paros/core/journal"
)

// Proxy test phases and bounds.
const (
	// proxyLoadBefore is how long the load runs before the kill,
	// proxyDown how long the proxy stays down, proxyLoadAfter how long the
	// load goes on after its restart.
	proxyLoadBefore = 2 * time.Second
	proxyDown       = 6 * time.Second
	proxyLoadAfter  = 3 * time.Second
	// proxyAcksWhileDownMin is the least number of appends acknowledged
	// while the proxy is down.
	proxyAcksWhileDownMin = 3
)

func TestProxiesDecideRoundsAndALeaderOutlivesADeadOne(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cell of five processes")
	}
	// Arrange: three nodes and two proxies, every one with its admin
	// listener; the cell formed with the proxies named; a claimed Writer.
	nodeAdmin := make([]string, 3)
	c := newCellWith(t, func(i int, p *proc) {
		nodeAdmin[i] = freeAddr(t)
		p.args = []string{"--metrics", nodeAdmin[i]}
	})
	nodes := slices.Clone(c.procs)
	base := filepath.Dir(filepath.Dir(c.caDir))
	var proxies []*proc
	admin := make([]string, 2)
	for i := range 2 {
		admin[i] = freeAddr(t)
		p := &proc{addr: freeAddr(t), data: filepath.Join(base, fmt.Sprintf("x%d", i+1)),
			args: []string{"--role", "proxy", "--metrics", admin[i]}}
		c.issue(p, filepath.Join(base, "pki", fmt.Sprintf("x%d", i+1)))
		c.start(p)
		c.procs = append(c.procs, p) // stopped by the cell's cleanup
		proxies = append(proxies, p)
	}
	id := mustID(t, c.initWithProxies(nodes, proxies))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := c.dial(ctx, nodes).Journal(id).NewWriter()
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatalf("claim: %v", err)
	}

	// Act: the load; after proxyLoadBefore scrape the proxies, kill the
	// first with SIGKILL, restart it after proxyDown, load on for
	// proxyLoadAfter.
	load := startAppendLoad(ctx, w, "proxy")
	defer load.stop()
	acks := load.acks
	started := time.Now()
	time.Sleep(proxyLoadBefore)
	before := make([]metrics, len(proxies))
	for i := range proxies {
		before[i] = scrape(t, admin[i])
	}
	victim := proxies[0]
	_ = victim.cmd.Process.Signal(os.Kill)
	<-victim.done
	killedAt, killedPos := time.Now(), acks.last.Load()
	time.Sleep(proxyDown)
	restartedAt, restartedPos := time.Now(), acks.last.Load()
	c.start(victim)
	time.Sleep(proxyLoadAfter)
	writeErr := load.stop()
	stoppedAt := time.Now()
	if writeErr != nil {
		t.Fatal(writeErr)
	}

	// Check: both proxies decided rounds before the kill.
	checkRunning(t, c)
	for i, m := range before {
		delegated, decided := m.get("paros_proxy_rounds_delegated_total"), m.get("paros_proxy_rounds_decided_total")
		t.Logf("proxy %d before the kill: %v rounds delegated, %v decided, %v evicted, %v open", i+1, delegated, decided,
			m.get("paros_proxy_rounds_evicted_total"), m.get("paros_proxy_open_rounds"))
		if delegated == 0 || decided == 0 {
			t.Fatalf("proxy %d: %v rounds delegated, %v decided; want both above 0", i+1, delegated, decided)
		}
		if m.get(`paros_role{role="proxy"}`) != 1 || m.get(`paros_role{role="node"}`) != 0 {
			t.Fatalf("proxy %d's paros_role: proxy %v, node %v", i+1, m.get(`paros_role{role="proxy"}`), m.get(`paros_role{role="node"}`))
		}
	}

	// Check: the writes went on while the proxy was down, the leader took
	// rounds back, and the restarted proxy decides again.
	down := restartedPos - killedPos
	all := acks.acked()
	t.Logf("longest ack gap: %v before the kill, %v from the kill to the restart (%d appends acknowledged in %v), %v after the restart; %d appends in all",
		longestGap(ackedIn(all, started, killedAt), started, killedAt).Round(time.Millisecond),
		longestGap(all, killedAt, restartedAt).Round(time.Millisecond), down, proxyDown,
		longestGap(ackedIn(all, restartedAt, stoppedAt), restartedAt, stoppedAt).Round(time.Millisecond), len(all))
	if down < proxyAcksWhileDownMin {
		t.Fatalf("%d appends acknowledged while a proxy was down for %v, want at least %d", down, proxyDown, proxyAcksWhileDownMin)
	}
	takenBack := 0.0
	for i := range nodes {
		takenBack += scrape(t, nodeAdmin[i]).get("paros_proxy_taken_back_total")
	}
	if takenBack == 0 {
		t.Fatal("no node took a round back from the dead proxy")
	}
	again, other := scrape(t, admin[0]), scrape(t, admin[1])
	t.Logf("the nodes took %v rounds back; the restarted proxy decided %v rounds, the other %v in all",
		takenBack, again.get("paros_proxy_rounds_decided_total"), other.get("paros_proxy_rounds_decided_total"))
	if again.get("paros_proxy_rounds_decided_total") == 0 {
		t.Fatal("the restarted proxy decided no round")
	}

	// Check: every acknowledged append reads back from a node.
	end := journal.Seq(acks.last.Load()) + 1
	got := readBack(t, ctx, c, nodes[0], id, end)
	if journal.Seq(len(got)) < end-1 {
		t.Fatalf("%d records read back, want %d", len(got), end-1)
	}
	for k, b := range got[:end-1] {
		if seq := journal.FirstSeq + journal.Seq(k); !bytes.Equal(b, acks.get(seq)) {
			t.Fatalf("position %d reads back %q, want %q", seq, b, acks.get(seq))
		}
	}

	// Check: a proxy restarted as a node is refused, do not restart.
	_ = victim.cmd.Process.Signal(os.Kill)
	<-victim.done
	args := victim.args
	victim.args = []string{"--metrics", admin[0]}
	c.start(victim)
	victim.args = args
	select {
	case <-victim.done:
	case <-time.After(20 * time.Second):
		t.Fatal("a proxy restarted as a node kept running")
	}
	if code := victim.cmd.ProcessState.ExitCode(); code != 78 || !strings.Contains(victim.stderr.String(), "role") {
		t.Fatalf("a proxy restarted as a node: exit %d, stderr %q; want 78 naming the role", code, victim.stderr.String())
	}
}

// initWithProxies forms the cell over nodes with proxies named as its
// proxy leaders, and returns its journal reference.
func (c *cell) initWithProxies(nodes, proxies []*proc) string {
	c.t.Helper()
	join := func(ps []*proc) string {
		var a []string
		for _, p := range ps {
			a = append(a, p.public())
		}
		return strings.Join(a, ",")
	}
	return c.initArgs("--members", join(nodes), "--proxies", join(proxies))
}

// ackedIn keeps the acknowledgements of acks that arrived in [from, to]:
// the longest gap among them leaves out the pauses that straddle a bound.
func ackedIn(acks []ack, from, to time.Time) []ack {
	var out []ack
	for _, a := range acks {
		if !a.at.Before(from) && !a.at.After(to) {
			out = append(out, a)
		}
	}
	return out
}
