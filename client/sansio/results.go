package sansio

import (
	"fmt"

	"github.com/parosdb/paros/core/journal"
)

// ResultKind names what a reply to a Write, SetLeader or Truncate means for
// the Writer that sent it. Each result type documents which kinds it can
// carry.
type ResultKind uint8

const (
	// ResultInvalid is the zero value; no Absorb method returns it.
	ResultInvalid ResultKind = iota
	// ResultWritten: the write's records occupy [Seq, Seq+Count).
	ResultWritten
	// ResultDuplicate: an earlier identical attempt of this write landed at Seq;
	// it means exactly what ResultWritten means.
	ResultDuplicate
	// ResultWon: the claim won; the writer holds the fence.
	ResultWon
	// ResultTrimmed: the truncation was decided; View.FirstSeq is the floor.
	ResultTrimmed
	// ResultSuperseded: a verdict named another leader (Leader). The writer
	// stopped.
	ResultSuperseded
	// ResultRefused: a write did not fit the tail (resend it after the earlier
	// writes settle), or a claim lost its compare-and-set to Leader.
	ResultRefused
	// ResultBelowFloor: the write's position is below the floor; ambiguous, and
	// not retryable.
	ResultBelowFloor
	// ResultRetry: ambiguous. Resend the identical request.
	ResultRetry
	// ResultRedirect: the server does not lead consensus; nothing was proposed.
	// Resend the identical request to Hint (0: any other server).
	ResultRedirect
	// ResultBusy: nothing was proposed; back off and resend the identical request.
	ResultBusy
	// ResultTooLarge: the batch breaks a server's write limits; nothing was
	// proposed.
	ResultTooLarge
	// ResultUnknownJournal: the server does not serve the journal; nothing was
	// proposed.
	ResultUnknownJournal
	// ResultWrongMode: the call does not fit the journal's writer mode. The
	// writer stopped.
	ResultWrongMode
	// ResultStale: the reply answers a request this writer no longer waits for.
	// It is ignored.
	ResultStale
	// ResultDeleted: the journal was deleted; nothing was proposed and the
	// writer stopped.
	ResultDeleted
)

var resultKindNames = [...]string{"invalid", "written", "duplicate", "won", "trimmed", "superseded",
	"refused", "below-floor", "retry", "redirect", "busy", "too-large", "unknown-journal", "wrong-mode", "stale", "deleted"}

func (k ResultKind) String() string {
	if int(k) < len(resultKindNames) {
		return resultKindNames[k]
	}
	return fmt.Sprintf("result(%d)", uint8(k))
}

// err maps a kind to its sentinel error (nil for a success).
func (k ResultKind) err() error {
	switch k {
	case ResultWritten, ResultDuplicate, ResultWon, ResultTrimmed:
		return nil
	case ResultSuperseded:
		return ErrSuperseded
	case ResultRefused:
		return ErrRefused
	case ResultBelowFloor:
		return ErrBelowFloor
	case ResultRetry:
		return ErrAmbiguous
	case ResultRedirect:
		return ErrNotLeader
	case ResultBusy:
		return ErrBusy
	case ResultTooLarge:
		return ErrTooLarge
	case ResultUnknownJournal:
		return ErrUnknownJournal
	case ResultWrongMode:
		return ErrWrongMode
	case ResultStale:
		return ErrStale
	case ResultDeleted:
		return ErrJournalDeleted
	}
	panic(fmt.Sprintf("client: no error for result kind %s", k))
}

// noVerdictKind maps a reply without an outcome to a result kind: NotLeader
// is a redirect, ResultBusy and ResultTooLarge and ResultUnknownJournal are their own kinds
// (nothing was proposed), and everything else — no answer at all, a lost
// proposal, an unavailable server — is ambiguous.
func noVerdictKind(r journal.Reply) ResultKind {
	switch r.NoVerdict {
	case journal.NotLeader:
		return ResultRedirect
	case journal.Busy:
		return ResultBusy
	case journal.TooLarge:
		return ResultTooLarge
	case journal.UnknownJournal:
		return ResultUnknownJournal
	case journal.Deleted:
		return ResultDeleted
	}
	return ResultRetry
}

