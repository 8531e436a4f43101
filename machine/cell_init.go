package machine

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/celldecree"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/security"
	"github.com/parosdb/paros/wire"
)

// This file is the proposer of the cell decree (CellInit) and what it
// needs to reach the founding machines. The proposer's rule is the core's
// (paxos.DecreeProposer: adopt the highest vote Phase 1 meets, count Phase
// 2 through the one Phase-2 tally); the machine supplies the quorum system,
// the plan, and the wire.

// CellJournalsMax bounds the journals a cell plan names at formation. The
// plan travels whole in PrepareCell answers and FormCell requests (about
// 22 bytes a journal: 100,000 journals are 2.2 MB, inside gRPC's 4 MiB
// default) and is kept in the machine record.
const CellJournalsMax = 100_000

// CellInit forms a cell over the given member addresses, acting as the
// decree's proposer. Every member must answer Phase 1; the plan is the one
// a member already voted for (an interrupted formation resumes) or a new
// one; a majority of votes chooses it. The replica machines (req.replicas)
// and the proxy machines (req.proxies) vote on nothing: the plan names
// them, and once it is chosen each joins the cell (joinReplicas); the cell
// is initialized when all have. A machine runs one CellInit at a time
// (Machine.proposing): a second waits for the first, so two proposers
// never share a ballot.
//
// With credentials the proposer dials the members over mutual TLS,
// accepting any node of this cell (security.Node.PeerConfig(0)): a member
// is known by its address until it answers. The node id a member's
// Identify reports must be the one its certificate names, or the member is
// refused ("member_identity_mismatch"): the plan names proven ids only; and
// each machine must have been started as the role the request gives it
// ("member_role_mismatch").
func (s *Service) CellInit(ctx context.Context, req *pb.CellInitRequest) (*pb.CellInitReply, error) {
	addrs, repAddrs, proxyAddrs := req.GetMembers(), req.GetReplicas(), req.GetProxies()
	if len(addrs) == 0 || req.GetJournals() > CellJournalsMax || len(repAddrs) > paxos.ReplicasMax || len(proxyAddrs) > paxos.ProxiesMax ||
		slices.ContainsFunc(repAddrs, func(a string) bool { return slices.Contains(addrs, a) }) ||
		slices.ContainsFunc(proxyAddrs, func(a string) bool { return slices.Contains(addrs, a) || slices.Contains(repAddrs, a) }) {
		return &pb.CellInitReply{Refusal: "malformed"}, nil
	}
	self := s.M.cfg.Advertise
	if !slices.Contains(addrs, self) {
		return &pb.CellInitReply{Refusal: "not_a_member"}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, wire.CellInitTimeout(req.GetJournals()))
	defer cancel()
	select {
	case s.M.proposing <- struct{}{}:
		defer func() { <-s.M.proposing }()
	case <-ctx.Done():
		return &pb.CellInitReply{Refusal: "contended"}, nil
	}
	peers, closeAll, err := s.dialMachines(addrs)
	defer closeAll()
	if err != nil {
		return &pb.CellInitReply{Refusal: "member_unreachable"}, nil
	}
	replicas, closeReplicas, err := s.dialMachines(repAddrs)
	defer closeReplicas()
	if err != nil {
		return &pb.CellInitReply{Refusal: "replica_unreachable"}, nil
	}
	proxies, closeProxies, err := s.dialMachines(proxyAddrs)
	defer closeProxies()
	if err != nil {
		return &pb.CellInitReply{Refusal: "proxy_unreachable"}, nil
	}
	ids, refusal := s.identifyAll(ctx, addrs, peers, RoleNode)
	if refusal != "" {
		return &pb.CellInitReply{Refusal: refusal}, nil
	}
	repIDs, refusal := s.identifyAll(ctx, repAddrs, replicas, RoleReplica)
	if refusal != "" {
		return &pb.CellInitReply{Refusal: refusal}, nil
	}
	proxyIDs, refusal := s.identifyAll(ctx, proxyAddrs, proxies, RoleProxy)
	if refusal != "" {
		return &pb.CellInitReply{Refusal: refusal}, nil
	}
	if slices.ContainsFunc(repIDs, func(id uint64) bool { return slices.Contains(ids, id) }) ||
		slices.ContainsFunc(proxyIDs, func(id uint64) bool { return slices.Contains(ids, id) || slices.Contains(repIDs, id) }) {
		return &pb.CellInitReply{Refusal: "malformed"}, nil // one machine under two addresses
	}
	f := &formation{journals: req.GetJournals(), plain: req.GetPlain(), addrs: addrs, ids: ids, peers: peers,
		repAddrs: repAddrs, repIDs: repIDs, proxyAddrs: proxyAddrs, proxyIDs: proxyIDs}
	// The first round is above this machine's own promise, which is at or
	// above every ballot an earlier CellInit here sent a FormCell at (Phase 2
	// follows a Phase 1 every member granted, its own acceptor included). A
	// ballot that lost Phase 1 before reaching this machine's acceptor may
	// be asked again; no plan was ever proposed at it, so that is harmless. The record is read under its lock: an acceptor call may
	// be rewriting it.
	rec := s.M.Record()
	plan, refusal := decide(ctx, f, rec.NodeID, rec.PromisedRound+1)
	if refusal != "" {
		return &pb.CellInitReply{Refusal: refusal, Plan: plan}, nil
	}
	if refusal := joinReplicas(ctx, plan, repAddrs, replicas, roleReplicaName); refusal != "" {
		return &pb.CellInitReply{Refusal: refusal, Plan: plan}, nil
	}
	if refusal := joinReplicas(ctx, plan, proxyAddrs, proxies, roleProxyName); refusal != "" {
		return &pb.CellInitReply{Refusal: refusal, Plan: plan}, nil
	}
	return &pb.CellInitReply{Initialized: true, Plan: plan}, nil
}

