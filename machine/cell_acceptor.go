package machine

import (
	"context"
	"fmt"
	"slices"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/server"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/machinerecord"
	"github.com/parosdb/paros/wire"
)

// This file is the acceptor of the cell decree: PrepareCell (Phase 1) and
// FormCell (Phase 2) at one founding machine. The ballot is judged by the
// core's decree acceptor (paxos.DecreeAcceptor: a ballot at or above the
// promise is admitted and raises it); its state is the machine record (the
// promise, and the plan of the record at the ballot it was voted at), and
// every change is written to the record before the answer that reveals it
// leaves. What the handlers add around the rule is the machine's own: the
// bounds on a ballot, the caller's authorization, the role and membership
// checks, and formatting the plan's stores before the vote is recorded.
//
// A machine's vote is final: once it voted it formats and serves the plan,
// and refuses any other (other_cell), where a DecreeAcceptor would vote
// again at a higher ballot. The decree stays safe because its proposer's
// Phase-1 quorum is every member (CellInit): every Phase 1 meets every
// vote and proposes the plan already voted, so no honest proposer ever
// asks a machine to vote a second plan.

// recBallot is a ballot as the machine record keeps it (round and node).
func recBallot(round, node uint64) paxos.Ballot {
	return paxos.Ballot{Round: round, Node: paxos.NodeID(node)}
}

// cellAcceptor is the decree acceptor the record r holds: its promise, and
// its vote (the record's plan at the vote's ballot; a zero ballot when it
// never voted).
func cellAcceptor(r machinerecord.Record) paxos.DecreeAcceptor[*pb.CellPlan] {
	return paxos.DecreeAcceptor[*pb.CellPlan]{
		Promised: recBallot(r.PromisedRound, r.PromisedNode),
		Vote:     paxos.DecreeVote[*pb.CellPlan]{Ballot: recBallot(r.VoteRound, r.VoteNode), Value: planOf(r)},
	}
}

// recordWithAcceptor is r with acc's promise and vote ballot in it. The
// vote's plan is the caller's to write (recordWithPlan): the record holds
// one plan, the one voted.
func recordWithAcceptor(r machinerecord.Record, acc paxos.DecreeAcceptor[*pb.CellPlan]) machinerecord.Record {
	r.PromisedRound, r.PromisedNode = acc.Promised.Round, uint64(acc.Promised.Node)
	r.VoteRound, r.VoteNode = acc.Vote.Ballot.Round, uint64(acc.Vote.Ballot.Node)
	return r
}

// prepareRoundLeadMax bounds how far above this acceptor's promise a
// PrepareCell (or FormCell) round may be: a round further up is refused
// round_too_far, naming the promise. An honest proposer's round is one
// above the highest promise it was refused with (CellInit), and each
// CellInit tries at most eight rounds, so honest rounds climb by a handful
// per init, never by 2^20 (a million refused attempts). Without the bound
// one PrepareCell at round 2^62 (BallotRoundMax) from any certificate
// allowed to call it was promised, and CellInit answered
// ballots_exhausted for good: the cell could never form. With it, a caller
// needs 2^62/2^20 = 2^42 PrepareCells to get there, each a durable write
// of the machine record (about a millisecond): some 140 years. A gap a
// caller opens between two acceptors' promises (one pushed up by 2^20,
// another left) is closed by the proposer stepping the lower one up
// (prepare), at one step per step the caller took.
const prepareRoundLeadMax = 1 << 20

// cellCaller returns who makes a cell call, for the part of its rule the
// handler judges (auth.go's table), and whether to judge it: not for the
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

