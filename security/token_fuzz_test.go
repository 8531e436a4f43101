// This file fuzzes VerifyToken over arbitrary strings. The CA has a fixed
// key (fuzzCA), so the seeds, valid tokens and mutations of them (truncated,
// bit-flipped, re-spelled with CR/LF, hand-signed payloads with trailing
// data or unknown fields, an oversized one, expired ones, one of another CA)
// mean the same on every run. For every input VerifyToken must not panic and
// must return either claims or an error that is exactly one of ErrBadToken
// and ErrExpiredToken, with zero claims. Claims it returns must be valid
// (the package's own check, unexpired at the verification time, the token
// within TokenBytesMax), must answer Allows and AllowsAny without panicking
// and consistently (a granted set of operations grants each of its members,
// and Allows implies AllowsAny), and must survive a round trip: re-issued
// with the CA key, they verify to the same claims. The valid seeds must
// verify.
package security

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/parosdb/paros/core/journal"
)

// fixedCA is a CA whose key derives from seedByte, so tokens it signs are
// the same on every run (Ed25519 signatures are deterministic).
func fixedCA(tb testing.TB, seedByte byte) *CA {
	tb.Helper()
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seedByte}, ed25519.SeedSize))
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(int64(seedByte)),
		Subject:               pkix.Name{CommonName: "paros cell CA fuzz"},
		NotBefore:             time.Unix(0, 0),
		NotAfter:              tokenNow.Add(CALifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return &CA{Cert: cert, Key: key}
}

func FuzzVerifyToken(f *testing.F) {
	ca, other := fixedCA(f, 0x5e), fixedCA(f, 0x7a)
	iat, exp := tokenNow.Unix()-60, tokenNow.Unix()+3600
	valid := []string{
		issueTestToken(f, ca, Claims{Subject: "fuzz", Scopes: []Scope{{Ops: OpAdmin}, {Tenant: 3, Ops: OpRead}, {Tenant: 3, Journal: 9, Ops: OpRead | OpWrite}}, IssuedAt: iat, Expires: exp}),
		issueTestToken(f, ca, Claims{Subject: "t", Scopes: []Scope{{Tenant: 1<<64 - 1, Journal: 1<<64 - 1, Ops: OpRead | OpWrite | OpAdmin}}, IssuedAt: -1 << 62, Expires: 1 << 62}),
		issueTestToken(f, ca, testClaims()),
	}
	for _, tok := range valid {
		if _, err := ca.VerifyToken(tok, tokenNow); err != nil {
			f.Fatalf("valid seed %q: %v", tok, err)
		}
	}
	seeds := append([]string{}, valid...)
	for _, tok := range valid[:1] {
		dot := strings.LastIndexByte(tok, '.')
		seeds = append(seeds,
			tok[:dot], tok[:dot+1], tok[:len(tok)/2], tok[:len(tok)-1],
			tok[:10]+"A"+tok[11:],       // payload byte changed
			tok[:dot+5]+"A"+tok[dot+6:], // signature byte changed
			tok[:dot+5]+"\n"+tok[dot+5:],
			tok+"\r\n",
			tok+"."+tok[dot+1:],
			"paros1."+tok[dot+1:]+"."+tok[len("paros1."):dot],
		)
	}
	atMax, _ := paddedToken(ca, TokenBytesMax)
	overMax, _ := paddedToken(ca, TokenBytesMax+2)
	seeds = append(seeds,
		"", "paros1.", "paros1..", "paros1.e30.", "paros1.e30.AAAA", "\xff\x00paros1.",
		atMax, overMax,
		issueTestToken(f, ca, Claims{Subject: "old", Scopes: []Scope{{Ops: OpRead}}, IssuedAt: iat - 7200, Expires: iat}),
		issueTestToken(f, other, testClaims()),
		signRaw(ca, claimsJSON(`[{"ops":1}]`, "}")),
		signRaw(ca, claimsJSON(`[{"ops":1}]`, " {}")),
		signRaw(ca, claimsJSON(`[{"ops":1,"x":1}]`, "")),
		signRaw(ca, claimsJSON(`[{"journal":9,"ops":1}]`, "")),
		signRaw(ca, claimsJSON(`[{"ops":8}]`, "")),
		signRaw(ca, []byte(`{"SUB":"a","Scopes":[{"OPS":1}],"IAT":1,"EXP":9999999999}`)),
		signRaw(ca, []byte(`{"sub":"a","sub":"","scopes":[{"ops":1}],"iat":1,"exp":9999999999}`)),
		signRaw(ca, []byte(`{"sub":"\ud800<>&","scopes":[{"ops":1}],"iat":1,"exp":9999999999}`)),
	)
	for _, s := range seeds {
		f.Add(s)
	}
	validSet := map[string]bool{}
	for _, tok := range valid {
		validSet[tok] = true
	}

	f.Fuzz(func(t *testing.T, tok string) {
		c, err := ca.VerifyToken(tok, tokenNow)

		if err != nil {
			checkRefusal(t, tok, c, err)
			if validSet[tok] {
				t.Fatalf("valid seed %q refused: %v", tok, err)
			}
			return
		}
		checkClaims(t, tok, c)
		checkAllows(t, c)
		checkReissue(t, ca, c)
	})
}

