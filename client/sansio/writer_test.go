// This file checks the Writer against docs/guide/client.md ("Writer: the single
// owner" and "every ambiguous outcome"): a writer claims with SetLeader(fresh
// uuid, believed leader), fences every write, keeps each write until a
// verdict settles it, retries an ambiguous write with identical bytes at the
// same position, and stops once a verdict names another leader. This file
// holds the helpers and the tests of claiming, result kinds and uuids; the
// writes are in writer_writes_test.go, the multi-writer mode in
// writer_multi_test.go, truncation in writer_truncate_test.go and the
// pipelined writer in writer_pipelined_test.go. Every reply comes from the
// fake journal (the real state machine) except the ones a test loses on
// purpose, which it absorbs as the zero Reply, and the few malformed ones a
// server could send, which are written out.
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
