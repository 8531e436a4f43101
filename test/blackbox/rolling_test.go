// This file restarts a cell one machine at a time under load, as an
// operator rolls out a new build: each `paros serve` process is stopped
// with SIGTERM (a graceful shutdown, which hands every journal the machine
// leads to its most caught-up live follower: cooperative leader handoff,
// DPaxos "Relinquishment", core/paxos/node_handoff.go), waited for, started
// again on the same data dir, and waited for until it serves and caught up
// (its applied slot reaching the leader's chosen slot, by Admin.Inspect)
// before the next one goes. The machine that leads goes first, and each
// later pick is the machine leading at that moment when it was not
// restarted yet. A Writer of the public client appends one record at a
// time throughout (startAppendLoad), recording when each append was
// acknowledged.
//
// One hop stays the core's rule: a leadership handed on once is not handed
// on again. So a machine leading an inherited leadership, when it gets its
// SIGTERM, first runs its own Phase 1 at once (paxos.Node.Reelect: a
// ballot one round above everything seen, owned by itself, with no
// election timeout waited for) and hands on once it won. A rolling restart
// thus costs no election timeout: the first hop keeps the ballot, a later
// hop costs one Phase 1.
//
// What it checks:
//   - every acknowledged append reads back, in order and complete;
//   - no machine but the one being stopped ever campaigns: after each
//     restart every machine's promised ballot (Admin.Inspect) is the
//     ballot the cell led at before that restart, or the stopped
//     machine's re-election ballot (its own node, one round above); and
//     each machine that was not stopped in that step won no election
//     during it (paros_elections on /metrics unchanged; the restarted
//     process won none since its start; the stopped process's own
//     re-election is lost with its exit);
//   - each SIGTERM of a leader hands its journal on: the process logs
//     handed_off=1 as it shuts down, and within rollingHandoffWait of its
//     exit another machine leads, at the old ballot (an elected leader's
//     plain handoff) or at the stopped machine's new ballot (a successor's
//     re-election, then its handoff); the test logs which, and traces the
//     roles and promises of the cell from the SIGTERM to the successor;
//   - the writes barely paused: the longest pause between two
//     acknowledgements during each restart (SIGTERM to caught up) and over
//     the whole rolling restart is logged, with the restarts that
//     re-elected named, and bounded by rollingAckGapMax.
package blackbox

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/security"
	"github.com/parosdb/paros/wire"
)

// Rolling restart phases and bounds.
const (
	// rollingLoadBetween is how long the load runs before the first
	// restart and after each one.
	rollingLoadBetween = time.Second
	// rollingExitWait bounds a graceful shutdown (its handoff is bounded
	// by 2 s in serve).
	rollingExitWait = 10 * time.Second
	// rollingHandoffWait bounds the wait, after a leader exited, for
	// another machine to lead: the handoff (and a successor's re-election
	// before it) left before the exit, so only the Inspect poll is waited
	// for.
	rollingHandoffWait = time.Second
	// rollingCatchUpWait bounds the wait for a restarted machine to serve
	// and catch up.
	rollingCatchUpWait = 15 * time.Second
	// rollingAckGapMax bounds the longest pause between two acknowledged
	// appends during the rolling restart: a handoff is one message and a
	// disk sync, a re-election one Phase 1 more, an election at least one
	// 500 ms timeout; the bound leaves a wide margin for a slow, shared CI
	// machine.
	rollingAckGapMax = 2 * time.Second
	// rollingTraceEvery is the poll period of the trace of a leader's
	// shutdown.
	rollingTraceEvery = 2 * time.Millisecond
)

