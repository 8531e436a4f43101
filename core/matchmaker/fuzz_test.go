package matchmaker_test

// This file fuzzes one matchmaker (Matchmaker Paxos §3 and §4, and the
// spec's "Matchmakers and reconfiguration" and "The GC watermark" sections)
// against a naive model. FuzzMatchmaker decodes bytes into a script against
// matchmaker 101: a boot (empty, or from a small decoded registry that New
// must accept exactly when it keeps the Registry invariants), then Steps of
// Match, Probe and GarbageCollect requests for three journals from a few
// senders (misaddressed, malformed and junk-typed ones too), with ballots
// drawn from a small alphabet (zero, small rounds, the journal's highest
// registration and watermark, and the edges of paxos.BallotRoundMax) and
// configurations from a few quorum systems and the zero one; Ready and
// Advance rounds whose writes are folded into a shadow disk with
// matchmaker.Apply, as a host must; Close; and reboots from the shadow disk.
//
// The model is a plain list per journal. Each Step predicts the exact
// write and reply; each Ready must hand out exactly those, in order. A
// reply's history is checked against the rule, not the code: every
// registration in [watermark, ballot) except a belief that a later one (or
// the requester's own) repeats. After every step the matchmaker's registries
// must equal the model's and keep their invariants (sorted, distinct, none
// below the watermark, no reconfiguration above the effective one); the
// watermark and the effective configuration never fall within a boot, and
// the durable ones never fall across reboots. At every Ready the registries
// must equal the shadow disk, every write must pass storage.CheckRegistryOp
// (the stores panic on one that does not), every reply must pass Validate,
// and no reply may reveal a registration, a watermark or an effective
// configuration the same or an earlier Ready did not hand out as a write
// (persist before send). Seeds are the scripts in fuzzMatchmakerSeeds and
// any files in testdata/fuzz/FuzzMatchmaker. The decoding driver is in
// fuzz_driver_test.go and the model in fuzz_model_test.go.

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

// fuzzMMStepsMax bounds the steps of one input.
const fuzzMMStepsMax = 256

var fuzzJournals = [...]journal.ID{{Tenant: 1, Journal: 1}, {Tenant: 1, Journal: 2}, {Tenant: 2, Journal: 1}}

// fuzzSenders: three candidates, a fourth node and the unset id.
var fuzzSenders = [...]paxos.NodeID{1, 2, 3, 4, 0}

func mustSystem(s quorum.System, err error) quorum.System {
	if err != nil {
		panic(err)
	}
	return s
}

// fuzzSystems: the zero system, four majorities, a flexible and a grid
// system over four members, a lone member, and {1,2,3} under another rule
// (the same members as cfgA: not the same system).
var fuzzSystems = [...]quorum.System{
	{}, cfgA, cfgB, cfgC, cfgD,
	mustSystem(quorum.NewFlexible([]quorum.ID{1, 2, 3, 4}, 3, 2)),
	mustSystem(quorum.NewGrid([]quorum.ID{1, 2, 3, 4}, 2, 2)),
	majorityOf(7),
	mustSystem(quorum.NewFlexible([]quorum.ID{1, 2, 3}, 2, 2)),
}

// fuzzEdgeRounds are the rounds at and past the bound.
var fuzzEdgeRounds = [...]uint64{paxos.BallotRoundMax - 1, paxos.BallotRoundMax, paxos.BallotRoundMax + 1, math.MaxUint64}

var errFuzzDisk = errors.New("fuzz: disk gone")

func playFuzzMatchmaker(t *testing.T, data []byte) { runFuzzMatchmaker(t, data) }

// runFuzzMatchmaker plays one input to its end and returns the paths it
// reached; any panic or broken check fails it.
func runFuzzMatchmaker(t *testing.T, data []byte) map[string]int {
	f := &mmFuzz{t: t, in: &mmIn{data: data}, reached: map[string]int{}}
	defer func() {
		if r := recover(); r != nil {
			f.fail("panic: %v", r)
		}
	}()
	f.boot()
	f.check()
	for i := 0; i < fuzzMMStepsMax && f.in.pos < len(data); i++ {
		f.step()
	}
	if f.mm.HasReady() || len(f.writes)+len(f.replies) > 0 {
		f.ready() // the last predictions are checked too
	}
	return f.reached
}

