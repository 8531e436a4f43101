package paxos_test

// This file holds the randomized reconfiguration runs: they mix
// reconfigurations with matchmakers, crashes, reboots, drops and duplicates
// over many seeds on the test network of matchmaker_harness_test.go and
// check that at most one value is ever chosen per slot, and that the cell
// stays live.

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

// The randomized run: three nodes {1,2,3}, joiners 4 and 5 standing by, three
// matchmakers. Each step delivers a burst of pooled messages in random order
// with duplicates and drops, syncs, ticks, proposes at the leader, and now
// and then reconfigures (majority, grid and flexible systems over ids 1–5,
// from the leader or any node), crashes a node before or after its batch is
// durable, reboots one, crashes or reboots a matchmaker, or cuts a node off.
// After every batch the oracles check that every node folds each slot to one
// value; every 20 steps and at the end the durable-quorum oracle checks
// every store against the configuration each ballot ran under.
//
// MM_CHECK_SEEDS and MM_CHECK_STEPS widen the sweep; MM_CHECK_SEED replays
// one seed with a trace.
func TestReconfigureRandomizedSafety(t *testing.T) {
	if s := os.Getenv("MM_CHECK_SEED"); s != "" {
		seed, _ := strconv.ParseUint(s, 10, 64)
		r := runMMSeed(t, seed, envInt("MM_CHECK_STEPS", 300), true)
		if r.stuck != "" {
			t.Logf("quiet tail did not converge: %s", r.stuck)
		}
		return
	}
	seeds, results := mmSweep(t)
	var total paxos.Counters
	reconfs := 0
	for _, r := range results {
		c := r.counters
		total.ReconfiguredElections += c.ReconfiguredElections
		total.StaleConfigurations += c.StaleConfigurations
		total.Collections += c.Collections
		total.JoinerVotes += c.JoinerVotes
		total.Decided += c.Decided
		reconfs += r.reconfs
	}
	t.Logf("over %d seeds: reconfigure calls %d, reconfigured elections %d, stale %d, collections %d, joiner votes %d, decided %d",
		seeds, reconfs, total.ReconfiguredElections, total.StaleConfigurations, total.Collections, total.JoinerVotes, total.Decided)
	for name, v := range map[string]uint64{
		"a reconfiguration wins its election":   total.ReconfiguredElections,
		"a collection becomes effective":        total.Collections,
		"a joiner votes":                        total.JoinerVotes,
		"values are chosen":                     total.Decided,
		"a stale node adopts the effective one": total.StaleConfigurations,
	} {
		if v == 0 && seeds >= 50 {
			t.Errorf("gate never fired: %s", name)
		}
	}
}

// The same sweep, for liveness: once every node and matchmaker is back and
// the faults stop, a leader is elected and the members of its
// configuration converge to its chosen prefix.
func TestReconfigureRandomizedLiveness(t *testing.T) {
	if os.Getenv("MM_CHECK_SEED") != "" {
		t.Skip("replaying one seed: see TestReconfigureRandomizedSafety")
	}
	seeds, results := mmSweep(t)
	var stuck []string
	for seed, r := range results {
		if r.stuck != "" {
			stuck = append(stuck, fmt.Sprintf("seed %d: %s", seed, r.stuck))
		}
	}
	if len(stuck) > 0 {
		slices.Sort(stuck)
		t.Errorf("%d of %d seeds did not converge in the quiet tail, e.g. (replay with MM_CHECK_SEED):\n%s", len(stuck), seeds,
			strings.Join(stuck[:min(len(stuck), 5)], "\n"))
	}
}

// mmSweep runs seeds 1..MM_CHECK_SEEDS (default 60) of MM_CHECK_STEPS
// (default 300) steps each; a safety violation fails the seed's subtest.
func mmSweep(t *testing.T) (int, map[uint64]mmSeedResult) {
	seeds := envInt("MM_CHECK_SEEDS", 60)
	steps := envInt("MM_CHECK_STEPS", 300)
	results := map[uint64]mmSeedResult{}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		ok := t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			results[seed] = runMMSeed(t, seed, steps, false)
		})
		if !ok {
			t.Fatalf("seed %d failed; replay with MM_CHECK_SEED=%d", seed, seed)
		}
	}
	return seeds, results
}

func mmCandidateSystems() []quorum.System {
	grid, _ := quorum.NewGrid(ids(4), 2, 2)
	flex, _ := quorum.NewFlexible(ids(4), 3, 2)
	return []quorum.System{
		majority(3), majorityOf(1, 2, 4), majorityOf(2, 3, 4, 5), majority(5), grid, majorityOf(3, 4, 5), flex,
	}
}

