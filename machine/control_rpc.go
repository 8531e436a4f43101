package machine

import (
	"context"
	"encoding/binary"
	"slices"
	"time"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/registry"
	"github.com/parosdb/paros/security"
	"github.com/parosdb/paros/server"
	"github.com/parosdb/paros/storage/machinerecord"
	"github.com/parosdb/paros/wire"
	"github.com/parosdb/paros/wire/registrypb"
)

// ControlService answers the Control service: changes go to the elected
// coordinator's desk (another machine answers not_coordinator, naming the
// coordinator's address for the client to retry there); the registry is
// answered by any machine from its own fold.
type ControlService struct {
	pb.UnimplementedControlServer
	M *Machine
}

// Limits of a control request.
const (
	// requestIDBytes is the size of a request id: 16 random bytes.
	requestIDBytes = 16
	// deskWaitMax bounds how long a change waits for the desk's answer;
	// past it the answer is unavailable and the outcome unknown (a retry
	// with the same request id reads it back).
	deskWaitMax = 30 * time.Second
	// placementMembersMax bounds the acceptors a journal may ask for.
	placementMembersMax = 9
)

func (m *Machine) controlPlane() *controlPlane {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cp
}

// submit hands a change to this machine's desk and waits for its answer.
func (s *ControlService) submit(ctx context.Context, req registry.Request) (*pb.ControlReply, error) {
	cp := s.M.controlPlane()
	if cp == nil {
		return &pb.ControlReply{Refusal: "no_control_plane", Detail: "this cell was formed without a control plane, or this machine takes no part in it"}, nil
	}
	if len(req.ID) != requestIDBytes {
		return &pb.ControlReply{Refusal: "bad_request", Detail: "a request id is 16 bytes"}, nil
	}
	_, d := cp.snapshot()
	if d == nil {
		return &pb.ControlReply{Refusal: "not_coordinator", Coordinator: cp.coordinatorAddr()}, nil
	}
	r := &deskReq{req: req, reply: make(chan *pb.ControlReply, 1)}
	ctx, cancel := context.WithTimeout(ctx, deskWaitMax)
	defer cancel()
	select {
	case d.reqs <- r:
	case <-d.done:
		return &pb.ControlReply{Refusal: "not_coordinator", Coordinator: cp.coordinatorAddr()}, nil
	case <-ctx.Done():
		return &pb.ControlReply{Refusal: "unavailable", Detail: "the coordinator's desk is busy"}, nil
	}
	select {
	case rep := <-r.reply:
		return rep, nil
	case <-ctx.Done():
		return &pb.ControlReply{Refusal: "unavailable", Detail: "no answer in time; retry with the same request id"}, nil
	}
}

// refusalDenied is the desk's word for a caller its guard turned away; it
// never leaves the machine: the handler answers PermissionDenied instead.
const refusalDenied = "denied"

// tenantGuard is the rule for a change to the journals of tenant (by name):
// the caller holds admin over that tenant. It is judged by the desk, not
// here: this machine's fold may not yet hold a tenant just created (a
// tenant admin was refused its first journal), or may hold a tenant of that
// name deleted and made again under another id. A tenant the desk does not
// know refuses any caller not allowed everywhere, so a tenant-scoped token
// cannot probe which tenants exist. An unsecured cell has no guard.
func tenantGuard(ctx context.Context, tenant string) func(*registry.State) bool {
	c, ok := server.CallerOf(ctx)
	if !ok || !c.Secured {
		return nil
	}
	return func(st *registry.State) bool {
		t, found := st.Tenant(tenantOrDefault(tenant))
		if !found {
			return c.AdminAll
		}
		return c.AllowsTenant(security.OpAdmin, t.ID)
	}
}

// denied turns the desk's refusalDenied into the PermissionDenied a guard
// at the door would have answered.
func denied(ctx context.Context, method, tenant string, rep *pb.ControlReply, err error) (*pb.ControlReply, error) {
	if err != nil || rep.GetRefusal() != refusalDenied {
		return rep, err
	}
	c, _ := server.CallerOf(ctx)
	return nil, c.Denied(method, "no admin over tenant "+tenantOrDefault(tenant))
}

func tenantOrDefault(t string) string {
	if t == "" {
		return DefaultTenant
	}
	return t
}

// CreateTenant names a tenant.
func (s *ControlService) CreateTenant(ctx context.Context, req *pb.CreateTenantRequest) (*pb.ControlReply, error) {
	if err := registry.ValidTenantName(req.GetName()); err != nil {
		return &pb.ControlReply{Refusal: registry.OutcomeBadName, Detail: err.Error()}, nil
	}
	return s.submit(ctx, registry.Request{ID: req.GetRequest(), Build: func(st *registry.State, _ registry.Pending) (registry.Entry, string, bool) {
		return registry.BuildTenant(st, req.GetRequest(), req.GetName(), randomID), "", true
	}})
}

// DeleteTenant removes a tenant that holds no journal.
func (s *ControlService) DeleteTenant(ctx context.Context, req *pb.DeleteTenantRequest) (*pb.ControlReply, error) {
	return s.submit(ctx, registry.Request{ID: req.GetRequest(), Build: func(*registry.State, registry.Pending) (registry.Entry, string, bool) {
		return registry.DeleteTenant(req.GetRequest(), req.GetName()), "", true
	}})
}

