// This file checks the Pipeline against the table in its doc comment, one
// unit test per row: Written and Duplicate, the ambiguous and
// nothing-proposed replies, Refused, Superseded, BelowFloor, WrongMode and
// TooLarge. Each test plays the driver by hand (helpers in pipeline_test.go);
// timers fire when the test calls Wake, so nothing sleeps. One of them pinned
// a bug this suite found: a TooLarge answer after an ambiguous attempt must
// stay ambiguous.
package sansio

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/parosdb/paros/core/journal"
)

func TestPipelineWrittenAndDuplicateCompleteTheAppendsAtTheirPositions(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	p := claimedPipeline(t, f, uA, PipelineOptions{})
	a, seqA := pappend(t, p, "a1", "a2")
	b, seqB := pappend(t, p, "b")

	s1 := send(t, p)
	written := settledAfter(t, p, func() { p.Absorb(s1.ID, f.write(s1.Req), true) })
	c, seqC := pappend(t, p, "c")
	s2 := send(t, p)
	f.write(s2.Req) // lands; the test answers with a second delivery
	dup := settledAfter(t, p, func() { p.Absorb(s2.ID, f.write(s2.Req), true) })

	if seqA != 1 || seqB != 3 || seqC != 4 || s1.Req.Seq != 1 || s1.Req.Leader != uA || s2.Req.Seq != 4 {
		t.Fatalf("appends at %d, %d, %d; writes at %d and %d", seqA, seqB, seqC, s1.Req.Seq, s2.Req.Seq)
	}
	if len(written) != 2 || written[a] != (Completion{ID: a, Seq: 1}) || written[b] != (Completion{ID: b, Seq: 3}) {
		t.Fatalf("Written completes %+v, want a at 1 and b at 3", written)
	}
	if len(dup) != 1 || dup[c] != (Completion{ID: c, Seq: 4}) {
		t.Fatalf("Duplicate completes %+v, want c at 4", dup)
	}
	if got := logOf(f); !slices.Equal(got, []string{"a1", "a2", "b", "c"}) {
		t.Fatalf("log %q", got)
	}
	if st := p.Stats(); st.Writes != 2 || st.Appends != 3 || st.Sends != 2 || !p.Idle() || p.TakeFailed() != nil {
		t.Fatalf("stats %+v, idle %v", st, p.Idle())
	}
}

func TestPipelineResendsAnAmbiguousWriteIdenticallyAtTheSamePosition(t *testing.T) {
	for _, landed := range []bool{true, false} {
		f := newFakeJournal(journal.ModeSingle)
		p := claimedPipeline(t, f, uA, PipelineOptions{})
		buf := recs("payload")
		id, _, _ := p.Append(buf)
		buf[0][0] = 'X' // the caller reuses its buffer; the resend must not change
		s1 := send(t, p)
		if landed {
			f.write(s1.Req)
		}

		p.Absorb(s1.ID, journal.Reply{}, true)
		timers := p.Timers()
		pappend(t, p, "later")
		noSend(t, p, "in backoff")
		p.Wake(s1.ID)
		s2 := send(t, p)
		verdict := f.write(s2.Req)
		p.Absorb(s2.ID, verdict, true)

		if len(timers) != 1 || timers[0] != (Timer{ID: s1.ID, After: BackoffMin}) {
			t.Fatalf("landed %v: timers %+v, want one for write %d after %v", landed, timers, s1.ID, BackoffMin)
		}
		if s2.ID != s1.ID || s2.Attempt != 2 || !sameRequest(s1.Req, s2.Req) || string(s2.Req.Records[0]) != "payload" {
			t.Fatalf("landed %v: resend %+v is not the identical %+v", landed, s2, s1)
		}
		want := journal.Accepted
		if landed {
			want = journal.Duplicate
		}
		if verdict.Outcome.Kind != want {
			t.Fatalf("landed %v: the resend was %s, want %s", landed, verdict.Outcome.Kind, want)
		}
		if done := settled(t, p); len(done) != 1 || done[id] != (Completion{ID: id, Seq: 1}) {
			t.Fatalf("landed %v: completions %+v", landed, done)
		}
		if got := logOf(f); !slices.Equal(got, []string{"payload"}) {
			t.Fatalf("landed %v: log %q", landed, got)
		}
		if st := p.Stats(); st.Ambiguous != 1 || st.Sends != 2 || st.Unsent != 0 {
			t.Fatalf("landed %v: stats %+v", landed, st)
		}
	}
}

