package client

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/parosdb/paros/core/journal"
)

// Bounds of a WriterHandle (STYLE rule 11).
const (
	// DefaultWindow is the appends a WriterHandle keeps outstanding
	// (queued or in flight) unless WriterOptions say otherwise.
	DefaultWindow = 64
	// writeAttemptsMax bounds the attempts of one Write. A Write that gets
	// no verdict in as many attempts stops the handle (ErrAmbiguous).
	writeAttemptsMax = 256
	// claimAttemptsMax bounds the attempts of one Claim, claimRefusalsMax
	// how often it takes over from another writer before giving up.
	claimAttemptsMax = 256
	claimRefusalsMax = 8
)

// ErrClosed: the handle was closed. A write in flight when it closed may
// still land (its error also wraps ErrAmbiguous); an append not yet sent
// was not written.
var ErrClosed = errors.New("paros/client: handle closed")

// WriterOptions shape a WriterHandle's pipeline. Zero fields take the
// defaults.
type WriterOptions struct {
	// Window bounds the appends outstanding: queued, or in a Write in
	// flight (default DefaultWindow, at most WritesInFlightMax). AppendAsync
	// waits while it is full. A window of 1 makes every Append wait for
	// the previous one.
	Window int
	// WritesOut bounds the Write calls in flight (default 1, at most
	// Window). Appends queued meanwhile are coalesced into the next Write,
	// up to the API's batch limits. Each unary call is served on its own
	// goroutine, so two Writes in flight may reach the leader in either
	// order, and a fenced write that overtakes the one before it is refused
	// and must be resent: with WritesOut > 1 expect resends (WriterStats).
	WritesOut int
	// NoCoalesce sends each append as its own Write.
	NoCoalesce bool
	// Stream sends the Writes over one Journal.WriteStream to the leader
	// instead of a unary call each. The stream keeps their order, so with
	// WritesOut > 1 none is refused for overtaking another, and Writes in
	// flight together share the server's turn (one persist). A stream that
	// breaks leaves its Writes ambiguous; the handle resends them
	// identically, as it does any ambiguous Write.
	Stream bool
}

// WriterHandle is the owner of one single-writer journal over the network:
// it drives the sans-IO Writer, sending each request through a Journal
// handle and feeding every reply back. AppendAsync queues records at the
// next positions; one sender goroutine cuts the queued appends into Writes
// (each Write is one Writer.Next, fenced, at its position) and sends them
// in position order, each once the previous one's request has been handed
// to its connection.
//
// What a WriterHandle does with each result of the Writer:
//
//	result                        the handle
//	----------------------------  -----------------------------------------------------
//	Written, Duplicate            completes the Write's appends with their positions
//	Retry (ambiguous: Lost,       resends the identical Write at the same position, after
//	Unavailable, Unheld, no       a short backoff; the log answers Duplicate when an
//	answer)                       earlier attempt landed
//	Redirect, Busy,               resends the identical Write after a backoff (the Journal
//	UnknownJournal                handle already asked every server)
//	Refused (the Write does not   holds it, and resends it identically once every earlier
//	fit the tail yet)             Write in flight was queued again after the refusal, or
//	                              settled
//	Superseded                    fails the Write with ErrSuperseded and stops: appends not
//	                              yet sent fail with ErrSuperseded (not written), every later
//	                              Append fails until Claim; Writes still in flight are
//	                              resent once more to learn their verdict (Duplicate if
//	                              they landed before the takeover)
//	Truncated                     fails the Write with ErrTruncated: ambiguous, and final
//	WrongMode, TooLarge           fails the Write and stops the handle
//
// Ambiguous outcomes a caller can see, each wrapping ErrAmbiguous:
//   - Wait (or Append) returns before the verdict because its context
//     ended: the append stays in flight and is still resent; Wait again or
//     Flush to learn its fate.
//   - A Write that got no verdict in writeAttemptsMax attempts: the handle
//     stops. Claim again, then Journal.Resolve the write to learn whether
//     it landed.
//   - A Write abandoned by Claim or by Close while it was out, or still
//     ahead of the tail when the handle stopped: Journal.Resolve tells.
//
// ErrTruncated is ambiguous too, and final: the position is below the
// floor, so the log can no longer say.
//
// A WriterHandle is safe for concurrent use. Close it when done: it owns a
// goroutine.
type WriterHandle struct {
	j *Journal
	// ctx lives as long as the handle; Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// wake tells the sender there may be work (capacity 1).
	wake chan struct{}

	mu   sync.Mutex
	w    *Writer
	opts WriterOptions
	// nextSeq is the position of the next append.
	// Invariant: nextSeq == w.NextSeq() + the records of queued.
	nextSeq journal.Seq
	// queued holds the appends not yet cut into a Write, in order.
	queued []*AppendOp
	// writes holds the Writes cut and not settled, by position.
	// Invariant: positions strictly increase; every queued append comes
	// after the last of them.
	writes []*writeOp
	// sendq holds the Writes due to be sent, by position.
	// Invariant: every Write in sendq is in writes, in state opQueued.
	sendq []*writeOp
	// out counts Writes in state opOut. Invariant: out <= opts.WritesOut.
	out int
	// appends counts the appends outstanding (queued or in writes).
	// Invariant: appends <= opts.Window.
	appends int
	// clock orders queueings and refusals (a logical clock).
	clock uint64
	// stopErr is why the handle stopped (nil while it may write).
	stopErr error
	// failed is the first append failure since the last Flush.
	failed error
	// changed is closed and replaced whenever appends complete.
	changed chan struct{}
	stats   WriterStats
	// stream is the WriteStream transport (WriterOptions.Stream).
	stream streamTransport
}

