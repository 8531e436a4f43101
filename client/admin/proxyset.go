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

// Changing a running cell's proxy leaders (parosctl proxies set), as
// replicaset.go changes its replicas. The proxy list is no part of any
// quorum: each machine of the cell may learn a new one on its own (a
// leader takes back the rounds of a proxy that left it), so SetProxies
// tells every machine the whole list, and a call interrupted anywhere is
// finished by calling it again.

// proxiesMax bounds the proxy list (the cell's bound, paxos.ProxiesMax,
// which the machines check too).
const proxiesMax = 16

// SetProxies makes the machines at addrs the cell's proxy leaders, and
// only them: each address is a proxy machine of the cell, or an idle
// `paros serve --role proxy` on an empty data dir (same CA as the cell),
// which joins the cell. An empty list removes every proxy: the leaders
// run Phase 2 themselves. It needs a token with admin over every journal.
//
// The steps, each idempotent:
//
//  1. The cell is surveyed (Admin.Inspect on every machine it lists) and
//     each address identified (Machine.Identify): a node machine, an
//     acceptor machine of the cell or a replica machine is refused
//     (ErrNotProxy), a machine of another cell too (ErrUnknownMachine).
//  2. Each idle machine named joins the cell as a proxy (Machine.JoinCell)
//     with the new list, before any leader delegates to it: it makes
//     every machine of the cell a peer and serves.
//  3. Every machine of the cell, the proxies leaving included, records
//     the new list and serves its journals with it (Machine.SetProxies):
//     leaders delegate to the listed proxies only, and take back at once
//     the rounds of a proxy that left the list. A proxy leaving that does
//     not answer is skipped: no leader delegates to it anyway.
//
// A proxy removed keeps running, but no leader delegates to it any more.
//
// Errors: ErrNotProxy, ErrUnknownMachine, ErrInvalidConfiguration (an
// address twice, too many), client.ErrDenied, client.ErrNoServer (a
// machine of the cell or a named one did not answer: call SetProxies
// again).
func (a *Client) SetProxies(ctx context.Context, addrs []string) error {
	if len(addrs) > proxiesMax {
		return fmt.Errorf("%w: %d proxies, at most %d", ErrInvalidConfiguration, len(addrs), proxiesMax)
	}
	sv := a.look(ctx, journal.ID{})
	if err := sv.surveyed(); err != nil {
		return err
	}
	list, named, newcomers, err := a.roleList(ctx, sv, addrs, roleProxy, ErrNotProxy, func(id NodeID) bool {
		_, acceptor := sv.machines[id]
		_, replica := sv.replicas[id]
		return acceptor || replica
	})
	if err != nil {
		return err
	}
	if len(newcomers) > 0 {
		if err := a.joinProxies(ctx, sv, list, newcomers); err != nil {
			return err
		}
	}
	return a.tellProxies(ctx, sv, list, named, newcomers)
}

// joinProxies makes each newcomer a proxy machine of the cell (JoinCell)
// with the plan a machine of the cell reports, naming list as its
// proxies, and every machine admitted after formation.
func (a *Client) joinProxies(ctx context.Context, sv survey, list []*pb.Member, newcomers map[NodeID]string) error {
	plan, admitted, err := a.cellPlan(ctx, sv, newcomers)
	if err != nil {
		return err
	}
	plan.Proxies = list
	for node, addr := range newcomers {
		if err := a.joinCell(ctx, node, addr, plan, admitted, " as a proxy"); err != nil {
			return err
		}
	}
	return nil
}

// tellProxies sends list to every machine of the cell: those the survey
// lists or that answered it as machines of the cell, and the named proxies
// (already of the cell, or just joined). A proxy leaving that does not
// answer is skipped.
func (a *Client) tellProxies(ctx context.Context, sv survey, list []*pb.Member, named, joined map[NodeID]string) error {
	targets := map[NodeID]string{}
	for _, known := range []map[NodeID]string{sv.machines, sv.replicas, sv.proxies, named, joined} {
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
		_, wasProxy := sv.proxies[node]
		refusal, err := a.callMachine(ctx, addr, "set proxies", func(ctx context.Context, m pb.MachineClient, o ...grpc.CallOption) (string, error) {
			r, err := m.SetProxies(ctx, &pb.SetProxiesRequest{CellId: sv.cellID, Proxies: list}, o...)
			return r.GetRefusal(), err
		})
		switch {
		case err != nil && wasProxy && !listed(node) && !errors.Is(err, client.ErrDenied):
			continue // a proxy leaving, unreachable: no leader delegates to it any more
		case err != nil:
			return err
		case strings.HasPrefix(refusal, "member"), strings.HasPrefix(refusal, "replica"):
			return fmt.Errorf("%w: %s (machine %s) refused the list: %s", ErrNotProxy, addr, node, refusal)
		case refusal != "":
			return fmt.Errorf("paros/admin: %s (machine %s) refused the proxy list: %s", addr, node, refusal)
		}
	}
	return nil
}
