// This file holds the property test
// compacting_a_crowded_node_changes_nothing_live, with pgregory.net/rapid.
// One machine key; the observer is one runtime of it. Dead runs are 48-55
// restarts of a second runtime of the same key, which crowds the node; live
// runs are 1-5 other runtimes of it. Each run draws a scope, a mode, an
// ending (held, released, session closed, or nothing written — for every dead
// run at once with probability 0.2), what it offers (a handover, a review
// request) and what it takes (an earlier run's handover or review, never its
// own, after ingesting the offer). Dead runs are heard, ingested, then left
// silent for ten minutes; live runs are heard fresh. Then the observer
// compacts as the supervisor does (expiry 30 s, retention 0, the handover
// retention, not forced), and six assertions must hold:
//
//  1. the streams that went are a subset of the dead ones;
//  2. live claims, active sessions and overlaps are identical before and after;
//  3. the after-state equals the before-state restricted to the streams
//     that stayed (sessions, claims and handovers by stream, reviews by the
//     stream in their key);
//  4. no untaken handover's stream went;
//  5. every dead stream that stayed is pinned: it published an untaken
//     handover, took a remaining handover, or answered a remaining review;
//  6. the digest changed if and only if events were dropped.
//
// It runs 32 cases by default (as in CI); set PAROS_MESH_PROPERTY_CASES
// (e.g. 1000) to widen it locally. An explicit -rapid.checks wins.
package mesh

import (
	"flag"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"
)

const propertyCasesDefault = 32

// propertyCases sets rapid's case count for one test and returns a restore func.
func propertyCases(t *testing.T) func() {
	t.Helper()
	f := flag.Lookup("rapid.checks")
	explicit := false
	flag.Visit(func(x *flag.Flag) { explicit = explicit || x.Name == "rapid.checks" })
	if f == nil || explicit {
		return func() {}
	}
	n := propertyCasesDefault
	if s := os.Getenv("PAROS_MESH_PROPERTY_CASES"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("PAROS_MESH_PROPERTY_CASES=%q is not a positive count", s)
		}
		n = v
	}
	old := f.Value.String()
	if err := f.Value.Set(strconv.Itoa(n)); err != nil {
		t.Fatal(err)
	}
	t.Logf("rapid: %d cases", n)
	return func() { f.Value.Set(old) }
}

// run is one drawn process run.
type run struct {
	w         *writer
	dead      bool
	scope     string
	exclusive bool
	ending    int // 0 held, 1 released, 2 session closed, 3 nothing written
	offers    int // bit 1: a handover; bit 2: a review request
	takes     int // index of an earlier run to take from, or -1
}

func TestCompactingACrowdedNodeChangesNothingLive(t *testing.T) {
	defer propertyCases(t)()
	key := testKey(t, 0x01)
	scopes := []string{"apps", "apps/paros-cli", "docs", "site"}
	rapid.Check(t, func(rt *rapid.T) {
		// Arrange.
		clock := NewManualClock(testEpoch)
		j := NewJournal(JournalConfig{Key: key, Stream: NewStreamID(key.Node, RuntimeOf("observer"), instanceN(1)),
			Repo: testRepo(t), Expiry: 30 * time.Second, Clock: clock})
		nDead := rapid.IntRange(48, 55).Draw(rt, "dead")
		nLive := rapid.IntRange(1, 5).Draw(rt, "live")
		allQuiet := rapid.Float64Range(0, 1).Draw(rt, "quiet") < 0.2
		var runs []*run
		for i := range nDead + nLive {
			r := &run{dead: i < nDead, takes: -1}
			runtime := RuntimeOf("dead-runtime")
			if !r.dead {
				runtime = RuntimeOf(fmt.Sprintf("live-%d", 16+i))
			}
			r.w = newWriter(t, key, clock, runtime, instanceN(1000+i))
			r.scope = rapid.SampledFrom(scopes).Draw(rt, "scope")
			r.exclusive = rapid.Bool().Draw(rt, "exclusive")
			r.ending = rapid.IntRange(0, 3).Draw(rt, "ending")
			if r.dead && allQuiet {
				r.ending = 3
			}
			r.offers = rapid.IntRange(0, 3).Draw(rt, "offers")
			if i > 0 && rapid.Bool().Draw(rt, "takes?") {
				r.takes = rapid.IntRange(0, i-1).Draw(rt, "takes")
			}
			runs = append(runs, r)
		}
		dead := map[StreamID]bool{}
		for i, r := range runs {
			if i == nDead {
				clock.Advance(10 * time.Minute) // the dead were heard ten minutes ago
			}
			if r.dead {
				dead[r.w.stream()] = true
			}
			r.play(t, i, runs)
			if rep := j.Ingest(r.w.lines(), trustAll); len(rep.Rejected) > 0 || rep.Pending > 0 {
				rt.Fatalf("run %d: observer refused its events: %+v", i, rep)
			}
			hear(j, r.w, 1)
		}
		before := j.Fold()

		// Act.
		res := j.Compact(CompactParams{Expiry: 30 * time.Second, Retention: 0, Handovers: HandoverRetention})
		after := j.Fold()

		// Check.
		went := map[StreamID]bool{}
		for _, s := range res.Streams {
			went[s] = true
			if !dead[s] { // 1
				rt.Fatalf("a stream that is not dead went: %s", s)
			}
		}
		stayed := func(s StreamID) bool { return !went[s] }
		if !reflect.DeepEqual(liveClaims(before), liveClaims(after)) || // 2
			!reflect.DeepEqual(activeSessions(before), activeSessions(after)) ||
			!reflect.DeepEqual(before.Overlaps, after.Overlaps) {
			rt.Fatalf("something live changed:\nbefore %+v\nafter  %+v", before, after)
		}
		restricted := restrict(before, stayed) // 3
		if !reflect.DeepEqual(restricted.Sessions, after.Sessions) || !reflect.DeepEqual(restricted.Claims, after.Claims) ||
			!reflect.DeepEqual(restricted.Handovers, after.Handovers) || !reflect.DeepEqual(restricted.Reviews, after.Reviews) {
			rt.Fatalf("after-state is not the before-state restricted to the streams that stayed:\nwant %+v\ngot  %+v", restricted, after)
		}
		for _, h := range before.Handovers { // 4
			if len(h.ConsumedBy) == 0 && went[h.Stream] {
				rt.Fatalf("untaken handover %s lost its stream", h.ID)
			}
		}
		for s := range dead { // 5
			if stayed(s) && !pinned(s, before, after) {
				rt.Fatalf("dead stream %s stayed without a pin", s)
			}
		}
		if (before.Digest != after.Digest) != (res.Dropped > 0) { // 6
			rt.Fatalf("digest changed = %v, events dropped = %d", before.Digest != after.Digest, res.Dropped)
		}
	})
}