// WriterStats counts what a WriterHandle sent.
type WriterStats struct {
	// Appends counts appends completed as written.
	Appends uint64
	// Writes counts Writes completed as Written or Duplicate.
	Writes uint64
	// Sends counts every Write sent, first attempts and resends.
	Sends uint64
	// Ambiguous counts ambiguous replies (each followed by a resend).
	Ambiguous uint64
	// Refused counts Writes that did not fit the tail yet (they overtook
	// an earlier Write in flight), each resent later.
	Refused uint64
	// StreamSends counts the sends that went over a WriteStream.
	StreamSends uint64
}

type opState uint8

const (
	opQueued  opState = iota + 1 // in sendq
	opOut                        // an attempt is out
	opBackoff                    // waits for a timer before it is queued again
	opWaiting                    // refused: waits for the earlier Writes to go again
	opDone
)

// AppendOp is one append on a WriterHandle: records at a position, sent
// within some Write.
type AppendOp struct {
	h       *WriterHandle
	seq     journal.Seq
	records [][]byte
	done    chan struct{}
	err     error // guarded by h.mu; set before done closes
}

// writeOp is one Write: a Writer.Next over the records of one or more
// consecutive appends.
type writeOp struct {
	req journal.WriteRequest
	ops []*AppendOp

	// Guarded by h.mu.
	state     opState
	attempts  int
	backoff   time.Duration
	queuedAt  uint64 // clock of the last queueing
	refusedAt uint64 // clock of the last refusal
}

// NewWriter returns a writer handle for this single-writer journal. It
// holds nothing until Claim wins. newUUID draws each claim's uuid; pass
// RandomUUIDs (crypto/rand) in production, since two writers that draw the
// same uuid share a fence.
func (j *Journal) NewWriter(newUUID func() journal.LeaderUUID) *WriterHandle {
	ctx, cancel := context.WithCancel(context.Background())
	h := &WriterHandle{j: j, ctx: ctx, cancel: cancel, w: NewWriter(j.id, newUUID),
		changed: make(chan struct{}), wake: make(chan struct{}, 1)}
	h.opts = h.withDefaults(WriterOptions{})
	h.stream.h = h
	h.nextSeq = h.w.NextSeq()
	h.wg.Add(1)
	go h.sender()
	return h
}

func (h *WriterHandle) withDefaults(o WriterOptions) WriterOptions {
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	o.Window = min(o.Window, WritesInFlightMax)
	if o.WritesOut <= 0 {
		o.WritesOut = 1
	}
	o.WritesOut = min(o.WritesOut, o.Window)
	return o
}

