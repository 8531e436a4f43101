package client

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/parosdb/paros/client/sansio"
	"github.com/parosdb/paros/core/journal"
)

// Writer is the owner of one single-writer journal: it claims the journal
// (SetLeader with a fresh uuid), then fences every append with that uuid
// at the next positions. Appends are queued, coalesced into writes and
// pipelined over one WriteStream to the leader, which keeps their order,
// so many appends in flight share few consensus slots and one disk sync.
// That is the default and needs no option.
//
// Its decisions are the sans-IO sansio.Pipeline's (the simulator drives
// the same type): an ambiguous write is resent identically at the same
// position (the log answers Duplicate if it had landed), a write that
// overtook an earlier one is resent after it, and a verdict naming another
// leader stops the Writer with ErrSuperseded. The goroutines here only
// move requests, replies and timers.
//
// Ambiguous outcomes a caller can see, each wrapping ErrAmbiguous:
//   - Wait (or Append) returns before the verdict because its context
//     ended: the append stays in flight and is still resent; Wait again or
//     Flush to learn its fate.
//   - A write that got no verdict in sansio.WriteAttemptsMax attempts: the
//     Writer stops. Claim again, then Journal.Resolve the write.
//   - A write abandoned by Claim or by Close after it was sent, or still
//     ahead of the tail when the Writer stopped: Journal.Resolve tells.
//
// ErrBelowFloor is ambiguous too, and final: the position is below the
// floor, so the log can no longer say.
//
// A Writer is safe for concurrent use. Close it when done: it owns
// goroutines.
type Writer struct {
	j *Journal
	// ctx lives as long as the Writer; Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// wake tells the sender there may be work (capacity 1).
	wake chan struct{}

	mu sync.Mutex
	p  *sansio.Pipeline
	// ops finds the AppendOp of each append outstanding.
	ops map[sansio.AppendID]*AppendOp
	// changed is closed and replaced whenever appends complete.
	changed chan struct{}
	// stream carries the writes (writerstream.go).
	stream streamTransport
	// won: a Claim of this Writer won once. Until then the first append
	// claims (holdFence); after it, never again by itself.
	won bool
	// claiming is closed when the Claim in progress ends (nil: none).
	claiming chan struct{}
}

// WriterStats counts what a Writer did (sansio.PipelineStats).
type WriterStats = sansio.PipelineStats

// AppendOp is one append in flight: records at a position, sent within
// some write.
type AppendOp struct {
	w    *Writer
	seq  journal.Seq
	done chan struct{}
	err  error // guarded by w.mu; set before done closes
}

// NewWriter returns the Writer of this single-writer journal. It holds
// nothing yet: its first Append (or AppendAsync, or Truncate) claims the
// journal with a fresh fence, or an explicit Claim does it first.
func (j *Journal) NewWriter(opts ...WriterOption) *Writer {
	o := writerOptions{uuids: RandomUUIDs}
	for _, opt := range opts {
		opt(&o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Writer{j: j, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1),
		p:   sansio.NewPipeline(sansio.NewWriter(j.id, o.uuids), o.pipe),
		ops: map[sansio.AppendID]*AppendOp{}, changed: make(chan struct{})}
	w.stream.w = w
	w.wg.Add(1)
	go w.sender()
	return w
}

// Fence is the uuid the Writer holds, or the unset uuid.
func (w *Writer) Fence() journal.LeaderUUID {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.p.Fence()
}

// NextSeq is the position the next Append takes.
func (w *Writer) NextSeq() journal.Seq {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.p.NextSeq()
}

// Stopped is nil while the Writer may write, else why it stopped
// (ErrSuperseded, ErrWrongMode, ErrTooLarge, ErrAmbiguous, ErrClosed).
func (w *Writer) Stopped() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.p.Stopped()
}

// Stats returns the Writer's counters.
func (w *Writer) Stats() WriterStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.p.Stats()
}

// claimRefusalsMax bounds how often one Claim takes over from another
// writer before it gives up (ErrRefused).
const claimRefusalsMax = 8

// Claim takes the journal: SetLeader(fresh uuid, the leader believed in
// force), and on a refusal once more naming the leader the refusal named
// (a takeover), up to claimRefusalsMax times. It abandons every append
// outstanding: one in a write that was sent completes with an error
// wrapping ErrAmbiguous (Journal.Resolve tells whether it landed), one not
// yet sent with an error wrapping ErrNotHolding (not written). A Claim also
// resumes a stopped Writer.
//
// Errors: nil when the Writer holds the fence. ErrAmbiguous (wrapping the
// context's error) when the context ended after a SetLeader may have been
// received: the claim may have won, and the next Claim resends the
// identical request first. ErrRefused when other claimers kept winning.
// ErrWrongMode on a multi-writer journal. The context's error, or
// ErrNoServer, when nothing was received. ErrDenied when a server refused
// the credentials.
func (w *Writer) Claim(ctx context.Context) error {
	w.mu.Lock()
	return w.claimLocked(ctx)
}

