package sansio

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/parosdb/paros/core/journal"
)

type writeState uint8

const (
	wQueued  writeState = iota + 1 // in sendq
	wOut                           // an attempt is out
	wBackoff                       // waits for Wake before it is queued again
	wWaiting                       // refused: waits for the earlier Writes to go again
	wDone
)

type pipeAppend struct {
	id      AppendID
	seq     journal.Seq
	records [][]byte
}

type pipeWrite struct {
	id        WriteID
	req       journal.WriteRequest
	appends   []*pipeAppend
	state     writeState
	attempts  int
	backoff   time.Duration
	queuedAt  uint64 // clock of the last queueing
	refusedAt uint64 // clock of the last refusal
	// ambiguous: an attempt got an ambiguous reply, so the write may have
	// landed whatever a later attempt that proposed nothing says.
	ambiguous bool
}

// Pipeline is the scheduler of a single-writer journal's network Writer,
// sans-IO: appends go in, attempts to send come out, replies and timer
// wake-ups go in, completions and timers come out. It drives a Writer
// (which decides fences, positions and verdicts) and decides only when
// each Write is cut and sent. The network Writer wraps it in a thin
// goroutine shell; the simulator drives the very same type.
//
// Append places records at the next positions and queues them. Next hands
// out the next attempt: a queued resend first, else — once every earlier
// Write is out — a new Write cut from the queued appends (as many as one
// Write carries, unless NoCoalesce), in position order, at most WritesOut
// out at once, and only after the previous attempt's request left (Left,
// or Absorb). What the pipeline does with each result of the Writer:
//
//	result                        the pipeline
//	----------------------------  -----------------------------------------------------
//	Written, Duplicate            completes the Write's appends with their positions
//	Retry (ambiguous: Lost,       resends the identical Write at the same position after
//	Unavailable, Unheld, no       a backoff (a Timer); the log answers Duplicate when an
//	verdict), Redirect, Busy,     earlier attempt landed
//	UnknownJournal, unsent
//	Refused (the Write does not   holds it, and resends it identically once every earlier
//	fit the tail yet)             Write in flight was queued again after the refusal, or
//	                              settled
//	Superseded                    fails the Write with ErrSuperseded and stops: appends not
//	                              yet sent fail (not written); refused Writes are resent
//	                              once more to learn their verdict
//	BelowFloor                     fails the Write with ErrBelowFloor: ambiguous, and final
//	WrongMode, TooLarge, Deleted  fails the Write and stops the pipeline
//
// Errors an append can complete with, each wrapping ErrAmbiguous when the
// records may still have landed: a Write abandoned by BeginClaim or Close
// after it was sent, one that got no verdict in WriteAttemptsMax attempts,
// one still ahead of the tail when the pipeline stopped. Resolve tells.
//
// A Pipeline is not safe for concurrent use.
type Pipeline struct {
	w    *Writer
	opts PipelineOptions
	// nextSeq is the position of the next append.
	// Invariant: nextSeq == w.NextSeq() + the records of queued.
	nextSeq journal.Seq
	// queued holds the appends not yet cut into a Write, in order.
	queued []*pipeAppend
	// writes holds the Writes cut and not settled, by position.
	// Invariant: positions strictly increase; every queued append comes
	// after the last of them.
	writes []*pipeWrite
	// sendq holds the Writes due to be sent, by position.
	// Invariant: every Write in sendq is in writes, in state wQueued.
	sendq []*pipeWrite
	// out counts attempts handed out and not absorbed.
	// Invariant: out <= opts.WritesOut (while the options stand).
	out int
	// leaving is the attempt whose request has not left yet (0: none).
	leaving WriteID
	// appends counts the appends outstanding. Invariant: appends <= Window.
	appends int
	// byID finds a Write by id until it is done.
	byID map[WriteID]*pipeWrite
	// clock orders queueings and refusals (a logical clock).
	clock uint64
	// stopErr is why the pipeline stopped (nil while it may write).
	stopErr error
	// failed is the first append failure since the last TakeFailed.
	failed      error
	nextAppend  AppendID
	nextWrite   WriteID
	completions []Completion
	timers      []Timer
	stats       PipelineStats
}

