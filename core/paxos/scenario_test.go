package paxos_test

// This file holds the scenario tests: short scripts over the test network of
// harness_test.go (real nodes over memstore, a message pool the script
// delivers, drops and reorders by hand, disks that sync only when told). Each
// test opens with the paragraph of the paper or the rule it plays, then runs
// its steps — propose, deliver, sync, crash, boot, tick — with the expected
// state checked inline, the way etcd raft's datadriven scripts read. The
// oracles of oracles_test.go run after every step as well, so a script that
// breaks a safety claim fails with the claim's name even where the script
// itself checks nothing.

import (
	"fmt"
	"slices"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

// scenarioOpts are small tunables, so a script needs few ticks.
func scenarioOpts() paxos.Options {
	return paxos.Options{ElectionTicks: 6, HeartbeatTicks: 2, CatchUpRetryTicks: 4, ReadTTLTicks: 6}
}

// match picks pooled messages by type, sender, addressee and slot; a zero
// field matches anything. slot matches an entry of an Accept, Promise or
// CatchUpResponse, or a vote of an Accepted.
type match struct {
	typ      paxos.MsgType
	from, to paxos.NodeID
	slot     paxos.Slot
}

func (w match) is(m paxos.Message) bool {
	if (w.typ != 0 && m.Type != w.typ) || (w.from != 0 && m.From != w.from) || (w.to != 0 && m.To != w.to) {
		return false
	}
	if w.slot == 0 {
		return true
	}
	for _, e := range m.Entries {
		if e.Slot == w.slot {
			return true
		}
	}
	for _, v := range m.Votes {
		if v.Slot == w.slot {
			return true
		}
	}
	return false
}

// inPool lists the pooled messages w matches, leaving them in the pool.
func inPool(net *network, w match) []paxos.Message {
	var out []paxos.Message
	for _, m := range net.pool {
		if w.is(m) {
			out = append(out, m)
		}
	}
	return out
}

// heldBy lists the messages w matches that a node holds until its disk syncs.
func heldBy(tn *tnode, w match) []paxos.Message {
	var out []paxos.Message
	for _, b := range tn.held {
		for _, m := range b.msgs {
			if w.is(m) {
				out = append(out, m)
			}
		}
	}
	return out
}

// take removes the pooled messages w matches and returns them: the network
// lost them (or the script keeps them to deliver late).
func take(net *network, w match) []paxos.Message {
	var out []paxos.Message
	kept := net.pool[:0]
	for _, m := range net.pool {
		if w.is(m) {
			out = append(out, m)
		} else {
			kept = append(kept, m)
		}
	}
	net.pool = kept
	return out
}

// deliverMsgs delivers the given messages in order (through the partition,
// if any). What they provoke stays in the pool.
func deliverMsgs(net *network, msgs ...paxos.Message) {
	for _, m := range msgs {
		net.pool = append(net.pool, m)
		net.deliver(len(net.pool) - 1)
	}
}

// deliverOnly delivers the messages w matches that are pooled now, and
// reports how many there were.
func deliverOnly(net *network, w match) int {
	msgs := take(net, w)
	deliverMsgs(net, msgs...)
	return len(msgs)
}

// stepAcross hands one message to its addressee whatever the partition: a
// message that left before the partition and arrives late.
func stepAcross(net *network, m paxos.Message) {
	tn := net.node(m.To)
	tn.node.Step(m)
	net.drain(tn)
}

// syncAll makes every up node's writes durable and releases what it held.
func syncAll(net *network) {
	for _, tn := range net.nodes {
		net.sync(tn)
	}
}

// exchange runs a fault-free burst without ticking: sync every disk and
// deliver every message until the pool is empty.
func exchange(net *network) {
	for {
		syncAll(net)
		if len(net.pool) == 0 {
			return
		}
		net.deliver(0)
	}
}

// campaign ticks a node until it becomes a candidate, then syncs it so its
// Prepares leave (they wait for its own promise to be durable).
func campaign(net *network, tn *tnode) {
	net.t.Helper()
	for range 100 {
		if tn.node.Role() == "candidate" {
			net.sync(tn)
			return
		}
		net.tick(tn)
	}
	net.t.Fatalf("node %d never campaigned", tn.id)
}

// propose asks tn to decide cmd and returns the slot it was given.
func propose(net *network, tn *tnode, cmd journal.Command) paxos.Slot {
	net.t.Helper()
	var res paxos.ProposeResult
	if cmd.Kind == journal.KindWrite {
		res = tn.node.Propose(cmd.Entry)
	} else {
		res = tn.node.ProposeControl(cmd)
	}
	if res.Status != paxos.Proposed {
		net.t.Fatalf("propose %s at node %d: status %d, hint %d", cmd, tn.id, res.Status, res.LeaderHint)
	}
	net.drain(tn)
	return res.Slot
}

// unfenced is a multi-writer write of the given records.
func unfenced(recs ...string) journal.Command {
	return journal.Write(journal.Entry{Records: bytesOf(recs)})
}

// fencedWrite is a single-writer write under uuid u at position seq.
func fencedWrite(u journal.LeaderUUID, seq journal.Seq, recs ...string) journal.Command {
	return journal.Write(journal.Entry{Leader: u, Seq: seq, Records: bytesOf(recs)})
}

func bytesOf(recs []string) [][]byte {
	out := make([][]byte, len(recs))
	for i, r := range recs {
		out[i] = []byte(r)
	}
	return out
}

// acceptSlots lists the slots the given Accepts carry, ascending, once each.
func acceptSlots(msgs []paxos.Message) []paxos.Slot {
	var out []paxos.Slot
	for _, m := range msgs {
		for _, e := range m.Entries {
			if !slices.Contains(out, e.Slot) {
				out = append(out, e.Slot)
			}
		}
	}
	slices.Sort(out)
	return out
}

func expectEq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

// expectFolded checks that every listed node folded slot s to cmd.
func expectFolded(t *testing.T, net *network, s paxos.Slot, cmd journal.Command, nodes ...*tnode) {
	t.Helper()
	if len(nodes) == 0 {
		nodes = net.nodes
	}
	for _, tn := range nodes {
		c, ok := tn.applied[s]
		if !ok {
			t.Fatalf("node %d has not folded slot %d (applied %d)", tn.id, s, tn.node.Applied())
		}
		if !c.Command.Equal(cmd) {
			t.Fatalf("node %d folded slot %d as %s, want %s", tn.id, s, c.Command, cmd)
		}
	}
}

func readPage(t *testing.T, n *paxos.Node, from journal.Seq) []string {
	t.Helper()
	r := n.ReadLog(from, 100, 1<<20)
	if r.Kind != paxos.ReadPage {
		t.Fatalf("node %d read from %d: kind %d, want a page", n.ID(), from, r.Kind)
	}
	var out []string
	for _, rec := range r.Records {
		out = append(out, string(rec))
	}
	return out
}

var (
	noLeader = journal.LeaderUUID{}
	writerU  = journal.LeaderUUID{Hi: 0x5eed, Lo: 1}
)

// Paxos Made Simple §2.2. A proposer whose ballot a majority promised sends
// Accept requests; once a majority accepts a value it is chosen, and every
// learner learns the same value. Node 1 is elected, sets the writer fence
// and writes one batch of two records: every node folds both slots to the
// same outcome and serves the same records.
func TestScenarioLeaderChoosesWrite(t *testing.T) {
	net := newNetwork(t, majority(3), journal.ModeSingle, scenarioOpts(), 1)
	n1 := net.node(1)

	// elect: node 1 campaigns at ballot 1.1 and every node promises it.
	net.electLeader(n1)
	expectEq(t, "leader ballot", n1.node.LeaderBallot(), paxos.Ballot{Round: 1, Node: 1})
	for _, tn := range net.nodes {
		expectEq(t, fmt.Sprintf("node %d promise", tn.id), tn.node.Promised(), paxos.Ballot{Round: 1, Node: 1})
	}

	// propose set-leader(u), then write [a b] at position 1, and let the
	// network run.
	sl := journal.SetLeader(writerU, noLeader)
	wr := fencedWrite(writerU, 1, "a", "b")
	s1 := propose(net, n1, sl)
	s2 := propose(net, n1, wr)
	exchange(net)

	// every node chose, folded and judged both slots alike.
	expectEq(t, "slots", [2]paxos.Slot{s1, s2}, [2]paxos.Slot{1, 2})
	expectFolded(t, net, s1, sl)
	expectFolded(t, net, s2, wr)
	for _, tn := range net.nodes {
		expectEq(t, "set-leader outcome", tn.applied[s1].Outcome.Kind, journal.LeaderSet)
		out := tn.applied[s2].Outcome
		expectEq(t, "write outcome", out.String(), "accepted[1,+2)")
		expectEq(t, "next seq", tn.node.State().NextSeq, journal.Seq(3))
		expectEq(t, "records", fmt.Sprint(readPage(t, tn.node, 1)), "[a b]")
	}
	net.oracles.converged()
	net.oracles.durableQuorums()
}

// Persist before send. An acceptor's vote is a promise to
// remember: its Accepted may leave only once the vote is durable, and the
// leader's own vote counts for a decision only in memory until its disk
// syncs — the Commit waits for that sync. Here node 2's Accepted waits in
// its held batch until it syncs; then node 1 decides slot 1 from node 2's
// vote and its own unsynced one, and crashes before syncing. The Commit
// never left and no fold was released, so the slot was never counted: a new
// leader (node 3) whose quorum lacks node 2 chooses another value there, and
// node 2's stale vote is overwritten once it rejoins.
func TestScenarioPersistBeforeSend(t *testing.T) {
	net := newNetwork(t, majority(3), journal.ModeMulti, scenarioOpts(), 2)
	n1, n2, n3 := net.node(1), net.node(2), net.node(3)
	net.electLeader(n1)
	w, v := unfenced("w"), unfenced("v")

	// propose w at node 1: its vote is written, not synced; its Accepts are
	// EarlyOK and leave at once.
	s := propose(net, n1, w)
	expectEq(t, "node 1 unsynced batches", n1.store.Pending(), 1)
	if _, _, ok := n1.store.Accepted(s); ok {
		t.Fatalf("node 1's vote is durable before any sync")
	}
	expectEq(t, "Accepts in the pool", len(inPool(net, match{typ: paxos.MsgAccept, from: 1})), 2)

	// node 3's Accept is lost; node 2 votes. Its Accepted is held, not sent.
	take(net, match{typ: paxos.MsgAccept, to: 3})
	deliverOnly(net, match{typ: paxos.MsgAccept, to: 2})
	expectEq(t, "Accepted in the pool before sync", len(inPool(net, match{typ: paxos.MsgAccepted})), 0)
	expectEq(t, "Accepted held by node 2", len(heldBy(n2, match{typ: paxos.MsgAccepted, to: 1, slot: s})), 1)
	expectEq(t, "node 2 unsynced batches", n2.store.Pending(), 1)

	// sync node 2: the vote is durable, the Accepted leaves.
	net.sync(n2)
	if _, c, ok := n2.store.Accepted(s); !ok || !c.Equal(w) {
		t.Fatalf("node 2's durable record at %d: %v %s", s, ok, c)
	}
	expectEq(t, "Accepted in the pool after sync", len(inPool(net, match{typ: paxos.MsgAccepted, from: 2})), 1)

	// node 1 decides slot 1 from its own unsynced vote and node 2's.
	deliverOnly(net, match{typ: paxos.MsgAccepted, to: 1})
	expectEq(t, "node 1 chosen index", n1.node.ChosenIndex(), s)
	expectEq(t, "Commits in the pool", len(inPool(net, match{typ: paxos.MsgCommit})), 0)
	expectEq(t, "Commits held by node 1", len(heldBy(n1, match{typ: paxos.MsgCommit})), 2)
	if _, ok := net.oracles.chosen[s]; ok {
		t.Fatalf("a fold of slot %d was released before the leader's vote was durable", s)
	}

	// crash node 1 before it syncs: its vote, its Commits and its fold are gone.
	net.crash(n1)
	net.boot(n1)
	if _, _, ok := n1.store.Accepted(s); ok {
		t.Fatalf("node 1 kept an unsynced vote across a crash")
	}
	expectEq(t, "node 1 chosen index after boot", n1.node.ChosenIndex(), paxos.Slot(0))

	// node 2 is cut off; node 3 leads with node 1, finds nothing at slot 1
	// and chooses v there.
	net.cut = map[paxos.NodeID]bool{2: true}
	net.electLeader(n3)
	expectEq(t, "node 3 recovered", n3.node.Counters().Recovered, uint64(0))
	expectEq(t, "v's slot", propose(net, n3, v), s)
	exchange(net)
	expectFolded(t, net, s, v, n1, n3)

	// heal: node 2 learns v, and its stale vote for w is overwritten.
	net.cut = nil
	net.settle(10)
	expectFolded(t, net, s, v)
	if b, c, ok := n2.store.Accepted(s); !ok || !c.Equal(v) || b != n3.node.LeaderBallot() {
		t.Fatalf("node 2's record at %d after rejoining: %v %s %s", s, ok, b, c)
	}
	net.oracles.converged()
	net.oracles.durableQuorums()
}

// Paxos Made Simple §2.2, P2c. A proposer that wins Phase 1 must propose, at
// each slot, the value of the highest-numbered proposal reported by its
// quorum. Five nodes: leader A (node 1, ballot 1.1) gets x accepted at slot
// 1 by node 2 only; partitioned away from A, leader B (node 3, ballot 2.3)
// gets y accepted at slot 1 by node 4 only. Then C (node 5) campaigns with
// nodes 2 and 4, which report x at 1.1 and y at 2.3. In either order of the
// reports, C re-proposes y, and y is what every node folds.
func TestScenarioRecoveryHighestBallotWins(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first paxos.NodeID
	}{
		{"lower ballot reported first", 2},
		{"higher ballot reported first", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			net := newNetwork(t, majority(5), journal.ModeMulti, scenarioOpts(), 3)
			n1, n3, n5 := net.node(1), net.node(3), net.node(5)
			x, y := unfenced("x"), unfenced("y")

			// A proposes x at slot 1; only node 2's Accept arrives.
			net.electLeader(n1)
			s := propose(net, n1, x)
			deliverOnly(net, match{typ: paxos.MsgAccept, to: 2})
			syncAll(net)
			take(net, match{})

			// partition {1,2} | {3,4,5}: B proposes y at slot 1; only node 4's
			// Accept arrives.
			net.cut = map[paxos.NodeID]bool{1: true, 2: true}
			net.electLeader(n3)
			expectEq(t, "B's ballot", n3.node.LeaderBallot(), paxos.Ballot{Round: 2, Node: 3})
			expectEq(t, "B's slot", propose(net, n3, y), s)
			deliverOnly(net, match{typ: paxos.MsgAccept, to: 4})
			syncAll(net)
			take(net, match{})

			// partition {1,3} | {2,4,5}: C campaigns; nodes 2 and 4 promise.
			net.cut = map[paxos.NodeID]bool{1: true, 3: true}
			campaign(net, n5)
			deliverOnly(net, match{typ: paxos.MsgPrepare, from: 5})
			syncAll(net)
			reports := map[paxos.NodeID][]paxos.SlotCommand{}
			for _, m := range inPool(net, match{typ: paxos.MsgPromise, to: 5}) {
				reports[m.From] = m.Entries
			}
			if r := reports[2]; len(r) != 1 || r[0].Ballot != (paxos.Ballot{Round: 1, Node: 1}) || !r[0].Command.Equal(x) {
				t.Fatalf("node 2 reports %v, want x at 1.1", r)
			}
			if r := reports[4]; len(r) != 1 || r[0].Ballot != (paxos.Ballot{Round: 2, Node: 3}) || !r[0].Command.Equal(y) {
				t.Fatalf("node 4 reports %v, want y at 2.3", r)
			}

			// deliver the reports in the test's order: C leads after both and
			// re-proposes y.
			deliverOnly(net, match{typ: paxos.MsgPromise, from: tc.first, to: 5})
			expectEq(t, "C after one report", n5.node.Role(), "candidate")
			deliverOnly(net, match{typ: paxos.MsgPromise, to: 5})
			expectEq(t, "C after both reports", n5.node.Role(), "leader")
			expectEq(t, "C recovered", n5.node.Counters().Recovered, uint64(1))
			exchange(net)
			expectFolded(t, net, s, y, net.node(2), net.node(4), n5)

			// heal: everyone folds y.
			net.cut = nil
			net.settle(10)
			expectFolded(t, net, s, y)
			net.oracles.converged()
			net.oracles.durableQuorums()
		})
	}
}

