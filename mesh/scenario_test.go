// This file plays the three compaction scenarios of docs/guide/mesh.md ("How it
// is proven") as Go tests. Every runtime is a full
// Runtime with an ephemeral key and trust on first use, linked to the
// others through the real signed link protocol over MemTransport; time is
// a shared ManualClock (heartbeat 1 s, expiry 3 s), so "sleeping past the
// expiry" is advancing it 3.3 s, never a real sleep. Compaction is called as
// the supervisor calls it, but with retention 0 and forced.
package mesh

import (
	"errors"
	"slices"
	"testing"
)

// A runtime compacted away while it slept is heard again in full when it
// wakes: its peers fetch its stream from the first event, so the claim it
// took before sleeping holds again and refuses a conflicting one.
func TestARuntimeCompactedWhileItSleptIsHeardAgainWhole(t *testing.T) {
	// Arrange: the laptop claims apps and is heard by the desk.
	n := newTestNet(t)
	desk := n.runtime("desk")
	laptop := n.runtime("laptop", "desk")
	if _, err := laptop.Claim(ClaimRequest{Session: "laptop-work", Scope: []string{"apps"}}); err != nil {
		t.Fatal(err)
	}
	n.round(laptop, "desk")
	if got := len(liveClaims(desk.State())); got != 1 {
		t.Fatalf("desk holds %d live claims before the sleep, want the laptop's 1", got)
	}

	// Act: the laptop sleeps past the expiry; the desk compacts it away.
	n.sleep(pastExpiry, desk)
	res := forceCompact(desk, HandoverRetention)
	if res.Dropped != 2 || !slices.Equal(res.Streams, []StreamID{laptop.Stream()}) {
		t.Fatalf("compaction dropped %d events of %v, want the laptop's 2 (session + claim)", res.Dropped, res.Streams)
	}
	if got := len(desk.State().Claims); got != 0 {
		t.Fatalf("desk lists %d claims after compaction, want none", got)
	}
	// The laptop wakes, claims docs and runs three rounds.
	if _, err := laptop.Claim(ClaimRequest{Session: "laptop-work", Scope: []string{"docs"}}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		n.round(laptop, "desk")
	}

	// Check: the desk holds the laptop's stream whole again, both claims
	// hold there, and the desk's own conflicting claim is refused.
	var deskCopy, laptopOwn []Event
	desk.WithJournal(func(j *Journal) { deskCopy = j.StreamEvents(laptop.Stream()) })
	laptop.WithJournal(func(j *Journal) { laptopOwn = j.StreamEvents(laptop.Stream()) })
	if len(laptopOwn) != 3 || !slices.EqualFunc(deskCopy, laptopOwn, eventsEqual) {
		t.Fatalf("desk holds %d events of the laptop's stream, laptop holds %d; want the same 3", len(deskCopy), len(laptopOwn))
	}
	held := 0
	for _, c := range desk.State().Claims {
		if c.Status.State == ClaimHeld {
			held++
		}
	}
	if held != 2 {
		t.Fatalf("desk shows %d held claims, want 2", held)
	}
	_, err := desk.Claim(ClaimRequest{Session: "desk-work", Scope: []string{"apps/paros-cli"}})
	var conflict *ConflictError
	if !errors.As(err, &conflict) || len(conflict.Conflicts) != 1 {
		t.Fatalf("desk's claim on apps/paros-cli: err = %v, want a conflict naming 1 claim", err)
	}
	if d, l := desk.State().Digest, laptop.State().Digest; d != l {
		t.Fatalf("digests differ: desk %s, laptop %s", d, l)
	}
}

func eventsEqual(a, b Event) bool {
	return a.Stream == b.Stream && a.Seq == b.Seq && a.Sig == b.Sig
}

