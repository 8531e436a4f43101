package blackbox

// This file checks the replica tier end to end, as an operator runs it: a
// secure cell of three `paros serve` nodes and two `paros serve --role
// replica` machines (each with its admin listener, --metrics), formed with
// `parosctl cell init --replicas`. A Writer of the public client (dialled with
// all five machines: it never sends a write to a replica) appends records
// one at a time under load, while one reader per replica reads, from that
// replica alone, the position of the latest acknowledged append: each read
// is issued after the append was acknowledged, so a served page must hold
// it (read-your-acknowledged-writes, the linearizability a replica's quorum
// read promises). Meanwhile the first replica is killed with SIGKILL and
// restarted from its disk while the writes go on; the test logs how long it
// took to catch up (its applied slot reaching the leader's chosen slot at
// the restart, by Admin.Inspect). Then every acknowledged record must read
// back, in order and complete, from each replica alone; each replica must
// have served reads during the load and none may have missed an
// acknowledged write; the restarted replica's /metrics must say it is a
// replica and that it learned by the leader's pushes or by catch-up. Last,
// the other replica restarted without --role replica is refused (exit 78).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/security"
	"github.com/parosdb/paros/wire"
)

// Replica test phases and bounds.
const (
	// replicaLoadBefore is how long the load runs before the kill,
	// replicaDown how long the replica stays down, replicaLoadAfter how long
	// the load goes on once it caught up.
	replicaLoadBefore = 1500 * time.Millisecond
	replicaDown       = 2 * time.Second
	replicaLoadAfter  = 1500 * time.Millisecond
	// replicaCatchUpWait bounds the wait for the restarted replica.
	replicaCatchUpWait = 15 * time.Second
	// replicaReadTimeout bounds one read of a reader (the killed replica's
	// reader meets a dead server until the restart).
	replicaReadTimeout = 2 * time.Second
	// replicaReadsMin is the least number of reads each replica must serve
	// during the load.
	replicaReadsMin = 20
)

// ackLog is the Writer's acknowledged appends, shared with the readers.
// appendLoad appends records named prefix-N through one Writer until
// stopped, logging every acknowledged one.
type appendLoad struct {
	acks   *ackLog
	ctx    context.Context // ends when the load stops
	cancel context.CancelFunc
	done   chan struct{}
	err    error // the first append that failed before the stop
}

func startAppendLoad(ctx context.Context, w *client.Writer, prefix string) *appendLoad {
	l := &appendLoad{acks: &ackLog{recs: map[journal.Seq][]byte{}}, done: make(chan struct{})}
	l.ctx, l.cancel = context.WithCancel(ctx)
	go func() {
		defer close(l.done)
		for i := 0; l.ctx.Err() == nil; i++ {
			rec := []byte(fmt.Sprintf("%s-%06d-%s", prefix, i, strings.Repeat("x", 64)))
			seq, err := w.Append(l.ctx, rec)
			if err != nil {
				if l.ctx.Err() == nil {
					l.err = fmt.Errorf("append %d: %w", i, err)
				}
				return
			}
			l.acks.add(seq, rec)
		}
	}()
	return l
}

// stop ends the load, waits for it and reports its append error.
func (l *appendLoad) stop() error {
	l.cancel()
	<-l.done
	return l.err
}

type ackLog struct {
	mu   sync.Mutex
	recs map[journal.Seq][]byte
	// order is every acknowledgement in the order it arrived, with its
	// time (for longestGap).
	order []ack
	last  atomic.Uint64 // the highest acknowledged position
}

func (a *ackLog) add(seq journal.Seq, rec []byte) {
	at := time.Now()
	a.mu.Lock()
	a.recs[seq] = rec
	a.order = append(a.order, ack{seq: seq, rec: rec, at: at})
	a.mu.Unlock()
	a.last.Store(uint64(seq))
}

// acked returns the acknowledgements so far, in the order they arrived.
func (a *ackLog) acked() []ack {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.order)
}

func (a *ackLog) get(seq journal.Seq) []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.recs[seq]
}

// readerStats is what one replica's reader saw.
type readerStats struct {
	served, unserved, failed int
	// stale are reads served without the acknowledged append they asked
	// for, or with other bytes: each a broken promise.
	stale []string
}

