// This file checks the link protocol (docs/guide/mesh.md, "Links and trust")
// between runtimes on MemTransport and a ManualClock: each hello, welcome and
// sync refusal is produced by a crafted message and comes back typed; one
// round replicates both ways; a message stays within its size budget and
// rounds converge anyway; an expired link says hello again; a relay chain
// converges with every event held once and carries beats it cannot forge; the
// supervisor's Tick compacts once every sixty heartbeats; and admission
// refuses what is not this runtime's to do.
package mesh

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// answerer is a runtime under deny_unknown that trusts allowed keys.
func (n *testNet) answerer(name string, allow ...string) *Runtime {
	n.t.Helper()
	key, _ := GenerateKey(rand.Reader)
	trust, err := NewTrust(TrustDenyUnknown, key.PK, allow)
	if err != nil {
		n.t.Fatal(err)
	}
	r, err := New(Config{Key: key, Runtime: RuntimeOf(name), Repo: n.repo, Name: name, Heartbeat: testHeartbeat,
		Expiry: testExpiry, Trust: trust, Clock: n.clock, Rand: rand.Reader, Transport: n.tr})
	if err != nil {
		n.t.Fatal(err)
	}
	n.tr.Register(endpointOf(name), r)
	return r
}

func cardOf(key *Key, runtime, repo string) Card {
	return Card{PK: key.PK, Runtime: runtime, Instance: instanceN(7), Repo: repo, Name: "dialer",
		Features: []string{FeatureClaims}}
}

func nonce() string {
	b := make([]byte, nonceHexLen/2)
	rand.Read(b)
	return fmt.Sprintf("%x", b)
}

func wantRefusal(t *testing.T, err error, want LinkRefusal) {
	t.Helper()
	got, ok := RefusalOf(err)
	if !ok || got != want {
		t.Fatalf("err = %v, want refusal %s", err, want)
	}
	if !errors.Is(err, ErrLinkRefused) {
		t.Fatalf("refusal does not wrap ErrLinkRefused")
	}
}

