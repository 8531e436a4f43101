package mesh

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The link protocol (docs/guide/mesh.md, "Links and trust"). Every message is a
// Signed envelope, POSTed over HTTP or handed over in process:
//
//	{"body": <message>, "sig": <hex Ed25519 over domain + canonical JSON of body>}
//
//	message        domain                          signed by
//	Hello          paros-mesh-link-hello/v1\n        the dialer's key (its card)
//	Welcome        paros-mesh-link-welcome/v1\n      the answerer's key
//	SyncRequest    paros-mesh-link-sync-request/v1\n the dialer's key
//	SyncAnswer     paros-mesh-link-sync-answer/v1\n  the answerer's key
//
// A message is at most linkMessageBytesMax bytes; its events get at most
// min(linkEventsBytesMax, what the rest of the message leaves). The domains,
// the paths and protoVersion are frozen.
const (
	domainHello      = "paros-mesh-link-hello/v1\n"
	domainWelcome    = "paros-mesh-link-welcome/v1\n"
	domainSyncAsk    = "paros-mesh-link-sync-request/v1\n"
	domainSyncAnswer = "paros-mesh-link-sync-answer/v1\n"

	// HelloPath and SyncPath are the HTTP paths of the two link calls.
	HelloPath = "/api/v1/mesh/link/hello"
	SyncPath  = "/api/v1/mesh/link/sync"

	protoMin = 1
	protoMax = 1

	linkMessageBytesMax = 900 << 10
	linkEventsBytesMax  = 600 << 10
	helloSkewMax        = 300 * time.Second
	nonceHexLen         = 32
	linkTokenHexLen     = 32
	replayNoncesMax     = 4096
	linksMax            = 256 // inbound links, one per runtime key
	refusalsListedMax   = 128
	marksMax            = streamsMax + tombstonesMax

	cardNameBytesMax    = 64
	cardVersionBytesMax = 32
	cardFeaturesMax     = 16
	cardFeatureBytesMax = 32
	cardEndpointsMax    = 8
	cardEndpointBytes   = 64
)

// Features a card may carry.
const (
	FeatureSessions  = "sessions"
	FeatureClaims    = "claims"
	FeatureHandovers = "handovers"
	FeatureReviews   = "reviews"
)

// LinkRefusal names why a link message was refused. The words are frozen.
type LinkRefusal string

// The link refusals.
const (
	LinkMalformed          LinkRefusal = "malformed"
	LinkOversized          LinkRefusal = "oversized"
	LinkProtocol           LinkRefusal = "protocol_unsupported"
	LinkSignature          LinkRefusal = "signature"
	LinkStale              LinkRefusal = "stale"
	LinkReplay             LinkRefusal = "replay"
	LinkRepositoryMismatch LinkRefusal = "repository_mismatch"
	LinkUntrusted          LinkRefusal = "untrusted"
	LinkSelf               LinkRefusal = "self_link"
	LinkNotActive          LinkRefusal = "not_active"
	LinkUnknown            LinkRefusal = "unknown_link"
	LinkCapacity           LinkRefusal = "capacity"
	LinkFeatureUnsupported LinkRefusal = "feature_unsupported"
)

// LinkRefusals lists every link refusal.
var LinkRefusals = []LinkRefusal{LinkMalformed, LinkOversized, LinkProtocol, LinkSignature, LinkStale,
	LinkReplay, LinkRepositoryMismatch, LinkUntrusted, LinkSelf, LinkNotActive, LinkUnknown, LinkCapacity,
	LinkFeatureUnsupported}

// ErrLinkRefused is what every *LinkError wraps.
var ErrLinkRefused = errors.New("paros/mesh: link refused")

// LinkError is a typed link refusal, from this side's checks or the peer's.
type LinkError struct {
	Reason LinkRefusal `json:"refusal"`
	Detail string      `json:"detail,omitempty"`
}

