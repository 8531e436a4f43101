// This file checks the Pipeline, the sans-IO scheduler in front of a
// single-writer Writer, against the table in its doc comment: one unit
// test per row (Written and Duplicate, the ambiguous and nothing-proposed
// replies, Refused, Superseded, BelowFloor, WrongMode and TooLarge), then
// BeginClaim, Close, WriteAttemptsMax, the window, coalescing, the
// one-request-leaving rule and the Stats counters. Each test plays the
// driver by hand: it appends, takes attempts from Next, applies them to the
// fake journal (the real state machine) and absorbs the replies, losing one
// on purpose by absorbing the zero Reply; timers fire when the test calls
// Wake, so nothing sleeps. Two of them pinned bugs this suite found: a
// TooLarge answer after an ambiguous attempt must stay ambiguous, and
// Close is for good.
//
// The last test is a property test against the fake journal as the model.
// A seeded driver (500 seeds) runs the pipeline over a simulated link that
// drops requests (some still land late), drops replies, reorders
// deliveries, reports unsent attempts and fires timers in random order,
// while a rival now and then takes the journal, the owner claims it back
// (with lost claims too), and truncations raise the floor. After every
// step it checks: no append completes twice; an append reported written
// holds its exact bytes at its position, and no two overlap; no record
// lands anywhere but the position Append returned; an append completed
// with an error that does not wrap ErrAmbiguous or ErrBelowFloor never
// lands; every attempt of a write is identical; Next never hands out an
// attempt before the previous one left, past WritesOut, or for an append
// already completed; and the pipeline's own invariants hold. With the
// faults off it then drives the pipeline to quiescence: every append
// completes, and fresh appends are all written.
package sansio

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parosdb/paros/core/journal"
)

// claimedPipeline returns a pipeline whose writer won a claim on f with
// uuid u; a later claim draws uC.
func claimedPipeline(t *testing.T, f *fakeJournal, u journal.LeaderUUID, o PipelineOptions) *Pipeline {
	t.Helper()
	p := NewPipeline(NewWriter(testID, fixedUUIDs(u, uC)), o)
	req := p.BeginClaim()
	if res := p.AbsorbClaim(req, f.setLeader(req)); res.Kind != ResultWon {
		t.Fatalf("claim: %s", res.Kind)
	}
	return p
}

// pappend appends records, which must be accepted.
func pappend(t *testing.T, p *Pipeline, rs ...string) (AppendID, journal.Seq) {
	t.Helper()
	id, seq, err := p.Append(recs(rs...))
	if err != nil {
		t.Fatalf("Append(%q): %v", rs, err)
	}
	return id, seq
}

// send takes the next attempt, which must be there, and lets it leave.
func send(t *testing.T, p *Pipeline) Send {
	t.Helper()
	s, ok := p.Next()
	if !ok {
		t.Fatalf("Next: nothing to send")
	}
	p.Left(s.ID)
	return s
}

// noSend fails if Next hands out an attempt.
func noSend(t *testing.T, p *Pipeline, why string) {
	t.Helper()
	if s, ok := p.Next(); ok {
		t.Fatalf("%s: Next handed out write %d, attempt %d", why, s.ID, s.Attempt)
	}
}

// settled drains the completions by append id; a repeated one fails.
func settled(t *testing.T, p *Pipeline) map[AppendID]Completion {
	t.Helper()
	out := map[AppendID]Completion{}
	for _, c := range p.Completions() {
		if _, dup := out[c.ID]; dup {
			t.Fatalf("append %d completed twice", c.ID)
		}
		out[c.ID] = c
	}
	return out
}

// settledAfter runs act and returns the completions it caused.
func settledAfter(t *testing.T, p *Pipeline, act func()) map[AppendID]Completion {
	t.Helper()
	if cs := p.Completions(); len(cs) != 0 {
		t.Fatalf("completions before the act: %+v", cs)
	}
	act()
	return settled(t, p)
}

// sameRequest reports whether a and b are the identical write: the same
// journal, uuid, position and bytes.
func sameRequest(a, b journal.WriteRequest) bool {
	return a.Journal == b.Journal &&
		journal.Entry{Leader: a.Leader, Seq: a.Seq, Records: a.Records}.Equal(journal.Entry{Leader: b.Leader, Seq: b.Seq, Records: b.Records})
}

// logOf returns the fake journal's log as strings.
func logOf(f *fakeJournal) []string {
	out := make([]string, len(f.log))
	for i, r := range f.log {
		out[i] = string(r)
	}
	return out
}

// recordsOf returns a write's records as strings.
func recordsOf(req journal.WriteRequest) []string {
	out := make([]string, len(req.Records))
	for i, r := range req.Records {
		out[i] = string(r)
	}
	return out
}

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

// abandonScript sends write 1 ("a"), queues "b" unsent, runs abandon, and
// then delivers write 1 late: it lands, and its answer is ignored.
func abandonScript(t *testing.T, abandon func(p *Pipeline)) (*fakeJournal, *Pipeline, map[AppendID]Completion, AppendID, AppendID) {
	t.Helper()
	f := newFakeJournal(journal.ModeSingle)
	p := claimedPipeline(t, f, uA, PipelineOptions{})
	a, _ := pappend(t, p, "a")
	s1 := send(t, p)
	b, _ := pappend(t, p, "b")

	abandon(p)
	done := settled(t, p)
	p.Absorb(s1.ID, f.write(s1.Req), true)
	if late := p.Completions(); len(late) != 0 || !p.Idle() {
		t.Fatalf("a late answer to an abandoned write completed %+v", late)
	}
	return f, p, done, a, b
}