// Paxos Made Simple §3 (gaps in the sequence). A new leader that finds a
// slot nobody in its quorum reports proposes a no-op there, so the log has no
// hole and later commands can be applied. Node 1 proposes w1, w2, w3 at slots
// 1–3; node 2 receives only the Accepts of slots 1 and 3; node 1 goes down.
// Node 3 wins with node 2's reports: it re-proposes w1 and w3 and fills slot
// 2 with a Noop. When node 1 returns, its own stale vote for w2 is
// overwritten by the chosen Noop.
func TestScenarioNewLeaderFillsHoleWithNoop(t *testing.T) {
	net := newNetwork(t, majority(3), journal.ModeMulti, scenarioOpts(), 4)
	n1, n2, n3 := net.node(1), net.node(2), net.node(3)
	w1, w2, w3 := unfenced("w1"), unfenced("w2"), unfenced("w3")

	// node 1 proposes three writes; only slots 1 and 3 reach node 2.
	net.electLeader(n1)
	propose(net, n1, w1)
	propose(net, n1, w2)
	propose(net, n1, w3)
	deliverOnly(net, match{typ: paxos.MsgAccept, to: 2, slot: 1})
	deliverOnly(net, match{typ: paxos.MsgAccept, to: 2, slot: 3})
	net.sync(n2)
	take(net, match{})
	net.sync(n1)
	net.crash(n1)

	// node 3 campaigns: node 2 reports slots 1 and 3, nobody reports slot 2.
	net.electLeader(n3)
	c := n3.node.Counters()
	expectEq(t, "re-proposed", c.Recovered, uint64(2))
	expectEq(t, "gap-filled", c.GapFills, uint64(1))
	exchange(net)
	expectFolded(t, net, 1, w1, n2, n3)
	expectFolded(t, net, 2, journal.Noop(), n2, n3)
	expectFolded(t, net, 3, w3, n2, n3)
	expectEq(t, "slot 2 outcome", n3.applied[2].Outcome.Kind, journal.NoopDone)
	expectEq(t, "w3's position", n3.applied[3].Outcome.Seq, journal.Seq(2))

	// node 1 returns with w2 at 1.1 on disk; it learns the Noop.
	if _, c, _ := n1.store.Accepted(2); !c.Equal(w2) {
		t.Fatalf("node 1's durable slot 2 before rejoining: %s", c)
	}
	net.boot(n1)
	net.settle(10)
	expectFolded(t, net, 2, journal.Noop())
	if b, c, _ := n1.store.Accepted(2); !c.Equal(journal.Noop()) || b != n3.node.LeaderBallot() {
		t.Fatalf("node 1's slot 2 after rejoining: %s at %s", c, b)
	}
	net.oracles.converged()
	net.oracles.durableQuorums()
}

