package machine

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/security"
	"github.com/parosdb/paros/server"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/machinerecord"
	"github.com/parosdb/paros/wire"
)

// Replacing a machine takes three machine calls before the reconfiguration
// itself (parosctl journal reconfigure makes them): every machine of the cell is
// told of the new one (Admit), the new one joins the cell (JoinCell), and
// it formats the journal's store as a joiner (JoinJournal). Each is
// idempotent, so an interrupted replacement is resumed by running it again;
// none changes any journal's configuration, so an interruption leaves the
// old configuration in force.

// Admit records a machine admitted to the cell and makes it a peer. A
// machine not yet recorded at that address must prove it is the node
// named (proveMachine): an Admit of a made-up node id, or of an address
// whose machine is another node, is refused unknown_machine, one that does
// not answer machine_unreachable, and nothing is recorded.
func (s *Service) Admit(ctx context.Context, req *pb.AdmitRequest) (*pb.AdmitReply, error) {
	m := s.M
	mb := req.GetMember()
	if mb.GetNodeId() == 0 || mb.GetAddr() == "" || len(mb.GetAddr()) > addrBytesMax {
		return &pb.AdmitReply{Refusal: "malformed"}, nil
	}
	if rec := m.Record(); rec.CellID != 0 && req.GetCellId() == rec.CellID && !knownAt(rec, mb.GetNodeId(), mb.GetAddr()) {
		if refusal := m.proveMachine(ctx, mb.GetNodeId(), mb.GetAddr(), rec.CellID); refusal != "" {
			return &pb.AdmitReply{Refusal: refusal}, nil
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.rec.CellID == 0:
		return &pb.AdmitReply{Refusal: "no_cell"}, nil
	case req.GetCellId() != m.rec.CellID:
		return &pb.AdmitReply{Refusal: "other_cell"}, nil
	}
	if !known(m.rec, mb.GetNodeId()) {
		next := m.rec
		next.Admitted = append(slices.Clone(next.Admitted), machinerecord.Member{NodeID: mb.GetNodeId(), Addr: mb.GetAddr()})
		next.Incarnation++
		if err := machinerecord.Store(m.fs, m.cfg.DataDir, next); err != nil {
			return &pb.AdmitReply{Refusal: "storage"}, nil
		}
		m.rec = next
	}
	if m.rt != nil {
		if err := m.rt.AddPeer(ctx, paxos.NodeID(mb.GetNodeId()), mb.GetAddr()); err != nil {
			return nil, err
		}
	}
	return &pb.AdmitReply{Admitted: true}, nil
}

func known(r machinerecord.Record, id uint64) bool {
	return slices.ContainsFunc(cellMachines(r), func(x machinerecord.Member) bool { return x.NodeID == id })
}

// knownAt reports whether node id is a machine of r's cell at addr (this
// machine itself, whatever the address).
func knownAt(r machinerecord.Record, id uint64, addr string) bool {
	return id == r.NodeID ||
		slices.ContainsFunc(cellMachines(r), func(x machinerecord.Member) bool { return x.NodeID == id && x.Addr == addr })
}

// proveTimeout bounds proving one machine's identity (proveMachine): a
// TLS handshake and one Identify, on a network of the cell.
const proveTimeout = 3 * time.Second

// proveMachine asks the machine at addr who it is, over mutual TLS with
// this machine's certificate, accepting any node of the CA
// (peerCredentials(0)), and returns "" when the node id its certificate
// names and its Identify answers is id, it is an acceptor machine (role
// node) and it is idle or a machine of cell cellID; else the refusal:
// unknown_machine (another node, a replica or proxy machine, a machine of
// another cell) or machine_unreachable (no answer within proveTimeout). In
// insecure mode the answer is taken at its word.
func (m *Machine) proveMachine(ctx context.Context, id uint64, addr string, cellID uint64) string {
	if id == m.rec.NodeID {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, proveTimeout)
	defer cancel()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(m.peerCredentials(0)))
	if err != nil {
		return fmt.Sprintf("machine_unreachable: %016x at %s: %v", id, addr, err)
	}
	defer conn.Close()
	var from peer.Peer
	r, err := pb.NewMachineClient(conn).Identify(ctx, &pb.IdentifyRequest{}, grpc.Peer(&from))
	if err != nil {
		return fmt.Sprintf("machine_unreachable: %016x at %s: %v", id, addr, status.Convert(err).Message())
	}
	proven := r.GetNodeId()
	if m.cfg.TLS != nil {
		proven = 0
		if info, ok := from.AuthInfo.(credentials.TLSInfo); ok && len(info.State.PeerCertificates) > 0 {
			if certID, err := security.NodeIDOf(info.State.PeerCertificates[0]); err == nil && certID == r.GetNodeId() {
				proven = certID
			}
		}
	}
	switch role := cmp.Or(r.GetRole(), roleNodeName); {
	case proven != id:
		return fmt.Sprintf("unknown_machine: %016x: the machine at %s proves node %016x", id, addr, proven)
	case role != roleNodeName:
		return fmt.Sprintf("unknown_machine: %016x at %s is a %s machine, no acceptor", id, addr, role)
	case r.GetCellId() != 0 && r.GetCellId() != cellID:
		return fmt.Sprintf("unknown_machine: %016x at %s is a machine of cell %016x, not of cell %016x", id, addr, r.GetCellId(), cellID)
	}
	return ""
}

