// This file checks the fold (docs/guide/mesh.md, "The fold") on records built
// by hand, so each rule is seen on its own: the earliest live exclusive claim
// wins and the others are Conflicted naming it; claims of one session never
// conflict; scopes meet by '/'-prefix; advisory claims overlap and are never
// refused; a claim expires with its runtime or its session, and a reopened
// session id does not revive it; the first publication of a handover wins and
// a taking ordered before it is ignored; a session cannot answer its own
// review; unknown kinds are counted. Two rapid properties back them: the fold
// is independent of order and of repeats, and the trie-indexed exclusivity
// and overlap walks agree with the naive quadratic walks over every pair.
package mesh

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// Fixed streams for hand-built records; the digit orders them.
func streamN(n int) StreamID {
	return StreamID(fmt.Sprintf("%032x-%016x-%016x", n, n, n))
}

func rec(s StreamID, seq, lamport uint64, b Body) Record {
	return Record{Stream: s, Seq: seq, Lamport: lamport, Body: &b}
}

func allAlive(StreamID) Liveness { return Live }

func claimByKey(t *testing.T, st State, key string) ClaimView {
	t.Helper()
	for _, c := range st.Claims {
		if c.Key == key {
			return c
		}
	}
	t.Fatalf("no claim %s in %+v", key, st.Claims)
	return ClaimView{}
}

func TestTheEarliestLiveExclusiveClaimWinsAndTheOthersNameIt(t *testing.T) {
	// Arrange: three runtimes claim overlapping scopes; the earliest is released.
	a, b, c := streamN(1), streamN(2), streamN(3)
	recs := []Record{
		rec(a, 1, 1, claimBody("c-a", "s", ModeExclusive, "apps")),
		rec(b, 1, 2, claimBody("c-b", "s", ModeExclusive, "apps/web")),
		rec(c, 1, 3, claimBody("c-c", "s", ModeExclusive, "apps")),
		rec(c, 2, 4, claimBody("c-d", "s", ModeExclusive, "docs")),
	}

	// Act.
	st := Fold(recs, allAlive)
	released := Fold(append(recs, rec(a, 2, 5, Body{Kind: KindClaimReleased, Claim: "c-a"})), allAlive)

	// Check.
	if got := claimByKey(t, st, RecordKey(b, "c-b")).Status; got != (ClaimStatus{ClaimConflicted, RecordKey(a, "c-a")}) {
		t.Errorf("b's claim: %+v, want conflicted naming a's", got)
	}
	if got := claimByKey(t, st, RecordKey(c, "c-c")).Status; got != (ClaimStatus{ClaimConflicted, RecordKey(a, "c-a")}) {
		t.Errorf("c's claim: %+v, want conflicted naming a's", got)
	}
	if got := claimByKey(t, st, RecordKey(c, "c-d")).Status.State; got != ClaimHeld {
		t.Errorf("c's docs claim: %s, want held", got)
	}
	// Released, a's claim frees apps: b's is now the earliest and c's names it.
	if got := claimByKey(t, released, RecordKey(b, "c-b")).Status.State; got != ClaimHeld {
		t.Errorf("after release b's claim is %s, want held", got)
	}
	if got := claimByKey(t, released, RecordKey(c, "c-c")).Status.Detail; got != RecordKey(b, "c-b") {
		t.Errorf("after release c's claim names %q, want b's", got)
	}
}

func TestClaimsOfOneSessionNeverConflict(t *testing.T) {
	// Arrange.
	a := streamN(1)
	recs := []Record{
		rec(a, 1, 1, claimBody("c-1", "s", ModeExclusive, "apps")),
		rec(a, 2, 2, claimBody("c-2", "s", ModeExclusive, "apps/x")),
		rec(a, 3, 3, claimBody("c-3", "t", ModeExclusive, "apps/x/y")),
	}

	// Act.
	st := Fold(recs, allAlive)

	// Check.
	if claimByKey(t, st, RecordKey(a, "c-2")).Status.State != ClaimHeld {
		t.Errorf("a second claim of the same session conflicted")
	}
	if claimByKey(t, st, RecordKey(a, "c-3")).Status.State != ClaimConflicted {
		t.Errorf("another session of the same runtime did not conflict")
	}
}

