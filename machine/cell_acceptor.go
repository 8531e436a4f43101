package machine

import (
	"context"
	"fmt"
	"slices"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/celldecree"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/server"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/machinerecord"
	"github.com/parosdb/paros/wire"
)

// This file is the acceptor of the cell decree: PrepareCell (Phase 1) and
// FormCell (Phase 2) at one founding machine. The rule is
// core/celldecree's Acceptor (the core's decree acceptor, the bound on a
// ballot's round, membership, and a final vote); its state is the machine
// record (the promise, and the plan of the record at the ballot it was
// voted at), and every change is written to the record before the answer
// that reveals it leaves. What the handlers add around the rule is the
// machine's own: the caller's authorization, the role, and formatting the
// plan's stores before the vote is recorded.

// planRules is what the decree knows of a plan: its id (planFingerprint)
// and the founders it names.
var planRules = celldecree.Plans[*pb.CellPlan]{
	ID: planFingerprint,
	Founders: func(p *pb.CellPlan) []paxos.NodeID {
		out := make([]paxos.NodeID, 0, len(p.GetMembers()))
		for _, m := range p.GetMembers() {
			out = append(out, paxos.NodeID(m.GetNodeId()))
		}
		return out
	},
}

// cellAcceptor is the decree acceptor the record r holds: its promise, its
// vote's ballot and its plan (nil before the machine is in a cell).
func cellAcceptor(r machinerecord.Record) celldecree.Acceptor[*pb.CellPlan] {
	return celldecree.Acceptor[*pb.CellPlan]{
		Self:       paxos.NodeID(r.NodeID),
		Promised:   paxos.Ballot{Round: r.PromisedRound, Node: paxos.NodeID(r.PromisedNode)},
		VoteBallot: paxos.Ballot{Round: r.VoteRound, Node: paxos.NodeID(r.VoteNode)},
		Plan:       planOf(r),
	}
}

// recordWithAcceptor is r with acc's promise and vote ballot in it. The
// vote's plan is the caller's to write (recordWithPlan): the record holds
// one plan, the one voted.
func recordWithAcceptor(r machinerecord.Record, acc celldecree.Acceptor[*pb.CellPlan]) machinerecord.Record {
	r.PromisedRound, r.PromisedNode = acc.Promised.Round, uint64(acc.Promised.Node)
	r.VoteRound, r.VoteNode = acc.VoteBallot.Round, uint64(acc.VoteBallot.Node)
	return r
}

// cellCaller returns who makes a cell call, for the part of its rule the
// handler judges (the table in server/rules.go), and whether to judge it: not for the
// proposer's own acceptor in process, nor on a server that authenticates
// nobody (--insecure) or a call no gate saw (in process).
func cellCaller(ctx context.Context) (server.Caller, bool) {
	if ctx.Value(selfCallKey{}) != nil {
		return server.Caller{}, false
	}
	c, ok := server.CallerOf(ctx)
	return c, ok && c.Secured
}

// founderCall is the handler's part of the rule for PrepareCell and
// FormCell (the gate let in any peer certificate of the CA). Only the
// decree's proposer sends them, over its own certificate, so the caller
// must be a founding member: of this machine's cell once it is formed (a
// formed machine hears only its founders), else one the request names (a
// machine of the CA naming no founder, or a plan without itself, is
// refused, so it cannot make this machine promise or vote for others).
// And the ballot must be the caller's own: a proposer proposes under its
// own node id, so no machine spends, or blocks, another's ballots.
func founderCall(c server.Caller, rec machinerecord.Record, named []uint64, b paxos.Ballot, method string) error {
	if rec.CellID != 0 {
		if !slices.ContainsFunc(rec.Members, func(x machinerecord.Member) bool { return x.NodeID == c.Node }) {
			return c.Denied(method, fmt.Sprintf("node %016x is no founding member of cell %016x", c.Node, rec.CellID))
		}
	} else if c.Node == 0 || !slices.Contains(named, c.Node) {
		return c.Denied(method, fmt.Sprintf("node %016x is no founding member the formation names", c.Node))
	}
	if uint64(b.Node) != c.Node {
		return c.Denied(method, fmt.Sprintf("the ballot names node %016x, not the caller's", uint64(b.Node)))
	}
	return nil
}