// claimLocked runs a Claim; the caller holds mu, which it releases. The
// claim in progress is w.claiming until it ends.
func (w *Writer) claimLocked(ctx context.Context) error {
	if errors.Is(w.p.Stopped(), ErrClosed) {
		w.mu.Unlock()
		return ErrClosed
	}
	done := make(chan struct{})
	w.claiming = done
	defer func() {
		w.mu.Lock()
		if w.claiming == done {
			w.claiming = nil
		}
		w.mu.Unlock()
		close(done)
	}()
	req := w.p.BeginClaim()
	w.drainLocked()
	w.mu.Unlock()

	refusals := 0
	return resend(ctx, "the claim", func(a *attempt) (bool, error) {
		reply, err := w.j.SetLeader(ctx, req)
		if err != nil {
			return a.failed(err)
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		res := w.p.AbsorbClaim(req, reply)
		switch res.Kind {
		case sansio.ResultWon:
			w.won = true
			return true, nil
		case sansio.ResultRefused:
			refusals++
			if refusals > claimRefusalsMax {
				return true, res.Err()
			}
			req, a.maybeSent = w.p.BeginClaim(), false
			return false, nil
		case sansio.ResultWrongMode, sansio.ResultDeleted:
			return true, res.Err()
		case sansio.ResultStale:
			return true, fmt.Errorf("%w: a concurrent Claim on the same Writer replaced this one", ErrStale)
		}
		// Retry (ambiguous), Redirect, Busy, UnknownJournal: resend the
		// identical claim.
		a.maybeSent = a.maybeSent || res.Kind == sansio.ResultRetry
		return false, nil
	})
}

// Append writes records at the next positions and waits for the verdict.
// It returns the position of the first record. Errors as for AppendAsync
// and AppendOp.Wait; an error wrapping ErrAmbiguous means the records may
// still land (see Writer).
func (w *Writer) Append(ctx context.Context, records ...[]byte) (journal.Seq, error) {
	if err := w.holdFence(ctx); err != nil {
		return 0, err
	}
	op, err := w.AppendAsync(ctx, records...)
	if err != nil {
		return 0, err
	}
	return op.Wait(ctx)
}

// AppendAsync places records at the next positions and queues them
// without waiting for the verdict; the returned op completes when a
// verdict settles the write that carries them. It waits while the window
// is full. The records are copied.
//
// The first append of a Writer whose Claim never won claims the journal
// first (holdFence): its errors are Claim's.
//
// Errors (nothing was queued): the Writer's stop error (ErrSuperseded and
// the like), ErrNotHolding when a Claim dropped it, ErrEmptyBatch,
// ErrTooLarge, or the context's error while waiting for room in the
// window.
func (w *Writer) AppendAsync(ctx context.Context, records ...[]byte) (*AppendOp, error) {
	if err := w.holdFence(ctx); err != nil {
		return nil, err
	}
	w.mu.Lock()
	for {
		id, seq, err := w.p.Append(records)
		if err == nil {
			op := &AppendOp{w: w, seq: seq, done: make(chan struct{})}
			w.ops[id] = op
			w.mu.Unlock()
			w.poke()
			return op, nil
		}
		if !errors.Is(err, sansio.ErrWindowFull) {
			w.mu.Unlock()
			return nil, err
		}
		ch := w.changed
		w.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		w.mu.Lock()
	}
}

// holdFence claims the journal unless a Claim of this Writer won once:
// the first append takes the fence, and appends that arrive while a claim
// is in progress wait for it. Once a claim won it does nothing, so a
// Writer superseded later stays stopped (ErrSuperseded) until its owner
// calls Claim: two Writers never take a journal back and forth by
// themselves. A stopped Writer is left to report its stop error.
func (w *Writer) holdFence(ctx context.Context) error {
	for {
		w.mu.Lock()
		if w.won || w.p.Stopped() != nil {
			w.mu.Unlock()
			return nil
		}
		inProgress := w.claiming
		if inProgress == nil {
			return w.claimLocked(ctx)
		}
		w.mu.Unlock()
		select {
		case <-inProgress:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Flush waits until every append outstanding completed, and returns the
// first append failure since the previous Flush (nil if none). An error
// wrapping ErrAmbiguous and the context's error means appends are still
// in flight.
func (w *Writer) Flush(ctx context.Context) error {
	w.mu.Lock()
	for w.p.Outstanding() > 0 {
		ch := w.changed
		w.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%w: appends are still in flight: %w", ErrAmbiguous, ctx.Err())
		}
		w.mu.Lock()
	}
	defer w.mu.Unlock()
	return w.p.TakeFailed()
}

// Close stops the Writer: an append in a write that was sent completes
// with ErrClosed and ErrAmbiguous (it may land), one not yet sent with
// ErrClosed (not written). It waits for the Writer's goroutines.
func (w *Writer) Close() error {
	w.mu.Lock()
	w.p.Close()
	w.drainLocked()
	w.mu.Unlock()
	w.cancel()
	w.wg.Wait()
	return nil
}

// Truncate drops every position below upTo (clamped by the journal to its
// next position), fenced by the Writer's uuid, and returns the journal's
// view after it: View.FirstSeq is the floor. The checkpoint pattern calls
// it with the position of a run whose End is written. An ambiguous
// truncation is resent until it gets a verdict, which is always safe: a
// truncation only ever raises the floor.
//
// Errors: the Writer's stop error, ErrNotHolding, ErrSuperseded (a verdict
// named another leader: the Writer stops), ErrWrongMode, ErrStale when a
// Claim replaced the fence meanwhile; an error wrapping ErrAmbiguous and
// the context's error when the context ended after a truncation may have
// been received (it may still take effect); the context's error or
// ErrNoServer when nothing was received; ErrDenied when a server refused
// the credentials.
func (w *Writer) Truncate(ctx context.Context, upTo journal.Seq) (journal.View, error) {
	if err := w.holdFence(ctx); err != nil {
		return journal.View{}, err
	}
	w.mu.Lock()
	req, err := w.p.Truncate(upTo)
	w.mu.Unlock()
	if err != nil {
		return journal.View{}, err
	}
	var view journal.View
	err = resend(ctx, fmt.Sprintf("the truncation to %d", upTo), func(a *attempt) (bool, error) {
		reply, err := w.j.Truncate(ctx, req)
		if err != nil {
			return a.failed(err)
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		res := w.p.AbsorbTruncate(req, reply)
		w.drainLocked()
		switch res.Kind {
		case sansio.ResultTrimmed, sansio.ResultSuperseded, sansio.ResultWrongMode:
			view = res.View
			return true, res.Err()
		case sansio.ResultStale:
			return true, res.Err()
		}
		a.maybeSent = a.maybeSent || res.Kind == sansio.ResultRetry
		return false, nil
	})
	return view, err
}

// Seq is the position of the append's first record: where it lands if it
// is written.
func (o *AppendOp) Seq() journal.Seq { return o.seq }

// Done is closed when the append completed.
func (o *AppendOp) Done() <-chan struct{} { return o.done }

// Wait waits for the append's verdict and returns its position. Errors:
// the verdict's (ErrSuperseded, ErrBelowFloor, ErrWrongMode, ErrTooLarge),
// an error wrapping ErrAmbiguous when its write was abandoned or got no
// verdict in sansio.WriteAttemptsMax attempts, an error wrapping
// ErrNotHolding or ErrClosed alone when it was dropped before it was sent
// (not written), or — when ctx ends first — an error wrapping ErrAmbiguous
// and the context's error: the append is still in flight and may land.
func (o *AppendOp) Wait(ctx context.Context) (journal.Seq, error) {
	select {
	case <-o.done:
	case <-ctx.Done():
		return 0, fmt.Errorf("%w: the append at position %d is still in flight: %w", ErrAmbiguous, o.seq, ctx.Err())
	}
	o.w.mu.Lock()
	defer o.w.mu.Unlock()
	if o.err != nil {
		return 0, o.err
	}
	return o.seq, nil
}

// poke wakes the sender.
func (w *Writer) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// sender hands each attempt the pipeline releases to the stream, one at a
// time: the next one goes once the previous request left.
func (w *Writer) sender() {
	defer w.wg.Done()
	for {
		w.mu.Lock()
		s, ok := w.p.Next()
		w.mu.Unlock()
		if !ok {
			select {
			case <-w.wake:
				continue
			case <-w.ctx.Done():
				return
			}
		}
		left := make(chan struct{})
		var once sync.Once
		leave := func() {
			once.Do(func() {
				w.mu.Lock()
				w.p.Left(s.ID)
				w.mu.Unlock()
				close(left)
			})
		}
		w.wg.Add(1)
		go w.attempt(s, leave)
		select {
		case <-left:
		case <-w.ctx.Done():
			return
		}
	}
}

// attempt sends one attempt over the stream and feeds the answer back.
func (w *Writer) attempt(s sansio.Send, leave func()) {
	defer w.wg.Done()
	reply, err := w.stream.write(s.Req, leave)
	leave()
	w.mu.Lock()
	w.p.Absorb(s.ID, reply, err == nil)
	w.drainLocked()
	w.mu.Unlock()
	w.poke()
}

// drainLocked hands out what the pipeline decided: completions close
// their ops, timers are armed.
func (w *Writer) drainLocked() {
	done := w.p.Completions()
	for _, c := range done {
		if op, ok := w.ops[c.ID]; ok {
			delete(w.ops, c.ID)
			op.err = c.Err
			close(op.done)
		}
	}
	if len(done) > 0 {
		close(w.changed)
		w.changed = make(chan struct{})
	}
	for _, t := range w.p.Timers() {
		time.AfterFunc(t.After, func() {
			w.mu.Lock()
			if w.ctx.Err() == nil {
				w.p.Wake(t.ID)
				w.drainLocked()
			}
			w.mu.Unlock()
			w.poke()
		})
	}
}

// RandomUUIDs draws uuids from crypto/rand: the default source of a
// Writer's claims.
func RandomUUIDs() journal.LeaderUUID {
	var b [16]byte
	for {
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it crashes the process instead)
		if u := (journal.LeaderUUID{Hi: binary.LittleEndian.Uint64(b[:8]), Lo: binary.LittleEndian.Uint64(b[8:])}); journal.UsableUUID(u) {
			return u
		}
	}
}
