package paxos_test

// The randomized checker (FrankenPaxos style, below the full simulator):
// 3–5 real nodes over memstore under every quorum system, with random
// delivery, drops, duplicates and reordering, crashes before and after a
// batch is durable, restarts from disk, proposals of writes, retries,
// truncations and SetLeaders from several clients, and quorum reads. After
// every step the oracles of oracles_test.go run; every tenth step and at the
// end the durable-quorum oracle runs over every store. A quiet tail then
// restarts everyone and requires convergence. Across the sweep, gates
// require that each recovery path fired at least once (elections, recovery
// of found values, Noop gap fills, catch-up, decided truncation, the
// trim-point jump, CheckQuorum, served and expired reads).
//
// PAXOS_CHECK_SEEDS and PAXOS_CHECK_STEPS widen the sweep;
// PAXOS_CHECK_SEED replays one seed with a trace.

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func ids(n int) []quorum.ID {
	out := make([]quorum.ID, n)
	for i := range out {
		out[i] = quorum.ID(i + 1)
	}
	return out
}

// systemFor draws the seed's quorum system (swarm testing).
func systemFor(seed uint64) quorum.System {
	var s quorum.System
	var err error
	switch seed % 6 {
	case 0:
		s, err = quorum.NewMajority(ids(3))
	case 1:
		s, err = quorum.NewMajority(ids(5))
	case 2:
		s, err = quorum.NewFlexible(ids(4), 3, 2)
	case 3:
		s, err = quorum.NewFlexible(ids(5), 2, 4)
	case 4:
		s, err = quorum.NewGrid(ids(4), 2, 2)
	case 5:
		s, err = quorum.NewMajority(ids(4))
	}
	if err != nil {
		panic(err)
	}
	return s
}

type gates struct {
	paxos.Counters
	restarts, crashesUnsynced, partitions int
	// stream is the digest of every message the seed's nodes sent.
	stream uint64
}

func (g *gates) add(c paxos.Counters) {
	g.Campaigns += c.Campaigns
	g.Elections += c.Elections
	g.StepDowns += c.StepDowns
	g.CheckQuorumDowns += c.CheckQuorumDowns
	g.GapFills += c.GapFills
	g.Recovered += c.Recovered
	g.Decided += c.Decided
	g.CatchUps += c.CatchUps
	g.TrimJumps += c.TrimJumps
	g.Truncations += c.Truncations
	g.ReadsServed += c.ReadsServed
	g.ReadsExpired += c.ReadsExpired
	g.Evicted += c.Evicted
	g.Relinquished += c.Relinquished
	g.Inherited += c.Inherited
	g.RelinquishRefused += c.RelinquishRefused
	g.HandoffResigned += c.HandoffResigned
	g.ColumnFills += c.ColumnFills
	for i, v := range c.ColdReads {
		g.ColdReads[i] += v
	}
}

var uuids = []journal.LeaderUUID{{Hi: 1, Lo: 0xa}, {Hi: 2, Lo: 0xb}, {Hi: 3, Lo: 0xc}}

// runSeed runs one seed of the checker and returns its gate counters.
func runSeed(t testing.TB, seed uint64, steps int, trace bool) gates {
	return runSeedWith(t, seed, steps, trace, true)
}

