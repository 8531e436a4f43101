package client

import (
	"context"
	"sync"

	"github.com/parosdb/paros/client/sansio"
	"github.com/parosdb/paros/core/journal"
)

// Appender writes to a multi-writer journal, where any number of clients
// append at the tail and the journal places each write. It is
// at-least-once: a write whose answer was lost is ambiguous, and resending
// it may append the records twice, so Append returns ErrAmbiguous instead
// of resending it. (Redirects and busy leaders, where nothing was proposed,
// are followed and retried by the Journal handle.) An application that
// needs exactly-once writes uses a single-writer journal and its Writer.
//
// An Appender is safe for concurrent use.
type Appender struct {
	j  *Journal
	mu sync.Mutex
	w  *sansio.Writer
}

// NewAppender returns an appender of this multi-writer journal.
func (j *Journal) NewAppender() *Appender {
	return &Appender{j: j, w: sansio.NewMultiWriter(j.id)}
}

// Append appends records at the journal's tail and returns the position of
// the first. Errors: ErrEmptyBatch and ErrTooLarge (nothing was sent),
// ErrAmbiguous (the write may have landed; resending may append it twice),
// ErrWrongMode on a single-writer journal, ErrNotLeader, ErrBusy or
// ErrUnknownJournal when no server would take it within the call's rounds
// (nothing was proposed), the context's error or ErrNoServer when no
// server answered.
func (a *Appender) Append(ctx context.Context, records ...[]byte) (journal.Seq, error) {
	a.mu.Lock()
	req, err := a.w.Next(records)
	a.mu.Unlock()
	if err != nil {
		return 0, err
	}
	reply, err := a.j.Write(ctx, req)
	if err != nil {
		return 0, err
	}
	a.mu.Lock()
	res := a.w.AbsorbWrite(req, reply)
	a.mu.Unlock()
	if err := res.Err(); err != nil {
		return 0, err
	}
	return res.Seq, nil
}
