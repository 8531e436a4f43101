// This file checks the Reader against docs/guide/client.md ("Reader:
// everyone"): below a truncated journal's floor the Reader moves its cursor
// to the floor and reports the skipped positions as a Gap, never silently.
// Each test builds a journal in the fake, reads it through a Reader with real
// requests, and checks the outcome and the cursor: pages move the cursor by
// their length, a truncated answer is a Gap over exactly the skipped range,
// an unserved or unknown-journal answer moves nothing, a reply for a position
// that is no longer the cursor is Stale, and — over a long random script of
// replies — the cursor never moves back.
package sansio

import (
	"slices"
	"strings"
	"testing"

	"github.com/parosdb/paros/core/journal"
)

// filled returns a single-writer fake holding records r1..rn at 1..n.
func filled(n int) *fakeJournal {
	f := newFakeJournal(journal.ModeSingle)
	f.claimAs(uA)
	for i := range n {
		f.write(journal.WriteRequest{Journal: testID, Leader: uA, Seq: journal.Seq(i + 1), Records: recs("r" + string(rune('a'+i)))})
	}
	return f
}

func TestReaderReadsPagesInOrderAndMovesItsCursorByEachPage(t *testing.T) {
	f := filled(5)
	r := NewReader(testID, 1)

	var got [][]byte
	var outs []ReaderOutcome
	for range 3 {
		req := r.Request(2, 0)
		out := r.Absorb(req, f.read(req))
		outs = append(outs, out)
		got = append(got, out.Records...)
	}

	if !slices.EqualFunc(got, f.log, func(a, b []byte) bool { return string(a) == string(b) }) {
		t.Fatalf("read %q, the log holds %q", got, f.log)
	}
	for i, want := range []journal.Seq{1, 3, 5} {
		if outs[i].Kind != ReadRecords || outs[i].From != want {
			t.Fatalf("page %d: %s, want records from %d", i, outs[i], want)
		}
	}
	if r.Cursor() != 6 || outs[2].Next() != 6 || outs[2].View.NextSeq != 6 {
		t.Fatalf("cursor %d after reading 5 records, want 6", r.Cursor())
	}
}

func TestReaderAtTheTailGetsAnEmptyPageAndStaysPut(t *testing.T) {
	f := filled(2)
	r := NewReader(testID, 3)

	req := r.Request(0, 500)
	out := r.Absorb(req, f.read(req))

	if out.Kind != ReadRecords || len(out.Records) != 0 || r.Cursor() != 3 {
		t.Fatalf("at the tail: %s with cursor %d, want an empty page at 3", out, r.Cursor())
	}
}

func TestReaderReportsATruncatedRangeAsAGapAndResumesAtTheFloor(t *testing.T) {
	f := filled(6)
	f.truncate(journal.TruncateRequest{Journal: testID, Leader: uA, UpTo: 5})
	r := NewReader(testID, 2)

	req := r.Request(10, 0)
	out := r.Absorb(req, f.read(req))

	if out.Kind != ReadGap || out.From != 2 || out.ResumedAt != 5 || out.Next() != 5 {
		t.Fatalf("a read below the floor: %s, want gap[2,5)", out)
	}
	if r.Cursor() != 5 {
		t.Fatalf("cursor %d after the gap, want the floor 5", r.Cursor())
	}
	req = r.Request(10, 0)
	out = r.Absorb(req, f.read(req))
	if out.Kind != ReadRecords || out.From != 5 || len(out.Records) != 2 {
		t.Fatalf("after the gap: %s, want records[5,+2)", out)
	}
}

func TestReaderDoesNotMoveWhenTheServerCouldNotServe(t *testing.T) {
	r := NewReader(testID, 4)
	req := r.Request(1, 0)

	for name, rep := range map[string]journal.ReadReply{
		"no answer":    {},
		"unserved":     {FromSeq: 4, View: journal.View{NextSeq: 9, FirstSeq: 1}},
		"self-refuted": {Served: true, BelowFloor: true, FromSeq: 4, View: journal.View{NextSeq: 9, FirstSeq: 4}},
	} {
		out := r.Absorb(req, rep)

		if out.Kind != ReadUnavailable || r.Cursor() != 4 {
			t.Fatalf("%s: %s with cursor %d, want unavailable at 4", name, out, r.Cursor())
		}
	}
}

func TestReaderReportsAnUnknownJournalWithoutMoving(t *testing.T) {
	r := NewReader(testID, 1)
	req := r.Request(1, 0)

	out := r.Absorb(req, journal.ReadReply{UnknownJournal: true, FromSeq: 1})

	if out.Kind != ReadUnknownJournal || r.Cursor() != 1 {
		t.Fatalf("%s with cursor %d, want unknown-journal at 1", out, r.Cursor())
	}
}

