package admin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/grpc"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
)

// Changing a running cell's replica machines (parosctl replicas set). The
// replica list is no part of any quorum: each machine of the cell may learn
// a new one on its own, so SetReplicas tells every machine the whole list,
// and a call interrupted anywhere is finished by calling it again.

// replicasMax bounds the replica list (the cell's bound, paxos.ReplicasMax,
// which the machines check too).
const replicasMax = 16

// SetReplicas makes the machines at addrs the cell's replica machines, and
// only them: each address is a replica machine of the cell, or an idle
// `paros serve --role replica` on an empty data dir (same CA as the cell),
// which joins the cell. An empty list removes every replica. It needs a
// token with admin over every journal.
//
// The steps, each idempotent:
//
//  1. The cell is surveyed (Admin.Inspect on every machine it lists) and
//     each address identified (Machine.Identify): a node machine or an
//     acceptor machine of the cell is refused (ErrNotReplica), a machine of
//     another cell too (ErrUnknownMachine).
//  2. Every machine of the cell, the replicas leaving included, records
//     the new list and serves its journals with it (Machine.SetReplicas):
//     leaders push to the listed replicas, acceptors answer only them. A
//     replica leaving that does not answer is skipped: the others no longer
//     answer it anyway.
//  3. Each idle machine named joins the cell as a replica
//     (Machine.JoinCell): it formats a store for every journal of the plan
//     and serves them, catching up by itself.
//
// A replica removed keeps its stores and still runs, but its reads go
// unserved (client.ErrUnavailable) once the acceptors learnt the list.
//
// Errors: ErrNotReplica, ErrUnknownMachine, ErrInvalidConfiguration (an
// address twice, too many), client.ErrDenied, client.ErrNoServer (a
// machine of the cell or a named one did not answer: call SetReplicas
// again).
func (a *Client) SetReplicas(ctx context.Context, addrs []string) error {
	if len(addrs) > replicasMax {
		return fmt.Errorf("%w: %d replicas, at most %d", ErrInvalidConfiguration, len(addrs), replicasMax)
	}
	sv := a.look(ctx, journal.ID{})
	if err := sv.surveyed(); err != nil {
		return err
	}
	list, named, newcomers, err := a.roleList(ctx, sv, addrs, roleReplica, ErrNotReplica, func(id NodeID) bool {
		_, acceptor := sv.machines[id]
		return acceptor
	})
	if err != nil {
		return err
	}
	if err := a.tellReplicas(ctx, sv, list, named); err != nil {
		return err
	}
	if len(newcomers) == 0 {
		return nil
	}
	return a.joinReplicas(ctx, sv, list, newcomers)
}

// tellReplicas sends list to every machine of the cell: those the survey
// lists or that answered it as machines of the cell, and the named
// replicas already of the cell. A replica leaving that does not answer is
// skipped.
func (a *Client) tellReplicas(ctx context.Context, sv survey, list []*pb.Member, named map[NodeID]string) error {
	targets := map[NodeID]string{}
	for _, known := range []map[NodeID]string{sv.machines, sv.replicas, named} {
		for node, addr := range known {
			targets[node] = addr
		}
	}
	for node, st := range sv.answers {
		if st.CellID == sv.cellID {
			targets[node] = st.Addr
		}
	}
	listed := func(node NodeID) bool {
		return slices.ContainsFunc(list, func(m *pb.Member) bool { return m.GetNodeId() == uint64(node) })
	}
	for _, node := range slices.Sorted(maps.Keys(targets)) {
		addr := targets[node]
		_, wasReplica := sv.replicas[node]
		refusal, err := a.callMachine(ctx, addr, "set replicas", func(ctx context.Context, m pb.MachineClient, o ...grpc.CallOption) (string, error) {
			r, err := m.SetReplicas(ctx, &pb.SetReplicasRequest{CellId: sv.cellID, Replicas: list}, o...)
			return r.GetRefusal(), err
		})
		switch {
		case err != nil && wasReplica && !listed(node) && !errors.Is(err, client.ErrDenied):
			continue // a replica leaving, unreachable: nothing answers it any more
		case err != nil:
			return err
		case strings.HasPrefix(refusal, "member"):
			return fmt.Errorf("%w: %s (machine %s) refused the list: %s", ErrNotReplica, addr, node, refusal)
		case refusal != "":
			return fmt.Errorf("paros/admin: %s (machine %s) refused the replica list: %s", addr, node, refusal)
		}
	}
	return nil
}

// joinReplicas makes each newcomer a replica machine of the cell
// (JoinCell) with the plan a machine of the cell reports, naming list as
// its replicas, and every machine admitted after formation.
func (a *Client) joinReplicas(ctx context.Context, sv survey, list []*pb.Member, newcomers map[NodeID]string) error {
	plan, admitted, err := a.cellPlan(ctx, sv, newcomers)
	if err != nil {
		return err
	}
	plan.Replicas = list
	for node, addr := range newcomers {
		if err := a.joinCell(ctx, node, addr, plan, admitted, " as a replica"); err != nil {
			return err
		}
	}
	return nil
}