func TestPipelineBeginClaimAbandonsTheAppendsOutstanding(t *testing.T) {
	var req journal.SetLeaderRequest
	f, p, done, a, b := abandonScript(t, func(p *Pipeline) { req = p.BeginClaim() })
	_, _, appendErr := p.Append(recs("c"))
	res := p.AbsorbClaim(req, f.setLeader(req))
	c, seqC := pappend(t, p, "c")
	s := send(t, p)
	p.Absorb(s.ID, f.write(s.Req), true)

	if err := done[a].Err; !errors.Is(err, ErrAmbiguous) || !errors.Is(err, ErrNotHolding) {
		t.Fatalf("sent append: %v, want ErrAmbiguous and ErrNotHolding", err)
	}
	if err := done[b].Err; !errors.Is(err, ErrNotHolding) || errors.Is(err, ErrAmbiguous) {
		t.Fatalf("unsent append: %v, want ErrNotHolding alone", err)
	}
	if req.Old != uA || req.New != uC || !errors.Is(appendErr, ErrNotHolding) {
		t.Fatalf("claim %+v, Append while claiming: %v", req, appendErr)
	}
	if res.Kind != ResultWon || p.Fence() != uC || seqC != 2 || p.NextSeq() != 3 {
		t.Fatalf("claim %s, fence %s: the late write landed at 1, so c goes at 2, not %d", res.Kind, p.Fence(), seqC)
	}
	if got := settled(t, p); got[c] != (Completion{ID: c, Seq: 2}) || !slices.Equal(logOf(f), []string{"a", "c"}) {
		t.Fatalf("after the claim: %+v, log %q", got, logOf(f))
	}
}

func TestPipelineBeginClaimResumesAStoppedPipelineAndResendsAnAmbiguousClaim(t *testing.T) {
	// Write 1 is in backoff (sent, no verdict) when a rival's claim
	// supersedes write 2 and stops the pipeline; write 1 is woken, and the
	// claim abandons it.
	f := newFakeJournal(journal.ModeSingle)
	p, a, b, s1, s2 := twoOut(t, f)
	p.Absorb(s1.ID, journal.Reply{}, true)
	f.claimAs(uB)
	p.Absorb(s2.ID, f.write(s2.Req), true)
	stopped := p.Stopped()
	p.Wake(s1.ID) // write 1 is queued for a resend when the claim begins

	first := p.BeginClaim()
	done := settled(t, p)
	f.setLeader(first) // lands; the answer is lost
	lost := p.AbsorbClaim(first, journal.Reply{})
	again := p.BeginClaim()
	won := p.AbsorbClaim(again, f.setLeader(again))

	if !errors.Is(stopped, ErrSuperseded) || !errors.Is(done[b].Err, ErrSuperseded) {
		t.Fatalf("stopped %v, write 2 %+v", stopped, done[b])
	}
	if err := done[a].Err; !errors.Is(err, ErrAmbiguous) || !errors.Is(err, ErrNotHolding) {
		t.Fatalf("an append in backoff when the claim began: %v", err)
	}
	if first.Old != uB || lost.Kind != ResultRetry || again != first || won.Kind != ResultWon || !won.Earlier {
		t.Fatalf("claim %+v, again %+v: %s then %s (earlier %v)", first, again, lost.Kind, won.Kind, won.Earlier)
	}
	if p.Stopped() != nil || !p.Holding() || p.NextSeq() != 1 {
		t.Fatalf("after the claim: stopped %v, holding %v, next %d", p.Stopped(), p.Holding(), p.NextSeq())
	}
	noSend(t, p, "an abandoned write that was queued")
}

func TestPipelineCloseFailsTheAppendsOutstandingWithErrClosed(t *testing.T) {
	_, p, done, a, b := abandonScript(t, (*Pipeline).Close)
	_, _, appendErr := p.Append(recs("c"))

	if err := done[a].Err; !errors.Is(err, ErrClosed) || !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("sent append: %v, want ErrClosed and ErrAmbiguous", err)
	}
	if err := done[b].Err; !errors.Is(err, ErrClosed) || errors.Is(err, ErrAmbiguous) {
		t.Fatalf("unsent append: %v, want ErrClosed alone", err)
	}
	if !errors.Is(appendErr, ErrClosed) || !errors.Is(p.Stopped(), ErrClosed) {
		t.Fatalf("after Close: Append %v, stopped %v", appendErr, p.Stopped())
	}
	noSend(t, p, "closed")
}

// TestPipelineCloseIsForGood: Close "stops the pipeline for good", so a
// later BeginClaim must not resume it.
func TestPipelineCloseIsForGood(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	p := claimedPipeline(t, f, uA, PipelineOptions{})
	p.Close()

	req := p.BeginClaim()
	p.AbsorbClaim(req, f.setLeader(req))
	_, _, err := p.Append(recs("after close"))

	if !errors.Is(p.Stopped(), ErrClosed) || !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close and a claim: stopped %v, Append %v", p.Stopped(), err)
	}
}

