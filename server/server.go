// Package server is paros's gRPC edge: it validates every request before
// consensus, translates protobuf to the plain host.Call types, and answers
// with the verdict the host gave — marking every reply without a verdict as
// ambiguous.
//
// Validation, answered in-band with a typed refusal
// and never proposed:
//
//	check                                   answer
//	--------------------------------------  ----------------------------------
//	journal unset or not served             refusal UNKNOWN_JOURNAL / unknown_journal
//	> 1,024 records or > 1 MiB in a Write   refusal TOO_LARGE (names both limits)
//	a unary Write with no record            InvalidArgument "no records"
//	bytes that do not decode                InvalidArgument (not Internal)
//	read limit 0 or > 256                   clamped to 256 records (64 KiB page)
//	wait_ms > 1,000                         clamped to 1,000
//
// Security (docs/guide/security.md): ServerOptions installs TLS and a gate that
// authenticates every call (a peer machine's certificate, or a bearer
// token signed by the cell's CA), authorizes it by the rule table in
// auth.go, and bounds each principal's calls in flight. The Peer stream
// checks that every Deliver and every message in it comes from the node
// its certificate names, and that the node is a member of the cell,
// before a byte reaches the host.
package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/runtime"
	"github.com/parosdb/paros/security"
	"github.com/parosdb/paros/wire"
)

// Backend is what the services need of a running process.
type Backend interface {
	Call(ctx context.Context, c host.Call) (host.Response, error)
	// Submit hands calls over in one turn, in order, and answers each
	// through reply without blocking (runtime.Runtime.Submit).
	Submit(ctx context.Context, calls []host.Call, reply func(i int, resp host.Response)) error
	Deliver(from uint64, batch []host.Envelope)
}

// RuntimeBackend adapts a *runtime.Runtime.
type RuntimeBackend struct{ R *runtime.Runtime }

func (b RuntimeBackend) Call(ctx context.Context, c host.Call) (host.Response, error) {
	return b.R.Call(ctx, c)
}

func (b RuntimeBackend) Submit(ctx context.Context, calls []host.Call, reply func(int, host.Response)) error {
	return b.R.Submit(ctx, calls, reply)
}

func (b RuntimeBackend) Deliver(from uint64, batch []host.Envelope) {
	b.R.Deliver(host.NodeIDOf(from), batch)
}

// callTimeout bounds how long a handler waits for the host beyond the
// read's own wait: the reply is then ambiguous.
const callTimeout = 10 * time.Second

// Journal implements paros.v1.Journal.
type Journal struct {
	pb.UnimplementedJournalServer
	B Backend
}

func tooLarge(req *pb.WriteRequest) bool {
	if len(req.GetRecords()) > journal.WriteRecordsMax {
		return true
	}
	n := 0
	for _, r := range req.GetRecords() {
		n += len(r)
	}
	return n > journal.WriteBytesMax
}

// TooLargeDetail names both batch limits in the refusal message.
var TooLargeDetail = fmt.Sprintf("a write carries at most %d records and %d bytes", journal.WriteRecordsMax, journal.WriteBytesMax)

// NoRecordsDetail is the message of the InvalidArgument a Write with no
// record is answered with: such a write can never be accepted, and the
// verdict has no field to say why it was refused.
const NoRecordsDetail = "paros/server: no records: a write carries at least one record"

func (s *Journal) Write(ctx context.Context, req *pb.WriteRequest) (*pb.WriteReply, error) {
	c, refusal, err := writeCall(req)
	if err != nil || refusal != nil {
		return refusal, err
	}
	if len(c.Write.Records) == 0 {
		return nil, status.Error(codes.InvalidArgument, NoRecordsDetail)
	}
	r, err := s.call(ctx, c)
	if err != nil {
		return nil, err
	}
	return &pb.WriteReply{Verdict: wire.VerdictToPB(r.Reply)}, nil
}

// writeCall validates a Write before consensus: an unset journal is
// refused in-band, a batch over the limits with InvalidArgument.
func writeCall(req *pb.WriteRequest) (host.Call, *pb.WriteReply, error) {
	id := wire.JournalIDFromPB(req.GetJournal())
	if !id.IsSet() {
		return host.Call{}, &pb.WriteReply{Verdict: wire.VerdictToPB(journal.Reply{NoVerdict: journal.UnknownJournal})}, nil
	}
	if tooLarge(req) {
		return host.Call{}, nil, status.Error(codes.InvalidArgument, "TOO_LARGE: "+TooLargeDetail)
	}
	return host.Call{Kind: host.CallWrite, Write: journal.WriteRequest{Journal: id,
		Leader: wire.UUIDFromPB(req.GetLeader()), Seq: journal.Seq(req.GetSeq()), Records: req.GetRecords()}}, nil, nil
}

