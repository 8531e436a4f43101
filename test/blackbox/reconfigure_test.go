// This file changes a journal's membership and quorum system under load,
// with real `paros serve` processes formed by `parosctl cell init` (a matchmaker
// on every founding machine), as an operator does it: with `parosctl
// journal reconfigure`, `parosctl journal inspect` and `parosctl journal retire`, or the client
// library's admin.Client.Reconfigure. A fourth machine is started idle on an
// empty data dir (`paros serve` with its own certificate) and named by its
// address; the reconfiguration admits it to the cell.
//
// What it checks (Matchmaker Paxos §3–§5):
//   - replacing a machine that died: a writer appends one record at a time
//     through the client library's raw calls, recording every reply; a
//     follower is killed with SIGKILL and its data dir wiped; `parosctl
//     journal reconfigure` moves the journal to the two survivors and the new
//     machine. The leader then runs that configuration, its garbage
//     collection becomes effective with the dead machine retirable, and a
//     retire of the dead machine fails as unreachable (exit 1). Every
//     acknowledged write reads back, the whole history is linearizable
//     (sim/lincheck's journal checker, with porcupine as a second
//     opinion), and the longest pause between two acknowledgements during
//     the reconfiguration is logged and bounded;
//   - majority → grid 2x2 → majority under a Writer's load, adding the idle
//     machine on the way to the grid and removing a live founder on the
//     way back; the removed machine retires with the leader's watermark
//     (`parosctl journal retire`, exit 0) and a member refuses (exit 3, member);
//     every acknowledged append reads back;
//   - a cell formed with `parosctl cell init --plain` has no matchmakers:
//     inspect shows no configuration ballot, and reconfigure is refused
//     (exit 3) naming it.
package blackbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
	"github.com/parosdb/paros/core/journal"
)

// ackGapMax bounds the longest pause between two acknowledged writes while
// a reconfiguration runs: a matchmaking round trip and a Phase 1 on
// loopback, with a wide margin for a loaded two-core machine.
const ackGapMax = 5 * time.Second

