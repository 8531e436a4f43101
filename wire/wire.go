// Package wire translates between paros's plain Go types (core/journal,
// core/paxos, host) and the protobuf contracts (api/parospb). It is the one
// place bytes from the network become core values: every decoder checks what
// the core assumes (set halves, valid variants, bounded counts) and answers
// a typed error, never a panic.
package wire

import (
	"errors"
	"fmt"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/host"
)

// ErrMalformed is the class of every decoding refusal.
var ErrMalformed = errors.New("paros/wire: malformed message")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// Bounds on what one decoded message may carry, so a hostile or corrupt
// frame cannot make the decoder allocate without limit.
const (
	EnvelopesMax = 4096
	EntriesMax   = 4096
	RecordsMax   = journal.WriteRecordsMax
	// HistoryMax bounds the registrations one MatchReply carries. A
	// matchmaker's history leaves out repeated beliefs, so it holds about
	// one registration per distinct configuration above the GC watermark.
	HistoryMax = 4096
	// ScrubEntriesMax bounds the entries of one ScrubReply: a page spans
	// at most paxos.ScrubPageSlotsMax slots and holds one entry per record,
	// so a legal full page always decodes.
	ScrubEntriesMax = paxos.ScrubPageSlotsMax
)

func UUIDToPB(u journal.LeaderUUID) *pb.LeaderUuid {
	if !u.IsSet() {
		return nil
	}
	return &pb.LeaderUuid{Hi: u.Hi, Lo: u.Lo}
}

func UUIDFromPB(u *pb.LeaderUuid) journal.LeaderUUID {
	return journal.LeaderUUID{Hi: u.GetHi(), Lo: u.GetLo()}
}

func JournalIDToPB(id journal.ID) *pb.JournalId {
	return &pb.JournalId{Tenant: id.Tenant, Journal: id.Journal}
}

func JournalIDFromPB(id *pb.JournalId) journal.ID {
	return journal.ID{Tenant: id.GetTenant(), Journal: id.GetJournal()}
}

func ViewToPB(v journal.View) *pb.JournalState {
	return &pb.JournalState{Leader: UUIDToPB(v.Leader), NextSeq: uint64(v.NextSeq), FirstSeq: uint64(v.FirstSeq)}
}

func ViewFromPB(s *pb.JournalState) journal.View {
	return journal.View{Leader: UUIDFromPB(s.GetLeader()), NextSeq: journal.Seq(s.GetNextSeq()), FirstSeq: journal.Seq(s.GetFirstSeq())}
}

func BallotToPB(b paxos.Ballot) *pb.Ballot {
	if b.IsZero() {
		return nil
	}
	return &pb.Ballot{Round: b.Round, Node: uint64(b.Node)}
}

func BallotFromPB(b *pb.Ballot) paxos.Ballot {
	return paxos.Ballot{Round: b.GetRound(), Node: paxos.NodeID(b.GetNode())}
}

var quorumKindToPB = map[quorum.Kind]pb.QuorumSystem{
	quorum.KindMajority: pb.QuorumSystem_QUORUM_SYSTEM_MAJORITY,
	quorum.KindFlexible: pb.QuorumSystem_QUORUM_SYSTEM_FLEXIBLE,
	quorum.KindGrid:     pb.QuorumSystem_QUORUM_SYSTEM_GRID,
}

var quorumKindFromPB = map[pb.QuorumSystem]quorum.Kind{
	pb.QuorumSystem_QUORUM_SYSTEM_MAJORITY: quorum.KindMajority,
	pb.QuorumSystem_QUORUM_SYSTEM_FLEXIBLE: quorum.KindFlexible,
	pb.QuorumSystem_QUORUM_SYSTEM_GRID:     quorum.KindGrid,
}

// ConfigToPB encodes an acceptor configuration; the zero System is nil.
func ConfigToPB(s quorum.System) *pb.AcceptorConfig {
	if s.IsZero() {
		return nil
	}
	spec := s.Spec()
	members := make([]uint64, len(s.Members()))
	for i, id := range s.Members() {
		members[i] = uint64(id)
	}
	return &pb.AcceptorConfig{Members: members, QuorumSystem: quorumKindToPB[spec.Kind],
		Phase1Quorum: uint32(spec.Q1), Phase2Quorum: uint32(spec.Q2), Rows: uint32(spec.Rows), Cols: uint32(spec.Cols)}
}

