package server

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/runtime"
)

// inflight counts each principal's calls in flight and refuses one past
// the bound.
type inflight struct {
	max int
	mu  sync.Mutex
	// Invariant: 0 < calls[k] <= max for every key present; a principal
	// with no call in flight has no entry, so the map holds at most one
	// entry per call in flight.
	calls map[string]int
}

func newInflight(max int) *inflight {
	if max <= 0 {
		max = PrincipalCallsMaxDefault
	}
	return &inflight{max: max, calls: make(map[string]int)}
}

// acquire counts one call of p in, or refuses it with ResourceExhausted;
// the caller must call release exactly once when the call ends.
func (f *inflight) acquire(p principal) (release func(), err error) {
	key := p.key()
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.calls[key]
	if n >= f.max {
		return nil, status.Errorf(codes.ResourceExhausted, "paros/server: %s has %d calls in flight, at most %d", p, n, f.max)
	}
	f.calls[key] = n + 1
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		switch n := f.calls[key]; {
		case n <= 0 || n > f.max:
			panic(fmt.Sprintf("paros/server: %d calls in flight for %s at release (at most %d)", n, key, f.max))
		case n == 1:
			delete(f.calls, key)
		default:
			f.calls[key] = n - 1
		}
	}, nil
}

// Per-principal bounds of the Journal service's writes: each is a limit a
// hostile principal would otherwise choose for us.
// Each is counted over every connection of the principal (a token's
// subject, a peer's node id, the remote host under --insecure), on this
// machine.
const (
	// WriteStreamsPerPrincipalMax bounds the WriteStreams one principal
	// has open; past it a stream is refused ResourceExhausted when it
	// opens. The client library opens one per Client and server, shared
	// by every Writer of the Client (whatever the number of journals), so
	// 64 lets one credential run 64 Clients against one machine. Each
	// open stream holds three goroutines, its
	// flow-control window (streamWindowBytes, security.go) and at most one
	// request message beyond the principal's write budget, so this bound,
	// not the 1,024 calls in flight, is what keeps one credential's
	// streams' memory at 64 × (320 KiB of windows + one message).
	WriteStreamsPerPrincipalMax = 64
	// PrincipalWritesMax bounds the writes one principal has in flight,
	// over all its WriteStreams and unary Writes: read and not yet
	// answered (a stream's answer counts until it was sent, so a client
	// that never reads its replies holds its budget). Past it the
	// principal's streams stop reading (gRPC flow control holds the
	// client) and its unary Writes wait: back-pressure, never a refusal.
	// 1,024 is four client Writers at their most writes in flight
	// (sansio.WritesInFlightMax, 256), or 256 Writers at their default
	// (4). Fewer of them are in consensus at once: the runtime's fair
	// queue lets a principal have 64 slot-taking calls in the host (its
	// share of the consensus cores, runtime/fairq.go), and the rest wait
	// there, read and decoded, for the next round.
	PrincipalWritesMax = 1024
	// PrincipalWriteBytesMax bounds the record bytes of those writes:
	// 32 writes of the largest (journal.WriteBytesMax, 1 MiB), above what
	// one journal can take in per round trip, and the bound on what one
	// principal's admitted writes pin in memory. A larger write counts as
	// this much.
	PrincipalWriteBytesMax = 32 << 20
)

// fairness bounds each principal's WriteStreams and writes in flight
// (the constants above; tests shrink them).
type fairness struct {
	streamsMax, writesMax, bytesMax int
	mu                              sync.Mutex
	// Invariant: a principal has an entry exactly while it has a stream
	// open, a write admitted or a write waiting; so the map holds at most
	// one entry per call in flight.
	by map[string]*principalLoad
}

// principalLoad is one principal's share of the bounds.
type principalLoad struct {
	streams       int
	writes, bytes int // admitted and not released
	// waiting are the writes waiting for room, first come first admitted
	// (a large write is not overtaken forever by small ones).
	waiting []*budgetWait
}

type budgetWait struct {
	bytes   int
	granted bool          // set, under the mutex, when admitted
	ready   chan struct{} // closed when admitted
}

func newFairness() *fairness {
	return &fairness{streamsMax: WriteStreamsPerPrincipalMax, writesMax: PrincipalWritesMax,
		bytesMax: PrincipalWriteBytesMax, by: map[string]*principalLoad{}}
}

// loadLocked returns key's entry, making it.
func (f *fairness) loadLocked(key string) *principalLoad {
	l := f.by[key]
	if l == nil {
		l = &principalLoad{}
		f.by[key] = l
	}
	return l
}

// tidyLocked forgets key when it holds nothing.
func (f *fairness) tidyLocked(key string, l *principalLoad) {
	if l.streams == 0 && l.writes == 0 && len(l.waiting) == 0 {
		delete(f.by, key)
	}
}

