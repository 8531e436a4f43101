package paxos

import (
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/quorum"
)

// Configuration is an acceptor set with its quorum system, bound to the
// ballot whose leadership uses it (Matchmaker Paxos: every ballot b has one
// configuration C_b, and a configuration is never edited). Since is the
// ballot of the reconfiguration that introduced the membership (zero: the
// bootstrap configuration); ordinary leaderships carry it forward, so two
// configurations with the same Since have the same acceptors.
type Configuration struct {
	Ballot    Ballot
	Since     Ballot
	Acceptors quorum.System
}

// IsZero reports whether no configuration is known.
func (c Configuration) IsZero() bool { return c.Acceptors.IsZero() }

func (c Configuration) String() string {
	return fmt.Sprintf("%s@%s(since %s)", c.Acceptors, c.Ballot, c.Since)
}

// SameSystem reports whether two quorum systems have the same members and
// the same quorum rule.
func SameSystem(a, b quorum.System) bool {
	return a.Spec() == b.Spec() && slices.Equal(a.Members(), b.Members())
}

// Registration is one entry of a matchmaker's registry: a ballot and the
// configuration its campaign registered. Reconfiguration says whether the
// campaign was an operator's explicit change (a fact) or an ordinary
// campaign's belief.
type Registration struct {
	Ballot          Ballot
	Acceptors       quorum.System
	Reconfiguration bool
}

// IsZero reports whether r names nothing (no effective configuration yet).
func (r Registration) IsZero() bool { return r.Ballot.IsZero() }

func (r Registration) String() string {
	kind := "belief"
	if r.Reconfiguration {
		kind = "reconfiguration"
	}
	return fmt.Sprintf("%s %s %s", r.Ballot, kind, r.Acceptors)
}

// MatchRefusal is why a matchmaker refused a registration. The ballots a
// refusal names are diagnostic: a candidate only campaigns above them.
type MatchRefusal uint8

const (
	// MatchOK: registered (or, for a probe, answered).
	MatchOK MatchRefusal = iota
	// MatchStale: the matchmaker already holds a registration at or above
	// the ballot (Refused names the highest).
	MatchStale
	// MatchBelowWatermark: the ballot is below the GC watermark (GC names
	// it).
	MatchBelowWatermark
	// MatchClosed: the matchmaker's store failed; it answers nothing else.
	MatchClosed
	// MatchRetracted: no refusal but the answer to a Match without a
	// configuration: the sender's abandoned registrations through Ballot
	// are retracted (durably, before the answer leaves).
	MatchRetracted
	// MatchStopped: the matchmaker's generation (the request's) is frozen
	// by a handover. Successor names the set chosen to replace it, or is
	// zero while the handover is undecided: the requester may finish it.
	MatchStopped
	// MatchGeneration: the request names a generation older than the
	// matchmaker's; Successor names the newest chosen set it knows.
	MatchGeneration
	// MatchInactive: the matchmaker serves no set of the request's
	// generation (it is fresh, holds a bootstrap not yet activated, or the
	// request names a generation it never heard chosen).
	MatchInactive
)

func (r MatchRefusal) String() string {
	switch r {
	case MatchOK:
		return "ok"
	case MatchStale:
		return "stale"
	case MatchBelowWatermark:
		return "below_watermark"
	case MatchClosed:
		return "closed"
	case MatchRetracted:
		return "retracted"
	case MatchStopped:
		return "stopped"
	case MatchGeneration:
		return "generation"
	case MatchInactive:
		return "inactive"
	}
	return fmt.Sprintf("refusal(%d)", uint8(r))
}

// IsMatchmakerRequest reports whether t is addressed to a matchmaker role
// rather than to a journal's node (the host routes on it).
func (t MsgType) IsMatchmakerRequest() bool {
	return t == MsgMatch || t == MsgProbe || t == MsgGarbageCollect
}