func TestPipelineStopsAfterWriteAttemptsMaxAttemptsWithoutAVerdict(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	p := claimedPipeline(t, f, uA, PipelineOptions{})
	a, _ := pappend(t, p, "a")
	var b AppendID

	for i := 1; i <= WriteAttemptsMax; i++ {
		s := send(t, p)
		if s.Attempt != i {
			t.Fatalf("attempt %d, want %d", s.Attempt, i)
		}
		if i == 2 {
			b, _ = pappend(t, p, "b") // queued behind a write in backoff: never sent
		}
		p.Absorb(s.ID, journal.Reply{}, true)
		for _, tm := range p.Timers() {
			p.Wake(tm.ID)
		}
	}
	done := settled(t, p)
	_, _, appendErr := p.Append(recs("c"))

	if err := done[a].Err; !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), fmt.Sprint(WriteAttemptsMax)) {
		t.Fatalf("after %d attempts: %v", WriteAttemptsMax, err)
	}
	if _, ok := done[b]; !ok || !errors.Is(p.Stopped(), ErrAmbiguous) || !errors.Is(appendErr, ErrAmbiguous) {
		t.Fatalf("unsent append %+v, stopped %v, Append %v", done[b], p.Stopped(), appendErr)
	}
	if st := p.Stats(); st.Sends != WriteAttemptsMax || st.Ambiguous != WriteAttemptsMax-1 || !p.Idle() {
		t.Fatalf("stats %+v", st)
	}
	noSend(t, p, "stopped")
}

func TestPipelineAppendRefusals(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	unclaimed := NewPipeline(NewWriter(testID, fixedUUIDs(uA)), PipelineOptions{})
	p := claimedPipeline(t, f, uA, PipelineOptions{Window: 2})

	_, _, notHolding := unclaimed.Append(recs("x"))
	_, _, empty := p.Append(nil)
	_, _, many := p.Append(make([][]byte, journal.WriteRecordsMax+1))
	_, _, big := p.Append([][]byte{make([]byte, journal.WriteBytesMax+1)})
	a, _ := pappend(t, p, "a")
	b, _ := pappend(t, p, "b")
	_, _, full := p.Append(recs("c"))
	s := send(t, p)
	p.Absorb(s.ID, f.write(s.Req), true)
	done := settled(t, p)
	_, seqC, again := p.Append(recs("c"))

	if !errors.Is(notHolding, ErrNotHolding) || !errors.Is(empty, ErrEmptyBatch) || !errors.Is(many, ErrTooLarge) || !errors.Is(big, ErrTooLarge) {
		t.Fatalf("not holding %v, empty %v, many %v, big %v", notHolding, empty, many, big)
	}
	if !errors.Is(full, ErrWindowFull) || p.Stopped() != nil {
		t.Fatalf("a third append in a window of 2: %v", full)
	}
	if done[a].Err != nil || done[b].Err != nil || again != nil || seqC != 3 || p.Outstanding() != 1 {
		t.Fatalf("after a completion: %+v, Append at %d: %v", done, seqC, again)
	}
	mustPanic(t, "a pipeline over a multi-writer", func() { NewPipeline(NewMultiWriter(testID), PipelineOptions{}) })
}

func TestPipelineOptionsTakeDefaultsAndBounds(t *testing.T) {
	p := NewPipeline(NewWriter(testID, fixedUUIDs(uA)), PipelineOptions{})
	def := p.Options()
	p.SetOptions(PipelineOptions{Window: WindowMax + 1, WritesOut: WritesInFlightMax + 1})
	big := p.Options()
	p.SetOptions(PipelineOptions{Window: 2, WritesOut: 8})
	small := p.Options()

	if def.Window != DefaultWindow || def.WritesOut != DefaultWritesOut || def.NoCoalesce {
		t.Fatalf("defaults %+v", def)
	}
	if big.Window != WindowMax || big.WritesOut != WritesInFlightMax || small.WritesOut != 2 {
		t.Fatalf("bounded %+v and %+v", big, small)
	}
}

func TestPipelineCoalescesTheAppendsQueuedWhileWritesAreOut(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	p := claimedPipeline(t, f, uA, PipelineOptions{WritesOut: 1})
	pappend(t, p, "a")
	s1 := send(t, p)
	b, _ := pappend(t, p, "b")
	c, seqC := pappend(t, p, "c1", "c2")
	d, seqD := pappend(t, p, "d")

	noSend(t, p, "WritesOut writes are out")
	p.Absorb(s1.ID, f.write(s1.Req), true)
	p.Completions()
	s2 := send(t, p)
	p.Absorb(s2.ID, f.write(s2.Req), true)
	done := settled(t, p)

	if s2.Req.Seq != 2 || !slices.Equal(recordsOf(s2.Req), []string{"b", "c1", "c2", "d"}) || seqC != 3 || seqD != 5 {
		t.Fatalf("the coalesced write %+v", s2.Req)
	}
	if done[b] != (Completion{ID: b, Seq: 2}) || done[c] != (Completion{ID: c, Seq: 3}) || done[d] != (Completion{ID: d, Seq: 5}) {
		t.Fatalf("completions %+v", done)
	}
	if st := p.Stats(); st.Writes != 2 || st.Appends != 4 {
		t.Fatalf("stats %+v", st)
	}
}