func TestPipelineResendsAfterATimerEveryReplyThatGaveNoVerdict(t *testing.T) {
	for _, tc := range []struct {
		name      string
		rep       journal.Reply
		received  bool
		ambiguous bool
	}{
		{"no answer", journal.Reply{}, true, true},
		{"lost", journal.Reply{NoVerdict: journal.Lost}, true, true},
		{"unavailable", journal.Reply{NoVerdict: journal.Unavailable}, true, true},
		{"unheld", journal.Reply{Outcome: journal.Outcome{Kind: journal.Unheld}}, true, true},
		{"redirect", journal.Reply{NoVerdict: journal.NotLeader, LeaderHint: 2}, true, false},
		{"busy", journal.Reply{NoVerdict: journal.Busy}, true, false},
		{"unknown journal", journal.Reply{NoVerdict: journal.UnknownJournal}, true, false},
		{"unsent", journal.Reply{Outcome: journal.Outcome{Kind: journal.Accepted, Seq: 1, Count: 1}}, false, false},
	} {
		f := newFakeJournal(journal.ModeSingle)
		p := claimedPipeline(t, f, uA, PipelineOptions{})
		id, _ := pappend(t, p, "x")
		s1 := send(t, p)

		p.Absorb(s1.ID, tc.rep, tc.received)
		timers := p.Timers()
		noSend(t, p, tc.name+", before the wake-up")
		p.Wake(s1.ID)
		s2 := send(t, p)
		p.Absorb(s2.ID, f.write(s2.Req), true)

		if len(timers) != 1 || timers[0].ID != s1.ID || timers[0].After != BackoffMin {
			t.Fatalf("%s: timers %+v", tc.name, timers)
		}
		if !sameRequest(s1.Req, s2.Req) || s2.Attempt != 2 {
			t.Fatalf("%s: resend %+v differs from %+v", tc.name, s2, s1)
		}
		if done := settled(t, p); done[id] != (Completion{ID: id, Seq: 1}) || len(f.log) != 1 {
			t.Fatalf("%s: completions %+v, log %q", tc.name, done, logOf(f))
		}
		st := p.Stats()
		if (st.Ambiguous == 1) != tc.ambiguous || (st.Unsent == 1) != !tc.received || st.Ambiguous+st.Unsent > 1 {
			t.Fatalf("%s: stats %+v", tc.name, st)
		}
	}
}

func TestPipelineBackoffDoublesUpToBackoffMax(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	p := claimedPipeline(t, f, uA, PipelineOptions{})
	pappend(t, p, "x")
	var got []time.Duration

	for range 8 {
		s := send(t, p)
		p.Absorb(s.ID, journal.Reply{}, true)
		for _, tm := range p.Timers() {
			got = append(got, tm.After)
			p.Wake(tm.ID)
		}
	}

	want := []time.Duration{BackoffMin, 2 * BackoffMin, 4 * BackoffMin, 8 * BackoffMin, 16 * BackoffMin, 32 * BackoffMin, BackoffMax, BackoffMax}
	if !slices.Equal(got, want) {
		t.Fatalf("backoffs %v, want %v", got, want)
	}
}

// twoOut returns a pipeline with write 1 ("a" at 1) and write 2 ("b" at
// 2) both out, and their ids and attempts.
func twoOut(t *testing.T, f *fakeJournal) (*Pipeline, AppendID, AppendID, Send, Send) {
	t.Helper()
	p := claimedPipeline(t, f, uA, PipelineOptions{})
	a, _ := pappend(t, p, "a")
	s1 := send(t, p)
	b, _ := pappend(t, p, "b")
	s2 := send(t, p)
	if s1.Req.Seq != 1 || s2.Req.Seq != 2 {
		t.Fatalf("writes at %d and %d, want 1 and 2", s1.Req.Seq, s2.Req.Seq)
	}
	return p, a, b, s1, s2
}

