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
// leader began to ask its owner: the only deliberate changes since.
var plainStreams = map[uint64]uint64{
	1: 0x277bbd7ab0c31206, 2: 0x7fa4eab42b43326, 3: 0x275cbdb893942827, 4: 0x90f81871a2d481e9,
	5: 0x3aa5f2a95bc0a3f8, 6: 0xb38d0381ca34616, 7: 0xd51e600e7d044d1a, 8: 0x7c5aa846b5761a6f,
	9: 0xbdf637f458f740a8, 10: 0x9d4d504eb1b39c50, 11: 0x314c6da886334fee, 12: 0xb869aaefc79655e3,
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
