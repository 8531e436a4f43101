// This file checks the configuration file: TOML over the defaults, every
// unknown key refused (at the top and in [trust]), and each field validated
// (listen address, expiry at least three heartbeats, seeds as
// http://host:port, a known trust policy, allowed keys that parse).
package mesh

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAConfigurationFileParsesOverTheDefaults(t *testing.T) {
	// Arrange.
	src := `
name = "desk"
repository = "paros"
listen = "127.0.0.1:0"
heartbeat_seconds = 1
expiry_seconds = 3
seeds = ["127.0.0.1:7742", "http://127.0.0.1:7742"]
persist = false
[trust]
policy = "tofu"
allow = ["` + testKey(t, 1).PK + `"]
`
	// Act.
	cfg, err := ParseConfig([]byte(src))

	// Check.
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Heartbeat().Seconds() != 1 || cfg.Expiry().Seconds() != 3 || cfg.PersistOn() || cfg.Trust.Policy != "tofu" {
		t.Fatalf("parsed %+v", cfg)
	}
	if seeds := cfg.NormalizedSeeds(); len(seeds) != 1 || seeds[0] != "http://127.0.0.1:7742" {
		t.Fatalf("seeds %v, want one normalized", seeds)
	}
	def, found, err := LoadConfig(filepath.Join(t.TempDir(), "none.toml"))
	if err != nil || found || def.Listen != DefaultListen || def.ExpirySeconds != 30 || !def.PersistOn() {
		t.Fatalf("missing file: %+v found=%v err=%v, want the defaults", def, found, err)
	}
}

func TestAConfigurationIsRefusedWhenItIsWrong(t *testing.T) {
	cases := map[string]string{
		"unknown key":             "heartbeat = 5",
		"unknown key in trust":    "[trust]\npolicy = \"tofu\"\nalow = []",
		"unknown table":           "[cooperation]\nenabled = true",
		"expiry under 3 beats":    "heartbeat_seconds = 5\nexpiry_seconds = 10",
		"zero heartbeat":          "heartbeat_seconds = 0",
		"listen without port":     "listen = \"localhost\"",
		"seed that is not http":   "seeds = [\"https://x:1\"]",
		"seed without port":       "seeds = [\"http://x\"]",
		"unknown policy":          "[trust]\npolicy = \"everyone\"",
		"allowed key that is bad": "[trust]\nallow = [\"abc\"]",
		"not TOML":                "= =",
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			// Act.
			_, err := ParseConfig([]byte(src))

			// Check.
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("err = %v, want ErrConfig", err)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "mesh.toml")
	os.WriteFile(path, []byte("typo_key = 1\n"), 0o600)
	if _, _, err := LoadConfig(path); err == nil || !strings.Contains(err.Error(), "typo_key") {
		t.Fatalf("LoadConfig error %v does not name the unknown key", err)
	}
}
