// This file checks compaction and tombstones (docs/guide/mesh.md,
// "Compaction, and why each rule exists") on a bare journal fed by writer
// journals, with beats merged by hand on a ManualClock. It reproduces each
// defect compaction must not have — a handover taken twice because its taker
// was dropped, a review answered twice because its answerer was dropped, a
// runtime that wakes unheard — and checks the tombstone rules: a compacted
// stream is not sent again, a late event is absorbed, a replayed beat brings
// nothing back, and a fresh verified beat lifts the tombstone so the stream
// is fetched again from its first event. It also checks the quota cases: a
// machine that restarts past its stream quota still gets through, a restart
// does not compact what it has not heard yet, and an untaken handover pins
// its stream only for the handover retention.
package mesh

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// hear merges w's beat into j as fresh.
func hear(j *Journal, w *writer, beat uint64) {
	j.MergeMarks(Marks{w.stream(): markOf(w.j.cfg.Key, w.stream(), 0, beat, 0)}, trustAll)
}

func compactNow(j *Journal, handovers time.Duration) CompactResult {
	return j.Compact(CompactParams{Expiry: testExpiry, Retention: 0, Handovers: handovers, Force: true})
}

func TestACompactedStreamIsNotSentAgain(t *testing.T) {
	// Arrange: the observer and a peer both hold a dead runtime's two events.
	clock := NewManualClock(testEpoch)
	j := newObserver(t, clock)
	peer := newWriter(t, testKey(t, 0x03), clock, RuntimeOf("peer"), instanceN(1)).j
	dead := newWriter(t, testKey(t, 0x02), clock, RuntimeOf("dead"), instanceN(1))
	dead.write(t, openBody("s"))
	dead.write(t, claimBody("c-1", "s", ModeExclusive, "apps"))
	j.Ingest(dead.lines(), trustAll)
	peer.Ingest(dead.lines(), trustAll)
	hear(j, dead, 1)
	clock.Advance(pastExpiry)

	// Act.
	res := compactNow(j, HandoverRetention)

	// Check: a tombstone keeps the mark, advertised to peers that name it.
	if res.Dropped != 2 || j.Tombstones()[dead.stream()] != (Tombstone{Seq: 2, Beat: 1}) {
		t.Fatalf("dropped %d, tombstone %+v; want 2 and {2 1}", res.Dropped, j.Tombstones()[dead.stream()])
	}
	if m, ok := j.MarksFor(peer.Marks())[dead.stream()]; !ok || m.Seq != 2 || m.Beat != 0 {
		t.Fatalf("tombstone not advertised to a peer naming the stream: %+v", m)
	}
	if _, ok := j.MarksFor(Marks{})[dead.stream()]; ok {
		t.Fatalf("tombstone advertised to a peer that does not name the stream")
	}
	if got := peer.MissingFor(j.MarksFor(peer.Marks()), 1<<20); len(got) != 0 {
		t.Fatalf("peer would send %d events of the compacted stream again", len(got))
	}
	if rep := j.Ingest(dead.lines(), trustAll); rep.Duplicate != 2 || j.EventsHeld() != 0 {
		t.Fatalf("redelivery: %+v, holding %d; want 2 duplicates and nothing held", rep, j.EventsHeld())
	}
}

