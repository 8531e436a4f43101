// This file checks the cell's PKI on disk. A CA written with WriteCA loads
// back with LoadCA equal to itself, with its key when ca.key was written and
// without it when only the certificate was; a ca.key that does not match
// ca.crt, and files holding the wrong PEM block, are refused. A machine
// certificate from IssueNode, written into a temporary directory as
// node.crt/node.key next to ca.crt, loads with LoadNode and gives back the
// node id its URI SAN names; LoadNode refuses a directory that holds ca.key,
// a node certificate another CA signed, a key that is not the certificate's,
// and certificates that name no node (no URI SAN, a foreign URI, a malformed
// or zero id: ErrNoNodeID). IssueNode puts the hosts it is given into IP and
// DNS SANs, a port stripped. A ca.crt whose key is not Ed25519 is a probe for
// the token path, which assumes one. The helpers here (a CA per test, a node
// directory, a certificate with chosen URIs) serve the TLS and token tests
// too.
package security

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// newTestCA mints a CA or fails the test.
func newTestCA(t testing.TB, name string) *CA {
	t.Helper()
	ca, err := NewCA(name)
	if err != nil {
		t.Fatalf("NewCA(%q): %v", name, err)
	}
	return ca
}

// writeFile writes raw into dir/name or fails the test.
func writeFile(t testing.TB, dir, name string, raw []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), raw, 0o600); err != nil {
		t.Fatal(err)
	}
}

// nodeDir lays out a machine's credentials directory: ca.crt of ca (never
// ca.key), node.crt and node.key.
func nodeDir(t testing.TB, ca *CA, certPEM, keyPEM []byte) string {
	t.Helper()
	dir := t.TempDir()
	if err := (&CA{Cert: ca.Cert}).WriteCA(dir); err != nil {
		t.Fatalf("WriteCA: %v", err)
	}
	writeFile(t, dir, NodeCertFile, certPEM)
	writeFile(t, dir, NodeKeyFile, keyPEM)
	return dir
}

// issueTestNode issues a machine certificate for id signed by issuer, lays it
// out next to trust's ca.crt, and loads it with LoadNode.
func issueTestNode(t testing.TB, issuer *CA, id uint64, hosts ...string) *Node {
	t.Helper()
	certPEM, keyPEM, err := issuer.IssueNode(id, hosts)
	if err != nil {
		t.Fatalf("IssueNode(%016x): %v", id, err)
	}
	n, err := LoadNode(nodeDir(t, issuer, certPEM, keyPEM))
	if err != nil {
		t.Fatalf("LoadNode(%016x): %v", id, err)
	}
	return n
}

