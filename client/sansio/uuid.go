package sansio

import "github.com/parosdb/paros/core/journal"

// SeededUUIDs returns a deterministic uuid source for NewWriter: the
// splitmix64 sequence from seed, two draws per uuid, never the unset uuid.
// The simulator and tests use it so that a seed replays bit for bit; a
// production caller hands NewWriter a source over crypto/rand instead, since
// two writers that draw the same uuid share a fence.
func SeededUUIDs(seed uint64) func() journal.LeaderUUID {
	state := seed
	next := func() uint64 {
		state += 0x9e3779b97f4a7c15
		z := state
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		return z ^ (z >> 31)
	}
	return func() journal.LeaderUUID {
		for {
			u := journal.LeaderUUID{Hi: next(), Lo: next()}
			if journal.UsableUUID(u) {
				return u
			}
		}
	}
}
