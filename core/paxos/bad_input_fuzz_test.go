package paxos_test

// This file holds FuzzStep, which decodes arbitrary bytes into a script of
// messages, ticks, proposals, reads, step-downs, restarts and Ready/Advance
// rounds with the driver of bad_input_fuzz_driver_test.go, and requires
// that nothing panics at all. Seed inputs live in testdata/fuzz/FuzzStep and
// in fuzzStepSeeds below, written with the seed helpers here.

import (
	"slices"
	"testing"

	"github.com/parosdb/paros/core/paxos"
)

// recordSeed plays a script and returns the fuzz input that replays it.
// Each script step is the op byte and the field bytes that step decodes;
// the bytes the driver reads between steps (drain, sync, jitter) are
// recorded as 1 — drain, sync, jitter +1. It fails if a step's fields do
// not line up with what the decoder read.
func recordSeed(tb testing.TB, mode byte, steps ...[]byte) []byte {
	tb.Helper()
	in := &fuzzIn{data: []byte{mode}, record: true}
	d := newFuzzDriver(tb, in)
	for i, st := range steps {
		at := len(in.data)
		in.data = append(in.data, st...)
		d.step()
		if d.decoded != at+len(st) {
			tb.Fatalf("seed step %d (%v) decoded %d bytes, scripted %d\n%s", i, st, d.decoded-at, len(st), d.history())
		}
	}
	return in.data
}

// Seed script encoders: each returns the op byte and the field bytes the
// decoder reads for that step (see fuzzDriver.message). Field choices:
// messages go to node 1; ballots ballotPromised (the node's promise),
// ballotAbove (one round above it, the sender's) and ballotLeading (the
// node's leader ballot); slots slotAbs(k) = k and slotNext(k) = chosen
// index + 1 + k, resolved when the step is played; entries carry the
// sender's ballot and the slot's canonical value.
const (
	ballotPromised = 2
	ballotAbove    = 3
	ballotLeading  = 4
	stateAhead     = 3
)

func slotAbs(k byte) byte  { return 5 * k }   // k < 10
func slotNext(k byte) byte { return 1 + 5*k } // k < 4

// entryAt is one entry at slot: keep the message's ballot, canonical value.
func entryAt(slot byte) []byte { return []byte{slot, 1, 1} }

func msgBytes(typ paxos.MsgType, from byte, fields ...byte) []byte {
	op := byte(slices.Index(fuzzMsgTypes[:], typ))
	return append([]byte{op, from, 1}, fields...)
}

func entryBytes(entries [][]byte) []byte {
	out := []byte{byte(len(entries))}
	for _, e := range entries {
		out = append(out, e...)
	}
	return out
}

// sPromise: a page at the node's own ballot from slot, continuing at next
// (slotAbs(0) = terminal), with the given entries and no faulty records.
func sPromise(from, slot, next byte, entries ...[]byte) []byte {
	f := append([]byte{ballotPromised, slot, next}, entryBytes(entries)...)
	return msgBytes(paxos.MsgPromise, from, append(f, 0)...)
}

// sPromiseFaulty: a terminal page reporting one faulty record.
func sPromiseFaulty(from, slot, faultySlot, faultyBallot byte) []byte {
	return msgBytes(paxos.MsgPromise, from, ballotPromised, slot, slotAbs(0), 0, 1, faultySlot, faultyBallot)
}

func sAccept(from, ballot, commit byte, entries ...[]byte) []byte {
	f := append([]byte{ballot}, entryBytes(entries)...)
	return msgBytes(paxos.MsgAccept, from, append(f, commit)...)
}

// sAccepted: votes at the node's leader ballot for what it proposed there.
func sAccepted(from byte, slots ...byte) []byte {
	f := []byte{ballotLeading, byte(len(slots))}
	for _, s := range slots {
		f = append(f, s, 1)
	}
	return msgBytes(paxos.MsgAccepted, from, f...)
}

func sCatchUpResponse(from, ballot byte, entries ...[]byte) []byte {
	return msgBytes(paxos.MsgCatchUpResponse, from, append([]byte{ballot}, entryBytes(entries)...)...)
}

func sTick(n byte) []byte       { return []byte{byte(fuzzOpTick), n - 1} }
func sPropose(rec byte) []byte  { return []byte{byte(fuzzOpPropose), rec} }
func sControl(kind byte) []byte { return []byte{byte(fuzzOpProposeControl), kind} } // 0 noop, 1 truncate, 2 set-leader
func sRead(ctx byte) []byte     { return []byte{byte(fuzzOpRead), ctx} }
func sRestart() []byte          { return []byte{byte(fuzzOpRestart)} }

