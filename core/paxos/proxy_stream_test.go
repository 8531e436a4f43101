package paxos_test

import (
	"os"
	"testing"
)

// plainStreams digests every message the randomized checker's nodes send
// for seeds 1–12 at 400 steps (every quorum system, handoffs, crashes,
// replicas). Seeds 2, 8, 10 and 12 are as recorded from the core before
// proxy leaders existed (commit b1d2503); the others were re-recorded when
// a handoff began to send its notice to the other acceptors (roles.go,
// speaksFor), the one deliberate change since, and the four seeds whose
// streams it left alone are the ones that hand nothing on.
var plainStreams = map[uint64]uint64{
	1: 0x1a648778a1f4e2bd, 2: 0x7fa4eab42b43326, 3: 0x3aa2c800e5957808, 4: 0x90f81871a2d481e9,
	5: 0x8cb272386de49c2e, 6: 0xb38d0381ca34616, 7: 0xae341e5a4d3d3818, 8: 0x7c5aa846b5761a6f,
	9: 0x721e0534066e4e4f, 10: 0x9d4d504eb1b39c50, 11: 0xd082fa7df53c64e6, 12: 0xb869aaefc79655e3,
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
