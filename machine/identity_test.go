// This file checks where a machine's identity comes from
// (docs/guide/security.md): with credentials, a new machine takes its node id
// from its certificate; a later start under a certificate naming another node
// is refused with ErrCertificateMismatch, and so is a data dir first started
// insecure (a random id) once it is given a certificate; the record's own
// certificate starts it again. It opens real machines (Pebble stores in a
// temporary dir) with credentials from a fresh CA.
package machine

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/parosdb/paros/security"
)

// nodeCreds issues a certificate for id under ca into a new dir and loads
// it.
func nodeCreds(t *testing.T, ca *security.CA, id uint64) *security.Node {
	t.Helper()
	certPEM, keyPEM, err := ca.IssueNode(id, []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := (&security.CA{Cert: ca.Cert}).WriteCA(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, security.NodeCertFile), certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, security.NodeKeyFile), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := security.LoadNode(dir)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func openClose(t *testing.T, cfg Config) (uint64, error) {
	t.Helper()
	m, err := Open(cfg)
	if err != nil {
		return 0, err
	}
	id := m.NodeID()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	return id, nil
}

func TestIdentityComesFromTheCertificate(t *testing.T) {
	// Arrange: a CA and two machines' credentials.
	ca, err := security.NewCA("test")
	if err != nil {
		t.Fatal(err)
	}
	a, b := nodeCreds(t, ca, 0xa11ce), nodeCreds(t, ca, 0xb0b)
	data := t.TempDir()

	// Act and check: the first start takes a's id; b's certificate is
	// refused; a's starts it again; insecure mode keeps the record's id.
	if id, err := openClose(t, Config{DataDir: data, TLS: a}); err != nil || id != 0xa11ce {
		t.Fatalf("first start under a's certificate: node %x, %v; want a11ce", id, err)
	}
	if _, err := openClose(t, Config{DataDir: data, TLS: b}); !errors.Is(err, ErrCertificateMismatch) {
		t.Fatalf("a start under b's certificate: %v, want ErrCertificateMismatch", err)
	}
	if id, err := openClose(t, Config{DataDir: data, TLS: a}); err != nil || id != 0xa11ce {
		t.Fatalf("a restart under a's certificate: node %x, %v", id, err)
	}
	if id, err := openClose(t, Config{DataDir: data}); err != nil || id != 0xa11ce {
		t.Fatalf("an insecure restart: node %x, %v", id, err)
	}
}

func TestAnInsecureIdentityIsNotAdoptedByACertificate(t *testing.T) {
	// Arrange: a data dir first started insecure (a random node id).
	ca, err := security.NewCA("test")
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	random, err := openClose(t, Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}

	// Act and check: a certificate for another id is refused; one issued
	// for the record's id (paros cert node --node-id) is taken.
	if _, err := openClose(t, Config{DataDir: data, TLS: nodeCreds(t, ca, random^1)}); !errors.Is(err, ErrCertificateMismatch) {
		t.Fatalf("a certificate for another id: %v, want ErrCertificateMismatch", err)
	}
	if id, err := openClose(t, Config{DataDir: data, TLS: nodeCreds(t, ca, random)}); err != nil || id != random {
		t.Fatalf("a certificate for the record's id: node %x, %v", id, err)
	}
}
