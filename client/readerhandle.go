package client

import (
	"context"

	"github.com/parosdb/paros/core/journal"
)

// ReaderHandle is a reader of one journal over the network: the sans-IO
// Reader's cursor, each read sent through a Journal handle (which asks
// another server when one does not serve). Nothing about a read is
// ambiguous: a read has no effect on the journal.
//
// A ReaderHandle is not safe for concurrent use.
type ReaderHandle struct {
	j *Journal
	r *Reader
}

// NewReader returns a reader of this journal whose cursor is at from (a
// position below journal.FirstSeq is read as FirstSeq).
func (j *Journal) NewReader(from journal.Seq) *ReaderHandle {
	return &ReaderHandle{j: j, r: NewReader(j.id, from)}
}

// Cursor is the next position the reader needs.
func (h *ReaderHandle) Cursor() journal.Seq { return h.r.Cursor() }

// Next reads the page at the cursor: at most limit records (0: the
// server's page size), long-polling the tail up to waitMs, and moves the
// cursor. The outcome's Kind says what happened:
//
//	ReadRecords         Records sit at [From, Next()); an empty page means the
//	                    long-poll ended at the tail
//	ReadGap             [From, ResumedAt) was truncated before this reader got
//	                    to it; the cursor moved to ResumedAt. Never silent: a
//	                    folder must treat what follows as coming after a hole
//	ReadUnavailable     no server served the read within the handle's rounds;
//	                    the cursor did not move: call Next again
//	ReadUnknownJournal  no server serves the journal; the cursor did not move
//
// The error is non-nil only when no server answered at all (the
// context's error, or ErrNoServer); the outcome is then ReadUnavailable.
func (h *ReaderHandle) Next(ctx context.Context, limit, waitMs uint32) (ReaderOutcome, error) {
	req := h.r.Request(limit, waitMs)
	rep, err := h.j.Read(ctx, req)
	if err != nil {
		return ReaderOutcome{Kind: ReadUnavailable, From: req.FromSeq}, err
	}
	return h.r.Absorb(req, rep), nil
}