func TestScopesMeetByPathPrefix(t *testing.T) {
	cases := []struct {
		a, b string
		meet bool
	}{
		{"apps", "apps", true},
		{"apps", "apps/x", true},
		{"apps/x/y", "apps", true},
		{"app", "apps", false},
		{"apps/x", "apps/y", false},
		{"apps/", "apps", true},
		{"apps//", "apps/x", true},
		{" apps ", "apps", true},
		{" ", "apps", false},
		{"a//b", "a//b/c", true},
	}
	for _, tc := range cases {
		// Act.
		got := pathsMeet(tc.a, tc.b)
		idx := newPathIndex()
		idx.add(tc.a, 0)
		indexed := false
		idx.eachMeeting(tc.b, func(int) { indexed = true })

		// Check.
		if got != tc.meet || indexed != tc.meet {
			t.Errorf("meet(%q, %q) = %v, index says %v, want %v", tc.a, tc.b, got, indexed, tc.meet)
		}
	}
}

func TestAdvisoryClaimsOverlapAndAreNeverRefused(t *testing.T) {
	// Arrange.
	a, b := streamN(1), streamN(2)
	recs := []Record{
		rec(a, 1, 1, claimBody("c-a", "s", ModeExclusive, "apps", "docs")),
		rec(b, 1, 2, claimBody("c-b", "s", ModeAdvisory, "apps/x", "site")),
	}

	// Act.
	st := Fold(recs, allAlive)

	// Check.
	if claimByKey(t, st, RecordKey(b, "c-b")).Status.State != ClaimHeld {
		t.Fatalf("an advisory claim was not held")
	}
	want := []Overlap{{First: RecordKey(a, "c-a"), Second: RecordKey(b, "c-b"), Paths: [][2]string{{"apps", "apps/x"}}}}
	if !reflect.DeepEqual(st.Overlaps, want) {
		t.Fatalf("overlaps = %+v, want %+v", st.Overlaps, want)
	}
}

func TestAClaimExpiresWithItsRuntimeOrItsSessionAndAReopenedSessionDoesNotReviveIt(t *testing.T) {
	// Arrange.
	a, dead := streamN(1), streamN(2)
	liveness := func(s StreamID) Liveness {
		if s == dead {
			return Expired
		}
		return Live
	}
	recs := []Record{
		rec(a, 1, 1, openBody("s")),
		rec(a, 2, 2, claimBody("c-old", "s", ModeExclusive, "apps")),
		rec(a, 3, 3, Body{Kind: KindSessionClosed, Session: "s"}),
		rec(a, 4, 4, openBody("s")), // the same id again
		rec(a, 5, 5, claimBody("c-new", "s", ModeExclusive, "docs")),
		rec(a, 6, 6, claimBody("c-orphan", "never-opened", ModeExclusive, "site")),
		rec(dead, 1, 1, claimBody("c-dead", "s", ModeExclusive, "lib")),
	}

	// Act.
	st := Fold(recs, liveness)

	// Check.
	if got := claimByKey(t, st, RecordKey(a, "c-old")).Status; got != (ClaimStatus{ClaimExpired, ExpiredSessionClosed}) {
		t.Errorf("claim of a closed then reopened session: %+v, want expired (its session closed)", got)
	}
	if got := claimByKey(t, st, RecordKey(a, "c-new")).Status.State; got != ClaimHeld {
		t.Errorf("claim of the reopened session: %s, want held", got)
	}
	if got := claimByKey(t, st, RecordKey(a, "c-orphan")).Status.State; got != ClaimHeld {
		t.Errorf("claim of a session never opened: %s, want held", got)
	}
	if got := claimByKey(t, st, RecordKey(dead, "c-dead")).Status; got != (ClaimStatus{ClaimExpired, ExpiredRuntimeStopped}) {
		t.Errorf("claim of a dead runtime: %+v, want expired (its runtime stopped beating)", got)
	}
}

