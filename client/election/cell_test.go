// This file runs elections over a real journal: a one-machine cell started
// in this process (runtime.Start over an in-memory Pebble store, the
// Journal and Admin services on a gRPC server on 127.0.0.1), serving a
// multi-writer election journal and a single-writer journal to govern,
// reached through client.Dial. (internal/testcell cannot make a
// multi-writer journal: its plan journals are single-writer.) It checks:
// two candidates campaign and one wins term 1 while the other follows it;
// the winner governs the single-writer journal under its uuid; it resigns
// naming the other, which wins term 2 and takes the governed journal over,
// after which the first leader's Writer is refused (ErrSuperseded): the
// fence, not the lease, keeps them apart; the leader compacts the election
// journal (an unfenced Truncate on a multi-writer journal) and a watcher
// that starts below the floor follows the same leader; when that leader
// closes, the watcher wins term 3.
package election_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"google.golang.org/grpc"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/election"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/runtime"
	"github.com/parosdb/paros/server"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/pebblestore"
)

var (
	electionJournal = journal.ID{Tenant: 0xe1, Journal: 1}
	governedJournal = journal.ID{Tenant: 0xe1, Journal: 2}
)

// startCell starts a one-machine cell serving the election journal
// (multi-writer) and the governed journal (single-writer) and returns a
// Client of it.
func startCell(t *testing.T) *client.Client {
	t.Helper()
	db, err := pebblestore.Open("cell", &pebblestore.Options{FS: vfs.NewMem(), Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	tun := host.Production()
	tun.TickMs, tun.ElectionTicks = 20, 10
	spec := func(id journal.ID, mode journal.WriterMode) host.JournalSpec {
		return host.JournalSpec{ID: id, Members: []paxos.NodeID{1}, Quorum: quorum.Spec{Kind: quorum.KindMajority},
			Mode: mode, Claim: storage.ClaimFirstBoot}
	}
	rt, err := runtime.Start(runtime.Config{NodeID: 1, Peers: map[paxos.NodeID]string{}, DB: db, Tunables: tun,
		Logger:   slog.New(slog.DiscardHandler),
		Journals: []host.JournalSpec{spec(electionJournal, journal.ModeMulti), spec(governedJournal, journal.ModeSingle)}})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	gs := grpc.NewServer()
	b := server.RuntimeBackend{R: rt}
	pb.RegisterJournalServer(gs, &server.Journal{B: b})
	pb.RegisterAdminServer(gs, &server.Admin{B: b, Info: func() server.AdminInfo {
		return server.AdminInfo{NodeID: 1, CellID: 1, Role: "node", Journals: rt.Journals(), Spec: rt.Spec,
			Machines: []server.CellMachine{{NodeID: 1, Addr: addr}}}
	}})
	go func() { _ = gs.Serve(lis) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, []string{addr}, client.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cl.Close()
		gs.Stop()
		rt.Stop()
		_ = db.Close()
	})
	return cl
}

// quietLogger drops Pebble's log lines.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

type outcome struct {
	term election.Term
	err  error
}

func campaignAsync(ctx context.Context, e *election.Election) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		t, err := e.Campaign(ctx)
		ch <- outcome{t, err}
	}()
	return ch
}

func waitFor(t *testing.T, e *election.Election, what string, ok func(election.Status) bool) election.Status {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		ch := e.Changed()
		if s := e.Status(); ok(s) {
			return s
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("waiting for %s: %+v", what, e.Status())
		}
	}
}

func won(t *testing.T, ch <-chan outcome, what string) election.Term {
	t.Helper()
	select {
	case o := <-ch:
		if o.err != nil {
			t.Fatalf("%s: %v", what, o.err)
		}
		return o.term
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: no win", what)
	}
	return 0
}

