// This file checks the Writer's writes against docs/guide/client.md
// ("Writer: the single owner" and "every ambiguous outcome"): a writer
// fences every write, places writes back to back, keeps each write until a
// verdict settles it, retries an ambiguous write with identical bytes at the
// same position, and stops once a verdict names another leader. Every reply
// comes from the fake journal (the real state machine) except the ones a
// test loses on purpose, which it absorbs as the zero Reply, and the few
// malformed ones a server could send, which are written out.
package sansio

import (
	"errors"
	"testing"

	"github.com/parosdb/paros/core/journal"
)

func TestWritesArePlacedBackToBackAndEachVerdictSettlesOne(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	w := claimed(t, f, uA)

	a := next(t, w, "a1", "a2")
	b := next(t, w, "b1")
	pending := w.Pending()
	ra := w.AbsorbWrite(a, f.write(a))
	rb := w.AbsorbWrite(b, f.write(b))

	if a.Seq != 1 || b.Seq != 3 || a.Leader != uA || len(pending) != 2 {
		t.Fatalf("writes at %d and %d with %d in flight, want 1 and 3 with 2", a.Seq, b.Seq, len(pending))
	}
	if ra.Kind != ResultWritten || ra.Seq != 1 || ra.Count != 2 || rb.Kind != ResultWritten || rb.Seq != 3 || ra.Err() != nil {
		t.Fatalf("verdicts %s and %s", ra, rb)
	}
	if len(w.Pending()) != 0 || w.NextSeq() != 4 {
		t.Fatalf("after both: %d in flight, next %d", len(w.Pending()), w.NextSeq())
	}
}

func TestAnAmbiguousWriteIsRetriedWithIdenticalBytesAndTheLogAnswersDuplicate(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	w := claimed(t, f, uA)
	buf := recs("payload")
	req, _ := w.Next(buf)
	buf[0][0] = 'X' // the caller reuses its buffer; the retry must not change
	f.write(req)    // it lands; the answer is lost

	lost := w.AbsorbWrite(req, journal.Reply{})
	resend := w.Pending()[0]
	dup := w.AbsorbWrite(resend, f.write(resend))

	if lost.Kind != ResultRetry || !errors.Is(lost.Err(), ErrAmbiguous) {
		t.Fatalf("lost answer: %s", lost)
	}
	if string(resend.Records[0]) != "payload" || resend.Seq != 1 {
		t.Fatalf("resend carries %q at %d, want the identical bytes at 1", resend.Records[0], resend.Seq)
	}
	if dup.Kind != ResultDuplicate || dup.Seq != 1 || dup.Count != 1 || dup.Err() != nil || len(w.Pending()) != 0 {
		t.Fatalf("the resend: %s", dup)
	}
}

func TestEveryAmbiguousReplyIsRetry(t *testing.T) {
	for name, rep := range map[string]journal.Reply{
		"no answer":     {},
		"lost":          {NoVerdict: journal.Lost},
		"unavailable":   {NoVerdict: journal.Unavailable},
		"unheld":        {Outcome: journal.Outcome{Kind: journal.Unheld}},
		"not a write's": {Outcome: journal.Outcome{Kind: journal.Trimmed}},
		"wrong seq":     {Outcome: journal.Outcome{Kind: journal.Accepted, Seq: 2, Count: 1}},
		"wrong count":   {Outcome: journal.Outcome{Kind: journal.Duplicate, Seq: 1, Count: 5}},
	} {
		f := newFakeJournal(journal.ModeSingle)
		w := claimed(t, f, uA)
		req := next(t, w, "x")

		res := w.AbsorbWrite(req, rep)

		if res.Kind != ResultRetry || len(w.Pending()) != 1 || !w.Holding() {
			t.Fatalf("%s: %s with %d in flight", name, res, len(w.Pending()))
		}
	}
}

func TestASupersededWriterStopsUntilItClaimsAgain(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	w := claimed(t, f, uA)
	early := next(t, w, "early")
	f.write(early) // lands before the takeover; its answer is late
	late := next(t, w, "late")
	f.claimAs(uB)

	res := w.AbsorbWrite(late, f.write(late))
	_, nextErr := w.Next(recs("more"))
	_, truncErr := w.Truncate(1)
	earlyRes := w.AbsorbWrite(early, f.write(early))

	if res.Kind != ResultSuperseded || res.Leader != uB || !errors.Is(res.Err(), ErrSuperseded) {
		t.Fatalf("a write refused naming B: %s", res)
	}
	if !errors.Is(nextErr, ErrSuperseded) || !errors.Is(truncErr, ErrSuperseded) || w.Holding() || w.Fence().IsSet() {
		t.Fatalf("after the stop: Next %v, Truncate %v, holding %v", nextErr, truncErr, w.Holding())
	}
	if earlyRes.Kind != ResultDuplicate {
		t.Fatalf("a write that landed before the stop is still reported: %s", earlyRes)
	}
	again := w.Claim()
	if again.Old != uB || w.Stopped() != nil || len(w.Pending()) != 0 {
		t.Fatalf("claiming again names B and clears the stop: %+v, %v", again, w.Stopped())
	}
}

