// This file checks the Writer's Truncate (docs/guide/client.md): it is
// fenced, its outcomes are judged, and its edge cases. Replies come from the
// fake journal (the real state machine).
package sansio

import (
	"errors"
	"testing"

	"github.com/parosdb/paros/core/journal"
)

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