// issueWithURIs signs, with ca, a certificate shaped like a machine's but
// carrying exactly the given URI SANs, and returns it and its key in PEM.
func issueWithURIs(t testing.TB, ca *CA, uris []*url.URL) (certPEM, keyPEM []byte) {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()),
		Subject:      pkix.Name{CommonName: "not a paros node"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		URIs:         uris,
		DNSNames:     []string{"db.paros.test"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, pub, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}

func mustParseURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestCARoundTripWithKey(t *testing.T) {
	ca := newTestCA(t, "test")
	dir := filepath.Join(t.TempDir(), "creds") // WriteCA creates it

	if err := ca.WriteCA(dir); err != nil {
		t.Fatalf("WriteCA: %v", err)
	}
	got, err := LoadCA(dir)

	if err != nil {
		t.Fatalf("LoadCA: %v", err)
	}
	if !got.Cert.Equal(ca.Cert) {
		t.Error("loaded certificate differs from the written one")
	}
	if !got.Key.Equal(ca.Key) {
		t.Error("loaded key differs from the written one")
	}
	if !got.Cert.IsCA || !got.Cert.MaxPathLenZero || got.Cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("CA certificate: IsCA=%v MaxPathLenZero=%v KeyUsage=%b", got.Cert.IsCA, got.Cert.MaxPathLenZero, got.Cert.KeyUsage)
	}
	if now := time.Now(); now.Before(got.Cert.NotBefore) || now.After(got.Cert.NotAfter) {
		t.Errorf("CA certificate not valid now: %v .. %v", got.Cert.NotBefore, got.Cert.NotAfter)
	}
	fi, err := os.Stat(filepath.Join(dir, CAKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		t.Errorf("ca.key mode %o: readable by others", perm)
	}
}

func TestCARoundTripCertificateOnly(t *testing.T) {
	ca := newTestCA(t, "test")
	dir := t.TempDir()

	if err := (&CA{Cert: ca.Cert}).WriteCA(dir); err != nil {
		t.Fatalf("WriteCA: %v", err)
	}
	got, err := LoadCA(dir)

	if err != nil {
		t.Fatalf("LoadCA: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, CAKeyFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ca.key written without a key: stat err %v", err)
	}
	if !got.Cert.Equal(ca.Cert) {
		t.Error("loaded certificate differs from the written one")
	}
	if got.Key != nil {
		t.Error("a CA loaded without ca.key holds a key")
	}
	if _, _, err := got.IssueNode(1, nil); err == nil {
		t.Error("IssueNode without the CA key succeeded")
	}
	if _, err := got.IssueToken(Claims{Subject: "a", Scopes: []Scope{{Ops: OpRead}}, IssuedAt: 1, Expires: 2}); err == nil {
		t.Error("IssueToken without the CA key succeeded")
	}
}

func TestLoadCARefusesMismatchedKey(t *testing.T) {
	ca, other := newTestCA(t, "a"), newTestCA(t, "b")
	dir, otherDir := t.TempDir(), t.TempDir()
	if err := ca.WriteCA(dir); err != nil {
		t.Fatal(err)
	}
	if err := other.WriteCA(otherDir); err != nil {
		t.Fatal(err)
	}
	otherKey, err := os.ReadFile(filepath.Join(otherDir, CAKeyFile))
	if err != nil {
		t.Fatal(err)
	}

	writeFile(t, dir, CAKeyFile, otherKey)
	got, err := LoadCA(dir)

	if err == nil {
		t.Fatalf("LoadCA accepted another CA's key (got %v)", got)
	}
}

func TestLoadCARefusesBadFiles(t *testing.T) {
	ca := newTestCA(t, "test")
	keyDER, err := x509.MarshalPKCS8PrivateKey(ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecDER, err := x509.MarshalPKCS8PrivateKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		crt, key     []byte // nil: file absent
		wantBadPEM   bool
		wantNotExist bool
	}{
		{name: "no ca.crt", wantNotExist: true},
		{name: "ca.crt not PEM", crt: []byte("hello"), wantBadPEM: true},
		{name: "ca.crt holds a key", crt: keyPEM, wantBadPEM: true},
		{name: "ca.key not PEM", crt: ca.CertPEM(), key: []byte("hello"), wantBadPEM: true},
		{name: "ca.key holds a certificate", crt: ca.CertPEM(), key: ca.CertPEM(), wantBadPEM: true},
		{name: "ca.key not Ed25519", crt: ca.CertPEM(), key: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecDER}), wantBadPEM: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.crt != nil {
				writeFile(t, dir, CACertFile, tc.crt)
			}
			if tc.key != nil {
				writeFile(t, dir, CAKeyFile, tc.key)
			}

			_, err := LoadCA(dir)

			switch {
			case err == nil:
				t.Fatal("LoadCA succeeded")
			case tc.wantBadPEM && !errors.Is(err, ErrBadPEM):
				t.Errorf("err %v, want ErrBadPEM", err)
			case tc.wantNotExist && !errors.Is(err, os.ErrNotExist):
				t.Errorf("err %v, want os.ErrNotExist", err)
			}
		})
	}
}

