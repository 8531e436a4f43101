package machine

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/security"
	"github.com/parosdb/paros/server"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/machinerecord"
	"github.com/parosdb/paros/wire"
)

// Service implements paros.v1.Machine for one machine.
type Service struct {
	pb.UnimplementedMachineServer
	M *Machine
}

// Identify answers the machine's identity and, when asked (the gate lets
// only a peer or an admin over every journal ask), its cell plan: what an
// operator's tool hands to JoinCell on a machine it adds.
func (s *Service) Identify(_ context.Context, req *pb.IdentifyRequest) (*pb.IdentifyReply, error) {
	r := s.M.Record()
	out := &pb.IdentifyReply{NodeId: r.NodeID, Addr: s.M.cfg.Advertise, CellId: r.CellID, Incarnation: r.Incarnation,
		Role: s.M.cfg.Role.String()}
	if req.GetPlan() {
		out.Plan = planOf(r)
	}
	return out, nil
}

func recBallot(round, node uint64) paxos.Ballot {
	return paxos.Ballot{Round: round, Node: paxos.NodeID(node)}
}

func planOf(r machinerecord.Record) *pb.CellPlan {
	if r.CellID == 0 {
		return nil
	}
	p := &pb.CellPlan{CellId: r.CellID}
	for _, m := range r.Members {
		p.Members = append(p.Members, &pb.Member{NodeId: m.NodeID, Addr: m.Addr})
	}
	for _, j := range r.Journals {
		p.Journals = append(p.Journals, wire.JournalIDToPB(j.ID()))
	}
	p.Matchmakers = slices.Clone(r.Matchmakers)
	for _, m := range r.Replicas {
		p.Replicas = append(p.Replicas, &pb.Member{NodeId: m.NodeID, Addr: m.Addr})
	}
	for _, m := range r.Proxies {
		p.Proxies = append(p.Proxies, &pb.Member{NodeId: m.NodeID, Addr: m.Addr})
	}
	return p
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

// prepareStepsMax bounds the steps one PrepareCell of a CellInit takes to
// raise an acceptor's promise towards its ballot (prepare): the work of
// one CellInit stays bounded, and the operator's InitCell, which retries,
// resumes from the promises already raised.
const prepareStepsMax = 64

// selfCallKey marks a call the proposer makes to its own acceptor in
// process (localClient): no gate saw it, and a machine trusts itself.
type selfCallKey struct{}

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
// if it is above every promise and at most prepareRoundLeadMax above it,
// durably, and report the vote held. Only a founding member the request
// names (founderCall) may ask, and only if the request names this machine.
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
	promised := recBallot(m.rec.PromisedRound, m.rec.PromisedNode)
	reply := &pb.PrepareCellReply{NodeId: m.rec.NodeID, Vote: planOf(m.rec),
		VoteBallot: wire.BallotToPB(recBallot(m.rec.VoteRound, m.rec.VoteNode))}
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
	if b.IsZero() || !promised.Less(b) {
		reply.Refusal, reply.Promise = "promised_higher", wire.BallotToPB(promised)
		return reply, nil
	}
	if b.Round-promised.Round > prepareRoundLeadMax {
		reply.Refusal, reply.Promise = "round_too_far", wire.BallotToPB(promised)
		return reply, nil
	}
	next := m.rec
	next.PromisedRound, next.PromisedNode = b.Round, uint64(b.Node)
	next.Incarnation++
	if err := machinerecord.Store(m.fs, m.cfg.DataDir, next); err != nil {
		reply.Refusal = "storage"
		return reply, nil
	}
	m.rec = next
	reply.Promised, reply.Promise = true, wire.BallotToPB(b)
	return reply, nil
}

