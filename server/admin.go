package server

import (
	"context"
	"fmt"
	"time"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/wire"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Admin implements paros.v1.Admin.
type Admin struct {
	pb.UnimplementedAdminServer
	B    Backend
	Info func() AdminInfo
}

// CellVetter is what a Backend may also do: judge the machines an
// operator's call names against the cell it knows (machine.Machine does).
// Admin asks it before a Reconfigure or a Handoff reaches the host, so a
// node id that is no machine of the cell, or a configuration whose
// members are not all live and identified now, never starts a round
// change that could leave the journal without a quorum. Each method
// returns "" to let the call through, else the refusal, which Admin
// answers as it is: "unknown_machine: …" (an id that is no acceptor
// machine of the cell), "invalid_configuration: …", "machine_unreachable:
// …" (a member did not prove its identity in time).
type CellVetter interface {
	// VetConfiguration judges a Reconfigure's members and quorum system.
	VetConfiguration(ctx context.Context, members []paxos.NodeID, q quorum.Spec) string
	// VetSuccessor judges a Handoff's successor (never 0).
	VetSuccessor(to paxos.NodeID) string
}

// AdminInfo is the machine's own facts, read at each Inspect (they change
// when a cell forms).
type AdminInfo struct {
	NodeID   uint64
	CellID   uint64
	Journals []journal.ID
	Spec     func(journal.ID) (host.JournalSpec, bool)
	// Machines is every machine of the cell with its address, replica
	// machines marked so. Inspect shows them only to a principal that may
	// see the cell (a peer machine, a token covering every journal).
	Machines []CellMachine
	// Role is the machine's role ("node", "replica" or "proxy"), on every answer:
	// a client prefers replicas for its reads by it.
	Role string
}

// CellMachine is one machine of the cell; Role is "replica" for a replica
// machine, empty for an acceptor machine.
type CellMachine struct {
	NodeID uint64
	Addr   string
	Role   string
}

func (s *Admin) Inspect(ctx context.Context, req *pb.InspectRequest) (*pb.InspectReply, error) {
	info := s.Info()
	out := &pb.InspectReply{NodeId: info.NodeID, CellId: info.CellID, MachineRole: info.Role}
	if p, ok := principalFrom(ctx); !ok || p.seesCell() {
		// The cell's node facts (every machine's id, address and role) go
		// to a principal that may see the cell: a tenant's or a journal's
		// token learns of the machine it called only.
		for _, m := range info.Machines {
			out.Machines = append(out.Machines, &pb.CellMachine{NodeId: m.NodeID, Addr: m.Addr, Role: m.Role})
		}
	}
	listed := listFilter(ctx)
	for _, j := range info.Journals {
		if listed == nil || listed(j) {
			out.Journals = append(out.Journals, wire.JournalIDToPB(j))
		}
	}
	if req.GetNodeOnly() {
		return out, nil
	}
	id := wire.JournalIDFromPB(req.GetJournal())
	if !id.IsSet() {
		out.Refusal = "unset"
		return out, nil
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	r, err := s.B.Call(ctx, host.Call{Kind: host.CallInspect, Inspect: host.InspectRequest{Journal: id}})
	if err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	in := r.Inspect
	if in.UnknownJournal {
		out.Refusal = "unknown_journal"
		return out, nil
	}
	out.Role, out.LeaderHint, out.Promised = in.Role, uint64(in.Leader), wire.BallotToPB(in.Promised)
	out.ChosenIndex, out.Applied, out.FirstSlot, out.State = in.ChosenIndex, in.Applied, in.Floor, wire.ViewToPB(in.State)
	out.Quarantined = in.Quarantined
	// The configuration the node follows (a joiner that has not learned
	// one yet reports the one its store was formatted for).
	members, q := in.Config.Acceptors.Members(), in.Config.Acceptors.Spec()
	if in.Config.IsZero() && info.Spec != nil {
		if spec, ok := info.Spec(id); ok {
			members, q = spec.Members, spec.Quorum
		}
	}
	for _, m := range members {
		out.Members = append(out.Members, uint64(m))
	}
	out.QuorumSystem = pb.QuorumSystem(q.Kind)
	out.Phase1Quorum, out.Phase2Quorum = uint32(q.Q1), uint32(q.Q2)
	out.Rows, out.Cols = uint32(q.Rows), uint32(q.Cols)
	for _, s := range in.Unrecoverable {
		out.Unrecoverable = append(out.Unrecoverable, uint64(s))
	}
	if len(in.Matchmakers) > 0 {
		out.ConfigBallot, out.ConfigSince = wire.BallotToPB(in.Config.Ballot), wire.BallotToPB(in.Config.Since)
		for _, m := range in.Matchmakers {
			out.Matchmakers = append(out.Matchmakers, uint64(m))
		}
		out.MatchmakerGeneration = in.MatchmakerGeneration
		if in.GCEffective {
			out.GcEffective, out.GcWatermark = true, wire.BallotToPB(in.GCWatermark)
			for _, m := range in.Retirable {
				out.Retirable = append(out.Retirable, uint64(m))
			}
		}
	}
	return out, nil
}

// listFilter returns which journals an Inspect reply may list to the
// caller: nil (all) for a peer machine, a token with admin over every
// journal, or an unauthenticated server (--insecure); else those the
// token's scopes cover.
func listFilter(ctx context.Context) func(journal.ID) bool {
	p, ok := principalFrom(ctx)
	if !ok || !p.secured || p.node != 0 || p.adminAll() {
		return nil
	}
	if p.claims == nil {
		return func(journal.ID) bool { return false }
	}
	return p.claims.AllowsAny
}

// Reconfigure starts moving a journal to a new acceptor configuration at
// the node it reaches (normally the leader: a follower's change deposes
// it). Accepted means the round change started; the operator watches
// Inspect for the new configuration. A plain deployment refuses with
// no_matchmakers. A backend that is a CellVetter judges the members
// first: unknown_machine, invalid_configuration, machine_unreachable.
func (s *Admin) Reconfigure(ctx context.Context, req *pb.ReconfigureRequest) (*pb.ReconfigureReply, error) {
	id := wire.JournalIDFromPB(req.GetJournal())
	if !id.IsSet() {
		return &pb.ReconfigureReply{Refusal: "unset"}, nil
	}
	members := make([]paxos.NodeID, 0, len(req.GetMembers()))
	for _, m := range req.GetMembers() {
		members = append(members, paxos.NodeID(m))
	}
	q := quorum.Spec{Kind: quorum.Kind(req.GetQuorumSystem()), Q1: int(req.GetPhase1Quorum()), Q2: int(req.GetPhase2Quorum()),
		Rows: int(req.GetRows()), Cols: int(req.GetCols())}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if v, ok := s.B.(CellVetter); ok {
		if refusal := v.VetConfiguration(ctx, members, q); refusal != "" {
			return &pb.ReconfigureReply{Refusal: refusal}, nil
		}
	}
	r, err := s.B.Call(ctx, host.Call{Kind: host.CallReconfigure, Reconfigure: host.ReconfigureRequest{Journal: id, Members: members, Quorum: q}})
	if err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	return &pb.ReconfigureReply{Accepted: r.Admin.Refusal == "", Refusal: refusalText(r.Admin)}, nil
}

// handoverTimeout bounds the wait for a matchmaker-set handover: a few
// round trips to two sets and a durable write at each step.
const handoverTimeout = 60 * time.Second

// ReconfigureMatchmakers replaces the matchmaker set by its next
// generation, driven from the machine it reaches, and answers when the
// handover ended: the set chosen (a concurrent handover's proposal may be
// the one chosen) and the members that activated it. A backend that is a
// CellVetter judges the members first, as acceptor machines of the cell
// (every machine of a cell with matchmakers runs a matchmaker role).
func (s *Admin) ReconfigureMatchmakers(ctx context.Context, req *pb.ReconfigureMatchmakersRequest) (*pb.ReconfigureMatchmakersReply, error) {
	members := make([]paxos.NodeID, 0, len(req.GetMembers()))
	for _, m := range req.GetMembers() {
		members = append(members, paxos.NodeID(m))
	}
	if len(members) == 0 || len(members) > paxos.MatchmakersMax {
		return &pb.ReconfigureMatchmakersReply{Refusal: fmt.Sprintf("invalid_configuration: 1 to %d matchmakers", paxos.MatchmakersMax)}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, handoverTimeout)
	defer cancel()
	if v, ok := s.B.(CellVetter); ok {
		if refusal := v.VetConfiguration(ctx, members, quorum.Spec{Kind: quorum.KindMajority}); refusal != "" {
			return &pb.ReconfigureMatchmakersReply{Refusal: refusal}, nil
		}
	}
	r, err := s.B.Call(ctx, host.Call{Kind: host.CallMatchmakers, Matchmakers: host.MatchmakersRequest{Members: members}})
	if err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	out := &pb.ReconfigureMatchmakersReply{Accepted: r.Admin.Refusal == "", Refusal: refusalText(r.Admin),
		Generation: r.Admin.Chosen.Generation}
	for _, id := range r.Admin.Chosen.Members {
		out.Members = append(out.Members, uint64(id))
	}
	for _, id := range r.Admin.Activated {
		out.Activated = append(out.Activated, uint64(id))
	}
	return out, nil
}

// Retire asks this machine to retire from a journal, with the effective GC
// watermark (a leader's Inspect) as evidence. Honoured only under the
// node's five conditions; the journal's store is then deleted.
func (s *Admin) Retire(ctx context.Context, req *pb.RetireRequest) (*pb.RetireReply, error) {
	id := wire.JournalIDFromPB(req.GetJournal())
	if !id.IsSet() {
		return &pb.RetireReply{Refusal: "unset"}, nil
	}
	w := wire.BallotFromPB(req.GetGcWatermark())
	if w.IsZero() || !w.InRange() {
		return &pb.RetireReply{Refusal: "stale: no watermark"}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	r, err := s.B.Call(ctx, host.Call{Kind: host.CallRetire, Retire: host.RetireRequest{Journal: id, Watermark: w}})
	if err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	return &pb.RetireReply{Accepted: r.Admin.Refusal == "", Refusal: refusalText(r.Admin)}, nil
}

// Handoff asks the node it reaches to hand its leadership of a journal to
// another acceptor without an election (to 0: the acceptor the leader
// finds most caught up). Handed off means the leader stepped down and sent
// the successor its authority; the operator watches Inspect for the
// successor leading (a lost handoff is repaired by an election). A node
// that does not lead refuses not_leader with the node it last heard
// leading in leader_hint. A backend that is a CellVetter judges the
// successor first: unknown_machine.
func (s *Admin) Handoff(ctx context.Context, req *pb.HandoffRequest) (*pb.HandoffReply, error) {
	id := wire.JournalIDFromPB(req.GetJournal())
	if !id.IsSet() {
		return &pb.HandoffReply{Refusal: "unset"}, nil
	}
	if v, ok := s.B.(CellVetter); ok && req.GetTo() != 0 {
		if refusal := v.VetSuccessor(paxos.NodeID(req.GetTo())); refusal != "" {
			return &pb.HandoffReply{Refusal: refusal}, nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	r, err := s.B.Call(ctx, host.Call{Kind: host.CallHandoff, Handoff: host.HandoffRequest{Journal: id, To: paxos.NodeID(req.GetTo())}})
	if err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	return &pb.HandoffReply{HandedOff: r.Admin.Refusal == "", Refusal: refusalText(r.Admin), To: uint64(r.Admin.Successor),
		LeaderHint: uint64(r.Admin.LeaderHint)}, nil
}

func refusalText(a host.AdminReply) string {
	if a.Refusal == "" || a.Detail == "" {
		return a.Refusal
	}
	return a.Refusal + ": " + a.Detail
}