// SetOptions reshapes the pipeline; it applies to the Writes cut from now
// on.
func (h *WriterHandle) SetOptions(o WriterOptions) {
	h.mu.Lock()
	h.opts = h.withDefaults(o)
	h.mu.Unlock()
	h.poke()
}

// Fence is the uuid the handle holds, or the unset uuid.
func (h *WriterHandle) Fence() journal.LeaderUUID {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.w.Fence()
}

// NextSeq is the position the next Append takes.
func (h *WriterHandle) NextSeq() journal.Seq {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.nextSeq
}

// Stopped is nil while the handle may write, else why it stopped
// (ErrSuperseded, ErrWrongMode, ErrTooLarge, ErrAmbiguous, ErrClosed).
func (h *WriterHandle) Stopped() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stopErr
}

// Stats returns the handle's counters.
func (h *WriterHandle) Stats() WriterStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stats
}

// Claim takes the journal: SetLeader(fresh uuid, the leader believed in
// force), and on a refusal once more naming the leader the refusal named
// (a takeover), up to claimRefusalsMax times. It abandons every append
// outstanding: one in a Write that was sent completes with an error
// wrapping ErrAmbiguous (Journal.Resolve tells whether it landed), one not
// yet sent with an error wrapping ErrNotHolding (not written). A Claim
// also resumes a stopped handle.
//
// Errors: nil when the handle holds the fence. ErrAmbiguous (wrapping the
// context's error) when the context ended after a SetLeader may have been
// received: the claim may have won, and the next Claim resends the
// identical request first. ErrRefused when other claimers kept winning.
// ErrWrongMode on a multi-writer journal. The context's error, or
// ErrNoServer, when nothing was received.
func (h *WriterHandle) Claim(ctx context.Context) error {
	h.mu.Lock()
	if errors.Is(h.stopErr, ErrClosed) {
		h.mu.Unlock()
		return h.stopErr
	}
	h.abandonLocked(ErrNotHolding, "abandoned by Claim")
	req, ok := h.w.Claiming()
	if !ok {
		req = h.w.Claim()
	}
	h.stopErr = nil
	h.mu.Unlock()

	maybeSent := false
	refusals := 0
	d := backoffMin
	var lastErr error
	for range claimAttemptsMax {
		reply, err := h.j.SetLeader(ctx, req)
		if err != nil {
			lastErr = err
			if d, err = pause(ctx, d); err != nil {
				break
			}
			continue
		}
		h.mu.Lock()
		res := h.w.AbsorbClaim(req, reply)
		switch res.Kind {
		case Won:
			h.nextSeq = h.w.NextSeq()
			h.mu.Unlock()
			return nil
		case Refused:
			refusals++
			if refusals > claimRefusalsMax {
				h.mu.Unlock()
				return res.Err()
			}
			req, maybeSent, d = h.w.Claim(), false, backoffMin
			h.mu.Unlock()
			continue
		case WrongMode:
			h.stopErr = ErrWrongMode
			h.mu.Unlock()
			return res.Err()
		case Stale:
			h.mu.Unlock()
			return fmt.Errorf("%w: a concurrent Claim on the same handle replaced this one", ErrStale)
		}
		h.mu.Unlock()
		// Retry (ambiguous), Redirect, Busy, UnknownJournal: resend the
		// identical claim.
		maybeSent = maybeSent || res.Kind == Retry
		if d, err = pause(ctx, d); err != nil {
			break
		}
	}
	switch {
	case maybeSent:
		return fmt.Errorf("%w: the claim may have won; Claim again to resend it identically: %v", ErrAmbiguous, ctx.Err())
	case ctx.Err() != nil:
		return ctx.Err()
	case lastErr != nil:
		return lastErr
	}
	return fmt.Errorf("%w: no verdict for the claim in %d attempts", ErrAmbiguous, claimAttemptsMax)
}

// Append writes records at the next positions and waits for the verdict.
// It returns the position of the first record. Errors as for AppendAsync
// and AppendOp.Wait; an error wrapping ErrAmbiguous means the records may
// still land (see WriterHandle).
func (h *WriterHandle) Append(ctx context.Context, records [][]byte) (journal.Seq, error) {
	op, err := h.AppendAsync(ctx, records)
	if err != nil {
		return 0, err
	}
	return op.Wait(ctx)
}

