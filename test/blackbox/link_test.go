// This file cuts a node off and heals it while a client keeps writing, with
// real `paros serve` processes. Each process listens on its own port and
// advertises the address of a TCP proxy the test owns (internal/testcell's
// Proxy), so every connection to it — peers dial the addresses in the cell
// plan, and the client dials the same advertised addresses — passes through
// that proxy. The test claims the journal with the client library's
// Writer, writes one record at a time, cuts the proxy of a follower
// (every connection to it closed, new ones refused) for four seconds,
// heals it and writes on. The cut is one-way: the node hears nothing, but
// its own streams to the others' proxies still flow, so its campaigns can
// depose the leader (the core has no pre-vote); the test logs it when the
// leadership moved. It checks that writes are acknowledged while the cut
// holds (the other two still form a majority), that every acknowledged
// write reads back with its bytes after the heal, and that the cut node
// catches up: its applied slot, asked directly on its listen port, reaches
// the leader's.
package blackbox

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/internal/testcell"
)

// cutFor is how long the link stays cut.
const cutFor = 4 * time.Second

func TestLinkCutAndHealedWhileWriting(t *testing.T) {
	// Arrange: three machines behind proxies, a claimed writer.
	var proxies []*testcell.Proxy
	c := newCellWith(t, func(_ int, p *proc) {
		px, err := testcell.NewProxy(p.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { px.Close() })
		proxies = append(proxies, px)
		p.advertise = px.Addr
	})
	ref := c.initCell()
	id := mustID(t, ref)
	var public, direct []string
	for _, p := range c.procs {
		public, direct = append(public, p.public()), append(direct, p.addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	conn, err := client.Dial(ctx, public, c.clientOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	admin, err := client.Dial(ctx, direct, c.clientOptions()...) // Inspect each node past its proxy
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	w := conn.Journal(id).NewWriter()
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatalf("claim: %v", err)
	}
	leader := waitRole(t, ctx, admin, id, "leader")
	cut := (leader + 1) % len(c.procs)

	// Act: write while a follower is cut off, then healed.
	var mu sync.Mutex
	acked := map[journal.Seq][]byte{}
	var cutting atomic.Bool
	var duringCut atomic.Int64
	stop := make(chan struct{})
	writerDone := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				writerDone <- nil
				return
			default:
			}
			rec := []byte(fmt.Sprintf("record-%d", i))
			seq, err := w.Append(ctx, rec)
			if err != nil {
				writerDone <- fmt.Errorf("append %d: %w", i, err)
				return
			}
			mu.Lock()
			acked[seq] = rec
			mu.Unlock()
			if cutting.Load() {
				duringCut.Add(1)
			}
		}
	}()
	time.Sleep(500 * time.Millisecond)
	cutting.Store(true)
	proxies[cut].Cut()
	t.Logf("cut machine %d (the leader is machine %d)", cut+1, leader+1)
	time.Sleep(cutFor)
	lagFrom, lagTo := inspectApplied(t, ctx, admin, cut, id), inspectApplied(t, ctx, admin, waitRole(t, ctx, admin, id, "leader"), id)
	proxies[cut].Heal()
	cutting.Store(false)
	t.Logf("healed; %d writes acknowledged during the cut; the cut machine had applied slot %d, the leader %d",
		duringCut.Load(), lagFrom, lagTo)
	time.Sleep(time.Second)
	close(stop)
	writerErr := <-writerDone

	// Check: writes went on through the cut, every acknowledged write reads
	// back, and the cut node catches up with the leader.
	if writerErr != nil {
		t.Fatal(writerErr)
	}
	if n := duringCut.Load(); n < 10 {
		t.Fatalf("only %d writes acknowledged while a minority was cut off", n)
	}
	end := w.NextSeq()
	got := map[journal.Seq][]byte{}
	r := conn.Journal(id).NewReader(journal.FirstSeq, client.WithTailWait(0))
	for r.Cursor() < end {
		at := r.Cursor()
		recs, err := r.Next(ctx)
		if err != nil {
			t.Fatalf("read at %d: %v", at, err)
		}
		for _, rec := range recs {
			got[rec.Seq] = rec.Data
		}
	}
	for seq, want := range acked {
		if !bytes.Equal(got[seq], want) {
			t.Fatalf("acknowledged write at %d reads back %q, want %q", seq, got[seq], want)
		}
	}
	t.Logf("%d acknowledged writes read back", len(acked))
	leaderNow := waitRole(t, ctx, admin, id, "leader")
	if leaderNow != leader {
		// The cut node hears nothing but still sends: its Prepares can
		// depose the leader (the core has no pre-vote).
		t.Logf("leadership moved from machine %d to machine %d", leader+1, leaderNow+1)
	}
	target := inspectApplied(t, ctx, admin, leaderNow, id)
	start := time.Now()
	for {
		applied := inspectApplied(t, ctx, admin, cut, id)
		if applied >= target {
			t.Logf("the cut machine caught up to slot %d in %v", applied, time.Since(start).Round(time.Millisecond))
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the cut machine applied slot %d, the leader %d", applied, target)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitRole returns the index (in admin.Servers order) of the node that
// reports role for journal id.
func waitRole(t *testing.T, ctx context.Context, admin *client.Client, id journal.ID, role string) int {
	t.Helper()
	for {
		for i, st := range inspect(ctx, admin, id) {
			if st.Err == nil && st.Role == role {
				return i
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("no node is %s of %s", role, id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// inspectApplied returns the slot node i (in admin.Servers order) applied
// of journal id.
func inspectApplied(t *testing.T, ctx context.Context, admin *client.Client, i int, id journal.ID) uint64 {
	t.Helper()
	for {
		st := inspect(ctx, admin, id)[i]
		if st.Err == nil {
			return st.Applied
		}
		if ctx.Err() != nil {
			t.Fatalf("inspect machine %d: %v", i+1, st.Err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
