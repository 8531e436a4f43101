package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/runtime"
	"github.com/parosdb/paros/wire"
)

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
