package wire

import (
	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
)

// HandoverToPB encodes one handover message.
func HandoverToPB(h matchmaker.Handover) *pb.Handover {
	out := &pb.Handover{Kind: uint32(h.Kind), From: uint64(h.From), To: uint64(h.To), Generation: h.Generation,
		Ballot: BallotToPB(h.Ballot), Promised: BallotToPB(h.Promised), VoteBallot: BallotToPB(h.Vote.Ballot),
		Phase: uint32(h.Phase), Activated: h.Activated, Page: h.Page, Pages: h.Pages}
	if !h.Set.IsZero() {
		out.Set = MatchmakerSetToPB(h.Set)
	}
	if !h.Successor.IsZero() {
		out.Successor = MatchmakerSetToPB(h.Successor)
	}
	if !h.Vote.Value.IsZero() {
		out.VoteValue = MatchmakerSetToPB(h.Vote.Value)
	}
	for _, jr := range h.Journals {
		r := jr.Registry
		e := &pb.JournalRegistry{Journal: JournalIDToPB(jr.Journal), Watermark: BallotToPB(r.Watermark),
			Effective: RegistrationToPB(r.Effective), Retracted: BallotToPB(r.Retracted)}
		for _, reg := range r.Regs {
			e.Registrations = append(e.Registrations, RegistrationToPB(reg))
		}
		out.Journals = append(out.Journals, e)
	}
	return out
}

// HandoverFromPB decodes one handover message; a malformed one (a field
// past its bound, a page over its size, a registry that breaks its
// invariants) is refused.
func HandoverFromPB(m *pb.Handover) (matchmaker.Handover, error) {
	if len(m.GetJournals()) > matchmaker.RegistryPage {
		return matchmaker.Handover{}, malformed("%d journals on one handover page", len(m.GetJournals()))
	}
	if m.GetKind() > 255 || m.GetPhase() > 255 {
		return matchmaker.Handover{}, malformed("handover kind %d phase %d", m.GetKind(), m.GetPhase())
	}
	h := matchmaker.Handover{Kind: matchmaker.HandoverKind(m.GetKind()), From: paxos.NodeID(m.GetFrom()), To: paxos.NodeID(m.GetTo()),
		Generation: m.GetGeneration(), Ballot: BallotFromPB(m.GetBallot()), Promised: BallotFromPB(m.GetPromised()),
		Phase: matchmaker.Phase(m.GetPhase()), Activated: m.GetActivated(), Page: m.GetPage(), Pages: m.GetPages()}
	h.Vote.Ballot = BallotFromPB(m.GetVoteBallot())
	var err error
	for _, x := range []struct {
		in  *pb.MatchmakerSet
		out *matchmaker.Set
	}{{m.GetSet(), &h.Set}, {m.GetSuccessor(), &h.Successor}, {m.GetVoteValue(), &h.Vote.Value}} {
		if x.in != nil {
			if *x.out, err = MatchmakerSetFromPB(x.in); err != nil {
				return matchmaker.Handover{}, err
			}
		}
	}
	for _, e := range m.GetJournals() {
		if len(e.GetRegistrations()) > HistoryMax {
			return matchmaker.Handover{}, malformed("%d registrations in one journal's registry", len(e.GetRegistrations()))
		}
		jr := matchmaker.JournalRegistry{Journal: JournalIDFromPB(e.GetJournal())}
		jr.Registry.Watermark, jr.Registry.Retracted = BallotFromPB(e.GetWatermark()), BallotFromPB(e.GetRetracted())
		if jr.Registry.Effective, err = RegistrationFromPB(e.GetEffective()); err != nil {
			return matchmaker.Handover{}, err
		}
		for _, r := range e.GetRegistrations() {
			reg, err := RegistrationFromPB(r)
			if err != nil {
				return matchmaker.Handover{}, err
			}
			jr.Registry.Regs = append(jr.Registry.Regs, reg)
		}
		h.Journals = append(h.Journals, jr)
	}
	if err := h.Validate(); err != nil {
		return matchmaker.Handover{}, malformed("handover: %v", err)
	}
	return h, nil
}
