package mesh

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// FileConfig is the mesh configuration file, TOML, usually
// <checkout>/.paros/mesh.toml. Every key is optional; an unknown key is an
// error, so a typo is never silently ignored.
//
//	listen            = "127.0.0.1:7741"  # where serve listens (port 0: any free port)
//	name              = "desk"            # shown to peers
//	repository        = "paros"           # declared repository; default: the git root commits
//	heartbeat_seconds = 5
//	expiry_seconds    = 30                # at least 3 heartbeats
//	seeds             = ["http://127.0.0.1:7742"]  # always dialed
//	persist           = true              # keep the journal in the state dir
//
//	[trust]
//	policy = "deny_unknown"               # or "allowlist", "tofu"
//	allow  = ["<public key hex>"]         # trusted under every policy
type FileConfig struct {
	Listen           string      `toml:"listen"`
	Name             string      `toml:"name"`
	Repository       string      `toml:"repository"`
	HeartbeatSeconds int         `toml:"heartbeat_seconds"`
	ExpirySeconds    int         `toml:"expiry_seconds"`
	Seeds            []string    `toml:"seeds"`
	Persist          *bool       `toml:"persist"`
	Trust            TrustConfig `toml:"trust"`
}

// TrustConfig is the [trust] table.
type TrustConfig struct {
	Policy string   `toml:"policy"`
	Allow  []string `toml:"allow"`
}

// Configuration defaults.
const (
	DefaultListen           = "127.0.0.1:7741"
	DefaultHeartbeatSeconds = 5
	DefaultExpirySeconds    = 30
	configSeedsMax          = 64
)

// ErrConfig marks a configuration that does not parse or validate.
var ErrConfig = errors.New("paros/mesh: bad configuration")

// DefaultConfig returns the configuration used when there is no file.
func DefaultConfig() FileConfig {
	persist := true
	return FileConfig{
		Listen: DefaultListen, HeartbeatSeconds: DefaultHeartbeatSeconds, ExpirySeconds: DefaultExpirySeconds,
		Persist: &persist, Trust: TrustConfig{Policy: string(TrustDenyUnknown)},
	}
}

// ParseConfig reads TOML over the defaults, refuses unknown keys and validates.
func ParseConfig(data []byte) (FileConfig, error) {
	cfg := DefaultConfig()
	md, err := toml.Decode(string(data), &cfg)
	if err != nil {
		return FileConfig{}, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		return FileConfig{}, fmt.Errorf("%w: unknown key(s) %s", ErrConfig, strings.Join(keys, ", "))
	}
	return cfg, cfg.Validate()
}

// LoadConfig reads path; a missing file gives the defaults and found=false.
func LoadConfig(path string) (cfg FileConfig, found bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return DefaultConfig(), false, nil
	}
	if err != nil {
		return FileConfig{}, false, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	cfg, err = ParseConfig(data)
	if err != nil {
		return FileConfig{}, true, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, true, nil
}

// Validate checks every field.
func (c FileConfig) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
	}
	if _, port, err := net.SplitHostPort(c.Listen); err != nil || port == "" {
		return bad("listen %q is not host:port", c.Listen)
	}
	if checkLine("name", c.Name, cardNameBytesMax) != nil {
		return bad("name must be one line of at most %d bytes", cardNameBytesMax)
	}
	if checkLine("repository", c.Repository, 256) != nil {
		return bad("repository must be one line of at most 256 bytes")
	}
	if c.HeartbeatSeconds < 1 {
		return bad("heartbeat_seconds must be at least 1")
	}
	if c.ExpirySeconds < 3*c.HeartbeatSeconds {
		return bad("expiry_seconds (%d) must be at least 3 heartbeats (%d)", c.ExpirySeconds, 3*c.HeartbeatSeconds)
	}
	if len(c.Seeds) > configSeedsMax {
		return bad("at most %d seeds", configSeedsMax)
	}
	for _, s := range c.Seeds {
		if err := checkSeed(s); err != nil {
			return bad("seed %q: %v", s, err)
		}
	}
	if _, err := ParseTrustPolicy(c.Trust.Policy); err != nil {
		return bad("%v", err)
	}
	for _, k := range c.Trust.Allow {
		if _, err := ParsePublicKey(k); err != nil {
			return bad("trust.allow %q is not a public key (see `paros mesh identity`)", k)
		}
	}
	return nil
}

// checkSeed accepts http://host:port or host:port.
func checkSeed(s string) error {
	u, err := url.Parse(normalizeEndpoint(s))
	if err != nil {
		return err
	}
	if u.Scheme != "http" || u.Host == "" || u.Port() == "" || (u.Path != "" && u.Path != "/") {
		return errors.New("want http://host:port")
	}
	return nil
}

// Heartbeat returns the heartbeat as a duration.
func (c FileConfig) Heartbeat() time.Duration { return time.Duration(c.HeartbeatSeconds) * time.Second }

// Expiry returns the expiry as a duration.
func (c FileConfig) Expiry() time.Duration { return time.Duration(c.ExpirySeconds) * time.Second }

// PersistOn reports whether the journal is kept on disk.
func (c FileConfig) PersistOn() bool { return c.Persist == nil || *c.Persist }

// NormalizedSeeds returns the seeds as http://host:port, deduplicated.
func (c FileConfig) NormalizedSeeds() []string {
	var out []string
	for _, s := range c.Seeds {
		out = append(out, normalizeEndpoint(s))
	}
	slices.Sort(out)
	return slices.Compact(out)
}