// Seed encoders: each returns the bytes one step decodes. Ballots are
// encoded for the ballot decoder: bOwn(r) is round r at the sender, bAt(r,
// n) round r at node n, bHighest the journal's highest registration,
// bAbove one round above it at the sender, bWatermark its watermark, and
// bEdge(k) the k-th of fuzzEdgeRounds at the sender.
const (
	bZero      = 0
	bHighest   = 4
	bAbove     = 5
	bWatermark = 6
)

func bOwn(round byte) byte                   { return 1 + 8*round }               // round < 6
func bAt(round, node byte) byte              { return 3 + 8*round + 48*(node-1) } // round < 6, node 1-4
func bEdge(k byte) byte                      { return 224 + 8*k }                 // k < 4
func sysIdx(s int) byte                      { return byte(s) }                   // index into fuzzSystems
func sender(id paxos.NodeID) byte            { return byte(slices.Index(fuzzSenders[:], id)) }
func jIdx(j int) byte                        { return byte(j) }
func sReady() []byte                         { return []byte{7} }
func sReboot() []byte                        { return []byte{9, 1} }
func sClose() []byte                         { return []byte{9, 0} }
func sProbe(j int, from paxos.NodeID) []byte { return []byte{3, jIdx(j), sender(from), 1, 0, 0} }

// sMatch registers (ballot, system) for journal j from a sender.
func sMatch(j int, from paxos.NodeID, ballot byte, sys int, reconf bool) []byte {
	r := byte(0)
	if reconf {
		r = 1
	}
	return []byte{0, jIdx(j), sender(from), 1, ballot, sysIdx(sys), r, 0}
}

func sCollect(j int, from paxos.NodeID, ballot byte) []byte {
	return []byte{4, jIdx(j), sender(from), 1, ballot, 0}
}

func script(boot []byte, steps ...[]byte) []byte {
	return slices.Concat(append([][]byte{boot}, steps...)...)
}

