package mesh

import (
	"fmt"
	"maps"
	"slices"
	"sync"
)

// TrustPolicy decides which public keys a runtime trusts. This machine's
// own key, and every key in the allow list, are trusted under every policy.
type TrustPolicy string

const (
	// TrustDenyUnknown trusts only the own and allowed keys; other keys are
	// observed (listed for the operator) and trusted for nothing. The default.
	TrustDenyUnknown TrustPolicy = "deny_unknown"
	// TrustAllowlist trusts only the own and allowed keys and records nothing else.
	TrustAllowlist TrustPolicy = "allowlist"
	// TrustOnFirstUse trusts a node's first key and pins it: the same node id
	// later seen with another key is rejected, and the rejection sticks.
	// Node ids are digests of keys, so a mismatch means a forged identity.
	TrustOnFirstUse TrustPolicy = "tofu"
)

// trustedKeysMax bounds the observed and pinned key tables.
const trustedKeysMax = 4096

// ParseTrustPolicy checks a policy word.
func ParseTrustPolicy(s string) (TrustPolicy, error) {
	switch p := TrustPolicy(s); p {
	case TrustDenyUnknown, TrustAllowlist, TrustOnFirstUse:
		return p, nil
	case "":
		return TrustDenyUnknown, nil
	}
	return "", fmt.Errorf("paros/mesh: unknown trust policy %q (deny_unknown, allowlist, tofu)", s)
}

// Trust answers "is this key trusted?" for ingest, beats and link admission.
// It is safe for concurrent use.
type Trust struct {
	policy TrustPolicy
	own    string
	allow  map[string]bool

	mu       sync.Mutex
	pinned   map[NodeID]string // tofu: node -> first key
	rejected map[string]bool   // tofu: keys that lost to a pin; sticky
	observed map[string]bool   // deny_unknown: untrusted keys seen
}

// NewTrust builds a trust table. allow holds hex public keys.
func NewTrust(policy TrustPolicy, ownPK string, allow []string) (*Trust, error) {
	if _, err := ParseTrustPolicy(string(policy)); err != nil {
		return nil, err
	}
	if policy == "" {
		policy = TrustDenyUnknown
	}
	t := &Trust{policy: policy, own: ownPK, allow: map[string]bool{}, pinned: map[NodeID]string{},
		rejected: map[string]bool{}, observed: map[string]bool{}}
	for _, k := range allow {
		if _, err := ParsePublicKey(k); err != nil {
			return nil, fmt.Errorf("paros/mesh: trust.allow: %w", err)
		}
		t.allow[k] = true
	}
	return t, nil
}

// Policy returns the policy.
func (t *Trust) Policy() TrustPolicy { return t.policy }

// Trusted reports whether pk (hex) is trusted, recording what the policy
// records.
func (t *Trust) Trusted(pk string) bool {
	if pk == t.own || t.allow[pk] {
		return true
	}
	key, err := ParsePublicKey(pk)
	if err != nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch t.policy {
	case TrustOnFirstUse:
		if t.rejected[pk] {
			return false
		}
		node := NodeOf(key)
		first, ok := t.pinned[node]
		if !ok {
			if len(t.pinned) >= trustedKeysMax {
				return false
			}
			t.pinned[node] = pk
			return true
		}
		if first != pk {
			if len(t.rejected) < trustedKeysMax {
				t.rejected[pk] = true
			}
			return false
		}
		return true
	case TrustDenyUnknown:
		if len(t.observed) < trustedKeysMax {
			t.observed[pk] = true
		}
	}
	return false
}

// pin records pk as node's first key under tofu; tests use it to stage a
// node id that later appears with another key.
func (t *Trust) pin(node NodeID, pk string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pinned[node] = pk
}

// Observed returns the untrusted keys seen under deny_unknown, sorted.
func (t *Trust) Observed() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Sorted(maps.Keys(t.observed))
}