func TestReaderIgnoresAReplyForAPositionThatIsNoLongerTheCursor(t *testing.T) {
	f := filled(4)
	r := NewReader(testID, 1)
	hedgeA, hedgeB := r.Request(2, 0), r.Request(2, 0) // the same read sent to two servers
	first := r.Absorb(hedgeA, f.read(hedgeA))

	second := r.Absorb(hedgeB, f.read(hedgeB))
	forged := r.Absorb(r.Request(2, 0), journal.ReadReply{Served: true, FromSeq: 1, Records: recs("x")})

	if first.Kind != ReadRecords || second.Kind != ReadStale || forged.Kind != ReadStale {
		t.Fatalf("hedged reads: %s then %s; forged position: %s", first, second, forged)
	}
	if r.Cursor() != 3 {
		t.Fatalf("cursor %d, want 3 (the stale replies moved nothing)", r.Cursor())
	}
}

func TestReaderCursorNeverMovesBack(t *testing.T) {
	// A long script of replies of every kind, at random positions, from a
	// fake journal that keeps growing and truncating; the cursor must never
	// decrease and every page must start at the cursor it moved.
	f := filled(3)
	r := NewReader(testID, 1)
	rnd := SeededUUIDs(42)
	for step := range 2000 {
		x := rnd().Lo
		switch x % 5 {
		case 0:
			f.write(journal.WriteRequest{Journal: testID, Leader: uA, Seq: f.st.NextSeq, Records: recs("w")})
		case 1:
			f.truncate(journal.TruncateRequest{Journal: testID, Leader: uA, UpTo: f.st.FirstSeq + journal.Seq(x>>8%3)})
		}
		req := r.Request(uint32(x>>16%4), 0)
		if x>>24%4 == 0 {
			req.FromSeq = journal.Seq(x >> 32 % uint64(f.st.NextSeq+2)) // a stale or forged position
		}
		rep := f.read(req)
		if x>>40%7 == 0 {
			rep = journal.ReadReply{}
		}
		before := r.Cursor()

		out := r.Absorb(req, rep)

		if r.Cursor() < before {
			t.Fatalf("step %d: cursor moved back %d -> %d on %s", step, before, r.Cursor(), out)
		}
		if r.Cursor() != before && (out.From != before || out.Next() != r.Cursor()) {
			t.Fatalf("step %d: %s moved the cursor %d -> %d", step, out, before, r.Cursor())
		}
	}
}

func TestReaderRequestClampsItsLimitsAndStartsAtAPosition(t *testing.T) {
	r := NewReader(testID, 0)

	req := r.Request(1<<20, 1<<20)

	if req.FromSeq != journal.FirstSeq || req.Limit != journal.ReadRecordsMax || req.WaitMs != journal.WaitMsMax {
		t.Fatalf("request %+v, want from 1 with clamped limit and wait", req)
	}
	if r.Journal() != testID || req.Journal != testID {
		t.Fatalf("journal %s, want %s", r.Journal(), testID)
	}
}

func TestReaderPanicsOnAReplyForAnotherJournalOrAMoveBack(t *testing.T) {
	r := NewReader(testID, 5)
	mustPanic(t, "another journal", func() {
		r.Absorb(journal.ReadRequest{Journal: journal.ID{Tenant: 1, Journal: 1}, FromSeq: 5}, journal.ReadReply{})
	})
	mustPanic(t, "move back", func() { r.moveTo(4) })
}

func TestReaderOutcomeNamesItsKind(t *testing.T) {
	for k, want := range map[ReaderKind]string{ReadInvalid: "invalid", ReadRecords: "records", ReadGap: "gap",
		ReadUnavailable: "unavailable", ReadUnknownJournal: "unknown-journal", ReadStale: "stale", 99: "reader-kind(99)"} {
		if k.String() != want {
			t.Fatalf("%d is %q, want %q", k, k, want)
		}
	}
	if s := (ReaderOutcome{Kind: ReadStale, From: 3}).String(); s != "stale@3" {
		t.Fatalf("stale outcome prints %q", s)
	}
	if s := (ReaderOutcome{Kind: ReadGap, From: 1, ResumedAt: 4}).String(); s != "gap[1,4)" {
		t.Fatalf("gap prints %q", s)
	}
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Fatalf("%s: no panic", what)
		}
	}()
	f()
}

// mustContain fails unless s contains sub.
func mustContain(t *testing.T, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Fatalf("%q does not contain %q", s, sub)
	}
}
