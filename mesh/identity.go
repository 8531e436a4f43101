package mesh

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Identities. Every id is lowercase hex of a fixed width, checked whenever it
// is parsed, because ids arrive off the wire:
//
//	name         width  derivation
//	node id      32     SHA-256(raw Ed25519 public key)[:16]; one key per user and machine
//	runtime      16     SHA-256("paros-mesh-runtime/v1\n" + checkout id)[:8]; one per checkout
//	instance     16     8 random bytes drawn at each process start
//	stream       66     <node>-<runtime>-<instance>: one process run of one runtime
//	runtime key  49     <node>-<runtime>: a runtime across its restarts
//	repository   32     SHA-256("paros-mesh-repository/v1\n" + "roots\n" + sorted roots joined by "\n")[:16],
//	                    or SHA-256("paros-mesh-repository/v1\n" + "declared\n" + value)[:16]
//	handover id  32     SHA-256(body)[:16]
//
// The domain prefixes are frozen; they are this project's own and do not
// interoperate with the original implementation.
const (
	domainRuntime    = "paros-mesh-runtime/v1\n"
	domainRepository = "paros-mesh-repository/v1\n"
	domainEvent      = "paros-mesh-event/v1\n"
	domainBeat       = "paros-mesh-beat/v1\n"

	nodeHexLen     = 32
	runtimeHexLen  = 16
	instanceHexLen = 16
	streamLen      = nodeHexLen + 1 + runtimeHexLen + 1 + instanceHexLen
	runtimeKeyLen  = nodeHexLen + 1 + runtimeHexLen
	repoHexLen     = 32
	handoverHexLen = 32
	publicKeyHex   = 2 * ed25519.PublicKeySize
	signatureHex   = 2 * ed25519.SignatureSize
)

// ErrIdentity marks an id or key that does not parse.
var ErrIdentity = errors.New("paros/mesh: bad identity")

// NodeID names one key, that is one user on one machine.
type NodeID string

// StreamID names one process run of one runtime: <node>-<runtime>-<instance>.
type StreamID string

// RuntimeKey names a runtime across restarts: <node>-<runtime>.
type RuntimeKey string

// isLowerHex reports whether s is exactly n lowercase hex digits.
func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// ParseStreamID checks s is exactly three dash-separated parts of 32, 16 and
// 16 lowercase hex digits.
func ParseStreamID(s string) (StreamID, error) {
	parts := strings.Split(s, "-")
	if len(parts) != 3 || !isLowerHex(parts[0], nodeHexLen) || !isLowerHex(parts[1], runtimeHexLen) || !isLowerHex(parts[2], instanceHexLen) {
		return "", fmt.Errorf("%w: stream id %.80q", ErrIdentity, s)
	}
	return StreamID(s), nil
}

// ParseRuntimeKey checks s is <node>-<runtime> of widths 32 and 16.
func ParseRuntimeKey(s string) (RuntimeKey, error) {
	parts := strings.Split(s, "-")
	if len(parts) != 2 || !isLowerHex(parts[0], nodeHexLen) || !isLowerHex(parts[1], runtimeHexLen) {
		return "", fmt.Errorf("%w: runtime key %.80q", ErrIdentity, s)
	}
	return RuntimeKey(s), nil
}

// NewStreamID joins the three parts. It panics if a part has the wrong shape:
// callers build streams from ids they minted.
func NewStreamID(node NodeID, runtime, instance string) StreamID {
	s, err := ParseStreamID(string(node) + "-" + runtime + "-" + instance)
	if err != nil {
		panic(err)
	}
	return s
}

// Node returns the stream's node id. The stream must have been parsed.
func (s StreamID) Node() NodeID { return NodeID(s[:nodeHexLen]) }

// Runtime returns the stream's runtime key.
func (s StreamID) Runtime() RuntimeKey { return RuntimeKey(s[:runtimeKeyLen]) }

// Instance returns the stream's instance part.
func (s StreamID) Instance() string { return string(s[runtimeKeyLen+1:]) }

// Node returns the runtime key's node id.
func (r RuntimeKey) Node() NodeID { return NodeID(r[:nodeHexLen]) }

