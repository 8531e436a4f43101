// This file checks the credential commands in process (the root command,
// its arguments and its output): `paros cert ca` writes a CA with a 0600
// key and refuses to overwrite it; `paros cert node` writes a machine's
// ca.crt (no key), node.crt and a 0600 node.key that security.LoadNode
// accepts, naming the printed (or the given) node id, and refuses to write
// beside the CA key; `paros cert token` prints a token the CA verifies,
// with the scope and operations asked for, and wants exactly one scope;
// `paros serve` without --tls or --insecure refuses to start (exit 2,
// naming both flags).
package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/security"
)

// runParos runs the root command with args and returns stdout and the
// exit code main would use.
func runParos(t *testing.T, args ...string) (string, int, error) {
	t.Helper()
	root := newRoot()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.Execute()
	code := 0
	if err != nil {
		code = 1
		var ec interface{ ExitCode() int }
		if errors.As(err, &ec) {
			code = ec.ExitCode()
		}
	}
	return out.String(), code, err
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func TestCertCAThenNodeThenToken(t *testing.T) {
	// Arrange.
	dir := t.TempDir()
	caDir, nodeDir := filepath.Join(dir, "ca"), filepath.Join(dir, "m1")

	// Act and check: the CA.
	if _, code, err := runParos(t, "cert", "ca", "--dir", caDir); code != 0 {
		t.Fatalf("cert ca: exit %d: %v", code, err)
	}
	if m := mode(t, filepath.Join(caDir, security.CAKeyFile)); m != 0o600 {
		t.Fatalf("ca.key mode %v, want 0600", m)
	}
	if _, code, err := runParos(t, "cert", "ca", "--dir", caDir); code != exitBadConfig || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Fatalf("a second cert ca: exit %d: %v; want 2, refusing to overwrite", code, err)
	}

	// A machine's credentials, under a random id.
	out, code, err := runParos(t, "cert", "node", "--ca", caDir, "--out", nodeDir, "--host", "127.0.0.1,localhost")
	if code != 0 {
		t.Fatalf("cert node: exit %d: %v", code, err)
	}
	printed, err := strconv.ParseUint(strings.TrimSpace(out), 16, 64)
	if err != nil {
		t.Fatalf("cert node printed %q, want a hex node id", out)
	}
	n, err := security.LoadNode(nodeDir)
	if err != nil || n.NodeID != printed {
		t.Fatalf("LoadNode: %v, node %x; want the printed %x", err, n.NodeID, printed)
	}
	if m := mode(t, filepath.Join(nodeDir, security.NodeKeyFile)); m != 0o600 {
		t.Fatalf("node.key mode %v, want 0600", m)
	}
	if _, code, _ := runParos(t, "cert", "node", "--ca", caDir, "--out", nodeDir, "--host", "127.0.0.1"); code != exitBadConfig {
		t.Fatalf("cert node over existing credentials: exit %d, want 2", code)
	}
	if _, code, _ := runParos(t, "cert", "node", "--ca", caDir, "--out", caDir, "--host", "127.0.0.1"); code != exitBadConfig {
		t.Fatalf("cert node into the CA's dir: exit %d, want 2", code)
	}
	// ... and under a given id.
	out, code, err = runParos(t, "cert", "node", "--ca", caDir, "--out", filepath.Join(dir, "m2"), "--host", "10.0.0.2", "--node-id", "00000000000000ab")
	if code != 0 || strings.TrimSpace(out) != "00000000000000ab" {
		t.Fatalf("cert node --node-id ab: exit %d, %q, %v", code, out, err)
	}

	// Tokens: every journal with admin; one journal read-only.
	ca, err := security.LoadCA(caDir)
	if err != nil {
		t.Fatal(err)
	}
	out, code, err = runParos(t, "cert", "token", "--ca", caDir, "--subject", "ops", "--all", "--ops", "read,write,admin", "--ttl", "1h")
	if code != 0 {
		t.Fatalf("cert token --all: exit %d: %v", code, err)
	}
	claims, err := ca.VerifyToken(strings.TrimSpace(out), time.Now())
	if err != nil || claims.Subject != "ops" || !claims.Allows(security.OpAdmin, journal.ID{}) {
		t.Fatalf("the --all token: %+v, %v", claims, err)
	}
	j := journal.ID{Tenant: 0x7, Journal: 0x9}
	out, code, err = runParos(t, "cert", "token", "--ca", caDir, "--subject", "reader", "--journal", j.String(), "--ops", "read")
	if code != 0 {
		t.Fatalf("cert token --journal: exit %d: %v", code, err)
	}
	claims, err = ca.VerifyToken(strings.TrimSpace(out), time.Now())
	if err != nil || !claims.Allows(security.OpRead, j) || claims.Allows(security.OpWrite, j) ||
		claims.AllowsAny(journal.ID{Tenant: 0x7, Journal: 0xa}) {
		t.Fatalf("the --journal token: %+v, %v", claims, err)
	}
	if _, code, _ := runParos(t, "cert", "token", "--ca", caDir, "--subject", "x", "--all", "--tenant", "7", "--ops", "read"); code != exitBadConfig {
		t.Fatalf("two scopes: exit %d, want 2", code)
	}
	if _, code, _ := runParos(t, "cert", "token", "--ca", nodeDir, "--subject", "x", "--all", "--ops", "read"); code != exitBadConfig {
		t.Fatalf("a token from a dir without the CA key: exit %d, want 2", code)
	}
}

func TestServeWantsTLSOrInsecure(t *testing.T) {
	// Arrange, act.
	_, code, err := runParos(t, "serve", "--data", t.TempDir(), "--listen", "127.0.0.1:0")

	// Check.
	if code != exitBadConfig || !strings.Contains(err.Error(), "--tls") || !strings.Contains(err.Error(), "--insecure") {
		t.Fatalf("serve without credentials: exit %d: %v; want 2 naming --tls and --insecure", code, err)
	}
}
