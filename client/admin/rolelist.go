package admin

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
)

// roleList identifies the machines at addrs for a list of role machines
// (SetReplicas, SetProxies): each must answer Identify with role and be
// none of the machines other reports (an acceptor of the cell, say),
// else notRole; a machine of another cell is ErrUnknownMachine, an
// address twice ErrInvalidConfiguration. It returns the list sorted by
// node id, the named machines already of the cell, and the idle ones that
// must join it.
func (a *Client) roleList(ctx context.Context, sv survey, addrs []string, role string, notRole error,
	other func(id NodeID) bool) (list []*pb.Member, named, newcomers map[NodeID]string, err error) {
	named, newcomers = map[NodeID]string{}, map[NodeID]string{}
	for _, addr := range addrs {
		addr = strings.TrimSpace(addr)
		r, err := a.identify(ctx, addr)
		if err != nil {
			return nil, nil, nil, err
		}
		id := NodeID(r.GetNodeId())
		switch {
		case other(id) || r.GetRole() != role:
			return nil, nil, nil, fmt.Errorf("%w: %s is machine %s, a %s", notRole, addr, id, cmp.Or(r.GetRole(), "node"))
		case r.GetCellId() != 0 && r.GetCellId() != sv.cellID:
			return nil, nil, nil, fmt.Errorf("%w: %s is machine %s of cell %016x, not of cell %016x", ErrUnknownMachine, addr, id, r.GetCellId(), sv.cellID)
		case slices.ContainsFunc(list, func(m *pb.Member) bool { return m.GetNodeId() == uint64(id) }):
			return nil, nil, nil, fmt.Errorf("%w: machine %s named twice", ErrInvalidConfiguration, id)
		case r.GetCellId() == 0:
			newcomers[id] = addr
		default:
			named[id] = addr
		}
		list = append(list, &pb.Member{NodeId: uint64(id), Addr: addr})
	}
	slices.SortFunc(list, func(a, b *pb.Member) int { return cmp.Compare(a.GetNodeId(), b.GetNodeId()) })
	return list, named, newcomers, nil
}