// formation is what one CellInit forms: the founding members (their
// addresses, the node ids they proved, in the same order, and a client of
// each), the replica and proxy machines the plan names, and how a fresh
// plan is drawn (journals, plain).
type formation struct {
	journals   uint32
	plain      bool
	addrs      []string
	ids        []uint64
	peers      []pb.MachineClient
	repAddrs   []string
	repIDs     []uint64
	proxyAddrs []string
	proxyIDs   []uint64
}

// newPlan draws a fresh plan of f: a new cell id and journal ids, f's
// members, replicas and proxies, and (unless plain) a matchmaker on every
// founding machine.
func (f *formation) newPlan() *pb.CellPlan {
	plan := &pb.CellPlan{CellId: randomID()}
	for i, a := range f.addrs {
		plan.Members = append(plan.Members, &pb.Member{NodeId: f.ids[i], Addr: a})
	}
	for range f.journals {
		plan.Journals = append(plan.Journals, wire.JournalIDToPB(journal.ID{Tenant: randomID(), Journal: randomID()}))
	}
	// The control plane's two journals share the cell's own tenant, which
	// no user tenant ever takes (ids are random and the registry refuses
	// one in use).
	cellTenant := randomID()
	plan.ControlJournal = wire.JournalIDToPB(journal.ID{Tenant: cellTenant, Journal: randomID()})
	plan.ElectionJournal = wire.JournalIDToPB(journal.ID{Tenant: cellTenant, Journal: randomID()})
	if !f.plain {
		// Every founding machine runs a matchmaker, so the cell can
		// reconfigure from its first day.
		plan.Matchmakers = slices.Sorted(slices.Values(f.ids))
	}
	plan.Replicas = planReplicas(f.repAddrs, f.repIDs)
	plan.Proxies = planReplicas(f.proxyAddrs, f.proxyIDs)
	return plan
}

// names reports whether plan names exactly f's members, replicas and
// proxies: a plan voted by another formation's proposer does not.
func (f *formation) names(plan *pb.CellPlan) bool {
	return sameMembers(plan.GetMembers(), f.ids) && sameMembers(plan.GetReplicas(), f.repIDs) &&
		sameMembers(plan.GetProxies(), f.proxyIDs)
}