// openStream counts one WriteStream of p in, or refuses it with
// ResourceExhausted; the caller calls closeStream exactly once when the
// stream ends.
func (f *fairness) openStream(p principal) error {
	key := p.key()
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.loadLocked(key)
	if l.streams >= f.streamsMax {
		f.tidyLocked(key, l)
		return status.Errorf(codes.ResourceExhausted, "paros/server: %s has %d write streams open, at most %d", p, l.streams, f.streamsMax)
	}
	l.streams++
	return nil
}

func (f *fairness) closeStream(p principal) {
	key := p.key()
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.by[key]
	if l == nil || l.streams <= 0 {
		panic(fmt.Sprintf("paros/server: a write stream of %s closed that was not open", key))
	}
	l.streams--
	f.tidyLocked(key, l)
}

// writeBudget is one principal's budget of writes in flight; the zero
// value (no fairness: a server built without ServerOptions) admits
// everything.
type writeBudget struct {
	f   *fairness
	key string
}

// cost is what a write of n record bytes takes of a budget.
func (b writeBudget) cost(n int) int {
	if b.f == nil {
		return 0
	}
	return min(n, b.f.bytesMax)
}

// acquire admits one write of bytes (its cost), waiting for room behind
// the writes already waiting; it fails only when ctx ends first. The
// caller releases it exactly once.
func (b writeBudget) acquire(ctx context.Context, bytes int) error {
	f := b.f
	if f == nil {
		return nil
	}
	f.mu.Lock()
	l := f.loadLocked(b.key)
	if len(l.waiting) == 0 && f.fitsLocked(l, bytes) {
		l.writes++
		l.bytes += bytes
		f.mu.Unlock()
		return nil
	}
	w := &budgetWait{bytes: bytes, ready: make(chan struct{})}
	l.waiting = append(l.waiting, w)
	f.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l = f.by[b.key] // present: w waits or holds its admission
	if w.granted {
		l.writes--
		l.bytes -= bytes
	} else {
		l.waiting = slices.DeleteFunc(l.waiting, func(x *budgetWait) bool { return x == w })
	}
	f.admitLocked(l)
	f.tidyLocked(b.key, l)
	return ctx.Err()
}

// release gives back writes admitted writes of bytes in all.
func (b writeBudget) release(writes, bytes int) {
	f := b.f
	if f == nil || writes == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.by[b.key]
	if l == nil || l.writes < writes || l.bytes < bytes {
		panic(fmt.Sprintf("paros/server: %s released %d writes of %d bytes, holding less", b.key, writes, bytes))
	}
	l.writes -= writes
	l.bytes -= bytes
	f.admitLocked(l)
	f.tidyLocked(b.key, l)
}

func (f *fairness) fitsLocked(l *principalLoad, bytes int) bool {
	return l.writes < f.writesMax && l.bytes+bytes <= f.bytesMax
}

// admitLocked admits the waiting writes that fit, in order.
func (f *fairness) admitLocked(l *principalLoad) {
	for len(l.waiting) > 0 && f.fitsLocked(l, l.waiting[0].bytes) {
		w := l.waiting[0]
		l.waiting[0] = nil
		l.waiting = l.waiting[1:]
		l.writes++
		l.bytes += w.bytes
		w.granted = true
		close(w.ready)
	}
}

type budgetKey struct{}

// budgetFrom returns the write budget the fairness interceptor put in ctx
// (the zero budget, which admits everything, when there is none).
func budgetFrom(ctx context.Context) writeBudget {
	b, _ := ctx.Value(budgetKey{}).(writeBudget)
	return b
}

func recordBytes(req *pb.WriteRequest) int {
	n := 0
	for _, r := range req.GetRecords() {
		n += len(r)
	}
	return n
}

// unary runs after the gate: the call's submitter is its principal (the
// runtime's fair queue takes each principal's calls in turn), and a unary
// Write waits for room in its principal's write budget, which it holds
// until answered.
func (f *fairness) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	p, ok := principalFrom(ctx)
	if !ok {
		return handler(ctx, req)
	}
	ctx = runtime.WithSubmitter(ctx, p.key())
	w, ok := req.(*pb.WriteRequest)
	if !ok || info.FullMethod != pb.Journal_Write_FullMethodName {
		return handler(ctx, req)
	}
	b := writeBudget{f: f, key: p.key()}
	n := b.cost(recordBytes(w))
	if err := b.acquire(ctx, n); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	defer b.release(1, n)
	return handler(ctx, req)
}

// stream runs after the gate: a WriteStream counts against its
// principal's stream bound, and its handler finds the principal's write
// budget and submitter in its context.
func (f *fairness) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	p, ok := principalFrom(ss.Context())
	if !ok || info.FullMethod != pb.Journal_WriteStream_FullMethodName {
		return handler(srv, ss)
	}
	if err := f.openStream(p); err != nil {
		return err
	}
	defer f.closeStream(p)
	ctx := runtime.WithSubmitter(ss.Context(), p.key())
	ctx = context.WithValue(ctx, budgetKey{}, writeBudget{f: f, key: p.key()})
	return handler(srv, &fairStream{ServerStream: ss, ctx: ctx})
}

// fairStream is a stream whose context carries its principal's budget.
type fairStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *fairStream) Context() context.Context { return s.ctx }
