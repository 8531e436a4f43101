package election

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
)

// Errors of an Election. Status.Ended wraps one of ErrDeposed, ErrResigned
// and ErrClosed once the Election can no longer lead.
var (
	// ErrClosed: Close was called.
	ErrClosed = errors.New("paros/election: closed")
	// ErrDeposed: the Election led and lost the leadership — the fold
	// shows another term or leader, no renewal landed within the lease, or
	// the journal refused the renewals for good.
	ErrDeposed = errors.New("paros/election: deposed")
	// ErrResigned: the Election led and resigned.
	ErrResigned = errors.New("paros/election: resigned")
	// ErrNotLeading: Resign or Govern by an Election that does not lead.
	ErrNotLeading = errors.New("paros/election: not leading")
	// ErrGoverned: Govern twice for one journal (two Writers with one uuid
	// would share a fence).
	ErrGoverned = errors.New("paros/election: the journal is governed already")
)

// Status is what an Election knows of the election.
type Status struct {
	// Term is the latest term its fold knows (0: none yet).
	Term Term
	// Leader leads Term (unset: no one does, or none is known yet) and
	// Interface is what it published.
	Leader    journal.LeaderUUID
	Interface string
	// Successor is the uuid the last leader named when it resigned, while
	// no one leads.
	Successor journal.LeaderUUID
	// Mine: this Election leads Term.
	Mine bool
	// Ended is why this Election can no longer lead (wrapping ErrDeposed,
	// ErrResigned or ErrClosed), nil while it may.
	Ended error
}

// Election is one candidacy in the election held on a multi-writer
// journal (see the package doc). Campaign follows the journal and stands
// when the leader is gone; the winner renews in the background until it
// resigns, is deposed or closes. It leads at most once.
//
// An Election is safe for concurrent use. Close it when done.
type Election struct {
	o    options
	p    port
	ctx  context.Context // lives until Close
	stop context.CancelFunc

	// campaignMu admits one Campaign at a time. The watch is owned by the
	// Campaign running, then by the lead loop.
	campaignMu sync.Mutex
	w          watch
	// campaigns counts the Campaign calls running, for Close to wait.
	campaigns sync.WaitGroup

	mu sync.Mutex
	// view is the election as the fold last showed it while anchored.
	view    Status
	status  Status
	changed chan struct{}
	// leading from a won Campaign until the Election is deposed, resigns
	// or closes; term is the term it won.
	leading  bool
	term     Term
	ended    error
	closed   bool
	stopLead context.CancelFunc
	leadDone chan struct{}
	governed map[journal.ID]bool
}

// watch is the reading side: the fold, the reader's position relative to
// the tail, and the watcher's clocks.
type watch struct {
	fold Fold
	// caughtUp: the last read returned an empty page (the tail).
	caughtUp bool
	// floor is the lowest position the reader knows to be held.
	floor journal.Seq
	// since is when this watcher last saw the leadership proven or ended
	// (a win, a renewal, a resignation), or started watching.
	since time.Time
	// jitter is drawn once per since (jittered false until then).
	jitter   time.Duration
	jittered bool
	// campaignedFor is the term of this candidate's latest campaign,
	// campaignAt when that append started, firstAt when the first for the
	// same term did.
	campaignedFor       Term
	campaignAt, firstAt time.Time
	// holdUntil delays the next campaign after one that sent nothing.
	holdUntil time.Time
}

// New returns a candidate in the election held on the multi-writer journal
// journalID of c. It does nothing until Campaign.
func New(c *client.Client, journalID journal.ID, opts ...Option) *Election {
	return newElection(newJournalPort(c.Journal(journalID)), opts...)
}

func newElection(p port, opts ...Option) *Election {
	o := options{lease: DefaultLease, renewEvery: DefaultRenewEvery, compactAfter: DefaultCompactAfter}
	for _, opt := range opts {
		opt(&o)
	}
	if o.lease <= 0 {
		o.lease = DefaultLease
	}
	if o.renewEvery <= 0 || o.renewEvery >= o.lease {
		o.renewEvery = o.lease / 3
	}
	if !o.uuid.IsSet() {
		o.uuid = client.RandomUUIDs()
	}
	o.compactAfter = max(o.compactAfter, 0)
	ctx, stop := context.WithCancel(context.Background())
	return &Election{o: o, p: p, ctx: ctx, stop: stop, changed: make(chan struct{}),
		w: watch{floor: journal.FirstSeq}, governed: map[journal.ID]bool{}}
}

// UUID is this Election's candidate uuid.
func (e *Election) UUID() journal.LeaderUUID { return e.o.uuid }

// Status is a snapshot of what the Election knows. It changes while
// Campaign runs and while the Election leads; otherwise it is the last
// state seen.
func (e *Election) Status() Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.status
}