func TestAReplayedBeatOrALateEventOfACompactedStreamBringsNothingBack(t *testing.T) {
	// Arrange: a dead runtime was heard at beat 3 with one event, then compacted.
	clock := NewManualClock(testEpoch)
	j := newObserver(t, clock)
	dead := newWriter(t, testKey(t, 0x02), clock, RuntimeOf("dead"), instanceN(1))
	first := dead.write(t, openBody("s"))
	late := dead.write(t, claimBody("c-1", "s", ModeExclusive, "apps"))
	j.Ingest([]json.RawMessage{first}, trustAll)
	hear(j, dead, 3)
	clock.Advance(pastExpiry)
	compactNow(j, HandoverRetention)

	// Act: a relay replays beat 3 as brand new (age 0), and the late event arrives.
	j.MergeMarks(Marks{dead.stream(): markOf(dead.j.cfg.Key, dead.stream(), 1, 3, 0)}, trustAll)
	j.MergeMarks(Marks{dead.stream(): markOf(dead.j.cfg.Key, dead.stream(), 1, 2, 0)}, trustAll)
	rep := j.Ingest([]json.RawMessage{late}, trustAll)

	// Check.
	if slices.Contains(j.Streams(), dead.stream()) {
		t.Fatalf("a replayed beat brought the stream back")
	}
	if rep.Duplicate != 1 || j.Tombstones()[dead.stream()] != (Tombstone{Seq: 2, Beat: 3}) {
		t.Fatalf("late event: %+v, tombstone %+v; want a duplicate raising the tombstone to seq 2", rep, j.Tombstones()[dead.stream()])
	}
}

// PR 588, defect 3: a runtime compacted while asleep woke unheard.
func TestACompactedStreamThatBeatsAgainIsFetchedAgainFromItsFirstEvent(t *testing.T) {
	// Arrange: the observer compacted a sleeping laptop's claim; a peer
	// still holds the laptop's whole stream.
	clock := NewManualClock(testEpoch)
	j := newObserver(t, clock)
	laptop := newWriter(t, testKey(t, 0x02), clock, RuntimeOf("laptop"), instanceN(1))
	laptop.write(t, openBody("s"))
	laptop.write(t, claimBody("c-1", "s", ModeExclusive, "apps"))
	peer := newWriter(t, testKey(t, 0x03), clock, RuntimeOf("peer"), instanceN(1)).j
	peer.Ingest(laptop.lines(), trustAll)
	j.Ingest(laptop.lines(), trustAll)
	hear(j, laptop, 1)
	clock.Advance(pastExpiry)
	compactNow(j, HandoverRetention)

	// Act: stale and untrusted beats do not lift; a fresh trusted one does.
	j.MergeMarks(Marks{laptop.stream(): markOf(laptop.j.cfg.Key, laptop.stream(), 2, 2, 60_000)}, trustAll)
	j.MergeMarks(Marks{laptop.stream(): markOf(laptop.j.cfg.Key, laptop.stream(), 2, 2, 0)}, func(string) bool { return false })
	if !slices.Contains(slices.Collect(maps.Keys(j.Tombstones())), laptop.stream()) {
		t.Fatalf("a stale or untrusted beat lifted the tombstone")
	}
	lifted := j.MergeMarks(Marks{laptop.stream(): markOf(laptop.j.cfg.Key, laptop.stream(), 2, 2, 0)}, trustAll)
	mark := j.Marks()[laptop.stream()]
	resent := peer.MissingFor(j.Marks(), 1<<20)
	j.Ingest(resent, trustAll)

	// Check.
	if !slices.Equal(lifted, []StreamID{laptop.stream()}) || mark.Seq != 0 {
		t.Fatalf("lift: %v, mark seq %d; want the stream lifted with an empty log", lifted, mark.Seq)
	}
	if len(resent) != 2 {
		t.Fatalf("the peer resent %d events, want the whole stream of 2", len(resent))
	}
	live := liveClaims(j.Fold())
	if len(live) != 1 || live[0].Status.State != ClaimHeld || live[0].Stream != laptop.stream() {
		t.Fatalf("the laptop's claim does not hold again: %+v", live)
	}
}