func TestTheFirstPublicationWinsAndATakingBeforeItIsIgnored(t *testing.T) {
	// Arrange.
	a, b, c := streamN(1), streamN(2), streamN(3)
	h := &HandoverInfo{ID: HandoverID("body"), Body: "body"}
	recs := []Record{
		rec(c, 1, 1, Body{Kind: KindHandoverConsumed, HandoverID: h.ID, Session: "early"}),
		rec(b, 1, 3, Body{Kind: KindHandoverPublished, Handover: h}),
		rec(a, 1, 2, Body{Kind: KindHandoverPublished, Handover: h}),
		rec(c, 2, 4, Body{Kind: KindHandoverConsumed, HandoverID: h.ID, Session: "t"}),
		rec(c, 3, 5, Body{Kind: KindHandoverConsumed, HandoverID: h.ID, Session: "t"}),
	}

	// Act.
	st := Fold(recs, allAlive)

	// Check.
	if len(st.Handovers) != 1 || st.Handovers[0].Stream != a || st.Handovers[0].PublishedLamport != 2 {
		t.Fatalf("handovers = %+v, want one, published by a at lamport 2", st.Handovers)
	}
	if !slices.Equal(st.Handovers[0].ConsumedBy, []string{RecordKey(c, "t")}) {
		t.Fatalf("consumed_by = %v, want only c/t, once", st.Handovers[0].ConsumedBy)
	}
}

func TestTheRequestingSessionCannotAnswerItsOwnReview(t *testing.T) {
	// Arrange.
	a, b := streamN(1), streamN(2)
	key := RecordKey(a, "r-1")
	recs := []Record{
		rec(a, 1, 1, Body{Kind: KindReviewRequested, Review: "r-1", Session: "s", Subject: "x"}),
		rec(a, 2, 2, Body{Kind: KindReviewAnswered, Request: key, Session: "s", Verdict: VerdictApproved}),
	}

	// Act.
	self := Fold(recs, allAlive)
	other := Fold(append(recs, rec(b, 1, 3, Body{Kind: KindReviewAnswered, Request: key, Session: "s", Verdict: VerdictChangesRequested})), allAlive)

	// Check.
	if self.Reviews[0].State != ReviewOpen || len(self.Reviews[0].Answers) != 0 {
		t.Fatalf("a self-answer counted: %+v", self.Reviews[0])
	}
	if other.Reviews[0].State != ReviewAnswered || other.Reviews[0].Answers[0].Session != RecordKey(b, "s") {
		t.Fatalf("another runtime's answer (same session id) did not count: %+v", other.Reviews[0])
	}
}

func TestUnknownKindsAreCountedOpaqueAndTheDigestFollowsTheState(t *testing.T) {
	// Arrange.
	a := streamN(1)
	recs := []Record{rec(a, 1, 1, Body{Kind: "future"}), rec(a, 2, 2, openBody("s"))}

	// Act.
	st := Fold(recs, allAlive)
	again := Fold(slices.Clone(recs), allAlive)
	fewer := Fold(recs[:1], allAlive)

	// Check.
	if st.OpaqueEvents != 1 {
		t.Fatalf("opaque = %d, want 1", st.OpaqueEvents)
	}
	if st.Digest != again.Digest || st.Digest == fewer.Digest || len(st.Digest) != 32 {
		t.Fatalf("digests %s %s %s: want equal for equal states, different otherwise", st.Digest, again.Digest, fewer.Digest)
	}
}