// Truncation is a decision. A client asks the leader to
// truncate; the leader proposes Control::Truncate into the next slot, and
// every node drops its prefix lazily, when its own walk reaches that slot:
// the floor becomes the slot holding the first retained record, and the
// journal state the dropped slots folded to is sealed in the same write. The
// promise is a scalar beside the log and never moves. A restarted node folds
// the retained log from the sealed state and lands where it was.
func TestScenarioDecidedTruncation(t *testing.T) {
	net := newNetwork(t, majority(3), journal.ModeSingle, scenarioOpts(), 5)
	n1, n2, n3 := net.node(1), net.node(2), net.node(3)

	// slots 1–4: set-leader, then [a b] at 1, [c d] at 3, [e f] at 5.
	net.electLeader(n1)
	propose(net, n1, journal.SetLeader(writerU, noLeader))
	propose(net, n1, fencedWrite(writerU, 1, "a", "b"))
	propose(net, n1, fencedWrite(writerU, 3, "c", "d"))
	propose(net, n1, fencedWrite(writerU, 5, "e", "f"))
	exchange(net)
	promise := n2.node.Promised()

	// propose truncate(up_to 5) at slot 5; nodes 2 and 3 vote.
	tr := journal.Truncate(writerU, 5)
	s := propose(net, n1, tr)
	expectEq(t, "truncate slot", s, paxos.Slot(5))
	deliverOnly(net, match{typ: paxos.MsgAccept})
	syncAll(net)

	// node 1 decides: its walk reaches slot 5 and its floor moves to slot 4,
	// which holds position 5. The others have voted but not learned.
	deliverOnly(net, match{typ: paxos.MsgAccepted, to: 1})
	expectEq(t, "node 1 floor", n1.node.Floor(), paxos.Slot(4))
	expectEq(t, "node 2 floor", n2.node.Floor(), paxos.Slot(1))
	expectEq(t, "node 3 floor", n3.node.Floor(), paxos.Slot(1))

	// the Commit reaches node 2, then node 3: each floor moves at its walk.
	net.sync(n1)
	deliverOnly(net, match{typ: paxos.MsgCommit, to: 2})
	expectEq(t, "node 2 floor", n2.node.Floor(), paxos.Slot(4))
	expectEq(t, "node 3 floor", n3.node.Floor(), paxos.Slot(1))
	deliverOnly(net, match{typ: paxos.MsgCommit, to: 3})
	expectEq(t, "node 3 floor", n3.node.Floor(), paxos.Slot(4))
	exchange(net)

	// every node judged the slot Trimmed to first_seq 5; the promise is
	// untouched; the prefix is gone from disk and the sealed state is the
	// fold of slots 1–3.
	expectFolded(t, net, s, tr)
	for _, tn := range net.nodes {
		out := tn.applied[s].Outcome
		expectEq(t, "truncate outcome", out.Kind, journal.Trimmed)
		expectEq(t, "first seq", out.View.FirstSeq, journal.Seq(5))
		expectEq(t, "promise", tn.node.Promised(), promise)
		expectEq(t, "durable floor", tn.store.FirstSlot(), paxos.Slot(4))
		if _, _, ok := tn.store.Accepted(3); ok {
			t.Fatalf("node %d still holds slot 3 below its floor", tn.id)
		}
		sealed := tn.store.SealedState()
		if sealed.Leader != writerU || sealed.Term() != 1 || sealed.NextSeq != 5 || sealed.FirstSeq != 1 {
			t.Fatalf("node %d sealed %s, want the fold of slots 1-3", tn.id, sealed)
		}
		expectEq(t, "durable promise", tn.store.InitialState().Promised, promise)
	}

	// restart node 2 from its disk: same floor, same state, same reads.
	before := n2.node.State()
	net.crash(n2)
	net.boot(n2)
	expectEq(t, "floor after restart", n2.node.Floor(), paxos.Slot(4))
	expectEq(t, "state after restart", n2.node.State(), before)
	expectEq(t, "promise after restart", n2.node.Promised(), promise)
	r := n2.node.ReadLog(1, 10, 1<<20)
	expectEq(t, "read below first_seq", r.Kind, paxos.ReadTruncated)
	expectEq(t, "resume at", r.View.FirstSeq, journal.Seq(5))
	expectEq(t, "retained records", fmt.Sprint(readPage(t, n2.node, 5)), "[e f]")

	// the journal goes on from the sealed base.
	propose(net, n1, fencedWrite(writerU, 7, "g"))
	net.settle(5)
	expectEq(t, "node 2 next seq", n2.node.State().NextSeq, journal.Seq(8))
	net.oracles.converged()
	net.oracles.durableQuorums()
}