// fuzzStepSeeds are three scripted runs: a leader that is elected, decides,
// truncates, serves a read, Noop-fills, loses CheckQuorum and restarts; a
// single-writer follower that learns by Accept, Commit and catch-up,
// truncates, serves a trim point, jumps, restarts and wins a paged
// campaign; and a candidate that loses on refusals, is blocked by a faulty
// report, and then leads.
func fuzzStepSeeds(tb testing.TB) [][]byte {
	leader := recordSeed(tb, 0,
		sTick(3),                              // campaign at 1.1
		sPromise(2, slotNext(0), slotAbs(0)),  // node 2's terminal page: lead
		sPropose(0), sPropose(1), sPropose(2), // slots 1-3; the window holds 3
		sAccepted(2, slotAbs(1), slotAbs(2)), // decide 1, 2; slot 3 leaves
		sControl(1),                          // truncate(next_seq) at slot 4
		sAccepted(3, slotAbs(3), slotAbs(4)), // decide 3, 4: the walk cuts
		sRead(1),                             //
		msgBytes(paxos.MsgPreReadAck, 2, 1, slotAbs(4)),                            // the read is served
		msgBytes(paxos.MsgHeartbeatAck, 2, ballotLeading, slotAbs(4), slotNext(3)), // a watermark past the frontier
		sTick(2),                             // beat: Noop-fill
		sAccepted(2, slotAbs(5), slotAbs(6)), //
		sTick(8), sTick(8),                   // CheckQuorum: no acks for a window
		sRestart(), //
		msgBytes(paxos.MsgPrepare, 2, ballotAbove, slotNext(0)),
	)
	follower := recordSeed(tb, 1,
		sAccept(2, ballotAbove, slotAbs(0), entryAt(slotNext(0)), entryAt(slotNext(1)), entryAt(slotNext(2))),    // slots 1-3 at 1.2
		msgBytes(paxos.MsgCommit, 2, ballotPromised, slotNext(2)),                                                // commit 3
		sAccept(2, ballotPromised, slotAbs(0), entryAt(slotNext(0)), entryAt(slotNext(1)), entryAt(slotNext(2))), // slots 4-6
		sAccept(2, ballotPromised, slotAbs(0), entryAt(slotNext(3))),                                             // slot 7: truncate(3)
		msgBytes(paxos.MsgHeartbeat, 2, ballotPromised, slotAbs(7)),                                              // commit 7: the walk cuts at 6
		msgBytes(paxos.MsgHeartbeat, 2, ballotPromised, slotNext(2)),                                             // commit 10: ask for catch-up
		sCatchUpResponse(2, ballotPromised, entryAt(slotNext(0)), entryAt(slotNext(1))),                          // learn 8, 9
		msgBytes(paxos.MsgCatchUpRequest, 3, slotAbs(1)),                                                         // below the floor: TrimmedTo
		msgBytes(paxos.MsgCatchUpRequest, 3, slotAbs(6)),                                                         // a page from the floor
		msgBytes(paxos.MsgTrimmedTo, 3, slotNext(3), stateAhead),                                                 // jump ahead
		msgBytes(paxos.MsgPreRead, 3, 2),                                                                         //
		sRestart(),                                                                                               //
		sTick(5),                                                                                                 // campaign
		sPromise(3, slotNext(0), slotNext(1), entryAt(slotNext(0))),                                              // a first page
		sPromise(3, slotNext(1), slotAbs(0)),                                                                     // the terminal page: lead
		sAccepted(3, slotNext(0)),                                                                                //
		sTick(3),
	)
	candidate := recordSeed(tb, 0,
		sTick(3), // campaign
		msgBytes(paxos.MsgNack, 2, ballotPromised, ballotPromised, slotAbs(1)), // one refusal
		msgBytes(paxos.MsgNack, 3, ballotPromised, ballotPromised, slotAbs(1)), // two: lost
		sAccept(2, ballotAbove, slotAbs(0), entryAt(slotNext(0))),              // a vote at slot 1
		sTick(5), // campaign
		sPromiseFaulty(2, slotNext(0), slotAbs(1), ballotAbove), // slot 1 faulty at a higher ballot: blocked
		sTick(5), // campaign
		sPromise(3, slotNext(0), slotAbs(0), entryAt(slotAbs(1))), // lead
		sAccepted(3, slotAbs(1)),                                  //
		sControl(2), sControl(0),                                  //
		msgBytes(paxos.MsgNack, 2, ballotAbove, ballotLeading, slotAbs(9)), // deposed, and behind a floor
		sTick(4),
	)
	// The hostile-input probe's crash: a Commit at round 2^64-1 from a
	// member, then a campaign; then a Nack naming the last round in range,
	// and a campaign that must stand down instead of passing the bound.
	probe := recordSeed(tb, 0,
		msgBytes(paxos.MsgCommit, 2, 238, slotAbs(1)), // round 2^64-1: malformed
		sTick(5), // campaign at round 1
		msgBytes(paxos.MsgNack, 2, 224, 224, slotAbs(1)), // a promise at BallotRoundMax
		sTick(8), sTick(8), // campaigns exhausted
	)
	return [][]byte{leader, follower, candidate, probe}
}

func FuzzStep(f *testing.F) {
	for _, seed := range fuzzStepSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(playFuzzStep)
}
