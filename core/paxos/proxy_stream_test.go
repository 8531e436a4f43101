package paxos_test

import (
	"os"
	"testing"
)

// plainStreams digests every message the randomized checker's nodes send
// for seeds 1–12 at 400 steps (every quorum system, handoffs, crashes,
// replicas). Seeds 2, 8, 10 and 12 are as recorded from the core before
// proxy leaders existed (commit b1d2503): they hand nothing on. The others
// were re-recorded when a handoff began to tell the other acceptors whom it
// handed the ballot to (the notice, roles.go's speaksFor), and seeds 1, 3,
// 5, 7, 9 and 11 once more when an acceptor that does not know a ballot's
// leader began to ask its owner, and all but seed 2 once more when a
// catch-up request began to be answered with a window of pages, and seeds
// 4 and 10 (grids) once more when a grid's quorum read began to ask one
// row: the only deliberate changes since.
var plainStreams = map[uint64]uint64{
	1: 0xc4b6d3b124e3a5ca, 2: 0x2937492f24d847b4, 3: 0x490a31b43b89dedd, 4: 0x3c5654677d6c24cd,
	5: 0x7de79230131479b2, 6: 0xfea57e25a5f988f, 7: 0xf857c73f54bc0ef, 8: 0xc32a67b33c1ff9be,
	9: 0x362d79cefd003c88, 10: 0x82cbb050c08cc2f3, 11: 0xad78e944b5c8e503, 12: 0xca174debd4c49c69,
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