func TestHelloRefusalsAreTyped(t *testing.T) {
	n := newTestNet(t)
	dialer := testKey(t, 0x11)
	stranger := testKey(t, 0x12)
	hello := func(key *Key, mut func(*Hello)) []byte {
		h := Hello{ProtoMin: protoMin, ProtoMax: protoMax, Card: cardOf(key, RuntimeOf("dialer"), n.repo), Nonce: nonce(), TS: n.clock.Wall().Unix()}
		if mut != nil {
			mut(&h)
		}
		return sealMessage(key, domainHello, h)
	}
	cases := []struct {
		name string
		msg  func(a *Runtime) []byte
		want LinkRefusal
	}{
		{"oversized", func(*Runtime) []byte { return bytes.Repeat([]byte(" "), linkMessageBytesMax+1) }, LinkOversized},
		{"not JSON", func(*Runtime) []byte { return []byte("hello?") }, LinkMalformed},
		{"unknown field", func(*Runtime) []byte { return []byte(`{"body":{"extra":1},"sig":""}`) }, LinkMalformed},
		{"bad card", func(*Runtime) []byte {
			return hello(dialer, func(h *Hello) { h.Card.Runtime = "XYZ" })
		}, LinkMalformed},
		{"bad signature", func(*Runtime) []byte {
			return bytes.Replace(hello(dialer, nil), []byte(`"name":"dialer"`), []byte(`"name":"forger"`), 1)
		}, LinkSignature},
		{"stale", func(*Runtime) []byte {
			return hello(dialer, func(h *Hello) { h.TS -= int64(helloSkewMax/time.Second) + 1 })
		}, LinkStale},
		{"short nonce", func(*Runtime) []byte { return hello(dialer, func(h *Hello) { h.Nonce = "abc" }) }, LinkMalformed},
		{"no common protocol", func(*Runtime) []byte {
			return hello(dialer, func(h *Hello) { h.ProtoMin, h.ProtoMax = 2, 3 })
		}, LinkProtocol},
		{"self", func(a *Runtime) []byte {
			return sealMessage(a.cfg.Key, domainHello, Hello{ProtoMin: 1, ProtoMax: 1,
				Card: cardOf(a.cfg.Key, a.cfg.Runtime, n.repo), Nonce: nonce(), TS: n.clock.Wall().Unix()})
		}, LinkSelf},
		{"other repository", func(*Runtime) []byte {
			return hello(dialer, func(h *Hello) { h.Card.Repo = RepositoryDeclared("other") })
		}, LinkRepositoryMismatch},
		{"untrusted", func(*Runtime) []byte { return hello(stranger, nil) }, LinkUntrusted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Arrange.
			a := n.answerer("a-"+tc.name, dialer.PK)

			// Act.
			_, err := a.AcceptHello(tc.msg(a))

			// Check.
			wantRefusal(t, err, tc.want)
			if a.Status().LinkRefusals[tc.want] != 1 {
				t.Fatalf("refusal not counted: %v", a.Status().LinkRefusals)
			}
		})
	}
	t.Run("replayed nonce", func(t *testing.T) {
		a := n.answerer("a-replay", dialer.PK)
		msg := hello(dialer, nil)
		if _, err := a.AcceptHello(msg); err != nil {
			t.Fatal(err)
		}
		_, err := a.AcceptHello(msg)
		wantRefusal(t, err, LinkReplay)
	})
	t.Run("link table full", func(t *testing.T) {
		a := n.answerer("a-full", dialer.PK)
		for i := range linksMax {
			if _, err := a.AcceptHello(hello(dialer, func(h *Hello) { h.Card.Runtime = RuntimeOf(fmt.Sprint(i)) })); err != nil {
				t.Fatal(err)
			}
		}
		_, err := a.AcceptHello(hello(dialer, func(h *Hello) { h.Card.Runtime = RuntimeOf("one more") }))
		wantRefusal(t, err, LinkCapacity)
		// A runtime already linked may say hello again.
		if _, err := a.AcceptHello(hello(dialer, func(h *Hello) { h.Card.Runtime = RuntimeOf("0") })); err != nil {
			t.Fatalf("relink refused: %v", err)
		}
	})
	t.Run("stopped", func(t *testing.T) {
		a := n.answerer("a-stopped", dialer.PK)
		a.Stop()
		_, err := a.AcceptHello(hello(dialer, nil))
		wantRefusal(t, err, LinkNotActive)
	})
}

func TestSyncRefusalsAreTyped(t *testing.T) {
	// Arrange: a linked pair; the request is crafted by hand.
	n := newTestNet(t)
	b := n.runtime("b")
	a := n.runtime("a", "b")
	n.round(a, "b")
	d := a.dials[endpointOf("b")]
	request := func(key *Key, mut func(*SyncRequest)) []byte {
		q := SyncRequest{Link: d.token, Counter: d.counter + 1, Instance: a.card.Instance, Marks: Marks{}}
		if mut != nil {
			mut(&q)
		}
		return sealMessage(key, domainSyncAsk, q)
	}
	cases := []struct {
		name string
		msg  []byte
		want LinkRefusal
	}{
		{"unknown link", request(a.cfg.Key, func(q *SyncRequest) { q.Link = strings.Repeat("0", 32) }), LinkUnknown},
		{"another instance", request(a.cfg.Key, func(q *SyncRequest) { q.Instance = instanceN(99) }), LinkUnknown},
		{"signed by another key", request(testKey(t, 0x13), nil), LinkSignature},
		{"counter does not rise", request(a.cfg.Key, func(q *SyncRequest) { q.Counter = d.counter }), LinkReplay},
		{"a mark that is not a stream", request(a.cfg.Key, func(q *SyncRequest) { q.Marks = Marks{"nope": {Seq: 1}} }), LinkMalformed},
		{"garbage", []byte(`{"body":[],"sig":""}`), LinkMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Act.
			_, err := b.AcceptSync(tc.msg)

			// Check.
			wantRefusal(t, err, tc.want)
		})
	}
}