// play writes run i's events: session, claim, offers, takes, ending.
func (r *run) play(t *testing.T, i int, runs []*run) {
	if r.ending == 3 {
		return
	}
	w := r.w
	w.write(t, openBody("s"))
	mode := ModeAdvisory
	if r.exclusive {
		mode = ModeExclusive
	}
	w.write(t, claimBody("c-1", "s", mode, r.scope))
	if r.offers&1 != 0 {
		body := fmt.Sprintf("handover of run %d", i)
		w.write(t, Body{Kind: KindHandoverPublished, Handover: &HandoverInfo{ID: HandoverID(body), Body: body}})
	}
	if r.offers&2 != 0 {
		w.write(t, Body{Kind: KindReviewRequested, Review: "r-1", Session: "s", Subject: fmt.Sprintf("run %d", i)})
	}
	if k := r.takes; k >= 0 && runs[k].ending != 3 && runs[k].offers != 0 {
		from := runs[k]
		w.j.Ingest(from.w.lines(), trustAll) // hear the offer before taking it
		if from.offers&1 != 0 {
			w.write(t, Body{Kind: KindHandoverConsumed, HandoverID: HandoverID(fmt.Sprintf("handover of run %d", k)), Session: "s"})
		}
		if from.offers&2 != 0 {
			w.write(t, Body{Kind: KindReviewAnswered, Request: RecordKey(from.w.stream(), "r-1"), Session: "s", Verdict: VerdictApproved})
		}
	}
	switch r.ending {
	case 1:
		w.write(t, Body{Kind: KindClaimReleased, Claim: "c-1"})
	case 2:
		w.write(t, Body{Kind: KindSessionClosed, Session: "s"})
	}
}

func activeSessions(st State) []SessionView {
	var out []SessionView
	for _, s := range st.Sessions {
		if s.State == SessionActive {
			out = append(out, s)
		}
	}
	return out
}

// restrict keeps the records of streams for which keep holds.
func restrict(st State, keep func(StreamID) bool) State {
	out := State{Sessions: []SessionView{}, Claims: []ClaimView{}, Handovers: []HandoverView{}, Reviews: []ReviewView{}}
	for _, s := range st.Sessions {
		if keep(s.Stream) {
			out.Sessions = append(out.Sessions, s)
		}
	}
	for _, c := range st.Claims {
		if keep(c.Stream) {
			out.Claims = append(out.Claims, c)
		}
	}
	for _, h := range st.Handovers {
		if keep(h.Stream) {
			out.Handovers = append(out.Handovers, h)
		}
	}
	for _, r := range st.Reviews {
		if s, _, err := splitRecordKey(r.Key); err == nil && keep(s) {
			out.Reviews = append(out.Reviews, r)
		}
	}
	return out
}

// pinned reports whether stream s published an untaken handover (before),
// took a handover that remains, or answered a review that remains.
func pinned(s StreamID, before, after State) bool {
	ofS := func(key string) bool {
		stream, _, err := splitRecordKey(key)
		return err == nil && stream == s
	}
	for _, h := range before.Handovers {
		if h.Stream == s && len(h.ConsumedBy) == 0 {
			return true
		}
	}
	for _, h := range after.Handovers {
		if slices.ContainsFunc(h.ConsumedBy, ofS) {
			return true
		}
	}
	for _, r := range after.Reviews {
		if slices.ContainsFunc(r.Answers, func(a Answer) bool { return ofS(a.Session) }) {
			return true
		}
	}
	return false
}
