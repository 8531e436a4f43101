package sansio

import (
	"fmt"

	"github.com/parosdb/paros/core/journal"
)

// ReaderKind names what one read reply did to a Reader.
type ReaderKind uint8

const (
	// ReadInvalid is the zero value; Absorb never returns it.
	ReadInvalid ReaderKind = iota
	// ReadRecords: a served page. Records are dense from From; the cursor
	// moved to From+len(Records). An empty page (a long-poll that ended at
	// the tail) leaves the cursor where it was.
	ReadRecords
	// ReadGap: the range [From, ResumedAt) was truncated before this reader
	// got to it. The cursor moved to ResumedAt (the journal's first_seq). A
	// folder must treat what follows as coming after a hole.
	ReadGap
	// ReadUnavailable: the server could not confirm a linearizable read
	// (served=false), or gave an answer that contradicts itself. The cursor
	// did not move: ask another server.
	ReadUnavailable
	// ReadUnknownJournal: the server does not serve this journal. The cursor
	// did not move.
	ReadUnknownJournal
	// ReadStale: the reply answers a request for a position that is not the
	// cursor (an older or duplicated request). It is ignored.
	ReadStale
	// ReadDeleted: the journal was deleted. The cursor did not move, and
	// no server will ever serve it again.
	ReadDeleted
)

var readerKindNames = [...]string{"invalid", "records", "gap", "unavailable", "unknown-journal", "stale", "deleted"}

func (k ReaderKind) String() string {
	if int(k) < len(readerKindNames) {
		return readerKindNames[k]
	}
	return fmt.Sprintf("reader-kind(%d)", uint8(k))
}

// ReaderOutcome is what Absorb made of one reply. Fields by kind:
//
//	ReadRecords: From, Records, View
//	ReadGap:     From (the cursor before), ResumedAt (the floor), View
//	others:      From (the request's position); View when the reply had one
type ReaderOutcome struct {
	Kind      ReaderKind
	From      journal.Seq
	ResumedAt journal.Seq
	Records   [][]byte
	View      journal.View
}

// Next is the first position after the outcome's records (From for an empty
// page), or ResumedAt for a gap.
func (o ReaderOutcome) Next() journal.Seq {
	if o.Kind == ReadGap {
		return o.ResumedAt
	}
	return o.From + journal.Seq(len(o.Records))
}

func (o ReaderOutcome) String() string {
	switch o.Kind {
	case ReadRecords:
		return fmt.Sprintf("records[%d,+%d)", o.From, len(o.Records))
	case ReadGap:
		return fmt.Sprintf("gap[%d,%d)", o.From, o.ResumedAt)
	}
	return fmt.Sprintf("%s@%d", o.Kind, o.From)
}

// Reader is a cursor over one journal. It reads forward only: the cursor
// never moves back, and a truncated range is reported as a ReadGap, never
// skipped silently.
//
// A Reader is not safe for concurrent use; one goroutine (or the simulator)
// drives it.
type Reader struct {
	id journal.ID
	// cursor is the next position this reader needs.
	// Invariant: cursor >= journal.FirstSeq, and it never decreases.
	cursor journal.Seq
}

// NewReader returns a reader of journal id whose cursor is at from (a
// position below journal.FirstSeq is read as FirstSeq).
func NewReader(id journal.ID, from journal.Seq) *Reader {
	return &Reader{id: id, cursor: max(from, journal.FirstSeq)}
}

// Journal names the journal the reader reads.
func (r *Reader) Journal() journal.ID { return r.id }

// Cursor is the next position the reader needs.
func (r *Reader) Cursor() journal.Seq { return r.cursor }

// Request builds the Read for the cursor: at most limit records (0 = the
// server's page size; clamped to journal.ReadRecordsMax) and a long-poll of
// waitMs at the tail (clamped to journal.WaitMsMax). Several requests may be
// in flight (hedged to several servers); only a reply for the cursor counts.
func (r *Reader) Request(limit, waitMs uint32) journal.ReadRequest {
	return journal.ReadRequest{
		Journal: r.id,
		FromSeq: r.cursor,
		Limit:   min(limit, journal.ReadRecordsMax),
		WaitMs:  min(waitMs, journal.WaitMsMax),
	}
}

// Absorb judges the reply rep to the request req and moves the cursor.
// Pass the zero ReadReply when the call got no answer: it is
// ReadUnavailable. A read has no effect on the journal, so nothing about a
// read is ambiguous; an unanswered read is simply asked again.
//
// Absorb panics if req names another journal (a programmer error).
func (r *Reader) Absorb(req journal.ReadRequest, rep journal.ReadReply) ReaderOutcome {
	if req.Journal != r.id {
		panic(fmt.Sprintf("client: reader of %s absorbed a reply for %s", r.id, req.Journal))
	}
	out := ReaderOutcome{From: req.FromSeq, View: rep.View}
	switch {
	case req.FromSeq != r.cursor:
		out.Kind = ReadStale
	case rep.FromSeq != 0 && rep.FromSeq != req.FromSeq:
		// The reply names another position: it does not answer req.
		out.Kind = ReadStale
	case rep.Deleted:
		out.Kind = ReadDeleted
	case rep.UnknownJournal:
		out.Kind = ReadUnknownJournal
	case !rep.Served:
		out.Kind = ReadUnavailable
	case rep.BelowFloor:
		if rep.View.FirstSeq <= req.FromSeq {
			// "BelowFloor" yet the floor is not past the position: the
			// reply contradicts itself. Do not move; ask another server.
			out.Kind = ReadUnavailable
			break
		}
		out.Kind, out.ResumedAt = ReadGap, rep.View.FirstSeq
		r.moveTo(rep.View.FirstSeq)
	default:
		out.Kind, out.Records = ReadRecords, rep.Records
		r.moveTo(req.FromSeq + journal.Seq(len(rep.Records)))
	}
	return out
}

// moveTo advances the cursor; moving it back is a programmer error.
func (r *Reader) moveTo(to journal.Seq) {
	if to < r.cursor {
		panic(fmt.Sprintf("client: reader cursor would move back: %d -> %d", r.cursor, to))
	}
	r.cursor = to
}