// ConfigFromPB decodes an acceptor configuration through quorum.New, so a
// system the core could not have built (empty, a duplicate or zero member,
// quorums that do not intersect, an unknown kind) is malformed. nil decodes
// to the zero System.
func ConfigFromPB(c *pb.AcceptorConfig) (quorum.System, error) {
	if c == nil {
		return quorum.System{}, nil
	}
	if len(c.GetMembers()) > quorum.MembersMax {
		return quorum.System{}, malformed("acceptor config: %d members", len(c.GetMembers()))
	}
	kind, ok := quorumKindFromPB[c.GetQuorumSystem()]
	if !ok {
		return quorum.System{}, malformed("acceptor config: quorum system %d", c.GetQuorumSystem())
	}
	members := make([]quorum.ID, len(c.GetMembers()))
	for i, id := range c.GetMembers() {
		members[i] = quorum.ID(id)
	}
	spec := quorum.Spec{Kind: kind, Q1: int(c.GetPhase1Quorum()), Q2: int(c.GetPhase2Quorum()),
		Rows: int(c.GetRows()), Cols: int(c.GetCols())}
	s, err := quorum.New(members, spec)
	if err != nil {
		return quorum.System{}, malformed("acceptor config: %v", err)
	}
	return s, nil
}

// RegistrationToPB encodes one matchmaker registration; the zero
// Registration is nil.
func RegistrationToPB(r paxos.Registration) *pb.Registration {
	if r.Ballot.IsZero() && r.Acceptors.IsZero() && !r.Reconfiguration {
		return nil
	}
	return &pb.Registration{Ballot: BallotToPB(r.Ballot), Config: ConfigToPB(r.Acceptors), Reconfiguration: r.Reconfiguration}
}

// RegistrationFromPB decodes one matchmaker registration (nil: the zero
// Registration); a malformed configuration is refused.
func RegistrationFromPB(r *pb.Registration) (paxos.Registration, error) {
	if r == nil {
		return paxos.Registration{}, nil
	}
	s, err := ConfigFromPB(r.GetConfig())
	if err != nil {
		return paxos.Registration{}, err
	}
	return paxos.Registration{Ballot: BallotFromPB(r.GetBallot()), Acceptors: s, Reconfiguration: r.GetReconfiguration()}, nil
}

// StateToPB carries a sealed state with its term (peer wire only).
func StateToPB(s journal.State) *pb.SealedState {
	if s.IsZero() {
		return nil
	}
	return &pb.SealedState{Leader: UUIDToPB(s.Leader), Term: s.Term(), NextSeq: uint64(s.NextSeq), FirstSeq: uint64(s.FirstSeq)}
}

// StateFromPB rebuilds a sealed state, checking its invariants.
func StateFromPB(s *pb.SealedState) (journal.State, error) {
	if s == nil {
		return journal.State{}, nil
	}
	st, err := journal.Restore(UUIDFromPB(s.GetLeader()), s.GetTerm(), journal.Seq(s.GetNextSeq()), journal.Seq(s.GetFirstSeq()))
	if err != nil {
		return journal.State{}, malformed("sealed state: %v", err)
	}
	return st, nil
}

func CommandToPB(c journal.Command) *pb.Command {
	switch c.Kind {
	case journal.KindWrite:
		return &pb.Command{Kind: &pb.Command_Write{Write: &pb.WriteEntry{Leader: UUIDToPB(c.Entry.Leader), Seq: uint64(c.Entry.Seq), Records: c.Entry.Records}}}
	case journal.KindTruncate:
		return &pb.Command{Kind: &pb.Command_Control{Control: &pb.ControlCommand{Kind: &pb.ControlCommand_Truncate_{
			Truncate: &pb.ControlCommand_Truncate{UpTo: uint64(c.UpTo), Leader: UUIDToPB(c.Leader)}}}}}
	case journal.KindSetLeader:
		return &pb.Command{Kind: &pb.Command_Control{Control: &pb.ControlCommand{Kind: &pb.ControlCommand_SetLeader_{
			SetLeader: &pb.ControlCommand_SetLeader{NewLeader: UUIDToPB(c.New), OldLeader: UUIDToPB(c.Old)}}}}}
	case journal.KindNoop:
		return &pb.Command{Kind: &pb.Command_Control{Control: &pb.ControlCommand{Kind: &pb.ControlCommand_Noop_{Noop: &pb.ControlCommand_Noop{}}}}}
	}
	return &pb.Command{}
}