func TestRollingRestartHandsOffWithoutAnElectionTimeout(t *testing.T) {
	// Arrange: three machines, each with its admin listener (/metrics); a
	// formed cell; a claimed Writer appending one record at a time.
	admin := make([]string, 3)
	c := newCellWith(t, func(i int, p *proc) {
		admin[i] = freeAddr(t)
		p.args = []string{"--metrics", admin[i]}
	})
	id := mustID(t, c.initCell())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn := c.dial(ctx, c.procs)
	w := conn.Journal(id).NewWriter()
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatalf("claim: %v", err)
	}
	load := startAppendLoad(ctx, w, "rolling")
	defer load.stop()
	time.Sleep(rollingLoadBetween)
	first := c.leader(ctx, id, -1)
	ballot := first.reply.GetPromised()
	c.checkPromises(ctx, id, ballot, nil, "before the rolling restart")
	nodes := make([]uint64, 3) // each machine's node id
	elections := make([]float64, 3)
	for i, p := range c.procs {
		st, err := c.inspectOnce(ctx, p, id)
		if err != nil {
			t.Fatalf("inspect machine %d: %v", i+1, err)
		}
		nodes[i] = st.GetNodeId()
		elections[i] = scrape(t, admin[i]).get("paros_elections")
	}
	t.Logf("machine %d leads at ballot %s; node ids %s; elections won so far per machine: %v",
		first.i+1, ballotString(ballot), nodeList(nodes), elections)

	// Act and check: restart each machine in turn, the leader first.
	rollStart := time.Now()
	restarted := make([]bool, 3)
	var windows [][2]time.Time // each restart's [SIGTERM, caught up]
	var kinds []string         // each restart's handoff: plain, re-elected or none
	for range c.procs {
		lead := c.leader(ctx, id, -1)
		before := lead.reply.GetPromised()
		i := lead.i
		if restarted[i] {
			i = slices.Index(restarted, false)
		}
		p := c.procs[i]
		leading := i == lead.i
		step := fmt.Sprintf("restart %d (machine %d)", len(windows)+1, i+1)
		for k := range c.procs {
			elections[k] = scrape(t, admin[k]).get("paros_elections")
		}
		var tr *shutdownTrace
		if leading {
			tr = c.traceShutdown(ctx, id, nodes)
		}

		stopAt := time.Now()
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-p.done:
		case <-time.After(rollingExitWait):
			t.Fatalf("machine %d still runs %v after SIGTERM\n%s", i+1, rollingExitWait, p.stderr)
		}
		exitAt := time.Now()
		if code := p.cmd.ProcessState.ExitCode(); code != 0 {
			t.Fatalf("machine %d exited %d after SIGTERM\n%s", i+1, code, p.stderr)
		}
		handed := shutdownLine(p.stderr.String())
		successor, kind := "a follower: nothing to hand on", "none (a follower)"
		if leading {
			successor, kind = "no successor", "none"
			inherited := before.GetNode() != nodes[i]
			next, ok := c.leaderWithin(ctx, id, i, rollingHandoffWait)
			leadAt := time.Since(stopAt)
			tr.stop()
			at := next.reply.GetPromised()
			switch {
			case !ok:
				t.Errorf("%s: no other machine leads %v after machine %d exited (it led %s, inherited: %v; %s)\n%s",
					step, rollingHandoffWait, i+1, ballotString(before), inherited, handed, tr)
			case sameBallot(at, before) && !inherited:
				kind = "plain handoff"
				successor = fmt.Sprintf("machine %d leads at the same ballot %s %v after the SIGTERM",
					next.i+1, ballotString(at), leadAt.Round(time.Millisecond))
			case at.GetNode() == nodes[i] && at.GetRound() == before.GetRound()+1 && inherited:
				kind = "re-elected, then handed on"
				successor = fmt.Sprintf("machine %d re-elected itself at %s and machine %d leads at it %v after the SIGTERM",
					i+1, ballotString(at), next.i+1, leadAt.Round(time.Millisecond))
			default:
				t.Errorf("%s: machine %d leads at %s after machine %d exited, want %s; machine %d led at %s, inherited: %v (%s)\n%s",
					step, next.i+1, ballotString(at), i+1, wantSuccessor(before, nodes[i], inherited), i+1, ballotString(before), inherited, handed, tr)
			}
			// The machine leads the test's journal and perhaps the
			// cell's control-plane journals: it hands on at least one.
			if handedOff(handed) < 1 {
				t.Errorf("%s: machine %d led (inherited: %v) and handed nothing on at its SIGTERM: %q\n%s",
					step, i+1, inherited, handed, tr)
			}
		}

		c.start(p)
		restarted[i] = true
		target := c.leader(ctx, id, i).reply.GetChosenIndex()
		for {
			st, err := c.inspectOnce(ctx, p, id)
			if err == nil && st.GetApplied() >= target {
				break
			}
			if time.Since(exitAt) > rollingCatchUpWait {
				t.Fatalf("machine %d applied slot %d (%v) %v after its restart, want %d\n%s",
					i+1, st.GetApplied(), err, rollingCatchUpWait, target, p.stderr)
			}
			time.Sleep(10 * time.Millisecond)
		}
		servedAt := time.Now()
		windows = append(windows, [2]time.Time{stopAt, servedAt})
		kinds = append(kinds, kind)
		if tr != nil {
			t.Logf("%s: %s", step, tr)
		}
		t.Logf("%s: leading: %v at %s; exited %v after SIGTERM (%s); %s; back and caught up to slot %d %v after its exit",
			step, leading, ballotString(before), exitAt.Sub(stopAt).Round(time.Millisecond), handed, successor, target,
			servedAt.Sub(exitAt).Round(time.Millisecond))
		time.Sleep(rollingLoadBetween)
		select {
		case <-load.done:
			t.Fatalf("the load stopped: %v", load.err)
		default:
		}
		// Check: no machine but the stopped one campaigned in this step.
		c.checkPromises(ctx, id, before, &campaigner{node: nodes[i], round: before.GetRound() + 1}, "after "+step)
		for k := range c.procs {
			want := elections[k]
			if k == i {
				want = 0 // a new process
			}
			if got := scrape(t, admin[k]).get("paros_elections"); got != want {
				t.Errorf("an election timeout ran %s: machine %d's paros_elections went from %v to %v (stopped in this step: %v)",
					"during "+step, k+1, want, got, k == i)
			}
		}
	}
	rollEnd := time.Now()
	if err := load.stop(); err != nil {
		t.Fatal(err)
	}
	// The gaps are measured once the load stopped: an append stalled past
	// a restart's end still closes a gap that overlaps it.
	acks := load.acks.acked()
	overall := longestGap(acks, rollStart, rollEnd)
	var per []string
	for k, w := range windows {
		per = append(per, fmt.Sprintf("restart %d %v (%s)", k+1, longestGap(acks, w[0], w[1]).Round(time.Microsecond), kinds[k]))
	}
	t.Logf("rolling restart: longest ack gap %v; per restart: %s", overall.Round(time.Microsecond), strings.Join(per, ", "))
	t.Logf("%d appends acknowledged; the longest ack gap before the first SIGTERM was %v",
		len(acks), longestGap(acks, time.Time{}, rollStart).Round(time.Microsecond))

	// Check: every acknowledged append reads back in order, the pauses
	// stayed short.
	checkRunning(t, c)
	end := journal.Seq(load.acks.last.Load()) + 1
	got := readBack(t, ctx, c, c.procs[first.i], id, end)
	if journal.Seq(len(got)) < end-1 {
		t.Fatalf("%d records read back, want %d", len(got), end-1)
	}
	for k, b := range got[:end-1] {
		if seq := journal.FirstSeq + journal.Seq(k); !bytes.Equal(b, load.acks.get(seq)) {
			t.Fatalf("position %d reads back %q, want the acknowledged %q", seq, b, load.acks.get(seq))
		}
	}
	if overall > rollingAckGapMax {
		t.Errorf("the writes paused %v during the rolling restart, want at most %v", overall, rollingAckGapMax)
	}
}

