// This file fuzzes everything that reads bytes off the wire: Ingest (one
// event per input line), AcceptHello, AcceptSync, the dialer's reading of a
// Welcome, and Canonical. The properties are the hostile-input rules: never
// panic; every event handed to Ingest lands in exactly one bucket and every
// rejection carries one of the documented refusals; every link refusal is a
// *LinkError with one of the documented reasons; canonical output is a
// fixed point. Seeds are valid messages built from deterministic keys on a
// ManualClock (added with f.Add) plus the files in testdata/fuzz/.
package mesh

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// fuzzNonce is a fixed nonce so that seeds are reproducible.
var fuzzNonce = strings.Repeat("ab", nonceHexLen/2)

// fuzzRand is a deterministic random source.
type fuzzRand struct{ b byte }

func (r *fuzzRand) Read(p []byte) (int, error) {
	for i := range p {
		r.b++
		p[i] = r.b
	}
	return len(p), nil
}

// fuzzFixture is an answering runtime, a dialer key it trusts, and a link
// already made, all deterministic.
type fuzzFixture struct {
	clock    *ManualClock
	answerer *Runtime
	dialer   *Key
	card     Card
	token    string
}

func newFuzzFixture(t testing.TB) *fuzzFixture {
	clock := NewManualClock(testEpoch)
	own, dialer := testKey(t, 0x41), testKey(t, 0x42)
	trust, _ := NewTrust(TrustDenyUnknown, own.PK, []string{dialer.PK})
	a, err := New(Config{Key: own, Runtime: RuntimeOf("answerer"), Repo: testRepo(t), Heartbeat: testHeartbeat,
		Expiry: testExpiry, Trust: trust, Clock: clock, Rand: &fuzzRand{}})
	if err != nil {
		t.Fatal(err)
	}
	fx := &fuzzFixture{clock: clock, answerer: a, dialer: dialer, card: cardOf(dialer, RuntimeOf("dialer"), testRepo(t))}
	welcome, err := a.AcceptHello(fx.hello(strings.Repeat("cd", nonceHexLen/2)))
	if err != nil {
		t.Fatal(err)
	}
	var env Signed
	var w Welcome
	strictDecode(welcome, &env)
	strictDecode(env.Body, &w)
	fx.token = w.Link
	return fx
}

func (fx *fuzzFixture) hello(nonce string) []byte {
	return sealMessage(fx.dialer, domainHello, Hello{ProtoMin: 1, ProtoMax: 1, Card: fx.card, Nonce: nonce, TS: fx.clock.Wall().Unix()})
}

func (fx *fuzzFixture) syncRequest(t testing.TB, counter uint64) []byte {
	w := newWriter(t, fx.dialer, fx.clock, RuntimeOf("dialer"), fx.card.Instance)
	w.write(t, openBody("s"))
	w.write(t, claimBody("c-1", "s", ModeExclusive, "apps"))
	w.j.BeatOwn()
	return sealMessage(fx.dialer, domainSyncAsk, SyncRequest{Link: fx.token, Counter: counter, Instance: fx.card.Instance,
		Marks: w.j.Marks(), Events: w.lines()})
}

func checkLinkErr(t *testing.T, err error) {
	if err == nil {
		return
	}
	var le *LinkError
	if !errors.As(err, &le) || !slices.Contains(LinkRefusals, le.Reason) {
		t.Fatalf("untyped link refusal: %v", err)
	}
}

func FuzzIngest(f *testing.F) {
	clock := NewManualClock(testEpoch)
	w := newWriter(f, testKey(f, 0x02), clock, RuntimeOf("peer"), instanceN(1))
	w.write(f, openBody("s"))
	w.write(f, claimBody("c-1", "s", ModeAdvisory, "apps", "docs/x"))
	w.write(f, Body{Kind: KindHandoverPublished, Handover: &HandoverInfo{ID: HandoverID("b"), Body: "b"}})
	f.Add(bytes.Join(toBytes(w.lines()), []byte("\n")))
	f.Add([]byte(`{"v":1,"stream":"x","seq":1}`))
	observerKey, repo := testKey(f, 0x01), testRepo(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		j := NewJournal(JournalConfig{Key: observerKey, Stream: NewStreamID(observerKey.Node, observerRuntime, instanceN(1)),
			Repo: repo, Expiry: testExpiry, Clock: clock})
		var raws []json.RawMessage
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			raws = append(raws, line)
		}
		rep := j.Ingest(raws, trustAll)
		if rep.Total() != len(raws) {
			t.Fatalf("report accounts for %d of %d", rep.Total(), len(raws))
		}
		for _, r := range rep.Rejected {
			if !slices.Contains(Refusals, r.Reason) {
				t.Fatalf("untyped refusal %q", r.Reason)
			}
		}
		j.Fold()
		j.Compact(CompactParams{Expiry: testExpiry, Force: true})
	})
}