// fuzzMatchmakerSeeds: the paper's life of a registry (registrations, a
// reconfiguration, a resend, an edit and stale refusals, a collection and a
// refusal below it, probes, a reboot, a close); a boot from a registry and
// one from a broken one; and edges (rounds at the bound, misaddressed,
// malformed and junk requests).
func fuzzMatchmakerSeeds() [][]byte {
	const sA, sB, sC, sD, sFlex3 = 1, 2, 3, 4, 8
	life := script([]byte{0},
		sMatch(0, 1, bOwn(1), sA, false), sReady(), // 1.1 belief A
		sMatch(0, 2, bOwn(2), sB, true), sReady(), // 2.2 reconfiguration B
		sMatch(0, 3, bOwn(3), sA, false), // 3.3 belief A: 1.1 A is left out, 2.2 B is not
		sMatch(0, 3, bOwn(3), sA, false), // resend: the same answer
		sMatch(0, 3, bOwn(3), sC, false), // an edit at 3.3: stale
		sMatch(0, 1, bOwn(2), sA, false), // 2.1 below the highest: stale
		sReady(),
		sMatch(0, 1, bAbove, sFlex3, false), // 4.1: {1,2,3} under another rule
		sCollect(0, 3, bOwn(3)),             // the watermark to 3.3
		sMatch(0, 2, bOwn(2), sA, false),    // 2.2 below the watermark
		sProbe(0, 2), sProbe(1, 2), sReady(),
		sMatch(1, 4, bOwn(1), sD, true), // another journal
		sReboot(),                       // its registration was never handed out: lost
		sProbe(1, 4), sProbe(0, 4), sReady(),
		sMatch(0, 2, bAbove, sB, false), sReady(),
		sClose(), sMatch(0, 3, bAbove, sC, true), sCollect(0, 3, bOwn(5)), sProbe(0, 1), sReady(),
		sReboot(), sMatch(0, 3, bAbove, sC, true), sReady(),
	)
	// A registry that keeps the invariants: journal 0, watermark 1.2,
	// effective 2.3 over B, registrations 1.2 A and 2.3 B (reconfiguration).
	booted := script([]byte{1, jIdx(0), bAt(1, 2), bAt(2, 3), sB, 1, 2, bAt(1, 2), sA, 0, bAt(2, 3), sB, 1},
		sMatch(0, 1, bAbove, sC, false), sProbe(0, 1), sReady(),
		sMatch(0, 2, bAbove, sC, true), sCollect(0, 2, bHighest), sReady(), sReboot(),
		sMatch(0, 3, bAbove, sA, false), sReady(),
	)
	// Registrations out of order: New refuses, the matchmaker boots empty.
	broken := script([]byte{1, jIdx(1), bZero, bZero, 0, 0, 2, bAt(2, 3), sB, 0, bAt(1, 2), sA, 0},
		sMatch(1, 1, bOwn(1), sA, false), sReady(),
	)
	edges := script([]byte{0},
		sMatch(2, 1, bEdge(1), sA, false),   // round BallotRoundMax: registered
		sMatch(2, 2, bEdge(2), sA, false),   // past the bound: malformed
		sMatch(2, 2, bEdge(3), sA, true),    // round 2^64-1: malformed
		sMatch(2, 2, bWatermark, sB, false), // the zero ballot
		sMatch(2, 2, bOwn(1), 0, false),     // no configuration
		sMatch(2, 2, bAt(5, 3), sA, false),  // someone else's ballot
		sCollect(2, 1, bEdge(1)),            // collect at the bound
		sCollect(2, 2, bEdge(2)),            // past it
		sProbe(2, 3), sReady(),
		[]byte{0, 0, sender(1), 0, bOwn(1), sA, 0, 0},  // addressed to node 0
		[]byte{0, 0, sender(1), 8, bOwn(1), sA, 0, 0},  // to another matchmaker
		[]byte{0, 0, sender(0), 1, bOwn(1), sA, 0, 0},  // from node 0
		[]byte{0, 0, sender(1), 1, bOwn(1), sA, 0, 11}, // a slot past the bound
		[]byte{0, 0, sender(1), 1, bOwn(1), sA, 0, 13}, // a history entry without acceptors
		[]byte{0, 0, sender(1), 1, bOwn(1), sA, 0, 15}, // well-formed extra fields
		[]byte{6, 0, 0, sender(1), 1, bOwn(1), bOwn(1), sA, 0},
		[]byte{6, 4, 0, sender(1), 1, bOwn(1), bOwn(1), sA, 0},
		sReady(),
	)
	// Retraction: node 1 registers a belief and a reconfiguration, then
	// a belief whose Match says it prepared nothing (addressing byte 9):
	// the earlier belief is retracted, the reconfiguration stays; a resend
	// retracts nothing more, and node 2 prepared nothing either but
	// retracts none of node 1's.
	retracted := script([]byte{0},
		sMatch(0, 1, bOwn(1), sA, false), sMatch(0, 1, bOwn(2), sB, true), sReady(),
		[]byte{0, jIdx(0), sender(1), 9, bOwn(3), sA, 0, 0}, sReady(),
		[]byte{0, jIdx(0), sender(1), 9, bOwn(3), sA, 0, 0}, sReady(),
		[]byte{0, jIdx(0), sender(2), 9, bOwn(4), sA, 0, 0}, sReady(),
		// node 2 abandons its 4.2, the highest, and will not campaign: a
		// Match without a configuration retracts it, and 4.2 is stale
		// after a reboot too.
		[]byte{0, jIdx(0), sender(2), 9, bOwn(4), 0, 0, 0}, sReady(),
		sReboot(), sProbe(0, 1), sMatch(0, 2, bOwn(4), sA, false), sReady(),
		// A Match naming generation 2 (the addressing byte's 20): the
		// founding matchmaker knows no such set, and answers inactive.
		[]byte{0, jIdx(0), sender(2), 20, bOwn(5), sA, 0, 0}, sReady(),
	)
	return [][]byte{life, booted, broken, edges, retracted}
}

// The seeds alone reach every path of the matchmaker's Step and boot, so
// `go test` covers them without fuzzing.
func TestFuzzMatchmakerSeedsReachEveryPath(t *testing.T) {
	reached := map[string]int{}
	for _, seed := range fuzzMatchmakerSeeds() {
		for k, v := range runFuzzMatchmaker(t, seed) {
			reached[k] += v
		}
	}

	for _, path := range []string{"boot refused", "boot from a registry", "dropped", "closed", "below the watermark",
		"repeat", "stale", "registered", "registered a reconfiguration", "probe", "collected",
		"history left a belief out", "reboot", "retracted", "retraction request", "refused for its generation"} {
		if reached[path] == 0 {
			t.Errorf("no seed reaches %q (reached %v)", path, reached)
		}
	}
}

func FuzzMatchmaker(f *testing.F) {
	for _, seed := range fuzzMatchmakerSeeds() {
		f.Add(seed)
	}
	f.Fuzz(playFuzzMatchmaker)
}
