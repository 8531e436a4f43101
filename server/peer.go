package server

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/security"
	"github.com/parosdb/paros/wire"
)

// Peer implements paros.v1.Peer: inbound consensus traffic.
type Peer struct {
	pb.UnimplementedPeerServer
	B Backend
	// RoleOf returns what node is to the cell (an acceptor, a replica, a
	// proxy, or paxos.RoleNone for no machine of the cell), read at each
	// stream's opening and each Deliver (a cell forms after the server
	// starts, and its lists change at run time). Nil means do not check
	// (the host drops what it does not expect).
	RoleOf func(node uint64) paxos.Role
}

// Stream hands each Deliver to the Backend once it passed, in order:
//
//	check                                        answer (the stream ends)
//	-------------------------------------------  ------------------------
//	with credentials: no peer certificate        PermissionDenied
//	its node is no machine of the cell           PermissionDenied
//	Deliver.from or a message's from is not the
//	  certificate's node id                      PermissionDenied
//	the Deliver does not decode (wire)           InvalidArgument
//	Deliver.from is no machine of the cell       PermissionDenied
//	a message of a type the sender's role never
//	  sends (paxos.MaySend)                      PermissionDenied
//
// Nothing of a refused Deliver reaches the host: a replica's certificate
// cannot send an Accept, a proxy's a Prepare, whatever journal it names.
// The core applies the same table again per journal (and binds an Accept
// or a Commit to its ballot's leader), so the edge is the first of two
// checks, not the only one. Without credentials (--insecure) the senders
// are taken at their word, and their word's role is checked.
func (s *Peer) Stream(stream grpc.BidiStreamingServer[pb.Deliver, pb.DeliverAck]) error {
	certNode, secured, err := peerNodeOf(stream.Context())
	if err != nil {
		return err
	}
	if secured {
		if _, err := s.roleOf(certNode); err != nil {
			return err
		}
	}
	for {
		d, err := stream.Recv()
		if err != nil {
			return err
		}
		if secured {
			if err := checkSenders(d, certNode); err != nil {
				return err
			}
		}
		from, batch, err := wire.DeliverFromPB(d)
		if err != nil {
			return status.Error(codes.InvalidArgument, err.Error())
		}
		role, err := s.roleOf(uint64(from))
		if err != nil {
			return err
		}
		if err := checkTypes(uint64(from), role, batch); err != nil {
			return err
		}
		s.B.Deliver(uint64(from), batch)
	}
}

// roleOf returns node's role, refusing a node that is no machine of the
// cell; with no RoleOf every node is taken as an acceptor.
func (s *Peer) roleOf(node uint64) (paxos.Role, error) {
	if s.RoleOf == nil {
		return paxos.RoleAcceptor, nil
	}
	r := s.RoleOf(node)
	if r == paxos.RoleNone {
		return r, status.Errorf(codes.PermissionDenied, "paros/server: node %016x is no machine of this cell", node)
	}
	return r, nil
}

// checkTypes refuses a batch holding a message its sender's role never
// sends (the table in core/paxos/roles.go).
func checkTypes(node uint64, role paxos.Role, batch []host.Envelope) error {
	for _, e := range batch {
		if e.MachineBeat {
			continue // every machine of the cell may say it is alive
		}
		if e.Handover != nil {
			// A handover is driven by a node machine's reconfigurer and
			// answered by its matchmaker role: a replica or a proxy
			// certificate may not stop, bootstrap, vote in or publish a
			// matchmaker set.
			if role != paxos.RoleAcceptor {
				return status.Errorf(codes.PermissionDenied, "paros/server: node %016x is a %s machine, which never sends a matchmaker handover", node, role)
			}
			continue
		}
		if !paxos.MaySend(role, e.Msg.Type) {
			return status.Errorf(codes.PermissionDenied, "paros/server: node %016x is a %s machine, which never sends %s", node, role, e.Msg.Type)
		}
	}
	return nil
}

// peerNodeOf returns the node id the stream's peer certificate names, as
// the gate established it; on a TLS connection the gate did not see (a
// server built without ServerOptions), from the connection itself.
// secured is false on a plaintext --insecure connection.
func peerNodeOf(ctx context.Context) (node uint64, secured bool, err error) {
	if p, ok := principalFrom(ctx); ok {
		if !p.secured {
			return 0, false, nil
		}
		if p.node == 0 {
			return 0, true, status.Error(codes.PermissionDenied, "paros/server: the Peer stream needs a peer certificate of this cell")
		}
		return p.node, true, nil
	}
	pr, ok := peer.FromContext(ctx)
	if !ok {
		return 0, false, nil
	}
	ti, ok := pr.AuthInfo.(credentials.TLSInfo)
	if !ok {
		return 0, false, nil
	}
	id, err := security.PeerNodeID(ti.State)
	if err != nil {
		return 0, true, status.Errorf(codes.PermissionDenied, "paros/server: the Peer stream needs a peer certificate of this cell: %v", err)
	}
	return id, true, nil
}

// checkSenders refuses a Deliver whose from, or any of whose messages'
// from, is not node (the certificate's): a peer speaks only for itself.
func checkSenders(d *pb.Deliver, node uint64) error {
	if d.GetFrom() != node {
		return status.Errorf(codes.PermissionDenied, "paros/server: node %016x sent a Deliver from %016x", node, d.GetFrom())
	}
	for _, e := range d.GetEnvelopes() {
		if e.GetMachineBeat() {
			continue // a beat speaks for the Deliver's from, checked above
		}
		f := e.GetMsg().GetFrom()
		if e.GetHandover() != nil {
			f = e.GetHandover().GetFrom()
		}
		if f != node {
			return status.Errorf(codes.PermissionDenied, "paros/server: node %016x sent a message from %016x", node, f)
		}
	}
	return nil
}
