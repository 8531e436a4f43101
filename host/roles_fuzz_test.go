package host_test

// FuzzRoleMessage sends one message of any type, from a sender of any role,
// with fuzzed fields, into the live hosts of a three-host cell that lists a
// replica (101) and a proxy (201) and has elected node 1 and decided a
// write. The roles are the core's own table (core/paxos/roles.go): node 2
// is an acceptor, 101 a replica, 201 a proxy, 9 no machine of the cell.
// Whatever arrives, no host stops, and the value the message carries
// (sent by a replica, a proxy naming a leader that does not lead, a member
// at another member's ballot, a stranger) is never chosen on any host. A
// proxy naming the ballot's owner is trusted with it and is not drawn.

import (
	"bytes"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
)

// fuzzSenders are the senders a fuzzed message comes from, by role.
var fuzzSenders = []paxos.NodeID{2, 101, 201, 9}

func FuzzRoleMessage(f *testing.F) {
	for _, typ := range paxos.MsgTypes() {
		for s := range fuzzSenders {
			f.Add(uint8(s), uint8(typ), uint64(1), uint8(0), uint64(2), uint64(2), uint8(0), []byte("forged"))
		}
	}
	// The attacks: a member's Accept and Commit at the leader's ballot; a
	// proxy's naming a member that does not lead; a replica's at a ballot
	// of its own.
	f.Add(uint8(0), uint8(paxos.MsgAccept), uint64(1), uint8(1), uint64(2), uint64(2), uint8(0), []byte("forged"))
	f.Add(uint8(2), uint8(paxos.MsgAccept), uint64(1), uint8(1), uint64(2), uint64(2), uint8(3), []byte("forged"))
	f.Add(uint8(1), uint8(paxos.MsgAccept), uint64(9), uint8(2), uint64(2), uint64(2), uint8(0), []byte("forged"))
	// Found by this target: a proxy naming itself the leader of a ballot
	// of its own, above the real leader's.
	f.Add(uint8(2), uint8(paxos.MsgAccept), uint64(1), uint8(0), uint64(2), uint64(2), uint8(4), []byte("0"))
	f.Fuzz(func(t *testing.T, sender, typ uint8, round uint64, owner uint8, slot, commit uint64, leader uint8, rec []byte) {
		// Arrange: node 1 leads and decided one write.
		sp := spec(jA, multi, first)
		sp.Replicas, sp.Proxies = []paxos.NodeID{101}, []paxos.NodeID{201}
		c := newCluster(t, testTunables(), sp)
		c.elect(1, jA)
		c.call(1, write(1, jA, "a"))
		c.settle()

		// Act: the message, with its entry and its Commit, to nodes 1 and 3.
		from := fuzzSenders[int(sender)%len(fuzzSenders)]
		owners := []paxos.NodeID{from, 1, 2, 3, 101, 201, 9}
		b := paxos.Ballot{Round: round, Node: owners[int(owner)%len(owners)]}
		leaders := []paxos.NodeID{0, 1, 2, 3, 201}
		named := leaders[int(leader)%len(leaders)]
		forged := append([]byte("forged:"), rec...)
		t2 := paxos.MsgType(typ)
		if from == 2 && (b.Node == 2 || t2 != paxos.MsgAccept && t2 != paxos.MsgCommit && t2 != paxos.MsgHeartbeat) {
			// A member speaking in its own name is in the crash-fault model's
			// trust (FuzzDeliverFrame feeds it any frame): here it is drawn
			// only speaking at a ballot it does not own.
			return
		}
		if from == 201 && named == b.Node && named >= 1 && named <= 3 {
			// A proxy speaking for the owner of the ballot is trusted with it:
			// an acceptor cannot tell its forged Accept from a delegated one
			// (docs/guide/security.md says why delegations are not signed).
			return
		}
		cmd := journal.Write(journal.Entry{Records: [][]byte{forged}})
		s := paxos.Slot(slot % 8)
		for _, to := range []paxos.NodeID{1, 3} {
			m := paxos.Message{Type: paxos.MsgType(typ), From: from, To: to, Ballot: b, Leader: named, Slot: s,
				Commit: paxos.Slot(commit % 8), Entries: []paxos.SlotCommand{{Slot: s, Ballot: b, Command: cmd}},
				Votes: []paxos.SlotVote{{Slot: s, VHash: cmd.Fingerprint()}}}
			cm := paxos.Message{Type: paxos.MsgCommit, From: from, To: to, Ballot: b, Leader: named, Commit: s,
				Votes: []paxos.SlotVote{{Slot: s, VHash: cmd.Fingerprint()}}}
			c.hosts[to].OnDeliver(from, []host.Envelope{{Journal: jA, Msg: m}, {Journal: jA, Msg: cm}})
		}
		c.settleTicks(3 * testTunables().ElectionTicks)

		// Check: no host stopped; the forged value is chosen nowhere.
		c.requireRunning(t)
		for _, id := range c.ids {
			n := c.hosts[id].Node(jA)
			if n == nil {
				continue
			}
			for s := paxos.Slot(1); s <= n.ChosenIndex(); s++ {
				if got, ok := n.Learner().Chosen(s); ok && got.Kind == journal.KindWrite && len(got.Entry.Records) == 1 &&
					bytes.Equal(got.Entry.Records[0], forged) {
					t.Fatalf("host %d chose the forged value at slot %d, sent by %d at %s naming leader %d", id, s, from, b, named)
				}
			}
		}
	})
}