func toBytes(raws []json.RawMessage) [][]byte {
	out := make([][]byte, len(raws))
	for i, r := range raws {
		out[i] = r
	}
	return out
}

func FuzzAcceptHello(f *testing.F) {
	fx := newFuzzFixture(f)
	f.Add(fx.hello(fuzzNonce))
	f.Add([]byte(`{"body":{"proto_min":1},"sig":""}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		_, err := fx.answerer.AcceptHello(msg)
		checkLinkErr(t, err)
	})
}

func FuzzAcceptSync(f *testing.F) {
	fx := newFuzzFixture(f)
	f.Add(fx.syncRequest(f, 1))
	f.Add(fx.syncRequest(f, 1<<62))
	f.Fuzz(func(t *testing.T, msg []byte) {
		_, err := fx.answerer.AcceptSync(msg)
		checkLinkErr(t, err)
	})
}

func FuzzWelcome(f *testing.F) {
	fx := newFuzzFixture(f)
	// A dialer that trusts the fixture's answerer; its hello nonce comes
	// from fuzzRand, so the valid seed echoes what the dialer will send.
	dialKey, repo := fx.dialer, testRepo(f)
	newDialer := func(tr Transport) *Runtime {
		trust, _ := NewTrust(TrustDenyUnknown, dialKey.PK, []string{fx.answerer.cfg.Key.PK})
		d, err := New(Config{Key: dialKey, Runtime: RuntimeOf("dialer2"), Repo: repo, Heartbeat: testHeartbeat,
			Expiry: testExpiry, Trust: trust, Clock: fx.clock, Rand: &fuzzRand{}, Transport: tr})
		if err != nil {
			panic(err)
		}
		return d
	}
	seed := &recordingTransport{answer: fx.answerer.AcceptHello}
	newDialer(seed).SyncWith(context.Background(), "mem://answerer")
	if seed.welcome != nil {
		f.Add(seed.welcome)
	}
	f.Add([]byte(`{"body":{"proto":1,"link":"","card":{}},"sig":""}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		d := newDialer(&recordingTransport{answer: func([]byte) ([]byte, error) { return msg, nil }})
		err := d.SyncWith(context.Background(), "mem://answerer")
		if err != nil && !errors.Is(err, errSyncNotReached) {
			checkLinkErr(t, err)
		}
	})
}

var errSyncNotReached = errors.New("sync not reached")

// recordingTransport answers hellos with answer and records the welcome.
type recordingTransport struct {
	answer  func([]byte) ([]byte, error)
	welcome []byte
}

func (r *recordingTransport) Hello(_ context.Context, _ string, msg []byte) ([]byte, error) {
	out, err := r.answer(msg)
	r.welcome = out
	return out, err
}

func (r *recordingTransport) Sync(context.Context, string, []byte) ([]byte, error) {
	return nil, errSyncNotReached
}

func FuzzCanonical(f *testing.F) {
	f.Add([]byte(`{"b":[1,2,{"z":null,"a":"\u00e9"}],"a":-0.0}`))
	f.Add([]byte(`"\ud800"`))
	f.Fuzz(func(t *testing.T, data []byte) {
		once, err := Canonical(data)
		if err != nil {
			return
		}
		twice, err := Canonical(once)
		if err != nil || !bytes.Equal(once, twice) {
			t.Fatalf("not a fixed point: %q -> %q -> %q (%v)", data, once, twice, err)
		}
	})
}