func (e *LinkError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("paros/mesh: link refused: %s", e.Reason)
	}
	return fmt.Sprintf("paros/mesh: link refused: %s: %s", e.Reason, e.Detail)
}

// Unwrap makes errors.Is(err, ErrLinkRefused) hold.
func (e *LinkError) Unwrap() error { return ErrLinkRefused }

func refuse(why LinkRefusal, format string, args ...any) *LinkError {
	return &LinkError{Reason: why, Detail: fmt.Sprintf(format, args...)}
}

// RefusalOf returns the refusal reason of err, if it is a link refusal.
func RefusalOf(err error) (LinkRefusal, bool) {
	var le *LinkError
	if errors.As(err, &le) {
		return le.Reason, true
	}
	return "", false
}

// Card describes a runtime to its peers.
type Card struct {
	PK        string   `json:"pk"`
	Runtime   string   `json:"runtime"`
	Instance  string   `json:"instance"`
	Repo      string   `json:"repo"`
	Name      string   `json:"name"`
	Version   string   `json:"version"`
	Features  []string `json:"features"`
	Endpoints []string `json:"endpoints"`
}

// Stream returns the card's stream id. The card must be valid.
func (c *Card) Stream() StreamID {
	pk, _ := ParsePublicKey(c.PK)
	return StreamID(string(NodeOf(pk)) + "-" + c.Runtime + "-" + c.Instance)
}

// RuntimeKey returns the card's runtime key. The card must be valid.
func (c *Card) RuntimeKey() RuntimeKey { return c.Stream().Runtime() }

// HasFeature reports whether the card lists f.
func (c *Card) HasFeature(f string) bool {
	for _, x := range c.Features {
		if x == f {
			return true
		}
	}
	return false
}

func (c *Card) validate() error {
	if _, err := ParsePublicKey(c.PK); err != nil {
		return err
	}
	if !isLowerHex(c.Runtime, runtimeHexLen) || !isLowerHex(c.Instance, instanceHexLen) || !isLowerHex(c.Repo, repoHexLen) {
		return fmt.Errorf("%w: card ids", ErrIdentity)
	}
	if err := checkLine("name", c.Name, cardNameBytesMax); err != nil {
		return err
	}
	if err := checkLine("version", c.Version, cardVersionBytesMax); err != nil {
		return err
	}
	if len(c.Features) > cardFeaturesMax || len(c.Endpoints) > cardEndpointsMax {
		return boundsErr("card lists too many features or endpoints")
	}
	for _, f := range c.Features {
		if len(f) > cardFeatureBytesMax || checkIdent("feature", f) != nil {
			return boundsErr("card feature %.40q", f)
		}
	}
	for _, e := range c.Endpoints {
		if err := checkLine("endpoint", e, cardEndpointBytes); err != nil || e == "" {
			return boundsErr("card endpoint %.40q", e)
		}
	}
	return nil
}

// Hello opens a link.
type Hello struct {
	ProtoMin int    `json:"proto_min"`
	ProtoMax int    `json:"proto_max"`
	Card     Card   `json:"card"`
	Nonce    string `json:"nonce"`
	TS       int64  `json:"ts"`
}

// Welcome answers a Hello: the link token, the answerer's card and full marks.
type Welcome struct {
	Proto            int    `json:"proto"`
	Link             string `json:"link"`
	Card             Card   `json:"card"`
	Nonce            string `json:"nonce"`
	TS               int64  `json:"ts"`
	Marks            Marks  `json:"marks"`
	HeartbeatSeconds int    `json:"heartbeat_seconds"`
	ExpirySeconds    int    `json:"expiry_seconds"`
}

// SyncRequest is the dialer's half of a round.
type SyncRequest struct {
	Link     string            `json:"link"`
	Counter  uint64            `json:"counter"`
	Instance string            `json:"instance"`
	Marks    Marks             `json:"marks"`
	Events   []json.RawMessage `json:"events"`
}

