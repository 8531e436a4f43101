// Package security is who may talk to a paros cell, and how that is proven.
//
// A cell has one certificate authority (CA), an Ed25519 key pair the
// operator keeps (`paros cert ca`). It signs:
//
//   - one certificate per machine (`paros cert node`), whose URI SAN
//     paros://node/<16 hex digits> names the machine's node id; a machine
//     takes its node id from its certificate, so the id a peer claims is
//     the one its certificate proves. Machines speak TLS 1.3 to clients and
//     mutual TLS to one another.
//   - bearer tokens for clients and operators (`paros cert token`): a
//     subject, scopes (a tenant, or one journal, or everything; and the
//     operations read, write, admin) and an expiry, signed with the CA key.
//     Every machine verifies them with the CA certificate alone.
//
// Files (PEM):
//
//	ca.crt     the CA certificate: every machine and client trusts it
//	ca.key     the CA private key: the operator's, never on a machine
//	node.crt   a machine's certificate (node id in its URI SAN)
//	node.key   a machine's private key
package security

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// File names inside a credentials directory.
const (
	CACertFile   = "ca.crt"
	CAKeyFile    = "ca.key"
	NodeCertFile = "node.crt"
	NodeKeyFile  = "node.key"
)

// Lifetimes of what the CA issues.
const (
	CALifetime   = 10 * 365 * 24 * time.Hour
	NodeLifetime = 2 * 365 * 24 * time.Hour
)

// Errors of the package; test them with errors.Is.
var (
	// ErrNoNodeID: a certificate names no paros node (a client's, or a
	// foreign one).
	ErrNoNodeID = errors.New("paros/security: the certificate names no paros node")
	// ErrBadPEM: a file is not the PEM object it should be.
	ErrBadPEM = errors.New("paros/security: bad PEM")
)

// CA is a cell's certificate authority: its certificate and, on the
// operator's side only, its key.
type CA struct {
	Cert *x509.Certificate
	Key  ed25519.PrivateKey // nil where only the certificate is held
}

// NewCA mints a CA for a cell.
func NewCA(name string) (*CA, error) {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "paros cell CA " + name},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(CALifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key}, nil
}

// NodeURI is the URI SAN that names node id in a machine's certificate.
func NodeURI(id uint64) *url.URL {
	return &url.URL{Scheme: "paros", Host: "node", Path: "/" + fmt.Sprintf("%016x", id)}
}

// NodeIDOf returns the node id a certificate names, or ErrNoNodeID.
func NodeIDOf(c *x509.Certificate) (uint64, error) {
	for _, u := range c.URIs {
		if u.Scheme != "paros" || u.Host != "node" {
			continue
		}
		id, err := strconv.ParseUint(strings.TrimPrefix(u.Path, "/"), 16, 64)
		if err != nil || id == 0 {
			return 0, fmt.Errorf("%w: bad node URI %q", ErrNoNodeID, u)
		}
		return id, nil
	}
	return 0, ErrNoNodeID
}

// IssueNode signs a certificate for machine id, valid for the given hosts
// (IP addresses or DNS names peers and clients dial). It returns the PEM
// certificate and PEM key.
func (ca *CA) IssueNode(id uint64, hosts []string) (certPEM, keyPEM []byte, err error) {
	if ca.Key == nil {
		return nil, nil, errors.New("paros/security: issuing needs the CA key")
	}
	if id == 0 || id >= 1<<63 {
		return nil, nil, fmt.Errorf("paros/security: node id %d (want 1 to 2^63-1, as machine records keep them)", id)
	}
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: fmt.Sprintf("paros node %016x", id)},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(NodeLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		// A machine is a server to clients and peers, and a client of its
		// peers (mutual TLS).
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		URIs:        []*url.URL{NodeURI(id)},
	}
	for _, h := range hosts {
		if h = strings.TrimSpace(h); h == "" {
			continue
		}
		if host, _, err := net.SplitHostPort(h); err == nil {
			h = host
		}
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, pub, ca.Key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

// RandomNodeID draws a node id (never 0; below 2^63, as machine records
// keep them).
func RandomNodeID() uint64 {
	var b [8]byte
	for {
		_, _ = rand.Read(b[:])
		if v := binary.LittleEndian.Uint64(b[:]) >> 1; v != 0 {
			return v
		}
	}
}

// WriteCA writes ca.crt (and ca.key when the key is held) into dir.
func (ca *CA) WriteCA(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, CACertFile), ca.CertPEM(), 0o644); err != nil {
		return err
	}
	if ca.Key == nil {
		return nil
	}
	der, err := x509.MarshalPKCS8PrivateKey(ca.Key)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, CAKeyFile), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
}

// CertPEM is the CA certificate in PEM.
func (ca *CA) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})
}

// LoadCA reads ca.crt, and ca.key if present, from dir.
func LoadCA(dir string) (*CA, error) {
	raw, err := os.ReadFile(filepath.Join(dir, CACertFile))
	if err != nil {
		return nil, err
	}
	cert, err := ParseCertPEM(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", CACertFile, err)
	}
	if _, ok := cert.PublicKey.(ed25519.PublicKey); !ok || !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, fmt.Errorf("paros/security: %s is not a paros CA certificate (an Ed25519 CA that signs certificates)", CACertFile)
	}
	ca := &CA{Cert: cert}
	rawKey, err := os.ReadFile(filepath.Join(dir, CAKeyFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return ca, nil
	case err != nil:
		return nil, err
	}
	key, err := parseKeyPEM(rawKey)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", CAKeyFile, err)
	}
	if !key.Public().(ed25519.PublicKey).Equal(cert.PublicKey) {
		return nil, fmt.Errorf("paros/security: %s does not match %s", CAKeyFile, CACertFile)
	}
	ca.Key = key
	return ca, nil
}

// ParseCertPEM parses one PEM certificate.
func ParseCertPEM(raw []byte) (*x509.Certificate, error) {
	b, _ := pem.Decode(raw)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%w: want a CERTIFICATE block", ErrBadPEM)
	}
	return x509.ParseCertificate(b.Bytes)
}

func parseKeyPEM(raw []byte) (ed25519.PrivateKey, error) {
	b, _ := pem.Decode(raw)
	if b == nil || b.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%w: want a PRIVATE KEY block", ErrBadPEM)
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, err
	}
	ek, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%w: not an Ed25519 key", ErrBadPEM)
	}
	return ek, nil
}

// publicKey is the CA's verifying key.
func (ca *CA) publicKey() ed25519.PublicKey { return ca.Cert.PublicKey.(ed25519.PublicKey) }

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}
