package machine

import (
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/server"
	"github.com/parosdb/paros/storage/machinerecord"
)

// Register puts every service of the machine on a gRPC server: Journal,
// Peer and Admin (which answer once the cell formed), Machine, and
// Control (the control plane, on a cell formed with one).
func (m *Machine) Register(gs *grpc.Server) {
	pb.RegisterJournalServer(gs, &server.Journal{B: m})
	pb.RegisterPeerServer(gs, &server.Peer{B: m, RoleOf: m.peerRole})
	pb.RegisterAdminServer(gs, &server.Admin{B: m, Info: m.adminInfo})
	pb.RegisterMachineServer(gs, &Service{M: m})
	pb.RegisterControlServer(gs, &ControlService{M: m})
}

// peerRole is what node is to the cell by the machine record: a founding
// or admitted member is an acceptor, a listed replica or proxy is that,
// anything else (and everything before the cell forms: no Peer stream is
// accepted until then) is no machine of the cell. A node on two lists is
// taken for the first of them, the one whose messages the others include.
func (m *Machine) peerRole(node uint64) paxos.Role {
	r := m.Record()
	has := func(ms []machinerecord.Member) bool {
		return slices.ContainsFunc(ms, func(x machinerecord.Member) bool { return x.NodeID == node })
	}
	switch {
	case node == 0:
		return paxos.RoleNone
	case has(r.Members) || has(r.Admitted):
		return paxos.RoleAcceptor
	case has(r.Proxies):
		return paxos.RoleProxy
	case has(r.Replicas):
		return paxos.RoleReplica
	}
	return paxos.RoleNone
}

// ServerOptions are the options the machine's gRPC server must be built
// with (server.ServerOptions over its credentials): TLS and the checks of
// tokens and peer certificates, or plaintext in insecure mode.
func (m *Machine) ServerOptions() []grpc.ServerOption {
	return server.ServerOptions(server.Security{Node: m.cfg.TLS, ControlPeer: m.ControlPeer})
}

// peerCredentials is how the machine dials another machine: mutual TLS
// requiring the peer's certificate to name node expect (0: any node of
// this cell), or plaintext in insecure mode.
func (m *Machine) peerCredentials(expect uint64) credentials.TransportCredentials {
	if m.cfg.TLS == nil {
		return insecure.NewCredentials()
	}
	return credentials.NewTLS(m.cfg.TLS.PeerConfig(expect))
}

func (m *Machine) adminInfo() server.AdminInfo {
	r := m.Record()
	info := server.AdminInfo{NodeID: r.NodeID, CellID: r.CellID, Role: m.cfg.Role.String()}
	if rt := m.Runtime(); rt != nil {
		info.Journals = rt.Journals()
	}
	for _, x := range append(slices.Clone(r.Members), r.Admitted...) {
		info.Machines = append(info.Machines, server.CellMachine{NodeID: x.NodeID, Addr: x.Addr})
	}
	for _, x := range r.Replicas {
		info.Machines = append(info.Machines, server.CellMachine{NodeID: x.NodeID, Addr: x.Addr, Role: roleReplicaName})
	}
	for _, x := range r.Proxies {
		info.Machines = append(info.Machines, server.CellMachine{NodeID: x.NodeID, Addr: x.Addr, Role: roleProxyName})
	}
	if rt := m.Runtime(); rt != nil {
		info.Spec = rt.Spec
	}
	return info
}

var _ = journal.ID{}
var _ host.Call
