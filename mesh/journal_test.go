// This file checks the journal: own writes are dense, signed and
// Lamport-stamped; ingest checks every event in the documented order and
// lands each in exactly one of accepted, duplicate, pending or rejected, with
// a typed refusal; gaps wait as pending and drain; quotas refuse for
// capacity; marks and MissingFor send a peer only what it lacks, within a
// budget, from a rotating stream; beats are adopted only when verified,
// trusted and (for a new stream) fresh, and a relay can neither forge events
// nor mint beats; liveness is Own, Live or Expired on the injected clock; and
// a reload from the JSONL file restores events but no liveness. Events are
// built by bare writer journals and, for hostile cases, signed by hand.
package mesh

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestOwnWritesAreDenseSignedAndLamportStamped(t *testing.T) {
	// Arrange.
	clock := NewManualClock(testEpoch)
	j := newObserver(t, clock)
	peer := newWriter(t, testKey(t, 0x02), clock, RuntimeOf("peer"), instanceN(1))
	for range 9 {
		peer.write(t, openBody("p"))
	}

	// Act.
	j.Append(openBody("a"))
	j.Ingest(peer.lines(), trustAll) // the peer's stamps reach 9
	j.Append(openBody("b"))
	j.Append(openBody("c"))

	// Check.
	evs := j.StreamEvents(j.OwnStream())
	var seqs, lamports []uint64
	for _, e := range evs {
		seqs = append(seqs, e.Seq)
		lamports = append(lamports, e.Lamport)
	}
	if !slices.Equal(seqs, []uint64{1, 2, 3}) || !slices.Equal(lamports, []uint64{1, 10, 11}) {
		t.Fatalf("seqs %v lamports %v, want 1 2 3 and 1 10 11", seqs, lamports)
	}
	reader := newWriter(t, testKey(t, 0x03), clock, RuntimeOf("reader"), instanceN(1)).j
	var lines []json.RawMessage
	for _, e := range evs {
		lines = append(lines, marshalWire(e))
	}
	if rep := reader.Ingest(lines, trustAll); rep.Accepted != 3 {
		t.Fatalf("another journal accepted %d of 3 own events: %+v", rep.Accepted, rep)
	}
}

func TestBoundsAreCheckedBeforeSigning(t *testing.T) {
	// Arrange.
	j := newObserver(t, NewManualClock(testEpoch))
	bad := []Body{
		{Kind: KindSessionOpened, Info: &SessionInfo{Session: "has space", Client: "c"}},
		claimBody("c-1", "s", ModeExclusive),                                        // no scope
		claimBody("c-1", "s", ModeExclusive, "/abs"),                                // absolute
		claimBody("c-1", "s", ModeExclusive, "a/../b"),                              // dot-dot
		claimBody("c-1", "s", "sometimes", "a"),                                     // mode
		{Kind: KindHandoverPublished, Handover: &HandoverInfo{ID: "00", Body: "x"}}, // id is not the digest
		{Kind: KindReviewAnswered, Request: "nope", Session: "s", Verdict: VerdictApproved},
		{Kind: "custom_kind"}, // this runtime writes only known kinds
	}

	for _, b := range bad {
		// Act.
		_, err := j.Append(b)

		// Check.
		if err == nil {
			t.Errorf("Append(%+v) succeeded, want a bounds error", b)
		}
	}
	if n := len(j.StreamEvents(j.OwnStream())); n != 0 {
		t.Fatalf("%d events written after refusals, want 0", n)
	}
}