// FormCell is Phase 2 at this acceptor: vote for the plan at the ballot
// unless a higher one was promised (or the ballot is more than
// prepareRoundLeadMax above the promise: a vote records its round as the
// promise). Voting formats the plan's stores first and records the vote
// after (the commit point), then serves the cell. A repeated FormCell of
// the same plan is answered formed. Only a founding member the plan names
// (founderCall) may ask.
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
	promised := recBallot(m.rec.PromisedRound, m.rec.PromisedNode)
	if !b.InRange() {
		return &pb.FormCellReply{Refusal: "malformed"}, nil
	}
	if m.cfg.Role != RoleNode {
		return &pb.FormCellReply{Refusal: m.cfg.Role.String()}, nil
	}
	if b.IsZero() || b.Less(promised) {
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
			return &pb.FormCellReply{Refusal: "other_cell"}, nil
		}
		return &pb.FormCellReply{Formed: true}, nil // already voted for this plan
	}
	next.PromisedRound, next.PromisedNode = b.Round, uint64(b.Node)
	next.VoteRound, next.VoteNode = b.Round, uint64(b.Node)
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

func recordWithPlan(r machinerecord.Record, p *pb.CellPlan) (machinerecord.Record, error) {
	if p.GetCellId() == 0 || len(p.GetMembers()) == 0 || len(p.GetJournals()) == 0 {
		return r, fmt.Errorf("empty plan")
	}
	r.CellID = p.GetCellId()
	r.Members, r.Journals = nil, nil
	for _, mb := range p.GetMembers() {
		r.Members = append(r.Members, machinerecord.Member{NodeID: mb.GetNodeId(), Addr: mb.GetAddr()})
	}
	for _, j := range p.GetJournals() {
		id := wire.JournalIDFromPB(j)
		r.Journals = append(r.Journals, machinerecord.JournalID{Tenant: id.Tenant, Journal: id.Journal})
	}
	r.Matchmakers = slices.Clone(p.GetMatchmakers())
	r.Replicas = nil
	for _, mb := range p.GetReplicas() {
		r.Replicas = append(r.Replicas, machinerecord.Member{NodeID: mb.GetNodeId(), Addr: mb.GetAddr()})
	}
	r.Proxies = nil
	for _, mb := range p.GetProxies() {
		r.Proxies = append(r.Proxies, machinerecord.Member{NodeID: mb.GetNodeId(), Addr: mb.GetAddr()})
	}
	check := r
	if check.Founder() {
		check.VoteRound = 1 // a founder's record comes with its vote; an admitted machine's without
	}
	return r, check.Validate()
}