// The node below the floor, and the trim-point jump.
// Node 3 is down while the cluster writes and truncates past its chosen
// prefix. When it returns, its CatchUpRequest is below the leader's floor,
// and the leader answers TrimmedTo{point, state} instead of a pretend replay.
// Node 3 persists the jump — floor = point, chosen index >= point-1, the
// state sealed — with its promise untouched, and asks again from the point.
// Until its walk reaches the Truncate, positions below what it holds are
// readable in the journal but not here (NotHeld); afterwards they are
// truncated. A TrimmedTo at or below its floor teaches it nothing.
func TestScenarioTrimPointJump(t *testing.T) {
	net := newNetwork(t, majority(3), journal.ModeSingle, scenarioOpts(), 6)
	n1, n2, n3 := net.node(1), net.node(2), net.node(3)

	// slot 1 is chosen everywhere; node 3 goes down.
	net.electLeader(n1)
	propose(net, n1, journal.SetLeader(writerU, noLeader))
	exchange(net)
	expectEq(t, "node 3 chosen", n3.node.ChosenIndex(), paxos.Slot(1))
	net.crash(n3)

	// nodes 1 and 2 choose three writes and truncate(up_to 5) at slot 5.
	propose(net, n1, fencedWrite(writerU, 1, "a", "b"))
	propose(net, n1, fencedWrite(writerU, 3, "c", "d"))
	propose(net, n1, fencedWrite(writerU, 5, "e", "f"))
	propose(net, n1, journal.Truncate(writerU, 5))
	exchange(net)
	expectEq(t, "node 1 floor", n1.node.Floor(), paxos.Slot(4))
	expectEq(t, "node 2 floor", n2.node.Floor(), paxos.Slot(4))
	expectEq(t, "read below first_seq at node 1", n1.node.ReadLog(1, 10, 1<<20).Kind, paxos.ReadTruncated)

	// node 3 returns; a heartbeat tells it slot 5 is chosen and it asks
	// node 1 for slots from 2.
	net.boot(n3)
	promise := n3.node.Promised()
	for len(inPool(net, match{typ: paxos.MsgHeartbeat, to: 3})) == 0 {
		net.tick(n1)
		net.sync(n1)
	}
	deliverOnly(net, match{typ: paxos.MsgHeartbeat, to: 3})
	reqs := take(net, match{typ: paxos.MsgCatchUpRequest, from: 3})
	if len(reqs) != 1 || reqs[0].Slot != 2 {
		t.Fatalf("catch-up requests %v, want one from slot 2", reqs)
	}

	// node 1 answers with its trim point, not a replay.
	deliverMsgs(net, reqs...)
	net.sync(n1)
	trims := take(net, match{typ: paxos.MsgTrimmedTo, to: 3})
	expectEq(t, "TrimmedTo answers", len(trims), 1)
	trim := trims[0]
	expectEq(t, "trim point", trim.Slot, paxos.Slot(4))
	expectEq(t, "trim state", trim.State, n1.store.SealedState())
	expectEq(t, "no replay", len(inPool(net, match{typ: paxos.MsgCatchUpResponse, to: 3})), 0)

	// node 3 jumps: floor 4, chosen 3, the state sealed at the point, the
	// promise as it was; it persists the jump and asks again from 4.
	deliverMsgs(net, trim)
	expectEq(t, "floor", n3.node.Floor(), paxos.Slot(4))
	expectEq(t, "chosen index", n3.node.ChosenIndex(), paxos.Slot(3))
	expectEq(t, "state", n3.node.State(), trim.State)
	expectEq(t, "promise", n3.node.Promised(), promise)
	expectEq(t, "trim jumps", n3.node.Counters().TrimJumps, uint64(1))
	net.sync(n3)
	expectEq(t, "durable floor", n3.store.FirstSlot(), paxos.Slot(4))
	expectEq(t, "durable sealed state", n3.store.SealedState(), trim.State)
	expectEq(t, "durable promise", n3.store.InitialState().Promised, promise)
	again := inPool(net, match{typ: paxos.MsgCatchUpRequest, from: 3})
	if len(again) != 1 || again[0].Slot != 4 {
		t.Fatalf("catch-up after the jump %v, want one from slot 4", again)
	}

	// reads: positions 1–4 are readable in the journal (first_seq is still 1
	// in node 3's fold) but node 3 no longer holds them.
	expectEq(t, "read at 1 on the jumped node", n3.node.ReadLog(1, 10, 1<<20).Kind, paxos.ReadNotHeld)
	expectEq(t, "read at 3 on the jumped node", n3.node.ReadLog(3, 10, 1<<20).Kind, paxos.ReadNotHeld)

	// the same TrimmedTo again, and one with a point below the floor, are ignored.
	n3.node.Step(trim)
	low := trim
	low.Slot = 2
	n3.node.Step(low)
	expectEq(t, "batch after stale trims", n3.node.HasReady(), false)
	expectEq(t, "trim jumps", n3.node.Counters().TrimJumps, uint64(1))
	expectEq(t, "floor", n3.node.Floor(), paxos.Slot(4))

	// catch-up brings slots 4 and 5; the walk reaches the Truncate and the
	// prefix is now truncated, not merely unheld.
	exchange(net)
	expectEq(t, "chosen index", n3.node.ChosenIndex(), paxos.Slot(5))
	expectEq(t, "state", n3.node.State(), n1.node.State())
	r := n3.node.ReadLog(1, 10, 1<<20)
	expectEq(t, "read at 1 after the walk", r.Kind, paxos.ReadTruncated)
	expectEq(t, "resume at", r.View.FirstSeq, journal.Seq(5))
	expectEq(t, "records", fmt.Sprint(readPage(t, n3.node, 5)), "[e f]")
	expectEq(t, "promise", n3.node.Promised(), promise)
	net.settle(5)
	net.oracles.converged()
}