func TestPipelineARefusedWriteWaitsUntilTheEarlierWriteSettles(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	p, a, b, s1, s2 := twoOut(t, f)

	refused := f.write(s2.Req) // write 2 overtakes write 1
	p.Absorb(s2.ID, refused, true)
	timers := p.Timers()
	noSend(t, p, "write 1 is still out")
	p.Absorb(s1.ID, f.write(s1.Req), true)
	first := settled(t, p)
	resend := send(t, p)
	p.Absorb(resend.ID, f.write(resend.Req), true)
	second := settled(t, p)

	if refused.Outcome.Kind != journal.Refused || len(timers) != 0 {
		t.Fatalf("write 2 first: %s, timers %+v", refused.Outcome.Kind, timers)
	}
	if len(first) != 1 || first[a] != (Completion{ID: a, Seq: 1}) {
		t.Fatalf("after write 1: %+v", first)
	}
	if resend.ID != s2.ID || resend.Attempt != 2 || !sameRequest(resend.Req, s2.Req) {
		t.Fatalf("resend %+v, want write 2 identical", resend)
	}
	if len(second) != 1 || second[b] != (Completion{ID: b, Seq: 2}) || !slices.Equal(logOf(f), []string{"a", "b"}) {
		t.Fatalf("after write 2: %+v, log %q", second, logOf(f))
	}
	if st := p.Stats(); st.Refused != 1 || st.RefusedWhileOut != 1 || st.Sends != 3 || st.Writes != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestPipelineARefusedWriteIsResentRightAfterTheEarlierWriteIsQueuedAgain(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	p, a, b, s1, s2 := twoOut(t, f)

	p.Absorb(s2.ID, f.write(s2.Req), true) // refused: write 1 has not applied
	p.Absorb(s1.ID, journal.Reply{}, true) // write 1's request was lost
	noSend(t, p, "write 1 in backoff, write 2 waiting for it")
	p.Wake(s1.ID)
	r1, ok1 := p.Next()
	_, early := p.Next()
	p.Left(r1.ID)
	r2, ok2 := p.Next()
	p.Left(r2.ID)
	p.Absorb(r1.ID, f.write(r1.Req), true)
	p.Absorb(r2.ID, f.write(r2.Req), true)

	if !ok1 || !ok2 || early || r1.ID != s1.ID || r2.ID != s2.ID || !sameRequest(r1.Req, s1.Req) || !sameRequest(r2.Req, s2.Req) {
		t.Fatalf("resends %+v then %+v (one before the first left: %v), want write 1 then write 2", r1, r2, early)
	}
	if done := settled(t, p); done[a] != (Completion{ID: a, Seq: 1}) || done[b] != (Completion{ID: b, Seq: 2}) {
		t.Fatalf("completions %+v", done)
	}
	if !slices.Equal(logOf(f), []string{"a", "b"}) || !p.Idle() {
		t.Fatalf("log %q", logOf(f))
	}
}

func TestPipelineResendsInPositionOrder(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	p, a, b, s1, s2 := twoOut(t, f)
	p.Absorb(s2.ID, journal.Reply{NoVerdict: journal.Busy}, true)
	p.Absorb(s1.ID, journal.Reply{NoVerdict: journal.Busy}, true)

	p.Wake(s2.ID)
	p.Wake(s1.ID)
	r1, r2 := send(t, p), send(t, p)
	p.Absorb(r1.ID, f.write(r1.Req), true)
	p.Absorb(r2.ID, f.write(r2.Req), true)

	if r1.ID != s1.ID || r2.ID != s2.ID {
		t.Fatalf("resent write %d then %d, want %d then %d", r1.ID, r2.ID, s1.ID, s2.ID)
	}
	if done := settled(t, p); done[a].Err != nil || done[b].Err != nil || p.Stats().Refused != 0 {
		t.Fatalf("completions %+v, stats %+v", done, p.Stats())
	}
}

func TestPipelineSupersededStopsAndFailsTheAppendsNotYetSent(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	p := claimedPipeline(t, f, uA, PipelineOptions{})
	a, _ := pappend(t, p, "a")
	s1 := send(t, p)
	b, _ := pappend(t, p, "b") // queued, never cut
	f.claimAs(uB)

	p.Absorb(s1.ID, f.write(s1.Req), true)
	done := settled(t, p)
	_, _, appendErr := p.Append(recs("c"))

	for _, id := range []AppendID{a, b} {
		if err := done[id].Err; !errors.Is(err, ErrSuperseded) || errors.Is(err, ErrAmbiguous) {
			t.Fatalf("append %d: %v, want ErrSuperseded (not written)", id, err)
		}
	}
	if !errors.Is(p.Stopped(), ErrSuperseded) || appendErr != p.Stopped() || p.Holding() || p.Fence().IsSet() {
		t.Fatalf("stopped %v, Append %v, holding %v", p.Stopped(), appendErr, p.Holding())
	}
	noSend(t, p, "stopped")
	if len(f.log) != 0 || !p.Idle() || p.Outstanding() != 0 || !errors.Is(p.TakeFailed(), ErrSuperseded) || p.TakeFailed() != nil {
		t.Fatalf("log %q, outstanding %d", logOf(f), p.Outstanding())
	}
	if _, err := p.Truncate(1); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("Truncate after the stop: %v", err)
	}
}