// Changed returns a channel closed at the next change of Status.
func (e *Election) Changed() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.changed
}

// Leading reports whether the Election leads (Status().Mine).
func (e *Election) Leading() bool { return e.Status().Mine }

// Campaign follows the election journal from its start and stands for the
// next term when no one leads, the leader resigned, or no renewal was seen
// for a lease (plus jitter; at once when a resigning leader named this
// Election its successor). It returns the term once this Election won it
// and leads (renewing in the background); while another wins, it keeps
// watching. Calling it again while leading returns the term.
//
// Errors: Status().Ended once the leadership ended (an Election leads at
// most once: make a new one to stand again), ErrClosed, the context's
// error, or an error the journal gives for good (client.ErrWrongMode on a
// single-writer journal, client.ErrUnknownJournal, client.ErrDenied,
// client.ErrTooLarge for an Interface too large to write).
func (e *Election) Campaign(ctx context.Context) (Term, error) {
	e.campaignMu.Lock()
	defer e.campaignMu.Unlock()
	e.mu.Lock()
	switch {
	case e.closed:
		e.mu.Unlock()
		return 0, ErrClosed
	case e.ended != nil:
		err := e.ended
		e.mu.Unlock()
		return 0, err
	case e.leading:
		t := e.term
		e.mu.Unlock()
		return t, nil
	}
	e.campaigns.Add(1) // under mu, after the closed check: before Close's Wait
	e.mu.Unlock()
	defer e.campaigns.Done()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(e.ctx, cancel)()
	w, me := &e.w, e.o.uuid
	if w.since.IsZero() {
		w.since = time.Now()
	}
	for {
		if err := ctx.Err(); err != nil {
			return 0, e.ctxErr(err)
		}
		now := time.Now()
		due := now.Add(readWaitMax)
		if w.caughtUp && w.fold.Anchored() {
			if l, _, ok := w.fold.Leader(); ok && l == me {
				return e.won()
			}
			due = w.due(&e.o, me)
			if !now.Before(due) {
				if err := e.campaign(ctx); err != nil {
					return 0, err
				}
				continue
			}
		}
		wait := min(max(time.Until(due), 0), readWaitMax)
		rctx, rcancel := context.WithTimeout(ctx, wait+e.o.renewEvery)
		_, err := e.readPage(rctx, wait)
		rcancel()
		switch {
		case ctx.Err() != nil:
			return 0, e.ctxErr(ctx.Err())
		case err != nil && fatal(err):
			return 0, err
		case err != nil:
			// Unavailable, no server, a read past its deadline: read
			// again after a pause (the lease clock keeps running).
			if err := sleep(ctx, retryPause); err != nil {
				return 0, e.ctxErr(err)
			}
		}
	}
}

// ctxErr is ErrClosed when the Election was closed, else err.
func (e *Election) ctxErr(err error) error {
	if e.ctx.Err() != nil {
		return ErrClosed
	}
	return err
}

// due is when this watcher campaigns for Term+1 (see Campaign).
func (w *watch) due(o *options, me journal.LeaderUUID) time.Time {
	if !w.jittered {
		w.jitter, w.jittered = 0, true
		if o.jitter != nil {
			w.jitter = max(o.jitter(), 0)
		}
	}
	var due time.Time
	_, _, leads := w.fold.Leader()
	switch s := w.fold.Successor(); {
	case leads || (s.IsSet() && s != me):
		due = w.since.Add(o.lease + w.jitter)
	case s == me:
		due = w.since
	default:
		due = w.since.Add(w.jitter)
	}
	if w.campaignedFor == w.fold.Term()+1 {
		// Stand again for the same term only after a lease without a
		// decision (the earlier append may not have landed).
		due = later(due, w.campaignAt.Add(o.lease))
	}
	return later(due, w.holdUntil)
}

// campaign appends a Campaign for Term+1.
func (e *Election) campaign(ctx context.Context) error {
	w := &e.w
	term := w.fold.Term() + 1
	start := time.Now()
	actx, cancel := context.WithTimeout(ctx, e.o.lease)
	_, err := e.p.Append(actx, CampaignRecord(term, e.o.uuid, e.o.iface))
	cancel()
	switch {
	case err == nil || errors.Is(err, client.ErrAmbiguous):
		if w.campaignedFor != term {
			w.firstAt = start
		}
		w.campaignedFor, w.campaignAt = term, start
		return nil
	case ctx.Err() != nil:
		return e.ctxErr(ctx.Err())
	case fatal(err):
		return fmt.Errorf("paros/election: campaign for term %d: %w", term, err)
	}
	// Nothing was sent (no leader, busy, no server): try again soon.
	w.holdUntil = time.Now().Add(e.o.renewEvery)
	return nil
}