// NodeOf derives the node id of a public key.
func NodeOf(pk ed25519.PublicKey) NodeID {
	sum := sha256.Sum256(pk)
	return NodeID(hex.EncodeToString(sum[:nodeHexLen/2]))
}

// RuntimeOf derives the runtime id (16 hex) of a checkout id.
func RuntimeOf(checkout string) string {
	sum := sha256.Sum256([]byte(domainRuntime + checkout))
	return hex.EncodeToString(sum[:runtimeHexLen/2])
}

// NewInstance draws a fresh instance id (16 hex) from rnd.
func NewInstance(rnd io.Reader) (string, error) {
	var b [instanceHexLen / 2]byte
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return "", fmt.Errorf("paros/mesh: draw instance: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// RepositoryFromRoots derives the repository id from a repository's root
// commits; order and repeats do not matter.
func RepositoryFromRoots(roots []string) (string, error) {
	rs := slices.Clone(roots)
	slices.Sort(rs)
	rs = slices.Compact(rs)
	if len(rs) == 0 || rs[0] == "" {
		return "", fmt.Errorf("%w: no root commit; declare a repository", ErrIdentity)
	}
	sum := sha256.Sum256([]byte(domainRepository + "roots\n" + strings.Join(rs, "\n")))
	return hex.EncodeToString(sum[:repoHexLen/2]), nil
}

// RepositoryDeclared derives the repository id from a declared name.
func RepositoryDeclared(value string) string {
	sum := sha256.Sum256([]byte(domainRepository + "declared\n" + value))
	return hex.EncodeToString(sum[:repoHexLen/2])
}

// HandoverID is the id of a handover body.
func HandoverID(body string) string {
	sum := sha256.Sum256([]byte(body))
	return hex.EncodeToString(sum[:handoverHexLen/2])
}

// ParsePublicKey decodes a hex Ed25519 public key.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	if !isLowerHex(s, publicKeyHex) {
		return nil, fmt.Errorf("%w: public key", ErrIdentity)
	}
	b, _ := hex.DecodeString(s)
	return ed25519.PublicKey(b), nil
}

// parseSignature decodes a hex Ed25519 signature.
func parseSignature(s string) ([]byte, bool) {
	if !isLowerHex(s, signatureHex) {
		return nil, false
	}
	b, _ := hex.DecodeString(s)
	return b, true
}

// Key is this machine's signing key with its derived ids.
type Key struct {
	priv ed25519.PrivateKey
	// PK is the public key as lowercase hex.
	PK   string
	Node NodeID
}

// NewKey wraps an Ed25519 seed.
func NewKey(seed []byte) (*Key, error) {
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("%w: seed must be %d bytes", ErrIdentity, ed25519.SeedSize)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	pub := priv.Public().(ed25519.PublicKey)
	return &Key{priv: priv, PK: hex.EncodeToString(pub), Node: NodeOf(pub)}, nil
}

// GenerateKey draws a new key from rnd.
func GenerateKey(rnd io.Reader) (*Key, error) {
	seed := make([]byte, ed25519.SeedSize)
	if _, err := io.ReadFull(rnd, seed); err != nil {
		return nil, fmt.Errorf("paros/mesh: draw key: %w", err)
	}
	return NewKey(seed)
}

// Seed returns the key's secret seed.
func (k *Key) Seed() []byte { return k.priv.Seed() }

// Sign signs domain+msg and returns the signature as hex.
func (k *Key) Sign(domain string, msg []byte) string {
	buf := make([]byte, 0, len(domain)+len(msg))
	buf = append(append(buf, domain...), msg...)
	return hex.EncodeToString(ed25519.Sign(k.priv, buf))
}

// verifySig reports whether sigHex is pk's signature over domain+msg.
func verifySig(pk ed25519.PublicKey, domain string, msg []byte, sigHex string) bool {
	sig, ok := parseSignature(sigHex)
	if !ok {
		return false
	}
	buf := make([]byte, 0, len(domain)+len(msg))
	buf = append(append(buf, domain...), msg...)
	return ed25519.Verify(pk, buf, sig)
}

// beatBytes is what a beat's signature covers, after domainBeat.
func beatBytes(stream StreamID, beat uint64) []byte {
	return fmt.Appendf(nil, "%s\n%d", stream, beat)
}