// PrepareCell is Phase 1 of the decree at this acceptor: promise the ballot
// if it is at or above every promise (the decree acceptor's rule) and at
// most prepareRoundLeadMax above it, durably, and report the vote held.
// Only a founding member the request names (founderCall) may ask, and only
// if the request names this machine.
//
// A ballot equal to the promise is granted again, and is safe to grant: a
// ballot names one proposer (its node is the proposer's machine, which
// founderCall holds a secured caller to; a machine runs one CellInit at a
// time, and each starts above its own acceptor's promise, which is at or
// above every ballot it proposed at), so the same ballot asked again is
// its own proposer re-asking Phase 1 (a retry, or prepare's step landing
// on it). The grant raises nothing and writes nothing; the acceptor still
// refuses every ballot below it.
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
	acc := cellAcceptor(m.rec)
	reply := &pb.PrepareCellReply{NodeId: m.rec.NodeID, Vote: acc.Vote.Value, VoteBallot: wire.BallotToPB(acc.Vote.Ballot)}
	if !b.InRange() {
		// A round past the bound would make every later round wrap; it is
		// malformed, never promised (the hostile-input probe's PrepareCell
		// at round 2^64-1 was written to the machine record).
		reply.Refusal = "malformed"
		return reply, nil
	}
	if m.cfg.Role != RoleNode {
		reply.Refusal = m.cfg.Role.String() // a replica or a proxy votes on nothing, the plan included
		return reply, nil
	}
	if !slices.Contains(req.GetMembers(), m.rec.NodeID) {
		reply.Refusal = "not_a_member"
		return reply, nil
	}
	promised := acc.Promised
	granted, changed := acc.Prepare(b)
	if !granted {
		reply.Refusal, reply.Promise = "promised_higher", wire.BallotToPB(promised)
		return reply, nil
	}
	// b is at or above the promise here, so the difference does not wrap.
	if b.Round-promised.Round > prepareRoundLeadMax {
		reply.Refusal, reply.Promise = "round_too_far", wire.BallotToPB(promised)
		return reply, nil
	}
	if changed {
		next := recordWithAcceptor(m.rec, acc)
		next.Incarnation++
		if err := machinerecord.Store(m.fs, m.cfg.DataDir, next); err != nil {
			reply.Refusal = "storage"
			return reply, nil
		}
		m.rec = next
	}
	reply.Promised, reply.Promise = true, wire.BallotToPB(b)
	return reply, nil
}

// FormCell is Phase 2 at this acceptor: vote for the plan at the ballot
// unless a higher one was promised (the decree acceptor's rule) or the
// ballot is more than prepareRoundLeadMax above the promise (a vote
// records its round as the promise). Voting formats the plan's stores
// first and records the vote after (the commit point), then serves the
// cell. A repeated FormCell of the same plan is answered formed (at a
// higher ballot, after recording the raised promise and vote ballot). Only
// a founding member the plan names (founderCall) may ask.
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
		return &pb.FormCellReply{Refusal: "malformed"}, nil
	}
	if m.cfg.Role != RoleNode {
		return &pb.FormCellReply{Refusal: m.cfg.Role.String()}, nil
	}
	// acc moves in memory only; it reaches the record after every check
	// below has passed, so a refused FormCell changes nothing.
	acc := cellAcceptor(m.rec)
	promised := acc.Promised
	accepted, changed := acc.Accept(b, plan)
	if !accepted {
		return &pb.FormCellReply{Refusal: "promised_higher", Promise: wire.BallotToPB(promised)}, nil
	}
	if b.Round-promised.Round > prepareRoundLeadMax {
		return &pb.FormCellReply{Refusal: "round_too_far", Promise: wire.BallotToPB(promised)}, nil
	}
	next, err := recordWithPlan(m.rec, plan)
	if err != nil {
		return &pb.FormCellReply{Refusal: "malformed"}, nil
	}
	if !slices.ContainsFunc(next.Members, func(x machinerecord.Member) bool { return x.NodeID == m.rec.NodeID }) {
		return &pb.FormCellReply{Refusal: "not_a_member"}, nil
	}
	if m.rec.CellID != 0 {
		if m.rec.CellID != next.CellID {
			return &pb.FormCellReply{Refusal: "other_cell"}, nil // the vote is final
		}
		// Already voted for this plan. At a higher ballot the vote moves up
		// with the promise (the acceptor's invariant: its vote is at or
		// below its promise, and it said formed at b); the plan it holds
		// stays the one voted.
		if changed {
			up := recordWithAcceptor(m.rec, acc)
			up.Incarnation++
			if err := machinerecord.Store(m.fs, m.cfg.DataDir, up); err != nil {
				return &pb.FormCellReply{Refusal: "storage"}, nil
			}
			m.rec = up
		}
		return &pb.FormCellReply{Formed: true}, nil
	}
	next = recordWithAcceptor(next, acc)
	next.Incarnation++
	// Format every store of the plan before the vote is recorded: a crash in
	// between leaves formatted stores and no vote, and the next FormCell of
	// the same plan finds them formatted under the same marker.
	if refusal := m.formatStores(next); refusal != "" {
		return &pb.FormCellReply{Refusal: refusal}, nil
	}
	if slices.Contains(next.Matchmakers, next.NodeID) {
		// The matchmaker's registry store is formatted with the journals'.
		reg := m.db.Registry()
		want := storage.RegistryMarker{Node: paxos.NodeID(next.NodeID), Matchmakers: nodeIDs(next.Matchmakers)}
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
	if err := machinerecord.Store(m.fs, m.cfg.DataDir, next); err != nil {
		return &pb.FormCellReply{Refusal: "storage"}, nil
	}
	m.rec = next
	if err := m.serve(storage.ClaimExistingMember); err != nil {
		m.log.Error("serving the formed cell failed", "err", err)
		return &pb.FormCellReply{Refusal: "storage"}, nil
	}
	return &pb.FormCellReply{Formed: true}, nil
}