// runSeedWith runs one seed; columns lets grid seeds propose some writes
// into a column of their choice (ProposeIn). The message-stream test runs
// without it, as the checker ran when its digests were recorded.
func runSeedWith(t testing.TB, seed uint64, steps int, trace, columns bool) gates {
	sys := systemFor(seed)
	mode := journal.ModeSingle
	if seed%5 == 4 {
		mode = journal.ModeMulti
	}
	opts := paxos.Options{ElectionTicks: 6, HeartbeatTicks: 2, PipelineWindow: 4, ProposeQueueMax: 16,
		PromiseBatch: 3, CatchUpBatch: 4, ReadTTLTicks: 8}
	if seed%2 == 0 {
		// A tiny hot window: applied records leave memory almost at once and
		// every lagging peer, Phase 1 and retry reads them back from disk.
		opts.HotSlotsMax, opts.HotBytesMax = 1+int(seed/2%6), 64
	}
	// A quarter of the seeds run a replica tier of one or two replica
	// nodes, crashed, read from and written to like any node.
	var replicas []paxos.NodeID
	if seed%4 == 3 {
		replicas = []paxos.NodeID{101, 102}[:1+seed/4%2]
	}
	net := newNetworkWithReplicas(t, sys, replicas, mode, opts, seed)
	net.trace = trace
	rng := net.rng
	var g gates
	var past []journal.Entry
	readCtx := uint64(seed << 20)

	calm := seed%3 == 1
	pick := func() *tnode { return net.nodes[rng.IntN(len(net.nodes))] }
	// relinquishes keeps every Relinquish seen in the pool, so a step can
	// replay one long after its leadership moved on.
	var relinquishes []paxos.Message
	for step := range steps {
		for _, m := range net.pool {
			if m.Type == paxos.MsgRelinquish && len(relinquishes) < 64 {
				relinquishes = append(relinquishes, m)
			}
		}
		// Every step delivers a burst of messages in random order (with
		// duplicates and drops), then perhaps syncs, ticks, proposes, reads,
		// crashes or restarts.
		for range 1 + rng.IntN(6) {
			if len(net.pool) == 0 {
				break
			}
			i := rng.IntN(len(net.pool))
			switch rng.IntN(40) {
			case 0, 1:
				net.pool = append(net.pool, net.pool[i]) // duplicate
				net.deliver(i)
			case 2:
				net.logf("drop %s", net.pool[i])
				net.pool = append(net.pool[:i], net.pool[i+1:]...)
			default:
				net.deliver(i)
			}
		}
		switch r := rng.IntN(10); {
		case r < 5:
			net.sync(pick())
		case r < 7:
			for _, tn := range net.nodes {
				net.sync(tn)
			}
		}
		if rng.IntN(10) < 3 {
			for _, tn := range net.nodes {
				net.tick(tn)
			}
		} else if rng.IntN(3) == 0 {
			net.tick(pick())
		}
		if rng.IntN(4) == 0 {
			tn := pick()
			if l := net.leader(); l != nil && rng.IntN(10) < 7 {
				tn = l
			}
			if tn.up {
				cmd := clientCommand(rng.IntN(100), rng.Uint64(), tn.node.State(), mode, &past)
				var res paxos.ProposeResult
				if cmd.Kind == journal.KindWrite && columns && sys.Kind() == quorum.KindGrid && rng.IntN(3) == 0 {
					res = tn.node.ProposeIn(cmd.Entry, rng.IntN(sys.Spec().Cols))
				} else if cmd.Kind == journal.KindWrite {
					res = tn.node.Propose(cmd.Entry)
				} else {
					res = tn.node.ProposeControl(cmd)
				}
				net.logf("propose at %d %s -> %v slot %d", tn.id, cmd, res.Status, res.Slot)
				net.drain(tn)
			}
		}
		// Cooperative handoff: the leader hands on to a random member (up or
		// down), perhaps in the middle of its rounds; an old Relinquish is
		// replayed now and then.
		if rng.IntN(25) == 0 {
			if l := net.leader(); l != nil {
				to := sys.Members()[rng.IntN(sys.Size())]
				err := l.node.RelinquishTo(to)
				net.logf("relinquish %d -> %d: %v", l.id, to, err)
				net.drain(l)
			}
		}
		if len(relinquishes) > 0 && rng.IntN(30) == 0 {
			m := relinquishes[rng.IntN(len(relinquishes))]
			net.logf("replay %s", m)
			net.pool = append(net.pool, m)
		}
		if rng.IntN(20) == 0 {
			tn := pick()
			if tn.up {
				readCtx++
				net.oracles.readOpened(readCtx)
				tn.node.QuorumRead(readCtx)
				net.drain(tn)
			}
		}
		// Swarm testing: a third of the seeds are calm (a quarter of the
		// faults), so leaders stream long runs of slots between failures.
		faultDraw := rng.IntN(100)
		if calm && rng.IntN(4) > 0 {
			faultDraw = 100
		}
		switch r := faultDraw; {
		case r < 2 && net.cut == nil:
			// Partition: isolate the leader (or a random node) with perhaps
			// one companion, so a deposed leader keeps proposing to a
			// minority while the majority elects another.
			net.cut = map[paxos.NodeID]bool{}
			victim := pick()
			if l := net.leader(); l != nil && rng.IntN(3) > 0 {
				victim = l
			}
			net.cut[victim.id] = true
			if len(net.nodes) > 3 && rng.IntN(2) == 0 {
				net.cut[pick().id] = true
			}
			g.partitions++
			net.logf("partition %v", net.cut)
		case r < 6 && net.cut != nil:
			net.cut = nil
			net.logf("heal")
		case r < 9:
			tn := pick()
			if tn.up {
				g.add(tn.node.Counters())
				if rng.IntN(2) == 0 {
					net.sync(tn) // crash after the batch is durable
				}
				if tn.store.Pending() > 0 {
					g.crashesUnsynced++
				}
				net.crash(tn)
			}
		case r < 13:
			tn := pick()
			if !tn.up {
				g.restarts++
				net.boot(tn)
			}
		}
		// Every node here is honest: a broken contract (two values at one
		// slot and ballot, reported or asked of an acceptor) is a bug.
		for _, tn := range net.nodes {
			if tn.up && tn.node.ContractFault() != nil {
				net.t.Fatalf("node %d met a broken Paxos contract at step %d: %v\n%s", tn.id, step, tn.node.ContractFault(), net.dumpLog())
			}
		}
		if step%10 == 0 {
			net.oracles.durableQuorums()
		}
	}
	// Quiet tail: everyone up, no faults, until convergence.
	net.cut = nil
	for _, tn := range net.nodes {
		if !tn.up {
			g.restarts++
			net.boot(tn)
		}
	}
	net.settle(80)
	net.oracles.durableQuorums()
	net.oracles.converged()
	for _, tn := range net.nodes {
		g.add(tn.node.Counters())
	}
	g.stream = net.stream.Sum64()
	return g
}

