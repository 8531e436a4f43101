package mesh

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"time"
)

// Dial backoff: heartbeat × 2^failures, capped at the
// expiry; a refusal counts as refusalFailures failures; at most failuresMax.
const (
	refusalFailures = 3
	failuresMax     = 6
)

// AcceptHello answers a peer's Hello with a signed Welcome, or refuses it.
// Checks, in order: size, shape, card, signature, timestamp, nonce shape,
// protocol overlap, not self, same repository, trusted key, nonce unseen,
// link table not full.
func (r *Runtime) AcceptHello(msg []byte) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out, le := r.acceptHello(msg)
	if le != nil {
		r.noteRefusal(le, "in")
		return nil, le
	}
	return out, nil
}

func (r *Runtime) acceptHello(msg []byte) ([]byte, *LinkError) {
	if r.stopped {
		return nil, refuse(LinkNotActive, "runtime stopped")
	}
	var h Hello
	env, le := openMessage(msg, &h)
	if le != nil {
		return nil, le
	}
	if err := h.Card.validate(); err != nil {
		return nil, refuse(LinkMalformed, "card: %v", err)
	}
	if le := checkSeal(env, domainHello, h.Card.PK); le != nil {
		return nil, le
	}
	if le := checkTS(h.TS, r.cfg.Clock.Wall()); le != nil {
		return nil, le
	}
	if !isLowerHex(h.Nonce, nonceHexLen) {
		return nil, refuse(LinkMalformed, "nonce")
	}
	proto := min(h.ProtoMax, protoMax)
	if proto < max(h.ProtoMin, protoMin) {
		return nil, refuse(LinkProtocol, "peer speaks %d..%d, we speak %d..%d", h.ProtoMin, h.ProtoMax, protoMin, protoMax)
	}
	peer := h.Card.RuntimeKey()
	if peer == r.RuntimeKey() {
		return nil, refuse(LinkSelf, "hello from this runtime")
	}
	if h.Card.Repo != r.cfg.Repo {
		return nil, refuse(LinkRepositoryMismatch, "peer repository %s", h.Card.Repo)
	}
	if !r.cfg.Trust.Trusted(h.Card.PK) {
		return nil, refuse(LinkUntrusted, "node %s", NodeOf(mustKey(h.Card.PK)))
	}
	if r.nonces[h.Nonce] {
		return nil, refuse(LinkReplay, "nonce seen")
	}
	r.nonces[h.Nonce] = true
	r.nonceOrder = append(r.nonceOrder, h.Nonce)
	if len(r.nonceOrder) > replayNoncesMax {
		delete(r.nonces, r.nonceOrder[0])
		r.nonceOrder = r.nonceOrder[1:]
	}
	old, relinking := r.byRuntime[peer]
	if !relinking && len(r.inbound) >= linksMax {
		return nil, refuse(LinkCapacity, "%d links", len(r.inbound))
	}
	if relinking {
		delete(r.inbound, old)
	}
	tok := r.randomHex(linkTokenHexLen)
	r.inbound[tok] = &inLink{token: tok, card: h.Card, lastSeen: r.j.now()}
	r.byRuntime[peer] = tok
	w := Welcome{
		Proto: proto, Link: tok, Card: r.card, Nonce: h.Nonce, TS: r.cfg.Clock.Wall().Unix(),
		Marks:            r.j.Marks(),
		HeartbeatSeconds: int(r.cfg.Heartbeat / time.Second), ExpirySeconds: int(r.cfg.Expiry / time.Second),
	}
	return sealMessage(r.cfg.Key, domainWelcome, w), nil
}

func mustKey(pk string) []byte {
	k, err := ParsePublicKey(pk)
	if err != nil {
		panic(err)
	}
	return k
}

// AcceptSync runs the answerer's half of a round: it checks the link, the
// instance, the signature and the rising counter, ingests the events,
// merges the marks, and answers with its marks and what the dialer lacks.
func (r *Runtime) AcceptSync(msg []byte) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out, le := r.acceptSync(msg)
	if le != nil {
		r.noteRefusal(le, "in")
		return nil, le
	}
	return out, nil
}

func (r *Runtime) acceptSync(msg []byte) ([]byte, *LinkError) {
	if r.stopped {
		return nil, refuse(LinkNotActive, "runtime stopped")
	}
	var q SyncRequest
	env, le := openMessage(msg, &q)
	if le != nil {
		return nil, le
	}
	l := r.inbound[q.Link]
	if l == nil || q.Instance != l.card.Instance {
		return nil, refuse(LinkUnknown, "say hello again")
	}
	if le := checkSeal(env, domainSyncAsk, l.card.PK); le != nil {
		return nil, le
	}
	if q.Counter <= l.counter {
		return nil, refuse(LinkReplay, "counter %d after %d", q.Counter, l.counter)
	}
	if le := checkMarks(q.Marks); le != nil {
		return nil, le
	}
	l.counter = q.Counter
	l.lastSeen = r.j.now()
	rep := r.j.Ingest(q.Events, r.cfg.Trust.Trusted)
	r.j.MergeMarks(q.Marks, r.cfg.Trust.Trusted)
	l.marks = q.Marks
	a := SyncAnswer{Link: q.Link, Counter: q.Counter, Marks: r.j.MarksFor(q.Marks), Report: summarize(rep)}
	return r.sealWithEvents(domainSyncAnswer, q.Marks, func(evs []json.RawMessage) any {
		a.Events = evs
		return a
	}), nil
}

