package paxos_test

// The replica tier (docs/guide/replicas.md): a replica node learns the chosen
// log and serves reads, and it never votes.

import (
	"errors"
	"fmt"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
)

// replicaNet is three acceptors (1–3) and two replica nodes (101, 102).
func replicaNet(t *testing.T, seed uint64) *network {
	return newNetworkWithReplicas(t, majority(3), []paxos.NodeID{101, 102}, journal.ModeMulti, scenarioOpts(), seed)
}

// A replica persists every chosen value as a Learned record, pushed by the
// leader's Commit; it sends no Promise, no Accepted, no HeartbeatAck and no
// PreReadAck, holds no promise and never campaigns.
func TestReplicaLearnsEveryChosenValueAndNeverVotes(t *testing.T) {
	net := replicaNet(t, 1)
	n1, r1, r2 := net.node(1), net.node(101), net.node(102)
	net.electLeader(n1)
	for i := range 20 {
		propose(net, n1, unfenced(fmt.Sprint("w", i)))
	}
	for range 40 {
		for _, m := range net.pool {
			if (m.From == 101 || m.From == 102) && m.Type != paxos.MsgCatchUpRequest && m.Type != paxos.MsgPreRead {
				t.Fatalf("a replica sent %s", m)
			}
		}
		net.settle(1)
	}
	for _, r := range []*tnode{r1, r2} {
		expectEq(t, "replica applied", r.node.Applied(), n1.node.Applied())
		expectEq(t, "replica state", r.node.State(), n1.node.State())
		expectEq(t, "replica promise", r.node.Promised(), paxos.Ballot{})
		expectEq(t, "replica role", r.node.Role(), "replica")
		expectEq(t, "replica accepts written", r.ops[paxos.OpAccept], 0)
		expectEq(t, "replica learned records", r.ops[paxos.OpLearned], int(n1.node.ChosenIndex()))
		if r.node.Counters().ReplicaPushes == 0 {
			t.Fatalf("replica %d learned nothing from a pushed Commit", r.id)
		}
		if c := r.node.Counters().Campaigns; c != 0 {
			t.Fatalf("replica %d campaigned %d times", r.id, c)
		}
	}
	expectEq(t, "records", fmt.Sprint(readPage(t, r2.node, 1)[:3]), "[w0 w1 w2]")
	net.oracles.converged()
	net.oracles.durableQuorums()
}

// A replica that misses Commits sees the gap in the next beat's watermark
// and asks for the missing range; the answer heals it.
func TestReplicaHealsALostCommitFromTheNextBeat(t *testing.T) {
	net := replicaNet(t, 2)
	n1, r1 := net.node(1), net.node(101)
	net.electLeader(n1)
	propose(net, n1, unfenced("a"))
	propose(net, n1, unfenced("b"))
	for range 10 {
		syncAll(net)
		take(net, match{typ: paxos.MsgCommit, to: 101})
		for len(net.pool) > 0 {
			net.deliver(0)
			syncAll(net)
			take(net, match{typ: paxos.MsgCommit, to: 101})
		}
	}
	expectEq(t, "replica applied before a beat", r1.node.Applied(), paxos.Slot(0))
	before := r1.node.Counters().CatchUps
	net.settle(10)
	expectEq(t, "replica applied", r1.node.Applied(), n1.node.Applied())
	if r1.node.Counters().CatchUps == before {
		t.Fatalf("replica healed without asking for the missing range")
	}
	net.oracles.converged()
}

// A replica that was down while the cluster truncated past its chosen
// prefix is answered TrimmedTo and jumps to the trim point, as any node
// below the floor does.
func TestReplicaBelowTheFloorJumpsToTheTrimPoint(t *testing.T) {
	net := newNetworkWithReplicas(t, majority(3), []paxos.NodeID{101}, journal.ModeSingle, scenarioOpts(), 3)
	n1, r := net.node(1), net.node(101)
	net.electLeader(n1)
	propose(net, n1, journal.SetLeader(writerU, noLeader))
	net.settle(3)
	net.crash(r)
	propose(net, n1, fencedWrite(writerU, 1, "a", "b"))
	propose(net, n1, fencedWrite(writerU, 3, "c", "d"))
	propose(net, n1, fencedWrite(writerU, 5, "e", "f"))
	propose(net, n1, journal.Truncate(writerU, 5))
	net.settle(3)
	expectEq(t, "leader floor", n1.node.Floor(), paxos.Slot(4))
	net.boot(r)
	net.settle(10)
	expectEq(t, "replica trim jumps", r.node.Counters().TrimJumps, uint64(1))
	expectEq(t, "replica floor", r.node.Floor(), paxos.Slot(4))
	expectEq(t, "replica state", r.node.State(), n1.node.State())
	expectEq(t, "read below the floor", r.node.ReadLog(1, 10, 1<<20).Kind, paxos.ReadTruncated)
	expectEq(t, "records", fmt.Sprint(readPage(t, r.node, 5)), "[e f]")
	net.oracles.converged()
}

