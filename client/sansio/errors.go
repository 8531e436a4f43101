package sansio

import "errors"

// Errors the client's results map to. Each result type's Err method returns
// one of these (wrapped with detail) or nil; test them with errors.Is.
var (
	// ErrAmbiguous: the call may or may not have taken effect (no answer,
	// a lost proposal, an unavailable server, a node that no longer holds the
	// prefix). Resend the identical request; for a fenced write at the same
	// position, the journal answers Duplicate if the earlier attempt landed.
	ErrAmbiguous = errors.New("paros/client: ambiguous outcome; resend the identical request")
	// ErrSuperseded: a verdict named another leader. The writer stops; every
	// later Next and Truncate returns this error until Claim is called.
	ErrSuperseded = errors.New("paros/client: superseded by another writer")
	// ErrUnknownJournal: the server does not serve the journal. Nothing was
	// proposed; another server may serve it.
	ErrUnknownJournal = errors.New("paros/client: unknown journal")
	// ErrJournalDeleted: the journal was deleted (the cell's registry holds
	// its tombstone). Nothing was proposed, and no call to it will ever
	// succeed.
	ErrJournalDeleted = errors.New("paros/client: journal deleted")
	// ErrBelowFloor: the write's position is below the journal's floor, so the
	// log can no longer say whether it landed (ambiguous, and not retryable).
	ErrBelowFloor = errors.New("paros/client: position below the journal's floor")
	// ErrNotLeader: the server does not lead consensus; nothing was proposed.
	// Resend the identical request to the hint.
	ErrNotLeader = errors.New("paros/client: not the consensus leader")
	// ErrBusy: the leader's proposal queue is full; nothing was proposed.
	// Back off and resend the identical request.
	ErrBusy = errors.New("paros/client: server busy")
	// ErrRefused: a fenced write did not fit the journal's tail (an earlier
	// write of this writer has not landed yet), or a claim lost its
	// compare-and-set.
	ErrRefused = errors.New("paros/client: refused")
	// ErrTooLarge: the batch breaks a write limit (the API's, checked by
	// Next, or a server's own, which may be lower).
	ErrTooLarge = errors.New("paros/client: batch too large")
	// ErrWrongMode: the call does not fit the journal's writer mode (a fenced
	// writer on a multi-writer journal or the reverse). The writer stops.
	ErrWrongMode = errors.New("paros/client: wrong writer mode for this journal")
	// ErrNotHolding: the writer holds no fence (never claimed, or a claim is
	// still in flight).
	ErrNotHolding = errors.New("paros/client: writer holds no fence")
	// ErrEmptyBatch: a write needs at least one record.
	ErrEmptyBatch = errors.New("paros/client: empty batch")
	// ErrInFlightFull: WritesInFlightMax writes are already waiting for a
	// verdict.
	ErrInFlightFull = errors.New("paros/client: too many writes in flight")
	// ErrStale: the reply answers a request the writer no longer waits for.
	ErrStale = errors.New("paros/client: stale reply")
	// ErrWindowFull: a Pipeline holds PipelineOptions.Window appends
	// outstanding; wait for a completion. The network Writer waits for you.
	ErrWindowFull = errors.New("paros/client: append window full")
	// ErrClosed: the writer was closed. A write in flight when it closed may
	// still land (its error also wraps ErrAmbiguous); an append not yet sent
	// was not written.
	ErrClosed = errors.New("paros/client: closed")
)