// clientCommand draws one client call: mostly well-formed writes at the
// tail under the leader in force, with stale fences, wrong positions,
// identical retries, SetLeaders and truncations mixed in.
func clientCommand(r int, x uint64, st journal.State, mode journal.WriterMode, past *[]journal.Entry) journal.Command {
	u := uuids[x%uint64(len(uuids))]
	if mode == journal.ModeMulti {
		switch {
		case r < 80:
			return journal.Write(journal.Entry{Records: records(x)})
		case r < 90:
			return journal.Truncate(journal.LeaderUUID{}, st.FirstSeq+journal.Seq(x%4))
		default:
			return journal.SetLeader(u, journal.LeaderUUID{})
		}
	}
	switch {
	case r < 55:
		e := journal.Entry{Leader: st.Leader, Seq: st.NextSeq, Records: records(x)}
		if x%7 == 0 {
			e.Leader = u // perhaps a stale fence
		}
		*past = append(*past, e)
		return journal.Write(e)
	case r < 65 && len(*past) > 0:
		return journal.Write((*past)[int(x%uint64(len(*past)))]) // an identical retry
	case r < 80:
		old := st.Leader
		if x%5 == 0 {
			old = u
		}
		return journal.SetLeader(uuids[(x/7)%uint64(len(uuids))], old)
	case r < 95:
		span := uint64(st.NextSeq-st.FirstSeq) + 2
		return journal.Truncate(st.Leader, st.FirstSeq+journal.Seq(x%span))
	default:
		return journal.Noop()
	}
}

func records(x uint64) [][]byte {
	n := 1 + int(x%3)
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(fmt.Sprintf("r%x.%d", x>>8, i))
	}
	return out
}

func TestCheckerRandomized(t *testing.T) {
	if s := os.Getenv("PAXOS_CHECK_SEED"); s != "" {
		seed, _ := strconv.ParseUint(s, 10, 64)
		runSeed(t, seed, envInt("PAXOS_CHECK_STEPS", 300), true)
		return
	}
	seeds := envInt("PAXOS_CHECK_SEEDS", 1000)
	steps := envInt("PAXOS_CHECK_STEPS", 400)
	from := uint64(envInt("PAXOS_CHECK_FROM", 1))
	var total gates
	for seed := from; seed < from+uint64(seeds); seed++ {
		ok := t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			g := runSeed(t, seed, steps, false)
			total.add(g.Counters)
			total.restarts += g.restarts
			total.crashesUnsynced += g.crashesUnsynced
			total.partitions += g.partitions
		})
		if !ok {
			t.Fatalf("seed %d failed; replay with PAXOS_CHECK_SEED=%d", seed, seed)
		}
	}
	t.Logf("gates over %d seeds × %d steps: %+v restarts=%d unsynced-crashes=%d", seeds, steps, total.Counters, total.restarts, total.crashesUnsynced)
	if seeds < 100 {
		return // a narrow replay need not fire every path
	}
	for name, v := range map[string]uint64{
		"a leader is elected":                                              total.Elections,
		"a new leader re-proposes a value it found":                        total.Recovered,
		"a new leader gap-fills a hole":                                    total.GapFills,
		"a lagging node catches up":                                        total.CatchUps,
		"a decided truncation drops a prefix":                              total.Truncations,
		"a below-floor node recovers by jumping to a peer's trim point":    total.TrimJumps,
		"a leader without an ack quorum steps down (CheckQuorum)":          total.CheckQuorumDowns,
		"a quorum read is served":                                          total.ReadsServed,
		"a quorum read expires unserved":                                   total.ReadsExpired,
		"a crash loses unsynced writes":                                    uint64(total.crashesUnsynced),
		"applied records leave memory (the hot window)":                    total.Evicted,
		"a lagging peer catches up from evicted records":                   total.ColdReads[paxos.ColdCatchUp],
		"a Promise page reports evicted records":                           total.ColdReads[paxos.ColdPromise],
		"a retry of an evicted write is judged from the store":             total.ColdReads[paxos.ColdDedup],
		"a boot folds its log back from the store in pages":                total.ColdReads[paxos.ColdBoot],
		"a leader hands its leadership on":                                 total.Relinquished,
		"a successor installs a handed-on authority":                       total.Inherited,
		"a stale or replayed Relinquish is refused":                        total.RelinquishRefused,
		"a write proposed into a chosen grid column fills the slots below": total.ColumnFills,
	} {
		if v == 0 {
			t.Errorf("gate never fired: %s", name)
		}
	}
}