func CommandFromPB(c *pb.Command) (journal.Command, error) {
	switch k := c.GetKind().(type) {
	case *pb.Command_Write:
		w := k.Write
		if len(w.GetRecords()) > RecordsMax {
			return journal.Command{}, malformed("%d records in one entry", len(w.GetRecords()))
		}
		return journal.Write(journal.Entry{Leader: UUIDFromPB(w.GetLeader()), Seq: journal.Seq(w.GetSeq()), Records: w.GetRecords()}), nil
	case *pb.Command_Control:
		switch ck := k.Control.GetKind().(type) {
		case *pb.ControlCommand_Truncate_:
			return journal.Truncate(UUIDFromPB(ck.Truncate.GetLeader()), journal.Seq(ck.Truncate.GetUpTo())), nil
		case *pb.ControlCommand_SetLeader_:
			return journal.SetLeader(UUIDFromPB(ck.SetLeader.GetNewLeader()), UUIDFromPB(ck.SetLeader.GetOldLeader())), nil
		case *pb.ControlCommand_Noop_:
			return journal.Noop(), nil
		}
	}
	return journal.Command{}, malformed("command with no variant")
}

// MessageToPB encodes one core message.
func MessageToPB(m paxos.Message) *pb.ConsensusMessage {
	out := &pb.ConsensusMessage{Type: pb.MsgType(m.Type), From: uint64(m.From), To: uint64(m.To), Leader: uint64(m.Leader),
		Ballot: BallotToPB(m.Ballot), Refused: BallotToPB(m.Refused), Slot: m.Slot, Next: m.Next,
		Commit: m.Commit, Watermark: m.Watermark, Ctx: m.Ctx, State: StateToPB(m.State),
		Since: BallotToPB(m.Since), Gc: BallotToPB(m.GC), Reconf: m.Reconf, Refusal: uint32(m.Refusal),
		Prepared: BallotToPB(m.Prepared), Generation: m.Generation, Quiet: m.Quiet}
	if !m.Successor.IsZero() {
		out.Successor = MatchmakerSetToPB(m.Successor)
	}
	// The Matchmaker Paxos fields cost nothing on a plain deployment: each
	// is touched only when set.
	if !m.Config.IsZero() {
		out.Config = ConfigToPB(m.Config)
	}
	if len(m.History) > 0 {
		out.History = make([]*pb.Registration, len(m.History))
		for i, r := range m.History {
			out.History[i] = RegistrationToPB(r)
		}
	}
	out.Effective = RegistrationToPB(m.Effective)
	for _, e := range m.Entries {
		out.Entries = append(out.Entries, &pb.SlotCommand{Slot: e.Slot, Ballot: BallotToPB(e.Ballot), Command: CommandToPB(e.Command)})
	}
	for _, e := range m.Decided {
		out.Decided = append(out.Decided, &pb.SlotCommand{Slot: e.Slot, Ballot: BallotToPB(e.Ballot), Command: CommandToPB(e.Command)})
	}
	for _, v := range m.Votes {
		out.Votes = append(out.Votes, &pb.SlotVote{Slot: v.Slot, Vhash: v.VHash})
	}
	for _, f := range m.Faulty {
		out.Faulty = append(out.Faulty, &pb.SlotBallot{Slot: f.Slot, Ballot: BallotToPB(f.Ballot)})
	}
	if len(m.Scrub) > 0 {
		out.Scrub = make([]*pb.ScrubEntry, len(m.Scrub))
		for i, e := range m.Scrub {
			out.Scrub[i] = &pb.ScrubEntry{Slot: e.Slot, Ballot: BallotToPB(e.Ballot), Hash: e.Hash, Damaged: e.Damaged}
		}
	}
	return out
}

var knownTypes = map[pb.MsgType]bool{
	pb.MsgType_MSG_TYPE_PREPARE: true, pb.MsgType_MSG_TYPE_PROMISE: true, pb.MsgType_MSG_TYPE_ACCEPT: true,
	pb.MsgType_MSG_TYPE_ACCEPTED: true, pb.MsgType_MSG_TYPE_NACK: true, pb.MsgType_MSG_TYPE_COMMIT: true,
	pb.MsgType_MSG_TYPE_CATCH_UP_REQUEST: true, pb.MsgType_MSG_TYPE_CATCH_UP_RESPONSE: true,
	pb.MsgType_MSG_TYPE_HEARTBEAT: true, pb.MsgType_MSG_TYPE_HEARTBEAT_ACK: true,
	pb.MsgType_MSG_TYPE_PRE_READ: true, pb.MsgType_MSG_TYPE_PRE_READ_ACK: true, pb.MsgType_MSG_TYPE_TRIMMED_TO: true,
	pb.MsgType_MSG_TYPE_MATCH: true, pb.MsgType_MSG_TYPE_MATCH_REPLY: true, pb.MsgType_MSG_TYPE_GARBAGE_COLLECT: true,
	pb.MsgType_MSG_TYPE_GARBAGE_COLLECT_ACK: true, pb.MsgType_MSG_TYPE_PROBE: true,
	pb.MsgType_MSG_TYPE_SCRUB: true, pb.MsgType_MSG_TYPE_SCRUB_REPLY: true, pb.MsgType_MSG_TYPE_RELINQUISH: true,
}

