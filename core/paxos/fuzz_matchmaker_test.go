package paxos_test

// This file fuzzes a node of a deployment with matchmakers (Matchmaker
// Paxos §3 and §4, and the spec's "Matchmakers and reconfiguration" and
// "The GC watermark and retirement" sections), the part of Step that
// FuzzStep, which runs a plain deployment, never reaches. FuzzStepMatchmakers
// boots node 1 of {1,2,3} under a majority with matchmakers {11,12,13}, or
// (by the input's first byte) node 1 as a joiner formatted for {1,4,5}, over
// a memstore, and decodes the rest of the input into a script: messages of
// every type from nodes, matchmakers and strangers (MatchReply with
// histories, effective configurations, watermarks and refusals of every
// kind; GarbageCollectAck; Prepare and Heartbeat naming valid systems, the
// zero one, and ones without the node; PreReadAck naming a configuration),
// with ballots drawn near the node's own state and at the edges of
// BallotRoundMax, mixed with ticks, proposals, reconfigurations (to valid and
// invalid systems), quorum reads, step-downs, retire questions, restarts and
// Ready/Advance rounds persisted and synced to the store. It reuses
// FuzzStep's byte reader, slot, entry, command and state decoders and its
// per-step oracles (bad_input_fuzz_driver_test.go). The driver is in
// fuzz_matchmaker_driver_test.go.
//
// Nothing may panic: not Step, Tick, the calls, Ready or Advance, and not
// the node's own assertInvariants, which runs inside each. After every
// step the promise, chosen index, floor, first_seq and the ballot of the
// configuration the node believes in force never fall within a boot; every
// message the node sends is well formed, addressed to someone else, a
// matchmaker request only to a matchmaker, and a Prepare or Heartbeat names
// its configuration; and one ballot of the node's is bound to one
// configuration, in its Match, its Prepares, its Heartbeats and the belief
// it leads under. Seeds are the scripts in fuzzStepMatchmakersSeeds (a test
// below checks they reach matchmaking, Phase 1, leading, a StaleConfiguration
// adoption, a GC ack quorum, a probe, a reconfiguration and a joiner's vote)
// and the files in testdata/fuzz/FuzzStepMatchmakers.

import (
	"slices"
	"testing"

	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

var fuzzMatchmakers = []paxos.NodeID{11, 12, 13}

// fuzzMMSenders: the node's peers, the matchmakers, the joiner's peers,
// the unset id, the node itself and a stranger.
var fuzzMMSenders = [...]paxos.NodeID{2, 3, 11, 12, 13, 4, 5, 0, 1, 9}

func fuzzSystem(s quorum.System, err error) quorum.System {
	if err != nil {
		panic(err)
	}
	return s
}

// fuzzMMSystems: the zero system; majorities with the node ({1,2,3}, the
// joiner's {1,4,5}, {1,2,4}, the node alone) and without it ({2,3,4},
// {4,5,6}); a flexible and a grid system over {1,2,3,4}; and {1,2,3} with
// q1 = 1, which Reconfigure must refuse (validateSystem).
var fuzzMMSystems = [...]quorum.System{
	{},
	majorityOf(1, 2, 3),
	majorityOf(1, 4, 5),
	majorityOf(1, 2, 4),
	majorityOf(2, 3, 4),
	fuzzSystem(quorum.NewFlexible([]quorum.ID{1, 2, 3, 4}, 3, 2)),
	fuzzSystem(quorum.NewGrid([]quorum.ID{1, 2, 3, 4}, 2, 2)),
	majorityOf(1),
	majorityOf(4, 5, 6),
	fuzzSystem(quorum.NewFlexible([]quorum.ID{1, 2, 3}, 1, 3)),
}

// fuzzMMSystemValid says which of fuzzMMSystems Reconfigure accepts.
var fuzzMMSystemValid = [...]bool{false, true, true, true, true, true, true, true, true, false}

var fuzzMMMsgTypes = [...]paxos.MsgType{paxos.MsgPrepare, paxos.MsgPromise, paxos.MsgAccept, paxos.MsgAccepted,
	paxos.MsgNack, paxos.MsgCommit, paxos.MsgCatchUpRequest, paxos.MsgCatchUpResponse, paxos.MsgHeartbeat,
	paxos.MsgHeartbeatAck, paxos.MsgPreRead, paxos.MsgPreReadAck, paxos.MsgTrimmedTo,
	paxos.MsgMatchReply, paxos.MsgMatchReply, paxos.MsgMatchReply, paxos.MsgGarbageCollectAck,
	paxos.MsgMatch, paxos.MsgProbe, paxos.MsgGarbageCollect, paxos.MsgType(99)}

// FuzzStepMatchmakers ops after the message types.
const (
	mmOpTick = iota + len(fuzzMMMsgTypes)
	mmOpPropose
	mmOpProposeControl
	mmOpReconfigure
	mmOpRead
	mmOpStepDown
	mmOpRestart
	mmOpDrain
	mmOpRetire
	mmOpCount
	// mmFuzzStepsMax bounds the steps of one input; mmReadiesMax bounds
	// the Readies of one drain (a node whose batches never run dry is a
	// livelock, not a slow input).
	mmFuzzStepsMax = 200
	mmReadiesMax   = 1000
)

func playFuzzStepMatchmakers(t *testing.T, data []byte) { runFuzzStepMatchmakers(t, data) }

// runFuzzStepMatchmakers plays one input to its end and returns the summed
// counters of the node's incarnations; any panic fails it.
func runFuzzStepMatchmakers(t *testing.T, data []byte) paxos.Counters {
	in := &fuzzIn{data: data}
	d := newMMStepDriver(t, in)
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("panic: %v\n%s", r, d.history())
		}
	}()
	for i := 0; i < mmFuzzStepsMax && in.pos < len(in.data); i++ {
		d.step()
	}
	d.addTotals(d.node)
	return d.totals
}