// sealWithEvents signs the message build returns, with as many of the
// events peer lacks as the budgets allow: events get at most
// min(linkEventsBytesMax, what the rest leaves of linkMessageBytesMax), and
// are dropped from the end until the whole message fits.
func (r *Runtime) sealWithEvents(domain string, peer Marks, build func([]json.RawMessage) any) []byte {
	const envelope = len(`{"body":,"sig":""}`) + signatureHex
	rest := len(marshalWire(build(nil))) + envelope
	budget := min(linkEventsBytesMax, linkMessageBytesMax-rest)
	var evs []json.RawMessage
	if budget > 0 {
		evs = r.j.MissingFor(peer, budget)
	}
	for len(evs) > 0 && len(marshalWire(build(evs)))+envelope > linkMessageBytesMax {
		evs = evs[:len(evs)-1]
	}
	msg := sealMessage(r.cfg.Key, domain, build(evs))
	if len(msg) > linkMessageBytesMax {
		panic("paros/mesh: sealed message past linkMessageBytesMax")
	}
	return msg
}

// SyncWith runs one round with the runtime at endpoint, saying hello first
// if there is no link; on unknown_link it says hello again and retries once.
func (r *Runtime) SyncWith(ctx context.Context, endpoint string) error {
	endpoint = normalizeEndpoint(endpoint)
	r.mu.Lock()
	target := r.dialFor(endpoint)
	target.busy = true
	r.mu.Unlock()
	target.round.Lock()
	defer target.round.Unlock()
	err := r.syncOnce(ctx, endpoint)
	if why, ok := RefusalOf(err); ok && why == LinkUnknown {
		err = r.syncOnce(ctx, endpoint)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.dialFor(endpoint)
	d.busy = false
	now := r.j.now()
	if err == nil {
		d.failures, d.lastErr, d.nextAt = 0, "", now
		return nil
	}
	d.lastErr = err.Error()
	if _, refused := RefusalOf(err); refused {
		d.failures = min(d.failures+refusalFailures, failuresMax)
	} else {
		d.failures = min(d.failures+1, failuresMax)
	}
	d.nextAt = now + min(r.cfg.Heartbeat<<d.failures, r.cfg.Expiry)
	return err
}

func (r *Runtime) syncOnce(ctx context.Context, endpoint string) error {
	if r.cfg.Transport == nil {
		return errors.New("paros/mesh: no transport")
	}
	r.mu.Lock()
	d := r.dialFor(endpoint)
	if d.token == "" {
		nonce := r.randomHex(nonceHexLen)
		hello := sealMessage(r.cfg.Key, domainHello, Hello{ProtoMin: protoMin, ProtoMax: protoMax, Card: r.card,
			Nonce: nonce, TS: r.cfg.Clock.Wall().Unix()})
		r.mu.Unlock()
		resp, err := r.cfg.Transport.Hello(ctx, endpoint, hello)
		r.mu.Lock()
		if err != nil {
			if le, ok := err.(*LinkError); ok {
				r.noteRefusal(le, "out")
			}
			r.mu.Unlock()
			return err
		}
		if le := r.takeWelcome(d, resp, nonce); le != nil {
			r.noteRefusal(le, "out")
			r.mu.Unlock()
			return le
		}
	}
	d.counter++
	token, counter := d.token, d.counter
	q := SyncRequest{Link: token, Counter: counter, Instance: r.card.Instance, Marks: r.j.MarksFor(d.remote)}
	msg := r.sealWithEvents(domainSyncAsk, d.remote, func(evs []json.RawMessage) any {
		q.Events = evs
		return q
	})
	r.mu.Unlock()
	resp, err := r.cfg.Transport.Sync(ctx, endpoint, msg)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		if le, ok := err.(*LinkError); ok {
			r.noteRefusal(le, "out")
			if le.Reason == LinkUnknown && d.token == token {
				d.token = ""
			}
		}
		return err
	}
	if le := r.takeAnswer(d, resp, token, counter); le != nil {
		r.noteRefusal(le, "out")
		return le
	}
	return nil
}