// NewPipeline returns a pipeline over the single-writer Writer w, which it
// owns from now on: call w's methods only through the pipeline.
func NewPipeline(w *Writer, o PipelineOptions) *Pipeline {
	if w.Mode() != journal.ModeSingle {
		panic("client: a Pipeline drives a single-writer Writer")
	}
	return &Pipeline{w: w, opts: o.withDefaults(), nextSeq: w.NextSeq(), byID: map[WriteID]*pipeWrite{}}
}

// SetOptions reshapes the pipeline; it applies to the Writes cut from now on.
func (p *Pipeline) SetOptions(o PipelineOptions) { p.opts = o.withDefaults() }

// Options are the options in force.
func (p *Pipeline) Options() PipelineOptions { return p.opts }

// Fence is the uuid the pipeline's writer holds, or the unset uuid.
func (p *Pipeline) Fence() journal.LeaderUUID { return p.w.Fence() }

// Holding reports whether the writer holds the fence.
func (p *Pipeline) Holding() bool { return p.w.Holding() }

// NextSeq is the position the next Append takes.
func (p *Pipeline) NextSeq() journal.Seq { return p.nextSeq }

// Stopped is nil while the pipeline may write, else why it stopped.
func (p *Pipeline) Stopped() error { return p.stopErr }

// Outstanding is the appends not completed yet.
func (p *Pipeline) Outstanding() int { return p.appends }

// Idle reports whether nothing is queued, out or waiting.
func (p *Pipeline) Idle() bool { return p.appends == 0 && p.out == 0 }

// Stats returns the counters.
func (p *Pipeline) Stats() PipelineStats { return p.stats }

// TakeFailed returns the first append failure since the previous call.
func (p *Pipeline) TakeFailed() error {
	err := p.failed
	p.failed = nil
	return err
}

// Completions returns the appends settled since the previous call.
func (p *Pipeline) Completions() []Completion {
	out := p.completions
	p.completions = nil
	return out
}

// Timers returns the wake-ups asked for since the previous call.
func (p *Pipeline) Timers() []Timer {
	out := p.timers
	p.timers = nil
	return out
}

// BeginClaim starts a claim: every append outstanding is abandoned (one in
// a Write that was sent completes with an error wrapping ErrAmbiguous and
// ErrNotHolding, one not yet sent with ErrNotHolding alone: not written),
// the pipeline resumes if it had stopped, and the SetLeader to send is
// returned — the identical one again after an ambiguous claim.
func (p *Pipeline) BeginClaim() journal.SetLeaderRequest {
	p.abandon(ErrNotHolding, "abandoned by a claim")
	if !errors.Is(p.stopErr, ErrClosed) { // closed is for good
		p.stopErr = nil
	}
	if req, ok := p.w.Claiming(); ok {
		return req
	}
	return p.w.Claim()
}

// AbsorbClaim judges a reply to the claim (see Writer.AbsorbClaim). On
// ResultRefused the caller may BeginClaim again to take over; on
// ResultWrongMode the pipeline stops.
func (p *Pipeline) AbsorbClaim(req journal.SetLeaderRequest, r journal.Reply) ClaimResult {
	res := p.w.AbsorbClaim(req, r)
	switch res.Kind {
	case ResultWon:
		p.nextSeq = p.w.NextSeq()
	case ResultRefused:
		// The next BeginClaim draws a fresh uuid against the leader named.
	case ResultWrongMode:
		p.stopErr = ErrWrongMode
	case ResultDeleted:
		p.stopErr = ErrJournalDeleted
	}
	return res
}

// Truncate builds a fenced truncation below upTo (see Writer.Truncate).
func (p *Pipeline) Truncate(upTo journal.Seq) (journal.TruncateRequest, error) {
	if p.stopErr != nil {
		return journal.TruncateRequest{}, p.stopErr
	}
	return p.w.Truncate(upTo)
}

