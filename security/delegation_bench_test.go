package security

// What signing a proxy delegation would cost (docs/guide/security.md, "Proxies
// are trusted with their ballot"): one Ed25519 signature by the leader over
// a batch digest, and one verification per acceptor, per delegated batch.

import (
	"crypto/ed25519"
	"crypto/sha256"
	"testing"
)

// delegationDigest stands for a batch's digest: a hash of (journal,
// ballot, the slots and their values' fingerprints).
func delegationDigest() []byte {
	d := sha256.Sum256([]byte("journal|ballot|slot:fingerprint x 64"))
	return d[:]
}

func BenchmarkDelegationSign(b *testing.B) {
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		b.Fatal(err)
	}
	msg := delegationDigest()
	for b.Loop() {
		_ = ed25519.Sign(priv, msg)
	}
}

func BenchmarkDelegationVerify(b *testing.B) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		b.Fatal(err)
	}
	msg := delegationDigest()
	sig := ed25519.Sign(priv, msg)
	for b.Loop() {
		if !ed25519.Verify(pub, msg, sig) {
			b.Fatal("verify failed")
		}
	}
}