// hostile builds one event refused for each reason, in check order.
func hostileEvents(t *testing.T, clock Clock) (map[Refusal]json.RawMessage, *Key) {
	t.Helper()
	key := testKey(t, 0x02)
	s := NewStreamID(key.Node, RuntimeOf("peer"), instanceN(1))
	good := func() Event { return rawEvent(t, key, s, 1, 1, openBody("s")) }
	out := map[Refusal]json.RawMessage{}

	big := good()
	big.Body = marshalWire(map[string]string{"kind": "blob", "data": string(bytes.Repeat([]byte("x"), eventBytesMax))})
	out[RefusedOversized] = signRaw(t, key, big)

	v2 := good()
	v2.V = 2
	out[RefusedVersion] = signRaw(t, key, v2)

	wrongNode := good()
	wrongNode.Stream = NewStreamID(testKey(t, 0x09).Node, RuntimeOf("peer"), instanceN(1))
	out[RefusedIdentity] = signRaw(t, key, wrongNode)

	tampered := good()
	line := signRaw(t, key, tampered)
	out[RefusedSignature] = bytes.Replace(line, []byte(`"client":"test"`), []byte(`"client":"evil"`), 1)

	otherRepo := good()
	otherRepo.Repo = RepositoryDeclared("elsewhere")
	out[RefusedRepository] = signRaw(t, key, otherRepo)

	badKnown := good()
	badKnown.Body = marshalWire(claimBody("c-1", "s", ModeExclusive)) // no scope
	out[RefusedBounds] = signRaw(t, key, badKnown)

	return out, key
}

func TestIngestRefusesHostileEventsByReason(t *testing.T) {
	// Arrange.
	clock := NewManualClock(testEpoch)
	events, _ := hostileEvents(t, clock)

	for why, line := range events {
		// Act.
		j := newObserver(t, clock)
		rep := j.Ingest([]json.RawMessage{line}, trustAll)

		// Check.
		if len(rep.Rejected) != 1 || rep.Rejected[0].Reason != why {
			t.Errorf("%s event: report %+v, want one rejection for %s", why, rep, why)
		}
	}
	// Untrusted comes after every check above.
	w := newWriter(t, testKey(t, 0x02), clock, RuntimeOf("peer"), instanceN(1))
	w.write(t, openBody("s"))
	j := newObserver(t, clock)
	rep := j.Ingest(w.lines(), func(string) bool { return false })
	if len(rep.Rejected) != 1 || rep.Rejected[0].Reason != RefusedUntrusted {
		t.Errorf("untrusted event: report %+v", rep)
	}
	// Garbage is refused, typed, and never panics.
	for _, junk := range []string{``, `null`, `[]`, `{"v":1}`, `{"v":"1"}`, `{"v":1,"seq":-1}`, `{"v":1,"body":3}`} {
		rep := j.Ingest([]json.RawMessage{json.RawMessage(junk)}, trustAll)
		if len(rep.Rejected) != 1 || !slices.Contains(Refusals, rep.Rejected[0].Reason) {
			t.Errorf("junk %q: report %+v, want one typed rejection", junk, rep)
		}
	}
}

func TestAnUnknownKindIsHeldAndRelayedButABadKnownKindIsRefused(t *testing.T) {
	// Arrange.
	clock := NewManualClock(testEpoch)
	key := testKey(t, 0x02)
	s := NewStreamID(key.Node, RuntimeOf("peer"), instanceN(1))
	opaque := signRaw(t, key, rawEvent(t, key, s, 1, 1, map[string]any{"kind": "future_kind", "x": []int{1, 2}, "y": "<&>"}))
	j := newObserver(t, clock)

	// Act.
	rep := j.Ingest([]json.RawMessage{opaque}, trustAll)
	relayed := j.MissingFor(Marks{}, 1<<20)

	// Check.
	if rep.Accepted != 1 || j.Fold().OpaqueEvents != 1 {
		t.Fatalf("unknown kind: report %+v, opaque %d; want accepted and counted opaque", rep, j.Fold().OpaqueEvents)
	}
	third := newWriter(t, testKey(t, 0x05), clock, RuntimeOf("third"), instanceN(1)).j
	if rep := third.Ingest(relayed, trustAll); rep.Accepted != 1 {
		t.Fatalf("relayed opaque event not accepted downstream: %+v", rep)
	}
	if got := third.StreamEvents(s)[0].Body; !bytes.Contains(got, []byte(`"<&>"`)) {
		t.Fatalf("opaque body not relayed byte for byte: %s", got)
	}
}

