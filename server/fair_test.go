package server

// This file checks each principal's fair share (fair.go) from inside the
// package: the WriteStream bound refuses the stream past it and forgets a
// principal with nothing open; the write budget admits up to its bounds,
// holds the next writes in arrival order (a large one is not overtaken by
// small ones), drops a waiter whose context ended, and forgets a principal
// holding nothing; and, over a real gRPC server with ServerOptions, a
// principal's writes handed to the backend stop at PrincipalWritesMax over
// all its streams while it never reads a reply, go on once answers go out;
// its unary Write waits, reaching no handler, while its streams hold the
// whole budget; and its WriteStream past WriteStreamsPerPrincipalMax is
// refused ResourceExhausted.

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/wire"
)

func TestWriteStreamsPerPrincipalAreBounded(t *testing.T) {
	// Arrange.
	f := newFairness()
	f.streamsMax = 2
	a, b := principal{secured: true, node: 1}, principal{secured: true, node: 2}

	// Act.
	err1, err2, err3, errb := f.openStream(a), f.openStream(a), f.openStream(a), f.openStream(b)

	// Check.
	if err1 != nil || err2 != nil || errb != nil {
		t.Fatal(err1, err2, errb)
	}
	if status.Code(err3) != codes.ResourceExhausted {
		t.Fatalf("a third stream: %v, want ResourceExhausted", err3)
	}
	f.closeStream(a)
	if err := f.openStream(a); err != nil {
		t.Fatalf("after one closed: %v", err)
	}
	f.closeStream(a)
	f.closeStream(a)
	f.closeStream(b)
	if len(f.by) != 0 {
		t.Fatalf("principals with nothing open stayed counted: %v", f.by)
	}
}

func TestWriteBudgetAdmitsInOrderUpToItsBounds(t *testing.T) {
	// Arrange: a budget of 2 writes and 10 bytes, holding 2 writes of 4.
	f := newFairness()
	f.writesMax, f.bytesMax = 2, 10
	b := writeBudget{f: f, key: "p"}
	ctx := context.Background()
	for range 2 {
		if err := b.acquire(ctx, 4); err != nil {
			t.Fatal(err)
		}
	}
	admitted := make(chan int, 3)
	wait := func(ctx context.Context, n int) {
		if b.acquire(ctx, n) == nil {
			admitted <- n
		}
	}
	// A write of 5 waits (two in flight), then one of 1 behind it, then one
	// of 2 that gives up.
	go wait(ctx, 5)
	waitWaiting(t, f, "p", 1)
	go wait(ctx, 1)
	waitWaiting(t, f, "p", 2)
	gone, cancel := context.WithCancel(ctx)
	go wait(gone, 2)
	waitWaiting(t, f, "p", 3)
	cancel()
	waitWaiting(t, f, "p", 2)

	// Act and check: one release admits the 5 (4+5 <= 10) and not the 1
	// (two writes in flight again); the next admits the 1.
	b.release(1, 4)
	if n := <-admitted; n != 5 {
		t.Fatalf("admitted a write of %d first, want the 5 that waited first", n)
	}
	select {
	case n := <-admitted:
		t.Fatalf("a write of %d admitted past the bound of 2 writes", n)
	case <-time.After(20 * time.Millisecond):
	}
	b.release(1, 4)
	if n := <-admitted; n != 1 {
		t.Fatalf("admitted %d, want the write of 1", n)
	}
	b.release(1, 5)
	b.release(1, 1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.by) != 0 {
		t.Fatalf("a principal holding nothing stayed counted: %+v", f.by["p"])
	}
}

// waitWaiting waits until key has n writes waiting.
func waitWaiting(t *testing.T, f *fairness, key string, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		f.mu.Lock()
		got := 0
		if l := f.by[key]; l != nil {
			got = len(l.waiting)
		}
		f.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d writes waiting, want %d", got, n)
		}
	}
}

// holdingBackend keeps every submitted write unanswered until answer.
type holdingBackend struct {
	mu      sync.Mutex
	replies []func(host.Response)
	taken   int
}

func (b *holdingBackend) Call(context.Context, host.Call) (host.Response, error) {
	return host.Response{}, nil
}

func (b *holdingBackend) Submit(_ context.Context, calls []host.Call, reply func(int, host.Response)) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range calls {
		b.replies = append(b.replies, func(r host.Response) { reply(i, r) })
	}
	b.taken += len(calls)
	return nil
}

func (b *holdingBackend) Deliver(uint64, []host.Envelope) {}

// answer answers every write held.
func (b *holdingBackend) answer() {
	b.mu.Lock()
	rs := b.replies
	b.replies = nil
	b.mu.Unlock()
	for _, r := range rs {
		r(host.Response{Kind: host.CallWrite, Reply: journal.Reply{NoVerdict: journal.Busy}})
	}
}

func (b *holdingBackend) takenCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.taken
}