// MessageFromPB decodes one core message; an unknown type, an unset sender,
// a malformed entry, a malformed acceptor configuration (see ConfigFromPB),
// a refusal above paxos.MatchRetracted, a number above the core's bounds (a
// ballot round above paxos.BallotRoundMax, a slot above paxos.SlotMax) or
// a scrub page paxos.Message.Validate refuses is refused.
func MessageFromPB(m *pb.ConsensusMessage) (paxos.Message, error) {
	if !knownTypes[m.GetType()] {
		return paxos.Message{}, malformed("message type %d", m.GetType())
	}
	if m.GetFrom() == 0 || m.GetTo() == 0 {
		return paxos.Message{}, malformed("unset sender or addressee")
	}
	if len(m.GetEntries()) > EntriesMax || len(m.GetVotes()) > EntriesMax || len(m.GetFaulty()) > EntriesMax || len(m.GetDecided()) > EntriesMax {
		return paxos.Message{}, malformed("too many entries")
	}
	if len(m.GetHistory()) > HistoryMax {
		return paxos.Message{}, malformed("%d registrations in one history", len(m.GetHistory()))
	}
	if len(m.GetScrub()) > ScrubEntriesMax {
		return paxos.Message{}, malformed("%d scrub entries in one page", len(m.GetScrub()))
	}
	// Checked before the narrowing to uint8: refusal 256 must not pass as 0.
	if m.GetRefusal() > uint32(paxos.MatchInactive) {
		return paxos.Message{}, malformed("match refusal %d", m.GetRefusal())
	}
	st, err := StateFromPB(m.GetState())
	if err != nil {
		return paxos.Message{}, err
	}
	out := paxos.Message{Type: paxos.MsgType(m.GetType()), From: paxos.NodeID(m.GetFrom()), To: paxos.NodeID(m.GetTo()), Leader: paxos.NodeID(m.GetLeader()),
		Ballot: BallotFromPB(m.GetBallot()), Refused: BallotFromPB(m.GetRefused()), Slot: m.GetSlot(), Next: m.GetNext(),
		Commit: m.GetCommit(), Watermark: m.GetWatermark(), Ctx: m.GetCtx(), State: st,
		Since: BallotFromPB(m.GetSince()), GC: BallotFromPB(m.GetGc()), Reconf: m.GetReconf(),
		Refusal: paxos.MatchRefusal(m.GetRefusal()), Prepared: BallotFromPB(m.GetPrepared()), Generation: m.GetGeneration(), Quiet: m.GetQuiet()}
	if m.GetSuccessor() != nil {
		if out.Successor, err = MatchmakerSetFromPB(m.GetSuccessor()); err != nil {
			return paxos.Message{}, err
		}
	}
	if m.GetConfig() != nil {
		if out.Config, err = ConfigFromPB(m.GetConfig()); err != nil {
			return paxos.Message{}, err
		}
	}
	if len(m.GetHistory()) > 0 {
		out.History = make([]paxos.Registration, len(m.GetHistory()))
		for i, r := range m.GetHistory() {
			if out.History[i], err = RegistrationFromPB(r); err != nil {
				return paxos.Message{}, err
			}
		}
	}
	if m.GetEffective() != nil {
		if out.Effective, err = RegistrationFromPB(m.GetEffective()); err != nil {
			return paxos.Message{}, err
		}
	}
	for _, e := range m.GetEntries() {
		c, err := CommandFromPB(e.GetCommand())
		if err != nil {
			return paxos.Message{}, err
		}
		out.Entries = append(out.Entries, paxos.SlotCommand{Slot: e.GetSlot(), Ballot: BallotFromPB(e.GetBallot()), Command: c})
	}
	for _, e := range m.GetDecided() {
		c, err := CommandFromPB(e.GetCommand())
		if err != nil {
			return paxos.Message{}, err
		}
		out.Decided = append(out.Decided, paxos.SlotCommand{Slot: e.GetSlot(), Ballot: BallotFromPB(e.GetBallot()), Command: c})
	}
	for _, v := range m.GetVotes() {
		out.Votes = append(out.Votes, paxos.SlotVote{Slot: v.GetSlot(), VHash: v.GetVhash()})
	}
	for _, f := range m.GetFaulty() {
		out.Faulty = append(out.Faulty, paxos.SlotBallot{Slot: f.GetSlot(), Ballot: BallotFromPB(f.GetBallot())})
	}
	if len(m.GetScrub()) > 0 {
		out.Scrub = make([]paxos.ScrubEntry, len(m.GetScrub()))
		for i, e := range m.GetScrub() {
			out.Scrub[i] = paxos.ScrubEntry{Slot: e.GetSlot(), Ballot: BallotFromPB(e.GetBallot()), Hash: e.GetHash(), Damaged: e.GetDamaged()}
		}
	}
	// The core drops such a message too (Node.Step); refusing it here names
	// the fault to the sender instead of silently dropping it.
	if err := out.Validate(); err != nil {
		return paxos.Message{}, malformed("%v", err)
	}
	return out, nil
}

