// This file checks the driver over memLog, the in-memory UNIT-TEST FAKE of
// a multi-writer journal (fake_test.go), with short leases: two candidates
// campaign, one wins term 1 and the other follows it and takes over with
// term 2 once the leader stops renewing; a resigning leader's successor
// wins the next term at once; a leader is deposed when the fold shows
// another term or when its renewals do not land within the lease, and may
// not campaign again; the leader compacts the journal up to its renewal
// and a watcher starting after the truncation follows the same leader;
// foreign and malformed records change nothing; an ambiguous campaign that
// landed wins, one that did not is sent again; errors for good end
// Campaign; Close and a context's end end it too. Timings vary; outcomes
// do not.
package election

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
)

const (
	testLease = 300 * time.Millisecond
	testRenew = 60 * time.Millisecond
	// patience bounds every wait for an outcome.
	patience = 10 * time.Second
)

func testElection(l *memLog, u journal.LeaderUUID, opts ...Option) *Election {
	opts = append([]Option{UUID(u), Interface(fmt.Sprint("addr-", u.Hi)), Lease(testLease), RenewEvery(testRenew)}, opts...)
	e := newElection(l.port(), opts...)
	return e
}

type result struct {
	term Term
	err  error
}

// campaign runs e.Campaign in the background.
func campaign(ctx context.Context, e *Election) <-chan result {
	ch := make(chan result, 1)
	go func() {
		t, err := e.Campaign(ctx)
		ch <- result{t, err}
	}()
	return ch
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 4*patience)
	t.Cleanup(cancel)
	return ctx
}

// waitStatus waits until e's status satisfies ok.
func waitStatus(t *testing.T, e *Election, what string, ok func(Status) bool) Status {
	t.Helper()
	deadline := time.After(patience)
	for {
		ch := e.Changed()
		if s := e.Status(); ok(s) {
			return s
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("waiting for %s: status %+v", what, e.Status())
		}
	}
}

func waitResult(t *testing.T, ch <-chan result, what string) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(patience):
		t.Fatalf("waiting for %s", what)
	}
	return result{}
}

// count returns how many records of the log fold to each event kind.
func count(l *memLog) map[EventKind]int {
	recs, floor := l.snapshot()
	var f Fold
	if floor > journal.FirstSeq {
		f.Jump()
	}
	out := map[EventKind]int{}
	for i, r := range recs {
		out[f.Apply(floor+journal.Seq(i), r).Kind]++
	}
	return out
}

func TestTwoCandidatesOneWinsTheOtherFollowsAndTakesOverWhenTheLeaderStops(t *testing.T) {
	ctx := testCtx(t)
	l := newMemLog()
	a, b := testElection(l, uA), testElection(l, uB)
	defer a.Close()
	defer b.Close()

	ra, rb := campaign(ctx, a), campaign(ctx, b)
	var first, second *Election
	var rest <-chan result
	select {
	case r := <-ra:
		first, second, rest = a, b, rb
		if r.err != nil || r.term != 1 {
			t.Fatalf("a won %d, %v", r.term, r.err)
		}
	case r := <-rb:
		first, second, rest = b, a, ra
		if r.err != nil || r.term != 1 {
			t.Fatalf("b won %d, %v", r.term, r.err)
		}
	case <-time.After(patience):
		t.Fatal("no one won")
	}
	if s := first.Status(); !s.Mine || s.Term != 1 || s.Leader != first.UUID() || !first.Leading() {
		t.Fatalf("the winner's status %+v", s)
	}
	s := waitStatus(t, second, "the loser to see the winner", func(s Status) bool { return s.Term == 1 && s.Leader.IsSet() })
	if s.Mine || s.Leader != first.UUID() || s.Interface != fmt.Sprint("addr-", first.UUID().Hi) {
		t.Fatalf("the loser's status %+v", s)
	}
	// The winner renews: for several leases the loser keeps watching.
	select {
	case r := <-rest:
		t.Fatalf("the loser's Campaign returned %d, %v while the leader renews", r.term, r.err)
	case <-time.After(4 * testLease):
	}
	if !first.Leading() || count(l)[Renewed] < 4 {
		t.Fatalf("the leader stopped leading (%+v) or renewing (%v)", first.Status(), count(l))
	}

	// Act: the leader stops renewing.
	first.Close()

	// Check: the other wins term 2.
	r := waitResult(t, rest, "the takeover")
	if r.err != nil || r.term != 2 {
		t.Fatalf("the takeover: %d, %v", r.term, r.err)
	}
	if s := second.Status(); !s.Mine || s.Term != 2 || s.Leader != second.UUID() {
		t.Fatalf("the new leader's status %+v", s)
	}
	if s := first.Status(); s.Mine || !errors.Is(s.Ended, ErrClosed) {
		t.Fatalf("the closed leader's status %+v", s)
	}
	if k := count(l); k[Elected] != 2 {
		t.Fatalf("events of the log %v, want two terms elected", k)
	}
}