func TestPipelineCutsAWriteAtTheBatchLimits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first [][]byte
		then  [][]byte
	}{
		{"records", make([][]byte, journal.WriteRecordsMax-10), make([][]byte, 11)},
		{"bytes", [][]byte{make([]byte, journal.WriteBytesMax/2+1)}, [][]byte{make([]byte, journal.WriteBytesMax/2)}},
	} {
		p := claimedPipeline(t, newFakeJournal(journal.ModeSingle), uA, PipelineOptions{})
		for _, batch := range [][][]byte{tc.first, tc.then} {
			for i := range batch {
				if batch[i] == nil {
					batch[i] = []byte{'r'}
				}
			}
			if _, _, err := p.Append(batch); err != nil {
				t.Fatalf("%s: Append: %v", tc.name, err)
			}
		}

		s1 := send(t, p)
		s2 := send(t, p)

		if len(s1.Req.Records) != len(tc.first) || len(s2.Req.Records) != len(tc.then) || s2.Req.Seq != s1.Req.Seq+journal.Seq(len(tc.first)) {
			t.Fatalf("%s: writes of %d and %d records at %d and %d", tc.name, len(s1.Req.Records), len(s2.Req.Records), s1.Req.Seq, s2.Req.Seq)
		}
	}
}

func TestPipelineNoCoalesceCutsOneWritePerAppend(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	p := claimedPipeline(t, f, uA, PipelineOptions{NoCoalesce: true})
	for _, r := range []string{"a", "b", "c"} {
		pappend(t, p, r)
	}

	var got [][]string
	for range 3 {
		got = append(got, recordsOf(send(t, p).Req))
	}

	if !slices.EqualFunc(got, [][]string{{"a"}, {"b"}, {"c"}}, slices.Equal) {
		t.Fatalf("writes %q", got)
	}
}

func TestPipelineNextWaitsForThePreviousAttemptToLeaveAndForWritesOut(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	p := claimedPipeline(t, f, uA, PipelineOptions{NoCoalesce: true, WritesOut: 2})
	for _, r := range []string{"a", "b", "c", "d"} {
		pappend(t, p, r)
	}

	s1, _ := p.Next()
	_, beforeLeft := p.Next()
	p.Left(s1.ID + 100) // another attempt's Left changes nothing
	_, otherLeft := p.Next()
	p.Left(s1.ID)
	s2, afterLeft := p.Next()
	p.Left(s2.ID)
	_, full := p.Next()
	p.Absorb(s1.ID, f.write(s1.Req), true)
	s3, third := p.Next()
	p.Absorb(s3.ID, journal.Reply{NoVerdict: journal.Busy}, true) // an answer counts as Left
	p.Absorb(s2.ID, f.write(s2.Req), true)
	p.Timers()
	p.Wake(s3.ID)
	s4, fourth := p.Next()

	if beforeLeft || otherLeft || !afterLeft {
		t.Fatalf("Next before Left %v, after another's Left %v, after Left %v", beforeLeft, otherLeft, afterLeft)
	}
	if full || !third || s3.Req.Seq != 3 {
		t.Fatalf("Next with WritesOut writes out %v; after one settled %v (%+v)", full, third, s3)
	}
	if !fourth || s4.ID != s3.ID || s4.Attempt != 2 {
		t.Fatalf("after an answer that left no Left: %+v (%v), want write 3's resend", s4, fourth)
	}
}

func TestPipelineStatsCountWhatHappened(t *testing.T) {
	// Write 1 (a at 1) and write 2 (b at 2) out; write 2 overtakes write 1
	// (refused while out), write 1 reaches no server (unsent), both are
	// resent, write 1 lands but its answer is lost (ambiguous), write 2 is
	// written, write 1's last resend is a duplicate. Then write 3 (c at 3)
	// is lost and write 4 (d at 4) refused with nothing else out.
	f := newFakeJournal(journal.ModeSingle)
	p, _, _, s1, s2 := twoOut(t, f)
	var st []PipelineStats

	p.Absorb(s2.ID, f.write(s2.Req), true)
	st = append(st, p.Stats())
	p.Absorb(s1.ID, journal.Reply{}, false)
	st = append(st, p.Stats())
	p.Wake(s1.ID)
	r1, r2 := send(t, p), send(t, p)
	f.write(r1.Req)
	p.Absorb(r1.ID, journal.Reply{}, true)
	st = append(st, p.Stats())
	p.Absorb(r2.ID, f.write(r2.Req), true)
	st = append(st, p.Stats())
	p.Wake(s1.ID)
	r3 := send(t, p)
	p.Absorb(r3.ID, f.write(r3.Req), true)
	st = append(st, p.Stats())
	pappend(t, p, "c")
	s3 := send(t, p)
	pappend(t, p, "d")
	s4 := send(t, p)
	p.Absorb(s3.ID, journal.Reply{}, true)
	p.Absorb(s4.ID, f.write(s4.Req), true)
	st = append(st, p.Stats())

	want := []PipelineStats{
		{Sends: 2, Refused: 1, RefusedWhileOut: 1},
		{Sends: 2, Refused: 1, RefusedWhileOut: 1, Unsent: 1},
		{Sends: 4, Refused: 1, RefusedWhileOut: 1, Unsent: 1, Ambiguous: 1},
		{Sends: 4, Refused: 1, RefusedWhileOut: 1, Unsent: 1, Ambiguous: 1, Writes: 1, Appends: 1},
		{Sends: 5, Refused: 1, RefusedWhileOut: 1, Unsent: 1, Ambiguous: 1, Writes: 2, Appends: 2},
		{Sends: 7, Refused: 2, RefusedWhileOut: 1, Unsent: 1, Ambiguous: 2, Writes: 2, Appends: 2},
	}
	for i := range want {
		if st[i] != want[i] {
			t.Fatalf("after step %d: %+v, want %+v", i+1, st[i], want[i])
		}
	}
}

