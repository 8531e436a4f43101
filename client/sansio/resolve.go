package sansio

import (
	"bytes"
	"fmt"

	"github.com/parosdb/paros/core/journal"
)

// ResolutionKind is what a read-back says about a write whose answer was
// lost.
type ResolutionKind uint8

const (
	// ResolveInvalid is the zero value; Resolve never returns it.
	ResolveInvalid ResolutionKind = iota
	// ResolvedWritten: the write's records occupy [req.Seq, req.Seq+n).
	ResolvedWritten
	// ResolvedNotWritten: the write is not in the log and never will be:
	// other bytes hold its position, or the fence moved on before it landed.
	ResolvedNotWritten
	// ResolvedBelowFloor: the position is below the floor; the log can no
	// longer tell.
	ResolvedBelowFloor
	// Unresolved: the page cannot decide; Reason says why and what to do.
	Unresolved
)

var resolutionNames = [...]string{"invalid", "written", "not-written", "below-floor", "unresolved"}

func (k ResolutionKind) String() string {
	if int(k) < len(resolutionNames) {
		return resolutionNames[k]
	}
	return fmt.Sprintf("resolution(%d)", uint8(k))
}

// Resolution is Resolve's answer. View is the page's view; Reason explains
// every answer but ResolvedWritten.
type Resolution struct {
	Kind   ResolutionKind
	View   journal.View
	Reason string
}

// Resolve decides, from page — the reply to a Read from req.Seq whose limit
// covers len(req.Records) — whether the fenced write req is in the log (a
// lost answer is resolved by reading the journal back at the write's
// position, since the log itself records whether the write landed). A write
// lands whole or not at all, at the position it names, so:
//
//   - the page starts with req's records, byte for byte: ResolvedWritten;
//   - other bytes hold one of req's positions: ResolvedNotWritten (final:
//     positions never change);
//   - the tail is at or before req.Seq and the page's leader is not req's
//     fence: ResolvedNotWritten (final: a write lands only while its fence
//     is the leader in force, and the fence never returns — uuids are
//     fresh);
//   - the page was truncated: ResolvedBelowFloor;
//   - anything else is Unresolved: an unserved page (ask another server), a
//     page cut short (read on), an unfenced write (it lands at whatever
//     tail, so its position says nothing), or an open tail under req's
//     own fence: the write may still land. Resend it identically — the
//     answer then settles it (ResultWritten or ResultDuplicate) — or claim the journal
//     anew and read again.
//
// Resolve compares bytes, not fences: a ResolvedWritten means the bytes the
// write carried are at its position, which is the same thing only while no
// other writer could write identical bytes there.
func Resolve(req journal.WriteRequest, page journal.ReadReply) Resolution {
	res := Resolution{View: page.View}
	n := len(req.Records)
	switch {
	case !req.Leader.IsSet():
		return unresolved(res, "an unfenced write lands at the tail, wherever that is: its position says nothing")
	case n == 0:
		return unresolved(res, "an empty write never lands")
	case page.UnknownJournal || !page.Served:
		return unresolved(res, "the page was not served: ask another server")
	case page.FromSeq != req.Seq:
		return unresolved(res, fmt.Sprintf("the page starts at %d, the write at %d", page.FromSeq, req.Seq))
	case page.BelowFloor:
		res.Kind = ResolvedBelowFloor
		res.Reason = fmt.Sprintf("position %d is below the floor %d", req.Seq, page.View.FirstSeq)
		return res
	}
	k := len(page.Records)
	for i := range min(k, n) {
		if !bytes.Equal(page.Records[i], req.Records[i]) {
			res.Kind = ResolvedNotWritten
			res.Reason = fmt.Sprintf("other bytes hold position %d", req.Seq+journal.Seq(i))
			return res
		}
	}
	if k >= n {
		res.Kind = ResolvedWritten
		return res
	}
	// The page holds a matching prefix of k < n records, perhaps none.
	end := req.Seq + journal.Seq(n)
	switch {
	case page.View.NextSeq >= end || (k > 0 && page.View.NextSeq < req.Seq+journal.Seq(k)):
		return unresolved(res, fmt.Sprintf("the page ends at %d, before the write's end %d: read on",
			req.Seq+journal.Seq(k), end))
	case page.View.NextSeq > req.Seq:
		res.Kind = ResolvedNotWritten
		res.Reason = fmt.Sprintf("the log ends at %d, inside the write's range [%d,%d): another write holds it",
			page.View.NextSeq, req.Seq, end)
		return res
	case page.View.Leader != req.Leader:
		res.Kind = ResolvedNotWritten
		res.Reason = fmt.Sprintf("the tail is open at %d and the fence moved on to %s", page.View.NextSeq, page.View.Leader)
		return res
	}
	return unresolved(res, fmt.Sprintf("the tail is open at %d under the write's own fence: it may still land; "+
		"resend it identically, or claim anew and read again", page.View.NextSeq))
}

func unresolved(res Resolution, reason string) Resolution {
	res.Kind, res.Reason = Unresolved, reason
	return res
}
