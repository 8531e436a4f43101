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
	1: 0x9a57dcf7354bf3e, 2: 0x7fa4eab42b43326, 3: 0xf36aba2286a50180, 4: 0x96d0e7f9fea72a87,
	5: 0xcca7a2f1218484b2, 6: 0x63f0e220f4372715, 7: 0x5e2f55f93b5c58c2, 8: 0xf67f10621315a136,
	9: 0x638d02fca0f97f3c, 10: 0xc89add588b542b2d, 11: 0xc5b96eeab4d8e4e6, 12: 0x188661c91be15865,
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