// AbsorbTruncate judges a reply to a truncation; a verdict naming another
// leader, or the other writer mode, stops the pipeline.
func (p *Pipeline) AbsorbTruncate(req journal.TruncateRequest, r journal.Reply) TruncateResult {
	res := p.w.AbsorbTruncate(req, r)
	if res.Kind == ResultSuperseded || res.Kind == ResultWrongMode || res.Kind == ResultDeleted {
		p.stop(res.Err())
	}
	return res
}

// Append places records at the next positions and queues them; the
// records are copied. It returns the append's id and the position of its
// first record. Errors (nothing was queued): the stop error, ErrNotHolding
// before a claim won, ErrEmptyBatch, ErrTooLarge, ErrWindowFull (wait for
// a completion and try again).
func (p *Pipeline) Append(records [][]byte) (AppendID, journal.Seq, error) {
	if err := checkBatch(records); err != nil {
		return 0, 0, err
	}
	switch {
	case p.stopErr != nil:
		return 0, 0, p.stopErr
	case !p.w.Holding():
		return 0, 0, ErrNotHolding
	case p.appends >= p.opts.Window:
		return 0, 0, ErrWindowFull
	}
	p.nextAppend++
	a := &pipeAppend{id: p.nextAppend, seq: p.nextSeq, records: copyRecords(records)}
	p.nextSeq += journal.Seq(len(records))
	p.queued = append(p.queued, a)
	p.appends++
	p.assertInvariants()
	return a.id, a.seq, nil
}

// Next hands out the next attempt to send, if one may go now.
func (p *Pipeline) Next() (Send, bool) {
	if p.leaving != 0 || p.out >= p.opts.WritesOut {
		return Send{}, false
	}
	var wr *pipeWrite
	switch {
	case len(p.sendq) > 0:
		wr = p.sendq[0]
		p.sendq = p.sendq[1:]
	case len(p.queued) > 0 && p.stopErr == nil && p.allOut():
		wr = p.cut()
	}
	if wr == nil {
		return Send{}, false
	}
	wr.state = wOut
	wr.attempts++
	p.out++
	p.leaving = wr.id
	p.stats.Sends++
	return Send{ID: wr.id, Req: wr.req, Attempt: wr.attempts}, true
}

// Left reports that the attempt's request was handed to its connection
// (or that nothing will be sent): the next attempt may go.
func (p *Pipeline) Left(id WriteID) {
	if p.leaving == id {
		p.leaving = 0
	}
}

// Absorb feeds the answer to attempt id: received is false when the
// request reached no server (nothing was proposed; resend after a pause),
// and then r is ignored. Every Send must be absorbed exactly once.
func (p *Pipeline) Absorb(id WriteID, r journal.Reply, received bool) {
	p.Left(id)
	p.out--
	if p.out < 0 {
		panic(fmt.Sprintf("client: pipeline absorbed write %d with nothing out", id))
	}
	wr, ok := p.byID[id]
	if !ok || wr.state != wOut {
		return // abandoned by a claim or Close while out
	}
	var res WriteResult
	if received {
		res = p.w.AbsorbWrite(wr.req, r)
	} else {
		res.Kind = ResultBusy
		p.stats.Unsent++
	}
	switch res.Kind {
	case ResultWritten, ResultDuplicate:
		p.stats.Writes++
		p.stats.Appends += uint64(len(wr.appends))
		p.finish(wr, nil)
		return
	case ResultTooLarge, ResultDeleted:
		// This attempt proposed nothing; an earlier ambiguous one may
		// still have landed.
		err := res.Err()
		if wr.ambiguous {
			err = fmt.Errorf("%w: an earlier attempt may have landed at position %d (%w)", ErrAmbiguous, wr.req.Seq, err)
		}
		p.stop(err)
		p.finish(wr, err)
		return
	case ResultSuperseded, ResultWrongMode:
		// A verdict: had an earlier attempt landed, the journal would
		// have answered this identical one Duplicate.
		p.stop(res.Err())
		p.finish(wr, res.Err())
		return
	case ResultBelowFloor:
		p.finish(wr, res.Err())
		return
	case ResultStale:
		p.finish(wr, fmt.Errorf("%w: abandoned at position %d; Resolve tells whether it landed", ErrAmbiguous, wr.req.Seq))
		return
	}
	if wr.attempts >= WriteAttemptsMax {
		err := fmt.Errorf("%w: no verdict for the write at position %d in %d attempts; claim, then Resolve it",
			ErrAmbiguous, wr.req.Seq, WriteAttemptsMax)
		p.stop(err)
		p.finish(wr, err)
		return
	}
	switch res.Kind {
	case ResultRefused:
		p.stats.Refused++
		if p.out > 0 {
			p.stats.RefusedWhileOut++
		}
		if p.stopErr != nil {
			// Stopped with this Write still ahead of the tail: only the
			// earlier Writes landing would let it in.
			p.finish(wr, fmt.Errorf("%w: the writer stopped (%v) before the journal's tail reached position %d; "+
				"Resolve tells whether it landed", ErrAmbiguous, p.stopErr, wr.req.Seq))
			return
		}
		p.clock++
		wr.state, wr.refusedAt = wWaiting, p.clock
		p.scan()
		return
	case ResultRetry:
		p.stats.Ambiguous++
		wr.ambiguous = true
	}
	// Retry (ambiguous), Redirect, Busy, UnknownJournal, or unsent: queue
	// the identical Write again after a pause.
	wr.state = wBackoff
	p.timers = append(p.timers, Timer{ID: wr.id, After: wr.backoff})
	wr.backoff = min(2*wr.backoff, BackoffMax)
}

