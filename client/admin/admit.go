package admin

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/internal/link"
)

// Admitting machines to the cell: the first step of Reconfigure,
// SetMatchmakers and AddMachine for a member named by the address of an
// idle machine, and the last of SetReplicas and SetProxies for a replica
// or proxy that is not yet of the cell.

// admit makes the newcomers machines of the cell: every machine of the
// cell that answered the survey records them (Admit), then each joins
// (JoinCell) with the plan a machine of the cell reports.
func (a *Client) admit(ctx context.Context, sv survey, newcomers map[NodeID]string) error {
	plan, admitted, err := a.cellPlan(ctx, sv, newcomers)
	if err != nil {
		return err
	}
	for node, addr := range newcomers {
		if _, listed := sv.machines[node]; !listed {
			admitted = append(admitted, &pb.Member{NodeId: uint64(node), Addr: addr})
		}
	}
	for node, addr := range newcomers {
		for _, st := range sv.answers {
			if _, isNew := newcomers[st.NodeID]; isNew || st.CellID == 0 {
				continue
			}
			r, err := a.callMachine(ctx, st.Addr, "admit", func(ctx context.Context, m pb.MachineClient, o ...grpc.CallOption) (refusal string, err error) {
				r, err := m.Admit(ctx, &pb.AdmitRequest{CellId: sv.cellID, Member: &pb.Member{NodeId: uint64(node), Addr: addr}}, o...)
				return r.GetRefusal(), err
			})
			switch {
			case err != nil:
				return err
			case strings.HasPrefix(r, "unknown_machine"):
				return fmt.Errorf("%w: %s refused to admit machine %s (%s): %s", ErrUnknownMachine, st.Addr, node, addr, r)
			case strings.HasPrefix(r, "machine_unreachable"):
				return fmt.Errorf("%w: %s could not reach machine %s (%s) to admit it: %s", client.ErrNoServer, st.Addr, node, addr, r)
			case r != "":
				return fmt.Errorf("paros/admin: %s refused to admit machine %s (%s): %s", st.Addr, node, addr, r)
			}
		}
		if err := a.joinCell(ctx, node, addr, plan, admitted, ""); err != nil {
			return err
		}
	}
	return nil
}

// cellPlan asks a machine of the survey's cell (never a newcomer) for the
// cell's plan, and lists the cell's machines beyond its founders (those a
// joining machine must know as admitted).
func (a *Client) cellPlan(ctx context.Context, sv survey, newcomers map[NodeID]string) (*pb.CellPlan, []*pb.Member, error) {
	var plan *pb.CellPlan
	for node, st := range sv.answers {
		if _, isNew := newcomers[node]; isNew || st.CellID == 0 || st.CellID != sv.cellID {
			continue
		}
		cc, err := a.l.Conn(st.Addr)
		if err != nil {
			return nil, nil, err
		}
		actx, cancel := context.WithTimeout(ctx, callTimeout)
		var p peer.Peer
		r, err := pb.NewMachineClient(cc).Identify(actx, &pb.IdentifyRequest{Plan: true}, grpc.Peer(&p))
		cancel()
		if err == nil && r.GetPlan() != nil {
			plan = r.GetPlan()
			break
		}
		if err != nil && link.Denied(err) {
			return nil, nil, a.l.CallError(st.Addr, "identify", err, &p)
		}
	}
	if plan == nil {
		return nil, nil, fmt.Errorf("%w: no machine of the cell reported its plan", client.ErrNoServer)
	}
	founders := map[uint64]bool{}
	for _, m := range plan.GetMembers() {
		founders[m.GetNodeId()] = true
	}
	var admitted []*pb.Member
	for node, addr := range sv.machines {
		if !founders[uint64(node)] {
			admitted = append(admitted, &pb.Member{NodeId: uint64(node), Addr: addr})
		}
	}
	return plan, admitted, nil
}

// joinCell asks the idle machine node at addr to join the cell of plan
// (as a replica when what says so, for the error's words).
func (a *Client) joinCell(ctx context.Context, node NodeID, addr string, plan *pb.CellPlan, admitted []*pb.Member, what string) error {
	r, err := a.callMachine(ctx, addr, "join cell", func(ctx context.Context, m pb.MachineClient, o ...grpc.CallOption) (string, error) {
		r, err := m.JoinCell(ctx, &pb.JoinCellRequest{Plan: plan, Admitted: admitted}, o...)
		return r.GetRefusal(), err
	})
	if err != nil {
		return err
	}
	if r != "" {
		return fmt.Errorf("paros/admin: machine %s (%s) refused to join cell %016x%s: %s", node, addr, plan.GetCellId(), what, r)
	}
	return nil
}