func TestThePipelineAssertsItsInvariants(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	p := claimedPipeline(t, f, uA, PipelineOptions{NoCoalesce: true})
	pappend(t, p, "a")
	pappend(t, p, "b")
	pappend(t, p, "c")
	send(t, p)
	send(t, p)

	p.writes[0], p.writes[1] = p.writes[1], p.writes[0]
	mustPanic(t, "writes out of order", p.assertInvariants)
	p.writes[0], p.writes[1] = p.writes[1], p.writes[0]
	p.queued[0].seq = 2
	mustPanic(t, "an append queued inside a write", p.assertInvariants)
	p.queued[0].seq = 3
	p.appends = -1
	mustPanic(t, "negative appends", p.assertInvariants)
	p.appends, p.out = 3, 0
	mustPanic(t, "an answer with nothing out", func() { p.Absorb(1, journal.Reply{}, true) })
}

// The property test.

// simAttempt is one attempt on the simulated link.
type simAttempt struct {
	s       Send
	left    bool
	applied bool
	reply   journal.Reply
}

// simAppend is what the driver knows of one append.
type simAppend struct {
	seq     journal.Seq
	records []string
	done    bool
	ok      bool // completed as written
	gone    bool // completed with an error that says it was not written
	landed  bool // some of its records are in the log
}

type recordAt struct {
	id  AppendID
	idx int
}

// simTally counts, across seeds, what the faults provoked.
type simTally struct {
	duplicate, refused, superseded, truncated, abandoned, ghostLanded, windowFull, claims int
	stats                                                                                 PipelineStats
}

// pipeSim drives one pipeline against one fake journal.
type pipeSim struct {
	t      *testing.T
	seed   uint64
	rnd    *rand.Rand
	f      *fakeJournal
	p      *Pipeline
	rival  func() journal.LeaderUUID
	faults bool
	tally  *simTally

	appends     map[AppendID]*simAppend
	records     map[string]recordAt
	owner       map[journal.Seq]AppendID // positions of appends written
	requests    map[WriteID]Send         // the first attempt of every write
	link        []*simAttempt            // attempts out, in the order handed out
	ghosts      []journal.WriteRequest   // requests timed out but still on the wire
	timers      []Timer
	outstanding int
	checked     int // log entries checked
	tags        int
	sends       uint64 // attempts handed out
	written     uint64 // appends completed as written
	writesOut   int    // the largest WritesOut in force so far
	step        int
	trace       []traceLine
}

func newPipeSim(t *testing.T, seed uint64, tally *simTally) *pipeSim {
	rnd := rand.New(rand.NewPCG(seed, 0x5eed))
	o := PipelineOptions{
		Window:     []int{1, 3, 8, 16, 64, 0}[rnd.IntN(6)],
		WritesOut:  1 + rnd.IntN(6),
		NoCoalesce: rnd.IntN(5) == 0,
	}
	s := &pipeSim{t: t, seed: seed, rnd: rnd, f: newFakeJournal(journal.ModeSingle),
		p:     NewPipeline(NewWriter(testID, SeededUUIDs(seed)), o),
		rival: SeededUUIDs(seed ^ 0xdead_beef), faults: true, tally: tally,
		appends: map[AppendID]*simAppend{}, records: map[string]recordAt{}, owner: map[journal.Seq]AppendID{},
		requests: map[WriteID]Send{}}
	s.writesOut = s.p.Options().WritesOut
	return s
}

// traceLine is one step of the trace, formatted only when a check fails.
type traceLine struct {
	step   int
	format string
	args   []any
}

// traceLinesMax bounds the trace a failure prints.
const traceLinesMax = 60

func (s *pipeSim) note(format string, args ...any) {
	if len(s.trace) == 2*traceLinesMax {
		s.trace = append(s.trace[:0], s.trace[traceLinesMax:]...)
	}
	s.trace = append(s.trace, traceLine{s.step, format, args})
}

func (s *pipeSim) fail(format string, args ...any) {
	s.t.Helper()
	var b strings.Builder
	for _, l := range s.trace[max(0, len(s.trace)-traceLinesMax):] {
		fmt.Fprintf(&b, "%5d "+l.format+"\n", append([]any{l.step}, l.args...)...)
	}
	s.t.Fatalf("seed %d, step %d: %s\nlast steps:\n%s", s.seed, s.step, fmt.Sprintf(format, args...), b.String())
}

