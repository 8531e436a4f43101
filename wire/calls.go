package wire

import (
	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
)

var outcomeToPB = map[journal.OutcomeKind]pb.Outcome{
	journal.Accepted: pb.Outcome_OUTCOME_ACCEPTED, journal.Duplicate: pb.Outcome_OUTCOME_DUPLICATE,
	journal.Refused: pb.Outcome_OUTCOME_REFUSED, journal.BelowFloor: pb.Outcome_OUTCOME_BELOW_FLOOR,
	journal.LeaderSet: pb.Outcome_OUTCOME_LEADER_SET, journal.LeaderRefused: pb.Outcome_OUTCOME_LEADER_REFUSED,
	journal.Trimmed: pb.Outcome_OUTCOME_TRIMMED, journal.TruncateRefused: pb.Outcome_OUTCOME_TRUNCATE_REFUSED,
	journal.WrongMode: pb.Outcome_OUTCOME_WRONG_MODE, journal.NoopDone: pb.Outcome_OUTCOME_NOOP,
	journal.Unheld: pb.Outcome_OUTCOME_UNHELD,
}

var refusalToPB = map[journal.NoVerdict]pb.Refusal{
	journal.NotLeader: pb.Refusal_REFUSAL_NOT_LEADER, journal.UnknownJournal: pb.Refusal_REFUSAL_UNKNOWN_JOURNAL,
	journal.TooLarge: pb.Refusal_REFUSAL_TOO_LARGE, journal.Lost: pb.Refusal_REFUSAL_LOST,
	journal.Unavailable: pb.Refusal_REFUSAL_UNAVAILABLE, journal.Busy: pb.Refusal_REFUSAL_BUSY,
	journal.Deleted: pb.Refusal_REFUSAL_DELETED,
}

// VerdictToPB encodes a Write/Truncate/SetLeader reply, marking it
// ambiguous exactly when journal.Reply.Ambiguous says so.
func VerdictToPB(r journal.Reply) *pb.Verdict {
	v := &pb.Verdict{Outcome: outcomeToPB[r.Outcome.Kind], Refusal: refusalToPB[r.NoVerdict],
		Ambiguous: r.Ambiguous(), LeaderHint: r.LeaderHint}
	if r.Outcome.Kind != journal.OutcomeInvalid {
		v.Seq, v.Count, v.State = uint64(r.Outcome.Seq), r.Outcome.Count, ViewToPB(r.Outcome.View)
	}
	return v
}

// VerdictFromPB decodes a verdict (client side).
func VerdictFromPB(v *pb.Verdict) journal.Reply {
	r := journal.Reply{LeaderHint: v.GetLeaderHint()}
	for k, p := range outcomeToPB {
		if p == v.GetOutcome() {
			r.Outcome = journal.Outcome{Kind: k, Seq: journal.Seq(v.GetSeq()), Count: v.GetCount(), View: ViewFromPB(v.GetState())}
		}
	}
	for k, p := range refusalToPB {
		if p == v.GetRefusal() {
			r.NoVerdict = k
		}
	}
	if r.Outcome.Kind == journal.OutcomeInvalid && r.NoVerdict == journal.VerdictGiven {
		r.NoVerdict = journal.Lost // no verdict and no reason: ambiguous
	}
	return r
}

func ReadReplyToPB(r journal.ReadReply) *pb.ReadReply {
	return &pb.ReadReply{Served: r.Served, UnknownJournal: r.UnknownJournal, Deleted: r.Deleted, BelowFloor: r.BelowFloor,
		FromSeq: uint64(r.FromSeq), Records: r.Records, State: ViewToPB(r.View)}
}

func ReadReplyFromPB(r *pb.ReadReply) journal.ReadReply {
	return journal.ReadReply{Served: r.GetServed(), UnknownJournal: r.GetUnknownJournal(), Deleted: r.GetDeleted(), BelowFloor: r.GetBelowFloor(),
		FromSeq: journal.Seq(r.GetFromSeq()), Records: r.GetRecords(), View: ViewFromPB(r.GetState())}
}