func TestEveryEventLandsInExactlyOneBucket(t *testing.T) {
	// Arrange: a stream of 5 events delivered out of order, twice, with
	// two hostile ones mixed in.
	clock := NewManualClock(testEpoch)
	w := newWriter(t, testKey(t, 0x02), clock, RuntimeOf("peer"), instanceN(1))
	for i := range 5 {
		w.write(t, openBody("s"+string(rune('a'+i))))
	}
	l := w.lines()
	hostile, _ := hostileEvents(t, clock)
	batch := []json.RawMessage{l[4], l[2], hostile[RefusedSignature], l[0], l[0], l[3], hostile[RefusedVersion], l[1], l[4]}
	j := newObserver(t, clock)

	// Act.
	rep := j.Ingest(batch, trustAll)

	// Check.
	if rep.Total() != len(batch) {
		t.Fatalf("report accounts for %d of %d events", rep.Total(), len(batch))
	}
	// l4,l2 pending; l0 accepted; l0 dup; l3 pending; l1 accepted (drains 2,3,4); l4 dup.
	if rep.Accepted != 2 || rep.Pending != 3 || rep.Duplicate != 2 || len(rep.Rejected) != 2 {
		t.Fatalf("report %+v, want 2 accepted, 3 pending, 2 duplicate, 2 rejected", rep)
	}
	if n := len(j.StreamEvents(w.stream())); n != 5 || j.PendingHeld() != 0 {
		t.Fatalf("held %d events with %d pending, want 5 and 0", n, j.PendingHeld())
	}
}

func TestAGapWaitsAndAnEventOfTheOwnStreamIsADuplicate(t *testing.T) {
	// Arrange.
	clock := NewManualClock(testEpoch)
	j := newObserver(t, clock)
	w := newWriter(t, testKey(t, 0x02), clock, RuntimeOf("peer"), instanceN(1))
	w.write(t, openBody("a"))
	w.write(t, openBody("b"))
	own, _ := j.Append(openBody("mine"))

	// Act.
	gap := j.Ingest(w.lines()[1:], trustAll)
	mine := j.Ingest([]json.RawMessage{marshalWire(own)}, trustAll)

	// Check.
	if gap.Pending != 1 || len(j.StreamEvents(w.stream())) != 0 {
		t.Fatalf("event 2 without 1: report %+v, want pending and nothing held", gap)
	}
	if j.Marks()[w.stream()].Seq != 0 {
		t.Fatalf("a pending event moved the mark")
	}
	if mine.Duplicate != 1 {
		t.Fatalf("own event from a peer: report %+v, want a duplicate", mine)
	}
}

func TestQuotasRefuseForCapacity(t *testing.T) {
	// Arrange: one node fills its 64-stream quota (the observer is another node).
	clock := NewManualClock(testEpoch)
	key := testKey(t, 0x02)
	j := newObserver(t, clock)
	for i := range nodeStreamsMax {
		w := newWriter(t, key, clock, RuntimeOf("peer"), instanceN(i))
		if rep := j.Ingest([]json.RawMessage{w.write(t, openBody("s"))}, trustAll); rep.Accepted != 1 {
			t.Fatalf("stream %d refused: %+v", i, rep)
		}
	}

	// Act.
	extra := newWriter(t, key, clock, RuntimeOf("peer"), instanceN(999))
	rep := j.Ingest([]json.RawMessage{extra.write(t, openBody("s"))}, trustAll)

	// Check.
	if len(rep.Rejected) != 1 || rep.Rejected[0].Reason != RefusedCapacity {
		t.Fatalf("65th stream of one node: report %+v, want a capacity refusal", rep)
	}
	// Pending is bounded per stream.
	w := newWriter(t, testKey(t, 0x03), clock, RuntimeOf("gappy"), instanceN(1))
	for range streamPendingMax + 2 {
		w.write(t, openBody("s"))
	}
	rep = j.Ingest(w.lines()[1:], trustAll)
	if rep.Pending != streamPendingMax || len(rep.Rejected) != 1 || rep.Rejected[0].Reason != RefusedCapacity {
		t.Fatalf("pending past %d: report pending %d rejected %+v", streamPendingMax, rep.Pending, rep.Rejected)
	}
}