// won starts leading the term the fold shows this Election won.
func (e *Election) won() (Term, error) {
	w := &e.w
	term := w.fold.Term()
	leaseFrom := w.firstAt
	if w.campaignedFor != term || leaseFrom.IsZero() {
		leaseFrom = time.Now()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return 0, ErrClosed
	}
	e.leading, e.term = true, term
	ctx, stop := context.WithCancel(e.ctx)
	e.stopLead, e.leadDone = stop, make(chan struct{})
	e.publishLocked()
	go e.lead(ctx, term, leaseFrom, e.leadDone)
	return term, nil
}

// lead renews term every RenewEvery while the fold shows this Election
// leading it and a renewal of its own landed within the lease; it
// compacts the journal, and deposes the Election when either fails.
func (e *Election) lead(ctx context.Context, term Term, leaseFrom time.Time, done chan struct{}) {
	defer close(done)
	w, o, me := &e.w, &e.o, e.o.uuid
	// sent holds when each renewal that landed was appended, until the
	// fold reaches its position.
	sent := map[journal.Seq]time.Time{}
	var nextRenew time.Time
	var own, compactTried journal.Seq
	for ctx.Err() == nil {
		if now := time.Now(); !now.Before(nextRenew) {
			actx, cancel := context.WithDeadline(ctx, later(leaseFrom.Add(o.lease), now.Add(o.renewEvery)))
			seq, err := e.p.Append(actx, RenewRecord(term, me, o.iface))
			cancel()
			switch {
			case err == nil:
				sent[seq] = now
				nextRenew = now.Add(o.renewEvery)
			case ctx.Err() != nil:
				return
			case fatal(err):
				e.depose(fmt.Errorf("%w: renewing term %d: %w", ErrDeposed, term, err))
				return
			default:
				// Ambiguous or not sent: renew again soon; the lease
				// decides.
				nextRenew = time.Now().Add(retryPause)
			}
		}
		wait := min(max(time.Until(nextRenew), 0), readWaitMax)
		rctx, cancel := context.WithTimeout(ctx, wait+o.renewEvery)
		evs, err := e.readPage(rctx, wait)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && fatal(err):
			e.depose(fmt.Errorf("%w: reading the election: %w", ErrDeposed, err))
			return
		case err != nil:
			// Unavailable, no server, a read past its deadline: the lease
			// decides whether this leader can go on.
			if sleep(ctx, retryPause) != nil {
				return
			}
		}
		for _, ev := range evs {
			if (ev.Kind == Renewed || ev.Kind == Adopted) && ev.Candidate == me && ev.Term == term {
				own = ev.Seq
				if t, ok := sent[ev.Seq]; ok && t.After(leaseFrom) {
					leaseFrom = t
				}
			}
		}
		for s := range sent {
			if s < w.floor || (len(evs) > 0 && s <= evs[len(evs)-1].Seq) {
				delete(sent, s)
			}
		}
		if w.fold.Anchored() {
			if l, _, ok := w.fold.Leader(); w.fold.Term() != term || !ok || l != me {
				by := "no one"
				if ok {
					by = l.String()
				}
				e.depose(fmt.Errorf("%w: term %d ended: the election is at term %d, led by %s", ErrDeposed, term, w.fold.Term(), by))
				return
			}
		}
		if time.Since(leaseFrom) > o.lease {
			e.depose(fmt.Errorf("%w: no renewal of term %d landed within the lease (%v)", ErrDeposed, term, o.lease))
			return
		}
		if o.compactAfter > 0 && own > compactTried && own >= w.floor+journal.Seq(o.compactAfter) {
			// A renewal the fold accepted is a restart point: a fold that
			// starts there resumes in the state every fold has after it.
			compactTried = own
			tctx, cancel := context.WithTimeout(ctx, o.renewEvery)
			if floor, err := e.p.Truncate(tctx, own); err == nil {
				w.floor = max(w.floor, floor)
			}
			cancel()
		}
	}
}

