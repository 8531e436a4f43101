package admin

import (
	"context"
	"fmt"

	"google.golang.org/grpc"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
)

// The control plane's machine pool: the machines new journals are placed
// on. A machine joins the cell and the pool at once (AddMachine), and
// leaves placement while it keeps its journals (DrainMachine).

// AddMachine admits the machine at addr (started on an empty data dir with
// a certificate of the cell's CA) to the cell and registers it in the pool,
// where new journals may be placed on it. failureDomain labels it for
// placement ("" for none). It returns the machine's node id. Adding a
// machine already in the pool updates its address and label.
//
// Errors: ErrUnknownMachine (a replica or proxy machine, or a machine of
// another cell), client.ErrNoControlPlane, client.ErrDenied,
// client.ErrNoServer, client.ErrAmbiguous.
func (a *Client) AddMachine(ctx context.Context, addr, failureDomain string) (NodeID, error) {
	reg, err := a.Registry(ctx)
	if err != nil {
		return 0, err
	}
	sv := a.look(ctx, reg.Control)
	r, err := a.identify(ctx, addr)
	if err != nil {
		return 0, err
	}
	node := NodeID(r.GetNodeId())
	switch {
	case r.GetRole() == roleReplica || r.GetRole() == roleProxy:
		return 0, fmt.Errorf("%w: %s is a %s machine, never an acceptor", ErrUnknownMachine, addr, r.GetRole())
	case r.GetCellId() != 0 && r.GetCellId() != sv.cellID:
		return 0, fmt.Errorf("%w: %s is machine %s of cell %016x, not of cell %016x", ErrUnknownMachine, addr, node, r.GetCellId(), sv.cellID)
	}
	if _, known := sv.machines[node]; !known || r.GetCellId() == 0 {
		if err := a.admit(ctx, sv, map[NodeID]string{node: addr}); err != nil {
			return 0, err
		}
	}
	req := &pb.RegisterMachineRequest{NodeId: uint64(node), Addr: addr, FailureDomain: failureDomain}
	_, err = a.change(ctx, "register machine "+addr, func(ctx context.Context, cc pb.ControlClient, o ...grpc.CallOption) (*pb.ControlReply, error) {
		return cc.RegisterMachine(ctx, req, o...)
	})
	return node, err
}

// DrainMachine takes machine node out of placement: it keeps its journals
// and gets no new one (ErrUnknownMachine when it is not in the pool).
func (a *Client) DrainMachine(ctx context.Context, node NodeID) error {
	req := &pb.DrainMachineRequest{NodeId: uint64(node)}
	_, err := a.change(ctx, fmt.Sprintf("drain machine %s", node), func(ctx context.Context, cc pb.ControlClient, o ...grpc.CallOption) (*pb.ControlReply, error) {
		return cc.DrainMachine(ctx, req, o...)
	})
	return err
}