func TestMissingForSendsOnlyWhatAPeerLacks(t *testing.T) {
	// Arrange.
	clock := NewManualClock(testEpoch)
	j := newObserver(t, clock)
	a := newWriter(t, testKey(t, 0x02), clock, RuntimeOf("a"), instanceN(1))
	b := newWriter(t, testKey(t, 0x03), clock, RuntimeOf("b"), instanceN(1))
	for range 3 {
		a.write(t, openBody("s"))
		b.write(t, openBody("s"))
	}
	j.Ingest(append(a.lines(), b.lines()...), trustAll)

	// Act.
	missing := j.MissingFor(Marks{a.stream(): {Seq: 2}, b.stream(): {Seq: 3}}, 1<<20)

	// Check.
	if len(missing) != 1 || !bytes.Equal(missing[0], a.lines()[2]) {
		t.Fatalf("missing = %d events, want only a's third", len(missing))
	}
	// A budget smaller than one event still sends one.
	if got := j.MissingFor(Marks{}, 1); len(got) != 1 {
		t.Fatalf("budget 1 sent %d events, want 1", len(got))
	}
	// The starting stream rotates: two calls with a one-event budget start
	// at different streams.
	first := j.MissingFor(Marks{}, 1)
	second := j.MissingFor(Marks{}, 1)
	if bytes.Equal(first[0], second[0]) {
		t.Fatalf("MissingFor started at the same stream twice")
	}
}

