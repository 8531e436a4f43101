// This file checks the Writer against docs/guide/client.md ("Writer: the single
// owner" and "every ambiguous outcome"): a writer claims with SetLeader(fresh
// uuid, believed leader), fences every write, keeps each write until a
// verdict settles it, retries an ambiguous write with identical bytes at the
// same position, and stops once a verdict names another leader. Every reply
// comes from the fake journal (the real state machine) except the ones a test
// loses on purpose, which it absorbs as the zero Reply, and the few malformed
// ones a server could send, which are written out. The last test drives a
// pipelined writer through random lost calls, lost answers and reordered
// deliveries and checks that the log ends up holding every batch exactly
// once, in order.
package sansio

import (
	"errors"
	"fmt"
	"testing"

	"github.com/parosdb/paros/core/journal"
)

// claimed returns a writer that won a claim on f with uuid u.
func claimed(t *testing.T, f *fakeJournal, u journal.LeaderUUID) *Writer {
	t.Helper()
	w := NewWriter(testID, fixedUUIDs(u, uC))
	req := w.Claim()
	if res := w.AbsorbClaim(req, f.setLeader(req)); res.Kind != ResultWon {
		t.Fatalf("claim: %s", res.Kind)
	}
	return w
}

func next(t *testing.T, w *Writer, rs ...string) journal.WriteRequest {
	t.Helper()
	req, err := w.Next(recs(rs...))
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	return req
}

func TestClaimOnAFreshJournalWinsAndWritesFromItsNextSeq(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	w := NewWriter(testID, fixedUUIDs(uA))

	req := w.Claim()
	res := w.AbsorbClaim(req, f.setLeader(req))

	if req.New != uA || req.Old.IsSet() {
		t.Fatalf("claim %+v, want SetLeader(A, unset)", req)
	}
	if res.Kind != ResultWon || res.Earlier || res.Err() != nil || !w.Holding() || w.Fence() != uA || w.Believed() != uA {
		t.Fatalf("claim: %+v, holding %v fence %s", res, w.Holding(), w.Fence())
	}
	if w.NextSeq() != 1 || w.Mode() != journal.ModeSingle || w.Journal() != testID {
		t.Fatalf("next %d, want 1", w.NextSeq())
	}
}

func TestClaimRefusedBelievesTheLeaderInForceAndTheNextClaimNamesIt(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	f.claimAs(uB)
	w := NewWriter(testID, fixedUUIDs(uA, uC))

	first := w.Claim()
	res := w.AbsorbClaim(first, f.setLeader(first))

	if res.Kind != ResultRefused || res.Leader != uB || w.Holding() || w.Believed() != uB || !errors.Is(res.Err(), ErrRefused) {
		t.Fatalf("a claim against B: %+v", res)
	}
	if _, err := w.Next(recs("x")); !errors.Is(err, ErrNotHolding) {
		t.Fatalf("Next without the fence: %v", err)
	}
	second := w.Claim()
	if second.Old != uB || second.New != uC {
		t.Fatalf("second claim %+v, want SetLeader(C, B)", second)
	}
	if res := w.AbsorbClaim(second, f.setLeader(second)); res.Kind != ResultWon || w.Fence() != uC {
		t.Fatalf("second claim: %+v", res)
	}
}

func TestAnAmbiguousClaimThatWonIsRecognisedWhenItsRetryIsRefused(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	w := NewWriter(testID, fixedUUIDs(uA))
	req := w.Claim()
	f.setLeader(req) // the claim lands; its answer is lost

	lost := w.AbsorbClaim(req, journal.Reply{})
	held, inFlight := w.Claiming()
	retry := w.AbsorbClaim(held, f.setLeader(held))

	if lost.Kind != ResultRetry || !errors.Is(lost.Err(), ErrAmbiguous) || !inFlight || held != req {
		t.Fatalf("lost answer: %+v, claim in flight %v", lost, inFlight)
	}
	if retry.Kind != ResultWon || !retry.Earlier || !w.Holding() || w.Fence() != uA {
		t.Fatalf("the retry is refused naming A, so A won: %+v", retry)
	}
}

