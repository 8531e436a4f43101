package main

import (
	"errors"
	"fmt"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
)

// outcomeNames are the words a verdict line starts with: the protocol's
// outcome names in lower case, except that the writer's uuid is the fence
// (LeaderSet is fence_set): "leader" is only ever the consensus leader.
var outcomeNames = map[journal.OutcomeKind]string{
	journal.Accepted: "accepted", journal.Duplicate: "duplicate", journal.Refused: "refused",
	journal.BelowFloor: "below_floor", journal.LeaderSet: "fence_set", journal.LeaderRefused: "fence_refused",
	journal.Trimmed: "trimmed", journal.TruncateRefused: "truncate_refused", journal.WrongMode: "wrong_mode",
	journal.NoopDone: "noop", journal.Unheld: "unheld",
}

// noVerdictNames name why a reply carries no outcome.
var noVerdictNames = map[journal.NoVerdict]string{
	journal.VerdictGiven: "none", journal.NotLeader: "not_leader", journal.UnknownJournal: "unknown_journal",
	journal.TooLarge: "too_large", journal.Lost: "lost", journal.Unavailable: "unavailable", journal.Busy: "busy",
}

// verdictLine is the line printed for the reply to a Write, Truncate or
// SetLeader, and the exit code it means:
//
//	reply                                   line                                 exit
//	--------------------------------------  -----------------------------------  ----
//	Accepted, Duplicate                     <outcome> seq=S count=C <state>      0
//	LeaderSet (fence_set), Trimmed, Noop    <outcome> <state>                    0
//	no verdict, ambiguous (Lost, ...)       ambiguous (<why>): ...               4
//	Unheld                                  ambiguous (unheld): ...              4
//	no verdict, nothing proposed (*)        refused: <why>                       3
//	any other outcome (Refused, ...)        <outcome> <state>                    3
//
// where <state> is "fence=U next_seq=N first_seq=F", the view the verdict
// carries. (*) settle turns these (NotLeader, Busy, UnknownJournal,
// TooLarge) into errors first, as parosctl always reported them.
func verdictLine(r journal.Reply) (string, int) {
	v := r.Outcome.View
	state := fmt.Sprintf("fence=%s next_seq=%d first_seq=%d", formatUUID(v.Leader), v.NextSeq, v.FirstSeq)
	name := outcomeNames[r.Outcome.Kind]
	switch r.Outcome.Kind {
	case journal.Accepted, journal.Duplicate:
		return fmt.Sprintf("%s seq=%d count=%d %s", name, r.Outcome.Seq, r.Outcome.Count, state), exitOK
	case journal.LeaderSet, journal.Trimmed, journal.NoopDone:
		return fmt.Sprintf("%s %s", name, state), exitOK
	case journal.OutcomeInvalid:
		if r.Ambiguous() {
			return fmt.Sprintf("ambiguous (%s): the call may still take effect; retry it identically", noVerdictNames[r.NoVerdict]), exitAmbiguous
		}
		return fmt.Sprintf("refused: %s", noVerdictNames[r.NoVerdict]), exitRefused
	case journal.Unheld:
		return "ambiguous (unheld): this server cannot tell duplicate from refused", exitAmbiguous
	}
	return fmt.Sprintf("%s %s", name, state), exitRefused
}

// settle maps a raw call's answer to its verdict line and exit code, or
// to the error of a call that got no verdict worth a line.
func settle(id journal.ID, r journal.Reply, err error) (string, int, error) {
	if err != nil {
		return "", 0, callError(err)
	}
	if err := unproposed(r, id); err != nil {
		return "", 0, err
	}
	line, code := verdictLine(r)
	return line, code, nil
}

// exitWith is nil for exitOK, else the exit error whose message is line.
func exitWith(code int, line string) error {
	if code == exitOK {
		return nil
	}
	return exitError{code, errors.New(line)}
}

// unproposed is the error for a reply that proposed nothing because every
// server kept refusing the call until the Journal handle gave up (no
// leader, a busy leader, a journal no server serves, a batch over the
// limits); nil for a verdict or an ambiguous reply, which verdictLine
// prints.
func unproposed(r journal.Reply, id journal.ID) error {
	if r.Outcome.Kind != journal.OutcomeInvalid {
		return nil
	}
	switch r.NoVerdict {
	case journal.NotLeader, journal.Busy:
		return fail(exitRefused, "no server leads the journal right now (%s; nothing was proposed)", noVerdictNames[r.NoVerdict])
	case journal.UnknownJournal:
		return fail(exitRefused, "%v: %s", client.ErrUnknownJournal, id)
	case journal.TooLarge:
		return fail(exitRefused, "TOO_LARGE: a write carries at most %d records and %d bytes",
			journal.WriteRecordsMax, journal.WriteBytesMax)
	}
	return nil
}

// callError maps the error of a client call to an exit code: a journal no
// server serves and a read no server could serve are refusals (3); no
// answer at all, within the timeout, is unreachable (1).
func callError(err error) error {
	switch {
	case errors.Is(err, client.ErrUnknownJournal):
		return fail(exitRefused, "%v", err)
	case errors.Is(err, client.ErrUnavailable):
		return fail(exitRefused, "no server served the read: %v", err)
	case errors.Is(err, client.ErrDenied):
		return deniedError(err)
	}
	// ErrNoServer, or the context's error: nothing was received.
	return fail(exitUnreachable, "no server answered: %v", err)
}