// CellInit forms a cell over the given member addresses, acting as the
// decree's proposer. Every member must answer Phase 1; the plan is the one
// a member already voted for (an interrupted formation resumes) or a new
// one; a majority of votes chooses it. The replica machines (req.replicas)
// and the proxy machines (req.proxies) vote on nothing: the plan names
// them, and once it is chosen each joins the cell (joinReplicas); the cell
// is initialized when all have.
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
	if len(addrs) == 0 || req.GetJournals() > 64 || len(repAddrs) > paxos.ReplicasMax || len(proxyAddrs) > paxos.ProxiesMax ||
		slices.ContainsFunc(repAddrs, func(a string) bool { return slices.Contains(addrs, a) }) ||
		slices.ContainsFunc(proxyAddrs, func(a string) bool { return slices.Contains(addrs, a) || slices.Contains(repAddrs, a) }) {
		return &pb.CellInitReply{Refusal: "malformed"}, nil
	}
	self := s.M.cfg.Advertise
	if !slices.Contains(addrs, self) {
		return &pb.CellInitReply{Refusal: "not_a_member"}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
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
	round := s.M.Record().PromisedRound + 1
	for attempt := 0; attempt < 8; attempt++ {
		b := &pb.Ballot{Round: round, Node: s.M.NodeID()}
		var best *pb.CellPlan
		var bestBallot paxos.Ballot
		ok := true
		for i, p := range peers {
			r, err := prepare(ctx, p, b, ids)
			if err != nil {
				return &pb.CellInitReply{Refusal: "member_unreachable: " + addrs[i]}, nil
			}
			if !r.GetPromised() {
				if r.GetRefusal() == "malformed" || r.GetPromise().GetRound() >= paxos.BallotRoundMax {
					return &pb.CellInitReply{Refusal: "ballots_exhausted: " + addrs[i]}, nil
				}
				ok = false
				round = max(round, r.GetPromise().GetRound()) + 1
				break
			}
			if v := r.GetVote(); v != nil && bestBallot.Less(wire.BallotFromPB(r.GetVoteBallot())) {
				best, bestBallot = v, wire.BallotFromPB(r.GetVoteBallot())
			}
		}
		if !ok {
			continue
		}
		plan := best
		if plan == nil {
			plan = &pb.CellPlan{CellId: randomID()}
			for i, a := range addrs {
				plan.Members = append(plan.Members, &pb.Member{NodeId: ids[i], Addr: a})
			}
			n := max(req.GetJournals(), 1)
			for range n {
				plan.Journals = append(plan.Journals, wire.JournalIDToPB(journal.ID{Tenant: randomID(), Journal: randomID()}))
			}
			if !req.GetPlain() {
				// Every founding machine runs a matchmaker, so the cell can
				// reconfigure from its first day.
				plan.Matchmakers = slices.Sorted(slices.Values(ids))
			}
			plan.Replicas = planReplicas(repAddrs, repIDs)
			plan.Proxies = planReplicas(proxyAddrs, proxyIDs)
		} else if !sameMembers(plan.GetMembers(), ids) || !sameMembers(plan.GetReplicas(), repIDs) ||
			!sameMembers(plan.GetProxies(), proxyIDs) {
			return &pb.CellInitReply{Refusal: "other_cell_init", Plan: plan}, nil
		}
		formed := 0
		for _, p := range peers {
			if r, err := p.FormCell(ctx, &pb.FormCellRequest{Ballot: b, Plan: plan}); err == nil && r.GetFormed() {
				formed++
			}
		}
		if formed*2 <= len(peers) {
			return &pb.CellInitReply{Refusal: "contended", Plan: plan}, nil
		}
		if refusal := joinReplicas(ctx, plan, repAddrs, replicas, roleReplicaName); refusal != "" {
			return &pb.CellInitReply{Refusal: refusal, Plan: plan}, nil
		}
		if refusal := joinReplicas(ctx, plan, proxyAddrs, proxies, roleProxyName); refusal != "" {
			return &pb.CellInitReply{Refusal: refusal, Plan: plan}, nil
		}
		return &pb.CellInitReply{Initialized: true, Plan: plan}, nil
	}
	return &pb.CellInitReply{Refusal: "contended"}, nil
}

// prepare sends Phase 1 at ballot b, naming the founding members ids, to
// one acceptor. An acceptor whose promise is more than prepareRoundLeadMax
// below b (a caller pushed another member up within the bound) refuses
// round_too_far with its promise; the proposer then steps that promise up,
// promising a ballot of its own below b within the bound, and asks again,
// at most prepareStepsMax times. A step is a promise like any other: it
// only makes the acceptor refuse ballots below it, and b is above it.
func prepare(ctx context.Context, p pb.MachineClient, b *pb.Ballot, ids []uint64) (*pb.PrepareCellReply, error) {
	req := &pb.PrepareCellRequest{Ballot: b, Members: ids}
	for range prepareStepsMax {
		r, err := p.PrepareCell(ctx, req)
		if err != nil || r.GetRefusal() != "round_too_far" {
			return r, err
		}
		step := r.GetPromise().GetRound() + prepareRoundLeadMax
		if step >= b.GetRound() {
			return r, nil // the acceptor's promise moved meanwhile: the caller picks a new round
		}
		if _, err := p.PrepareCell(ctx, &pb.PrepareCellRequest{Ballot: &pb.Ballot{Round: step, Node: b.GetNode()}, Members: ids}); err != nil {
			return nil, err
		}
	}
	return p.PrepareCell(ctx, req)
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

// sameMembers reports whether ms name exactly the machines ids.
func sameMembers(ms []*pb.Member, ids []uint64) bool {
	var a []uint64
	for _, m := range ms {
		a = append(a, m.GetNodeId())
	}
	b := slices.Clone(ids)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

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
