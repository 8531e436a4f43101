package server

import (
	"crypto/sha256"
	"fmt"
	"sync"
	"time"

	"github.com/parosdb/paros/security"
)

// tokenCacheEntriesMax bounds the cache of verified tokens. A cell's
// clients hold a few tokens each; 4,096 distinct ones is many cells' worth.
// When full the cache is reset: a cold entry costs one Ed25519 verify
// (tens of microseconds), so the worst case is today's cost, not an error.
const tokenCacheEntriesMax = 4096

// tokenCache remembers the claims of tokens already verified, keyed by the
// token's SHA-256 (a key is 32 bytes whatever the token's size), so a hot
// client does not pay a signature check per call. Expiry is checked at
// every use.
type tokenCache struct {
	mu sync.Mutex
	// Invariant: len(claims) <= tokenCacheEntriesMax.
	claims map[[sha256.Size]byte]security.Claims
}

func newTokenCache() *tokenCache {
	return &tokenCache{claims: make(map[[sha256.Size]byte]security.Claims)}
}

// verify returns tok's claims, from the cache or from ca.VerifyToken.
// Errors: security.ErrBadToken, security.ErrExpiredToken.
func (c *tokenCache) verify(ca *security.CA, tok string, now time.Time) (security.Claims, error) {
	if len(tok) > security.TokenBytesMax {
		return security.Claims{}, security.ErrBadToken
	}
	key := sha256.Sum256([]byte(tok))
	c.mu.Lock()
	claims, hit := c.claims[key]
	if hit && now.Unix() >= claims.Expires {
		delete(c.claims, key) // VerifyToken below words the expiry
		hit = false
	}
	c.mu.Unlock()
	if hit {
		return claims, nil
	}
	claims, err := ca.VerifyToken(tok, now)
	if err != nil {
		return security.Claims{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.claims) >= tokenCacheEntriesMax {
		clear(c.claims)
	}
	c.claims[key] = claims
	if len(c.claims) > tokenCacheEntriesMax {
		panic(fmt.Sprintf("paros/server: %d cached tokens, at most %d", len(c.claims), tokenCacheEntriesMax))
	}
	return claims, nil
}