// pick returns a random index into a slice of length n, or -1.
func (s *pipeSim) pick(n int) int {
	if n == 0 {
		return -1
	}
	return s.rnd.IntN(n)
}

func (s *pipeSim) doAppend() {
	n := 1 + s.rnd.IntN(3)
	rs := make([]string, n)
	for i := range rs {
		rs[i] = "k" + strconv.Itoa(s.tags) + "." + strconv.Itoa(i)
	}
	s.tags++
	id, seq, err := s.p.Append(recs(rs...))
	switch {
	case err == nil:
	case errors.Is(err, ErrWindowFull):
		s.tally.windowFull++
		if s.p.Outstanding() < s.p.Options().Window {
			s.fail("ErrWindowFull with %d outstanding in a window of %d", s.p.Outstanding(), s.p.Options().Window)
		}
		return
	case errors.Is(err, ErrNotHolding):
		if s.p.Holding() {
			s.fail("ErrNotHolding while holding")
		}
		return
	default:
		if err != s.p.Stopped() {
			s.fail("Append: %v, stopped %v", err, s.p.Stopped())
		}
		return
	}
	if _, dup := s.appends[id]; dup {
		s.fail("append id %d reused", id)
	}
	s.appends[id] = &simAppend{seq: seq, records: rs}
	for i, r := range rs {
		s.records[r] = recordAt{id, i}
	}
	s.outstanding++
	s.note("append %d at %d: %q", id, seq, rs)
}

func (s *pipeSim) doNext() {
	leaving := slices.ContainsFunc(s.link, func(a *simAttempt) bool { return !a.left })
	snd, ok := s.p.Next()
	if !ok {
		return
	}
	if leaving {
		s.fail("Next handed out write %d while the previous attempt had not left", snd.ID)
	}
	if first, seen := s.requests[snd.ID]; !seen {
		if snd.Attempt != 1 {
			s.fail("write %d first handed out as attempt %d", snd.ID, snd.Attempt)
		}
		s.requests[snd.ID] = snd
	} else if !sameRequest(first.Req, snd.Req) {
		s.fail("write %d attempt %d differs from its first attempt", snd.ID, snd.Attempt)
	}
	if at, ok := s.records[string(snd.Req.Records[0])]; !ok || s.appends[at.id].done {
		s.fail("Next handed out write %d at %d for an append that is not outstanding", snd.ID, snd.Req.Seq)
	}
	for _, a := range s.link {
		if a.s.ID == snd.ID {
			s.fail("write %d handed out again while its attempt %d is out", snd.ID, a.s.Attempt)
		}
	}
	a := &simAttempt{s: snd}
	s.link = append(s.link, a)
	s.sends++
	if len(s.link) > s.writesOut {
		s.fail("%d attempts out, WritesOut %d", len(s.link), s.writesOut)
	}
	if s.rnd.IntN(4) != 0 {
		s.p.Left(snd.ID)
		a.left = true
	}
	s.note("next: write %d attempt %d at %d (%d records), left %v", snd.ID, snd.Attempt, snd.Req.Seq, len(snd.Req.Records), a.left)
}

func (s *pipeSim) doLeave() {
	for _, a := range s.link {
		if !a.left {
			s.p.Left(a.s.ID)
			a.left = true
			s.note("left: write %d", a.s.ID)
		}
	}
}

// apply delivers a request to the journal and tallies the verdict.
func (s *pipeSim) apply(req journal.WriteRequest) journal.Reply {
	rep := s.f.write(req)
	switch rep.Outcome.Kind {
	case journal.Duplicate:
		s.tally.duplicate++
	case journal.Refused:
		s.tally.refused++
	case journal.BelowFloor:
		s.tally.truncated++
	}
	return rep
}

func (s *pipeSim) doDeliver() {
	var ready []*simAttempt
	for _, a := range s.link {
		if a.left && !a.applied {
			ready = append(ready, a)
		}
	}
	if i := s.pick(len(ready)); i >= 0 {
		a := ready[i]
		a.applied, a.reply = true, s.apply(a.s.Req)
		s.note("deliver: write %d attempt %d at %d: %s", a.s.ID, a.s.Attempt, a.s.Req.Seq, a.reply.Outcome.Kind)
	}
}

func (s *pipeSim) doAnswer() {
	i := s.pick(len(s.link))
	if i < 0 {
		return
	}
	a := s.link[i]
	switch {
	case a.applied && (!s.faults || s.rnd.IntN(5) != 0):
		s.p.Absorb(a.s.ID, a.reply, true)
		s.note("answer: write %d attempt %d: %s", a.s.ID, a.s.Attempt, a.reply.Outcome.Kind)
	case a.applied:
		s.p.Absorb(a.s.ID, journal.Reply{}, true)
		s.note("answer lost: write %d attempt %d (applied: %s)", a.s.ID, a.s.Attempt, a.reply.Outcome.Kind)
	case !s.faults:
		return // deliver it first
	case s.rnd.IntN(3) == 0:
		s.p.Absorb(a.s.ID, journal.Reply{}, false)
		s.note("unsent: write %d attempt %d", a.s.ID, a.s.Attempt)
	default:
		ghost := a.left && s.rnd.IntN(2) == 0
		if ghost {
			s.ghosts = append(s.ghosts, a.s.Req)
		}
		s.p.Absorb(a.s.ID, journal.Reply{}, true)
		s.note("timeout: write %d attempt %d, request still on the wire %v", a.s.ID, a.s.Attempt, ghost)
	}
	s.link = slices.Delete(s.link, i, i+1)
}