// Compaction keeps whoever took a handover still on offer and whoever
// answered a review, even after the taker's or answerer's runtime stopped;
// otherwise the handover could be taken twice and the review answered twice.
func TestWhoTookAHandoverAndWhoAnsweredAReviewOutliveTheTakersRun(t *testing.T) {
	// Arrange: the publisher offers a handover and asks for a review; the
	// taker takes the one and approves the other, then stops.
	n := newTestNet(t)
	publisher := n.runtime("publisher")
	taker := n.runtime("taker", "publisher")
	h, err := publisher.PublishHandover(HandoverInfo{Body: "# next\nfinish the parser\n", Task: "parser"})
	if err != nil {
		t.Fatal(err)
	}
	rv, err := publisher.RequestReview(ReviewRequest{Session: "pub", Subject: "parser design"})
	if err != nil {
		t.Fatal(err)
	}
	n.round(taker, "publisher")
	if _, err := taker.ConsumeHandover(h.ID, "take"); err != nil {
		t.Fatal(err)
	}
	if _, err := taker.AnswerReview(rv.Key, "take", VerdictApproved, "ship it"); err != nil {
		t.Fatal(err)
	}
	n.round(taker, "publisher")
	before := publisher.State()

	// Act: past the expiry, the publisher compacts.
	n.sleep(pastExpiry, publisher)
	res := forceCompact(publisher, HandoverRetention)

	// Check: the taking and the answer are still there.
	after := publisher.State()
	if res.Dropped != 0 {
		t.Errorf("compaction dropped %d events of %v, want none", res.Dropped, res.Streams)
	}
	if len(after.Handovers) != 1 || len(after.Handovers[0].ConsumedBy) != 1 {
		t.Fatalf("handovers after compaction = %+v, want one with its one taker", after.Handovers)
	}
	if len(after.Reviews) != 1 || after.Reviews[0].State != ReviewAnswered {
		t.Fatalf("reviews after compaction = %+v, want one, answered", after.Reviews)
	}
	if !slices.EqualFunc(before.Handovers, after.Handovers, handoverEqual) || !slices.EqualFunc(before.Reviews, after.Reviews, reviewEqual) {
		t.Fatalf("handovers or reviews changed:\nbefore %+v %+v\nafter  %+v %+v", before.Handovers, before.Reviews, after.Handovers, after.Reviews)
	}
}

func handoverEqual(a, b HandoverView) bool {
	return a.ID == b.ID && a.Stream == b.Stream && slices.Equal(a.ConsumedBy, b.ConsumedBy)
}

func reviewEqual(a, b ReviewView) bool {
	return a.Key == b.Key && a.State == b.State && slices.Equal(a.Answers, b.Answers)
}

// An untaken handover pins its publisher's stream only for the handover
// retention past the peer retention, so runs that each hand something over
// cannot fill a quota; a taken one pins nothing.
func TestATakenHandoverKeepsItsStoppedPublisherNowhereAndAnUntakenOneOnlySoLong(t *testing.T) {
	// Arrange: two publishers; the keeper takes only the first; both stop.
	n := newTestNet(t)
	keeper := n.runtime("keeper")
	first := n.runtime("first", "keeper")
	second := n.runtime("second", "keeper")
	taken, err := first.PublishHandover(HandoverInfo{Body: "first handover"})
	if err != nil {
		t.Fatal(err)
	}
	untaken, err := second.PublishHandover(HandoverInfo{Body: "second handover"})
	if err != nil {
		t.Fatal(err)
	}
	n.round(first, "keeper")
	n.round(second, "keeper")
	if _, err := keeper.ConsumeHandover(taken.ID, "keep"); err != nil {
		t.Fatal(err)
	}
	n.sleep(pastExpiry, keeper)

	// Act and check: within the handover retention only the taken
	// publisher goes.
	res := forceCompact(keeper, HandoverRetention)
	if res.Dropped != 1 || !slices.Equal(res.Streams, []StreamID{first.Stream()}) {
		t.Fatalf("first compaction dropped %d events of %v, want 1 of the first publisher", res.Dropped, res.Streams)
	}
	if hs := keeper.State().Handovers; len(hs) != 1 || hs[0].ID != untaken.ID {
		t.Fatalf("handovers = %+v, want only the untaken one", hs)
	}
	// With no handover retention left, the untaken one goes too.
	res = forceCompact(keeper, 0)
	if res.Dropped != 1 || !slices.Equal(res.Streams, []StreamID{second.Stream()}) {
		t.Fatalf("second compaction dropped %d events of %v, want 1 of the second publisher", res.Dropped, res.Streams)
	}
	if hs := keeper.State().Handovers; len(hs) != 0 {
		t.Fatalf("handovers = %+v, want none", hs)
	}
}