// Wake is a Timer's wake-up: a Write in backoff is queued again.
func (p *Pipeline) Wake(id WriteID) {
	if wr, ok := p.byID[id]; ok && wr.state == wBackoff {
		p.queue(wr)
		p.scan()
	}
}

// Close stops the pipeline for good (BeginClaim does not resume it): an append in a Write that was sent
// completes with ErrClosed and ErrAmbiguous (it may land), one not yet
// sent with ErrClosed alone (not written).
func (p *Pipeline) Close() {
	p.stopErr = ErrClosed
	p.abandon(ErrClosed, "the writer closed")
}

// allOut reports whether every unsettled Write is out. A new Write goes
// after all of them, so it waits while one of them waits to be sent
// again: sent now, it would overtake that one and be refused.
func (p *Pipeline) allOut() bool {
	for _, wr := range p.writes {
		if wr.state != wOut {
			return false
		}
	}
	return true
}

// cut turns the queued appends (as many as one Write carries) into a
// Write, or returns nil when the Writer refuses (the appends fail, and the
// pipeline stops).
func (p *Pipeline) cut() *pipeWrite {
	n, records, bytes := 0, 0, 0
	for _, a := range p.queued {
		b := 0
		for _, r := range a.records {
			b += len(r)
		}
		if n > 0 && (p.opts.NoCoalesce || records+len(a.records) > journal.WriteRecordsMax || bytes+b > journal.WriteBytesMax) {
			break
		}
		n, records, bytes = n+1, records+len(a.records), bytes+b
	}
	as := slices.Clone(p.queued[:n])
	p.queued = p.queued[n:]
	merged := as[0].records
	if n > 1 {
		merged = make([][]byte, 0, records)
		for _, a := range as {
			merged = append(merged, a.records...)
		}
	}
	req, err := p.w.nextOwned(merged) // the appends' copies; the appends are done with them
	if err != nil {                   // the Writer stopped or holds no fence: nothing was sent
		for _, a := range as {
			p.complete(a, err)
		}
		p.stop(err)
		return nil
	}
	if req.Seq != as[0].seq {
		panic(fmt.Sprintf("client: a Write cut at %d for appends placed at %d", req.Seq, as[0].seq))
	}
	p.nextWrite++
	wr := &pipeWrite{id: p.nextWrite, req: req, appends: as, backoff: BackoffMin}
	p.clock++
	wr.queuedAt = p.clock
	p.writes = append(p.writes, wr)
	p.byID[wr.id] = wr
	p.assertInvariants()
	return wr
}

