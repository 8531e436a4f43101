package client

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
	// Written: the write's records occupy [Seq, Seq+Count).
	Written
	// Duplicate: an earlier identical attempt of this write landed at Seq;
	// it means exactly what Written means.
	Duplicate
	// Won: the claim won; the writer holds the fence.
	Won
	// Trimmed: the truncation was decided; View.FirstSeq is the floor.
	Trimmed
	// Superseded: a verdict named another leader (Leader). The writer
	// stopped.
	Superseded
	// Refused: a write did not fit the tail (resend it after the earlier
	// writes settle), or a claim lost its compare-and-set to Leader.
	Refused
	// Truncated: the write's position is below the floor; ambiguous, and
	// not retryable.
	Truncated
	// Retry: ambiguous. Resend the identical request.
	Retry
	// Redirect: the server does not lead consensus; nothing was proposed.
	// Resend the identical request to Hint (0: any other server).
	Redirect
	// Busy: nothing was proposed; back off and resend the identical request.
	Busy
	// TooLarge: the batch breaks a server's write limits; nothing was
	// proposed.
	TooLarge
	// UnknownJournal: the server does not serve the journal; nothing was
	// proposed.
	UnknownJournal
	// WrongMode: the call does not fit the journal's writer mode. The
	// writer stopped.
	WrongMode
	// Stale: the reply answers a request this writer no longer waits for.
	// It is ignored.
	Stale
)

var resultKindNames = [...]string{"invalid", "written", "duplicate", "won", "trimmed", "superseded",
	"refused", "truncated", "retry", "redirect", "busy", "too-large", "unknown-journal", "wrong-mode", "stale"}

func (k ResultKind) String() string {
	if int(k) < len(resultKindNames) {
		return resultKindNames[k]
	}
	return fmt.Sprintf("result(%d)", uint8(k))
}

// err maps a kind to its sentinel error (nil for a success).
func (k ResultKind) err() error {
	switch k {
	case Written, Duplicate, Won, Trimmed:
		return nil
	case Superseded:
		return ErrSuperseded
	case Refused:
		return ErrRefused
	case Truncated:
		return ErrTruncated
	case Retry:
		return ErrAmbiguous
	case Redirect:
		return ErrNotLeader
	case Busy:
		return ErrBusy
	case TooLarge:
		return ErrTooLarge
	case UnknownJournal:
		return ErrUnknownJournal
	case WrongMode:
		return ErrWrongMode
	case Stale:
		return ErrStale
	}
	panic(fmt.Sprintf("client: no error for result kind %s", k))
}

// noVerdictKind maps a reply without an outcome to a result kind: NotLeader
// is a redirect, Busy and TooLarge and UnknownJournal are their own kinds
// (nothing was proposed), and everything else — no answer at all, a lost
// proposal, an unavailable server — is ambiguous.
func noVerdictKind(r journal.Reply) ResultKind {
	switch r.NoVerdict {
	case journal.NotLeader:
		return Redirect
	case journal.Busy:
		return Busy
	case journal.TooLarge:
		return TooLarge
	case journal.UnknownJournal:
		return UnknownJournal
	}
	return Retry
}

// WriteResult is what AbsorbWrite made of one reply to a Write. Kinds:
//
//	Written, Duplicate  Seq, Count: the records occupy [Seq, Seq+Count)
//	Superseded          Leader: the writer in force; the writer stopped
//	Refused             View: the write does not fit the tail yet; resend it
//	                    identically after the earlier writes settle
//	Truncated           View: below the floor; ambiguous, not retryable
//	Retry               ambiguous: resend the identical request
//	Redirect, Busy      Hint: nothing was proposed; resend the identical request
//	TooLarge            nothing was proposed; the request stays in flight
//	UnknownJournal      nothing was proposed; ask another server
//	WrongMode           the journal has the other writer mode; the writer stopped
//	Stale               not a request this writer waits for: ignored
type WriteResult struct {
	Kind   ResultKind
	Seq    journal.Seq
	Count  uint64
	Leader journal.LeaderUUID
	Hint   uint64
	View   journal.View
}

// Err is nil for Written and Duplicate, else the kind's sentinel error
// (ErrAmbiguous for Retry) wrapped with detail.
func (r WriteResult) Err() error {
	if e := r.Kind.err(); e != nil {
		return fmt.Errorf("%w (write: %s)", e, r)
	}
	return nil
}

func (r WriteResult) String() string {
	switch r.Kind {
	case Written, Duplicate:
		return fmt.Sprintf("%s[%d,+%d)", r.Kind, r.Seq, r.Count)
	case Superseded:
		return fmt.Sprintf("superseded by %s", r.Leader)
	case Redirect, Busy:
		return fmt.Sprintf("%s (hint %d)", r.Kind, r.Hint)
	case Refused, Truncated:
		return fmt.Sprintf("%s (next %d, first %d)", r.Kind, r.View.NextSeq, r.View.FirstSeq)
	}
	return r.Kind.String()
}

// ClaimResult is what AbsorbClaim made of one reply to a SetLeader. Kinds:
//
//	Won             View: the state after the claim; Earlier is true when the
//	                reply was a refusal naming this very claim's uuid (an
//	                earlier ambiguous attempt of it won)
//	Refused         Leader: the leader in force, now believed; not holding
//	Retry           ambiguous: resend the identical SetLeader
//	Redirect, Busy  Hint: nothing was proposed; resend the identical SetLeader
//	UnknownJournal  nothing was proposed; ask another server
//	WrongMode       a multi-writer journal; the writer stopped
//	Stale           not the claim in flight: ignored
type ClaimResult struct {
	Kind    ResultKind
	Leader  journal.LeaderUUID
	Earlier bool
	Hint    uint64
	View    journal.View
}

// Err is nil for Won, else the kind's sentinel error wrapped with detail.
func (r ClaimResult) Err() error {
	if e := r.Kind.err(); e != nil {
		return fmt.Errorf("%w (claim: %s, leader %s)", e, r.Kind, r.Leader)
	}
	return nil
}

// TruncateResult is what AbsorbTruncate made of one reply to a Truncate.
// Kinds:
//
//	Trimmed         View: View.FirstSeq is the journal's floor now
//	Superseded      Leader: the writer in force; the writer stopped
//	Retry           ambiguous: resend (a truncation is idempotent)
//	Redirect, Busy  Hint: nothing was proposed; resend
//	UnknownJournal  nothing was proposed; ask another server
//	WrongMode       the journal has the other writer mode; the writer stopped
//	Stale           fenced by a uuid this writer no longer holds: ignored
type TruncateResult struct {
	Kind   ResultKind
	Leader journal.LeaderUUID
	Hint   uint64
	View   journal.View
}

// Err is nil for Trimmed, else the kind's sentinel error wrapped with detail.
func (r TruncateResult) Err() error {
	if e := r.Kind.err(); e != nil {
		return fmt.Errorf("%w (truncate: %s)", e, r.Kind)
	}
	return nil
}