// spare starts one more machine, idle (no cell), on an empty data dir
// under the cell's base dir, with its own certificate. It is not among
// c.procs, so init and --servers leave it out.
func (c *cell) spare(name string) *proc {
	c.t.Helper()
	base := filepath.Dir(c.procs[0].data)
	p := &proc{addr: freeAddr(c.t), data: filepath.Join(base, name)}
	c.issue(p, filepath.Join(base, "pki", name))
	c.start(p)
	c.t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// kill stops p with SIGKILL and waits for it.
func kill(p *proc) {
	_ = p.cmd.Process.Signal(os.Kill)
	<-p.done
}

// inspectJSON runs `parosctl journal inspect ref -o json` against servers
// and returns the answers of the servers that answered.
func (c *cell) inspectJSON(servers, ref string) []map[string]any {
	c.t.Helper()
	out, code := c.ctl("--servers", servers, "-o", "json", "journal", "inspect", ref)
	if code != 0 {
		return nil
	}
	var sts []map[string]any
	if json.Unmarshal([]byte(out), &sts) != nil {
		return nil
	}
	return sts
}

// waitGC polls `parosctl journal inspect` until the leader's garbage
// collection is effective with node retirable, and returns the leader's
// watermark as parosctl reads it (R.N).
func (c *cell) waitGC(ctx context.Context, servers, ref string, node admin.NodeID) string {
	c.t.Helper()
	for {
		for _, st := range c.inspectJSON(servers, ref) {
			if st["role"] != "leader" || st["gc_effective"] != true {
				continue
			}
			rs, _ := st["retirable"].([]any)
			for _, r := range rs {
				if r == fmt.Sprintf("%016x", node) {
					return st["gc_watermark"].(string)
				}
			}
		}
		if ctx.Err() != nil {
			c.t.Fatalf("the leader's GC never made %016x retirable", node)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ack is one acknowledged write: where it landed, its bytes, and when the
// acknowledgement arrived.
type ack struct {
	seq journal.Seq
	rec []byte
	at  time.Time
}

// longestGap is the longest pause between two consecutive acknowledgements
// of acks (in order) that overlaps [from, to].
func longestGap(acks []ack, from, to time.Time) time.Duration {
	var gap time.Duration
	for i := 1; i < len(acks); i++ {
		a, b := acks[i-1].at, acks[i].at
		if b.Before(from) || a.After(to) {
			continue
		}
		gap = max(gap, b.Sub(a))
	}
	return gap
}

func TestReplaceAMachineUnderLoad(t *testing.T) {
	// Arrange: a formed cell of three, an idle fourth machine, one Client
	// over the three, the journal claimed, a writer appending one record
	// at a time and recording every reply.
	c := newCell(t)
	spare := c.spare("m4")
	ref := c.initCell()
	id := mustID(t, ref)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn := c.dial(ctx, c.procs)
	j := conn.Journal(id)
	rec := &recorder{t0: time.Now()}
	uuid := journal.LeaderUUID{Hi: 0xfeed, Lo: 2}
	for !claim(ctx, j, rec, uuid) {
		if ctx.Err() != nil {
			t.Fatal("no leader elected")
		}
		time.Sleep(50 * time.Millisecond)
	}
	var mu sync.Mutex
	var acks []ack
	acked := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acks)
	}
	stop := make(chan struct{})
	writerDone := make(chan error, 1)
	go func() {
		next := journal.FirstSeq
		var pending *journal.WriteRequest
		for {
			select {
			case <-stop:
				writerDone <- nil
				return
			default:
			}
			req := pending
			if req == nil {
				req = &journal.WriteRequest{Leader: uuid, Seq: next, Records: [][]byte{[]byte(fmt.Sprintf("r%d", next))}}
			}
			out, ok := write(ctx, j, rec, *req)
			switch {
			case !ok:
				pending = req // no verdict: resend the identical write
				time.Sleep(10 * time.Millisecond)
			case out.Kind == journal.Accepted || out.Kind == journal.Duplicate:
				mu.Lock()
				acks = append(acks, ack{seq: req.Seq, rec: req.Records[0], at: time.Now()})
				mu.Unlock()
				next, pending = req.Seq+1, nil
			default:
				writerDone <- fmt.Errorf("write at %d: %s", req.Seq, out)
				return
			}
		}
	}()
	waitAcks := func(n int) {
		t.Helper()
		for acked() < n {
			select {
			case err := <-writerDone:
				t.Fatalf("the writer stopped: %v", err)
			case <-time.After(10 * time.Millisecond):
			}
			if ctx.Err() != nil {
				t.Fatalf("only %d writes acknowledged, want %d", acked(), n)
			}
		}
	}
	waitAcks(20)
	sts := inspect(ctx, conn, id)
	leader := waitRole(t, ctx, conn, id, "leader")
	victim := (leader + 1) % 3
	var survivors []string
	for i, st := range sts {
		if i != victim {
			survivors = append(survivors, fmt.Sprintf("%016x", st.NodeID))
		}
	}
	dead := sts[victim].NodeID

	// Act: kill a follower, wipe its data dir, and replace it by the idle
	// machine while the writer goes on.
	kill(c.procs[victim])
	if err := os.RemoveAll(c.procs[victim].data); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed machine %d (%016x) and wiped its data dir", victim+1, dead)
	waitAcks(acked() + 10)
	members := strings.Join(append(survivors, spare.addr), ",")
	reconfStart := time.Now()
	out, code := c.ctl("journal", "reconfigure", ref, "--members", members)
	reconfEnd := time.Now()
	if code != 0 || !strings.Contains(out, "reconfigured") {
		t.Fatalf("reconfigure --members %s: exit %d: %s", members, code, out)
	}
	t.Logf("%s", strings.TrimSpace(out))
	waitAcks(acked() + 20)

	// Check: the leader's GC makes the dead machine retirable; retiring it
	// fails as unreachable.
	all := c.servers() + "," + spare.addr
	w := c.waitGC(ctx, all, ref, dead)
	if out, code := c.ctl("journal", "retire", ref, "--node", fmt.Sprintf("%016x", dead), "--gc-watermark", w); code != exitUnreachable {
		t.Fatalf("retire of the dead machine: exit %d: %s; want %d (unreachable)", code, out, exitUnreachable)
	}
	close(stop)
	if err := <-writerDone; err != nil {
		t.Fatal(err)
	}

	// Check: every acknowledged write reads back, from the new
	// configuration; the history is linearizable; the writes barely paused.
	var live []*proc
	for i, p := range c.procs {
		if i != victim {
			live = append(live, p)
		}
	}
	live = append(live, spare)
	mu.Lock()
	defer mu.Unlock()
	end := acks[len(acks)-1].seq + 1
	got := readAll(ctx, c.dial(ctx, live).Journal(id), rec, end)
	for _, a := range acks {
		if !bytes.Equal(got[a.seq], a.rec) {
			t.Fatalf("acknowledged write at %d reads back %q, want %q", a.seq, got[a.seq], a.rec)
		}
	}
	checkHistory(t, rec.ops)
	gap := longestGap(acks, reconfStart, reconfEnd)
	t.Logf("longest ack gap during reconfiguration: %v (reconfigure took %v; %d writes acknowledged, %d operations checked linearizable)",
		gap, reconfEnd.Sub(reconfStart).Round(time.Millisecond), len(acks), len(rec.ops))
	if gap > ackGapMax {
		t.Fatalf("the writes paused %v during the reconfiguration, want at most %v", gap, ackGapMax)
	}
}

func TestGridAndBackUnderLoad(t *testing.T) {
	// Arrange: a formed cell of three and an idle fourth machine; a Writer
	// over all four appends in a loop, recording every acknowledgement.
	c := newCell(t)
	spare := c.spare("m4")
	ref := c.initCell()
	id := mustID(t, ref)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn := c.dial(ctx, append(slices.Clone(c.procs), spare))
	wr := conn.Journal(id).NewWriter()
	defer wr.Close()
	if err := wr.Claim(ctx); err != nil {
		t.Fatalf("claim: %v", err)
	}
	load := startAppender(ctx, wr, "g", 10*time.Second)
	pace := func() { t.Helper(); load.pace(t, 300*time.Millisecond) } // let the writer run a little between steps
	pace()
	sts := inspect(ctx, conn, journal.ID{}) // node ids, the idle machine's too
	leader := waitRole(t, ctx, conn, id, "leader")
	hex := func(i int) string { return fmt.Sprintf("%016x", sts[i].NodeID) }
	removed := (leader + 1) % 3
	var kept []string
	for i := range 3 {
		if i != removed {
			kept = append(kept, hex(i))
		}
	}

	// Act: majority of three → grid 2x2 with the idle machine → majority
	// of three without one founder, pausing between the steps.
	type step struct {
		name  string
		to    admin.Configuration
		quota string
	}
	grid := admin.Configuration{Members: []string{hex(0), hex(1), hex(2), spare.addr}, Quorum: admin.Grid(2, 2)}
	var windows [][2]time.Time
	for _, s := range []step{
		{"grid 2x2", grid, "grid"},
		// The idle machine joined the cell in the grid step: named by its
		// node id now.
		{"majority", admin.Configuration{Members: append(slices.Clone(kept), hex(3))}, "majority"},
	} {
		start := time.Now()
		if err := admin.New(conn).Reconfigure(ctx, id, s.to); err != nil {
			t.Fatalf("reconfigure to %s: %v", s.name, err)
		}
		windows = append(windows, [2]time.Time{start, time.Now()})
		l := leaderOf(t, ctx, conn, id)
		if !strings.HasPrefix(l.Quorum.String(), s.quota) || len(l.Members) != len(s.to.Members) {
			t.Fatalf("after the step to %s the leader runs %s over %x", s.name, l.Quorum, l.Members)
		}
		t.Logf("%s: leader %016x runs %s over %x since %s, in %v", s.name, l.NodeID, l.Quorum, l.Members, l.ConfigSince,
			time.Since(start).Round(time.Millisecond))
		pace()
	}

	// Check: the founder left out retires with the leader's watermark; a
	// member refuses.
	gone := sts[removed].NodeID
	w := c.waitGC(ctx, c.servers()+","+spare.addr, ref, gone)
	for {
		out, code := c.ctl("journal", "retire", ref, "--node", fmt.Sprintf("%016x", gone), "--gc-watermark", w)
		if code == 0 {
			break
		}
		if code != exitRefused || !strings.Contains(out, "stale") || ctx.Err() != nil {
			t.Fatalf("retire of the removed machine: exit %d: %s", code, out)
		}
		time.Sleep(100 * time.Millisecond) // it has not heard the configuration that removed it yet
	}
	if out, code := c.ctl("journal", "retire", ref, "--node", kept[0], "--gc-watermark", w); code != exitRefused || !strings.Contains(out, "member") {
		// kept[0] may lead: then it refuses as the leader, also exit 3.
		if code != exitRefused || !strings.Contains(out, "leader") {
			t.Fatalf("retire of a member: exit %d: %s; want 3, member", code, out)
		}
	}
	pace()
	acks := load.finish(t)

	// Check: every acknowledged append reads back.
	end := acks[len(acks)-1].seq + 1
	got := readAll(ctx, conn.Journal(id), &recorder{t0: time.Now()}, end)
	for _, a := range acks {
		if !bytes.Equal(got[a.seq], a.rec) {
			t.Fatalf("acknowledged append at %d reads back %q, want %q", a.seq, got[a.seq], a.rec)
		}
	}
	for i, win := range windows {
		t.Logf("step %d: longest ack gap during reconfiguration: %v", i+1, longestGap(acks, win[0], win[1]))
	}
	t.Logf("%d appends acknowledged and read back", len(acks))
}

func TestPlainCellRefusesReconfigure(t *testing.T) {
	// Arrange: a cell formed with --plain.
	c := newCell(t)
	out := c.form("--members", c.servers(), "--plain", "--journals", "1")
	_, ref, _ := strings.Cut(strings.TrimSpace(out), "journals=")

	// Act.
	var insp string
	var code int
	for range 100 { // until some node leads
		if insp, code = c.ctl("journal", "inspect", ref); code == 0 && strings.Contains(insp, "role=leader") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	node := insp[strings.Index(insp, "node=")+len("node=") : strings.Index(insp, "node=")+len("node=")+16]
	out, code = c.ctl("journal", "reconfigure", ref, "--members", node)

	// Check.
	if strings.Contains(insp, "config=") || strings.Contains(insp, "matchmakers=") {
		t.Fatalf("a plain cell's inspect shows matchmaker facts: %s", insp)
	}
	if code != exitRefused || !strings.Contains(out, "no matchmakers") {
		t.Fatalf("reconfigure of a plain cell: exit %d: %s; want 3 naming no matchmakers", code, out)
	}
}

// leaderOf is the leader's answer about journal id, waiting for one.
func leaderOf(t *testing.T, ctx context.Context, c *client.Client, id journal.ID) admin.MemberStatus {
	t.Helper()
	i := waitRole(t, ctx, c, id, "leader")
	for {
		if st := inspect(ctx, c, id)[i]; st.Err == nil && st.Role == "leader" {
			return st
		}
		i = waitRole(t, ctx, c, id, "leader")
		if ctx.Err() != nil {
			t.Fatal(errors.New("no leader"))
		}
	}
}

// Exit codes of parosctl the tests expect.
const (
	exitUnreachable = 1
	exitRefused     = 3
)

func TestAClientFollowsItsJournalToMachinesItWasNotGiven(t *testing.T) {
	// Arrange: a formed cell of three and an idle fourth machine; a Client
	// dialled to machine 1 alone claims the journal and appends.
	c := newCell(t)
	spare := c.spare("m4")
	ref := c.initCell()
	id := mustID(t, ref)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	one := c.dial(ctx, c.procs[:1])
	wr := one.Journal(id).NewWriter()
	defer wr.Close()
	if err := wr.Claim(ctx); err != nil {
		t.Fatalf("claim: %v", err)
	}
	if _, err := wr.Append(ctx, []byte("before")); err != nil {
		t.Fatalf("append before: %v", err)
	}
	sts := inspect(ctx, c.dial(ctx, c.procs), id)
	members := []string{fmt.Sprintf("%016x", sts[1].NodeID), fmt.Sprintf("%016x", sts[2].NodeID), spare.addr}

	// Act: move the journal off machine 1, the only machine the Client
	// was given, onto machines 2, 3 and the new one.
	if err := admin.New(one).Reconfigure(ctx, id, admin.Configuration{Members: members, Quorum: admin.Majority()}); err != nil {
		t.Fatalf("reconfigure to %v: %v", members, err)
	}

	// Check: the Writer goes on: machine 1 names the leader, and the
	// Client dials it by the address the cell lists for it.
	seq, err := wr.Append(ctx, []byte("after"))
	if err != nil {
		t.Fatalf("append after the journal left the Client's machines: %v", err)
	}
	if seq != journal.FirstSeq+1 {
		t.Fatalf("after at %d, want %d", seq, journal.FirstSeq+1)
	}
	if got := one.Servers(); len(got) < 2 {
		t.Fatalf("the Client dials %v: it learned no machine of the cell", got)
	}
}