// The quorum read. A node asks a Phase-1 quorum for
// vote watermarks, takes the max, and serves once its own fold covers it: an
// acknowledged write was voted by a Phase-2 quorum, which meets every Phase-1
// quorum. Node 3 lags one slot behind (it missed slot 2's Accept and Commit);
// its read settles on watermark 2 but answers only once catch-up folds slot 2.
// With no quorum reachable, the read expires unserved after ReadTTLTicks.
func TestScenarioQuorumRead(t *testing.T) {
	opts := scenarioOpts()
	opts.ReadTTLTicks = 4
	net := newNetwork(t, majority(3), journal.ModeMulti, opts, 7)
	n1, n2, n3 := net.node(1), net.node(2), net.node(3)

	// slot 1 everywhere; slot 2 chosen by nodes 1 and 2 only, its Commit to
	// node 3 delayed.
	net.electLeader(n1)
	propose(net, n1, unfenced("w1"))
	exchange(net)
	propose(net, n1, unfenced("w2"))
	take(net, match{typ: paxos.MsgAccept, to: 3})
	deliverOnly(net, match{typ: paxos.MsgAccept, to: 2})
	net.sync(n2)
	deliverOnly(net, match{typ: paxos.MsgAccepted, to: 1})
	net.sync(n1)
	late := take(net, match{typ: paxos.MsgCommit, to: 3})
	exchange(net)
	expectEq(t, "node 3 applied", n3.node.Applied(), paxos.Slot(1))
	expectEq(t, "node 2 watermark", n2.node.Acceptor().VoteWatermark(), paxos.Slot(2))

	// node 3 opens a read; the quorum answers watermark 2, which node 3's
	// fold does not cover yet, so nothing is answered.
	net.oracles.readOpened(42)
	if !n3.node.QuorumRead(42) {
		t.Fatalf("read not opened")
	}
	net.drain(n3)
	expectEq(t, "PreReads sent", len(inPool(net, match{typ: paxos.MsgPreRead, from: 3})), 2)
	exchange(net)
	if _, ok := n3.reads[42]; ok {
		t.Fatalf("read answered before node 3's fold covers the watermark")
	}

	// the late Commit arrives; node 3 catches up slot 2 and the read is served.
	deliverMsgs(net, late...)
	exchange(net)
	rs, ok := n3.reads[42]
	if !ok || !rs.OK || rs.Index != 2 {
		t.Fatalf("read state %+v (answered %v), want OK at index 2", rs, ok)
	}
	expectEq(t, "node 3 applied", n3.node.Applied(), paxos.Slot(2))

	// nodes 1 and 2 go down; node 3's next read finds no quorum and expires
	// after exactly ReadTTLTicks ticks.
	net.crash(n1)
	net.crash(n2)
	net.oracles.readOpened(43)
	n3.node.QuorumRead(43)
	net.drain(n3)
	for range opts.ReadTTLTicks - 1 {
		net.tick(n3)
	}
	if _, ok := n3.reads[43]; ok {
		t.Fatalf("read answered before its TTL with no quorum")
	}
	net.tick(n3)
	rs, ok = n3.reads[43]
	if !ok || rs.OK {
		t.Fatalf("read state %+v (answered %v), want expired unserved", rs, ok)
	}
	expectEq(t, "reads expired", n3.node.Counters().ReadsExpired, uint64(1))
}

// CheckQuorum. A leader that hears no Phase-2 quorum
// of acks for a whole election timeout cannot commit, and steps down so that
// a reachable node may lead. The window open when the partition begins may
// already hold acks, so the leader steps down at the end of the next window:
// within two (jittered) election timeouts of the cut. A leader that hears
// its quorum never steps down.
func TestScenarioCheckQuorumStepsDown(t *testing.T) {
	opts := scenarioOpts()
	net := newNetwork(t, majority(3), journal.ModeMulti, opts, 8)
	n1 := net.node(1)

	// a healthy leader keeps its office across many windows.
	net.electLeader(n1)
	net.settle(5 * opts.ElectionTicks)
	expectEq(t, "role while connected", n1.node.Role(), "leader")
	expectEq(t, "CheckQuorum step-downs", n1.node.Counters().CheckQuorumDowns, uint64(0))

	// isolate node 1 and tick it alone.
	net.cut = map[paxos.NodeID]bool{1: true}
	maxTimeout := 2*opts.ElectionTicks - 1 // the harness jitters in [E, 2E)
	ticks := 0
	for n1.node.IsLeader() && ticks < 2*maxTimeout {
		net.tick(n1)
		exchange(net)
		ticks++
	}
	if n1.node.IsLeader() {
		t.Fatalf("isolated leader still leads after %d ticks", ticks)
	}
	t.Logf("stepped down %d ticks after the cut", ticks)
	expectEq(t, "CheckQuorum step-downs", n1.node.Counters().CheckQuorumDowns, uint64(1))
	expectEq(t, "role", n1.node.Role(), "follower")
	expectEq(t, "propose after stepping down", n1.node.Propose(journal.Entry{Records: [][]byte{[]byte("x")}}).Status, paxos.NotLeader)
}