// queue puts wr in sendq at its position.
func (p *Pipeline) queue(wr *pipeWrite) {
	p.clock++
	wr.state, wr.queuedAt = wQueued, p.clock
	i := len(p.sendq)
	for i > 0 && p.sendq[i-1].req.Seq > wr.req.Seq {
		i--
	}
	p.sendq = slices.Insert(p.sendq, i, wr)
}

// scan queues every refused Write whose turn came: every earlier Write in
// flight was queued again after its refusal, or settled, so the earlier
// Writes go ahead of it once more. Once the pipeline stopped, every
// refused Write is queued at once to learn its verdict.
func (p *Pipeline) scan() {
	minQueued := uint64(math.MaxUint64)
	for _, wr := range p.writes {
		if wr.state == wWaiting && (p.stopErr != nil || minQueued > wr.refusedAt) {
			wr.backoff = BackoffMin
			p.queue(wr)
		}
		minQueued = min(minQueued, wr.queuedAt)
	}
}

// stop stops the pipeline with err unless it already stopped: the appends
// not yet sent fail with err (they were not written), and the refused
// Writes are resent to learn their verdicts.
func (p *Pipeline) stop(err error) {
	if p.stopErr != nil {
		return
	}
	p.stopErr = err
	for _, a := range p.queued {
		p.complete(a, fmt.Errorf("%w (the append at position %d was not sent)", err, a.seq))
	}
	p.queued = nil
	p.nextSeq = p.w.NextSeq()
	p.scan()
}

// abandon drops every append outstanding: those in a Write that was sent
// may have landed (ambiguous), those never sent were not written.
func (p *Pipeline) abandon(notSent error, why string) {
	for _, wr := range slices.Clone(p.writes) {
		var err error
		if wr.attempts > 0 {
			err = fmt.Errorf("%w (%w): %s at position %d; Resolve tells whether it landed", ErrAmbiguous, notSent, why, wr.req.Seq)
		} else {
			err = fmt.Errorf("%w: %s before the write at position %d was sent; it was not written", notSent, why, wr.req.Seq)
		}
		p.finish(wr, err)
	}
	for _, a := range p.queued {
		p.complete(a, fmt.Errorf("%w: %s before the append at position %d was sent; it was not written", notSent, why, a.seq))
	}
	p.queued = nil
	p.nextSeq = p.w.NextSeq()
}

// finish completes every append of wr, once.
func (p *Pipeline) finish(wr *pipeWrite, err error) {
	if wr.state == wDone {
		return
	}
	wr.state = wDone
	delete(p.byID, wr.id)
	p.writes = slices.DeleteFunc(p.writes, func(x *pipeWrite) bool { return x == wr })
	p.sendq = slices.DeleteFunc(p.sendq, func(x *pipeWrite) bool { return x == wr })
	for _, a := range wr.appends {
		p.complete(a, err)
	}
	p.scan()
	p.assertInvariants()
}

// complete settles one append.
func (p *Pipeline) complete(a *pipeAppend, err error) {
	p.completions = append(p.completions, Completion{ID: a.id, Seq: a.seq, Err: err})
	p.appends--
	if err != nil && p.failed == nil {
		p.failed = err
	}
}

// assertInvariants checks the field invariants; a failure is a bug here.
func (p *Pipeline) assertInvariants() {
	if p.appends < 0 || p.out < 0 || len(p.writes) > WritesInFlightMax || p.appends > WindowMax {
		panic(fmt.Sprintf("client: pipeline with %d appends, %d writes, %d out", p.appends, len(p.writes), p.out))
	}
	for i := 1; i < len(p.writes); i++ {
		if p.writes[i].req.Seq <= p.writes[i-1].req.Seq {
			panic(fmt.Sprintf("client: writes in flight out of order: %d after %d", p.writes[i].req.Seq, p.writes[i-1].req.Seq))
		}
	}
	if len(p.queued) > 0 && len(p.writes) > 0 {
		last := p.writes[len(p.writes)-1]
		if p.queued[0].seq < last.req.Seq+journal.Seq(len(last.req.Records)) {
			panic(fmt.Sprintf("client: an append queued at %d inside the write at %d", p.queued[0].seq, last.req.Seq))
		}
	}
}