// SyncAnswer is the answerer's half of a round.
type SyncAnswer struct {
	Link    string            `json:"link"`
	Counter uint64            `json:"counter"`
	Marks   Marks             `json:"marks"`
	Events  []json.RawMessage `json:"events"`
	Report  IngestSummary     `json:"report"`
}

// IngestSummary is an IngestReport without per-event detail, as a sync
// answer carries it.
type IngestSummary struct {
	Accepted  int             `json:"accepted"`
	Duplicate int             `json:"duplicate"`
	Pending   int             `json:"pending"`
	Rejected  map[Refusal]int `json:"rejected,omitempty"`
}

func summarize(r IngestReport) IngestSummary {
	s := IngestSummary{Accepted: r.Accepted, Duplicate: r.Duplicate, Pending: r.Pending}
	for _, x := range r.Rejected {
		if s.Rejected == nil {
			s.Rejected = map[Refusal]int{}
		}
		s.Rejected[x.Reason]++
	}
	return s
}

// Signed is the envelope of every link message.
type Signed struct {
	Body json.RawMessage `json:"body"`
	Sig  string          `json:"sig"`
}

// sealMessage signs body under domain and returns the envelope's bytes.
func sealMessage(k *Key, domain string, body any) []byte {
	raw := marshalWire(body)
	c, err := Canonical(raw)
	if err != nil {
		panic(fmt.Sprintf("paros/mesh: own %T does not canonicalize: %v", body, err))
	}
	return marshalWire(Signed{Body: raw, Sig: k.Sign(domain, c)})
}

// openMessage checks size and shape and decodes the body into out. The
// signature is checked later, by checkSeal, once the signer is known.
func openMessage(msg []byte, out any) (Signed, *LinkError) {
	if len(msg) > linkMessageBytesMax {
		return Signed{}, refuse(LinkOversized, "%d bytes, at most %d", len(msg), linkMessageBytesMax)
	}
	var env Signed
	if err := strictDecode(msg, &env); err != nil {
		return Signed{}, refuse(LinkMalformed, "envelope: %v", err)
	}
	if len(env.Body) == 0 {
		return Signed{}, refuse(LinkMalformed, "envelope without body")
	}
	if err := strictDecode(env.Body, out); err != nil {
		return Signed{}, refuse(LinkMalformed, "body: %v", err)
	}
	return env, nil
}

// checkSeal verifies the envelope's signature by pk under domain.
func checkSeal(env Signed, domain, pk string) *LinkError {
	key, err := ParsePublicKey(pk)
	if err != nil {
		return refuse(LinkMalformed, "signer key")
	}
	c, err := Canonical(env.Body)
	if err != nil || !verifySig(key, domain, c, env.Sig) {
		return refuse(LinkSignature, "bad signature")
	}
	return nil
}

// strictDecode decodes one JSON value, refusing unknown fields and trailing data.
func strictDecode(data []byte, out any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
}

// checkMarks refuses marks with a key that is not a stream id, or too many.
func checkMarks(ms Marks) *LinkError {
	if len(ms) > marksMax {
		return refuse(LinkOversized, "%d marks", len(ms))
	}
	for s := range ms {
		if _, err := ParseStreamID(string(s)); err != nil {
			return refuse(LinkMalformed, "mark of %.80q", string(s))
		}
	}
	return nil
}

// checkTS refuses a timestamp more than helloSkewMax from now.
func checkTS(ts int64, now time.Time) *LinkError {
	d := now.Sub(time.Unix(ts, 0))
	if d > helloSkewMax || d < -helloSkewMax {
		return refuse(LinkStale, "timestamp %ds from now", int64(d/time.Second))
	}
	return nil
}

// normalizeEndpoint turns host:port into http://host:port.
func normalizeEndpoint(e string) string {
	if strings.Contains(e, "://") {
		return strings.TrimRight(e, "/")
	}
	return "http://" + e
}