func TestClaimRepliesWithoutAVerdict(t *testing.T) {
	for _, tc := range []struct {
		rep  journal.Reply
		want ResultKind
	}{
		{journal.Reply{NoVerdict: journal.NotLeader, LeaderHint: 3}, ResultRedirect},
		{journal.Reply{NoVerdict: journal.Busy, LeaderHint: 3}, ResultBusy},
		{journal.Reply{NoVerdict: journal.UnknownJournal}, ResultUnknownJournal},
		{journal.Reply{NoVerdict: journal.TooLarge}, ResultRetry},
		{journal.Reply{NoVerdict: journal.Lost}, ResultRetry},
		{journal.Reply{NoVerdict: journal.Unavailable}, ResultRetry},
		{journal.Reply{Outcome: journal.Outcome{Kind: journal.LeaderSet, View: journal.View{Leader: uB}}}, ResultRetry},
		{journal.Reply{Outcome: journal.Outcome{Kind: journal.Accepted}}, ResultRetry},
	} {
		w := NewWriter(testID, fixedUUIDs(uA))
		req := w.Claim()

		res := w.AbsorbClaim(req, tc.rep)

		if res.Kind != tc.want || w.Holding() {
			t.Fatalf("%+v: %s, want %s", tc.rep, res.Kind, tc.want)
		}
		if _, ok := w.Claiming(); !ok {
			t.Fatalf("%+v: the claim must stay in flight", tc.rep)
		}
	}
}

func TestClaimOnAMultiWriterJournalIsWrongModeAndStopsTheWriter(t *testing.T) {
	f := newFakeJournal(journal.ModeMulti)
	w := NewWriter(testID, fixedUUIDs(uA))
	req := w.Claim()

	res := w.AbsorbClaim(req, f.setLeader(req))
	_, err := w.Next(recs("x"))

	if res.Kind != ResultWrongMode || !errors.Is(err, ErrWrongMode) || !errors.Is(w.Stopped(), ErrWrongMode) {
		t.Fatalf("claim on multi: %+v, then Next: %v", res, err)
	}
	if stale := w.AbsorbClaim(req, f.setLeader(req)); stale.Kind != ResultStale {
		t.Fatalf("a second answer to a settled claim: %s", stale.Kind)
	}
}

func TestClaimDrawsAFreshUUIDAndPanicsOnASourceThatNeverGivesOne(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	f.claimAs(uB)
	w := NewWriter(testID, fixedUUIDs(journal.LeaderUUID{}, uB, uA))
	w.believed = uB

	req := w.Claim()

	if req.New != uA {
		t.Fatalf("claim drew %s, want A (unset and the believed B are skipped)", req.New)
	}
	mustPanic(t, "no fresh uuid", func() { NewWriter(testID, fixedUUIDs(journal.LeaderUUID{})).Claim() })
	mustPanic(t, "no uuid source", func() { NewWriter(testID, nil) })
	mustPanic(t, "claim on multi", func() { NewMultiWriter(testID).Claim() })
}

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

func TestAMultiWriterAppendsUnfencedAndARetryMayAppendTwice(t *testing.T) {
	f := newFakeJournal(journal.ModeMulti)
	w := NewMultiWriter(testID)
	req, err := w.Next(recs("m"))
	f.write(req) // lands; the answer is lost

	lost := w.AbsorbWrite(req, journal.Reply{})
	again := w.AbsorbWrite(req, f.write(req))

	if err != nil || req.Leader.IsSet() || req.Seq != 0 || w.NextSeq() != 0 || w.Mode() != journal.ModeMulti {
		t.Fatalf("multi write %+v, %v", req, err)
	}
	if lost.Kind != ResultRetry || again.Kind != ResultWritten || again.Seq != 2 {
		t.Fatalf("lost %s, resend %s", lost, again)
	}
	if len(f.log) != 2 {
		t.Fatalf("the log holds %d copies; at-least-once means 2 here", len(f.log))
	}
}

func TestAMultiWriterJudgesEveryReply(t *testing.T) {
	for _, tc := range []struct {
		rep  journal.Reply
		want ResultKind
	}{
		{journal.Reply{NoVerdict: journal.NotLeader}, ResultRedirect},
		{journal.Reply{Outcome: journal.Outcome{Kind: journal.Accepted, Seq: 1, Count: 9}}, ResultRetry},
		{journal.Reply{Outcome: journal.Outcome{Kind: journal.Duplicate, Seq: 1, Count: 1}}, ResultRetry},
		{journal.Reply{Outcome: journal.Outcome{Kind: journal.WrongMode}}, ResultWrongMode},
	} {
		w := NewMultiWriter(testID)
		req, _ := w.Next(recs("m"))

		res := w.AbsorbWrite(req, tc.rep)

		if res.Kind != tc.want {
			t.Fatalf("%+v: %s, want %s", tc.rep, res, tc.want)
		}
	}
	w := NewMultiWriter(testID)
	req, _ := w.Next(recs("m"))
	w.AbsorbWrite(req, journal.Reply{Outcome: journal.Outcome{Kind: journal.WrongMode}})
	if _, err := w.Next(recs("m")); !errors.Is(err, ErrWrongMode) {
		t.Fatalf("a multi writer on a single-writer journal stops: %v", err)
	}
}

