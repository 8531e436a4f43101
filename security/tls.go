package security

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Node is a machine's credentials: the cell's CA certificate, its own
// certificate and key, and the node id its certificate names.
type Node struct {
	CA     *CA
	Cert   tls.Certificate
	NodeID uint64
	pool   *x509.CertPool
}

// LoadNode reads ca.crt, node.crt and node.key from dir and checks that the
// certificate chains to the CA and names a node.
func LoadNode(dir string) (*Node, error) {
	ca, err := LoadCA(dir)
	if err != nil {
		return nil, err
	}
	if ca.Key != nil {
		return nil, fmt.Errorf("paros/security: %s holds %s: the CA key stays with the operator, never on a machine", dir, CAKeyFile)
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, NodeCertFile), filepath.Join(dir, NodeKeyFile))
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return nil, fmt.Errorf("paros/security: %s is not signed by this cell's CA: %w", NodeCertFile, err)
	}
	id, err := NodeIDOf(leaf)
	if err != nil {
		return nil, err
	}
	pair.Leaf = leaf
	return &Node{CA: ca, Cert: pair, NodeID: id, pool: pool}, nil
}

// ServerConfig is the TLS a machine serves with: TLS 1.3, its certificate,
// and client certificates verified against the CA when presented (peers
// present theirs; clients authenticate with tokens instead).
func (n *Node) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{n.Cert},
		ClientAuth:   tls.VerifyClientCertIfGiven,
		ClientCAs:    n.pool,
	}
}

// PeerConfig is the TLS a machine dials a peer with: its own certificate
// (mutual TLS), and the peer's certificate verified against the CA and
// required to name node expect. Peers are known by node id, so the id is
// what is checked; the address the peer is dialled at is not (a machine
// may advertise a name its certificate does not list). expect 0 accepts
// any node of this cell: cell formation dials addresses before it knows
// their ids.
func (n *Node) PeerConfig(expect uint64) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{n.Cert},
		RootCAs:      n.pool,
		// Chain and node id are verified below, by VerifyConnection.
		InsecureSkipVerify: true, //nolint:gosec // verified in VerifyConnection
		VerifyConnection: func(cs tls.ConnectionState) error {
			return verifyNode(cs, n.pool, expect)
		},
	}
}

// ErrWrongNode: a peer's certificate is genuine but names another node.
var ErrWrongNode = errors.New("paros/security: the peer's certificate names another node")

func verifyNode(cs tls.ConnectionState, pool *x509.CertPool, expect uint64) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("paros/security: the peer presented no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	leaf := cs.PeerCertificates[0]
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return fmt.Errorf("paros/security: the peer's certificate: %w", err)
	}
	id, err := NodeIDOf(leaf)
	if err != nil {
		return err
	}
	if expect != 0 && id != expect {
		return fmt.Errorf("%w: %016x, want %016x", ErrWrongNode, id, expect)
	}
	return nil
}

// ClientConfig is the TLS a client dials a cell with: the CA certificate
// as the only root, server names verified as usual.
func ClientConfig(caPEM []byte) (*tls.Config, error) {
	cert, err := ParseCertPEM(caPEM)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: pool}, nil
}

// ClientConfigFile is ClientConfig over a ca.crt file.
func ClientConfigFile(path string) (*tls.Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ClientConfig(raw)
}

// PeerNodeID returns the node id of a verified client certificate of this
// cell (a peer machine's), or ErrNoNodeID when the connection presented
// none or one that names no node.
func PeerNodeID(cs tls.ConnectionState) (uint64, error) {
	if len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return 0, ErrNoNodeID
	}
	return NodeIDOf(cs.VerifiedChains[0][0])
}
