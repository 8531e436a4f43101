package mesh

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// The identity file holds this user's key on this machine:
//
//	<state dir>/node.json, mode 0600, in a directory of mode 0700
//	{"schema":"paros-mesh-identity/v1","seed":<64 hex>,"pk":<64 hex>,"node":<32 hex>}
//
// The state dir is $XDG_STATE_HOME/paros/mesh, else ~/.local/state/paros/mesh.
// The schema word is frozen.
const (
	identitySchema = "paros-mesh-identity/v1"
	identityFile   = "node.json"
)

type identityJSON struct {
	Schema string `json:"schema"`
	Seed   string `json:"seed"`
	PK     string `json:"pk"`
	Node   NodeID `json:"node"`
}

// StateDir returns the mesh state directory for this user.
func StateDir() (string, error) {
	if x := os.Getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "paros", "mesh"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("paros/mesh: no state dir: %w", err)
	}
	return filepath.Join(home, ".local", "state", "paros", "mesh"), nil
}

// KeyPath returns the identity file of a state dir.
func KeyPath(stateDir string) string { return filepath.Join(stateDir, identityFile) }

// LoadOrCreateKey reads the key in stateDir, creating it (from rnd) if there
// is none. It refuses a key file readable by group or others.
func LoadOrCreateKey(stateDir string, rnd io.Reader) (key *Key, created bool, err error) {
	path := KeyPath(stateDir)
	key, err = loadKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, false, err
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, false, fmt.Errorf("paros/mesh: state dir: %w", err)
	}
	key, err = GenerateKey(rnd)
	if err != nil {
		return nil, false, err
	}
	data, _ := json.MarshalIndent(identityJSON{Schema: identitySchema, Seed: hex.EncodeToString(key.Seed()),
		PK: key.PK, Node: key.Node}, "", "  ")
	// Write beside the file, then link it into place: a reader never sees
	// a half-written key, and of two processes creating one at once, the
	// second loads the first's.
	tmp, err := os.CreateTemp(stateDir, ".node-*.json")
	if err != nil {
		return nil, false, fmt.Errorf("paros/mesh: create identity: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(append(data, '\n'))
	cherr := tmp.Chmod(0o600)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, cherr, serr, cerr); err != nil {
		return nil, false, fmt.Errorf("paros/mesh: write identity: %w", err)
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
		key, err = loadKey(path)
		return key, false, err
	} else if err != nil {
		return nil, false, fmt.Errorf("paros/mesh: create identity: %w", err)
	}
	return key, true, nil
}

func loadKey(path string) (*Key, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("paros/mesh: %s has mode %v; it holds a secret key: chmod 600 it", path, fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var id identityJSON
	if err := strictDecode(data, &id); err != nil {
		return nil, fmt.Errorf("paros/mesh: %s: %w", path, err)
	}
	if id.Schema != identitySchema {
		return nil, fmt.Errorf("paros/mesh: %s: schema %q, want %q", path, id.Schema, identitySchema)
	}
	seed, err := hex.DecodeString(id.Seed)
	if err != nil {
		return nil, fmt.Errorf("paros/mesh: %s: seed: %w", path, err)
	}
	key, err := NewKey(seed)
	if err != nil {
		return nil, fmt.Errorf("paros/mesh: %s: %w", path, err)
	}
	if key.PK != id.PK {
		return nil, fmt.Errorf("paros/mesh: %s: pk does not match the seed", path)
	}
	return key, nil
}