// takeWelcome runs the dialer's mirror of the hello checks.
func (r *Runtime) takeWelcome(d *dial, resp []byte, nonce string) *LinkError {
	var w Welcome
	env, le := openMessage(resp, &w)
	if le != nil {
		return le
	}
	if err := w.Card.validate(); err != nil {
		return refuse(LinkMalformed, "card: %v", err)
	}
	if le := checkSeal(env, domainWelcome, w.Card.PK); le != nil {
		return le
	}
	if le := checkTS(w.TS, r.cfg.Clock.Wall()); le != nil {
		return le
	}
	if w.Nonce != nonce {
		return refuse(LinkReplay, "welcome echoes another nonce")
	}
	if w.Proto < protoMin || w.Proto > protoMax {
		return refuse(LinkProtocol, "welcome picked %d", w.Proto)
	}
	if w.Card.RuntimeKey() == r.RuntimeKey() {
		return refuse(LinkSelf, "dialed this runtime")
	}
	if w.Card.Repo != r.cfg.Repo {
		return refuse(LinkRepositoryMismatch, "peer repository %s", w.Card.Repo)
	}
	if !r.cfg.Trust.Trusted(w.Card.PK) {
		return refuse(LinkUntrusted, "node %s", NodeOf(mustKey(w.Card.PK)))
	}
	if !isLowerHex(w.Link, linkTokenHexLen) {
		return refuse(LinkMalformed, "link token")
	}
	if le := checkMarks(w.Marks); le != nil {
		return le
	}
	card := w.Card
	d.token, d.card, d.counter, d.remote = w.Link, &card, 0, w.Marks
	d.lastOK, d.everOK = r.j.now(), true
	r.j.MergeMarks(w.Marks, r.cfg.Trust.Trusted)
	return nil
}

// takeAnswer checks a sync answer, ingests it and merges its marks.
func (r *Runtime) takeAnswer(d *dial, resp []byte, token string, counter uint64) *LinkError {
	var a SyncAnswer
	env, le := openMessage(resp, &a)
	if le != nil {
		return le
	}
	if d.card == nil || d.token != token {
		return refuse(LinkUnknown, "link changed during the round")
	}
	if le := checkSeal(env, domainSyncAnswer, d.card.PK); le != nil {
		return le
	}
	if a.Link != token || a.Counter != counter {
		return refuse(LinkReplay, "answer to another round")
	}
	if le := checkMarks(a.Marks); le != nil {
		return le
	}
	r.j.Ingest(a.Events, r.cfg.Trust.Trusted)
	r.j.MergeMarks(a.Marks, r.cfg.Trust.Trusted)
	d.remote = a.Marks
	d.lastOK, d.everOK = r.j.now(), true
	return nil
}

// PeerCheck is one peer's line in a Verify report.
type PeerCheck struct {
	Direction string     `json:"direction"`
	Endpoint  string     `json:"endpoint,omitempty"`
	Runtime   RuntimeKey `json:"runtime,omitempty"`
	Round     string     `json:"round"` // "ok", an error, or "not dialed" for accepted links
	Converged bool       `json:"converged"`
	Differs   []StreamID `json:"differs,omitempty"`
}

// VerifyReport is what `paros mesh verify` prints.
type VerifyReport struct {
	OK     bool        `json:"ok"`
	Peers  []PeerCheck `json:"peers"`
	Digest string      `json:"digest"`
}

// Verify runs a live round with every dial target and checks that marks
// agree with every peer: the dialed ones as of their answer, the accepted
// ones as of their last request. It is OK when at least one peer is linked,
// every round succeeded and every peer converged.
func (r *Runtime) Verify(ctx context.Context) VerifyReport {
	r.mu.Lock()
	targets := slices.Sorted(maps.Keys(r.dials))
	r.mu.Unlock()
	rep := VerifyReport{OK: true}
	for _, e := range targets {
		err := r.SyncWith(ctx, e)
		if err == nil { // a second round carries back what the first delivered
			err = r.SyncWith(ctx, e)
		}
		r.mu.Lock()
		d := r.dials[e]
		pc := PeerCheck{Direction: "dialed", Endpoint: e, Round: "ok"}
		if d.card != nil {
			pc.Runtime = d.card.RuntimeKey()
		}
		if err != nil {
			pc.Round = err.Error()
		} else {
			pc.Differs = r.marksDiffer(d.remote)
			pc.Converged = len(pc.Differs) == 0
		}
		r.mu.Unlock()
		rep.OK = rep.OK && pc.Converged
		rep.Peers = append(rep.Peers, pc)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rk := range slices.Sorted(maps.Keys(r.byRuntime)) {
		l := r.inbound[r.byRuntime[rk]]
		pc := PeerCheck{Direction: "accepted", Runtime: rk, Round: "not dialed"}
		pc.Differs = r.marksDiffer(l.marks)
		pc.Converged = len(pc.Differs) == 0
		rep.OK = rep.OK && pc.Converged
		rep.Peers = append(rep.Peers, pc)
	}
	if len(rep.Peers) == 0 {
		rep.OK = false
	}
	rep.Digest = r.j.Fold().Digest
	return rep
}

// marksDiffer lists the streams whose seq differs between our marks and
// peer's. A tombstone counts with the seq it advertises.
func (r *Runtime) marksDiffer(peer Marks) []StreamID {
	ours := r.j.MarksFor(peer)
	var out []StreamID
	for s, m := range ours {
		if pm, ok := peer[s]; !ok || pm.Seq != m.Seq {
			if ok || m.Seq > 0 {
				out = append(out, s)
			}
		}
	}
	for s, pm := range peer {
		if _, ok := ours[s]; !ok && pm.Seq > 0 {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}