// readPage reads and folds one page (a gap jumps the fold) and publishes
// the state.
func (e *Election) readPage(ctx context.Context, wait time.Duration) ([]Event, error) {
	w := &e.w
	if !w.caughtUp {
		wait = 0
	}
	recs, err := e.p.Next(ctx, wait)
	var gap *client.GapError
	if errors.As(err, &gap) {
		w.fold.Jump()
		w.floor, w.caughtUp = gap.To, false
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	w.caughtUp = len(recs) == 0
	now := time.Now()
	evs := make([]Event, 0, len(recs))
	for _, r := range recs {
		ev := w.fold.Apply(r.Seq, r.Data)
		switch ev.Kind {
		case Elected, Renewed, Adopted, Resigned:
			w.since, w.jittered = now, false
		}
		evs = append(evs, ev)
	}
	if len(recs) > 0 && w.fold.Anchored() {
		l, iface, _ := w.fold.Leader()
		e.mu.Lock()
		e.view = Status{Term: w.fold.Term(), Leader: l, Interface: iface, Successor: w.fold.Successor()}
		e.publishLocked()
		e.mu.Unlock()
	}
	return evs, nil
}

// depose ends the leadership (the first reason sticks).
func (e *Election) depose(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended == nil {
		e.ended = err
	}
	e.leading = false
	e.publishLocked()
}

// publishLocked recomputes the status and wakes Changed when it moved.
func (e *Election) publishLocked() {
	s := e.view
	s.Mine = e.leading && e.ended == nil && s.Term == e.term && s.Leader == e.o.uuid
	s.Ended = e.ended
	if s != e.status {
		e.status = s
		close(e.changed)
		e.changed = make(chan struct{})
	}
}

// Resign ends the leadership: the renewals stop, then a Resign naming
// successor (unset: none) is appended. The Election no longer leads
// whatever the append's fate; if it did not land, the other watchers
// campaign once the lease runs out instead. A successor campaigns at once
// when it sees the Resign; the others wait a lease for it.
//
// Errors: ErrNotLeading (wrapping why, if the leadership ended), or the
// append's (client.ErrAmbiguous: it may have landed).
func (e *Election) Resign(ctx context.Context, successor journal.LeaderUUID) error {
	e.mu.Lock()
	if !e.leading || e.ended != nil {
		ended := e.ended
		e.mu.Unlock()
		if ended != nil {
			return fmt.Errorf("%w: %w", ErrNotLeading, ended)
		}
		return ErrNotLeading
	}
	term := e.term
	e.ended = fmt.Errorf("%w: term %d", ErrResigned, term)
	e.leading = false
	e.publishLocked()
	stop, done := e.stopLead, e.leadDone
	e.mu.Unlock()
	stop()
	<-done
	if _, err := e.p.Append(ctx, ResignRecord(term, e.o.uuid, successor)); err != nil {
		return fmt.Errorf("paros/election: the resignation of term %d (the lease runs out instead if it did not land): %w", term, err)
	}
	return nil
}

// Govern takes the single-writer journal j for this Election's term: it
// returns a Writer of j that claimed it with the Election's uuid as the
// fence (SetLeader(uuid, the leader in force), a takeover), so that every
// write of an earlier leader is refused from then on. The fence, not the
// lease, is what keeps two leaders from both writing: a deposed leader's
// Writer stops with client.ErrSuperseded at its next write.
//
// Govern once per journal and term. When the Writer stops with
// ErrSuperseded, the term is over for this Election: Close the Writer and
// do not Claim it again (its uuid source gives only the Election's uuid,
// and a Writer that won a claim draws a different one for the next: the
// client panics).
//
// Errors: ErrNotLeading, ErrGoverned, or the Claim's (the Writer is
// closed; Govern may be called again after an ambiguous claim: the new
// Writer resends the claim with the same uuid).
func (e *Election) Govern(ctx context.Context, j *client.Journal, opts ...client.WriterOption) (*client.Writer, error) {
	e.mu.Lock()
	switch {
	case !e.status.Mine:
		e.mu.Unlock()
		return nil, ErrNotLeading
	case e.governed[j.ID()]:
		e.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", ErrGoverned, j.ID())
	}
	e.governed[j.ID()] = true
	e.mu.Unlock()
	uuid := e.o.uuid
	w := j.NewWriter(append(opts[:len(opts):len(opts)], client.WithUUIDs(func() journal.LeaderUUID { return uuid }))...)
	if err := w.Claim(ctx); err != nil {
		w.Close()
		e.mu.Lock()
		delete(e.governed, j.ID())
		e.mu.Unlock()
		return nil, err
	}
	return w, nil
}

// Close stops the Election: Campaign returns ErrClosed, and a leader stops
// renewing (it does not resign: the others campaign once the lease runs
// out; Resign first for a prompt hand-over). It waits for the Election's
// goroutines.
func (e *Election) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	if e.ended == nil {
		e.ended = ErrClosed
	}
	e.leading = false
	e.publishLocked()
	done := e.leadDone
	e.mu.Unlock()
	e.stop()
	if done != nil {
		<-done
	}
	e.campaigns.Wait()
	return nil
}

// fatal reports whether a journal call's error is for good.
func fatal(err error) bool {
	return errors.Is(err, client.ErrWrongMode) || errors.Is(err, client.ErrUnknownJournal) ||
		errors.Is(err, client.ErrDenied) || errors.Is(err, client.ErrTooLarge)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