// wantSuccessor says which ballot a successor of a leader at before, owned
// by node self or inherited, must lead at.
func wantSuccessor(before *pb.Ballot, self uint64, inherited bool) string {
	if inherited {
		return fmt.Sprintf("the stopped machine's re-election ballot %d.%016x (an inherited leadership re-elects itself, then hands on)",
			before.GetRound()+1, self)
	}
	return fmt.Sprintf("the handed-on %s (an elected leader hands on its own ballot)", ballotString(before))
}

// answer is one machine's Admin.Inspect reply: its index in c.procs.
type answer struct {
	i     int
	reply *pb.InspectReply
}

// leader waits until a machine other than skip (-1: none skipped) says it
// leads journal id, and returns its answer.
func (c *cell) leader(ctx context.Context, id journal.ID, skip int) answer {
	c.t.Helper()
	a, ok := c.leaderWithin(ctx, id, skip, rollingCatchUpWait)
	if !ok {
		c.t.Fatalf("no machine leads %s for %v", id, rollingCatchUpWait)
	}
	return a
}

// leaderWithin is leader bounded by wait; it reports whether one led.
func (c *cell) leaderWithin(ctx context.Context, id journal.ID, skip int, wait time.Duration) (answer, bool) {
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		for i, p := range c.procs {
			if i == skip {
				continue
			}
			if st, err := c.inspectOnce(ctx, p, id); err == nil && st.GetRole() == "leader" {
				return answer{i: i, reply: st}, true
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return answer{}, false
}

// campaigner is the one machine allowed to campaign in a step: its node id
// and the round its re-election runs at.
type campaigner struct {
	node  uint64
	round uint64
}

// checkPromises fails the test (without stopping it) unless every machine
// promised b for journal id, or (when by is not nil) a ballot of by's node
// above b and at most by's round: any other promise is a campaign by a
// machine that was not being stopped, an election timeout.
func (c *cell) checkPromises(ctx context.Context, id journal.ID, b *pb.Ballot, by *campaigner, when string) {
	c.t.Helper()
	var seen []string
	bad := false
	for i, p := range c.procs {
		st, err := c.inspectOnce(ctx, p, id)
		if err != nil {
			c.t.Fatalf("inspect machine %d %s: %v", i+1, when, err)
		}
		pr := st.GetPromised()
		seen = append(seen, fmt.Sprintf("machine %d %s %s", i+1, st.GetRole(), ballotString(pr)))
		ok := sameBallot(pr, b) ||
			by != nil && pr.GetNode() == by.node && pr.GetRound() > b.GetRound() && pr.GetRound() <= by.round
		bad = bad || !ok
	}
	if bad {
		want := ballotString(b)
		if by != nil {
			want += fmt.Sprintf(", or the stopped machine's re-election %d.%016x", by.round, by.node)
		}
		c.t.Errorf("an election timeout ran %s: the promised ballots are %s, want each %s", when, strings.Join(seen, ", "), want)
	}
}

func sameBallot(a, b *pb.Ballot) bool {
	return a.GetRound() == b.GetRound() && a.GetNode() == b.GetNode()
}

func ballotString(b *pb.Ballot) string {
	return fmt.Sprintf("%d.%016x", b.GetRound(), b.GetNode())
}

func nodeList(nodes []uint64) string {
	var s []string
	for i, n := range nodes {
		s = append(s, fmt.Sprintf("machine %d %016x", i+1, n))
	}
	return strings.Join(s, ", ")
}

// shutdownLine is serve's "shutting down" log line in stderr (it names
// handed_off), or "" when there is none.
func shutdownLine(stderr string) string {
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, "shutting down") {
			if _, rest, ok := strings.Cut(line, "msg="); ok {
				return rest
			}
			return line
		}
	}
	return ""
}