// AppendAsync places records at the next positions and queues them
// without waiting for the verdict; the returned op completes when a
// verdict settles the Write that carries them. It waits while the window
// is full. The records are copied.
//
// Errors (nothing was queued): the handle's stop error (ErrSuperseded and
// the like), ErrNotHolding before a Claim won, ErrEmptyBatch, ErrTooLarge,
// or the context's error while waiting for room in the window.
func (h *WriterHandle) AppendAsync(ctx context.Context, records [][]byte) (*AppendOp, error) {
	if err := checkBatch(records); err != nil {
		return nil, err
	}
	h.mu.Lock()
	for h.stopErr == nil && h.w.Holding() && h.appends >= h.opts.Window {
		ch := h.changed
		h.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		h.mu.Lock()
	}
	switch {
	case h.stopErr != nil:
		err := h.stopErr
		h.mu.Unlock()
		return nil, err
	case !h.w.Holding():
		h.mu.Unlock()
		return nil, ErrNotHolding
	}
	op := &AppendOp{h: h, seq: h.nextSeq, records: copyRecords(records), done: make(chan struct{})}
	h.nextSeq += journal.Seq(len(records))
	h.queued = append(h.queued, op)
	h.appends++
	h.assertLocked()
	h.mu.Unlock()
	h.poke()
	return op, nil
}

// Flush waits until every append outstanding completed, and returns the
// first append failure since the previous Flush (nil if none). An error
// wrapping ErrAmbiguous and the context's error means appends are still
// in flight.
func (h *WriterHandle) Flush(ctx context.Context) error {
	h.mu.Lock()
	for h.appends > 0 {
		ch := h.changed
		h.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%w: appends are still in flight: %w", ErrAmbiguous, ctx.Err())
		}
		h.mu.Lock()
	}
	err := h.failed
	h.failed = nil
	h.mu.Unlock()
	return err
}

// Close stops the handle: an append in a Write that was sent completes
// with ErrClosed and ErrAmbiguous (it may land), one not yet sent with
// ErrClosed (not written). It waits for the handle's goroutines.
func (h *WriterHandle) Close() error {
	h.mu.Lock()
	h.stopErr = ErrClosed
	h.abandonLocked(ErrClosed, "the handle closed")
	h.mu.Unlock()
	h.cancel()
	h.wg.Wait()
	return nil
}

// Truncate drops every position below upTo (clamped by the journal to its
// next position), fenced by the handle's uuid, and returns the journal's
// view after it: View.FirstSeq is the floor. The checkpoint pattern calls
// it with the position of a run whose End is written. An ambiguous
// truncation is resent until it gets a verdict, which is always safe: a
// truncation only ever raises the floor.
//
// Errors: the handle's stop error, ErrNotHolding, ErrSuperseded (a verdict
// named another leader: the handle stops), ErrWrongMode, ErrStale when a
// Claim replaced the fence meanwhile; an error wrapping ErrAmbiguous and
// the context's error when the context ended after a truncation may have
// been received (it may still take effect); the context's error or
// ErrNoServer when nothing was received.
func (h *WriterHandle) Truncate(ctx context.Context, upTo journal.Seq) (journal.View, error) {
	h.mu.Lock()
	if h.stopErr != nil {
		err := h.stopErr
		h.mu.Unlock()
		return journal.View{}, err
	}
	req, err := h.w.Truncate(upTo)
	h.mu.Unlock()
	if err != nil {
		return journal.View{}, err
	}
	maybeSent := false
	d := backoffMin
	var lastErr error
	for range writeAttemptsMax {
		reply, err := h.j.Truncate(ctx, req)
		if err != nil {
			lastErr = err
		} else {
			h.mu.Lock()
			res := h.w.AbsorbTruncate(req, reply)
			switch res.Kind {
			case Trimmed:
				h.mu.Unlock()
				return res.View, nil
			case Superseded, WrongMode:
				h.stopLocked(res.Err())
				h.mu.Unlock()
				return res.View, res.Err()
			case Stale:
				h.mu.Unlock()
				return journal.View{}, res.Err()
			}
			h.mu.Unlock()
			maybeSent = maybeSent || res.Kind == Retry
		}
		if d, err = pause(ctx, d); err != nil {
			break
		}
	}
	switch {
	case maybeSent:
		return journal.View{}, fmt.Errorf("%w: the truncation to %d may still take effect: %v", ErrAmbiguous, upTo, ctx.Err())
	case ctx.Err() != nil:
		return journal.View{}, ctx.Err()
	case lastErr != nil:
		return journal.View{}, lastErr
	}
	return journal.View{}, fmt.Errorf("%w: no verdict for the truncation to %d", ErrAmbiguous, upTo)
}