// WriteResult is what AbsorbWrite made of one reply to a Write. Kinds:
//
//	ResultWritten, ResultDuplicate  Seq, Count: the records occupy [Seq, Seq+Count)
//	ResultSuperseded          Leader: the writer in force; the writer stopped
//	ResultRefused             View: the write does not fit the tail yet; resend it
//	                    identically after the earlier writes settle
//	ResultBelowFloor           View: below the floor; ambiguous, not retryable
//	ResultRetry               ambiguous: resend the identical request
//	ResultRedirect, ResultBusy      Hint: nothing was proposed; resend the identical request
//	ResultTooLarge            nothing was proposed; the request stays in flight
//	ResultUnknownJournal      nothing was proposed; ask another server
//	ResultWrongMode           the journal has the other writer mode; the writer stopped
//	ResultStale               not a request this writer waits for: ignored
type WriteResult struct {
	Kind   ResultKind
	Seq    journal.Seq
	Count  uint64
	Leader journal.LeaderUUID
	Hint   uint64
	View   journal.View
}

// Err is nil for ResultWritten and ResultDuplicate, else the kind's sentinel error
// (ErrAmbiguous for ResultRetry) wrapped with detail.
func (r WriteResult) Err() error {
	if e := r.Kind.err(); e != nil {
		return fmt.Errorf("%w (write: %s)", e, r)
	}
	return nil
}

func (r WriteResult) String() string {
	switch r.Kind {
	case ResultWritten, ResultDuplicate:
		return fmt.Sprintf("%s[%d,+%d)", r.Kind, r.Seq, r.Count)
	case ResultSuperseded:
		return fmt.Sprintf("superseded by %s", r.Leader)
	case ResultRedirect, ResultBusy:
		return fmt.Sprintf("%s (hint %d)", r.Kind, r.Hint)
	case ResultRefused, ResultBelowFloor:
		return fmt.Sprintf("%s (next %d, first %d)", r.Kind, r.View.NextSeq, r.View.FirstSeq)
	}
	return r.Kind.String()
}

// ClaimResult is what AbsorbClaim made of one reply to a SetLeader. Kinds:
//
//	ResultWon             View: the state after the claim; Earlier is true when the
//	                reply was a refusal naming this very claim's uuid (an
//	                earlier ambiguous attempt of it won)
//	ResultRefused         Leader: the leader in force, now believed; not holding
//	ResultRetry           ambiguous: resend the identical SetLeader
//	ResultRedirect, ResultBusy  Hint: nothing was proposed; resend the identical SetLeader
//	ResultUnknownJournal  nothing was proposed; ask another server
//	ResultWrongMode       a multi-writer journal; the writer stopped
//	ResultStale           not the claim in flight: ignored
type ClaimResult struct {
	Kind    ResultKind
	Leader  journal.LeaderUUID
	Earlier bool
	Hint    uint64
	View    journal.View
}

// Err is nil for ResultWon, else the kind's sentinel error wrapped with detail.
func (r ClaimResult) Err() error {
	if e := r.Kind.err(); e != nil {
		return fmt.Errorf("%w (claim: %s, leader %s)", e, r.Kind, r.Leader)
	}
	return nil
}

// TruncateResult is what AbsorbTruncate made of one reply to a Truncate.
// Kinds:
//
//	ResultTrimmed         View: View.FirstSeq is the journal's floor now
//	ResultSuperseded      Leader: the writer in force; the writer stopped
//	ResultRetry           ambiguous: resend (a truncation is idempotent)
//	ResultRedirect, ResultBusy  Hint: nothing was proposed; resend
//	ResultUnknownJournal  nothing was proposed; ask another server
//	ResultWrongMode       the journal has the other writer mode; the writer stopped
//	ResultStale           fenced by a uuid this writer no longer holds: ignored
type TruncateResult struct {
	Kind   ResultKind
	Leader journal.LeaderUUID
	Hint   uint64
	View   journal.View
}

// Err is nil for ResultTrimmed, else the kind's sentinel error wrapped with detail.
func (r TruncateResult) Err() error {
	if e := r.Kind.err(); e != nil {
		return fmt.Errorf("%w (truncate: %s)", e, r.Kind)
	}
	return nil
}
