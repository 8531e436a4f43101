package client

import (
	"errors"

	"github.com/parosdb/paros/client/sansio"
)

// Error classes, one value each across the library (the sans-IO types in
// client/sansio return the same values). Test them with errors.Is; every
// error the library returns wraps at most one of them with detail. The
// package doc's table says which calls return which and what to do.
var (
	// ErrAmbiguous: the call may or may not have taken effect.
	ErrAmbiguous = sansio.ErrAmbiguous
	// ErrSuperseded: a verdict named another leader; the Writer stopped.
	ErrSuperseded = sansio.ErrSuperseded
	// ErrUnknownJournal: no server serves the journal; nothing was proposed.
	ErrUnknownJournal = sansio.ErrUnknownJournal
	// ErrBelowFloor: the position is below the journal's floor (ambiguous
	// for a write, and final).
	ErrBelowFloor = sansio.ErrBelowFloor
	// ErrNotLeader: no server would lead consensus within the call's
	// rounds (redirects are followed first); nothing was proposed.
	ErrNotLeader = sansio.ErrNotLeader
	// ErrBusy: the leader's proposal queue stayed full; nothing was proposed.
	ErrBusy = sansio.ErrBusy
	// ErrRefused: a claim kept losing its compare-and-set to other claimers.
	ErrRefused = sansio.ErrRefused
	// ErrTooLarge: the batch breaks a write limit; nothing was proposed.
	ErrTooLarge = sansio.ErrTooLarge
	// ErrWrongMode: the call does not fit the journal's writer mode.
	ErrWrongMode = sansio.ErrWrongMode
	// ErrJournalDeleted: the journal was deleted; no call to it will ever
	// succeed.
	ErrJournalDeleted = sansio.ErrJournalDeleted
	// ErrNotHolding: the Writer holds no fence (Claim first).
	ErrNotHolding = sansio.ErrNotHolding
	// ErrEmptyBatch: an append needs at least one record.
	ErrEmptyBatch = sansio.ErrEmptyBatch
	// ErrStale: a Claim on the same Writer replaced this call's fence.
	ErrStale = sansio.ErrStale
	// ErrClosed: the Writer was closed.
	ErrClosed = sansio.ErrClosed
)

// ErrUnavailable: no server could serve a linearizable read within the
// call's rounds (a cell without a quorum, say). A read has no effect:
// call again.
var ErrUnavailable = errors.New("paros/client: no server could serve the read")