// shutdownTrace polls every machine's role and promise for one journal, over
// connections of its own kept for the trace, from before a leader's SIGTERM
// until stop, and keeps each change with its time: the story of a handoff.
type shutdownTrace struct {
	cancel context.CancelFunc
	done   chan struct{}
	start  time.Time
	mu     sync.Mutex
	lines  []string
}

// traceShutdown starts a trace of journal id over c's machines (nodes are
// their node ids, to name ballot owners).
func (c *cell) traceShutdown(ctx context.Context, id journal.ID, nodes []uint64) *shutdownTrace {
	c.t.Helper()
	cfg, err := security.ClientConfigFile(c.caFile)
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+c.token))
	tr := &shutdownTrace{cancel: cancel, done: make(chan struct{})}
	var conns []*grpc.ClientConn
	for _, p := range c.procs {
		cc, err := grpc.NewClient(p.public(), grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
		if err != nil {
			c.t.Fatal(err)
		}
		conns = append(conns, cc)
		// Connect now: the first poll after the SIGTERM must not wait for
		// a handshake.
		_, _ = pb.NewAdminClient(cc).Inspect(ctx, &pb.InspectRequest{Journal: wire.JournalIDToPB(id)})
	}
	owner := func(n uint64) string {
		if k := slices.Index(nodes, n); k >= 0 {
			return fmt.Sprintf("m%d", k+1)
		}
		return fmt.Sprintf("%016x", n)
	}
	tr.start = time.Now()
	var wg sync.WaitGroup
	for i, cc := range conns {
		wg.Go(func() {
			defer cc.Close()
			last := ""
			for ctx.Err() == nil {
				ictx, icancel := context.WithTimeout(ctx, 200*time.Millisecond)
				st, err := pb.NewAdminClient(cc).Inspect(ictx, &pb.InspectRequest{Journal: wire.JournalIDToPB(id)})
				icancel()
				if ctx.Err() != nil {
					return // stopped: the failed poll is the trace's end, not the machine's
				}
				now := ""
				if err != nil {
					now = "unreachable"
				} else {
					now = fmt.Sprintf("%s promised %d.%s chosen %d", st.GetRole(), st.GetPromised().GetRound(), owner(st.GetPromised().GetNode()), st.GetChosenIndex())
				}
				key := strings.Split(now, " chosen")[0]
				if key != strings.Split(last, " chosen")[0] {
					tr.mu.Lock()
					tr.lines = append(tr.lines, fmt.Sprintf("  %+8.1fms m%d %s", float64(time.Since(tr.start).Microseconds())/1000, i+1, now))
					tr.mu.Unlock()
					last = now
				}
				time.Sleep(rollingTraceEvery)
			}
		})
	}
	go func() { wg.Wait(); close(tr.done) }()
	return tr
}

// stop ends the trace and waits for its pollers.
func (tr *shutdownTrace) stop() {
	tr.cancel()
	<-tr.done
}

// String is the trace, one change a line, times from just before the
// SIGTERM.
func (tr *shutdownTrace) String() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return "trace (role and promise changes, from the SIGTERM):\n" + strings.Join(tr.lines, "\n")
}

// handedOffRE finds the count of journals a shutdown line says were handed
// off.
var handedOffRE = regexp.MustCompile(`handed_off=(\d+)`)

// handedOff is the handed_off count of a shutdown line (0 when absent).
func handedOff(line string) int {
	m := handedOffRE.FindStringSubmatch(line)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