// Flexible Paxos §3: Phase-1 and Phase-2 quorums need only intersect each
// other (q1 + q2 > n). With n = 4, q1 = 3 and q2 = 2, a candidate needs three
// promises, and a leader then decides a slot with two votes.
//
// Flexible Paxos §4, the grid: members laid out row-major in rows × cols; a
// full row is a Phase-1 quorum and slot s's column (s mod cols) is its
// Phase-2 quorum. On a 2×2 grid over nodes 1–4 (rows {1,2},{3,4}; columns
// {1,3},{2,4}), an Accept for slot 1 goes to nodes 2 and 4 only, the leader
// (node 1, column 0) casts no vote in it, and a vote from outside the column
// decides nothing.
func TestScenarioFlexibleAndGridQuorums(t *testing.T) {
	t.Run("flexible q1=3 q2=2", func(t *testing.T) {
		sys, err := quorum.NewFlexible([]quorum.ID{1, 2, 3, 4}, 3, 2)
		if err != nil {
			t.Fatal(err)
		}
		net := newNetwork(t, sys, journal.ModeMulti, scenarioOpts(), 9)
		n1 := net.node(1)

		// two promises (node 1's own and node 2's) are not a Phase-1 quorum.
		campaign(net, n1)
		deliverOnly(net, match{typ: paxos.MsgPrepare, to: 2})
		net.sync(net.node(2))
		deliverOnly(net, match{typ: paxos.MsgPromise, to: 1})
		expectEq(t, "role after 2 promises", n1.node.Role(), "candidate")
		deliverOnly(net, match{typ: paxos.MsgPrepare, to: 3})
		net.sync(net.node(3))
		deliverOnly(net, match{typ: paxos.MsgPromise, to: 1})
		expectEq(t, "role after 3 promises", n1.node.Role(), "leader")
		take(net, match{})

		// two votes (node 1's own and node 2's) decide.
		w := unfenced("w")
		s := propose(net, n1, w)
		deliverOnly(net, match{typ: paxos.MsgAccept, to: 2})
		net.sync(net.node(2))
		take(net, match{typ: paxos.MsgAccept})
		deliverOnly(net, match{typ: paxos.MsgAccepted, to: 1})
		expectEq(t, "chosen with two votes", n1.node.ChosenIndex(), s)
		for _, id := range []paxos.NodeID{3, 4} {
			if _, _, ok := net.node(id).node.Acceptor().Record(s); ok {
				t.Fatalf("node %d voted", id)
			}
		}
		net.settle(5)
		expectFolded(t, net, s, w)
		net.oracles.converged()
	})

	t.Run("grid 2x2", func(t *testing.T) {
		sys, err := quorum.NewGrid([]quorum.ID{1, 2, 3, 4}, 2, 2)
		if err != nil {
			t.Fatal(err)
		}
		net := newNetwork(t, sys, journal.ModeMulti, scenarioOpts(), 10)
		n1 := net.node(1)
		net.electLeader(n1)
		w1, w2 := unfenced("w1"), unfenced("w2")

		// slot 1 is column 1 = {2, 4}: the Accept goes there only, and the
		// leader holds no vote for it. Slot 2 is column 0 = {1, 3}.
		s1 := propose(net, n1, w1)
		s2 := propose(net, n1, w2)
		var to1, to2 []paxos.NodeID
		for _, m := range inPool(net, match{typ: paxos.MsgAccept, from: 1}) {
			for _, e := range m.Entries {
				if e.Slot == s1 {
					to1 = append(to1, m.To)
				} else {
					to2 = append(to2, m.To)
				}
			}
		}
		slices.Sort(to1)
		expectEq(t, "slot 1 addressees", fmt.Sprint(to1), "[2 4]")
		expectEq(t, "slot 2 addressees", fmt.Sprint(to2), "[3]")
		// The leader records every round it opens (the durable frontier):
		// outside its column the record is a stray copy the tally never
		// counts (checked below: slot 1 waits for its own column).
		if b, c, ok := n1.node.Acceptor().Record(s1); !ok || b != n1.node.LeaderBallot() || !c.Equal(w1) {
			t.Fatalf("leader did not record the round it opened outside its column")
		}
		if _, _, ok := n1.node.Acceptor().Record(s2); !ok {
			t.Fatalf("leader did not vote in a slot of its own column")
		}

		// the column votes; a vote from node 3 (outside column 1) decides
		// nothing, node 2's alone is not the column, node 4's completes it.
		deliverOnly(net, match{typ: paxos.MsgAccept})
		syncAll(net)
		stepAcross(net, paxos.Message{Type: paxos.MsgAccepted, From: 3, To: 1, Ballot: n1.node.LeaderBallot(),
			Votes: []paxos.SlotVote{{Slot: s1, VHash: w1.Fingerprint()}}})
		expectEq(t, "chosen after an outside vote", n1.node.ChosenIndex(), paxos.Slot(0))
		deliverOnly(net, match{typ: paxos.MsgAccepted, from: 2, to: 1})
		expectEq(t, "chosen after half the column", n1.node.ChosenIndex(), paxos.Slot(0))
		deliverOnly(net, match{typ: paxos.MsgAccepted, from: 4, to: 1})
		expectEq(t, "chosen after the full column", n1.node.ChosenIndex(), s1)
		if _, c, ok := n1.node.Acceptor().Record(s1); !ok || !c.Equal(w1) {
			t.Fatalf("leader does not hold the value it decided outside its column")
		}
		deliverOnly(net, match{typ: paxos.MsgAccepted, from: 3, to: 1})
		expectEq(t, "chosen after slot 2's column", n1.node.ChosenIndex(), s2)
		net.settle(5)
		expectFolded(t, net, s1, w1)
		expectFolded(t, net, s2, w2)
		net.oracles.converged()
		net.oracles.durableQuorums()
	})
}