func (s *Journal) Truncate(ctx context.Context, req *pb.TruncateRequest) (*pb.TruncateReply, error) {
	id := wire.JournalIDFromPB(req.GetJournal())
	if !id.IsSet() {
		return &pb.TruncateReply{Verdict: wire.VerdictToPB(journal.Reply{NoVerdict: journal.UnknownJournal})}, nil
	}
	r, err := s.call(ctx, host.Call{Kind: host.CallTruncate, Truncate: journal.TruncateRequest{Journal: id,
		Leader: wire.UUIDFromPB(req.GetLeader()), UpTo: journal.Seq(req.GetUpTo())}})
	if err != nil {
		return nil, err
	}
	return &pb.TruncateReply{Verdict: wire.VerdictToPB(r.Reply)}, nil
}

func (s *Journal) SetLeader(ctx context.Context, req *pb.SetLeaderRequest) (*pb.SetLeaderReply, error) {
	id := wire.JournalIDFromPB(req.GetJournal())
	if !id.IsSet() {
		return &pb.SetLeaderReply{Verdict: wire.VerdictToPB(journal.Reply{NoVerdict: journal.UnknownJournal})}, nil
	}
	r, err := s.call(ctx, host.Call{Kind: host.CallSetLeader, SetLeader: journal.SetLeaderRequest{Journal: id,
		New: wire.UUIDFromPB(req.GetNewLeader()), Old: wire.UUIDFromPB(req.GetOldLeader())}})
	if err != nil {
		return nil, err
	}
	return &pb.SetLeaderReply{Verdict: wire.VerdictToPB(r.Reply)}, nil
}

func (s *Journal) Read(ctx context.Context, req *pb.ReadRequest) (*pb.ReadReply, error) {
	id := wire.JournalIDFromPB(req.GetJournal())
	if !id.IsSet() {
		return &pb.ReadReply{UnknownJournal: true, FromSeq: req.GetFromSeq()}, nil
	}
	limit := req.GetLimit()
	if limit == 0 || limit > journal.ReadRecordsMax {
		limit = journal.ReadRecordsMax
	}
	wait := min(req.GetWaitMs(), journal.WaitMsMax)
	r, err := s.call(ctx, host.Call{Kind: host.CallRead, Read: journal.ReadRequest{Journal: id,
		FromSeq: journal.Seq(req.GetFromSeq()), Limit: limit, WaitMs: wait}})
	if err != nil {
		if errors.Is(err, errAmbiguous) {
			return &pb.ReadReply{FromSeq: req.GetFromSeq()}, nil // unserved
		}
		return nil, err
	}
	return wire.ReadReplyToPB(r.Read), nil
}

var errAmbiguous = errors.New("no verdict")

// ErrNotServing: the process serves no journal yet (an idle machine); every
// journal call is answered as for an unknown journal.
var ErrNotServing = errors.New("paros/server: this machine serves no journal yet")

// call waits for the host. A timeout or a stopping process answers a reply
// with no verdict (ambiguous), never an error the client could mistake for
// "not done"; a full inbox is Unavailable (nothing was proposed).
func (s *Journal) call(ctx context.Context, c host.Call) (host.Response, error) {
	wait := callTimeout
	if c.Kind == host.CallRead {
		wait += time.Duration(c.Read.WaitMs) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	r, err := s.B.Call(ctx, c)
	switch {
	case err == nil:
		return r, nil
	case errors.Is(err, ErrNotServing):
		if c.Kind == host.CallRead {
			return host.Response{Kind: c.Kind, Read: journal.ReadReply{UnknownJournal: true, FromSeq: c.Read.FromSeq}}, nil
		}
		return host.Response{Kind: c.Kind, Reply: journal.Reply{NoVerdict: journal.UnknownJournal}}, nil
	case errors.Is(err, runtime.ErrBusy):
		return host.Response{Kind: c.Kind, Reply: journal.Reply{NoVerdict: journal.Busy}}, nil
	case c.Kind == host.CallRead:
		return host.Response{}, errAmbiguous
	default:
		return host.Response{Kind: c.Kind, Reply: journal.Reply{NoVerdict: journal.Lost}}, nil
	}
}

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
