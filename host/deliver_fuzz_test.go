package host_test

// FuzzDeliverFrame feeds whole Peer frames — protobuf bytes, as an attacker
// on the network or a lying member would send them — through the wire
// decoder into a live host of a three-host cell that has elected a leader
// and decided writes. Whatever the bytes, no host panics and no host stops;
// after the frame, the honest cell still settles. The seeds include the
// hostile-input probe's two attacks: a Commit at ballot round 2^64-1 (which
// once crashed every machine) and a forged Accept plus Commit naming the
// real writer (which authentication, not this decoder, must keep out), and
// messages at the edges of the core's bounds.

import (
	"math"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/wire"
)

func deliverFrameSeeds() [][]byte {
	top := paxos.Ballot{Round: math.MaxUint64, Node: 2}
	edge := paxos.Ballot{Round: paxos.BallotRoundMax, Node: 2}
	forged := journal.Write(journal.Entry{Records: [][]byte{[]byte("forged")}})
	msgs := [][]paxos.Message{
		{{Type: paxos.MsgCommit, From: 2, To: 1, Ballot: top, Commit: 1}},
		{{Type: paxos.MsgPrepare, From: 2, To: 1, Ballot: top, Slot: 1}},
		{{Type: paxos.MsgCommit, From: 2, To: 1, Ballot: edge, Commit: 2}},
		{{Type: paxos.MsgNack, From: 2, To: 1, Ballot: edge, Refused: paxos.Ballot{Round: 1, Node: 1}, Slot: 1}},
		{
			{Type: paxos.MsgAccept, From: 2, To: 1, Ballot: paxos.Ballot{Round: 50, Node: 2}, Entries: []paxos.SlotCommand{{Slot: 2, Ballot: paxos.Ballot{Round: 50, Node: 2}, Command: forged}}},
			{Type: paxos.MsgCommit, From: 2, To: 1, Ballot: paxos.Ballot{Round: 50, Node: 2}, Commit: 2},
		},
		{{Type: paxos.MsgCatchUpResponse, From: 2, To: 1, Entries: []paxos.SlotCommand{{Slot: 1, Ballot: paxos.Ballot{Round: 9, Node: 2}, Command: forged}}}},
		{{Type: paxos.MsgHeartbeat, From: 2, To: 1, Ballot: paxos.Ballot{Round: 1, Node: 2}, Commit: paxos.SlotMax}},
	}
	var out [][]byte
	for _, batch := range msgs {
		var envs []host.Envelope
		for _, m := range batch {
			envs = append(envs, host.Envelope{Journal: jA, Msg: m})
		}
		raw, err := proto.Marshal(wire.DeliverToPB(2, envs))
		if err != nil {
			panic(err)
		}
		out = append(out, raw)
	}
	return out
}

func FuzzDeliverFrame(f *testing.F) {
	for _, s := range deliverFrameSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		// Arrange: a cell whose node 1 leads and decided one write.
		c := newCluster(t, testTunables(), spec(jA, multi, first))
		c.elect(1, jA)
		c.call(1, write(1, jA, "a"))
		c.settle()

		// Act: the frame reaches node 1 and node 3, as if from node 2.
		var d pb.Deliver
		if proto.Unmarshal(raw, &d) != nil {
			return
		}
		from, batch, err := wire.DeliverFromPB(&d)
		if err != nil {
			return
		}
		for _, to := range []paxos.NodeID{1, 3} {
			if from == to {
				continue
			}
			for i := range batch {
				batch[i].Msg.To = to
			}
			c.hosts[to].OnDeliver(from, batch)
		}
		c.settleTicks(3 * testTunables().ElectionTicks)

		// Check: no host stopped (a panic would have failed the test).
		c.requireRunning(t)
	})
}
