package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/sansio"
	"github.com/parosdb/paros/core/journal"
)

// port is everything an Election asks of its journal. The network one is
// journalPort; the unit tests drive an Election over an in-memory log.
// Next is called by one goroutine at a time; Append and Truncate may be
// called concurrently with it.
type port interface {
	// Append appends one record at the tail of the multi-writer journal
	// and returns its position (client.Appender.Append: ErrAmbiguous when
	// it may have landed).
	Append(ctx context.Context, rec []byte) (journal.Seq, error)
	// Next reads the page at the cursor, long-polling the tail up to wait,
	// and moves the cursor past it; an empty page means the cursor is at
	// the tail. Errors as client.Reader.Next: a *client.GapError when the
	// positions at the cursor were truncated (the cursor moved past them).
	Next(ctx context.Context, wait time.Duration) ([]client.Record, error)
	// Truncate drops every position below upTo, unfenced (a multi-writer
	// journal lets anyone truncate), and returns the journal's floor.
	Truncate(ctx context.Context, upTo journal.Seq) (journal.Seq, error)
}

// journalPort is the port over a cell: an Appender, a sans-IO reader
// whose long-poll is chosen per read (client.Reader fixes it at
// construction), and the Journal handle's raw Truncate.
type journalPort struct {
	j *client.Journal
	a *client.Appender
	r *sansio.Reader
}

func newJournalPort(j *client.Journal) *journalPort {
	return &journalPort{j: j, a: j.NewAppender(), r: sansio.NewReader(j.ID(), journal.FirstSeq)}
}

func (p *journalPort) Append(ctx context.Context, rec []byte) (journal.Seq, error) {
	return p.a.Append(ctx, rec)
}

// Next is client.Reader.Next with the long-poll given per call.
func (p *journalPort) Next(ctx context.Context, wait time.Duration) ([]client.Record, error) {
	req := p.r.Request(0, uint32(min(max(wait, 0), readWaitMax).Milliseconds()))
	rep, err := p.j.Read(ctx, req)
	if err != nil {
		return nil, err
	}
	out := p.r.Absorb(req, rep)
	switch out.Kind {
	case sansio.ReadRecords:
		recs := make([]client.Record, len(out.Records))
		for i, d := range out.Records {
			recs[i] = client.Record{Seq: out.From + journal.Seq(i), Data: d}
		}
		return recs, nil
	case sansio.ReadGap:
		return nil, &client.GapError{From: out.From, To: out.ResumedAt}
	case sansio.ReadUnknownJournal:
		return nil, fmt.Errorf("%w: %s", client.ErrUnknownJournal, p.j.ID())
	}
	return nil, fmt.Errorf("%w: %s at position %d", client.ErrUnavailable, p.j.ID(), req.FromSeq)
}

// Truncate sends an unfenced Truncate, judged by a multi-writer sans-IO
// writer (client.Appender has no Truncate; the journal's rules let any
// caller truncate a multi-writer journal). An ambiguous truncation is
// resent until a verdict: it only ever raises the floor.
func (p *journalPort) Truncate(ctx context.Context, upTo journal.Seq) (journal.Seq, error) {
	w := sansio.NewMultiWriter(p.j.ID())
	req, err := w.Truncate(upTo)
	if err != nil {
		return 0, err
	}
	for {
		reply, err := p.j.Truncate(ctx, req)
		if err != nil {
			return 0, err
		}
		res := w.AbsorbTruncate(req, reply)
		switch res.Kind {
		case sansio.ResultTrimmed:
			return res.View.FirstSeq, nil
		case sansio.ResultWrongMode, sansio.ResultSuperseded, sansio.ResultStale:
			return 0, res.Err()
		}
		// Retry (ambiguous), Redirect, Busy, UnknownJournal: resend the
		// identical truncation after a pause.
		if err := sleep(ctx, retryPause); err != nil {
			return 0, errors.Join(res.Err(), err)
		}
	}
}

// sleep waits d or until ctx ends (its error).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