// Seq is the position of the append's first record: where it lands if it
// is written.
func (o *AppendOp) Seq() journal.Seq { return o.seq }

// Done is closed when the append completed.
func (o *AppendOp) Done() <-chan struct{} { return o.done }

// Wait waits for the append's verdict and returns its position. Errors:
// the verdict's (ErrSuperseded, ErrTruncated, ErrWrongMode, ErrTooLarge),
// an error wrapping ErrAmbiguous when its Write was abandoned or got no
// verdict in writeAttemptsMax attempts, an error wrapping ErrNotHolding or
// ErrClosed alone when it was dropped before it was sent (not written),
// or — when ctx ends first — an error wrapping ErrAmbiguous and the
// context's error: the append is still in flight and may land.
func (o *AppendOp) Wait(ctx context.Context) (journal.Seq, error) {
	select {
	case <-o.done:
	case <-ctx.Done():
		return 0, fmt.Errorf("%w: the append at position %d is still in flight: %w", ErrAmbiguous, o.seq, ctx.Err())
	}
	o.h.mu.Lock()
	defer o.h.mu.Unlock()
	if o.err != nil {
		return 0, o.err
	}
	return o.seq, nil
}

// poke wakes the sender.
func (h *WriterHandle) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// sender sends Writes in position order: a queued resend first, else —
// once no earlier Write waits to be resent — a new Write cut from the
// queued appends; each once the previous request left (or its attempt
// ended), never more than opts.WritesOut at once.
func (h *WriterHandle) sender() {
	defer h.wg.Done()
	for {
		h.mu.Lock()
		var wr *writeOp
		if h.out < h.opts.WritesOut {
			switch {
			case len(h.sendq) > 0:
				wr = h.sendq[0]
				h.sendq = h.sendq[1:]
			case len(h.queued) > 0 && h.stopErr == nil && h.allOutLocked():
				wr = h.cutLocked()
			}
		}
		if wr != nil {
			wr.state = opOut
			wr.attempts++
			h.out++
			h.stats.Sends++
		}
		h.mu.Unlock()
		if wr == nil {
			select {
			case <-h.wake:
				continue
			case <-h.ctx.Done():
				return
			}
		}
		left := make(chan struct{})
		var once sync.Once
		h.wg.Add(1)
		h.mu.Lock()
		stream := h.opts.Stream
		if stream {
			h.stats.StreamSends++
		}
		h.mu.Unlock()
		go h.attempt(wr, stream, func() { once.Do(func() { close(left) }) })
		select {
		case <-left:
		case <-h.ctx.Done():
			return
		}
	}
}

// allOutLocked reports whether every unsettled Write is out. A new Write
// goes after all of them, so it waits while one of them waits to be sent
// again: sent now, it would overtake that one and be refused.
func (h *WriterHandle) allOutLocked() bool {
	for _, wr := range h.writes {
		if wr.state != opOut {
			return false
		}
	}
	return true
}