// fakeTransport answers hellos with what welcome returns.
type fakeTransport struct {
	welcome func(hello Hello) []byte
}

func (f *fakeTransport) Hello(_ context.Context, _ string, msg []byte) ([]byte, error) {
	var h Hello
	if _, le := openMessage(msg, &h); le != nil {
		return nil, le
	}
	return f.welcome(h), nil
}

func (f *fakeTransport) Sync(context.Context, string, []byte) ([]byte, error) {
	return nil, errors.New("not reached")
}

func TestTheDialerChecksTheWelcome(t *testing.T) {
	n := newTestNet(t)
	peer := testKey(t, 0x21)
	stranger := testKey(t, 0x22)
	welcome := func(key *Key, mut func(*Welcome)) func(Hello) []byte {
		return func(h Hello) []byte {
			w := Welcome{Proto: 1, Link: strings.Repeat("a", 32), Card: cardOf(key, RuntimeOf("peer"), n.repo),
				Nonce: h.Nonce, TS: n.clock.Wall().Unix(), Marks: Marks{}, HeartbeatSeconds: 1, ExpirySeconds: 3}
			if mut != nil {
				mut(&w)
			}
			return sealMessage(key, domainWelcome, w)
		}
	}
	cases := []struct {
		name    string
		welcome func(Hello) []byte
		want    LinkRefusal
	}{
		{"echoes another nonce", welcome(peer, func(w *Welcome) { w.Nonce = nonce() }), LinkReplay},
		{"stale", welcome(peer, func(w *Welcome) { w.TS += 3600 }), LinkStale},
		{"other repository", welcome(peer, func(w *Welcome) { w.Card.Repo = RepositoryDeclared("x") }), LinkRepositoryMismatch},
		{"untrusted", welcome(stranger, nil), LinkUntrusted},
		{"picks a protocol we do not speak", welcome(peer, func(w *Welcome) { w.Proto = 9 }), LinkProtocol},
		{"signed by another key", func(h Hello) []byte {
			b := welcome(peer, nil)(h)
			var env Signed
			strictDecode(b, &env)
			return marshalWire(Signed{Body: env.Body, Sig: stranger.Sign(domainWelcome, mustCanonical(env.Body))})
		}, LinkSignature},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Arrange.
			key, _ := GenerateKey(rand.Reader)
			trust, _ := NewTrust(TrustDenyUnknown, key.PK, []string{peer.PK})
			a, err := New(Config{Key: key, Runtime: RuntimeOf("dialer"), Repo: n.repo, Heartbeat: testHeartbeat,
				Expiry: testExpiry, Trust: trust, Clock: n.clock, Rand: rand.Reader, Transport: &fakeTransport{welcome: tc.welcome}})
			if err != nil {
				t.Fatal(err)
			}

			// Act.
			err = a.SyncWith(context.Background(), "mem://peer")

			// Check.
			wantRefusal(t, err, tc.want)
		})
	}
}

func mustCanonical(b []byte) []byte {
	c, err := Canonical(b)
	if err != nil {
		panic(err)
	}
	return c
}

func TestOneRoundReplicatesBothWays(t *testing.T) {
	// Arrange.
	n := newTestNet(t)
	b := n.runtime("b")
	a := n.runtime("a", "b")
	a.OpenSession(SessionInfo{Session: "from-a"})
	b.OpenSession(SessionInfo{Session: "from-b"})

	// Act.
	n.round(a, "b")

	// Check.
	for _, r := range []*Runtime{a, b} {
		if got := len(r.State().Sessions); got != 2 {
			t.Fatalf("%s holds %d sessions after one round, want both", r.card.Name, got)
		}
	}
}