// runMMSeed runs one seed, then a quiet tail (everything booted and healed,
// 40 rounds of delivery and ticks), and reports the counters and whether
// the tail converged.
func runMMSeed(t *testing.T, seed uint64, steps int, trace bool) mmSeedResult {
	opts := paxos.Options{ElectionTicks: 6, HeartbeatTicks: 2, PipelineWindow: 4, ProposeQueueMax: 16,
		CatchUpBatch: 4, ReadTTLTicks: 8}
	mn := newMNet(t, majority(3), 3, journal.ModeMulti, opts, seed)
	mn.trace = trace
	mn.addJoiner(4, majority(5))
	mn.addJoiner(5, majority(5))
	rng := mn.rng
	systems := mmCandidateSystems()
	pick := func() *tnode { return mn.nodes[rng.IntN(len(mn.nodes))] }
	var sum paxos.Counters
	addCounters := func(c paxos.Counters) {
		sum.Elections += c.Elections
		sum.ReconfiguredElections += c.ReconfiguredElections
		sum.StaleConfigurations += c.StaleConfigurations
		sum.Collections += c.Collections
		sum.JoinerVotes += c.JoinerVotes
		sum.Decided += c.Decided
	}
	reconfs := 0
	x := uint64(seed << 24)
	for step := range steps {
		for range 1 + rng.IntN(8) {
			if len(mn.pool) == 0 {
				break
			}
			i := rng.IntN(len(mn.pool))
			switch rng.IntN(40) {
			case 0, 1:
				mn.pool = append(mn.pool, mn.pool[i])
				mn.deliver(i)
			case 2:
				mn.logf("drop %s", mn.pool[i])
				mn.pool = slices.Delete(mn.pool, i, i+1)
			default:
				mn.deliver(i)
			}
		}
		switch r := rng.IntN(10); {
		case r < 5:
			mn.sync(pick())
		case r < 8:
			mn.syncAll()
		}
		if rng.IntN(10) < 3 {
			for _, tn := range mn.nodes {
				mn.tick(tn)
			}
		} else if rng.IntN(3) == 0 {
			mn.tick(pick())
		}
		if l := mn.leader(); l != nil && rng.IntN(3) == 0 {
			x++
			res := l.node.Propose(unfenced(fmt.Sprintf("s%d-%x", seed, x)).Entry)
			mn.logf("propose at %d -> %d slot %d", l.id, res.Status, res.Slot)
			mn.drainNode(l)
		}
		switch r := rng.IntN(200); {
		case r < 4:
			tn := pick()
			if l := mn.leader(); l != nil && rng.IntN(4) > 0 {
				tn = l
			}
			if tn.up {
				sys := systems[rng.IntN(len(systems))]
				reconfs++
				mn.logf("reconfigure at %d to %v %s", tn.id, sys.Members(), sys)
				if err := tn.node.Reconfigure(sys); err != nil {
					t.Fatalf("Reconfigure(%s) at node %d: %v", sys, tn.id, err)
				}
				mn.drainNode(tn)
			}
		case r < 9:
			tn := pick()
			if tn.up {
				addCounters(tn.node.Counters())
				if rng.IntN(2) == 0 {
					mn.sync(tn)
				}
				mn.crash(tn)
			}
		case r < 16:
			if tn := pick(); !tn.up {
				mn.boot(tn)
			}
		case r < 18:
			if x := mn.mms[rng.IntN(len(mn.mms))]; x.up {
				mn.crashMM(x)
			} else {
				mn.bootMM(x)
			}
		case r < 20 && mn.cut == nil:
			mn.cut = map[paxos.NodeID]bool{pick().id: true}
			mn.logf("cut %v", mn.cut)
		case r < 26 && mn.cut != nil:
			mn.cut = nil
			mn.logf("heal")
		}
		if step%20 == 0 {
			mn.durableQuorums()
		}
	}
	mn.cut = nil
	for _, x := range mn.mms {
		if !x.up {
			mn.bootMM(x)
		}
	}
	for _, tn := range mn.nodes {
		if !tn.up {
			mn.boot(tn)
		}
	}
	for range 40 {
		mn.syncAll()
		for k := 0; len(mn.pool) > 0 && k < mmTailDeliveriesMax; k++ {
			mn.deliver(0)
			mn.syncAll()
		}
		for _, tn := range mn.nodes {
			mn.tick(tn)
		}
	}
	mn.syncAll()
	mn.durableQuorums()
	for _, tn := range mn.nodes {
		addCounters(tn.node.Counters())
	}
	res := mmSeedResult{counters: sum, reconfs: reconfs, stuck: mn.stuck()}
	if trace && res.stuck != "" {
		tail := mn.log[max(0, len(mn.log)-80):]
		res.stuck += "\ntrace tail:\n" + strings.Join(tail, "\n")
	}
	return res
}

// mmSeedResult is what one seed of the randomized run reports.
type mmSeedResult struct {
	counters paxos.Counters
	reconfs  int
	// stuck says why the quiet tail did not converge ("" when it did).
	stuck string
}

// stuck reports why the network has not converged: no leader, or a member
// of the leader's configuration behind it.
func (mn *mnet) stuck() string {
	l := mn.leader()
	if l == nil {
		return "no leader: " + mn.String()
	}
	for _, id := range l.node.Configuration().Acceptors.Members() {
		if tn := mn.find(id); tn != nil && tn.node.Applied() != l.node.Applied() {
			return fmt.Sprintf("node %d applied %d, leader %d applied %d", id, tn.node.Applied(), l.id, l.node.Applied())
		}
	}
	return ""
}

// mmTailDeliveriesMax bounds the deliveries of one round of the quiet tail:
// a livelock there is reported as a liveness failure, not a hang.
const mmTailDeliveriesMax = 500