func TestPipelineStopResendsARefusedWriteOnceToLearnItsVerdict(t *testing.T) {
	// The stop that follows a rival's claim: write 2, refused, is resent
	// and superseded in turn.
	f := newFakeJournal(journal.ModeSingle)
	p, a, b, s1, s2 := twoOut(t, f)
	p.Absorb(s2.ID, f.write(s2.Req), true) // refused
	f.claimAs(uB)

	p.Absorb(s1.ID, f.write(s1.Req), true)
	resend := send(t, p)
	p.Absorb(resend.ID, f.write(resend.Req), true)
	done := settled(t, p)

	if resend.ID != s2.ID || !sameRequest(resend.Req, s2.Req) {
		t.Fatalf("resend %+v, want write 2", resend)
	}
	if !errors.Is(done[a].Err, ErrSuperseded) || !errors.Is(done[b].Err, ErrSuperseded) || errors.Is(done[b].Err, ErrAmbiguous) {
		t.Fatalf("completions %+v", done)
	}

	// A stop that leaves the tail where it was (TooLarge): write 2 stays
	// ahead of the tail, and is ambiguous.
	f = newFakeJournal(journal.ModeSingle)
	p, a, b, s1, s2 = twoOut(t, f)
	p.Absorb(s2.ID, f.write(s2.Req), true) // refused

	p.Absorb(s1.ID, journal.Reply{NoVerdict: journal.TooLarge}, true)
	resend = send(t, p)
	p.Absorb(resend.ID, f.write(resend.Req), true)
	done = settled(t, p)

	if !errors.Is(done[a].Err, ErrTooLarge) || !errors.Is(done[b].Err, ErrAmbiguous) || !p.Idle() {
		t.Fatalf("completions %+v", done)
	}

	// A stop by a truncation that names the rival: write 2, refused, is
	// resent at once, with write 1 still out.
	f = newFakeJournal(journal.ModeSingle)
	p, _, b, _, s2 = twoOut(t, f)
	p.Absorb(s2.ID, f.write(s2.Req), true) // refused
	f.claimAs(uB)
	tr, _ := p.Truncate(1)

	res := p.AbsorbTruncate(tr, f.truncate(tr))
	resend = send(t, p)
	p.Absorb(resend.ID, f.write(resend.Req), true)
	done = settled(t, p)

	if res.Kind != ResultSuperseded || !errors.Is(p.Stopped(), ErrSuperseded) || resend.ID != s2.ID || !errors.Is(done[b].Err, ErrSuperseded) {
		t.Fatalf("truncate %s, stopped %v, resend %+v, completions %+v", res.Kind, p.Stopped(), resend, done)
	}
}

