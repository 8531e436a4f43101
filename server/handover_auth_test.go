package server_test

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/server"
	"github.com/parosdb/paros/wire"
)

// Every role is a threat boundary: a replica's or a proxy's certificate of
// the cell may not speak in a matchmaker-set handover. A forged Chosen
// would point every node at a set of the forger's choosing (its own
// machines, which register whatever it likes); a forged Stop would freeze
// the set. The attack replays both from each role; a member's handover is
// delivered.
func TestPeerStreamRefusesAHandoverFromAReplicaOrAProxy(t *testing.T) {
	cell := newTestCell(t)
	srv := cell.node(t, serverID)
	forgeries := func(from uint64) []matchmaker.Handover {
		return []matchmaker.Handover{
			{Kind: matchmaker.HChosen, From: paxos.NodeID(from), To: serverID,
				Set: paxos.MatchmakerSet{Generation: 2, Members: []paxos.NodeID{paxos.NodeID(from)}}},
			{Kind: matchmaker.HStop, From: paxos.NodeID(from), To: serverID, Generation: 1},
		}
	}
	for _, from := range []uint64{replicaID, proxyID} {
		for _, h := range forgeries(from) {
			t.Run(fmt.Sprintf("%x %s", from, h.Kind), func(t *testing.T) {
				// Arrange.
				b := &fakeBackend{}
				conn := peerConn(t, serveAll(t, server.Security{Node: srv}, b), cell.node(t, from))

				// Act.
				err := peerStreamErr(t, conn, context.Background(), wire.DeliverToPB(paxos.NodeID(from), []host.Envelope{{Handover: &h}}))

				// Check.
				if status.Code(err) != codes.PermissionDenied {
					t.Fatalf("stream ended with %v, want PermissionDenied", err)
				}
				b.mu.Lock()
				defer b.mu.Unlock()
				if len(b.delivered) != 0 {
					t.Fatalf("delivered %+v", b.delivered)
				}
			})
		}
	}
	t.Run("a member's handover", func(t *testing.T) {
		// Arrange.
		b := &fakeBackend{}
		conn := peerConn(t, serveAll(t, server.Security{Node: srv}, b), cell.node(t, memberID))
		s, err := pb.NewPeerClient(conn).Stream(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		h := forgeries(memberID)[1]

		// Act.
		if err := s.Send(wire.DeliverToPB(memberID, []host.Envelope{{Handover: &h}})); err != nil {
			t.Fatal(err)
		}

		// Check.
		waitDelivered(t, b, 1)
		b.mu.Lock()
		defer b.mu.Unlock()
		if got := b.delivered[0].Handover; got == nil || got.Kind != matchmaker.HStop || got.From != memberID {
			t.Fatalf("delivered %+v", b.delivered)
		}
	})
}