// recordMMSeed plays a script and returns the fuzz input that replays it,
// like recordSeed: the bytes read between steps (drain, jitter) are
// recorded as 1 (drain; timeout ElectionTicks+1).
func recordMMSeed(tb testing.TB, joiner byte, steps ...[]byte) []byte {
	tb.Helper()
	in := &fuzzIn{data: []byte{joiner}, record: true}
	d := newMMStepDriver(tb, in)
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

// Seed script encoders for the decoders above. Ballots: mbZero, mbPromised
// (the node's promise: its matchmaking or campaign ballot), mbAbove (one
// round above it, at the sender), mbLeading (the node's leader ballot),
// mbAt(r, n) (round r < 4 at node n in 1-5). Senders by id. Slots as in
// FuzzStep (slotAbs, slotNext). Systems by index into fuzzMMSystems.
const (
	mbZero     = 0
	mbPromised = 2
	mbAbove    = 3
	mbLeading  = 4

	sysNone, sys123, sys145, sys124, sys234 = 0, 1, 2, 3, 4
)

func mbAt(round, node byte) byte { return 5 + 8*round + 32*(node-1) }

func mmMsg(typ paxos.MsgType, from paxos.NodeID, fields ...byte) []byte {
	op := byte(slices.Index(fuzzMMMsgTypes[:], typ))
	return append([]byte{op, byte(slices.Index(fuzzMMSenders[:], from)), 1}, fields...)
}

// sMatchOK: a matchmaker's OK answer to the node's registration (or, at
// mbZero, to its probe), with watermark gc, the history and the effective
// configuration (nil: none) given.
func sMatchOK(from paxos.NodeID, ballot, gc byte, effective []byte, history ...[]byte) []byte {
	f := []byte{ballot, 0, mbZero, gc, byte(len(history))}
	for _, h := range history {
		f = append(f, h...)
	}
	if effective == nil {
		f = append(f, 0)
	} else {
		f = append(append(f, 1), effective...)
	}
	return mmMsg(paxos.MsgMatchReply, from, f...)
}

// sReg encodes a registration: reconf flag (history only), ballot at
// node's round, system.
func sReg(reconf bool, round, node byte, sys byte) []byte {
	f := byte(0)
	if reconf {
		f = 1
	}
	return []byte{f, node - 1, mbAt(round, node), sys}
}

// sEff encodes an effective configuration (no flag: always a
// reconfiguration).
func sEff(round, node byte, sys byte) []byte { return sReg(false, round, node, sys)[1:] }

func sMTick(n byte) []byte          { return []byte{byte(mmOpTick), n - 1} }
func sMPropose(rec byte) []byte     { return []byte{byte(mmOpPropose), rec} }
func sMReconfigure(sys byte) []byte { return []byte{byte(mmOpReconfigure), sys} }
func sMRead(ctx byte) []byte        { return []byte{byte(mmOpRead), ctx} }
func sMRestart() []byte             { return []byte{byte(mmOpRestart)} }
func sMRetire(w byte) []byte        { return []byte{byte(mmOpRetire), w} }

// sPromiseTerminal: a terminal Phase-1 page at the node's ballot from its
// chosen index + 1, with no entries.
func sPromiseTerminal(from paxos.NodeID) []byte {
	return mmMsg(paxos.MsgPromise, from, mbPromised, slotNext(0), slotAbs(0), 0, 0)
}

// fuzzStepMatchmakersSeeds are five scripted runs: a probe, matchmaking,
// Phase 1 and leading, a GC ack quorum, a write, and a reconfiguration to
// {1,4,5} whose Phase 1 needs the old configuration too; a StaleConfiguration
// adoption; a joiner that learns its configuration by a probe, promises and
// votes; refusals, a closed matchmaker and a reboot mid-matchmaking; and a
// leader reconfiguring itself out.
func fuzzStepMatchmakersSeeds(tb testing.TB) [][]byte {
	probe := func() [][]byte {
		return [][]byte{
			sMTick(3), // campaign: not learned since boot, so a probe
			sMatchOK(11, mbZero, mbZero, nil),
			sMatchOK(12, mbZero, mbZero, nil), // a quorum: learned
		}
	}
	elect := func(voter paxos.NodeID) [][]byte {
		return [][]byte{
			sMTick(4), // matchmaking at 1.1
			sMatchOK(11, mbPromised, mbZero, nil),
			sMatchOK(12, mbPromised, mbZero, nil), // Phase 1 over {1,2,3}
			sPromiseTerminal(voter),               // leads
		}
	}
	lead := recordMMSeed(tb, 0, slices.Concat(probe(), elect(2), [][]byte{
		mmMsg(paxos.MsgHeartbeatAck, 2, mbLeading, slotAbs(0), slotAbs(0)), // 2 reached the fence
		sMTick(1), // the beat collects: GarbageCollect to 11-13
		mmMsg(paxos.MsgGarbageCollectAck, 11, mbLeading),
		mmMsg(paxos.MsgGarbageCollectAck, 12, mbLeading), // a quorum: collected
		sMRetire(mbLeading),
		sMPropose(0),
		mmMsg(paxos.MsgAccepted, 2, mbLeading, 1, slotNext(0), 1),
		sMRead(1), mmMsg(paxos.MsgPreReadAck, 2, 1, slotAbs(1), mbZero),
		sMReconfigure(sys145), // matchmaking at 2.1 for {1,4,5}
		sMatchOK(11, mbPromised, mbZero, nil, sReg(false, 1, 1, sys123)),
		sMatchOK(12, mbPromised, mbZero, nil, sReg(false, 1, 1, sys123)), // Phase 1 over {1,4,5} and {1,2,3}
		sPromiseTerminal(4), // a quorum of {1,4,5}, not of {1,2,3}
		sPromiseTerminal(2), // and of {1,2,3}: leads
		mmMsg(paxos.MsgHeartbeatAck, 4, mbLeading, slotNext(0), slotAbs(0)),
		sMTick(1),
		mmMsg(paxos.MsgGarbageCollectAck, 13, mbLeading),
		mmMsg(paxos.MsgGarbageCollectAck, 12, mbLeading),
		sMRetire(mbLeading),
		sMTick(2),
	})...)
	stale := recordMMSeed(tb, 0, slices.Concat(probe(), [][]byte{
		sMTick(4), // matchmaking at 1.1 under {1,2,3}
		sMatchOK(11, mbPromised, mbZero, sEff(3, 2, sys124)),
		sMatchOK(12, mbPromised, mbZero, nil), // {1,2,4} was made effective at 3.2: adopt it, campaign again
		sMatchOK(12, mbPromised, mbZero, sEff(3, 2, sys124)),
		sMatchOK(13, mbPromised, mbZero, sEff(3, 2, sys124)), // Phase 1 over {1,2,4}
		sPromiseTerminal(4),
		mmMsg(paxos.MsgHeartbeat, 2, mbAbove, slotAbs(0), sys124, mbAt(3, 2)), // deposed by 2
		mmMsg(paxos.MsgPreRead, 4, 2),
		sMRead(3), mmMsg(paxos.MsgPreReadAck, 4, 3, slotAbs(0), mbAbove), // a newer configuration: abandoned
		sMRetire(mbAt(3, 2)),
	})...)
	joiner := recordMMSeed(tb, 1,
		sMTick(3), // a joiner probes
		sMatchOK(12, mbZero, mbZero, sEff(1, 2, sys145)),
		sMatchOK(13, mbZero, mbAt(1, 2), sEff(1, 2, sys145)), // learns {1,4,5}
		mmMsg(paxos.MsgPrepare, 4, mbAbove, slotNext(0), sys145, mbAt(1, 2)),
		mmMsg(paxos.MsgAccept, 4, mbPromised, 1, slotNext(0), 1, 1, slotAbs(0)), // votes
		mmMsg(paxos.MsgHeartbeat, 4, mbPromised, slotNext(0), sys145, mbAt(1, 2)),
		mmMsg(paxos.MsgPrepare, 2, mbAbove, slotNext(0), sys234, mbAt(1, 2)),    // a configuration without it
		mmMsg(paxos.MsgAccept, 2, mbPromised, 1, slotNext(1), 1, 1, slotAbs(0)), // not a member: no vote
		sMTick(8),
	)
	refused := recordMMSeed(tb, 0, slices.Concat(probe(), [][]byte{
		sMTick(4),
		mmMsg(paxos.MsgMatchReply, 11, mbPromised, 6, mbZero, mbZero, 0, 0),     // closed: no answer
		mmMsg(paxos.MsgMatchReply, 12, mbPromised, 4, mbAt(3, 3), mbZero, 0, 0), // stale: abandoned
		sMTick(4), // matchmaking above 3.3
		mmMsg(paxos.MsgMatchReply, 12, mbPromised, 5, mbZero, mbAt(3, 3), 0, 0), // below the watermark
		sMTick(4),
		sMRestart(), // rebooted mid-matchmaking: probe again
		sMTick(4),
		sMatchOK(13, mbZero, mbZero, sEff(2, 3, sys123)),
		sMatchOK(11, mbZero, mbZero, nil),
		mmMsg(paxos.MsgMatchReply, 12, mbZero, 7, mbZero, mbZero, 0, 0),    // a malformed verdict
		mmMsg(paxos.MsgMatchReply, 9, mbPromised, 0, mbZero, mbZero, 0, 0), // not a matchmaker
	})...)
	resign := recordMMSeed(tb, 0, slices.Concat(probe(), elect(3), [][]byte{
		sMReconfigure(sys234), // {2,3,4}: without the node
		sMatchOK(13, mbPromised, mbZero, nil, sReg(true, 0, 1, sys123)),
		sMatchOK(11, mbPromised, mbZero, nil, sReg(false, 1, 1, sys123)),
		sPromiseTerminal(3), sPromiseTerminal(2), // resigns
		sMReconfigure(sysNone), sMReconfigure(9),
		sMTick(8),
	})...)
	return [][]byte{lead, stale, joiner, refused, resign}
}

// The seeds alone reach matchmaking, Phase 1 and leading, a
// StaleConfiguration adoption, a GC ack quorum, a probe, a reconfigured
// election, a decision, a resignation, a joiner's vote and an abandoned
// read, so that `go test` covers those paths without fuzzing.
func TestFuzzStepMatchmakersSeedsReach(t *testing.T) {
	var c paxos.Counters
	for _, seed := range fuzzStepMatchmakersSeeds(t) {
		got := runFuzzStepMatchmakers(t, seed)
		c.Probes += got.Probes
		c.Elections += got.Elections
		c.Decided += got.Decided
		c.StaleConfigurations += got.StaleConfigurations
		c.Collections += got.Collections
		c.MatchRefusals += got.MatchRefusals
		c.ReconfiguredElections += got.ReconfiguredElections
		c.ResignedRemoved += got.ResignedRemoved
		c.JoinerVotes += got.JoinerVotes
		c.ReadsAbandoned += got.ReadsAbandoned
		c.RemovedPromises += got.RemovedPromises
	}

	for name, n := range map[string]uint64{
		"probes": c.Probes, "elections": c.Elections, "decisions": c.Decided, "stale configurations": c.StaleConfigurations,
		"collections": c.Collections, "match refusals": c.MatchRefusals,
		"reconfigured elections": c.ReconfiguredElections, "resignations": c.ResignedRemoved,
		"joiner votes": c.JoinerVotes, "abandoned reads": c.ReadsAbandoned, "removed promises": c.RemovedPromises,
	} {
		if n == 0 {
			t.Errorf("no seed reaches %s (counters %+v)", name, c)
		}
	}
}

func FuzzStepMatchmakers(f *testing.F) {
	for _, seed := range fuzzStepMatchmakersSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(playFuzzStepMatchmakers)
}