// PR 588, defects 1 and 2: dropping a dead taker made a handover look
// untaken (taken twice); dropping a dead answerer reopened a review
// (answered twice).
func TestCompactionKeepsTheTakersAndTheAnswersOfWhatItKeeps(t *testing.T) {
	// Arrange:
	//   publisher (live) offers H and asks review R;
	//   taker (dead) takes H and answers R;
	//   relay (dead) answers R and offers H2, which chain (dead) takes;
	//   asker (dead) asks R2, which loner (dead) answers.
	clock := NewManualClock(testEpoch)
	j := newObserver(t, clock)
	w := func(name string, seed byte) *writer {
		return newWriter(t, testKey(t, seed), clock, RuntimeOf(name), instanceN(1))
	}
	publisher, taker, relay, chain, asker, loner := w("publisher", 2), w("taker", 3), w("relay", 4), w("chain", 5), w("asker", 6), w("loner", 7)
	h := HandoverInfo{Body: "H"}
	h.ID = HandoverID(h.Body)
	h2 := HandoverInfo{Body: "H2"}
	h2.ID = HandoverID(h2.Body)
	feed := func(ws ...*writer) {
		for _, x := range ws {
			j.Ingest(x.lines(), trustAll)
			x.j.Ingest(j.MissingFor(x.j.Marks(), 1<<20), trustAll)
		}
	}
	publisher.write(t, Body{Kind: KindHandoverPublished, Handover: &h})
	publisher.write(t, Body{Kind: KindReviewRequested, Review: "r-1", Session: "p", Subject: "R"})
	feed(publisher, taker, relay)
	rKey := RecordKey(publisher.stream(), "r-1")
	taker.write(t, Body{Kind: KindHandoverConsumed, HandoverID: h.ID, Session: "t"})
	taker.write(t, Body{Kind: KindReviewAnswered, Request: rKey, Session: "t", Verdict: VerdictApproved})
	relay.write(t, Body{Kind: KindReviewAnswered, Request: rKey, Session: "r", Verdict: VerdictCommented})
	relay.write(t, Body{Kind: KindHandoverPublished, Handover: &h2})
	feed(taker, relay, chain)
	chain.write(t, Body{Kind: KindHandoverConsumed, HandoverID: h2.ID, Session: "c"})
	asker.write(t, Body{Kind: KindReviewRequested, Review: "r-2", Session: "a", Subject: "R2"})
	feed(chain, asker, loner)
	loner.write(t, Body{Kind: KindReviewAnswered, Request: RecordKey(asker.stream(), "r-2"), Session: "l", Verdict: VerdictApproved})
	feed(loner)
	clock.Advance(pastExpiry)
	hear(j, publisher, 1) // only the publisher is alive

	// Act.
	res := compactNow(j, 0)

	// Check.
	want := []StreamID{asker.stream(), loner.stream()}
	slices.Sort(want)
	if !slices.Equal(res.Streams, want) {
		t.Fatalf("dropped %v, want only the asker and the loner (a request alone keeps nothing)", res.Streams)
	}
	st := j.Fold()
	for _, hv := range st.Handovers {
		if len(hv.ConsumedBy) != 1 {
			t.Errorf("handover %s lists %d takers, want 1: it would be taken twice", hv.ID, len(hv.ConsumedBy))
		}
	}
	if len(st.Reviews) != 1 || st.Reviews[0].State != ReviewAnswered || len(st.Reviews[0].Answers) != 2 {
		t.Fatalf("reviews = %+v, want R answered twice over (taker and relay), still answered", st.Reviews)
	}
}

func TestAnUntakenHandoverPinsItsStreamOnlyForTheHandoverRetention(t *testing.T) {
	// Arrange: a dead publisher whose handover nobody took.
	clock := NewManualClock(testEpoch)
	j := newObserver(t, clock)
	pub := newWriter(t, testKey(t, 0x02), clock, RuntimeOf("pub"), instanceN(1))
	pub.write(t, Body{Kind: KindHandoverPublished, Handover: &HandoverInfo{ID: HandoverID("todo"), Body: "todo"}})
	j.Ingest(pub.lines(), trustAll)
	hear(j, pub, 1)
	params := CompactParams{Expiry: testExpiry, Retention: PeerRetention, Handovers: HandoverRetention, Force: true}

	// Act and check: due but pinned within the handover retention...
	clock.Advance(testExpiry + PeerRetention + time.Second)
	if res := j.Compact(params); res.Dropped != 0 {
		t.Fatalf("an untaken handover's publisher went within the retention")
	}
	clock.Advance(HandoverRetention - 2*time.Second)
	if res := j.Compact(params); res.Dropped != 0 {
		t.Fatalf("an untaken handover's publisher went before the handover retention ran out")
	}
	// ...and gone once it has lapsed.
	clock.Advance(2 * time.Second)
	if res := j.Compact(params); res.Dropped != 1 {
		t.Fatalf("dropped %d after the handover retention, want the publisher's 1 event", res.Dropped)
	}
}

