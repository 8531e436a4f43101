package election

import (
	"errors"
	"fmt"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/wire"
)

// EventKind names what one record did to a Fold.
type EventKind uint8

const (
	// NoEvent is the zero value; Apply never returns it.
	NoEvent EventKind = iota
	// Ignored: not an election record (no Magic). Not an error: an
	// election journal may carry other records.
	Ignored
	// Unreadable: the record starts with Magic but does not decode (Err
	// says why). It changes nothing.
	Unreadable
	// Stale: an election record that changes nothing — a Campaign for a
	// term other than Term+1 (a loser, a duplicate, a late one), a Renew
	// or Resign that is not the current leader's for the current term.
	Stale
	// Skipped: a Campaign or Resign folded after a Jump, before a Renew
	// anchored the fold again; it cannot be judged and changes nothing.
	Skipped
	// Elected: the first Campaign for Term+1 won it; Candidate leads.
	Elected
	// Renewed: the leader renewed its term (a liveness hint).
	Renewed
	// Adopted: a Renew for a term above the fold's (after a Jump, the
	// first Renew) set the term and its leader: the writer won that term
	// in a part of the log this fold did not read.
	Adopted
	// Resigned: the leader ended its term; Successor is whom it named.
	Resigned
)

var eventNames = [...]string{"none", "ignored", "unreadable", "stale", "skipped", "elected", "renewed", "adopted", "resigned"}

func (k EventKind) String() string {
	if int(k) < len(eventNames) {
		return eventNames[k]
	}
	return fmt.Sprintf("event(%d)", uint8(k))
}

// Event is what Apply made of one record. Term, Candidate, Interface and
// Successor are the record's (unset for Ignored and Unreadable); Err is set
// for Unreadable.
type Event struct {
	Kind      EventKind
	Seq       journal.Seq
	Term      Term
	Candidate journal.LeaderUUID
	Interface string
	Successor journal.LeaderUUID
	Err       error
}

func (e Event) String() string {
	return fmt.Sprintf("%s@%d(term %d, %s)", e.Kind, e.Seq, e.Term, e.Candidate)
}

// Fold is the election's state, folded from its journal's records in log
// order. It is pure: no I/O, no clock, no randomness, so every watcher that
// folds the same records from the same start holds the same state at every
// position. The zero value is the fold of an empty journal: term 0, no
// leader.
//
// The rules, record by record (a record without Magic is Ignored, one with
// Magic that does not decode is Unreadable; neither changes anything):
//
//   - Campaign{T, c}: if T == Term+1, c wins term T (Elected): Term = T,
//     Leader = c with the campaign's interface. The first Campaign for
//     Term+1 wins whether or not the current term's leader is alive or
//     resigned: a candidate only campaigns when it saw no renewal for a
//     lease, or a resignation, but if it misjudged, the election still
//     moves on — safety never rests on the election (see the package doc).
//     Any other term is Stale.
//   - Renew{T, c}: if c leads the current term T, it renews (Renewed; the
//     interface is replaced with the record's). If T > Term, the fold
//     adopts it (Adopted): Term = T, Leader = c. A leader only renews a
//     term its own fold showed it won, so in a whole log the Campaign comes
//     first and this never fires; it is how a fold resumes after a gap.
//     Anything else is Stale.
//   - Resign{T, c, s}: if c leads the current term T, its leadership ends
//     (Resigned): no leader, Term stays T, Successor = s. Else Stale.
//
// After Jump (the reader met a truncated range) the fold forgets
// everything and is not anchored: Campaigns and Resigns are Skipped until
// a Renew is Adopted. The election's compaction truncates only up to a
// Renew the fold accepted, so the first record after a gap is that Renew,
// and the fold resumes in exactly the state a fold of the whole log has
// after it.
type Fold struct {
	term Term
	// leader is the uuid leading term; unset when none does (term 0, or
	// after a Resign).
	leader journal.LeaderUUID
	iface  string
	// renewal is the position of the leader's latest accepted Renew (0
	// when none since it was elected).
	renewal journal.Seq
	// successor is the uuid the last Resign named, while no one leads.
	successor journal.LeaderUUID
	// jumped: a gap was met and no Renew has anchored the fold since.
	jumped bool
}

// Term is the latest term the fold knows (0: none yet).
func (f *Fold) Term() Term { return f.term }

// Leader is the uuid leading Term and the interface it published; ok is
// false when no one leads (term 0, after a Resign, or before a Renew
// anchored the fold after a Jump).
func (f *Fold) Leader() (uuid journal.LeaderUUID, iface string, ok bool) {
	return f.leader, f.iface, f.leader.IsSet()
}

// LastRenewalSeq is the position of the current leader's latest accepted
// Renew (0 when no one leads or it has not renewed since it was elected):
// a position the journal may be truncated up to, since a fold that starts
// there resumes in the same state.
func (f *Fold) LastRenewalSeq() journal.Seq { return f.renewal }

// Successor is the uuid the leader named when it resigned, while no one
// leads (unset otherwise, or when it named none).
func (f *Fold) Successor() journal.LeaderUUID { return f.successor }

// Anchored reports whether the fold knows the state: always, except after
// a Jump until a Renew is Adopted.
func (f *Fold) Anchored() bool { return !f.jumped }

// Jump forgets the state after the reader met a truncated range: the fold
// waits for a Renew to anchor it again.
func (f *Fold) Jump() { *f = Fold{jumped: true} }

// Apply folds the record rec at position seq and says what it did.
func (f *Fold) Apply(seq journal.Seq, rec []byte) Event {
	r, err := Decode(rec)
	switch {
	case errors.Is(err, ErrNotElection):
		return Event{Kind: Ignored, Seq: seq}
	case err != nil:
		return Event{Kind: Unreadable, Seq: seq, Err: err}
	}
	ev := Event{Seq: seq, Term: Term(r.GetTerm()), Candidate: wire.UUIDFromPB(r.GetCandidate())}
	switch k := r.GetKind().(type) {
	case *pb.ElectionRecord_Campaign:
		ev.Interface = k.Campaign.GetInterface()
		switch {
		case f.jumped:
			ev.Kind = Skipped
		case f.term < ^Term(0) && ev.Term == f.term+1:
			*f = Fold{term: ev.Term, leader: ev.Candidate, iface: ev.Interface}
			ev.Kind = Elected
		default:
			ev.Kind = Stale
		}
	case *pb.ElectionRecord_Renew:
		ev.Interface = k.Renew.GetInterface()
		switch {
		case f.jumped || ev.Term > f.term:
			*f = Fold{term: ev.Term, leader: ev.Candidate, iface: ev.Interface, renewal: seq}
			ev.Kind = Adopted
		case ev.Term == f.term && ev.Candidate == f.leader:
			f.iface, f.renewal = ev.Interface, seq
			ev.Kind = Renewed
		default:
			ev.Kind = Stale
		}
	case *pb.ElectionRecord_Resign:
		ev.Successor = wire.UUIDFromPB(k.Resign.GetSuccessor())
		switch {
		case f.jumped:
			ev.Kind = Skipped
		case ev.Term == f.term && ev.Candidate == f.leader:
			*f = Fold{term: f.term, successor: ev.Successor}
			ev.Kind = Resigned
		default:
			ev.Kind = Stale
		}
	}
	return ev
}