func TestBeatsAreAdoptedOnlyWhenVerifiedTrustedAndFresh(t *testing.T) {
	// Arrange.
	clock := NewManualClock(testEpoch)
	key := testKey(t, 0x02)
	s := NewStreamID(key.Node, RuntimeOf("peer"), instanceN(1))
	forger := testKey(t, 0x04)
	cases := []struct {
		name  string
		mark  Mark
		trust func(string) bool
		want  bool
	}{
		{"fresh verified trusted", markOf(key, s, 0, 3, 0), trustAll, true},
		{"stale (age past expiry)", markOf(key, s, 0, 3, uint64(testExpiry/time.Millisecond)+1), trustAll, false},
		{"no age", func() Mark { m := markOf(key, s, 0, 3, 0); m.AgeMs = nil; return m }(), trustAll, false},
		{"untrusted", markOf(key, s, 0, 3, 0), func(string) bool { return false }, false},
		{"beat zero", Mark{Seq: 1}, trustAll, false},
		{"signed by another key", func() Mark { m := markOf(forger, s, 0, 3, 0); return m }(), trustAll, false},
		{"a relay mints a higher beat", func() Mark { m := markOf(key, s, 0, 3, 0); m.Beat = 4; return m }(), trustAll, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := newObserver(t, clock)

			// Act.
			j.MergeMarks(Marks{s: tc.mark}, tc.trust)

			// Check.
			if got := j.Liveness(s) == Live; got != tc.want {
				t.Fatalf("stream live = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBeatsRelayedWithoutClocksAgeOnTheLocalClock(t *testing.T) {
	// Arrange: a relay reports a beat it saw 2 s ago (expiry 3 s).
	clock := NewManualClock(testEpoch)
	key := testKey(t, 0x02)
	s := NewStreamID(key.Node, RuntimeOf("peer"), instanceN(1))
	j := newObserver(t, clock)

	// Act.
	j.MergeMarks(Marks{s: markOf(key, s, 0, 5, 2000)}, trustAll)

	// Check: live now, expired once the remaining second has passed.
	if j.Liveness(s) != Live {
		t.Fatalf("stream not live after a 2 s old beat")
	}
	clock.Advance(1001 * time.Millisecond)
	if j.Liveness(s) != Expired {
		t.Fatalf("stream still live 3.001 s after its beat")
	}
	// The same beat again changes nothing; only a rising beat does.
	j.MergeMarks(Marks{s: markOf(key, s, 0, 5, 0)}, trustAll)
	if j.Liveness(s) != Expired {
		t.Fatalf("a repeated beat revived the stream")
	}
	j.MergeMarks(Marks{s: markOf(key, s, 0, 6, 0)}, trustAll)
	if j.Liveness(s) != Live {
		t.Fatalf("a rising fresh beat did not revive the stream")
	}
	// A held stream adopts a stale rising beat, but never as fresher than
	// one expiry ago.
	j.MergeMarks(Marks{s: markOf(key, s, 0, 7, 1<<40)}, trustAll)
	if j.Liveness(s) != Expired {
		t.Fatalf("a stale relayed beat kept the stream alive")
	}
}

func TestAStaleRelayedBeatTakesNoSlotOfItsNode(t *testing.T) {
	// Arrange: 64 stale marks of one node.
	clock := NewManualClock(testEpoch)
	key := testKey(t, 0x02)
	j := newObserver(t, clock)
	marks := Marks{}
	for i := range nodeStreamsMax {
		s := NewStreamID(key.Node, RuntimeOf("peer"), instanceN(i))
		marks[s] = markOf(key, s, 0, 1, 60_000)
	}

	// Act.
	j.MergeMarks(marks, trustAll)
	w := newWriter(t, key, clock, RuntimeOf("peer"), instanceN(1000))
	rep := j.Ingest([]json.RawMessage{w.write(t, openBody("s"))}, trustAll)

	// Check.
	if len(j.Streams()) != 2 || rep.Accepted != 1 {
		t.Fatalf("stale marks created %d streams; a real stream got %+v", len(j.Streams())-1, rep)
	}
}

func TestLivenessIsOwnLiveOrExpired(t *testing.T) {
	// Arrange.
	clock := NewManualClock(testEpoch)
	j := newObserver(t, clock)
	key := testKey(t, 0x02)
	heard := NewStreamID(key.Node, RuntimeOf("heard"), instanceN(1))
	w := newWriter(t, key, clock, RuntimeOf("silent"), instanceN(1))

	// Act.
	j.MergeMarks(Marks{heard: markOf(key, heard, 0, 1, 0)}, trustAll)
	j.Ingest([]json.RawMessage{w.write(t, openBody("s"))}, trustAll)

	// Check.
	if j.Liveness(j.OwnStream()) != Own || j.Liveness(heard) != Live || j.Liveness(w.stream()) != Expired {
		t.Fatalf("liveness own %v heard %v never-beating %v, want own live expired",
			j.Liveness(j.OwnStream()), j.Liveness(heard), j.Liveness(w.stream()))
	}
	clock.Advance(testExpiry + time.Millisecond)
	if j.Liveness(heard) != Expired || j.Liveness(j.OwnStream()) != Own {
		t.Fatalf("after the expiry: heard %v own %v", j.Liveness(heard), j.Liveness(j.OwnStream()))
	}
}

func TestAReloadRestoresEventsButResurrectsNoLiveness(t *testing.T) {
	// Arrange: a journal persisted to a file holds a live peer's claim.
	clock := NewManualClock(testEpoch)
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	key := testKey(t, 0x02)
	w := newWriter(t, key, clock, RuntimeOf("peer"), instanceN(1))
	w.write(t, openBody("s"))
	w.write(t, claimBody("c-1", "s", ModeExclusive, "apps"))
	j := newObserver(t, clock)
	j.cfg.Store = &FileStore{Path: path}
	j.Append(openBody("mine"))
	j.Ingest(w.lines(), trustAll)
	j.MergeMarks(Marks{w.stream(): markOf(key, w.stream(), 2, 1, 0)}, trustAll)
	if len(liveClaims(j.Fold())) != 1 {
		t.Fatalf("claim not live before the restart")
	}

	// Act: restart (a new own stream) and reload.
	lines, err := (&FileStore{Path: path}).Load()
	if err != nil {
		t.Fatal(err)
	}
	key1 := testKey(t, 0x01)
	restarted := NewJournal(JournalConfig{Key: key1, Stream: NewStreamID(key1.Node, observerRuntime, instanceN(2)),
		Repo: testRepo(t), Expiry: testExpiry, Clock: clock})
	rep := restarted.Reload(lines)

	// Check.
	if rep.Accepted != 3 || restarted.EventsHeld() != 3 {
		t.Fatalf("reload: %+v, holding %d, want 3 events", rep, restarted.EventsHeld())
	}
	if len(liveClaims(restarted.Fold())) != 0 || restarted.Liveness(w.stream()) != Expired {
		t.Fatalf("a reload revived liveness")
	}
	if tl := restarted.Tallies(); tl.Received != 0 || tl.Duplicate != 0 {
		t.Fatalf("reload left received/duplicate tallies %d/%d, want 0", tl.Received, tl.Duplicate)
	}
}
