// This file checks the Writer on a multi-writer journal
// (docs/guide/client.md): it appends unfenced, a retry may append twice, and
// every reply is judged. Replies come from the fake journal (the real state
// machine).
package sansio

import (
	"errors"
	"testing"

	"github.com/parosdb/paros/core/journal"
)

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