// decide runs one attempt of the decree (celldecree.Proposer) as
// proposer node from round on, carrying its asks to f's members one at a
// time: Phase 1 at every member, then FormCell of the plan the proposer is
// left with to every member, so that each forms, not only a majority. It
// returns the chosen plan, or a refusal, with the plan it concerns where
// there is one (other_cell_init, or contended after Phase 2).
func decide(ctx context.Context, f *formation, node, round uint64) (*pb.CellPlan, string) {
	prop, asks := celldecree.NewProposer(celldecree.Config[*pb.CellPlan]{
		Plans: planRules, Founders: nodeIDs(f.ids), Node: paxos.NodeID(node), Round: round,
		Fresh: f.newPlan, Names: f.names,
	})
	for len(asks) > 0 {
		if _, done := prop.Done(); done {
			break
		}
		ask := asks[0]
		asks = append(asks[1:], f.carry(ctx, prop, ask)...)
	}
	out, done := prop.Done()
	if !done {
		return nil, celldecree.Contended // unreachable: every ask is answered
	}
	if out.Member != 0 {
		return out.Plan, out.Refusal + ": " + f.addrs[slices.Index(f.ids, uint64(out.Member))]
	}
	return out.Plan, out.Refusal
}

// carry sends ask to its member and folds the reply (or its absence) into
// prop, returning the asks that follow. An ask the proposer no longer
// waits for is not sent.
func (f *formation) carry(ctx context.Context, prop *celldecree.Proposer[*pb.CellPlan], ask celldecree.Ask[*pb.CellPlan]) []celldecree.Ask[*pb.CellPlan] {
	if !prop.Wants(ask) {
		return nil
	}
	peer := f.peers[slices.Index(f.ids, uint64(ask.To))]
	if ask.Phase == celldecree.Prepare {
		r, err := peer.PrepareCell(ctx, &pb.PrepareCellRequest{Ballot: wire.BallotToPB(ask.Ballot), Members: f.ids})
		if err != nil {
			return prop.Unanswered(ask)
		}
		return prop.Answered(ask, celldecree.Answer[*pb.CellPlan]{Granted: r.GetPromised(),
			Refusal: celldecree.Refusal(r.GetRefusal()), Promise: wire.BallotFromPB(r.GetPromise()), Vote: voteOf(r)})
	}
	r, err := peer.FormCell(ctx, &pb.FormCellRequest{Ballot: wire.BallotToPB(ask.Ballot), Plan: ask.Plan})
	if err != nil {
		return prop.Unanswered(ask)
	}
	return prop.Answered(ask, celldecree.Answer[*pb.CellPlan]{Granted: r.GetFormed(),
		Refusal: celldecree.Refusal(r.GetRefusal()), Promise: wire.BallotFromPB(r.GetPromise())})
}

// voteOf is the vote a PrepareCell grant reports: the plan the member
// holds at the ballot it voted it at (none when it names no plan; a plan
// at a zero ballot is an admitted machine's, no vote).
func voteOf(r *pb.PrepareCellReply) paxos.DecreeVote[*pb.CellPlan] {
	if r.GetVote() == nil {
		return paxos.DecreeVote[*pb.CellPlan]{}
	}
	return paxos.DecreeVote[*pb.CellPlan]{Ballot: wire.BallotFromPB(r.GetVoteBallot()), Value: r.GetVote()}
}

// dialMachines makes a Machine client of each address (this machine's own
// is answered in process), and a function that closes the connections.
func (s *Service) dialMachines(addrs []string) ([]pb.MachineClient, func(), error) {
	var conns []*grpc.ClientConn
	closeAll := func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}
	out := make([]pb.MachineClient, len(addrs))
	for i, a := range addrs {
		if a == s.M.cfg.Advertise {
			out[i] = localClient{s}
			continue
		}
		conn, err := grpc.NewClient(a, grpc.WithTransportCredentials(s.M.peerCredentials(0)))
		if err != nil {
			return nil, closeAll, err
		}
		conns = append(conns, conn)
		out[i] = pb.NewMachineClient(conn)
	}
	return out, closeAll, nil
}