// checkRefusal: an error is exactly one of the two sentinels, with no claims.
func checkRefusal(t *testing.T, tok string, c Claims, err error) {
	bad, expired := errors.Is(err, ErrBadToken), errors.Is(err, ErrExpiredToken)
	if bad == expired {
		t.Fatalf("VerifyToken(%q): err %v is ErrBadToken=%v ErrExpiredToken=%v, want exactly one", tok, err, bad, expired)
	}
	if !reflect.DeepEqual(c, Claims{}) {
		t.Fatalf("VerifyToken(%q): err %v with claims %+v", tok, err, c)
	}
}

// checkClaims: accepted claims are valid, unexpired, from a bounded token.
func checkClaims(t *testing.T, tok string, c Claims) {
	if len(tok) > TokenBytesMax || !strings.HasPrefix(tok, "paros1.") {
		t.Fatalf("VerifyToken accepted %q (%d bytes)", tok, len(tok))
	}
	if err := c.check(); err != nil {
		t.Fatalf("VerifyToken(%q) returned invalid claims %+v: %v", tok, c, err)
	}
	if tokenNow.Unix() >= c.Expires {
		t.Fatalf("VerifyToken(%q) returned claims expired at %d", tok, c.Expires)
	}
}

// checkAllows asks every operation set on the journals the first scopes name
// (and their neighbours and the zero ID) and checks the answers agree.
func checkAllows(t *testing.T, c Claims) {
	ids := []journal.ID{{}, {Tenant: 1, Journal: 1}}
	for _, s := range c.Scopes[:min(len(c.Scopes), 8)] {
		ids = append(ids, journal.ID{Tenant: s.Tenant, Journal: s.Journal}, journal.ID{Tenant: s.Tenant, Journal: s.Journal + 1}, journal.ID{Tenant: s.Tenant + 1, Journal: s.Journal})
	}
	for _, id := range ids {
		anyOp := c.AllowsAny(id)
		for op := OpRead; op <= OpRead|OpWrite|OpAdmin; op++ {
			got := c.Allows(op, id)
			if got && !anyOp {
				t.Fatalf("claims %+v: Allows(%v, %v) but not AllowsAny", c, op, id)
			}
			for _, single := range []Op{OpRead, OpWrite, OpAdmin} {
				if got && op&single != 0 && !c.Allows(single, id) {
					t.Fatalf("claims %+v: Allows(%v, %v) but not Allows(%v)", c, op, id, single)
				}
			}
		}
	}
}

// checkReissue: claims re-issued with the CA key verify to the same claims,
// unless their canonical token is past TokenBytesMax (an accepted payload
// may be more compact than json.Marshal's, e.g. '<' against "\u003c").
func checkReissue(t *testing.T, ca *CA, c Claims) {
	tok, err := ca.IssueToken(c)
	if err != nil {
		payload, merr := json.Marshal(c)
		n := len("paros1.") + base64.RawURLEncoding.EncodedLen(len(payload)) + 1 + base64.RawURLEncoding.EncodedLen(ed25519.SignatureSize)
		if merr != nil || n <= TokenBytesMax {
			t.Fatalf("IssueToken(%+v) of accepted claims: %v", c, err)
		}
		return
	}
	back, err := ca.VerifyToken(tok, tokenNow)
	if err != nil || !reflect.DeepEqual(back, c) {
		t.Fatalf("re-issued claims %+v verify to %+v, %v", c, back, err)
	}
}