func TestPipelineTruncatedFailsTheWriteWithErrTruncated(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	p := claimedPipeline(t, f, uA, PipelineOptions{})
	id, _ := pappend(t, p, "x")
	s1 := send(t, p)
	f.write(s1.Req)                        // lands
	p.Absorb(s1.ID, journal.Reply{}, true) // its answer is lost
	tr, err := p.Truncate(2)
	if res := p.AbsorbTruncate(tr, f.truncate(tr)); err != nil || res.Kind != ResultTrimmed {
		t.Fatalf("truncate: %v, %s", err, res.Kind)
	}

	p.Wake(s1.ID)
	s2 := send(t, p)
	p.Absorb(s2.ID, f.write(s2.Req), true)
	done := settled(t, p)
	_, seq, appendErr := p.Append(recs("y"))

	if !errors.Is(done[id].Err, ErrBelowFloor) || done[id].Seq != 1 {
		t.Fatalf("completion %+v, want ErrBelowFloor", done[id])
	}
	if p.Stopped() != nil || appendErr != nil || seq != 2 {
		t.Fatalf("BelowFloor is final for the write only: stopped %v, Append at %d: %v", p.Stopped(), seq, appendErr)
	}
}

func TestPipelineWrongModeAndTooLargeFailTheWriteAndStop(t *testing.T) {
	for _, tc := range []struct {
		name string
		rep  func(journal.WriteRequest) journal.Reply
		want error
	}{
		{"wrong mode", newFakeJournal(journal.ModeMulti).write, ErrWrongMode},
		{"too large", func(journal.WriteRequest) journal.Reply { return journal.Reply{NoVerdict: journal.TooLarge} }, ErrTooLarge},
	} {
		f := newFakeJournal(journal.ModeSingle)
		p := claimedPipeline(t, f, uA, PipelineOptions{})
		a, _ := pappend(t, p, "a")
		s1 := send(t, p)
		b, _ := pappend(t, p, "b")

		p.Absorb(s1.ID, tc.rep(s1.Req), true)
		done := settled(t, p)
		_, _, appendErr := p.Append(recs("c"))

		if !errors.Is(done[a].Err, tc.want) || !errors.Is(done[b].Err, tc.want) || errors.Is(done[b].Err, ErrAmbiguous) {
			t.Fatalf("%s: completions %+v", tc.name, done)
		}
		if !errors.Is(p.Stopped(), tc.want) || !errors.Is(appendErr, tc.want) || !p.Idle() {
			t.Fatalf("%s: stopped %v, Append %v", tc.name, p.Stopped(), appendErr)
		}
	}
}

// TestPipelineATooLargeVerdictOnAResendIsAmbiguous: a server with lower
// limits answers TooLarge to the resend of a write whose first attempt
// landed elsewhere. TooLarge says only that this attempt proposed nothing,
// so the append may be in the log and its error must wrap ErrAmbiguous
// (Pipeline doc: "each wrapping ErrAmbiguous when the records may still
// have landed").
func TestPipelineATooLargeVerdictOnAResendIsAmbiguous(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	p := claimedPipeline(t, f, uA, PipelineOptions{})
	id, _ := pappend(t, p, "x")
	s1 := send(t, p)
	f.write(s1.Req) // lands; the answer is lost
	p.Absorb(s1.ID, journal.Reply{}, true)
	p.Wake(s1.ID)

	s2 := send(t, p)
	p.Absorb(s2.ID, journal.Reply{NoVerdict: journal.TooLarge}, true)
	done := settled(t, p)

	if !slices.Equal(logOf(f), []string{"x"}) {
		t.Fatalf("log %q: the first attempt landed", logOf(f))
	}
	if err := done[id].Err; !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("the append landed at 1 but completed with %v, which does not wrap ErrAmbiguous", err)
	}
}