func TestAResigningLeadersSuccessorWinsTheNextTermAtOnce(t *testing.T) {
	ctx := testCtx(t)
	l := newMemLog()
	a := testElection(l, uA)
	defer a.Close()
	if r := waitResult(t, campaign(ctx, a), "a's win"); r.err != nil || r.term != 1 {
		t.Fatalf("a: %d, %v", r.term, r.err)
	}
	// b and c watch; the lease is long enough that only a successor
	// named by the resignation wins before anyone else campaigns.
	b := testElection(l, uB, Lease(patience/2), RenewEvery(testRenew))
	c := testElection(l, uC, Lease(patience/2), RenewEvery(testRenew))
	defer b.Close()
	defer c.Close()
	rb, rc := campaign(ctx, b), campaign(ctx, c)
	waitStatus(t, b, "b to see a", func(s Status) bool { return s.Leader == uA })
	waitStatus(t, c, "c to see a", func(s Status) bool { return s.Leader == uA })

	// Act.
	start := time.Now()
	if err := a.Resign(ctx, uC); err != nil {
		t.Fatal(err)
	}

	// Check.
	r := waitResult(t, rc, "the successor's win")
	if r.err != nil || r.term != 2 || time.Since(start) > patience/4 {
		t.Fatalf("the successor: %d, %v after %v", r.term, r.err, time.Since(start))
	}
	if s := a.Status(); s.Mine || !errors.Is(s.Ended, ErrResigned) {
		t.Fatalf("the resigned leader's status %+v", s)
	}
	waitStatus(t, b, "b to see c", func(s Status) bool { return s.Term == 2 && s.Leader == uC && !s.Mine })
	select {
	case r := <-rb:
		t.Fatalf("b's Campaign returned %d, %v", r.term, r.err)
	default:
	}
	if err := a.Resign(ctx, uB); !errors.Is(err, ErrNotLeading) || !errors.Is(err, ErrResigned) {
		t.Fatalf("a second Resign: %v", err)
	}
	if _, err := a.Campaign(ctx); !errors.Is(err, ErrResigned) {
		t.Fatalf("Campaign after resigning: %v", err)
	}
}

func TestALeaderIsDeposedWhenTheFoldShowsAnotherTerm(t *testing.T) {
	ctx := testCtx(t)
	l := newMemLog()
	a := testElection(l, uA)
	defer a.Close()
	if r := waitResult(t, campaign(ctx, a), "a's win"); r.err != nil {
		t.Fatal(r.err)
	}
	changed := a.Changed()

	// Act: another candidate's campaign for term 2 lands.
	l.add(CampaignRecord(2, uB, "b"))

	// Check.
	<-changed
	s := waitStatus(t, a, "a deposed", func(s Status) bool { return s.Ended != nil })
	if s.Mine || !errors.Is(s.Ended, ErrDeposed) || s.Term != 2 || s.Leader != uB || a.Leading() {
		t.Fatalf("status %+v", s)
	}
	if _, err := a.Campaign(ctx); !errors.Is(err, ErrDeposed) {
		t.Fatalf("Campaign after the deposition: %v", err)
	}
	if err := a.Resign(ctx, journal.LeaderUUID{}); !errors.Is(err, ErrNotLeading) {
		t.Fatalf("Resign after the deposition: %v", err)
	}
}

func TestALeaderWhoseRenewalsDoNotLandIsDeposedWithinTheLease(t *testing.T) {
	ctx := testCtx(t)
	l := newMemLog()
	a := testElection(l, uA)
	defer a.Close()
	if r := waitResult(t, campaign(ctx, a), "a's win"); r.err != nil {
		t.Fatal(r.err)
	}
	l.mu.Lock()
	l.failAppend = func([]byte) error { return fmt.Errorf("%w: test", client.ErrNotLeader) }
	l.mu.Unlock()
	start := time.Now()

	s := waitStatus(t, a, "a deposed", func(s Status) bool { return s.Ended != nil })
	if s.Mine || !errors.Is(s.Ended, ErrDeposed) || time.Since(start) > testLease+patience/4 {
		t.Fatalf("status %+v after %v", s, time.Since(start))
	}
}