// A ca.crt whose key is not Ed25519 (an operator pointing at some other
// CA's certificate) must be refused by LoadCA, or at least make token
// verification fail with an error; it must not crash the verifier.
func TestLoadCANonEd25519Certificate(t *testing.T) {
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "foreign ECDSA CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &ecKey.PublicKey, ecKey)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, dir, CACertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	tok, err := newTestCA(t, "real").IssueToken(Claims{Subject: "a", Scopes: []Scope{{Ops: OpRead}}, IssuedAt: 1, Expires: now.Unix() + 60})
	if err != nil {
		t.Fatal(err)
	}

	ca, err := LoadCA(dir)
	if err != nil {
		return // refused at load: fine
	}
	var verifyErr error
	panicked := func() (p any) {
		defer func() { p = recover() }()
		_, verifyErr = ca.VerifyToken(tok, now)
		return nil
	}()

	if panicked != nil {
		t.Fatalf("bug: LoadCA accepts a non-Ed25519 ca.crt and VerifyToken then panics (%v); "+
			"LoadCA/ParseCertPEM should refuse a CA certificate whose key is not ed25519.PublicKey", panicked)
	}
	if !errors.Is(verifyErr, ErrBadToken) {
		t.Errorf("VerifyToken against a foreign ECDSA CA: err %v, want ErrBadToken", verifyErr)
	}
}

func TestIssueNodeLoadNode(t *testing.T) {
	ca := newTestCA(t, "test")
	for _, id := range []uint64{1, 0x0123456789abcdef, 1<<63 - 1, RandomNodeID()} {
		certPEM, keyPEM, err := ca.IssueNode(id, []string{"127.0.0.1"})
		if err != nil {
			t.Fatalf("IssueNode(%016x): %v", id, err)
		}

		n, err := LoadNode(nodeDir(t, ca, certPEM, keyPEM))

		if err != nil {
			t.Fatalf("LoadNode(%016x): %v", id, err)
		}
		if n.NodeID != id {
			t.Errorf("LoadNode: node id %016x, want %016x", n.NodeID, id)
		}
		if n.Cert.Leaf == nil {
			t.Fatal("LoadNode: no parsed leaf")
		}
		if got, err := NodeIDOf(n.Cert.Leaf); err != nil || got != id {
			t.Errorf("NodeIDOf(leaf) = %016x, %v; want %016x", got, err, id)
		}
		if n.CA.Key != nil || !n.CA.Cert.Equal(ca.Cert) {
			t.Error("LoadNode: CA is not the certificate-only CA of the directory")
		}
		if now := time.Now(); now.Before(n.Cert.Leaf.NotBefore) || now.After(n.Cert.Leaf.NotAfter) {
			t.Errorf("node certificate not valid now: %v .. %v", n.Cert.Leaf.NotBefore, n.Cert.Leaf.NotAfter)
		}
	}
}

func TestIssueNodeRefusesZeroID(t *testing.T) {
	ca := newTestCA(t, "test")

	_, _, err := ca.IssueNode(0, nil)

	if err == nil {
		t.Fatal("IssueNode(0) succeeded")
	}
}

func TestIssueNodeSANs(t *testing.T) {
	ca := newTestCA(t, "test")
	hosts := []string{"10.0.0.1", "10.0.0.2:7000", "::1", "[fe80::1]:7000", "db.paros.test", "node2.paros.test:7000", "", "  "}

	certPEM, _, err := ca.IssueNode(9, hosts)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ParseCertPEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}

	wantIPs := []net.IP{net.ParseIP("10.0.0.1"), net.ParseIP("10.0.0.2"), net.ParseIP("::1"), net.ParseIP("fe80::1")}
	if !slices.EqualFunc(cert.IPAddresses, wantIPs, net.IP.Equal) {
		t.Errorf("IP SANs %v, want %v", cert.IPAddresses, wantIPs)
	}
	if want := []string{"db.paros.test", "node2.paros.test"}; !slices.Equal(cert.DNSNames, want) {
		t.Errorf("DNS SANs %q, want %q", cert.DNSNames, want)
	}
	if len(cert.URIs) != 1 || cert.URIs[0].String() != "paros://node/0000000000000009" {
		t.Errorf("URI SANs %v, want [paros://node/0000000000000009]", cert.URIs)
	}
	for _, h := range []string{"10.0.0.2", "fe80::1", "node2.paros.test"} {
		if err := cert.VerifyHostname(h); err != nil {
			t.Errorf("VerifyHostname(%q): %v", h, err)
		}
	}
}

