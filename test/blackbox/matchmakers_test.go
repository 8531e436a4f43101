// This file replaces every founding machine of a running cell, acceptors and
// matchmakers both, as docs/guide/reconfiguration.md describes it: one
// machine at a time, `parosctl journal reconfigure` moves the journal off the founder
// and onto a new machine, and with it the founder's matchmaker (the next
// generation of the set), then `parosctl journal retire` retires the founder. With
// real `paros serve` processes under a Writer's load. The new machines are
// restarted one at a time (their matchmakers boot the new generation from
// disk), then two of the three founders are killed: before matchmaker-set
// generations the cell could never elect again at that point (every
// registration needed a majority of the founders). It must elect a new leader
// when the current one is killed too, and every acknowledged append must read
// back.
package blackbox

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parosdb/paros/client/admin"
)

func TestReplaceEveryMatchmakerThenKillTheOldMajority(t *testing.T) {
	// Arrange: a formed cell of three, three idle machines, a Writer over
	// all six appending in a loop.
	c := newCell(t)
	spares := []*proc{c.spare("m4"), c.spare("m5"), c.spare("m6")}
	ref := c.initCell()
	id := mustID(t, ref)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	all := append(slices.Clone(c.procs), spares...)
	conn := c.dial(ctx, all)
	wr := conn.Journal(id).NewWriter()
	defer wr.Close()
	if err := wr.Claim(ctx); err != nil {
		t.Fatalf("claim: %v", err)
	}
	load := startAppender(ctx, wr, "m", 30*time.Second)
	waitAcks := func(n int) { t.Helper(); load.wait(t, ctx, n) }
	acked := load.acked
	waitAcks(10)
	servers := func(ps []*proc) string {
		var a []string
		for _, p := range ps {
			a = append(a, p.public())
		}
		return strings.Join(a, ",")
	}

	// Act: replace founder i by spare i, the journal and its matchmaker in
	// one command, for i = 0, 1, 2.
	members := slices.Clone(c.procs)
	founders := inspect(ctx, conn, id)
	for i := range 3 {
		members[i] = spares[i]
		list := servers(members)
		founder := slices.IndexFunc(founders, func(st admin.MemberStatus) bool { return st.Addr == c.procs[i].public() })
		if founder < 0 {
			t.Fatalf("founder %d at %s did not answer Inspect", i+1, c.procs[i].public())
		}
		gone := founders[founder].NodeID
		out, code := c.ctl("--servers", servers(all), "journal", "reconfigure", ref, "--members", list)
		if code != 0 || !strings.Contains(out, fmt.Sprintf("matchmakers: generation %d", i+2)) {
			t.Fatalf("reconfigure onto %s: exit %d, want the matchmakers moved to generation %d: %s", list, code, i+2, out)
		}
		t.Logf("step %d: %s", i+1, strings.TrimSpace(out))
		// The founder left out retires with the leader's watermark: a
		// removed machine still answers Phase 1 and clients until then.
		w := c.waitGC(ctx, servers(all), ref, gone)
		for {
			out, code := c.ctl("--servers", servers(all), "journal", "retire", ref, "--node", fmt.Sprintf("%016x", gone), "--gc-watermark", w)
			if code == 0 {
				break
			}
			if code != exitRefused || !strings.Contains(out, "stale") || ctx.Err() != nil {
				t.Fatalf("retire of founder %d: exit %d: %s", i+1, code, out)
			}
			time.Sleep(100 * time.Millisecond) // it has not heard the configuration that removed it yet
		}
		waitAcks(acked() + 10)
	}

	// Act: restart every new machine in turn, so each matchmaker of
	// generation 4 boots from its disk (its generation state and the
	// reconstructed registries must come back), then kill two of the three
	// founders (they no longer hold the journal or the matchmakers), then
	// the journal's leader, so a new leader must matchmake with the
	// replaced set.
	for _, p := range spares {
		kill(p)
		c.start(p)
		waitAcks(acked() + 10)
	}
	t.Log("restarted the three new machines")
	kill(c.procs[0])
	kill(c.procs[1])
	t.Log("killed founders 1 and 2")
	waitAcks(acked() + 10)
	live := spares
	lc := c.dial(ctx, live)
	before := inspect(ctx, lc, id)[waitRole(t, ctx, lc, id, "leader")]
	if before.MatchmakerGeneration != 4 {
		t.Fatalf("the leader follows matchmaker generation %d (%x), want 4", before.MatchmakerGeneration, before.Matchmakers)
	}
	// Inspect answers for every machine the client learned (the killed
	// founders too): the leader is found by its address.
	leader := slices.IndexFunc(live, func(p *proc) bool { return p.public() == before.Addr })
	if leader < 0 {
		t.Fatalf("the leader %016x at %s is no new machine", before.NodeID, before.Addr)
	}
	kill(live[leader])
	t.Logf("killed the leader %016x", before.NodeID)
	survivors := slices.Delete(slices.Clone(live), leader, leader+1)
	sc := c.dial(ctx, survivors)
	waitRole(t, ctx, sc, id, "leader")
	waitAcks(acked() + 10)
	acks := load.finish(t)

	// Check: a new leader was elected under the replaced set, and every
	// acknowledged append reads back from the survivors.
	for _, st := range inspect(ctx, sc, id) {
		if st.Err == nil && st.Role == "leader" {
			t.Logf("new leader %016x, matchmakers %x at generation %d", st.NodeID, st.Matchmakers, st.MatchmakerGeneration)
		}
	}
	end := acks[len(acks)-1].seq + 1
	got := readAll(ctx, sc.Journal(id), &recorder{t0: time.Now()}, end)
	for _, a := range acks {
		if !bytes.Equal(got[a.seq], a.rec) {
			t.Fatalf("acknowledged append at %d reads back %q, want %q", a.seq, got[a.seq], a.rec)
		}
	}
	t.Logf("%d appends acknowledged and read back", len(acks))
}