// The client entry. The leader keeps at most PipelineWindow Accepts in flight
// and holds the rest until decisions come back; beyond ProposeQueueMax open
// rounds it answers Busy; a follower answers NotLeader with the leader it
// last heard.
func TestScenarioPipelineWindow(t *testing.T) {
	opts := scenarioOpts()
	opts.PipelineWindow, opts.ProposeQueueMax = 2, 5
	net := newNetwork(t, majority(3), journal.ModeMulti, opts, 11)
	n1, n2 := net.node(1), net.node(2)
	net.electLeader(n1)

	// five proposals: slots 1–5, but only slots 1 and 2 leave.
	for i := range 5 {
		expectEq(t, "slot", propose(net, n1, unfenced(fmt.Sprint("w", i))), paxos.Slot(i+1))
	}
	for _, to := range []paxos.NodeID{2, 3} {
		expectEq(t, fmt.Sprint("slots in flight to ", to), fmt.Sprint(acceptSlots(inPool(net, match{typ: paxos.MsgAccept, to: to}))), "[1 2]")
	}

	// a sixth is refused Busy; a follower refuses NotLeader, naming node 1.
	res := n1.node.Propose(journal.Entry{Records: [][]byte{[]byte("w5")}})
	expectEq(t, "sixth proposal", res.Status, paxos.Busy)
	res = n2.node.Propose(journal.Entry{Records: [][]byte{[]byte("w5")}})
	expectEq(t, "follower's answer", res.Status, paxos.NotLeader)
	expectEq(t, "follower's hint", res.LeaderHint, paxos.NodeID(1))

	// votes for slots 1 and 2 come back: slots 3 and 4 leave, then 5.
	deliverOnly(net, match{typ: paxos.MsgAccept})
	syncAll(net)
	deliverOnly(net, match{typ: paxos.MsgAccepted})
	expectEq(t, "chosen", n1.node.ChosenIndex(), paxos.Slot(2))
	expectEq(t, "next in flight", fmt.Sprint(acceptSlots(inPool(net, match{typ: paxos.MsgAccept, to: 2}))), "[3 4]")
	deliverOnly(net, match{typ: paxos.MsgAccept})
	syncAll(net)
	deliverOnly(net, match{typ: paxos.MsgAccepted})
	expectEq(t, "last in flight", fmt.Sprint(acceptSlots(inPool(net, match{typ: paxos.MsgAccept, to: 2}))), "[5]")
	exchange(net)
	for _, tn := range net.nodes {
		expectEq(t, "applied", tn.node.Applied(), paxos.Slot(5))
	}
	expectEq(t, "proposal after the window drained", n1.node.Propose(journal.Entry{Records: [][]byte{[]byte("w5")}}).Status, paxos.Proposed)
	net.oracles.converged()
}

// Election: Promises are paged (PROMISE_BATCH) with a
// continuation cursor, and a sender counts toward the Phase-1 quorum only
// after its terminal page. Slots 1–5 were accepted by nodes 2 and 3 but
// their Commit was lost with node 1. Node 2 campaigns with PromiseBatch = 2:
// node 3 answers in three pages — [1 2] then [3 4] then [5] — and node 2
// leads only once the last one is in, re-proposing all five.
func TestScenarioPromisePaging(t *testing.T) {
	opts := scenarioOpts()
	opts.PromiseBatch = 2
	net := newNetwork(t, majority(3), journal.ModeMulti, opts, 12)
	n1, n2, n3 := net.node(1), net.node(2), net.node(3)

	// five writes reach nodes 2 and 3; node 1 crashes before announcing them.
	net.electLeader(n1)
	for i := range 5 {
		propose(net, n1, unfenced(fmt.Sprint("w", i)))
	}
	deliverOnly(net, match{typ: paxos.MsgAccept})
	net.sync(n2)
	net.sync(n3)
	take(net, match{})
	net.crash(n1)
	expectEq(t, "node 2 chosen", n2.node.ChosenIndex(), paxos.Slot(0))

	// node 2 campaigns from slot 1; node 3 pages its five records.
	campaign(net, n2)
	type page struct {
		from, next paxos.Slot
		slots      string
	}
	var pages []page
	for range 5 {
		deliverOnly(net, match{typ: paxos.MsgPrepare, from: 2, to: 3})
		net.sync(n3)
		ps := take(net, match{typ: paxos.MsgPromise, to: 2})
		if len(ps) != 1 {
			t.Fatalf("promise pages in flight: %v", ps)
		}
		p := ps[0]
		var slots []paxos.Slot
		for _, e := range p.Entries {
			slots = append(slots, e.Slot)
		}
		pages = append(pages, page{p.Slot, p.Next, fmt.Sprint(slots)})
		expectEq(t, "role before the terminal page", n2.node.Role(), "candidate")
		deliverMsgs(net, p)
		if p.Next == 0 {
			break
		}
	}
	expectEq(t, "pages", fmt.Sprint(pages), "[{1 3 [1 2]} {3 5 [3 4]} {5 0 [5]}]")
	expectEq(t, "role after the terminal page", n2.node.Role(), "leader")
	expectEq(t, "re-proposed", n2.node.Counters().Recovered, uint64(5))

	net.boot(n1)
	net.settle(10)
	for i := range 5 {
		expectFolded(t, net, paxos.Slot(i+1), unfenced(fmt.Sprint("w", i)))
	}
	net.oracles.converged()
}

// lagging is three nodes where node 1 leads and chose slots 1..chosen
// while node 3 was down; node 3 is back and has heard a heartbeat, so its
// first CatchUpRequest is in the pool.
func lagging(t *testing.T, opts paxos.Options, chosen int) (*network, *tnode) {
	t.Helper()
	net := newNetwork(t, majority(3), journal.ModeMulti, opts, 13)
	n1, n3 := net.node(1), net.node(3)
	net.electLeader(n1)
	net.crash(n3)
	for i := range chosen {
		propose(net, n1, unfenced(fmt.Sprint("w", i)))
	}
	exchange(net)
	expectEq(t, "leader chosen", n1.node.ChosenIndex(), paxos.Slot(chosen))
	net.boot(n3)
	for len(inPool(net, match{typ: paxos.MsgHeartbeat, to: 3})) == 0 {
		net.tick(n1)
		net.sync(n1)
	}
	deliverOnly(net, match{typ: paxos.MsgHeartbeat, to: 3})
	return net, n3
}

// catchUpRound delivers node 3's pending CatchUpRequests to node 1 and
// takes node 1's answers out of the pool: the slot asked from, and the
// pages (ok is false when node 3 asked nothing).
func catchUpRound(net *network) (paxos.Slot, []paxos.Message, bool) {
	reqs := take(net, match{typ: paxos.MsgCatchUpRequest, from: 3})
	if len(reqs) == 0 {
		return 0, nil, false
	}
	deliverMsgs(net, reqs...)
	net.sync(net.node(1))
	return reqs[0].Slot, take(net, match{typ: paxos.MsgCatchUpResponse, to: 3}), true
}