func TestReplicasServeAckedWritesAndARestartedOneCatchesUp(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cell of five processes")
	}
	// Arrange: three nodes and two replicas, each replica with its admin
	// listener; the cell formed with the replicas named; a claimed Writer.
	c := newCell(t)
	nodes := slices.Clone(c.procs) // the three nodes, before the replicas join c.procs
	base := filepath.Dir(c.caDir)
	var replicas []*proc
	admin := make([]string, 2)
	for i := range 2 {
		admin[i] = freeAddr(t)
		p := &proc{addr: freeAddr(t), data: filepath.Join(base, fmt.Sprintf("r%d", i+1)),
			args: []string{"--role", "replica", "--metrics", admin[i]}}
		c.issue(p, filepath.Join(base, "pki", fmt.Sprintf("r%d", i+1)))
		c.start(p)
		c.procs = append(c.procs, p) // stopped by the cell's cleanup
		replicas = append(replicas, p)
	}
	id := mustID(t, c.initWithReplicas(nodes, replicas))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	all := c.dial(ctx, c.procs)
	nodeAdmin := c.dial(ctx, nodes)
	w := all.Journal(id).NewWriter()
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatalf("claim: %v", err)
	}

	// Act: the load, and a reader per replica; after replicaLoadBefore kill
	// the first replica, restart it after replicaDown, wait until it caught
	// up, and load on for replicaLoadAfter.
	load := startAppendLoad(ctx, w, "replica")
	defer load.stop()
	acks := load.acks
	var wg sync.WaitGroup
	stats := make([]readerStats, len(replicas))
	for i, p := range replicas {
		j := c.dial(ctx, []*proc{p}).Journal(id)
		wg.Go(func() { stats[i] = readAcked(load.ctx, j, acks) })
	}
	time.Sleep(replicaLoadBefore)
	victim := replicas[0]
	_ = victim.cmd.Process.Signal(os.Kill)
	<-victim.done
	killedAt := acks.last.Load()
	t.Logf("killed replica 1 at position %d", killedAt)
	time.Sleep(replicaDown)
	target := leaderChosen(t, ctx, nodeAdmin, id)
	c.start(victim)
	restarted := time.Now()
	restartedAt := acks.last.Load()
	t.Logf("restarting replica 1 at position %d; the leader's chosen slot is %d", restartedAt, target)
	var answered time.Duration // when the restarted replica first answered
	for {
		st, err := c.inspectOnce(ctx, victim, id)
		if err == nil && answered == 0 {
			answered = time.Since(restarted)
		}
		if err == nil && st.GetApplied() >= target {
			break
		}
		if time.Since(restarted) > replicaCatchUpWait {
			t.Fatalf("the restarted replica applied slot %d (%v) %v after its restart, want %d\n%s",
				st.GetApplied(), err, replicaCatchUpWait, target, victim.stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	caughtUp := time.Since(restarted)
	time.Sleep(replicaLoadAfter)
	writeErr := load.stop()
	wg.Wait()
	if writeErr != nil {
		t.Fatal(writeErr)
	}
	end := journal.Seq(acks.last.Load()) + 1
	t.Logf("the restarted replica answered %v after its restart and reached slot %d %v after it (%d positions written while it was down); %d appends acknowledged in all",
		answered.Round(time.Millisecond), target, caughtUp.Round(time.Millisecond), restartedAt-killedAt, end-1)

	// Check: every acknowledged record reads back from each replica alone;
	// each replica served reads during the load and none missed an
	// acknowledged append; the restarted replica says what it is and how it
	// learned.
	checkRunning(t, c)
	for i, p := range replicas {
		// An append the load's end cut short may have landed past the last
		// acknowledged one: only the acknowledged prefix is checked.
		got := readBack(t, ctx, c, p, id, end)
		if journal.Seq(len(got)) < end-1 {
			t.Fatalf("replica %d reads %d records back, want %d", i+1, len(got), end-1)
		}
		for k, b := range got[:end-1] {
			if seq := journal.FirstSeq + journal.Seq(k); !bytes.Equal(b, acks.get(seq)) {
				t.Fatalf("replica %d reads %q at %d, want %q", i+1, b, seq, acks.get(seq))
			}
		}
		st := stats[i]
		t.Logf("replica %d: %d reads of the latest acknowledged append served, %d unserved, %d failed (down or no answer in %v)",
			i+1, st.served, st.unserved, st.failed, replicaReadTimeout)
		if len(st.stale) > 0 {
			t.Fatalf("replica %d served %d reads without the acknowledged append they asked for, first: %s",
				i+1, len(st.stale), st.stale[0])
		}
		if st.served < replicaReadsMin {
			t.Fatalf("replica %d served %d reads during the load, want at least %d", i+1, st.served, replicaReadsMin)
		}
	}
	m := scrape(t, admin[0])
	if m.get(`paros_role{role="replica"}`) != 1 || m.get(`paros_role{role="node"}`) != 0 {
		t.Fatalf("the restarted replica's paros_role: replica %v, node %v", m.get(`paros_role{role="replica"}`), m.get(`paros_role{role="node"}`))
	}
	pushes, catchUps := m.sum("paros_replica_pushes"), m.sum("paros_catch_ups")
	if pushes+catchUps == 0 {
		t.Fatal("the restarted replica counts no push and no catch-up")
	}
	t.Logf("the restarted replica learned from %v pushes and %v catch-ups, %v trim jumps; %v quorum reads served",
		pushes, catchUps, m.sum("paros_trim_jumps"), m.get(`paros_quorum_reads{outcome="served"}`))

	// Check: a replica restarted as a node is refused, do not restart.
	other := replicas[1]
	_ = other.cmd.Process.Signal(os.Kill)
	<-other.done
	args := other.args
	other.args = nil
	c.start(other)
	other.args = args
	select {
	case <-other.done:
	case <-time.After(20 * time.Second):
		t.Fatal("a replica restarted as a node kept running")
	}
	if code := other.cmd.ProcessState.ExitCode(); code != 78 || !strings.Contains(other.stderr.String(), "role") {
		t.Fatalf("a replica restarted as a node: exit %d, stderr %q; want 78 naming the role", code, other.stderr.String())
	}
}

// initWithReplicas forms the cell over nodes with replicas named as its
// replica machines, and returns its journal reference.
func (c *cell) initWithReplicas(nodes, replicas []*proc) string {
	c.t.Helper()
	join := func(ps []*proc) string {
		var a []string
		for _, p := range ps {
			a = append(a, p.public())
		}
		return strings.Join(a, ",")
	}
	return c.initArgs("--members", join(nodes), "--replicas", join(replicas))
}

// readAcked reads, until ctx ends, the latest acknowledged position of j
// (a Client of one replica), one record per read, each issued after that
// append was acknowledged, and tells what it saw.
func readAcked(ctx context.Context, j *client.Journal, acks *ackLog) readerStats {
	var st readerStats
	for ctx.Err() == nil {
		at := journal.Seq(acks.last.Load())
		if at == 0 {
			time.Sleep(time.Millisecond)
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, replicaReadTimeout)
		rr, err := j.Read(rctx, journal.ReadRequest{FromSeq: at, Limit: 1})
		cancel()
		switch {
		case err != nil && ctx.Err() != nil:
			return st
		case err != nil:
			st.failed++
			if !errors.Is(err, context.DeadlineExceeded) {
				time.Sleep(20 * time.Millisecond) // a dead server answers at once
			}
		case !rr.Served:
			st.unserved++
		case len(rr.Records) == 0 || !bytes.Equal(rr.Records[0], acks.get(at)):
			st.stale = append(st.stale, fmt.Sprintf("position %d: %d records, view next %d", at, len(rr.Records), rr.View.NextSeq))
		default:
			st.served++
		}
	}
	return st
}

// inspectOnce asks machine p for journal id's facts over a connection of
// its own, closed after the call: a poll that measures how soon p serves
// must not wait out a kept connection's reconnect backoff.
func (c *cell) inspectOnce(ctx context.Context, p *proc, id journal.ID) (*pb.InspectReply, error) {
	cfg, err := security.ClientConfigFile(c.caFile)
	if err != nil {
		return nil, err
	}
	cc, err := grpc.NewClient(p.public(), grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	ictx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+c.token), time.Second)
	defer cancel()
	return pb.NewAdminClient(cc).Inspect(ictx, &pb.InspectRequest{Journal: wire.JournalIDToPB(id)})
}

// leaderChosen is the chosen slot of the journal's leader, asked of the
// nodes of admin.
func leaderChosen(t *testing.T, ctx context.Context, admin *client.Client, id journal.ID) uint64 {
	t.Helper()
	i := waitRole(t, ctx, admin, id, "leader")
	st := inspect(ctx, admin, id)[i]
	if st.Err != nil {
		t.Fatalf("inspect the leader: %v", st.Err)
	}
	return st.ChosenIndex
}