func TestTruncateIsFencedAndItsOutcomesAreJudged(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	w := claimed(t, f, uA)
	for range 3 {
		req := next(t, w, "x")
		w.AbsorbWrite(req, f.write(req))
	}

	tr, err := w.Truncate(3)
	res := w.AbsorbTruncate(tr, f.truncate(tr))
	lost := w.AbsorbTruncate(tr, journal.Reply{})
	redirect := w.AbsorbTruncate(tr, journal.Reply{NoVerdict: journal.NotLeader, LeaderHint: 5})
	odd := w.AbsorbTruncate(tr, journal.Reply{NoVerdict: journal.TooLarge})
	f.claimAs(uB)
	refused := w.AbsorbTruncate(tr, f.truncate(tr))

	if err != nil || tr.Leader != uA || tr.UpTo != 3 {
		t.Fatalf("truncate %+v, %v", tr, err)
	}
	if res.Kind != ResultTrimmed || res.View.FirstSeq != 3 || res.Err() != nil {
		t.Fatalf("truncate: %+v", res)
	}
	if lost.Kind != ResultRetry || redirect.Kind != ResultRedirect || redirect.Hint != 5 || odd.Kind != ResultRetry {
		t.Fatalf("lost %s, redirect %s, odd %s", lost.Kind, redirect.Kind, odd.Kind)
	}
	if refused.Kind != ResultSuperseded || refused.Leader != uB || !errors.Is(refused.Err(), ErrSuperseded) {
		t.Fatalf("a truncate after B took over: %+v", refused)
	}
}

func TestTruncateEdgeCases(t *testing.T) {
	w := NewWriter(testID, fixedUUIDs(uA))
	if _, err := w.Truncate(1); !errors.Is(err, ErrNotHolding) {
		t.Fatalf("truncate before a claim: %v", err)
	}
	if res := w.AbsorbTruncate(journal.TruncateRequest{Journal: testID, Leader: uB, UpTo: 1}, journal.Reply{}); res.Kind != ResultStale {
		t.Fatalf("a truncate fenced by a uuid never held: %s", res.Kind)
	}

	m := NewMultiWriter(testID)
	f := newFakeJournal(journal.ModeMulti)
	tr, err := m.Truncate(1)
	if err != nil || tr.Leader.IsSet() {
		t.Fatalf("multi truncate %+v %v", tr, err)
	}
	if res := m.AbsorbTruncate(tr, f.truncate(tr)); res.Kind != ResultTrimmed {
		t.Fatalf("multi truncate: %s", res.Kind)
	}
	odd := m.AbsorbTruncate(tr, journal.Reply{Outcome: journal.Outcome{Kind: journal.TruncateRefused}})
	wrong := m.AbsorbTruncate(tr, journal.Reply{Outcome: journal.Outcome{Kind: journal.WrongMode}})
	if odd.Kind != ResultRetry || wrong.Kind != ResultWrongMode || !errors.Is(wrong.Err(), ErrWrongMode) {
		t.Fatalf("odd %s, wrong %s", odd.Kind, wrong.Kind)
	}
	if _, err := m.Truncate(1); !errors.Is(err, ErrWrongMode) {
		t.Fatalf("truncate after wrong mode: %v", err)
	}
}

func TestResultKindsMapToTheirErrors(t *testing.T) {
	want := map[ResultKind]error{ResultWritten: nil, ResultDuplicate: nil, ResultWon: nil, ResultTrimmed: nil,
		ResultSuperseded: ErrSuperseded, ResultRefused: ErrRefused, ResultBelowFloor: ErrBelowFloor, ResultRetry: ErrAmbiguous,
		ResultRedirect: ErrNotLeader, ResultBusy: ErrBusy, ResultTooLarge: ErrTooLarge, ResultUnknownJournal: ErrUnknownJournal,
		ResultWrongMode: ErrWrongMode, ResultStale: ErrStale}
	for k, e := range want {
		if got := k.err(); got != e {
			t.Fatalf("%s maps to %v, want %v", k, got, e)
		}
		mustContain(t, e2s(WriteResult{Kind: k}.Err()), fmt.Sprint(e2s(e)))
	}
	mustPanic(t, "invalid kind", func() { _ = ResultInvalid.err() })
	if ResultKind(99).String() != "result(99)" || ResultStale.String() != "stale" {
		t.Fatalf("names: %s %s", ResultKind(99), ResultStale)
	}
	for _, r := range []WriteResult{{Kind: ResultSuperseded, Leader: uB}, {Kind: ResultRedirect, Hint: 4}, {Kind: ResultRefused}, {Kind: ResultRetry}} {
		if r.String() == "" {
			t.Fatalf("%+v prints nothing", r)
		}
	}
	if ErrAmbiguous.Error()[:14] != "paros/client: " {
		t.Fatalf("error prefix: %q", ErrAmbiguous)
	}
}