// A replica serves the quorum read: it asks a Phase-1 quorum of acceptors
// for vote watermarks and answers once its own fold covers the largest.
func TestReplicaServesAQuorumRead(t *testing.T) {
	net := replicaNet(t, 4)
	n1, r1 := net.node(1), net.node(101)
	net.electLeader(n1)
	propose(net, n1, unfenced("a"))
	net.settle(3)
	// slot 2 is chosen, but its Commit to the replica is lost.
	propose(net, n1, unfenced("b"))
	for {
		syncAll(net)
		take(net, match{typ: paxos.MsgCommit, to: 101})
		if len(net.pool) == 0 {
			break
		}
		net.deliver(0)
	}
	expectEq(t, "leader chosen", n1.node.ChosenIndex(), paxos.Slot(2))
	expectEq(t, "replica applied", r1.node.Applied(), paxos.Slot(1))
	net.oracles.acked = 2
	net.oracles.readOpened(7)
	if !r1.node.QuorumRead(7) {
		t.Fatalf("replica opened no read")
	}
	net.drain(r1)
	expectEq(t, "PreReads", len(inPool(net, match{typ: paxos.MsgPreRead, from: 101})), 3)
	net.settle(5)
	rs, ok := r1.reads[7]
	if !ok || !rs.OK || rs.Index < 2 {
		t.Fatalf("read state %+v (answered %v), want OK at index >= 2", rs, ok)
	}
	expectEq(t, "records", fmt.Sprint(readPage(t, r1.node, 1)), "[a b]")
}

// A replica proposes nothing: a write asked of it is refused with the
// leader it heard.
func TestReplicaRefusesWritesWithTheLeaderHint(t *testing.T) {
	net := replicaNet(t, 5)
	n2, r1 := net.node(2), net.node(101)
	net.electLeader(n2)
	net.settle(3)
	res := r1.node.Propose(journal.Entry{Records: [][]byte{[]byte("x")}})
	expectEq(t, "status", res.Status, paxos.NotLeader)
	expectEq(t, "leader hint", res.LeaderHint, paxos.NodeID(2))
}

// The reply owner of slot s is replica s % replica_count.
func TestReplyOwnerIsSlotModuloReplicaCount(t *testing.T) {
	cfg := paxos.Config{Replicas: []paxos.NodeID{101, 102, 103}}
	for s, want := range map[paxos.Slot]paxos.NodeID{3: 101, 4: 102, 5: 103, 6: 101} {
		expectEq(t, fmt.Sprint("owner of ", s), cfg.ReplyOwner(s), want)
	}
	expectEq(t, "no replicas", paxos.Config{}.ReplyOwner(7), paxos.NodeID(0))
}

// A replica is in no configuration: one named among the acceptors, or not
// named among the replicas, is a configuration error.
func TestReplicaConfigurationIsRefusedWhenItCouldVote(t *testing.T) {
	base := paxos.Config{Acceptors: majority(3), Mode: journal.ModeMulti}
	for name, c := range map[string]paxos.Config{
		"replica among acceptors": {ID: 2, Replica: true, Replicas: []paxos.NodeID{2}},
		"replicas unsorted":       {ID: 1, Replicas: []paxos.NodeID{102, 101}},
		"acceptor as replica":     {ID: 1, Replicas: []paxos.NodeID{3}},
	} {
		c.Acceptors, c.Mode = base.Acceptors, base.Mode
		if err := c.Validate(); !errors.Is(err, paxos.ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
	}
	ok := base
	ok.ID, ok.Replica, ok.Replicas = 101, true, []paxos.NodeID{101, 102}
	if err := ok.Validate(); err != nil {
		t.Fatalf("a replica outside the acceptors: %v", err)
	}
}

// The replica list changes at run time (the operator added or removed a
// replica machine): a removed replica hears nothing more and its reads go
// unserved; added back, it catches up from the pushes and a catch-up.
func TestReplicaListChangesAtRunTime(t *testing.T) {
	opts := scenarioOpts()
	opts.ReadTTLTicks = 6
	net := newNetworkWithReplicas(t, majority(3), []paxos.NodeID{101, 102}, journal.ModeMulti, opts, 6)
	n1, r2 := net.node(1), net.node(102)
	setAll := func(ids ...paxos.NodeID) {
		for _, tn := range net.nodes {
			if err := tn.node.SetReplicas(ids); err != nil {
				t.Fatalf("node %d: SetReplicas(%v): %v", tn.id, ids, err)
			}
		}
	}
	setAll(101)
	net.electLeader(n1)
	for i := range 5 {
		propose(net, n1, unfenced(fmt.Sprint("w", i)))
	}
	net.settle(10)
	expectEq(t, "listed replica applied", net.node(101).node.Applied(), n1.node.Applied())
	expectEq(t, "removed replica applied", r2.node.Applied(), paxos.Slot(0))
	if !r2.node.QuorumRead(9) {
		t.Fatalf("read not opened")
	}
	net.drain(r2)
	net.settle(opts.ReadTTLTicks + 1)
	if rs, ok := r2.reads[9]; !ok || rs.OK {
		t.Fatalf("a removed replica's read: %+v (answered %v), want expired unserved", rs, ok)
	}
	setAll(101, 102)
	propose(net, n1, unfenced("w5"))
	net.settle(10)
	expectEq(t, "re-added replica applied", r2.node.Applied(), n1.node.Applied())
	expectEq(t, "re-added replica state", r2.node.State(), n1.node.State())
	if err := n1.node.SetReplicas([]paxos.NodeID{2}); !errors.Is(err, paxos.ErrConfig) {
		t.Fatalf("an acceptor as a replica: %v, want ErrConfig", err)
	}
	net.oracles.converged()
}
