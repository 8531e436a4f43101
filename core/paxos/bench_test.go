package paxos_test

// BenchmarkNodeThroughput measures the core alone: three nodes in memory,
// storage writes dropped (the core's cost, not a disk's), every message
// delivered at once. The leader proposes single-record entries, one per
// Ready or 64 per Ready, and the benchmark reports chosen slots per second
// and allocations per slot for the whole cell (all three nodes' CPU; the
// leader's share is below it). The replicas variants add two replica
// nodes, to which the leader pushes every chosen value: the leader's
// ns/slot is the replica tier's cost to the write path. The proxies variants
// add two proxy leaders the settled leader delegates every round to: the
// leader's messages sent and received per slot are what proxies save it.

import (
	"testing"
	"time"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/storage/memstore"
)

type benchCell struct {
	nodes   []*paxos.Node
	byID    map[paxos.NodeID]*paxos.Node
	proxies map[paxos.NodeID]*paxos.Proxy
	// leaderOut and leaderIn count the leader's messages.
	leaderOut, leaderIn int
	queue               []paxos.Message
	next                []paxos.Message
	// leaderTime accumulates wall time spent inside the leader's calls
	// (node 1), so the leader's share of the cell's CPU is reported apart.
	leaderTime time.Duration
}

func newBenchCell(b *testing.B, acceptors, replicas, proxies int) *benchCell {
	return newBenchCellOf(b, majority(acceptors), replicas, proxies)
}

func newBenchCellOf(b *testing.B, sys quorum.System, replicas, proxies int) *benchCell {
	c := &benchCell{byID: map[paxos.NodeID]*paxos.Node{}, proxies: map[paxos.NodeID]*paxos.Proxy{}}
	var reps, pxs []paxos.NodeID
	for i := range replicas {
		reps = append(reps, paxos.NodeID(101+i))
	}
	for i := range proxies {
		id := paxos.NodeID(201 + i)
		pxs = append(pxs, id)
		c.proxies[id] = paxos.NewProxy(id, paxos.ProxyOptions{})
	}
	for _, id := range append(sys.Members(), reps...) {
		n, err := paxos.NewNode(paxos.Config{ID: id, Acceptors: sys, Mode: journal.ModeSingle, Replicas: reps, Replica: id > 100, Proxies: pxs},
			paxos.Options{PipelineWindow: 4096, ProposeQueueMax: 8192}, memstore.New())
		if err != nil {
			b.Fatal(err)
		}
		c.nodes = append(c.nodes, n)
		c.byID[id] = n
	}
	for !c.nodes[0].IsLeader() {
		c.nodes[0].Tick()
		c.pump()
	}
	c.pump()
	return c
}

// pump drains every node's Ready and delivers messages until quiet.
func (c *benchCell) pump() {
	for {
		for i, n := range c.nodes {
			var t0 time.Time
			if i == 0 {
				t0 = time.Now()
			}
			if n.HasReady() {
				rd := n.Ready()
				c.queue = append(c.queue, rd.Messages...)
				if i == 0 {
					c.leaderOut += len(rd.Messages)
				}
				n.Advance()
			}
			if i == 0 {
				c.leaderTime += time.Since(t0)
			}
		}
		if len(c.queue) == 0 && !c.anyReady() {
			return
		}
		c.queue, c.next = c.next[:0], c.queue
		for i := range c.next {
			m := &c.next[i]
			if m.To == 1 {
				c.leaderIn++
				t0 := time.Now()
				c.nodes[0].Step(*m)
				c.leaderTime += time.Since(t0)
				continue
			}
			if p := c.proxies[m.To]; p != nil {
				p.Step(*m)
				c.queue = append(c.queue, p.Messages()...)
				continue
			}
			c.byID[m.To].Step(*m)
		}
		clear(c.next)
	}
}

func (c *benchCell) anyReady() bool {
	for _, n := range c.nodes {
		if n.HasReady() {
			return true
		}
	}
	return false
}