// identifyAll asks each machine who it is, and returns their node ids, or
// a refusal: one did not answer, answered an id its certificate does not
// prove, or was started as another role than want.
func (s *Service) identifyAll(ctx context.Context, addrs []string, machines []pb.MachineClient, want Role) ([]uint64, string) {
	unreachable := "member_unreachable: "
	if want != RoleNode {
		unreachable = want.String() + "_unreachable: "
	}
	ids := make([]uint64, len(addrs))
	for i, p := range machines {
		var from peer.Peer
		r, err := p.Identify(ctx, &pb.IdentifyRequest{}, grpc.Peer(&from))
		if err != nil {
			return nil, unreachable + addrs[i]
		}
		if !s.provenID(addrs[i] == s.M.cfg.Advertise, &from, r.GetNodeId()) {
			return nil, "member_identity_mismatch: " + addrs[i]
		}
		// A machine of a version without roles answers none: a node.
		if role, err := ParseRole(cmp.Or(r.GetRole(), roleNodeName)); err != nil || role != want {
			return nil, fmt.Sprintf("member_role_mismatch: %s is a %s, wanted as a %s", addrs[i], cmp.Or(r.GetRole(), roleNodeName), want)
		}
		ids[i] = r.GetNodeId()
	}
	return ids, ""
}

// provenID reports whether node id, as a member's Identify reported it, is
// the one the member's certificate names (from is the call's peer). The
// proposer's own answer and insecure mode prove nothing and need not.
func (s *Service) provenID(self bool, from *peer.Peer, id uint64) bool {
	if self || s.M.cfg.TLS == nil {
		return true
	}
	info, ok := from.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.PeerCertificates) == 0 {
		return false
	}
	certID, err := security.NodeIDOf(info.State.PeerCertificates[0])
	return err == nil && certID == id
}

// selfCallKey marks a call the proposer makes to its own acceptor in
// process (localClient): no gate saw it, and a machine trusts itself.
type selfCallKey struct{}

// localClient lets the proposer call its own acceptor without a socket.
// Its calls are marked as the machine's own (selfCallKey): they carry the
// operator's CellInit context, whose caller is the operator, not a peer.
type localClient struct{ s *Service }

func (l localClient) Identify(ctx context.Context, in *pb.IdentifyRequest, _ ...grpc.CallOption) (*pb.IdentifyReply, error) {
	return l.s.Identify(ctx, in)
}
func (l localClient) PrepareCell(ctx context.Context, in *pb.PrepareCellRequest, _ ...grpc.CallOption) (*pb.PrepareCellReply, error) {
	return l.s.PrepareCell(context.WithValue(ctx, selfCallKey{}, true), in)
}
func (l localClient) FormCell(ctx context.Context, in *pb.FormCellRequest, _ ...grpc.CallOption) (*pb.FormCellReply, error) {
	return l.s.FormCell(context.WithValue(ctx, selfCallKey{}, true), in)
}
func (l localClient) CellInit(ctx context.Context, in *pb.CellInitRequest, _ ...grpc.CallOption) (*pb.CellInitReply, error) {
	return l.s.CellInit(ctx, in)
}
func (l localClient) Admit(ctx context.Context, in *pb.AdmitRequest, _ ...grpc.CallOption) (*pb.AdmitReply, error) {
	return l.s.Admit(ctx, in)
}
func (l localClient) JoinCell(ctx context.Context, in *pb.JoinCellRequest, _ ...grpc.CallOption) (*pb.JoinCellReply, error) {
	return l.s.JoinCell(context.WithValue(ctx, selfCallKey{}, true), in)
}
func (l localClient) JoinJournal(ctx context.Context, in *pb.JoinJournalRequest, _ ...grpc.CallOption) (*pb.JoinJournalReply, error) {
	return l.s.JoinJournal(ctx, in)
}
