// This file checks identities: ids parsed off the wire must have exactly
// their documented shape (three dash-separated lowercase hex parts of
// 32/16/16 for a stream, 32/16 for a runtime key), derivations have their
// widths, and the key file is created with mode 0600 in a 0700 directory,
// read back as the same key, and refused when others can read it or its
// schema is wrong.
package mesh

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStreamIDsAreParsedStrictly(t *testing.T) {
	good := strings.Repeat("a", 32) + "-" + strings.Repeat("0", 16) + "-" + strings.Repeat("f", 16)
	bad := []string{
		"",
		strings.ToUpper(good),
		good + "-",
		good[:65],
		strings.Replace(good, "-", "_", 1),
		strings.Repeat("a", 32) + "-" + strings.Repeat("0", 17) + "-" + strings.Repeat("f", 15),
		strings.Repeat("g", 32) + "-" + strings.Repeat("0", 16) + "-" + strings.Repeat("f", 16),
		strings.Repeat("a", 32) + "--" + strings.Repeat("0", 16),
	}
	if s, err := ParseStreamID(good); err != nil || s.Node() != NodeID(strings.Repeat("a", 32)) || s.Instance() != strings.Repeat("f", 16) {
		t.Fatalf("ParseStreamID(good) = %v, %v", s, err)
	}
	for _, b := range bad {
		if _, err := ParseStreamID(b); err == nil {
			t.Errorf("ParseStreamID(%q) accepted", b)
		}
	}
	if _, err := ParseRuntimeKey(good); err == nil {
		t.Errorf("a stream id parsed as a runtime key")
	}
	if _, err := ParseRuntimeKey(string(StreamID(good).Runtime())); err != nil {
		t.Errorf("a stream's runtime key does not parse: %v", err)
	}
}

func TestDerivedIDsHaveTheirWidths(t *testing.T) {
	k := testKey(t, 7)
	inst, _ := NewInstance(rand.Reader)
	repo, _ := RepositoryFromRoots([]string{"b", "a", "a"})
	repo2, _ := RepositoryFromRoots([]string{"a", "b"})
	checks := []struct {
		name string
		v    string
		n    int
	}{
		{"node", string(k.Node), 32}, {"runtime", RuntimeOf("/src/x"), 16}, {"instance", inst, 16},
		{"repository", repo, 32}, {"declared repository", RepositoryDeclared("x"), 32}, {"handover", HandoverID("b"), 32},
	}
	for _, c := range checks {
		if !isLowerHex(c.v, c.n) {
			t.Errorf("%s %q is not %d lowercase hex", c.name, c.v, c.n)
		}
	}
	if repo != repo2 {
		t.Errorf("root order or repeats changed the repository id")
	}
	if RuntimeOf("/src/a") == RuntimeOf("/src/b") {
		t.Errorf("two checkouts share a runtime")
	}
}

func TestTheKeyFileIsPrivateAndStable(t *testing.T) {
	// Arrange.
	dir := filepath.Join(t.TempDir(), "state")

	// Act.
	k1, created, err := LoadOrCreateKey(dir, rand.Reader)
	if err != nil || !created {
		t.Fatalf("create: %v created=%v", err, created)
	}
	k2, created2, err := LoadOrCreateKey(dir, rand.Reader)

	// Check.
	if err != nil || created2 || k1.PK != k2.PK {
		t.Fatalf("reload gave another key or an error: %v", err)
	}
	fi, _ := os.Stat(KeyPath(dir))
	di, _ := os.Stat(dir)
	if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
		t.Fatalf("modes file %v dir %v, want 0600 and 0700", fi.Mode().Perm(), di.Mode().Perm())
	}
	os.Chmod(KeyPath(dir), 0o644)
	if _, _, err := LoadOrCreateKey(dir, rand.Reader); err == nil {
		t.Fatalf("a world-readable key file was used")
	}
	os.Chmod(KeyPath(dir), 0o600)
	os.WriteFile(KeyPath(dir), []byte(`{"schema":"other/v9","seed":"","pk":"","node":""}`), 0o600)
	if _, _, err := LoadOrCreateKey(dir, rand.Reader); err == nil {
		t.Fatalf("a key file of another schema was used")
	}
}