// sizeRecorder wraps a transport and records the largest message each way.
type sizeRecorder struct {
	Transport
	largestAsk, largestAnswer int
}

func (s *sizeRecorder) Sync(ctx context.Context, e string, msg []byte) ([]byte, error) {
	s.largestAsk = max(s.largestAsk, len(msg))
	out, err := s.Transport.Sync(ctx, e, msg)
	s.largestAnswer = max(s.largestAnswer, len(out))
	return out, err
}

func TestAMessageStaysWithinItsBudgetAndRoundsStillConverge(t *testing.T) {
	// Arrange: each side holds about 1.3 MiB of handovers.
	n := newTestNet(t)
	b := n.runtime("b")
	a := n.runtime("a", "b")
	rec := &sizeRecorder{Transport: n.tr}
	a.cfg.Transport = rec
	for i := range 40 {
		body := strings.Repeat(fmt.Sprintf("%02d", i), handoverBodyBytesMax/2-8)
		for _, r := range []*Runtime{a, b} {
			if _, err := r.PublishHandover(HandoverInfo{Body: body + r.card.Name}); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Act.
	rounds := 0
	for ; rounds < 10 && len(a.State().Handovers)+len(b.State().Handovers) < 160; rounds++ {
		n.round(a, "b")
	}

	// Check.
	if got := len(a.State().Handovers); got != 80 || len(b.State().Handovers) != 80 {
		t.Fatalf("after %d rounds a holds %d and b %d handovers, want 80 each", rounds, got, len(b.State().Handovers))
	}
	if rounds < 3 {
		t.Fatalf("converged in %d rounds: the budget did not bite", rounds)
	}
	if rec.largestAsk > linkMessageBytesMax || rec.largestAnswer > linkMessageBytesMax {
		t.Fatalf("largest messages %d and %d bytes, budget %d", rec.largestAsk, rec.largestAnswer, linkMessageBytesMax)
	}
}

func TestAnExpiredLinkSaysHelloAgain(t *testing.T) {
	// Arrange.
	n := newTestNet(t)
	b := n.runtime("b")
	a := n.runtime("a", "b")
	n.round(a, "b")
	n.sleep(pastExpiry, b) // b drops the silent link

	// Act.
	a.OpenSession(SessionInfo{Session: "late"})
	n.round(a, "b")

	// Check.
	if b.Status().LinkRefusals[LinkUnknown] != 1 {
		t.Fatalf("b did not refuse the dropped link once: %v", b.Status().LinkRefusals)
	}
	if len(b.State().Sessions) != 1 {
		t.Fatalf("the round after the new hello did not replicate")
	}
}

func TestARelayChainConvergesAndCarriesBeatsItCannotForge(t *testing.T) {
	// Arrange: a and c both dial b; a and c never talk.
	n := newTestNet(t)
	b := n.runtime("b")
	a := n.runtime("a", "b")
	c := n.runtime("c", "b")
	a.Claim(ClaimRequest{Session: "s", Scope: []string{"apps"}})

	// Act.
	for range 2 {
		n.round(a, "b")
		n.round(c, "b")
	}

	// Check.
	if got := liveClaims(c.State()); len(got) != 1 || got[0].Stream != a.Stream() {
		t.Fatalf("c sees %+v, want a's claim live through the relay", got)
	}
	var held int
	c.WithJournal(func(j *Journal) { held = j.EventsHeld() })
	if held != 2 {
		t.Fatalf("c holds %d events, want a's 2, once", held)
	}
	if b.State().Digest != c.State().Digest {
		t.Fatalf("relay and far end disagree")
	}
	// The relay forwards a's own beat signature; a forged rise is ignored.
	var m Mark
	b.WithJournal(func(j *Journal) { m = j.Marks()[a.Stream()] })
	m.Beat++
	c.WithJournal(func(j *Journal) {
		before := j.streams[a.Stream()].beat
		j.MergeMarks(Marks{a.Stream(): m}, trustAll)
		if j.streams[a.Stream()].beat != before {
			t.Fatalf("a relay raised a beat it did not sign")
		}
	})
}

func TestTheSupervisorCompactsOnceEverySixtyHeartbeats(t *testing.T) {
	// Arrange: 48 dead streams crowd one node; retentions are short.
	n := newTestNet(t)
	r := n.runtime("r")
	r.cfg.Retention, r.cfg.HandoverRetention = time.Second, time.Second
	key := testKey(t, 0x31)
	r.WithJournal(func(j *Journal) {
		for i := range nodeCompactStreams {
			w := newWriter(t, key, n.clock, RuntimeOf("dead"), instanceN(i))
			j.Ingest([]json.RawMessage{w.write(t, openBody("s"))}, trustAll)
		}
	})

	// Act and check.
	for tick := 1; tick <= compactEveryTicks; tick++ {
		n.sleep(testHeartbeat)
		r.Tick(context.Background())
		compacted := r.Status().Tallies.Compacted
		if tick < compactEveryTicks && compacted != 0 {
			t.Fatalf("compacted at heartbeat %d", tick)
		}
		if tick == compactEveryTicks && compacted != uint64(nodeCompactStreams) {
			t.Fatalf("heartbeat %d compacted %d events, want %d", tick, compacted, nodeCompactStreams)
		}
	}
}

func TestAdmissionRefusesWhatIsNotThisRuntimesToDo(t *testing.T) {
	// Arrange.
	n := newTestNet(t)
	b := n.runtime("b")
	a := n.runtime("a", "b")
	bc, _ := b.Claim(ClaimRequest{Session: "s", Scope: []string{"x"}})
	rv, _ := a.RequestReview(ReviewRequest{Session: "s", Subject: "mine"})
	n.round(a, "b")

	// Act and check.
	if err := a.Release(bc.Key); !errors.Is(err, ErrNotOwn) {
		t.Errorf("releasing b's claim: %v, want ErrNotOwn", err)
	}
	if err := a.Release(RecordKey(a.Stream(), "c-000000000000")); !errors.Is(err, ErrNotFound) {
		t.Errorf("releasing no claim: %v, want ErrNotFound", err)
	}
	if err := a.CloseSession("never"); !errors.Is(err, ErrNotFound) {
		t.Errorf("closing no session: %v, want ErrNotFound", err)
	}
	if _, err := a.AnswerReview(rv.Key, "s", VerdictApproved, ""); !errors.Is(err, ErrSelfAnswer) {
		t.Errorf("answering its own review: %v, want ErrSelfAnswer", err)
	}
	if _, err := a.ConsumeHandover(HandoverID("nothing"), "s"); !errors.Is(err, ErrNotFound) {
		t.Errorf("taking no handover: %v, want ErrNotFound", err)
	}
	if _, err := a.RequestReview(ReviewRequest{Session: "s", Subject: "x", Reviewer: string(RuntimeKey(testKey(t, 9).Node) + "-" + RuntimeKey(RuntimeOf("z")))}); !errors.Is(err, ErrNotFound) {
		t.Errorf("a reviewer not linked: %v, want ErrNotFound", err)
	}
	if _, err := a.RequestReview(ReviewRequest{Session: "s", Subject: "x", Reviewer: string(b.RuntimeKey())}); err != nil {
		t.Errorf("a linked reviewer: %v", err)
	}
	if _, err := a.Claim(ClaimRequest{Session: "s", Scope: []string{"x/y"}, Mode: ModeAdvisory}); err != nil {
		t.Errorf("an advisory claim was refused: %v", err)
	}
	if _, err := a.Claim(ClaimRequest{Session: "s", Scope: []string{"x/y"}}); !errors.Is(err, ErrConflict) {
		t.Errorf("an exclusive claim meeting b's: %v, want ErrConflict", err)
	}
}