// VetConfiguration judges a Reconfigure at this machine before its host
// sees it (server.CellVetter): every member must be an acceptor machine of
// the cell (a founder or an admitted machine: else unknown_machine; a
// replica or proxy machine is invalid_configuration), the quorum system
// must fit the members, and every member must prove now that it is that
// machine and answers (proveMachine at its recorded address: else
// machine_unreachable), so that the new configuration's quorums are
// made of live, identified machines: Phase 1 and Phase 2 are won by them
// all. (The probe's Reconfigure to member [1] was accepted and left the
// journal leaderless for good: no machine 1 ever answered.) An idle
// machine serves no journal: its host answers.
func (m *Machine) VetConfiguration(ctx context.Context, members []paxos.NodeID, q quorum.Spec) string {
	rec := m.Record()
	if rec.CellID == 0 {
		return ""
	}
	acceptors := append(slices.Clone(rec.Members), rec.Admitted...)
	addrs := make([]string, len(members))
	for i, id := range members {
		switch {
		case replicaMachine(rec, uint64(id)):
			return fmt.Sprintf("invalid_configuration: %016x is a replica machine, never a member", uint64(id))
		case proxyMachine(rec, uint64(id)):
			return fmt.Sprintf("invalid_configuration: %016x is a proxy machine, never a member", uint64(id))
		}
		at := slices.IndexFunc(acceptors, func(x machinerecord.Member) bool { return x.NodeID == uint64(id) })
		if at < 0 {
			return fmt.Sprintf("unknown_machine: %016x is no acceptor machine of cell %016x", uint64(id), rec.CellID)
		}
		addrs[i] = acceptors[at].Addr
	}
	sys, err := quorum.New(members, q)
	if err != nil {
		return "invalid_configuration: " + err.Error()
	}
	refusals := make([]string, len(members))
	var wg sync.WaitGroup
	for i, id := range members {
		wg.Go(func() { refusals[i] = m.proveMachine(ctx, uint64(id), addrs[i], rec.CellID) })
	}
	wg.Wait()
	for _, r := range refusals {
		if r != "" {
			return r
		}
	}
	all := sys.SetOf(sys.Members()...)
	if sys.Phase1(all, 0) != quorum.Won || !sys.Phase2Everywhere(all) {
		return fmt.Sprintf("invalid_configuration: %s is not satisfiable by its members", sys)
	}
	return ""
}

// VetSuccessor judges a Handoff's successor before the host sees it
// (server.CellVetter): it must be a machine of the cell (else
// unknown_machine); the host judges the rest (an acceptor of the journal,
// no replica).
func (m *Machine) VetSuccessor(to paxos.NodeID) string {
	rec := m.Record()
	if rec.CellID == 0 || known(rec, uint64(to)) {
		return ""
	}
	return fmt.Sprintf("unknown_machine: %016x is no machine of cell %016x", uint64(to), rec.CellID)
}

var _ server.CellVetter = (*Machine)(nil)

