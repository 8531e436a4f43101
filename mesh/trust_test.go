// This file checks the trust policies (docs/guide/mesh.md, "Links and
// trust"): this machine's own key and the allowed keys are trusted under
// every policy; deny_unknown trusts nothing else and lists what it saw;
// allowlist trusts nothing else; trust on first use pins a node's first key
// and rejects, for good, another key claiming that node.
package mesh

import (
	"slices"
	"testing"
)

func TestTrustPolicies(t *testing.T) {
	own, allowed, other := testKey(t, 1), testKey(t, 2), testKey(t, 3)
	for _, p := range []TrustPolicy{TrustDenyUnknown, TrustAllowlist, TrustOnFirstUse} {
		t.Run(string(p), func(t *testing.T) {
			// Arrange.
			tr, err := NewTrust(p, own.PK, []string{allowed.PK})
			if err != nil {
				t.Fatal(err)
			}

			// Act.
			gotOwn, gotAllowed, gotOther := tr.Trusted(own.PK), tr.Trusted(allowed.PK), tr.Trusted(other.PK)

			// Check.
			if !gotOwn || !gotAllowed {
				t.Fatalf("own %v allowed %v, want both trusted", gotOwn, gotAllowed)
			}
			if gotOther != (p == TrustOnFirstUse) {
				t.Fatalf("unknown key trusted = %v under %s", gotOther, p)
			}
			if seen := tr.Observed(); (p == TrustDenyUnknown) != slices.Contains(seen, other.PK) {
				t.Fatalf("observed %v under %s", seen, p)
			}
			if tr.Trusted("not a key") {
				t.Fatalf("a malformed key was trusted")
			}
		})
	}
}

func TestTrustOnFirstUseRejectsASecondKeyForAPinnedNodeForGood(t *testing.T) {
	// Arrange: a node pinned to one key (node ids are key digests, so a
	// second key can only be staged).
	own, first, second := testKey(t, 1), testKey(t, 2), testKey(t, 3)
	tr, _ := NewTrust(TrustOnFirstUse, own.PK, nil)
	tr.pin(second.Node, first.PK)

	// Act.
	got := tr.Trusted(second.PK)
	tr.pin(second.Node, second.PK) // even if the pin moved, the rejection sticks
	again := tr.Trusted(second.PK)

	// Check.
	if got || again {
		t.Fatalf("a second key for a pinned node was trusted (%v, then %v)", got, again)
	}
}

func TestAnUnknownPolicyOrAllowedKeyIsRefused(t *testing.T) {
	if _, err := NewTrust("trust_everyone", testKey(t, 1).PK, nil); err == nil {
		t.Fatalf("an unknown policy was accepted")
	}
	if _, err := NewTrust(TrustAllowlist, testKey(t, 1).PK, []string{"zz"}); err == nil {
		t.Fatalf("a malformed allowed key was accepted")
	}
}
