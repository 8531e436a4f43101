package paxos_test

import (
	"os"
	"testing"
)

// plainStreams digests every message the randomized checker's nodes send
// for seeds 1–12 at 400 steps (every quorum system, handoffs, crashes,
// replicas). Seed 12 is as recorded from the core before proxy leaders
// existed (commit b1d2503): it hands nothing on. The others were
// re-recorded when a handoff began to tell the other acceptors whom it
// handed the ballot to (the notice, roles.go's speaksFor), and seeds 1, 3,
// 5, 7, 9 and 11 once more when an acceptor that does not know a ballot's
// leader began to ask its owner, and all but seed 2 once more when a
// catch-up request began to be answered with a window of pages, and seeds
// 4 and 10 (grids) once more when a grid's quorum read began to ask one
// row, and all but seed 12 once more when a read unsettled at half its TTL
// began to ask again the members that had not answered: the only
// deliberate changes since.
var plainStreams = map[uint64]uint64{
	1: 0x5e7bf606308e3670, 2: 0x9c54896ef7cab2a3, 3: 0x144e08719d2128e, 4: 0x7dad95b3db071104,
	5: 0xdb3bc8823e71591a, 6: 0xd0e42ad939c151da, 7: 0x2ed3eee644b1c84b, 8: 0x62c4f63c19873d79,
	9: 0xd4650c28112be6e8, 10: 0xe45b39155c237ac4, 11: 0x5b0436535f6407a4, 12: 0xca174debd4c49c69,
}

// A deployment with no proxy leaders is the plain deployment, message for
// message: the proxies' code paths send, hold and reorder nothing when the
// proxy list is empty. A deliberate change of the protocol changes these
// digests; PAXOS_STREAM_PRINT=1 prints the new ones to record.
func TestNoProxiesIsThePlainMessageStream(t *testing.T) {
	for seed, want := range plainStreams {
		got := runSeedWith(t, seed, 400, false, false).stream
		if os.Getenv("PAXOS_STREAM_PRINT") != "" {
			t.Logf("%d: %#x,", seed, got)
			continue
		}
		if got != want {
			t.Errorf("seed %d: the message stream with no proxies is %#x, the plain deployment's was %#x", seed, got, want)
		}
	}
}
