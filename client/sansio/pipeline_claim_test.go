// This file checks the Pipeline's BeginClaim, Close (which is for good, a
// bug this suite found), WriteAttemptsMax, the refusals of Append and the
// options' defaults and bounds. Each test plays the driver by hand (helpers
// in pipeline_test.go).
package sansio

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/parosdb/paros/core/journal"
)

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
