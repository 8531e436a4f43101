package paxos_test

import (
	"os"
	"testing"
)

// plainStreams digests every message the randomized checker's nodes send
// for seeds 1–12 at 400 steps (every quorum system, handoffs, crashes,
// replicas), recorded from the core as it was before proxy leaders
// existed (commit b1d2503).
var plainStreams = map[uint64]uint64{
	1: 0xe6fe681e393ca9c5, 2: 0x7fa4eab42b43326, 3: 0xfdf6bf93b59dcd74, 4: 0x7c82cb0d521075cc,
	5: 0x4165aaa59a9975e3, 6: 0xe225c32dca2b6040, 7: 0x7ff0437a05e46600, 8: 0x7c5aa846b5761a6f,
	9: 0xfc576c01f37884c5, 10: 0x9d4d504eb1b39c50, 11: 0x30fe3cf21088d678, 12: 0xb869aaefc79655e3,
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