// A claim expired while its holder slept, listed in
// a later claim's supersedes, loses to that claim when its holder beats again.
func TestASupersededClaimComesBackConflictedNamingItsSuperseder(t *testing.T) {
	// Arrange: a's claim (earlier) is superseded by b's.
	a, b := streamN(1), streamN(2)
	recs := []Record{
		rec(a, 1, 1, claimBody("c-a", "s", ModeExclusive, "apps")),
		rec(b, 1, 5, Body{Kind: KindClaimAcquired, Claim: "c-b", Session: "s", Scope: []string{"apps"}, Supersedes: []string{RecordKey(a, "c-a")}}),
	}

	// Act: both alive again.
	st := Fold(recs, allAlive)

	// Check.
	if got := claimByKey(t, st, RecordKey(a, "c-a")).Status; got != (ClaimStatus{ClaimConflicted, RecordKey(b, "c-b")}) {
		t.Fatalf("the revived claim: %+v, want conflicted naming b's", got)
	}
}

// genHistory draws records of up to four streams over a small vocabulary,
// so that claims meet, sessions close and reopen, handovers are taken and
// reviews answered.
func genHistory(t *rapid.T) ([]Record, map[StreamID]Liveness) {
	paths := []string{"apps", "apps/web", "apps/web/x", "app", "docs", "docs/a", "site"}
	sessions := []string{"s", "t"}
	bodies := []string{"h1", "h2"}
	nStreams := rapid.IntRange(1, 4).Draw(t, "streams")
	live := map[StreamID]Liveness{}
	var recs []Record
	lamport := uint64(0)
	for i := range nStreams {
		s := streamN(i + 1)
		live[s] = Liveness(rapid.IntRange(0, 1).Draw(t, "live"))
		n := rapid.IntRange(0, 10).Draw(t, "events")
		for seq := 1; seq <= n; seq++ {
			lamport += uint64(rapid.IntRange(0, 2).Draw(t, "step"))
			sess := rapid.SampledFrom(sessions).Draw(t, "session")
			var b Body
			switch rapid.IntRange(0, 9).Draw(t, "kind") {
			case 0:
				b = openBody(sess)
			case 1:
				b = Body{Kind: KindSessionClosed, Session: sess}
			case 2, 3:
				scope := rapid.SliceOfNDistinct(rapid.SampledFrom(paths), 1, 2, rapid.ID[string]).Draw(t, "scope")
				mode := rapid.SampledFrom([]ClaimMode{ModeExclusive, ModeExclusive, ModeAdvisory}).Draw(t, "mode")
				b = claimBody(fmt.Sprintf("c-%d", rapid.IntRange(0, 3).Draw(t, "claim")), sess, mode, scope...)
				if rapid.IntRange(0, 4).Draw(t, "supersedes") == 0 {
					b.Supersedes = []string{RecordKey(streamN(rapid.IntRange(1, 4).Draw(t, "sup")), "c-0")}
				}
			case 4:
				b = Body{Kind: KindClaimReleased, Claim: fmt.Sprintf("c-%d", rapid.IntRange(0, 3).Draw(t, "claim"))}
			case 5:
				body := rapid.SampledFrom(bodies).Draw(t, "body")
				b = Body{Kind: KindHandoverPublished, Handover: &HandoverInfo{ID: HandoverID(body), Body: body}}
			case 6:
				b = Body{Kind: KindHandoverConsumed, HandoverID: HandoverID(rapid.SampledFrom(bodies).Draw(t, "body")), Session: sess}
			case 7:
				b = Body{Kind: KindReviewRequested, Review: "r-1", Session: sess, Subject: "x"}
			case 8:
				req := RecordKey(streamN(rapid.IntRange(1, 4).Draw(t, "req")), "r-1")
				b = Body{Kind: KindReviewAnswered, Request: req, Session: sess, Verdict: VerdictApproved}
			default:
				b = Body{Kind: "future"}
			}
			recs = append(recs, rec(s, uint64(seq), lamport+uint64(seq), b))
		}
	}
	return recs, live
}