// JoinCell makes an idle machine a machine of an existing cell: it records
// the cell (not as a founder: it voted for no plan) and starts serving with
// no journal. An admin's token may ask (parosctl adds a machine); a peer
// only as the formation's proposer (joinerCall).
func (s *Service) JoinCell(ctx context.Context, req *pb.JoinCellRequest) (*pb.JoinCellReply, error) {
	m := s.M
	m.mu.Lock()
	defer m.mu.Unlock()
	plan := req.GetPlan()
	if c, check := cellCaller(ctx); check && !c.AdminAll {
		if err := joinerCall(c, m.rec, plan, m.cfg.Role); err != nil {
			return nil, err
		}
	}
	next, err := recordWithPlan(m.rec, plan)
	if err != nil {
		return &pb.JoinCellReply{Refusal: "malformed"}, nil
	}
	for _, mb := range req.GetAdmitted() {
		next.Admitted = append(next.Admitted, machinerecord.Member{NodeID: mb.GetNodeId(), Addr: mb.GetAddr()})
	}
	switch {
	case m.rec.CellID != 0 && m.rec.CellID != next.CellID:
		return &pb.JoinCellReply{Refusal: "other_cell"}, nil
	case m.rec.CellID != 0:
		return &pb.JoinCellReply{Joined: true}, nil // joined before
	case next.Founder():
		return &pb.JoinCellReply{Refusal: "founder"}, nil
	case recordRole(next) != m.cfg.Role:
		return &pb.JoinCellReply{Refusal: "role_mismatch"}, nil
	case !next.Replica() && !next.Proxy() && !slices.ContainsFunc(next.Admitted, func(x machinerecord.Member) bool { return x.NodeID == m.rec.NodeID }):
		return &pb.JoinCellReply{Refusal: "not_admitted"}, nil
	}
	next.Incarnation++
	if err := next.Validate(); err != nil {
		return &pb.JoinCellReply{Refusal: "malformed"}, nil
	}
	// A replica serves every journal of the plan from the start: its stores
	// are formatted before the plan is recorded (the commit point, as a
	// founder's vote), so a crash in between is resumed by the next
	// JoinCell, never refused as amnesia. A proxy has no store to format.
	if refusal := m.formatStores(next); refusal != "" {
		return &pb.JoinCellReply{Refusal: refusal}, nil
	}
	if refusal := m.formatRegistry(next); refusal != "" {
		return &pb.JoinCellReply{Refusal: refusal}, nil // an admitted node machine runs a fresh matchmaker
	}
	next.MatchmakerRegistry = runsMatchmaker(next)
	if err := machinerecord.Store(m.fs, m.cfg.DataDir, next); err != nil {
		return &pb.JoinCellReply{Refusal: "storage"}, nil
	}
	m.rec = next
	if err := m.serve(storage.ClaimExistingMember); err != nil {
		m.log.Error("serving the joined cell failed", "err", err)
		return &pb.JoinCellReply{Refusal: "storage"}, nil
	}
	m.log.Info("joined the cell", "cell", next.CellID)
	return &pb.JoinCellReply{Joined: true}, nil
}

// joinerCall is the handler's part of JoinCell's rule for a peer (the gate
// let in any peer certificate of the CA, and an admin token). A machine
// sends JoinCell only as CellInit's proposer, joining the plan's replica
// and proxy machines once the plan is chosen (joinReplicas). So the
// receiver must be a replica or proxy machine (an acceptor machine joins
// only once an admin admitted it: parosctl's path), and the caller a
// founding member: of the receiver's cell once it joined one, else one
// the plan names. A machine of the CA outside the cell can then neither
// pull a machine of the cell into another, nor a node into any.
func joinerCall(c server.Caller, rec machinerecord.Record, plan *pb.CellPlan, role Role) error {
	const method = pb.Machine_JoinCell_FullMethodName
	if role == RoleNode {
		return c.Denied(method, "a peer joins only a replica or proxy machine to a cell; an acceptor machine joins once an admin admitted it")
	}
	if rec.CellID != 0 {
		if !slices.ContainsFunc(rec.Members, func(x machinerecord.Member) bool { return x.NodeID == c.Node }) {
			return c.Denied(method, fmt.Sprintf("node %016x is no founding member of cell %016x", c.Node, rec.CellID))
		}
		return nil
	}
	if c.Node == 0 || !slices.ContainsFunc(plan.GetMembers(), func(x *pb.Member) bool { return x.GetNodeId() == c.Node }) {
		return c.Denied(method, fmt.Sprintf("node %016x is no founding member the plan names", c.Node))
	}
	return nil
}

