package security

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/parosdb/paros/core/journal"
)

// Bounds of a token: a token past them is refused before
// any decoding.
const (
	TokenBytesMax   = 4096
	scopesMax       = 64
	subjectBytesMax = 128
	tokenPrefix     = "paros1."
)

// Op is a set of operations a scope grants.
type Op uint8

const (
	// OpRead: Read, and Inspect of the journals in scope.
	OpRead Op = 1 << iota
	// OpWrite: Write, WriteStream, Truncate and SetLeader.
	OpWrite
	// OpAdmin: Admin and Machine calls (Inspect of any journal, cell
	// formation, reconfiguration).
	OpAdmin
)

// ParseOps reads "read,write,admin" (any subset, any order).
func ParseOps(s string) (Op, error) {
	var o Op
	for _, w := range strings.Split(s, ",") {
		switch strings.TrimSpace(w) {
		case "read":
			o |= OpRead
		case "write":
			o |= OpWrite
		case "admin":
			o |= OpAdmin
		case "":
		default:
			return 0, fmt.Errorf("paros/security: unknown operation %q (want read, write, admin)", w)
		}
	}
	if o == 0 {
		return 0, errors.New("paros/security: no operation")
	}
	return o, nil
}

func (o Op) String() string {
	var out []string
	for _, x := range []struct {
		op   Op
		name string
	}{{OpRead, "read"}, {OpWrite, "write"}, {OpAdmin, "admin"}} {
		if o&x.op != 0 {
			out = append(out, x.name)
		}
	}
	return strings.Join(out, ",")
}

// Scope grants Ops on the journals it covers: every journal (Tenant 0),
// every journal of Tenant (Journal 0), or one journal.
type Scope struct {
	Tenant  uint64 `json:"tenant,omitempty"`
	Journal uint64 `json:"journal,omitempty"`
	Ops     Op     `json:"ops"`
}

// Covers reports whether the scope covers journal id.
func (s Scope) Covers(id journal.ID) bool {
	switch {
	case s.Tenant == 0:
		return s.Journal == 0
	case s.Journal == 0:
		return s.Tenant == id.Tenant
	}
	return s.Tenant == id.Tenant && s.Journal == id.Journal
}

// Claims is what a token says: who holds it, what it grants, until when.
type Claims struct {
	Subject string  `json:"sub"`
	Scopes  []Scope `json:"scopes"`
	// IssuedAt and Expires are Unix seconds.
	IssuedAt int64 `json:"iat"`
	Expires  int64 `json:"exp"`
}

// Allows reports whether the claims grant op on journal id. The zero ID
// asks for op on no journal in particular (an admin call): only a scope
// over every journal grants that.
func (c Claims) Allows(op Op, id journal.ID) bool {
	if op == 0 {
		return false
	}
	for _, s := range c.Scopes {
		if s.Ops&op == op && (s.Covers(id) || (id == journal.ID{} && s.Tenant == 0 && s.Journal == 0)) {
			return true
		}
	}
	return false
}

// AllowsAny reports whether the claims grant any operation on journal id.
func (c Claims) AllowsAny(id journal.ID) bool {
	for _, s := range c.Scopes {
		if s.Ops != 0 && s.Covers(id) {
			return true
		}
	}
	return false
}

// Errors of token verification.
var (
	// ErrBadToken: not a token this cell's CA signed (malformed, forged,
	// or signed by another CA).
	ErrBadToken = errors.New("paros/security: invalid token")
	// ErrExpiredToken: a genuine token past its expiry.
	ErrExpiredToken = errors.New("paros/security: token expired")
)

// IssueToken signs claims with the CA key. The token is
// "paros1.<base64url JSON>.<base64url Ed25519 signature over paros1.<payload>>".
func (ca *CA) IssueToken(c Claims) (string, error) {
	if ca.Key == nil {
		return "", errors.New("paros/security: issuing needs the CA key")
	}
	if err := c.check(); err != nil {
		return "", err
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	signed := tokenPrefix + base64.RawURLEncoding.EncodeToString(payload)
	sig := ed25519.Sign(ca.Key, []byte(signed))
	tok := signed + "." + base64.RawURLEncoding.EncodeToString(sig)
	if len(tok) > TokenBytesMax {
		return "", fmt.Errorf("paros/security: token of %d bytes, at most %d", len(tok), TokenBytesMax)
	}
	return tok, nil
}

// VerifyToken checks tok's signature against the CA certificate and its
// expiry against now, and returns its claims. Errors: ErrBadToken,
// ErrExpiredToken.
func (ca *CA) VerifyToken(tok string, now time.Time) (Claims, error) {
	if len(tok) > TokenBytesMax || !strings.HasPrefix(tok, tokenPrefix) {
		return Claims{}, ErrBadToken
	}
	dot := strings.LastIndexByte(tok, '.')
	if dot <= len(tokenPrefix) {
		return Claims{}, ErrBadToken
	}
	signed, sigText := tok[:dot], tok[dot+1:]
	// One spelling per token: the decoder would also take a last character
	// with other unused bits, and line breaks anywhere.
	sig, err := base64.RawURLEncoding.DecodeString(sigText)
	if err != nil || len(sig) != ed25519.SignatureSize || base64.RawURLEncoding.EncodeToString(sig) != sigText ||
		!ed25519.Verify(ca.publicKey(), []byte(signed), sig) {
		return Claims{}, ErrBadToken
	}
	payload, err := base64.RawURLEncoding.DecodeString(signed[len(tokenPrefix):])
	if err != nil {
		return Claims{}, ErrBadToken
	}
	var c Claims
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Claims{}, ErrBadToken
	}
	if _, err := dec.Token(); err != io.EOF { // nothing after the claims
		return Claims{}, ErrBadToken
	}
	if err := c.check(); err != nil {
		return Claims{}, fmt.Errorf("%w: %v", ErrBadToken, err)
	}
	if now.Unix() >= c.Expires {
		return Claims{}, fmt.Errorf("%w: %s expired at %s", ErrExpiredToken, c.Subject, time.Unix(c.Expires, 0).UTC())
	}
	return c, nil
}

func (c Claims) check() error {
	switch {
	case c.Subject == "" || len(c.Subject) > subjectBytesMax:
		return fmt.Errorf("paros/security: subject of %d bytes (1 to %d)", len(c.Subject), subjectBytesMax)
	case len(c.Scopes) == 0 || len(c.Scopes) > scopesMax:
		return fmt.Errorf("paros/security: %d scopes (1 to %d)", len(c.Scopes), scopesMax)
	case c.Expires <= c.IssuedAt:
		return errors.New("paros/security: a token must expire after it is issued")
	}
	for _, s := range c.Scopes {
		if s.Ops == 0 || s.Ops&^(OpRead|OpWrite|OpAdmin) != 0 || (s.Tenant == 0 && s.Journal != 0) {
			return fmt.Errorf("paros/security: bad scope %+v", s)
		}
	}
	return nil
}
