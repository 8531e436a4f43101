package machine

import (
	"context"
	"slices"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/machinerecord"
	"github.com/parosdb/paros/wire"
)

// Replacing a machine takes three machine calls before the reconfiguration
// itself (parosctl reconfigure makes them): every machine of the cell is
// told of the new one (Admit), the new one joins the cell (JoinCell), and
// it formats the journal's store as a joiner (JoinJournal). Each is
// idempotent, so an interrupted replacement is resumed by running it again;
// none changes any journal's configuration, so an interruption leaves the
// old configuration in force.

// Admit records a machine admitted to the cell and makes it a peer.
func (s *Service) Admit(ctx context.Context, req *pb.AdmitRequest) (*pb.AdmitReply, error) {
	m := s.M
	mb := req.GetMember()
	if mb.GetNodeId() == 0 || mb.GetAddr() == "" {
		return &pb.AdmitReply{Refusal: "malformed"}, nil
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

// JoinCell makes an idle machine a machine of an existing cell: it records
// the cell (not as a founder: it voted for no plan) and starts serving with
// no journal.
func (s *Service) JoinCell(_ context.Context, req *pb.JoinCellRequest) (*pb.JoinCellReply, error) {
	m := s.M
	m.mu.Lock()
	defer m.mu.Unlock()
	plan := req.GetPlan()
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
	case !slices.ContainsFunc(rec.Journals, func(j machinerecord.JournalID) bool { return j.ID() == id }):
		return &pb.JoinJournalReply{Refusal: "unknown_journal"}, nil
	case slices.ContainsFunc(rec.Retired, func(j machinerecord.JournalID) bool { return j.ID() == id }):
		return &pb.JoinJournalReply{Refusal: "retired"}, nil
	case !slices.Contains(req.GetMembers(), rec.NodeID):
		return &pb.JoinJournalReply{Refusal: "not_a_member"}, nil
	}
	if _, served := rt.Spec(id); served {
		return &pb.JoinJournalReply{Joined: true}, nil
	}
	jj := machinerecord.JoinedJournal{Tenant: id.Tenant, Journal: id.Journal, Members: slices.Sorted(slices.Values(req.GetMembers())),
		Kind: uint8(spec.Kind), Q1: spec.Q1, Q2: spec.Q2, Rows: spec.Rows, Cols: spec.Cols, Mode: uint8(journal.ModeSingle)}
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