// JoinJournal formats a journal's store on this machine as a joiner of the
// named configuration and starts serving it: the node answers Phase 1 at
// once and votes once a ballot's configuration names it. The join is
// recorded before the store is formatted and marked formatted after, so a
// crash in between is resumed by the next start or the next JoinJournal.
// A machine that retired from the journal never joins it again (its
// promises went with its store): a new machine does.
func (s *Service) JoinJournal(ctx context.Context, req *pb.JoinJournalRequest) (*pb.JoinJournalReply, error) {
	m := s.M
	id := wire.JournalIDFromPB(req.GetJournal())
	spec := quorum.Spec{Kind: quorum.Kind(req.GetQuorumSystem()), Q1: int(req.GetPhase1Quorum()), Q2: int(req.GetPhase2Quorum()),
		Rows: int(req.GetRows()), Cols: int(req.GetCols())}
	if _, err := quorum.New(nodeIDs(req.GetMembers()), spec); err != nil {
		return &pb.JoinJournalReply{Refusal: "invalid_configuration: " + err.Error()}, nil
	}
	m.mu.Lock()
	rec, rt := m.rec, m.rt
	m.mu.Unlock()
	switch {
	case rec.CellID == 0 || rt == nil:
		return &pb.JoinJournalReply{Refusal: "no_cell"}, nil
	case rec.Replica():
		return &pb.JoinJournalReply{Refusal: roleReplicaName}, nil // in no configuration
	case rec.Proxy():
		return &pb.JoinJournalReply{Refusal: roleProxyName}, nil // nor is a proxy
	case len(rec.Matchmakers) == 0:
		return &pb.JoinJournalReply{Refusal: "plain"}, nil
	}
	named, isNamed := m.liveNamed(id)
	switch {
	case !slices.ContainsFunc(rec.Journals, func(j machinerecord.JournalID) bool { return j.ID() == id }) && !controlJournal(rec, id) && !isNamed:
		// Neither a journal of the cell's plan, nor a control journal,
		// nor one this machine's fold of the registry holds as live (a
		// journal created by name; a machine whose fold lags answers
		// this too, and the operator asks again).
		return &pb.JoinJournalReply{Refusal: "unknown_journal"}, nil
	case slices.ContainsFunc(rec.Retired, func(j machinerecord.JournalID) bool { return j.ID() == id }):
		return &pb.JoinJournalReply{Refusal: "retired"}, nil
	case !slices.Contains(req.GetMembers(), rec.NodeID):
		return &pb.JoinJournalReply{Refusal: "not_a_member"}, nil
	}
	if _, served := rt.Spec(id); served {
		return &pb.JoinJournalReply{Joined: true}, nil
	}
	// The plan's journals and the registry are single-writer; the
	// election journal is multi-writer (every candidate appends to it); a
	// journal created by name has the mode the registry placed it with.
	mode := journal.ModeSingle
	switch {
	case rec.Election != nil && id == rec.Election.ID():
		mode = journal.ModeMulti
	case isNamed:
		mode = journal.WriterMode(uint8(named.Placement.WriterMode))
	}
	jj := machinerecord.JoinedJournal{Tenant: id.Tenant, Journal: id.Journal, Members: slices.Sorted(slices.Values(req.GetMembers())),
		Kind: uint8(spec.Kind), Q1: spec.Q1, Q2: spec.Q2, Rows: spec.Rows, Cols: spec.Cols, Mode: uint8(mode)}
	if err := m.updateRecord(func(r *machinerecord.Record) {
		r.Joined = slices.DeleteFunc(r.Joined, func(x machinerecord.JoinedJournal) bool { return x.ID() == id })
		r.Joined = append(r.Joined, jj)
	}); err != nil {
		return &pb.JoinJournalReply{Refusal: "storage"}, nil
	}
	m.mu.Lock()
	hs := m.joinedSpec(jj, storage.ClaimFirstBoot)
	m.mu.Unlock()
	if hs.Claim != storage.ClaimFirstBoot {
		hs.Claim = storage.ClaimFirstBoot // host.AddJournal formats; a store already there is refused
	}
	if err := rt.AddJournal(ctx, hs); err != nil {
		m.log.Error("joining a journal failed", "journal", id, "err", err)
		return &pb.JoinJournalReply{Refusal: "storage: " + err.Error()}, nil
	}
	if err := m.updateRecord(func(r *machinerecord.Record) {
		for i := range r.Joined {
			if r.Joined[i].ID() == id {
				r.Joined[i].Formatted = true
			}
		}
	}); err != nil {
		return &pb.JoinJournalReply{Refusal: "storage"}, nil
	}
	m.log.Info("joined a journal", "journal", id, "members", req.GetMembers())
	return &pb.JoinJournalReply{Joined: true}, nil
}

// updateRecord rewrites the machine record with fn applied.
func (m *Machine) updateRecord(fn func(*machinerecord.Record)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	next := m.rec
	next.Admitted = slices.Clone(next.Admitted)
	next.Joined = slices.Clone(next.Joined)
	next.Retired = slices.Clone(next.Retired)
	fn(&next)
	next.Incarnation++
	if err := machinerecord.Store(m.fs, m.cfg.DataDir, next); err != nil {
		return err
	}
	m.rec = next
	return nil
}

// retired records an honoured retire: the host already deleted the
// journal's store, so a later start must not look for it (it would be
// refused as amnesia).
func (m *Machine) retired(id journal.ID) {
	if rt := m.Runtime(); rt != nil {
		rt.Forget(id)
	}
	err := m.updateRecord(func(r *machinerecord.Record) {
		r.Retired = append(r.Retired, machinerecord.JournalID{Tenant: id.Tenant, Journal: id.Journal})
		r.Joined = slices.DeleteFunc(r.Joined, func(x machinerecord.JoinedJournal) bool { return x.ID() == id })
	})
	if err != nil {
		m.log.Error("recording a retirement failed: the next start refuses the journal as amnesia", "journal", id, "err", err)
	}
}

// controlJournal reports whether id is one of the cell's control-plane
// journals (the registry, the election journal).
func controlJournal(rec machinerecord.Record, id journal.ID) bool {
	return rec.Control != nil && (id == rec.Control.ID() || id == rec.Election.ID())
}