func TestTheFoldIsIndependentOfOrderAndRepeats(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Arrange.
		recs, live := genHistory(t)
		liveness := func(s StreamID) Liveness { return live[s] }
		shuffled := rapid.Permutation(recs).Draw(t, "order")
		if len(recs) > 0 {
			extra := rapid.SliceOfN(rapid.SampledFrom(recs), 0, 5).Draw(t, "repeats")
			shuffled = append(shuffled, extra...)
		}

		// Act.
		a, b := Fold(recs, liveness), Fold(shuffled, liveness)

		// Check.
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("fold depends on order or repeats:\n%+v\n%+v", a, b)
		}
	})
}

// naiveResolve is exclusivity resolved the plain way: a list of winners,
// each new claim compared with every winner.
func naiveResolve(order []*ClaimView) {
	var winners []*ClaimView
	for _, c := range exclusiveOrder(order) {
		conflicted := false
		for _, w := range winners {
			if w.Session != c.Session && scopesMeet(w.Scope, c.Scope) {
				c.Status = ClaimStatus{State: ClaimConflicted, Detail: w.Key}
				conflicted = true
				break
			}
		}
		if !conflicted {
			c.Status = ClaimStatus{State: ClaimHeld}
			winners = append(winners, c)
		}
	}
}

// naiveOverlaps lists overlaps the plain way: every pair.
func naiveOverlaps(order []*ClaimView) []Overlap {
	var live []*ClaimView
	for _, c := range order {
		if c.Live() {
			live = append(live, c)
		}
	}
	out := []Overlap{}
	for i := range live {
		for j := range i {
			a, b := live[j], live[i]
			if a.Session == b.Session || (a.Exclusive() && b.Exclusive()) {
				continue
			}
			var paths [][2]string
			for _, x := range a.Scope {
				for _, y := range b.Scope {
					if pathsMeet(x, y) {
						paths = append(paths, [2]string{x, y})
					}
				}
			}
			if len(paths) > 0 {
				slices.SortFunc(paths, func(x, y [2]string) int {
					return cmp.Or(strings.Compare(x[0], y[0]), strings.Compare(x[1], y[1]))
				})
				out = append(out, Overlap{First: a.Key, Second: b.Key, Paths: slices.Compact(paths)})
			}
		}
	}
	return out
}

func TestTheIndexedWalksAgreeWithTheNaiveWalks(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Arrange: claims in acquisition order, some not live.
		paths := []string{"a", "a/b", "a/b/c", "ab", "a/c", "b", "b/a", "a/", " a"}
		n := rapid.IntRange(0, 30).Draw(t, "claims")
		mk := func() []*ClaimView {
			var out []*ClaimView
			for i := range n {
				state := rapid.SampledFrom([]string{ClaimHeld, ClaimHeld, ClaimHeld, ClaimReleased}).Draw(t, "state")
				mode := rapid.SampledFrom([]ClaimMode{ModeExclusive, ModeAdvisory}).Draw(t, "mode")
				out = append(out, &ClaimView{
					Key: fmt.Sprintf("k%02d", i), Session: rapid.SampledFrom([]string{"s", "t", "u"}).Draw(t, "session"),
					Scope: rapid.SliceOfNDistinct(rapid.SampledFrom(paths), 1, 3, rapid.ID[string]).Draw(t, "scope"),
					Mode:  mode, Status: ClaimStatus{State: state},
				})
			}
			return out
		}
		fast := mk()
		slow := make([]*ClaimView, len(fast))
		for i, c := range fast {
			cc := *c
			slow[i] = &cc
		}

		// Act.
		resolveExclusive(fast)
		naiveResolve(slow)
		fo, so := findOverlaps(fast), naiveOverlaps(slow)

		// Check.
		for i := range fast {
			if fast[i].Status != slow[i].Status {
				t.Fatalf("claim %s: indexed %+v, naive %+v", fast[i].Key, fast[i].Status, slow[i].Status)
			}
		}
		if !reflect.DeepEqual(fo, so) {
			t.Fatalf("overlaps differ:\nindexed %+v\nnaive   %+v", fo, so)
		}
	})
}