func TestAnElectionOverARealMultiWriterJournal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cell")
	}
	cl := startCell(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	opts := []election.Option{election.Lease(600 * time.Millisecond), election.RenewEvery(100 * time.Millisecond),
		election.CompactAfter(16)}
	a := election.New(cl, electionJournal, append(opts, election.Interface("a:7401"))...)
	b := election.New(cl, electionJournal, append(opts, election.Interface("b:7401"))...)
	defer a.Close()
	defer b.Close()

	// Two candidates: one wins term 1, the other follows it.
	ra, rb := campaignAsync(ctx, a), campaignAsync(ctx, b)
	var leader, other *election.Election
	var otherWin <-chan outcome
	select {
	case o := <-ra:
		leader, other, otherWin = a, b, rb
		if o.err != nil || o.term != 1 {
			t.Fatalf("a: %d, %v", o.term, o.err)
		}
	case o := <-rb:
		leader, other, otherWin = b, a, ra
		if o.err != nil || o.term != 1 {
			t.Fatalf("b: %d, %v", o.term, o.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no one won term 1")
	}
	s := waitFor(t, other, "the loser to follow", func(s election.Status) bool { return s.Leader == leader.UUID() })
	if s.Term != 1 || s.Mine || s.Interface != leader.Status().Interface {
		t.Fatalf("the loser's status %+v, the leader's %+v", s, leader.Status())
	}

	// The leader governs the single-writer journal under its uuid.
	w1, err := leader.Govern(ctx, cl.Journal(governedJournal))
	if err != nil {
		t.Fatal(err)
	}
	defer w1.Close()
	if w1.Fence() != leader.UUID() {
		t.Fatalf("fence %s, want the election's uuid %s", w1.Fence(), leader.UUID())
	}
	if _, err := w1.Append(ctx, []byte("term 1")); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Govern(ctx, cl.Journal(governedJournal)); !errors.Is(err, election.ErrNotLeading) {
		t.Fatalf("Govern by the follower: %v", err)
	}
	if _, err := leader.Govern(ctx, cl.Journal(governedJournal)); !errors.Is(err, election.ErrGoverned) {
		t.Fatalf("a second Govern: %v", err)
	}

	// The leader compacts the election journal: a watcher that starts
	// below the floor follows the same leader.
	ej := cl.Journal(electionJournal)
	for deadline := time.Now().Add(20 * time.Second); ; {
		rep, err := ej.Read(ctx, journal.ReadRequest{FromSeq: journal.FirstSeq, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if rep.BelowFloor && rep.View.FirstSeq > 16 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the election journal was not truncated: %+v", rep.View)
		}
		time.Sleep(100 * time.Millisecond)
	}
	c := election.New(cl, electionJournal, append(opts, election.Interface("c:7401"))...)
	defer c.Close()
	rc := campaignAsync(ctx, c)
	if s := waitFor(t, c, "the late watcher to follow", func(s election.Status) bool { return s.Leader.IsSet() }); s.Leader != leader.UUID() || s.Term != 1 {
		t.Fatalf("the late watcher's status %+v", s)
	}

	// The leader resigns naming the other, which wins term 2 and takes
	// the governed journal over: the first leader's Writer is refused.
	if err := leader.Resign(ctx, other.UUID()); err != nil {
		t.Fatal(err)
	}
	if term := won(t, otherWin, "the successor"); term != 2 {
		t.Fatalf("the successor won term %d", term)
	}
	w2, err := other.Govern(ctx, cl.Journal(governedJournal))
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if _, err := w2.Append(ctx, []byte("term 2")); err != nil {
		t.Fatal(err)
	}
	if _, err := w1.Append(ctx, []byte("stale")); !errors.Is(err, client.ErrSuperseded) {
		t.Fatalf("the deposed leader's write: %v, want ErrSuperseded", err)
	}
	waitFor(t, c, "the late watcher to follow term 2", func(s election.Status) bool { return s.Term == 2 && s.Leader == other.UUID() })

	// The new leader stops: the late watcher wins term 3.
	other.Close()
	if term := won(t, rc, "the late watcher"); term != 3 {
		t.Fatalf("the late watcher won term %d", term)
	}
	if !c.Leading() || leader.Leading() || other.Leading() {
		t.Fatalf("statuses: %+v, %+v, %+v", c.Status(), leader.Status(), other.Status())
	}
}