func TestLoadNodeRefusesCAKey(t *testing.T) {
	ca := newTestCA(t, "test")
	certPEM, keyPEM, err := ca.IssueNode(7, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := nodeDir(t, ca, certPEM, keyPEM)

	if err := ca.WriteCA(dir); err != nil { // adds ca.key
		t.Fatal(err)
	}
	_, err = LoadNode(dir)

	if err == nil {
		t.Fatal("LoadNode accepted a directory holding ca.key")
	}
}

func TestLoadNodeRefusesForeignCertificate(t *testing.T) {
	ca, other := newTestCA(t, "ours"), newTestCA(t, "theirs")
	certPEM, keyPEM, err := other.IssueNode(7, nil)
	if err != nil {
		t.Fatal(err)
	}

	_, err = LoadNode(nodeDir(t, ca, certPEM, keyPEM))

	if err == nil {
		t.Fatal("LoadNode accepted a node certificate signed by another CA")
	}
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Errorf("err %v, want an x509.UnknownAuthorityError", err)
	}
}

func TestLoadNodeRefusesMismatchedKey(t *testing.T) {
	ca := newTestCA(t, "test")
	certPEM, _, err := ca.IssueNode(7, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, otherKeyPEM, err := ca.IssueNode(8, nil)
	if err != nil {
		t.Fatal(err)
	}

	_, err = LoadNode(nodeDir(t, ca, certPEM, otherKeyPEM))

	if err == nil {
		t.Fatal("LoadNode accepted a key that is not the certificate's")
	}
}

func TestLoadNodeRefusesCertificateWithoutNodeID(t *testing.T) {
	ca := newTestCA(t, "test")
	for _, tc := range []struct {
		name string
		uris []string
	}{
		{name: "no URI SAN"},
		{name: "foreign URI", uris: []string{"spiffe://cell/node/0000000000000007"}},
		{name: "paros URI of another kind", uris: []string{"paros://client/0000000000000007"}},
		{name: "id not hex", uris: []string{"paros://node/zz"}},
		{name: "id too wide", uris: []string{"paros://node/10000000000000000"}},
		{name: "id zero", uris: []string{"paros://node/0000000000000000"}},
		{name: "id empty", uris: []string{"paros://node/"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var uris []*url.URL
			for _, s := range tc.uris {
				uris = append(uris, mustParseURL(t, s))
			}
			certPEM, keyPEM := issueWithURIs(t, ca, uris)

			_, err := LoadNode(nodeDir(t, ca, certPEM, keyPEM))

			if !errors.Is(err, ErrNoNodeID) {
				t.Errorf("LoadNode: err %v, want ErrNoNodeID", err)
			}
		})
	}
}

func TestNodeIDOf(t *testing.T) {
	ca := newTestCA(t, "test")
	for _, tc := range []struct {
		uris []string
		want uint64
	}{
		{uris: []string{"paros://node/0000000000000007"}, want: 7},
		{uris: []string{"paros://node/ffffffffffffffff"}, want: 1<<64 - 1},
		{uris: []string{"https://example.test/x", "paros://node/00000000000000aa"}, want: 0xaa},
	} {
		var uris []*url.URL
		for _, s := range tc.uris {
			uris = append(uris, mustParseURL(t, s))
		}
		certPEM, _ := issueWithURIs(t, ca, uris)
		cert, err := ParseCertPEM(certPEM)
		if err != nil {
			t.Fatal(err)
		}

		got, err := NodeIDOf(cert)

		if err != nil || got != tc.want {
			t.Errorf("NodeIDOf(%v) = %016x, %v; want %016x", tc.uris, got, err, tc.want)
		}
	}
	for _, id := range []uint64{1, 0xabcdef, 1<<64 - 1} {
		if u := NodeURI(id).String(); len(u) != len("paros://node/")+16 {
			t.Errorf("NodeURI(%x) = %q: id not 16 hex digits", id, u)
		}
	}
}

func TestRandomNodeID(t *testing.T) {
	seen := map[uint64]bool{}
	for range 64 {
		id := RandomNodeID()
		if id == 0 || id >= 1<<63 {
			t.Fatalf("RandomNodeID() = %016x, want in [1, 2^63)", id)
		}
		seen[id] = true
	}
	if len(seen) < 60 {
		t.Errorf("64 draws gave %d distinct ids", len(seen))
	}
}