// CreateJournal names a journal of a tenant and places it: on the
// machines asked for, or on the least loaded up machines, spread over
// failure domains.
func (s *ControlService) CreateJournal(ctx context.Context, req *pb.CreateJournalRequest) (*pb.ControlReply, error) {
	if err := registry.ValidName(req.GetName()); err != nil {
		return &pb.ControlReply{Refusal: registry.OutcomeBadName, Detail: err.Error()}, nil
	}
	n := int(req.GetMembers())
	if n > placementMembersMax || len(req.GetMemberIds()) > placementMembersMax {
		return &pb.ControlReply{Refusal: registry.OutcomeBadPlacement, Detail: "at most 9 members"}, nil
	}
	c := registry.Creation{Request: req.GetRequest(), Tenant: tenantOrDefault(req.GetTenant()), Name: req.GetName(), Members: n,
		Placement: registrypb.PlacementFromPB(&pb.JournalPlacement{Members: req.GetMemberIds(), QuorumSystem: req.GetQuorumSystem(),
			Phase1Quorum: req.GetPhase1Quorum(), Phase2Quorum: req.GetPhase2Quorum(),
			Rows: req.GetRows(), Cols: req.GetCols(), WriterMode: req.GetWriterMode()})}
	rep, err := s.submit(ctx, registry.Request{ID: req.GetRequest(), Allowed: tenantGuard(ctx, req.GetTenant()),
		Build: func(st *registry.State, pending registry.Pending) (registry.Entry, string, bool) {
			return registry.BuildCreation(st, pending, c, randomID)
		}})
	return denied(ctx, pb.Control_CreateJournal_FullMethodName, req.GetTenant(), rep, err)
}

// DeleteJournal deletes a journal by name: decided at once, answered once
// the journal is fenced and tombstoned.
func (s *ControlService) DeleteJournal(ctx context.Context, req *pb.DeleteJournalRequest) (*pb.ControlReply, error) {
	rep, err := s.submit(ctx, registry.Request{ID: req.GetRequest(), Allowed: tenantGuard(ctx, req.GetTenant()),
		Build: func(*registry.State, registry.Pending) (registry.Entry, string, bool) {
			return registry.DeleteJournal(req.GetRequest(), tenantOrDefault(req.GetTenant()), req.GetName()), "", true
		}})
	return denied(ctx, pb.Control_DeleteJournal_FullMethodName, req.GetTenant(), rep, err)
}

// RegisterMachine adds an acceptor machine of the cell to the pool. The
// machine must already be one (admitted: parosctl cell add-machine admits
// it first).
func (s *ControlService) RegisterMachine(ctx context.Context, req *pb.RegisterMachineRequest) (*pb.ControlReply, error) {
	r := s.M.Record()
	known := slices.ContainsFunc(cellMachines(r), func(mb machinerecord.Member) bool {
		return mb.NodeID == req.GetNodeId() && mb.Addr == req.GetAddr()
	})
	if !known || s.M.peerRole(req.GetNodeId()) != paxos.RoleAcceptor {
		return &pb.ControlReply{Refusal: "unknown_machine", Detail: "admit the machine to the cell first"}, nil
	}
	return s.submit(ctx, registry.Request{ID: randomRequest(), Build: func(*registry.State, registry.Pending) (registry.Entry, string, bool) {
		return registry.RegisterMachine(req.GetNodeId(), req.GetAddr(), req.GetFailureDomain()), "", true
	}})
}

// DrainMachine takes a machine out of placement.
func (s *ControlService) DrainMachine(ctx context.Context, req *pb.DrainMachineRequest) (*pb.ControlReply, error) {
	return s.submit(ctx, registry.Request{ID: randomRequest(), Build: func(*registry.State, registry.Pending) (registry.Entry, string, bool) {
		return registry.DrainMachine(req.GetNodeId()), "", true
	}})
}

// Registry answers this machine's fold of the registry, filtered by the
// caller's scope.
func (s *ControlService) Registry(ctx context.Context, _ *pb.RegistryRequest) (*pb.RegistryReply, error) {
	cp := s.M.controlPlane()
	if cp == nil {
		return &pb.RegistryReply{Refusal: "no_control_plane"}, nil
	}
	if !cp.ready() {
		return &pb.RegistryReply{Refusal: "unavailable"}, nil
	}
	st, _ := cp.snapshot()
	c, gated := server.CallerOf(ctx)
	seesTenant := func(uint64) bool { return true }
	seesCell := true
	if gated && c.Secured {
		seesTenant, seesCell = c.SeesTenant, c.SeesCell()
	}
	full := registrypb.SnapshotToPB(st.Snapshot())
	out := &pb.RegistryState{}
	if seesCell {
		out.Machines = full.GetMachines()
	}
	for _, t := range full.GetTenants() {
		if seesTenant(t.GetTenantId()) {
			out.Tenants = append(out.Tenants, t)
		}
	}
	return &pb.RegistryReply{State: out, RegistryAt: uint64(st.At()), Coordinator: cp.coordinatorAddr(),
		ControlJournal: wire.JournalIDToPB(cp.control), ElectionJournal: wire.JournalIDToPB(cp.election)}, nil
}

// randomRequest is a fresh request id, for the changes the registry keeps
// no outcome of (a machine registered or drained: repeating one is
// harmless).
func randomRequest() []byte {
	b := make([]byte, requestIDBytes)
	binary.LittleEndian.PutUint64(b, randomID())
	binary.LittleEndian.PutUint64(b[8:], randomID())
	return b
}