func benchPropose(b *testing.B, perReady, acceptors, replicas, proxies int) {
	c := newBenchCell(b, acceptors, replicas, proxies)
	leader := c.nodes[0]
	uuid := journal.LeaderUUID{Hi: 1, Lo: 1}
	leader.ProposeControl(journal.SetLeader(uuid, journal.LeaderUUID{}))
	c.pump()
	rec := [][]byte{make([]byte, 64)}
	next := leader.State().NextSeq
	start := leader.ChosenIndex()
	b.ReportAllocs()
	c.leaderTime, c.leaderOut, c.leaderIn = 0, 0, 0
	b.ResetTimer()
	for i := 0; i < b.N; i += perReady {
		for k := 0; k < perReady && i+k < b.N; k++ {
			t0 := time.Now()
			res := leader.Propose(journal.Entry{Leader: uuid, Seq: next, Records: rec})
			c.leaderTime += time.Since(t0)
			if res.Status != paxos.Proposed {
				b.Fatalf("propose: %v", res.Status)
			}
			next++
		}
		c.pump()
	}
	b.StopTimer()
	slots := float64(leader.ChosenIndex() - start)
	if int(slots) != b.N {
		b.Fatalf("chose %v slots, want %d", slots, b.N)
	}
	b.ReportMetric(slots/b.Elapsed().Seconds(), "slots/s")
	b.ReportMetric(float64(c.leaderTime.Nanoseconds())/slots, "leader-ns/slot")
	b.ReportMetric(float64(c.leaderOut)/slots, "leader-msgs-out/slot")
	b.ReportMetric(float64(c.leaderIn)/slots, "leader-msgs-in/slot")
}

func BenchmarkNodeThroughput(b *testing.B) {
	b.Run("single", func(b *testing.B) { benchPropose(b, 1, 3, 0, 0) })
	b.Run("batch64", func(b *testing.B) { benchPropose(b, 64, 3, 0, 0) })
	b.Run("single-2replicas", func(b *testing.B) { benchPropose(b, 1, 3, 2, 0) })
	b.Run("batch64-2replicas", func(b *testing.B) { benchPropose(b, 64, 3, 2, 0) })
	b.Run("single-2proxies", func(b *testing.B) { benchPropose(b, 1, 3, 0, 2) })
	b.Run("batch64-2proxies", func(b *testing.B) { benchPropose(b, 64, 3, 0, 2) })
	b.Run("single-5acceptors", func(b *testing.B) { benchPropose(b, 1, 5, 0, 0) })
	b.Run("single-5acceptors-2proxies", func(b *testing.B) { benchPropose(b, 1, 5, 0, 2) })
}

// BenchmarkQuorumReadGrid2x3 is one leaderless read after another from a
// follower of a 2×3 grid, and reports the PreReads one read sends: a grid
// read asks one row (two peers when the reader's own row is picked, three
// otherwise), where it asked every member (five peers) before.
func BenchmarkQuorumReadGrid2x3(b *testing.B) {
	sys, err := quorum.NewGrid([]quorum.ID{1, 2, 3, 4, 5, 6}, 2, 3)
	if err != nil {
		b.Fatal(err)
	}
	c := newBenchCellOf(b, sys, 0, 0)
	reader := c.byID[6]
	preReads := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if !reader.QuorumRead(uint64(i) + 1) {
			b.Fatal("read not opened")
		}
		// Every PreRead of the read is in the Ready after QuorumRead (a
		// read widens only on a tick, and none passes here).
		rd := reader.Ready()
		for _, m := range rd.Messages {
			if m.Type == paxos.MsgPreRead {
				preReads++
			}
		}
		c.queue = append(c.queue, rd.Messages...)
		reader.Advance()
		c.pump()
		if got := reader.Counters().ReadsServed; got != uint64(i)+1 {
			b.Fatalf("read %d not served (served %d)", i+1, got)
		}
	}
	b.ReportMetric(float64(preReads)/float64(b.N), "prereads/read")
}