func TestClaimAbandonsWritesInFlightAndTheirAnswersAreStale(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	w := NewWriter(testID, fixedUUIDs(uA, uB))
	first := w.Claim()
	w.AbsorbClaim(first, f.setLeader(first))
	old := next(t, w, "old")

	second := w.Claim()
	won := w.AbsorbClaim(second, f.setLeader(second))
	stale := w.AbsorbWrite(old, f.write(old))

	if won.Kind != ResultWon || w.Fence() != uB || w.NextSeq() != 1 {
		t.Fatalf("re-claim: %+v, next %d", won, w.NextSeq())
	}
	if stale.Kind != ResultStale || !errors.Is(stale.Err(), ErrStale) {
		t.Fatalf("the abandoned write's answer: %s", stale)
	}
}

func TestAWriteAheadOfTheTailIsRefusedAndResentAfterTheEarlierOneLands(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	w := claimed(t, f, uA)
	a := next(t, w, "a")
	b := next(t, w, "b")

	early := w.AbsorbWrite(b, f.write(b)) // b overtakes a
	ra := w.AbsorbWrite(a, f.write(a))
	rb := w.AbsorbWrite(b, f.write(b))

	if early.Kind != ResultRefused || early.View.NextSeq != 1 || !errors.Is(early.Err(), ErrRefused) || w.Stopped() != nil {
		t.Fatalf("b before a: %s", early)
	}
	if ra.Kind != ResultWritten || rb.Kind != ResultWritten || rb.Seq != 2 {
		t.Fatalf("a then b again: %s, %s", ra, rb)
	}
}

func TestOtherBytesAtTheWritersOwnPositionMeanItsUUIDIsShared(t *testing.T) {
	// Another client reinstated A (the journal keeps no uuid history) and
	// wrote at the position this writer holds.
	f := newFakeJournal(journal.ModeSingle)
	w := claimed(t, f, uA)
	req := next(t, w, "mine")
	f.write(journal.WriteRequest{Journal: testID, Leader: uA, Seq: 1, Records: recs("theirs")})

	res := w.AbsorbWrite(req, f.write(req))

	if res.Kind != ResultSuperseded || res.Leader != uA || len(w.Pending()) != 0 || !errors.Is(w.Stopped(), ErrSuperseded) {
		t.Fatalf("other bytes under my fence: %s, %d in flight", res, len(w.Pending()))
	}
}

func TestRepliesWithoutAVerdictKeepTheWriteInFlight(t *testing.T) {
	for _, tc := range []struct {
		rep  journal.Reply
		want ResultKind
		err  error
	}{
		{journal.Reply{NoVerdict: journal.NotLeader, LeaderHint: 2}, ResultRedirect, ErrNotLeader},
		{journal.Reply{NoVerdict: journal.Busy, LeaderHint: 2}, ResultBusy, ErrBusy},
		{journal.Reply{NoVerdict: journal.TooLarge}, ResultTooLarge, ErrTooLarge},
		{journal.Reply{NoVerdict: journal.UnknownJournal}, ResultUnknownJournal, ErrUnknownJournal},
	} {
		f := newFakeJournal(journal.ModeSingle)
		w := claimed(t, f, uA)
		req := next(t, w, "x")

		res := w.AbsorbWrite(req, tc.rep)

		if res.Kind != tc.want || !errors.Is(res.Err(), tc.err) || len(w.Pending()) != 1 {
			t.Fatalf("%+v: %s (%v), want %s", tc.rep, res, res.Err(), tc.want)
		}
		if tc.want == ResultRedirect && res.Hint != 2 {
			t.Fatalf("redirect hint %d, want 2", res.Hint)
		}
	}
}

func TestAWriteBelowTheFloorIsTruncatedAndSettled(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	w := claimed(t, f, uA)
	req := next(t, w, "x")
	f.write(req)
	f.truncate(journal.TruncateRequest{Journal: testID, Leader: uA, UpTo: 2})

	res := w.AbsorbWrite(req, f.write(req))

	if res.Kind != ResultBelowFloor || res.View.FirstSeq != 2 || !errors.Is(res.Err(), ErrBelowFloor) || len(w.Pending()) != 0 {
		t.Fatalf("a retry below the floor: %s", res)
	}
}

func TestAFencedWriteOnAMultiWriterJournalStopsTheWriter(t *testing.T) {
	w := claimed(t, newFakeJournal(journal.ModeSingle), uA)
	req := next(t, w, "x")

	res := w.AbsorbWrite(req, newFakeJournal(journal.ModeMulti).write(req))

	if res.Kind != ResultWrongMode || !errors.Is(w.Stopped(), ErrWrongMode) {
		t.Fatalf("fenced write on multi: %s", res)
	}
}

func TestNextRefusesBatchesPastTheLimits(t *testing.T) {
	w := claimed(t, newFakeJournal(journal.ModeSingle), uA)

	_, empty := w.Next(nil)
	_, many := w.Next(make([][]byte, journal.WriteRecordsMax+1))
	_, big := w.Next([][]byte{make([]byte, journal.WriteBytesMax+1)})

	if !errors.Is(empty, ErrEmptyBatch) || !errors.Is(many, ErrTooLarge) || !errors.Is(big, ErrTooLarge) {
		t.Fatalf("empty %v, many %v, big %v", empty, many, big)
	}
	for range WritesInFlightMax {
		next(t, w, "x")
	}
	if _, err := w.Next(recs("one too many")); !errors.Is(err, ErrInFlightFull) {
		t.Fatalf("past WritesInFlightMax: %v", err)
	}
	if w.NextSeq() != WritesInFlightMax+1 {
		t.Fatalf("next %d after %d writes", w.NextSeq(), WritesInFlightMax)
	}
}