// cutLocked turns the queued appends (as many as one Write carries) into a
// Write, or returns nil when the Writer refuses (the appends fail, and the
// handle stops).
func (h *WriterHandle) cutLocked() *writeOp {
	n, records, bytes := 0, 0, 0
	for _, op := range h.queued {
		b := 0
		for _, r := range op.records {
			b += len(r)
		}
		if n > 0 && (h.opts.NoCoalesce || records+len(op.records) > journal.WriteRecordsMax || bytes+b > journal.WriteBytesMax) {
			break
		}
		n, records, bytes = n+1, records+len(op.records), bytes+b
	}
	ops := slices.Clone(h.queued[:n])
	h.queued = h.queued[n:]
	merged := ops[0].records
	if n > 1 {
		merged = make([][]byte, 0, records)
		for _, op := range ops {
			merged = append(merged, op.records...)
		}
	}
	req, err := h.w.Next(merged)
	if err != nil { // the Writer stopped or holds no fence: nothing was sent
		for _, op := range ops {
			h.completeLocked(op, err)
		}
		h.stopLocked(err)
		return nil
	}
	if req.Seq != ops[0].seq {
		panic(fmt.Sprintf("client: a Write cut at %d for appends placed at %d", req.Seq, ops[0].seq))
	}
	wr := &writeOp{req: req, ops: ops, backoff: backoffMin}
	h.clock++
	wr.queuedAt = h.clock
	h.writes = append(h.writes, wr)
	h.assertLocked()
	return wr
}

// attempt sends wr once, over a unary call or the handle's WriteStream,
// and acts on the result (see WriterHandle).
func (h *WriterHandle) attempt(wr *writeOp, stream bool, left func()) {
	defer h.wg.Done()
	var reply journal.Reply
	var err error
	if stream {
		reply, err = h.stream.write(wr.req, left)
	} else {
		reply, err = h.j.Write(withOnSent(h.ctx, left), wr.req)
	}
	left()

	h.mu.Lock()
	defer h.mu.Unlock()
	h.out--
	h.poke()
	if wr.state == opDone { // abandoned by Claim or Close while out
		return
	}
	var res WriteResult
	if err != nil {
		res.Kind = Busy // nothing was received: send it again after a pause
	} else {
		res = h.w.AbsorbWrite(wr.req, reply)
	}
	switch res.Kind {
	case Written, Duplicate:
		h.stats.Writes++
		h.stats.Appends += uint64(len(wr.ops))
		h.finishLocked(wr, nil)
		return
	case Superseded, WrongMode, TooLarge:
		h.stopLocked(res.Err())
		h.finishLocked(wr, res.Err())
		return
	case Truncated:
		h.finishLocked(wr, res.Err())
		return
	case Stale:
		h.finishLocked(wr, fmt.Errorf("%w: abandoned at position %d; Resolve tells whether it landed",
			ErrAmbiguous, wr.req.Seq))
		return
	}
	if wr.attempts >= writeAttemptsMax {
		err := fmt.Errorf("%w: no verdict for the write at position %d in %d attempts; Claim, then Resolve it",
			ErrAmbiguous, wr.req.Seq, writeAttemptsMax)
		h.stopLocked(err)
		h.finishLocked(wr, err)
		return
	}
	switch res.Kind {
	case Refused:
		h.stats.Refused++
		if h.stopErr != nil {
			// The handle stopped with this Write still ahead of the
			// tail: only the earlier Writes landing would let it in.
			h.finishLocked(wr, fmt.Errorf("%w: the handle stopped (%v) before the journal's tail reached position %d; "+
				"Resolve tells whether it landed", ErrAmbiguous, h.stopErr, wr.req.Seq))
			return
		}
		h.clock++
		wr.state, wr.refusedAt = opWaiting, h.clock
		h.scanLocked()
		return
	case Retry:
		h.stats.Ambiguous++
	}
	// Retry (ambiguous), Redirect, Busy, UnknownJournal, or no server
	// reached: queue the identical Write again after a pause.
	wr.state = opBackoff
	d := wr.backoff
	wr.backoff = min(2*d, backoffMax)
	time.AfterFunc(d, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if wr.state == opBackoff && h.ctx.Err() == nil {
			h.queueLocked(wr)
			h.scanLocked()
		}
	})
}

// queueLocked puts wr in sendq at its position and wakes the sender.
func (h *WriterHandle) queueLocked(wr *writeOp) {
	h.clock++
	wr.state, wr.queuedAt = opQueued, h.clock
	i := len(h.sendq)
	for i > 0 && h.sendq[i-1].req.Seq > wr.req.Seq {
		i--
	}
	h.sendq = slices.Insert(h.sendq, i, wr)
	h.poke()
}

