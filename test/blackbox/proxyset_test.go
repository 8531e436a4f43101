package blackbox

// This file checks `parosctl proxies set` end to end: a secure cell of
// three `paros serve` nodes and one `paros serve --role proxy` machine
// (every process with its admin listener, --metrics), formed with
// `parosctl cell init --proxies`, and a Writer of the public client appending
// one record at a time under load (startAppendLoad). A fresh `paros serve
// --role proxy` on an empty data dir is named beside the first by
// `parosctl proxies set`: it joins the cell and the leader delegates
// rounds to it (paros_proxy_rounds_delegated_total on its /metrics). The
// same command again is a no-op. Then `parosctl proxies set` names the
// new one alone: the removed proxy's delegated counter stops growing while
// the Writer goes on appending, every machine keeps running, and every
// acknowledged append reads back, in order and with its bytes. The
// longest pause between two acknowledgements in each phase is logged.

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/parosdb/paros/core/journal"
)

// Bounds of the proxies set test.
const (
	// proxySetLoadBefore is how long the load runs before the new proxy is
	// named; proxySetDelegatedWait bounds the wait for its first delegated
	// round; proxySetSettle is how long rounds delegated before the
	// removal may still reach the removed proxy; proxySetLoadAfter how
	// long the load goes on after that, the removed proxy's counter
	// watched.
	proxySetLoadBefore    = time.Second
	proxySetDelegatedWait = 10 * time.Second
	proxySetSettle        = time.Second
	proxySetLoadAfter     = 2 * time.Second
	// proxySetAcksAfterMin is the least number of appends acknowledged
	// while the removed proxy is watched.
	proxySetAcksAfterMin = 3
)

func TestProxiesSetAddsAFreshProxyUnderLoadAndRemovesTheOther(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cell of five processes")
	}
	// Arrange: three nodes and one proxy, every one with its admin
	// listener; a claimed Writer appending under load; an idle proxy
	// machine on an empty data dir.
	c := newCellWith(t, func(_ int, p *proc) { p.args = []string{"--metrics", freeAddr(t)} })
	nodes := slices.Clone(c.procs)
	base := filepath.Dir(filepath.Dir(c.caDir))
	proxies := make([]*proc, 2)
	admin := make([]string, 2)
	for i := range proxies {
		admin[i] = freeAddr(t)
		proxies[i] = &proc{addr: freeAddr(t), data: filepath.Join(base, fmt.Sprintf("x%d", i+1)),
			args: []string{"--role", "proxy", "--metrics", admin[i]}}
		c.issue(proxies[i], filepath.Join(base, "pki", fmt.Sprintf("x%d", i+1)))
	}
	first, fresh := proxies[0], proxies[1]
	c.start(first)
	c.procs = append(c.procs, first) // stopped by the cell's cleanup
	id := mustID(t, c.initWithProxies(nodes, []*proc{first}))
	c.start(fresh)
	c.procs = append(c.procs, fresh)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := c.dial(ctx, nodes).Journal(id).NewWriter()
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatalf("claim: %v", err)
	}
	load := startAppendLoad(ctx, w, "proxyset")
	defer load.stop()
	acks := load.acks
	started := time.Now()
	time.Sleep(proxySetLoadBefore)

	// Act: name the fresh proxy beside the first, twice.
	addedAt := time.Now()
	out, code := c.ctl("proxies", "set", first.public()+","+fresh.public())
	added := time.Since(addedAt)
	if code != 0 {
		t.Fatalf("proxies set: exit %d: %s\n%s", code, out, fresh.stderr)
	}
	if out, code := c.ctl("proxies", "set", fresh.public()+","+first.public()); code != 0 {
		t.Fatalf("proxies set again: exit %d: %s", code, out)
	}

	// Check: the fresh proxy is delegated rounds.
	var delegated float64
	for delegated == 0 {
		if time.Since(addedAt) > proxySetDelegatedWait {
			t.Fatalf("the fresh proxy was delegated no round %v after proxies set\n%s", proxySetDelegatedWait, fresh.stderr)
		}
		time.Sleep(50 * time.Millisecond)
		delegated = scrape(t, admin[1]).get("paros_proxy_rounds_delegated_total")
	}
	t.Logf("proxies set took %v; the fresh proxy was delegated its first rounds %v after it began (%v so far)",
		added.Round(time.Millisecond), time.Since(addedAt).Round(time.Millisecond), delegated)

	// Act: the fresh proxy alone; let the rounds delegated before settle,
	// then watch the removed proxy while the load goes on.
	removedAt := time.Now()
	if out, code := c.ctl("proxies", "set", fresh.public()); code != 0 {
		t.Fatalf("proxies set to the fresh one: exit %d: %s", code, out)
	}
	time.Sleep(proxySetSettle)
	watchedPos := acks.last.Load()
	firstBefore := scrape(t, admin[0]).get("paros_proxy_rounds_delegated_total")
	freshBefore := scrape(t, admin[1]).get("paros_proxy_rounds_delegated_total")
	time.Sleep(proxySetLoadAfter)
	firstAfter := scrape(t, admin[0]).get("paros_proxy_rounds_delegated_total")
	freshAfter := scrape(t, admin[1]).get("paros_proxy_rounds_delegated_total")
	writeErr := load.stop()
	stoppedAt := time.Now()
	if writeErr != nil {
		t.Fatal(writeErr)
	}

	// Check: the removed proxy is delegated nothing more while the fresh
	// one is and the writes go on; every machine still runs.
	if firstAfter != firstBefore {
		t.Fatalf("the removed proxy was delegated %v rounds more over %v after proxies set removed it", firstAfter-firstBefore, proxySetLoadAfter)
	}
	if freshAfter <= freshBefore {
		t.Fatalf("the fresh proxy was delegated no round over %v (%v before, %v after)", proxySetLoadAfter, freshBefore, freshAfter)
	}
	if n := acks.last.Load() - watchedPos; n < proxySetAcksAfterMin {
		t.Fatalf("%d appends acknowledged over %v after the removal, want at least %d", n, proxySetLoadAfter, proxySetAcksAfterMin)
	}
	checkRunning(t, c)
	all := acks.acked()
	t.Logf("longest ack gap: %v before proxies set, %v from adding the fresh proxy to removing the first, %v from the removal on; %d appends in all",
		longestGap(ackedIn(all, started, addedAt), started, addedAt).Round(time.Millisecond),
		longestGap(all, addedAt, removedAt).Round(time.Millisecond),
		longestGap(all, removedAt, stoppedAt).Round(time.Millisecond), len(all))
	t.Logf("the removed proxy was delegated %v rounds in all; the fresh one %v, %v of them while watched (%d appends)",
		firstAfter, freshAfter, freshAfter-freshBefore, acks.last.Load()-watchedPos)

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
}