// Catch-up: a lagging node is replayed the chosen log in pages of at most
// CatchUpBatch entries, asking again from where each page ended. Node 3
// misses five chosen slots; with CatchUpBatch = 2 and a window of one page it
// asks from 1, 3 and 5 and receives 2, 2 and 1 entries.
func TestScenarioCatchUpPages(t *testing.T) {
	opts := scenarioOpts()
	opts.CatchUpBatch = 2
	opts.CatchUpPages = 1
	// slots 1–5 are chosen while node 3 is down; it returns and hears a
	// heartbeat.
	net, n3 := lagging(t, opts, 5)

	// each request is answered with one bounded page.
	var asked []paxos.Slot
	var sizes []int
	for range 10 {
		from, resp, ok := catchUpRound(net)
		if !ok {
			break
		}
		asked = append(asked, from)
		sizes = append(sizes, len(resp[0].Entries))
		deliverMsgs(net, resp...)
		net.sync(n3)
	}
	expectEq(t, "asked from", fmt.Sprint(asked), "[1 3 5]")
	expectEq(t, "page sizes", fmt.Sprint(sizes), "[2 2 1]")
	expectEq(t, "node 3 chosen", n3.node.ChosenIndex(), paxos.Slot(5))
	net.settle(5)
	net.oracles.converged()
}

// One request is answered with a window of up to CatchUpPages pages, so a
// node far behind moves a window per round trip, not a page. Every page
// but the window's last names where the next starts (Next); only the last
// (Next 0) makes the requester ask again. Node 3 misses seven chosen
// slots; with CatchUpBatch = 2 and a window of 2 pages it asks from 1 and
// 5, and is answered pages of 2, 2 (Next 3, then 0) and 2, 1 (Next 7,
// then 0). A page lost from the middle of a window costs one more request,
// from where the learned prefix ends.
func TestScenarioCatchUpWindow(t *testing.T) {
	opts := scenarioOpts()
	opts.CatchUpBatch = 2
	opts.CatchUpPages = 2
	for _, lose := range []bool{false, true} {
		net, n3 := lagging(t, opts, 7)

		var asked []paxos.Slot
		var pages []string
		for round := range 10 {
			from, resp, ok := catchUpRound(net)
			if !ok {
				break
			}
			asked = append(asked, from)
			for _, r := range resp {
				pages = append(pages, fmt.Sprintf("%d/%d", len(r.Entries), r.Next))
			}
			if lose && round == 0 {
				resp = resp[1:] // the window's first page is lost
			}
			deliverMsgs(net, resp...)
			net.sync(n3)
		}
		if lose {
			expectEq(t, "asked from (first page lost)", fmt.Sprint(asked), "[1 1 5]")
			expectEq(t, "pages (first page lost)", fmt.Sprint(pages), "[2/3 2/0 2/3 2/0 2/7 1/0]")
		} else {
			expectEq(t, "asked from", fmt.Sprint(asked), "[1 5]")
			expectEq(t, "pages", fmt.Sprint(pages), "[2/3 2/0 2/7 1/0]")
		}
		expectEq(t, "node 3 chosen", n3.node.ChosenIndex(), paxos.Slot(7))
		net.settle(5)
		net.oracles.converged()
	}
}

// Paxos Made Simple §2.2, learning a chosen value — BUG. A Commit c from the
// leader of ballot b tells a follower that a record it holds at exactly
// ballot b is the chosen value (node_replication.go, learnCommit). That is
// true only if the leader's proposal at b is the chosen value for every slot
// <= c. A leader that was deposed without knowing it can learn a slot by
// catch-up — a value chosen at a higher ballot — and then announce it under
// its own ballot; a follower holding that leader's own losing proposal at
// that ballot folds the wrong value.
//
// Five nodes. Node 1 (1.1) chooses p at slot 1; its Commit to node 2 is
// delayed. Node 2 wins 2.2 with nodes 3 and 4, re-proposes p and proposes v
// at slot 2, which only node 3 accepts. Partitioned from {2,3}, node 5 wins
// 2.5 with nodes 1 and 4 and chooses w at slot 2. The delayed Commit makes
// node 2, still leading at 2.2, ask node 1 for catch-up; it learns w at slot
// 2 and sends Commit(2.2, 2) to node 3, which holds v at 2.2.
func TestScenarioDeposedLeaderAnnouncesLearnedSlot(t *testing.T) {
	net := newNetwork(t, majority(5), journal.ModeMulti, scenarioOpts(), 14)
	n1, n2, n3, n5 := net.node(1), net.node(2), net.node(3), net.node(5)
	// v and w differ in record count so that their String forms differ.
	p, v, w := unfenced("p"), unfenced("v"), unfenced("w", "w")

	// node 1 chooses p at slot 1; the Commit to node 2 is kept back.
	net.electLeader(n1)
	propose(net, n1, p)
	deliverOnly(net, match{typ: paxos.MsgAccept})
	syncAll(net)
	deliverOnly(net, match{typ: paxos.MsgAccepted, to: 1})
	net.sync(n1)
	stale := take(net, match{typ: paxos.MsgCommit, to: 2})
	expectEq(t, "delayed Commits", len(stale), 1)
	exchange(net)
	expectEq(t, "node 2 chosen", n2.node.ChosenIndex(), paxos.Slot(0))

	// node 2 wins 2.2 with nodes 3 and 4; then {2,3} are cut off, and v at
	// slot 2 reaches node 3 only.
	campaign(net, n2)
	deliverOnly(net, match{typ: paxos.MsgPrepare, to: 3})
	deliverOnly(net, match{typ: paxos.MsgPrepare, to: 4})
	take(net, match{typ: paxos.MsgPrepare})
	syncAll(net)
	deliverOnly(net, match{typ: paxos.MsgPromise, to: 2})
	expectEq(t, "node 2 ballot", n2.node.LeaderBallot(), paxos.Ballot{Round: 2, Node: 2})
	net.cut = map[paxos.NodeID]bool{2: true, 3: true}
	exchange(net)
	expectEq(t, "v's slot", propose(net, n2, v), paxos.Slot(2))
	exchange(net)
	if b, c, _ := n3.node.Acceptor().Record(2); !c.Equal(v) || b != n2.node.LeaderBallot() {
		t.Fatalf("node 3's slot 2: %s at %s", c, b)
	}

	// node 5 wins 2.5 with nodes 1 and 4 and chooses w at slot 2.
	net.electLeader(n5)
	expectEq(t, "w's slot", propose(net, n5, w), paxos.Slot(2))
	exchange(net)
	expectFolded(t, net, 2, w, n1, net.node(4), n5)

	// the delayed Commit reaches node 2, which asks node 1 for catch-up
	// across the partition and learns w at slot 2 while still leading.
	stepAcross(net, stale[0])
	for _, m := range take(net, match{typ: paxos.MsgCatchUpRequest, from: 2, to: 1}) {
		stepAcross(net, m)
	}
	net.sync(n1)
	for _, m := range take(net, match{typ: paxos.MsgCatchUpResponse, from: 1, to: 2}) {
		stepAcross(net, m)
	}
	expectFolded(t, net, 2, w, n2)

	// whatever node 2 now tells node 3, node 3 must never fold v at slot 2.
	exchange(net)
	if c, ok := n3.applied[2]; ok && !c.Command.Equal(w) {
		t.Fatalf("node 3 folded %s at slot 2; %s was chosen", c.Command, w)
	}
	net.cut = nil
	net.settle(20)
	expectFolded(t, net, 2, w)
	net.oracles.converged()
}