// DeliverToPB encodes a batch of envelopes from one sender.
func DeliverToPB(from paxos.NodeID, batch []host.Envelope) *pb.Deliver {
	d := &pb.Deliver{From: uint64(from), Envelopes: make([]*pb.Envelope, 0, len(batch))}
	for _, e := range batch {
		if e.MachineBeat {
			d.Envelopes = append(d.Envelopes, &pb.Envelope{MachineBeat: true})
			continue
		}
		if e.Handover != nil {
			d.Envelopes = append(d.Envelopes, &pb.Envelope{Handover: HandoverToPB(*e.Handover)})
			continue
		}
		d.Envelopes = append(d.Envelopes, &pb.Envelope{Journal: JournalIDToPB(e.Journal), Msg: MessageToPB(e.Msg)})
	}
	return d
}

// DeliverFromPB decodes a Deliver. Envelopes naming an unset journal (a
// consensus message) or another sender than the Deliver's are refused with
// the whole batch.
func DeliverFromPB(d *pb.Deliver) (paxos.NodeID, []host.Envelope, error) {
	from := paxos.NodeID(d.GetFrom())
	if from == 0 {
		return 0, nil, malformed("deliver from node 0")
	}
	if len(d.GetEnvelopes()) > EnvelopesMax {
		return 0, nil, malformed("%d envelopes in one deliver", len(d.GetEnvelopes()))
	}
	out := make([]host.Envelope, 0, len(d.GetEnvelopes()))
	for _, e := range d.GetEnvelopes() {
		if e.GetMachineBeat() {
			if e.GetHandover() != nil || e.GetMsg() != nil || e.GetJournal() != nil {
				return 0, nil, malformed("a machine beat with a message in it")
			}
			out = append(out, host.Envelope{MachineBeat: true}) // it speaks for the Deliver's sender
			continue
		}
		if e.GetHandover() != nil {
			h, err := HandoverFromPB(e.GetHandover())
			if err != nil {
				return 0, nil, err
			}
			if h.From != from {
				return 0, nil, malformed("handover from %d inside a deliver from %d", h.From, from)
			}
			out = append(out, host.Envelope{Handover: &h})
			continue
		}
		id := JournalIDFromPB(e.GetJournal())
		if !id.IsSet() {
			return 0, nil, malformed("envelope for an unset journal")
		}
		m, err := MessageFromPB(e.GetMsg())
		if err != nil {
			return 0, nil, err
		}
		if m.From != from {
			return 0, nil, malformed("message from %d inside a deliver from %d", m.From, from)
		}
		out = append(out, host.Envelope{Journal: id, Msg: m})
	}
	return from, out, nil
}

// MatchmakerSetToPB encodes a matchmaker set.
func MatchmakerSetToPB(s paxos.MatchmakerSet) *pb.MatchmakerSet {
	out := &pb.MatchmakerSet{Generation: s.Generation, Members: make([]uint64, len(s.Members))}
	for i, id := range s.Members {
		out.Members[i] = uint64(id)
	}
	return out
}

// MatchmakerSetFromPB decodes a matchmaker set; a malformed one (too many
// members, unsorted, zero, generation out of range) is refused.
func MatchmakerSetFromPB(m *pb.MatchmakerSet) (paxos.MatchmakerSet, error) {
	if len(m.GetMembers()) > paxos.MatchmakersMax {
		return paxos.MatchmakerSet{}, malformed("matchmaker set of %d members", len(m.GetMembers()))
	}
	s := paxos.MatchmakerSet{Generation: m.GetGeneration()}
	for _, id := range m.GetMembers() {
		s.Members = append(s.Members, paxos.NodeID(id))
	}
	if err := s.Validate(); err != nil {
		return paxos.MatchmakerSet{}, malformed("matchmaker set: %v", err)
	}
	return s, nil
}
