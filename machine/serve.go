package machine

import (
	"google.golang.org/grpc"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/server"
)

// Register puts every service of the machine on a gRPC server: Journal,
// Peer and Admin (which answer once the cell formed) and Machine.
func (m *Machine) Register(gs *grpc.Server) {
	pb.RegisterJournalServer(gs, &server.Journal{B: m})
	pb.RegisterPeerServer(gs, &server.Peer{B: m})
	pb.RegisterAdminServer(gs, &server.Admin{B: m, Info: m.adminInfo})
	pb.RegisterMachineServer(gs, &Service{M: m})
}

func (m *Machine) adminInfo() server.AdminInfo {
	r := m.Record()
	info := server.AdminInfo{NodeID: r.NodeID, CellID: r.CellID}
	for _, j := range r.Journals {
		info.Journals = append(info.Journals, j.ID())
	}
	if rt := m.Runtime(); rt != nil {
		info.Spec = rt.Spec
	}
	return info
}

var _ = journal.ID{}
var _ host.Call
