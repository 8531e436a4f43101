package election

import (
	"time"

	"github.com/parosdb/paros/core/journal"
)

// Defaults of an Election.
const (
	DefaultLease        = 3 * time.Second
	DefaultRenewEvery   = time.Second
	DefaultCompactAfter = 64
)

const (
	// readWaitMax is the longest long-poll of one read (journal.WaitMsMax).
	readWaitMax = time.Duration(journal.WaitMsMax) * time.Millisecond
	// retryPause is the pause before a call that sent nothing, or whose
	// truncation was ambiguous, is sent again.
	retryPause = 50 * time.Millisecond
)

// Option configures an Election.
type Option func(*options)

type options struct {
	iface        string
	lease        time.Duration
	renewEvery   time.Duration
	jitter       func() time.Duration
	uuid         journal.LeaderUUID
	compactAfter int
}

// Interface is what the Election publishes when it campaigns and renews:
// how the leader is reached (an address, say). Default "".
func Interface(s string) Option { return func(o *options) { o.iface = s } }

// Lease is how long a watcher waits without seeing a renewal (by its own
// clock) before it campaigns, and how long a leader keeps leading without
// a renewal of its own landing (default DefaultLease). A liveness hint
// only.
func Lease(d time.Duration) Option { return func(o *options) { o.lease = d } }

// RenewEvery is the period of a leader's renewals (default
// DefaultRenewEvery). One at or above the lease is taken as a third of it.
func RenewEvery(d time.Duration) Option { return func(o *options) { o.renewEvery = d } }

// Jitter is drawn each time a watcher's campaign deadline moves and added
// to it, so that watchers do not all campaign at once (default: none; the
// library draws no randomness). Only the first campaign for a term wins
// anyway: jitter only spares appends.
func Jitter(f func() time.Duration) Option { return func(o *options) { o.jitter = f } }

// UUID is the candidate's uuid: what its campaigns carry and what the
// winner installs with SetLeader on the journal it governs (default: a
// fresh one from crypto/rand, client.RandomUUIDs). It must be unique to
// this Election: an Election leads at most once, and a new candidacy takes
// a new Election with a new uuid, so that no stale write fenced by an
// earlier term is ever admitted again.
func UUID(u journal.LeaderUUID) Option { return func(o *options) { o.uuid = u } }

// CompactAfter is how many records above the journal's floor the leader
// lets pile up before it truncates the election journal up to its latest
// renewal (default DefaultCompactAfter; 0 never truncates).
func CompactAfter(n int) Option { return func(o *options) { o.compactAfter = n } }
