package machine

import (
	"context"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
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
