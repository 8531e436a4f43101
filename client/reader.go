package client

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/parosdb/paros/client/sansio"
	"github.com/parosdb/paros/core/journal"
)

// Record is one record of a journal and its position.
type Record struct {
	Seq  journal.Seq
	Data []byte
}

// GapError reports that positions [From, To) were truncated before the
// reader got to them. The reader's cursor moved to To: reading goes on
// after the hole, which a folder must treat as such (checkpoint.Folder's
// Jump). A gap is never skipped silently.
type GapError struct {
	From, To journal.Seq
}

func (e *GapError) Error() string {
	return fmt.Sprintf("paros/client: gap: positions [%d, %d) were truncated; resuming at %d", e.From, e.To, e.To)
}

// Reader reads one journal in order from a cursor, over any server that
// can serve a linearizable read; it never moves back. Its decisions are
// the sans-IO sansio.Reader's (the simulator drives the same type). Reads
// have no effect on the journal, so nothing about them is ambiguous.
//
// A Reader is not safe for concurrent use.
type Reader struct {
	j      *Journal
	r      *sansio.Reader
	limit  uint32
	waitMs uint32
	tail   journal.Seq // Tail
}

// NewReader returns a reader of this journal whose cursor is at from (a
// position below journal.FirstSeq is read as FirstSeq).
func (j *Journal) NewReader(from journal.Seq, opts ...ReaderOption) *Reader {
	r := &Reader{j: j, r: sansio.NewReader(j.id, from), waitMs: 1000}
	for _, opt := range opts {
		opt(r)
	}
	return r
}

// Cursor is the next position the reader needs.
func (r *Reader) Cursor() journal.Seq { return r.r.Cursor() }

// Tail is the highest next position (the journal's tail) a page this
// reader read named; 0 before the first. Cursor() >= Tail() means the
// reader has read everything the journal held when it last answered.
func (r *Reader) Tail() journal.Seq { return r.tail }

// Next reads the page at the cursor and moves the cursor past it. The page
// holds at least one record unless the tail wait passed with nothing new
// (an empty page, nil error).
//
// Errors: a *GapError when the positions at the cursor were truncated (the
// cursor moved past them: call Next again to read on); ErrUnavailable when
// no server could serve the read within the call's rounds, ErrUnknownJournal
// when no server serves the journal, the context's error or ErrNoServer
// when no server answered (the cursor did not move: call Next again).
func (r *Reader) Next(ctx context.Context) ([]Record, error) {
	req := r.r.Request(r.limit, r.waitMs)
	rep, err := r.j.Read(ctx, req)
	if err != nil {
		return nil, err
	}
	out := r.r.Absorb(req, rep)
	switch out.Kind {
	case sansio.ReadRecords:
		r.tail = max(r.tail, out.View.NextSeq)
		recs := make([]Record, len(out.Records))
		for i, d := range out.Records {
			recs[i] = Record{Seq: out.From + journal.Seq(i), Data: d}
		}
		return recs, nil
	case sansio.ReadGap:
		r.tail = max(r.tail, out.View.NextSeq)
		return nil, &GapError{From: out.From, To: out.ResumedAt}
	case sansio.ReadUnknownJournal:
		return nil, fmt.Errorf("%w: %s", ErrUnknownJournal, r.j.id)
	case sansio.ReadDeleted:
		return nil, fmt.Errorf("%w: %s", ErrJournalDeleted, r.j.id)
	}
	return nil, fmt.Errorf("%w: %s at position %d", ErrUnavailable, r.j.id, req.FromSeq)
}

// Records iterates over the journal's records from the cursor, following
// the tail until ctx ends or the loop breaks:
//
//	for rec, err := range r.Records(ctx) {
//		var gap *client.GapError
//		switch {
//		case errors.As(err, &gap): // positions were truncated; reading goes on
//		case err != nil: return err
//		default: fold(rec)
//		}
//	}
//
// A gap is yielded as a *GapError and the iteration goes on after it;
// ErrUnavailable and ErrNoServer are retried after a pause; any other
// error (ErrUnknownJournal, the context's) is yielded and ends it.
func (r *Reader) Records(ctx context.Context) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		d := backoffMin
		for {
			recs, err := r.Next(ctx)
			var gap *GapError
			switch {
			case err == nil:
				d = backoffMin
				for _, rec := range recs {
					if !yield(rec, nil) {
						return
					}
				}
			case errors.As(err, &gap):
				if !yield(Record{}, gap) {
					return
				}
			case ctx.Err() == nil && (errors.Is(err, ErrUnavailable) || errors.Is(err, ErrNoServer)):
				var perr error
				if d, perr = pause(ctx, d); perr != nil {
					yield(Record{}, perr)
					return
				}
			default:
				yield(Record{}, err)
				return
			}
		}
	}
}