// scanLocked queues every refused Write whose turn came: every earlier
// Write in flight was queued again after its refusal, or settled, so the
// earlier Writes go ahead of it once more. Once the handle stopped, every
// refused Write is queued at once to learn its verdict.
func (h *WriterHandle) scanLocked() {
	minQueued := uint64(math.MaxUint64)
	for _, wr := range h.writes {
		if wr.state == opWaiting && (h.stopErr != nil || minQueued > wr.refusedAt) {
			wr.backoff = backoffMin
			h.queueLocked(wr)
		}
		minQueued = min(minQueued, wr.queuedAt)
	}
}

// stopLocked stops the handle with err unless it already stopped: the
// appends not yet sent fail with err (they were not written), and the
// refused Writes are resent to learn their verdicts.
func (h *WriterHandle) stopLocked(err error) {
	if h.stopErr != nil {
		return
	}
	h.stopErr = err
	for _, op := range h.queued {
		h.completeLocked(op, fmt.Errorf("%w (the append at position %d was not sent)", err, op.seq))
	}
	h.queued = nil
	h.nextSeq = h.w.NextSeq()
	h.changedLocked()
	h.scanLocked()
}

// abandonLocked drops every append outstanding: those in a Write that was
// sent may have landed (ambiguous), those never sent were not written.
func (h *WriterHandle) abandonLocked(notSent error, why string) {
	for _, wr := range slices.Clone(h.writes) {
		h.finishLocked(wr, fmt.Errorf("%w (%w): %s at position %d; Resolve tells whether it landed",
			ErrAmbiguous, notSent, why, wr.req.Seq))
	}
	for _, op := range h.queued {
		h.completeLocked(op, fmt.Errorf("%w: %s before the append at position %d was sent; it was not written",
			notSent, why, op.seq))
	}
	h.queued = nil
	h.nextSeq = h.w.NextSeq()
	h.changedLocked()
}

// finishLocked completes every append of wr, once.
func (h *WriterHandle) finishLocked(wr *writeOp, err error) {
	if wr.state == opDone {
		return
	}
	wr.state = opDone
	h.writes = slices.DeleteFunc(h.writes, func(x *writeOp) bool { return x == wr })
	h.sendq = slices.DeleteFunc(h.sendq, func(x *writeOp) bool { return x == wr })
	for _, op := range wr.ops {
		h.completeLocked(op, err)
	}
	h.changedLocked()
	h.scanLocked()
	h.assertLocked()
}

// completeLocked completes one append.
func (h *WriterHandle) completeLocked(op *AppendOp, err error) {
	op.err = err
	close(op.done)
	h.appends--
	if err != nil && h.failed == nil {
		h.failed = err
	}
}

func (h *WriterHandle) changedLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// assertLocked checks the field invariants; a failure is a bug here.
func (h *WriterHandle) assertLocked() {
	if h.appends < 0 || h.out < 0 || len(h.writes) > WritesInFlightMax || h.appends > WritesInFlightMax {
		panic(fmt.Sprintf("client: writer handle with %d appends, %d writes, %d out", h.appends, len(h.writes), h.out))
	}
	for i := 1; i < len(h.writes); i++ {
		if h.writes[i].req.Seq <= h.writes[i-1].req.Seq {
			panic(fmt.Sprintf("client: writes in flight out of order: %d after %d", h.writes[i].req.Seq, h.writes[i-1].req.Seq))
		}
	}
	if len(h.queued) > 0 && len(h.writes) > 0 {
		last := h.writes[len(h.writes)-1]
		if h.queued[0].seq < last.req.Seq+journal.Seq(len(last.req.Records)) {
			panic(fmt.Sprintf("client: an append queued at %d inside the write at %d", h.queued[0].seq, last.req.Seq))
		}
	}
}

// RandomUUIDs is a uuid source over crypto/rand, for NewWriter and
// Journal.NewWriter in production.
func RandomUUIDs() journal.LeaderUUID {
	var b [16]byte
	for {
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it crashes the process instead)
		if u := (journal.LeaderUUID{Hi: binary.LittleEndian.Uint64(b[:8]), Lo: binary.LittleEndian.Uint64(b[8:])}); u.IsSet() {
			return u
		}
	}
}
