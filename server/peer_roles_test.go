package server_test

// The Peer stream applies the role table (core/paxos/roles.go) to every
// message before the host sees it: each message type × each role of the
// test cell, sent on a mutual-TLS stream with that role's certificate.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/server"
	"github.com/parosdb/paros/wire"
)

func TestPeerStreamAppliesTheRoleTable(t *testing.T) {
	cell := newTestCell(t)
	srv := cell.node(t, serverID)
	b := &fakeBackend{}
	addr := serveAll(t, server.Security{Node: srv}, b)
	senders := map[uint64]paxos.Role{memberID: paxos.RoleAcceptor, replicaID: paxos.RoleReplica, proxyID: paxos.RoleProxy}
	for id, role := range senders {
		conn := peerConn(t, addr, cell.node(t, id))
		for _, typ := range paxos.MsgTypes() {
			name := fmt.Sprintf("%s %s", role, typ)
			env := host.Envelope{Journal: jid, Msg: paxos.Message{Type: typ, From: paxos.NodeID(id), To: serverID,
				Ballot: paxos.Ballot{Round: 1, Node: paxos.NodeID(id)}, Slot: 1, Next: 2}}
			b.mu.Lock()
			before := len(b.delivered)
			b.mu.Unlock()

			err := peerStreamPair(t, conn, wire.DeliverToPB(paxos.NodeID(id), []host.Envelope{env}))

			b.mu.Lock()
			got := len(b.delivered) - before
			b.mu.Unlock()
			if paxos.MaySend(role, typ) {
				if got != 1 {
					t.Errorf("%s: %d Delivers reached the host (err %v), want 1", name, got, err)
				}
				continue
			}
			if status.Code(err) != codes.PermissionDenied || got != 0 {
				t.Errorf("%s: stream ended with %v and %d Delivers reached the host, want PermissionDenied and none", name, err, got)
			}
		}
	}
}

// peerStreamPair sends d, then a Deliver claiming another sender (which
// ends any stream with PermissionDenied), and returns how the stream
// ended: d went through if it reached the host before the stream ended.
func peerStreamPair(t *testing.T, conn *grpc.ClientConn, d *pb.Deliver) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := pb.NewPeerClient(conn).Stream(ctx)
	if err != nil {
		return err
	}
	_ = s.Send(d)
	_ = s.Send(wire.DeliverToPB(strangerID, []host.Envelope{heartbeat(strangerID, serverID)}))
	_, err = s.Recv()
	return err
}
