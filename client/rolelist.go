package client

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
func (c *Client) roleList(ctx context.Context, sv survey, addrs []string, role string, notRole error,
	other func(id uint64) bool) (list []*pb.Member, named, newcomers map[uint64]string, err error) {
	named, newcomers = map[uint64]string{}, map[uint64]string{}
	for _, a := range addrs {
		a = strings.TrimSpace(a)
		r, err := c.identify(ctx, a)
		if err != nil {
			return nil, nil, nil, err
		}
		id := r.GetNodeId()
		switch {
		case other(id) || r.GetRole() != role:
			return nil, nil, nil, fmt.Errorf("%w: %s is machine %016x, a %s", notRole, a, id, cmp.Or(r.GetRole(), "node"))
		case r.GetCellId() != 0 && r.GetCellId() != sv.cellID:
			return nil, nil, nil, fmt.Errorf("%w: %s is machine %016x of cell %016x, not of cell %016x", ErrUnknownMachine, a, id, r.GetCellId(), sv.cellID)
		case slices.ContainsFunc(list, func(m *pb.Member) bool { return m.GetNodeId() == id }):
			return nil, nil, nil, fmt.Errorf("%w: machine %016x named twice", ErrInvalidConfiguration, id)
		case r.GetCellId() == 0:
			newcomers[id] = a
		default:
			named[id] = a
		}
		list = append(list, &pb.Member{NodeId: id, Addr: a})
	}
	slices.SortFunc(list, func(a, b *pb.Member) int { return cmp.Compare(a.GetNodeId(), b.GetNodeId()) })
	return list, named, newcomers, nil
}