func e2s(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestSeededUUIDsAreDeterministicAndSet(t *testing.T) {
	a, b := SeededUUIDs(1), SeededUUIDs(1)
	seen := map[journal.LeaderUUID]bool{}
	for range 1000 {
		u := a()
		if u != b() || !u.IsSet() || seen[u] {
			t.Fatalf("uuid %s: not deterministic, unset or repeated", u)
		}
		seen[u] = true
	}
}

// TestAPipelinedWriterLandsEveryBatchOnceInOrder drives one writer with up
// to eight writes in flight through a journal whose calls may be lost before
// they apply, whose answers may be lost after, and whose deliveries happen
// in random order, with a second client taking the fence away now and then.
// Every write is resent identically until a verdict settles it. At the end
// the log must hold every batch the writer reported ResultWritten or ResultDuplicate,
// exactly once and in the order Next placed them, and nothing else from it.
func TestAPipelinedWriterLandsEveryBatchOnceInOrder(t *testing.T) {
	fired := map[ResultKind]int{}
	for seed := range uint64(50) {
		rnd := SeededUUIDs(seed)
		roll := func(n uint64) uint64 { return rnd().Lo % n }
		f := newFakeJournal(journal.ModeSingle)
		w := NewWriter(testID, SeededUUIDs(seed+1000))
		written := map[journal.Seq]string{}
		var order []journal.WriteRequest
		sent := 0
		for step := 0; step < 4000 && (sent < 40 || len(w.Pending()) > 0 || !w.Holding()); step++ {
			if !w.Holding() {
				if w.Stopped() != nil && sent >= 40 {
					break
				}
				req := w.Claim()
				for {
					res := w.AbsorbClaim(req, f.setLeader(req))
					if res.Kind == ResultWon || res.Kind == ResultRefused {
						break
					}
				}
				continue
			}
			if sent < 40 && len(w.Pending()) < 8 && roll(2) == 0 {
				req, err := w.Next(recs(fmt.Sprintf("s%d-%d", seed, sent)))
				if err != nil {
					t.Fatalf("seed %d: Next: %v", seed, err)
				}
				order = append(order, req)
				sent++
				continue
			}
			if roll(100) == 0 {
				f.claimAs(SeededUUIDs(seed + uint64(step))())
			}
			p := w.Pending()
			if len(p) == 0 {
				continue
			}
			req := p[roll(uint64(len(p)))]
			var rep journal.Reply
			switch roll(4) {
			case 0: // lost before it applied
			case 1: // applied, answer lost
				f.write(req)
			default:
				rep = f.write(req)
			}
			res := w.AbsorbWrite(req, rep)
			fired[res.Kind]++
			if res.Kind == ResultWritten || res.Kind == ResultDuplicate {
				written[req.Seq] = string(req.Records[0])
			}
		}
		for s, want := range written {
			if got := string(f.log[s-1]); got != want {
				t.Fatalf("seed %d: position %d holds %q, the writer was told %q", seed, s, got, want)
			}
		}
		last := journal.Seq(0)
		for _, req := range order {
			if written[req.Seq] == string(req.Records[0]) {
				if req.Seq <= last {
					t.Fatalf("seed %d: %q written at %d, after a later batch at %d", seed, req.Records[0], req.Seq, last)
				}
				last = req.Seq
			}
		}
		seen := map[string]int{}
		for _, r := range f.log {
			seen[string(r)]++
		}
		for _, req := range order {
			if n := seen[string(req.Records[0])]; n > 1 {
				t.Fatalf("seed %d: %q landed %d times", seed, req.Records[0], n)
			}
		}
	}
	for _, k := range []ResultKind{ResultWritten, ResultDuplicate, ResultRetry, ResultRefused, ResultSuperseded} {
		if fired[k] == 0 {
			t.Fatalf("no write was ever %s across the seeds: %v", k, fired)
		}
	}
}

func TestTheWriterAssertsItsInvariants(t *testing.T) {
	w := claimed(t, newFakeJournal(journal.ModeSingle), uA)
	next(t, w, "a")
	next(t, w, "b")

	w.pending[0], w.pending[1] = w.pending[1], w.pending[0]
	mustPanic(t, "writes out of order", w.assertInvariants)
	w.pending = nil
	w.believed = uB
	mustPanic(t, "holding a fence it does not believe in", w.assertInvariants)
	w.believed = uA
	w.pending = make([]journal.WriteRequest, WritesInFlightMax+1)
	mustPanic(t, "too many in flight", w.assertInvariants)
	w.pending = nil
	mustPanic(t, "a win with writes in flight", func() {
		w.pending = []journal.WriteRequest{{}}
		w.win(uA, journal.View{NextSeq: 1})
	})
}