func TestCompactionDropsOnlyDeadStreamsWithoutHandovers(t *testing.T) {
	// Arrange.
	clock := NewManualClock(testEpoch)
	j := newObserver(t, clock)
	j.Append(claimBody("c-own", "s", ModeExclusive, "own")) // the own stream never beats here
	live := newWriter(t, testKey(t, 0x02), clock, RuntimeOf("live"), instanceN(1))
	dead := newWriter(t, testKey(t, 0x03), clock, RuntimeOf("dead"), instanceN(1))
	for _, w := range []*writer{live, dead} {
		w.write(t, openBody("s"))
		w.write(t, claimBody("c-1", "s", ModeExclusive, "x"))
		j.Ingest(w.lines(), trustAll)
	}
	clock.Advance(pastExpiry)
	hear(j, live, 1)

	// Act.
	unforced := j.Compact(CompactParams{Expiry: testExpiry})
	forced := compactNow(j, HandoverRetention)

	// Check.
	if unforced.Dropped != 0 {
		t.Fatalf("unforced compaction of an uncrowded journal dropped %d", unforced.Dropped)
	}
	if !slices.Equal(forced.Streams, []StreamID{dead.stream()}) {
		t.Fatalf("dropped %v, want only the dead stream", forced.Streams)
	}
	if n := len(liveClaims(j.Fold())); n != 2 {
		t.Fatalf("%d live claims after compaction, want the live runtime's and the own", n)
	}
	if len(j.StreamEvents(j.OwnStream())) != 1 {
		t.Fatalf("the own stream was compacted")
	}
}

// restartLoop runs n restarts of one runtime on the observer's own key:
// each run writes through write, is heard, stops, and is followed by an
// unforced compaction once it has been silent past expiry + retention.
// It fails on the first event the observer refuses.
func restartLoop(t *testing.T, n int, write func(w *writer, j *Journal)) *Journal {
	t.Helper()
	clock := NewManualClock(testEpoch)
	j := newObserver(t, clock)
	key := testKey(t, 0x01) // the observer's own machine key
	for i := range n {
		w := newWriter(t, key, clock, RuntimeOf("sibling"), instanceN(100+i))
		write(w, j)
		rep := j.Ingest(w.lines(), trustAll)
		if len(rep.Rejected) > 0 {
			t.Fatalf("run %d refused: %+v", i, rep.Rejected)
		}
		hear(j, w, 1)
		clock.Advance(testExpiry + PeerRetention + time.Second)
		j.Compact(CompactParams{Expiry: testExpiry, Retention: PeerRetention, Handovers: HandoverRetention})
	}
	return j
}

func TestAMachineThatRestartsPastItsStreamQuotaStillReachesItsSiblings(t *testing.T) {
	// Arrange, act: 70 restarts under one key, more than the 64-stream quota.
	j := restartLoop(t, 70, func(w *writer, _ *Journal) {
		w.write(t, openBody("s"))
		w.write(t, claimBody("c-1", "s", ModeExclusive, "apps"))
	})

	// Check: none was refused (restartLoop), and the node stays under quota.
	if n := j.nodeStreams[j.cfg.Key.Node]; n >= nodeStreamsMax {
		t.Fatalf("node holds %d streams", n)
	}
}

func TestANodeWhoseDeadStreamsPublishedTakenHandoversIsNotStarved(t *testing.T) {
	// Arrange, act: 70 restarts, each publishing a handover the observer takes.
	restartLoop(t, 70, func(w *writer, j *Journal) {
		body := fmt.Sprintf("handover of run %s", w.stream().Instance())
		w.write(t, Body{Kind: KindHandoverPublished, Handover: &HandoverInfo{ID: HandoverID(body), Body: body}})
		j.Ingest(w.lines(), trustAll)
		if _, err := j.Append(Body{Kind: KindHandoverConsumed, HandoverID: HandoverID(body), Session: "keeper"}); err != nil {
			t.Fatal(err)
		}
	})
	// Check: restartLoop refused nothing; taken handovers pinned nobody.
}

