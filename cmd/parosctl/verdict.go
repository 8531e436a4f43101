package main

import (
	"errors"
	"fmt"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
)

// outcomeNames are the words a verdict line starts with: the protocol's
// outcome names in lower case, as parosctl has always printed them.
var outcomeNames = map[journal.OutcomeKind]string{
	journal.Accepted: "accepted", journal.Duplicate: "duplicate", journal.Refused: "refused",
	journal.Truncated: "truncated", journal.LeaderSet: "leader_set", journal.LeaderRefused: "leader_refused",
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
//	LeaderSet, Trimmed, Noop                <outcome> <state>                    0
//	no verdict, ambiguous (Lost, ...)       ambiguous (<why>): ...               4
//	Unheld                                  ambiguous (unheld): ...              4
//	no verdict, nothing proposed (*)        refused: <why>                       3
//	any other outcome (Refused, ...)        <outcome> <state>                    3
//
// where <state> is "leader=U next_seq=N first_seq=F", the view the verdict
// carries. (*) settle turns these (NotLeader, Busy, UnknownJournal,
// TooLarge) into errors first, as parosctl always reported them.
func verdictLine(r journal.Reply) (string, int) {
	v := r.Outcome.View
	state := fmt.Sprintf("leader=%s next_seq=%d first_seq=%d", formatUUID(v.Leader), v.NextSeq, v.FirstSeq)
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

// currentView reads the journal's view: a served read past any tail
// (journal.SeqMax) returns no records and the view as of a linearizable
// moment.
func (g *globals) currentView(j *client.Journal) (journal.View, error) {
	ctx, cancel := g.ctx()
	defer cancel()
	rep, err := j.Read(ctx, journal.ReadRequest{FromSeq: journal.SeqMax, Limit: 1})
	switch {
	case err != nil:
		return journal.View{}, callError(err)
	case rep.UnknownJournal:
		return journal.View{}, callError(fmt.Errorf("%w: %s", client.ErrUnknownJournal, j.ID()))
	case !rep.Served:
		return journal.View{}, callError(fmt.Errorf("%w: %s", client.ErrUnavailable, j.ID()))
	}
	return rep.View, nil
}

// verdictJSON is a reply as --json prints it.
type verdictJSON struct {
	Outcome   string     `json:"outcome"`
	Refusal   string     `json:"refusal,omitempty"`
	Ambiguous bool       `json:"ambiguous,omitempty"`
	Seq       uint64     `json:"seq,omitempty"`
	Count     uint64     `json:"count,omitempty"`
	State     *stateJSON `json:"state,omitempty"`
}

// stateJSON is a journal view as --json prints it.
type stateJSON struct {
	Leader   string `json:"leader"`
	NextSeq  uint64 `json:"next_seq"`
	FirstSeq uint64 `json:"first_seq"`
}

func viewJSON(v journal.View) *stateJSON {
	return &stateJSON{Leader: formatUUID(v.Leader), NextSeq: uint64(v.NextSeq), FirstSeq: uint64(v.FirstSeq)}
}

func replyJSON(r journal.Reply) verdictJSON {
	if r.Outcome.Kind == journal.OutcomeInvalid {
		return verdictJSON{Outcome: "none", Refusal: noVerdictNames[r.NoVerdict], Ambiguous: r.Ambiguous()}
	}
	return verdictJSON{Outcome: outcomeNames[r.Outcome.Kind], Ambiguous: r.Ambiguous(),
		Seq: uint64(r.Outcome.Seq), Count: r.Outcome.Count, State: viewJSON(r.Outcome.View)}
}