// settled waits until the backend's count of writes taken stops moving
// for a while and returns it.
func (b *holdingBackend) settled() int {
	last, since := -1, time.Now()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		n := b.takenCount()
		if n != last {
			last, since = n, time.Now()
		} else if time.Since(since) > 200*time.Millisecond {
			break
		}
	}
	return last
}

// serveFair serves Journal over b with ServerOptions (--insecure: the
// principal is the remote host) on loopback and returns a client of it.
func serveFair(t *testing.T, b Backend) pb.JournalClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(ServerOptions(Security{})...)
	pb.RegisterJournalServer(gs, &Journal{B: b})
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return pb.NewJournalClient(cc)
}

// streamMessage is a WriteStream message of n writes.
func streamMessage(n int) *pb.WriteStreamRequest {
	jid := wire.JournalIDToPB(journal.ID{Tenant: 1, Journal: 2})
	m := &pb.WriteStreamRequest{}
	for i := range n {
		m.Writes = append(m.Writes, &pb.StreamWrite{Id: uint64(i + 1), Write: &pb.WriteRequest{Journal: jid, Seq: 1, Records: [][]byte{[]byte("r")}}})
	}
	return m
}

func TestAPrincipalsWritesInFlightAreBoundedOverItsStreams(t *testing.T) {
	// Arrange: a backend that answers nothing until told.
	b := &holdingBackend{}
	c := serveFair(t, b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Act: three streams send 1,000 writes each and never read a reply;
	// then the backend answers what it holds.
	for range 3 {
		st, err := c.WriteStream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Send(streamMessage(1000)); err != nil {
			t.Fatal(err)
		}
	}
	held := b.settled()
	b.answer()
	after := b.settled()

	// Check: the backend was handed the budget's worth, and more once
	// the answers went out.
	if held != PrincipalWritesMax {
		t.Fatalf("the backend was handed %d writes of one principal with none answered, want %d", held, PrincipalWritesMax)
	}
	if after <= held {
		t.Fatalf("after the answers went out the backend was handed %d writes in all, want more than %d", after, held)
	}
}

// answeringBackend answers every write at once.
type answeringBackend struct{ holdingBackend }

func (b *answeringBackend) Submit(_ context.Context, calls []host.Call, reply func(int, host.Response)) error {
	for i := range calls {
		reply(i, host.Response{Kind: host.CallWrite, Reply: journal.Reply{NoVerdict: journal.Busy}})
	}
	return nil
}

func TestWriteStreamPastThePrincipalsBoundIsRefused(t *testing.T) {
	// Arrange: WriteStreamsPerPrincipalMax streams open, each with a
	// write answered (so its handler runs).
	c := serveFair(t, &answeringBackend{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range WriteStreamsPerPrincipalMax {
		st, err := c.WriteStream(ctx)
		if err == nil {
			err = st.Send(streamMessage(1))
		}
		if err == nil {
			_, err = st.Recv()
		}
		if err != nil {
			t.Fatalf("stream %d: %v", i+1, err)
		}
	}

	// Act.
	st, err := c.WriteStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = st.Send(streamMessage(1))
	_, err = st.Recv()

	// Check.
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("WriteStream %d of one principal: %v, want ResourceExhausted", WriteStreamsPerPrincipalMax+1, err)
	}
}

// blockingCallBackend holds every unary call until release closes, and
// every submitted write unanswered.
type blockingCallBackend struct {
	holdingBackend
	calls   atomic.Int64
	release chan struct{}
}

func (b *blockingCallBackend) Call(ctx context.Context, c host.Call) (host.Response, error) {
	b.calls.Add(1)
	select {
	case <-b.release:
	case <-ctx.Done():
	}
	return host.Response{Kind: c.Kind, Reply: journal.Reply{NoVerdict: journal.Busy}}, nil
}

func TestAUnaryWriteWaitsForItsPrincipalsBudget(t *testing.T) {
	// Arrange: one principal's stream holds its whole budget in the
	// backend.
	b := &blockingCallBackend{release: make(chan struct{})}
	c := serveFair(t, b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := c.WriteStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(streamMessage(PrincipalWritesMax + 1)); err != nil {
		t.Fatal(err)
	}
	if held := b.settled(); held != PrincipalWritesMax {
		t.Fatalf("the backend holds %d writes, want %d", held, PrincipalWritesMax)
	}

	// Act: a unary Write of the same principal.
	done := make(chan error, 1)
	go func() {
		_, err := c.Write(ctx, streamMessage(1).GetWrites()[0].GetWrite())
		done <- err
	}()

	// Check: it waits, reaching no handler, until the stream's writes are
	// answered; then it goes.
	select {
	case err := <-done:
		t.Fatalf("the unary Write returned (%v) with its principal's budget spent", err)
	case <-time.After(100 * time.Millisecond):
	}
	if n := b.calls.Load(); n != 0 {
		t.Fatalf("%d unary calls reached the backend with the budget spent, want 0", n)
	}
	b.answer()
	close(b.release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the unary Write still waits after the stream's writes were answered")
	}
}