func (s *pipeSim) doWake() {
	if i := s.pick(len(s.timers)); i >= 0 {
		tm := s.timers[i]
		s.timers = slices.Delete(s.timers, i, i+1)
		s.p.Wake(tm.ID)
		s.note("wake: write %d", tm.ID)
	}
}

func (s *pipeSim) doGhost() {
	i := s.pick(len(s.ghosts))
	if i < 0 {
		return
	}
	g := s.ghosts[i]
	s.ghosts = slices.Delete(s.ghosts, i, i+1)
	if s.rnd.IntN(2) == 0 {
		rep := s.apply(g)
		if rep.Outcome.Kind == journal.Accepted {
			s.tally.ghostLanded++
		}
		s.note("late delivery at %d: %s", g.Seq, rep.Outcome.Kind)
	}
}

// doClaim runs one round of a claim, with its faults.
func (s *pipeSim) doClaim() {
	req := s.p.BeginClaim()
	var rep journal.Reply
	switch k := s.rnd.IntN(6); {
	case s.faults && k == 0: // lost before it applied
	case s.faults && k == 1: // applied; the answer is lost
		s.f.setLeader(req)
	default:
		rep = s.f.setLeader(req)
	}
	res := s.p.AbsorbClaim(req, rep)
	s.tally.claims++
	s.note("claim %s over %s: %s, next %d", req.New, req.Old, res.Kind, s.p.NextSeq())
	if res.Kind == ResultWon && s.p.NextSeq() != s.f.st.NextSeq {
		s.fail("won a claim with next %d, the journal's is %d", s.p.NextSeq(), s.f.st.NextSeq)
	}
}

func (s *pipeSim) doRare() {
	switch k := s.rnd.IntN(10); {
	case k < 2 && s.faults:
		u := s.rival()
		s.f.claimAs(u)
		s.note("rival %s claims", u)
	case k < 3:
		s.doClaim() // the owner claims again while it may still hold
	case k < 6:
		v := s.f.st.View()
		tr, err := s.p.Truncate(v.FirstSeq + journal.Seq(s.rnd.Uint64N(uint64(v.NextSeq-v.FirstSeq)+1)))
		if err != nil {
			return
		}
		rep := s.f.truncate(tr)
		if s.faults && s.rnd.IntN(4) == 0 {
			rep = journal.Reply{}
		}
		res := s.p.AbsorbTruncate(tr, rep)
		s.note("truncate below %d: %s", tr.UpTo, res.Kind)
	case k < 7:
		o := PipelineOptions{Window: 1 + s.rnd.IntN(16), WritesOut: 1 + s.rnd.IntN(6), NoCoalesce: s.rnd.IntN(3) == 0}
		s.p.SetOptions(o)
		s.writesOut = max(s.writesOut, s.p.Options().WritesOut)
		s.note("options %+v", s.p.Options())
	}
}

// check runs the oracles after a step.
func (s *pipeSim) check() {
	s.t.Helper()
	s.p.assertInvariants()
	for _, c := range s.p.Completions() {
		a, ok := s.appends[c.ID]
		if !ok {
			s.fail("completion of an unknown append %d", c.ID)
		}
		if a.done {
			s.fail("append %d completed twice", c.ID)
		}
		a.done = true
		s.outstanding--
		if c.Seq != a.seq {
			s.fail("append %d completed at %d, placed at %d", c.ID, c.Seq, a.seq)
		}
		switch {
		case c.Err == nil:
			a.ok = true
			s.written++
			for i, r := range a.records {
				pos := a.seq + journal.Seq(i)
				if int(pos) > len(s.f.log) || string(s.f.log[pos-1]) != r {
					s.fail("append %d reported written, but position %d does not hold %q (log %d long)", c.ID, pos, r, len(s.f.log))
				}
				if other, taken := s.owner[pos]; taken {
					s.fail("appends %d and %d both reported written at %d", other, c.ID, pos)
				}
				s.owner[pos] = c.ID
			}
		case errors.Is(c.Err, ErrAmbiguous) || errors.Is(c.Err, ErrBelowFloor):
			if errors.Is(c.Err, ErrNotHolding) {
				s.tally.abandoned++
			}
			if errors.Is(c.Err, ErrBelowFloor) {
				s.tally.truncated++
			}
		default:
			if errors.Is(c.Err, ErrSuperseded) {
				s.tally.superseded++
			}
			a.gone = true
			if a.landed {
				s.fail("append %d is in the log, yet completed as not written: %v", c.ID, c.Err)
			}
		}
	}
	for ; s.checked < len(s.f.log); s.checked++ {
		pos := journal.Seq(s.checked + 1)
		r := string(s.f.log[s.checked])
		at, ok := s.records[r]
		if !ok {
			s.fail("position %d holds %q, which no append queued", pos, r)
		}
		a := s.appends[at.id]
		if want := a.seq + journal.Seq(at.idx); want != pos {
			s.fail("record %q of append %d landed at %d; Append placed it at %d", r, at.id, pos, want)
		}
		if a.gone {
			s.fail("append %d completed as not written, yet landed at %d", at.id, pos)
		}
		a.landed = true
	}
	for _, tm := range s.p.Timers() {
		if tm.After < BackoffMin || tm.After > BackoffMax {
			s.fail("timer for write %d after %v", tm.ID, tm.After)
		}
		s.timers = append(s.timers, tm)
	}
	if s.p.Outstanding() != s.outstanding || s.outstanding < 0 {
		s.fail("pipeline has %d outstanding, the driver counts %d", s.p.Outstanding(), s.outstanding)
	}
}

