// This file holds the fixtures the mesh tests share: a testNet of runtimes
// linked through MemTransport (the real signed link protocol, in process)
// on one ManualClock, with short test settings (heartbeat 1 s,
// expiry 3 s, trust on first use, repository of root commit "root"), and
// small helpers to build signed events without a runtime. It checks nothing
// by itself.
package mesh

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

const (
	testHeartbeat = time.Second
	testExpiry    = 3 * time.Second
	// pastExpiry is how long a test waits for a stopped runtime to expire.
	pastExpiry = 3300 * time.Millisecond
)

var testEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// testRepo is the repository id of root commit "root".
func testRepo(t testing.TB) string {
	t.Helper()
	repo, err := RepositoryFromRoots([]string{"root"})
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

// testKey returns a deterministic key for seed byte b.
func testKey(t testing.TB, b byte) *Key {
	t.Helper()
	k, err := NewKey(bytes.Repeat([]byte{b}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// testNet is several runtimes on one in-process network and one clock.
type testNet struct {
	t     testing.TB
	clock *ManualClock
	tr    *MemTransport
	repo  string
	all   []*Runtime
	named map[string]*Runtime
}

func newTestNet(t testing.TB) *testNet {
	return &testNet{t: t, clock: NewManualClock(testEpoch), tr: NewMemTransport(), repo: testRepo(t), named: map[string]*Runtime{}}
}

// runtime starts a runtime for checkout name with its own ephemeral key,
// serving at endpoint "mem://name" and dialing seeds.
func (n *testNet) runtime(name string, seeds ...string) *Runtime {
	n.t.Helper()
	key, err := GenerateKey(rand.Reader)
	if err != nil {
		n.t.Fatal(err)
	}
	return n.runtimeWithKey(name, key, seeds...)
}

func (n *testNet) runtimeWithKey(name string, key *Key, seeds ...string) *Runtime {
	n.t.Helper()
	trust, err := NewTrust(TrustOnFirstUse, key.PK, nil)
	if err != nil {
		n.t.Fatal(err)
	}
	var eps []string
	for _, s := range seeds {
		eps = append(eps, endpointOf(s))
	}
	r, err := New(Config{
		Key: key, Runtime: RuntimeOf(name), Repo: n.repo, Name: name,
		Heartbeat: testHeartbeat, Expiry: testExpiry, Trust: trust,
		Seeds: eps, Clock: n.clock, Rand: rand.Reader, Transport: n.tr,
	})
	if err != nil {
		n.t.Fatal(err)
	}
	n.tr.Register(endpointOf(name), r)
	n.all = append(n.all, r)
	n.named[name] = r
	return r
}

func endpointOf(name string) string { return "mem://" + name }

// round is one heartbeat of dialer with answerer: both beat, then dialer
// runs one sync round with answerer.
func (n *testNet) round(dialer *Runtime, answerer string) {
	n.t.Helper()
	if a := n.named[answerer]; a != nil {
		a.Beat()
	}
	dialer.Beat()
	if err := dialer.SyncWith(context.Background(), endpointOf(answerer)); err != nil {
		n.t.Fatalf("round %s -> %s: %v", dialer.card.Name, answerer, err)
	}
}

// sleep advances the clock by d in heartbeat steps; the awake runtimes tick
// (beat, sync with their seeds, housekeep) at every step.
func (n *testNet) sleep(d time.Duration, awake ...*Runtime) {
	for d > 0 {
		step := min(d, testHeartbeat)
		n.clock.Advance(step)
		d -= step
		for _, r := range awake {
			r.Tick(context.Background())
		}
	}
}

// forceCompact compacts as the supervisor would, but with retention 0 and
// forced, so a test need not wait out a retention.
func forceCompact(r *Runtime, handovers time.Duration) CompactResult {
	return r.Compact(CompactParams{Expiry: testExpiry, Retention: 0, Handovers: handovers, Force: true})
}

// liveClaims returns the Held or Conflicted claims of a state.
func liveClaims(st State) []ClaimView {
	var out []ClaimView
	for _, c := range st.Claims {
		if c.Live() {
			out = append(out, c)
		}
	}
	return out
}

// writer is a bare journal that signs events for a stream, for tests that
// feed another journal by hand.
type writer struct {
	j *Journal
}

func newWriter(t testing.TB, key *Key, clock Clock, runtime, instance string) *writer {
	t.Helper()
	return &writer{j: NewJournal(JournalConfig{Key: key, Stream: NewStreamID(key.Node, runtime, instance),
		Repo: testRepo(t), Expiry: testExpiry, Clock: clock})}
}

func (w *writer) stream() StreamID { return w.j.OwnStream() }

// write appends body and returns the event's line.
func (w *writer) write(t testing.TB, body Body) json.RawMessage {
	t.Helper()
	ev, err := w.j.Append(body)
	if err != nil {
		t.Fatalf("append %s: %v", body.Kind, err)
	}
	return marshalWire(ev)
}

// lines returns every line of the writer's own stream.
func (w *writer) lines() []json.RawMessage {
	var out []json.RawMessage
	for _, st := range w.j.streams[w.stream()].events {
		out = append(out, st.line)
	}
	return out
}

func trustAll(string) bool { return true }

func openBody(session string) Body {
	return Body{Kind: KindSessionOpened, Info: &SessionInfo{Session: session, Client: "test"}}
}

func claimBody(claim, session string, mode ClaimMode, scope ...string) Body {
	return Body{Kind: KindClaimAcquired, Claim: claim, Session: session, Scope: scope, Mode: mode}
}

// observerRuntime is the runtime id of the journal under test.
var observerRuntime = RuntimeOf("observer")

// newObserver returns the journal under test, with key seed 0x01.
func newObserver(t testing.TB, clock Clock) *Journal {
	t.Helper()
	key := testKey(t, 0x01)
	return NewJournal(JournalConfig{Key: key, Stream: NewStreamID(key.Node, observerRuntime, "0000000000000001"),
		Repo: testRepo(t), Expiry: testExpiry, Clock: clock})
}

// signRaw signs ev as it is, bypassing every bound, and returns its line.
func signRaw(t testing.TB, key *Key, ev Event) json.RawMessage {
	t.Helper()
	signed, err := ev.signedBytes()
	if err != nil {
		t.Fatal(err)
	}
	ev.Sig = key.Sign(domainEvent, signed)
	return marshalWire(ev)
}

// rawEvent is a well-formed unsigned event of stream s with body.
func rawEvent(t testing.TB, key *Key, s StreamID, seq, lamport uint64, body any) Event {
	t.Helper()
	return Event{V: 1, Stream: s, Seq: seq, Lamport: lamport, At: testEpoch.Unix(), Repo: testRepo(t), PK: key.PK,
		Body: marshalWire(body)}
}

// instanceN is the 16-hex instance id of number i.
func instanceN(i int) string { return fmt.Sprintf("%016x", i) }

// mark builds the signed mark of stream s at beat with age ageMs.
func markOf(key *Key, s StreamID, seq, beat, ageMs uint64) Mark {
	return Mark{Seq: seq, Beat: beat, AgeMs: &ageMs, PK: key.PK, Sig: key.Sign(domainBeat, beatBytes(s, beat))}
}