func TestARestartDoesNotCompactTheStreamsItHasNotHeardYet(t *testing.T) {
	// Arrange: a file holding 50 streams of one node, all long dead.
	clock := NewManualClock(testEpoch)
	key := testKey(t, 0x02)
	var lines [][]byte
	for i := range 50 {
		w := newWriter(t, key, clock, RuntimeOf("old"), instanceN(i))
		lines = append(lines, w.write(t, openBody("s")))
	}
	clock.Advance(48 * time.Hour)
	j := newObserver(t, clock)
	j.Reload(lines)

	// Act.
	now := j.Compact(CompactParams{Expiry: testExpiry, Retention: PeerRetention, Handovers: HandoverRetention})
	clock.Advance(testExpiry + PeerRetention + time.Second)
	later := j.Compact(CompactParams{Expiry: testExpiry, Retention: PeerRetention, Handovers: HandoverRetention})

	// Check: silence counts from when this journal learned the streams.
	if now.Dropped != 0 || later.Dropped != 50 {
		t.Fatalf("dropped %d at restart and %d past the retention, want 0 and 50", now.Dropped, later.Dropped)
	}
}

func TestTombstonesAreNotPersistedAndTheFileIsRewritten(t *testing.T) {
	// Arrange.
	clock := NewManualClock(testEpoch)
	path := filepath.Join(t.TempDir(), "mesh.jsonl")
	j := newObserver(t, clock)
	j.cfg.Store = &FileStore{Path: path}
	dead := newWriter(t, testKey(t, 0x02), clock, RuntimeOf("dead"), instanceN(1))
	dead.write(t, openBody("s"))
	j.Ingest(dead.lines(), trustAll)
	j.Append(openBody("mine"))
	clock.Advance(pastExpiry)

	// Act.
	compactNow(j, 0)
	lines, err := (&FileStore{Path: path}).Load()
	if err != nil {
		t.Fatal(err)
	}
	restarted := newWriter(t, testKey(t, 0x01), clock, observerRuntime, instanceN(9)).j
	restarted.Reload(lines)

	// Check.
	if len(lines) != 1 {
		t.Fatalf("file holds %d lines after compaction, want the own event only", len(lines))
	}
	if len(restarted.Tombstones()) != 0 {
		t.Fatalf("tombstones came back from the file")
	}
	if rep := restarted.Ingest(dead.lines(), trustAll); rep.Accepted != 1 {
		t.Fatalf("a restarted runtime refused a stream compacted before: %+v", rep)
	}
}

func TestTombstonesPastTheirBoundEvictTheSmallestIDFirst(t *testing.T) {
	// Arrange: the tombstone table is full.
	clock := NewManualClock(testEpoch)
	j := newObserver(t, clock)
	key := testKey(t, 0x02)
	for i := range tombstonesMax {
		j.tombstones[NewStreamID(key.Node, RuntimeOf("t"), instanceN(1000+i))] = Tombstone{Seq: 1}
	}
	smallest := NewStreamID(key.Node, RuntimeOf("t"), instanceN(1000))
	dead := newWriter(t, testKey(t, 0x03), clock, RuntimeOf("dead"), instanceN(1))
	j.Ingest([]json.RawMessage{dead.write(t, openBody("s"))}, trustAll)
	clock.Advance(pastExpiry)

	// Act.
	compactNow(j, 0)

	// Check.
	ts := j.Tombstones()
	if len(ts) != tombstonesMax {
		t.Fatalf("%d tombstones, want %d", len(ts), tombstonesMax)
	}
	if _, ok := ts[smallest]; ok || ts[dead.stream()] != (Tombstone{Seq: 1}) {
		t.Fatalf("the smallest id was not evicted for the new tombstone")
	}
}