// run steps the driver with the faults on.
func (s *pipeSim) run(steps int) {
	for s.step = 0; s.step < steps; s.step++ {
		if (s.p.Stopped() != nil || !s.p.Holding()) && s.rnd.IntN(6) == 0 {
			s.doClaim()
		} else {
			switch r := s.rnd.IntN(100); {
			case r < 25:
				s.doAppend()
			case r < 45:
				s.doNext()
			case r < 49:
				s.doLeave()
			case r < 66:
				s.doDeliver()
			case r < 85:
				s.doAnswer()
			case r < 94:
				s.doWake()
			case r < 97:
				s.doGhost()
			default:
				s.doRare()
			}
		}
		s.check()
	}
}

// quiesce steps the driver without faults and appends until nothing is
// outstanding, out, or waiting for a timer.
func (s *pipeSim) quiesce(stepsMax int) {
	for n := 0; !(s.p.Idle() && len(s.link) == 0 && len(s.timers) == 0); n++ {
		if n >= stepsMax {
			s.fail("no quiescence in %d steps: %d outstanding, %d out, %d timers, stopped %v",
				stepsMax, s.p.Outstanding(), len(s.link), len(s.timers), s.p.Stopped())
		}
		s.step++
		switch s.rnd.IntN(5) {
		case 0:
			s.doNext()
		case 1:
			s.doLeave()
		case 2:
			s.doDeliver()
		case 3:
			s.doAnswer()
		case 4:
			s.doWake()
		}
		s.check()
	}
}

// settle turns the faults off, delivers every late request, drives the
// pipeline to quiescence, then claims if it must and checks that fresh
// appends are all written.
func (s *pipeSim) settle() {
	s.faults = false
	s.note("faults off")
	for _, g := range s.ghosts {
		s.apply(g)
		s.check()
	}
	s.ghosts = nil
	s.quiesce(20000)
	for i := 0; s.p.Stopped() != nil || !s.p.Holding() || s.f.st.Leader != s.p.Fence(); i++ {
		if i == 4 {
			s.fail("no claim won in %d rounds without faults", i)
		}
		s.doClaim()
		s.check()
	}
	s.p.SetOptions(PipelineOptions{})
	before := len(s.appends)
	for range 20 {
		s.doAppend()
	}
	if len(s.appends) != before+20 {
		s.fail("fresh appends refused")
	}
	s.quiesce(20000)
	for id, a := range s.appends {
		if !a.done {
			s.fail("append %d at %d never completed", id, a.seq)
		}
		if id > AppendID(before) && !a.ok {
			s.fail("fresh append %d at %d failed without faults", id, a.seq)
		}
	}
	if st := s.p.Stats(); st.Sends != s.sends || st.Appends != s.written || st.Writes > st.Appends {
		s.fail("stats %+v: the driver saw %d sends and %d appends written", st, s.sends, s.written)
	}
	s.tally.stats.Sends += s.p.Stats().Sends
	s.tally.stats.Ambiguous += s.p.Stats().Ambiguous
	s.tally.stats.Refused += s.p.Stats().Refused
	s.tally.stats.RefusedWhileOut += s.p.Stats().RefusedWhileOut
	s.tally.stats.Unsent += s.p.Stats().Unsent
	s.tally.stats.Writes += s.p.Stats().Writes
	s.tally.stats.Appends += s.p.Stats().Appends
}

// TestPipelineUnderRandomFaultsWritesEveryAppendAtItsPositionOrSaysWhy is
// the property test: see the file's opening paragraph.
func TestPipelineUnderRandomFaultsWritesEveryAppendAtItsPositionOrSaysWhy(t *testing.T) {
	const seeds, steps = 500, 800
	var tally simTally
	for seed := range uint64(seeds) {
		s := newPipeSim(t, seed, &tally)
		func() {
			defer func() {
				if r := recover(); r != nil {
					s.fail("panic: %v", r)
				}
			}()
			s.run(steps)
			s.settle()
		}()
	}
	st := tally.stats
	t.Logf("across %d seeds: %+v, %+v", seeds, tally, st)
	if tally.duplicate == 0 || tally.refused == 0 || tally.superseded == 0 || tally.truncated == 0 ||
		tally.abandoned == 0 || tally.ghostLanded == 0 || tally.windowFull == 0 {
		t.Fatalf("some fault never fired: %+v", tally)
	}
	if st.Ambiguous == 0 || st.Refused == 0 || st.RefusedWhileOut == 0 || st.Unsent == 0 || st.Appends <= st.Writes {
		t.Fatalf("some path never ran: %+v", st)
	}
}