// PrepareCell is Phase 1 of the decree at this acceptor
// (celldecree.Acceptor.Prepare), the promise written to the record before
// the answer leaves. Only a founding member the request names
// (founderCall) may ask.
func (s *Service) PrepareCell(ctx context.Context, req *pb.PrepareCellRequest) (*pb.PrepareCellReply, error) {
	m := s.M
	m.mu.Lock()
	defer m.mu.Unlock()
	b := wire.BallotFromPB(req.GetBallot())
	if c, check := cellCaller(ctx); check {
		if err := founderCall(c, m.rec, req.GetMembers(), b, pb.Machine_PrepareCell_FullMethodName); err != nil {
			return nil, err
		}
	}
	reply := &pb.PrepareCellReply{NodeId: m.rec.NodeID}
	if m.cfg.Role != RoleNode && b.InRange() {
		reply.Refusal = m.cfg.Role.String() // a replica or a proxy votes on nothing, the plan included
		return reply, nil
	}
	next, ans, effect := cellAcceptor(m.rec).Prepare(planRules, b, nodeIDs(req.GetMembers()))
	reply.Vote, reply.VoteBallot = ans.Vote.Value, wire.BallotToPB(ans.Vote.Ballot)
	if !ans.Granted {
		reply.Refusal = string(ans.Refusal)
		if ans.Refusal != celldecree.Malformed && ans.Refusal != celldecree.NotAMember {
			reply.Promise = wire.BallotToPB(ans.Promise)
		}
		return reply, nil
	}
	if effect == celldecree.Record {
		rec := recordWithAcceptor(m.rec, next)
		rec.Incarnation++
		if err := machinerecord.Store(m.fs, m.cfg.DataDir, rec); err != nil {
			reply.Refusal = "storage"
			return reply, nil
		}
		m.rec = rec
	}
	reply.Promised, reply.Promise = true, wire.BallotToPB(b)
	return reply, nil
}

// FormCell is Phase 2 at this acceptor (celldecree.Acceptor.Form). A vote
// formats the plan's stores first and records the vote after (the commit
// point), then serves the cell. A repeated FormCell of the plan voted is
// answered formed (at a higher ballot, after recording the raised promise
// and vote ballot). Only a founding member the plan names (founderCall)
// may ask.
func (s *Service) FormCell(ctx context.Context, req *pb.FormCellRequest) (*pb.FormCellReply, error) {
	m := s.M
	m.mu.Lock()
	defer m.mu.Unlock()
	b := wire.BallotFromPB(req.GetBallot())
	plan := req.GetPlan()
	if c, check := cellCaller(ctx); check {
		var named []uint64
		for _, mb := range plan.GetMembers() {
			named = append(named, mb.GetNodeId())
		}
		if err := founderCall(c, m.rec, named, b, pb.Machine_FormCell_FullMethodName); err != nil {
			return nil, err
		}
	}
	if !b.InRange() {
		return &pb.FormCellReply{Refusal: string(celldecree.Malformed)}, nil
	}
	if m.cfg.Role != RoleNode {
		return &pb.FormCellReply{Refusal: m.cfg.Role.String()}, nil
	}
	// A plan the record cannot hold is malformed before any rule looks at
	// it; nothing reaches the record unless the rule grants.
	withPlan, err := recordWithPlan(m.rec, plan)
	if err != nil {
		return &pb.FormCellReply{Refusal: string(celldecree.Malformed)}, nil
	}
	next, ans, effect := cellAcceptor(m.rec).Form(planRules, b, plan)
	if !ans.Granted {
		reply := &pb.FormCellReply{Refusal: string(ans.Refusal)}
		if ans.Refusal == celldecree.PromisedHigher || ans.Refusal == celldecree.RoundTooFar {
			reply.Promise = wire.BallotToPB(ans.Promise)
		}
		return reply, nil
	}
	switch effect {
	case celldecree.Record:
		up := recordWithAcceptor(m.rec, next)
		up.Incarnation++
		if err := machinerecord.Store(m.fs, m.cfg.DataDir, up); err != nil {
			return &pb.FormCellReply{Refusal: "storage"}, nil
		}
		m.rec = up
		return &pb.FormCellReply{Formed: true}, nil
	case celldecree.Nothing:
		return &pb.FormCellReply{Formed: true}, nil
	}
	rec := recordWithAcceptor(withPlan, next)
	rec.Incarnation++
	// Format every store of the plan before the vote is recorded: a crash in
	// between leaves formatted stores and no vote, and the next FormCell of
	// the same plan finds them formatted under the same marker.
	if refusal := m.formatStores(rec); refusal != "" {
		return &pb.FormCellReply{Refusal: refusal}, nil
	}
	if slices.Contains(rec.Matchmakers, rec.NodeID) {
		// The matchmaker's registry store is formatted with the journals'.
		reg := m.db.Registry()
		want := storage.RegistryMarker{Node: paxos.NodeID(rec.NodeID), Matchmakers: nodeIDs(rec.Matchmakers)}
		bs, err := reg.Boot()
		switch {
		case err != nil:
			return &pb.FormCellReply{Refusal: "storage"}, nil
		case bs.Marker == nil:
			if err := reg.Format(want); err != nil {
				return &pb.FormCellReply{Refusal: "storage"}, nil
			}
		case !bs.Marker.Equal(want):
			return &pb.FormCellReply{Refusal: "storage"}, nil
		}
	}
	if err := machinerecord.Store(m.fs, m.cfg.DataDir, rec); err != nil {
		return &pb.FormCellReply{Refusal: "storage"}, nil
	}
	m.rec = rec
	if err := m.serve(storage.ClaimExistingMember); err != nil {
		m.log.Error("serving the formed cell failed", "err", err)
		return &pb.FormCellReply{Refusal: "storage"}, nil
	}
	return &pb.FormCellReply{Formed: true}, nil
}
