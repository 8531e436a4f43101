package paxos_test

// This file holds the helpers of the scenario tests (scenario_*_test.go):
// short scripts over the test network of harness_test.go (real nodes over
// memstore, a message pool the script delivers, drops and reorders by hand,
// disks that sync only when told). Each test opens with the paragraph of the
// paper or the rule it plays, then runs its steps — propose, deliver, sync,
// crash, boot, tick — with the expected state checked inline, the way etcd
// raft's datadriven scripts read. The oracles of oracles_test.go run after
// every step as well, so a script that breaks a safety claim fails with the
// claim's name even where the script itself checks nothing.

import (
	"slices"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
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