func TestTheLeaderCompactsAndAWatcherStartingAfterTheTruncationFollowsIt(t *testing.T) {
	ctx := testCtx(t)
	l := newMemLog()
	l.add([]byte("before"), append([]byte(Magic), 1, 2, 3))
	a := testElection(l, uA, CompactAfter(8))
	defer a.Close()
	if r := waitResult(t, campaign(ctx, a), "a's win"); r.err != nil || r.term != 1 {
		t.Fatalf("a: %d, %v", r.term, r.err)
	}
	// Wait for a truncation past a few renewals.
	deadline := time.Now().Add(patience)
	for {
		recs, floor := l.snapshot()
		if floor > 8 {
			if len(recs) == 0 {
				t.Fatal("the journal is empty above the floor")
			}
			var f Fold
			f.Jump()
			if ev := f.Apply(floor, recs[0]); ev.Kind != Adopted || ev.Candidate != uA || ev.Term != 1 {
				t.Fatalf("the first record above the floor %d is %+v, want a's renewal", floor, ev)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no truncation: floor %d", floor)
		}
		time.Sleep(testRenew)
	}

	// Act: a watcher starts now, below the floor.
	c := testElection(l, uC)
	defer c.Close()
	rc := campaign(ctx, c)

	// Check: it follows a and does not campaign while a renews.
	waitStatus(t, c, "c to follow a", func(s Status) bool { return s.Term == 1 && s.Leader == uA })
	select {
	case r := <-rc:
		t.Fatalf("c's Campaign returned %d, %v", r.term, r.err)
	case <-time.After(3 * testLease):
	}
	if k := count(l); k[Stale] != 0 || k[Elected] != 0 {
		t.Fatalf("events above the floor %v: c campaigned", k)
	}
	if !a.Leading() {
		t.Fatalf("a's status %+v", a.Status())
	}
}

func TestForeignAndMalformedRecordsChangeNothing(t *testing.T) {
	ctx := testCtx(t)
	l := newMemLog()
	l.add([]byte("x"), nil, []byte(Magic), append([]byte(Magic), 0xff), RenewRecord(1, uB, "stale"))
	// The Renew for term 1 above term 0 is adopted: uB led term 1 in a
	// part of the log no one read. Its lease runs out; a takes term 2.
	a := testElection(l, uA)
	defer a.Close()
	r := waitResult(t, campaign(ctx, a), "a's win")
	if r.err != nil || r.term != 2 {
		t.Fatalf("a: %d, %v", r.term, r.err)
	}
	l.add([]byte("y"), append([]byte(Magic), 0x08))
	time.Sleep(3 * testRenew)
	if !a.Leading() {
		t.Fatalf("status %+v", a.Status())
	}
}

func TestAnAmbiguousCampaignThatLandedWinsAndOneThatDidNotIsSentAgain(t *testing.T) {
	ctx := testCtx(t)
	for _, landed := range []bool{true, false} {
		t.Run(fmt.Sprint("landed=", landed), func(t *testing.T) {
			l := newMemLog()
			first := true
			l.failAppend = func(rec []byte) error {
				if !first {
					return nil
				}
				first = false
				if landed {
					l.add(rec)
				}
				return fmt.Errorf("%w: test", client.ErrAmbiguous)
			}
			a := testElection(l, uA)
			defer a.Close()
			r := waitResult(t, campaign(ctx, a), "a's win")
			if r.err != nil || r.term != 1 {
				t.Fatalf("a: %d, %v", r.term, r.err)
			}
		})
	}
}

func TestAnErrorForGoodEndsCampaign(t *testing.T) {
	ctx := testCtx(t)
	l := newMemLog()
	l.failAppend = func([]byte) error { return fmt.Errorf("%w: test", client.ErrWrongMode) }
	a := testElection(l, uA)
	defer a.Close()
	if r := waitResult(t, campaign(ctx, a), "the error"); !errors.Is(r.err, client.ErrWrongMode) {
		t.Fatalf("Campaign: %d, %v", r.term, r.err)
	}
}

func TestCloseAndTheContextEndCampaign(t *testing.T) {
	l := newMemLog()
	l.add(CampaignRecord(1, uB, "b"))
	go func() { // b renews for the whole test
		for range 1000 {
			l.add(RenewRecord(1, uB, "b"))
			time.Sleep(testRenew)
		}
	}()
	a := testElection(l, uA)
	ctx, cancel := context.WithTimeout(context.Background(), 2*testLease)
	defer cancel()
	if _, err := a.Campaign(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Campaign with a context that ends: %v", err)
	}
	rc := campaign(context.Background(), a)
	time.Sleep(testRenew)
	a.Close()
	if r := waitResult(t, rc, "Campaign to end"); !errors.Is(r.err, ErrClosed) {
		t.Fatalf("Campaign across Close: %v", r.err)
	}
	if _, err := a.Campaign(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Campaign after Close: %v", err)
	}
	if s := a.Status(); s.Leader != uB || s.Mine || !errors.Is(s.Ended, ErrClosed) {
		t.Fatalf("status %+v", s)
	}
}

func TestJitterDelaysTheCampaign(t *testing.T) {
	ctx := testCtx(t)
	l := newMemLog()
	draws := 0
	a := testElection(l, uA, Jitter(func() time.Duration { draws++; return 2 * testLease }))
	defer a.Close()
	start := time.Now()
	r := waitResult(t, campaign(ctx, a), "a's win")
	if r.err != nil || time.Since(start) < 2*testLease || draws == 0 {
		t.Fatalf("a won after %v (%d draws): %v", time.Since(start), draws, r.err)
	}
}
