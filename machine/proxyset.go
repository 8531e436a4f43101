package machine

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/grpc"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage/machinerecord"
)

// Changing the proxy-leader list of a running cell (parosctl proxies set),
// as replicaset.go changes the replica list. The list is no part of any
// quorum (paxos.Node.SetProxies): a proxy decides nothing, it carries a
// leader's Phase 2 and tallies the answers, and a leader takes back at
// once the rounds of a proxy that left the list. So each machine may learn
// a new list on its own, with no decree. Each machine of the cell is told
// the whole list (SetProxies), not a change: telling it twice is a no-op,
// and an interrupted change is finished by sending the list again.
//
// On an acceptor or replica machine the steps are, in order:
//
//  1. refuse a list naming an acceptor machine of the cell (a founder, an
//     admitted machine, a member of a journal it joined): "member"; or a
//     replica machine: "replica";
//  2. make every listed proxy a peer (a leader dials it to delegate);
//  3. hand the list to the host (host.SetProxies), which refuses it,
//     changing nothing, if a listed id is an acceptor of a configuration
//     in force: "member";
//  4. record the list in the machine record, so later boots serve with it.
//
// On a proxy machine the steps are 1, then making every machine of the
// cell a peer (it fans out to the acceptors and answers the leaders), then
// 4. A proxy machine left off the list records that it was removed
// (machinerecord.Record.ProxyRemoved): it keeps running and boots as a
// proxy, but no leader delegates to it any more. A list naming it again
// makes it a delegated proxy once more.
//
// A crash between 3 and 4 boots with the old list: the operator's command
// run again converges.

// SetProxies replaces the cell's proxy list on this machine (see above).
func (s *Service) SetProxies(ctx context.Context, req *pb.SetProxiesRequest) (*pb.SetProxiesReply, error) {
	m := s.M
	if len(req.GetProxies()) > paxos.ProxiesMax {
		return &pb.SetProxiesReply{Refusal: "malformed"}, nil
	}
	list, ok := replicaList(req.GetProxies()) // the same form: sorted, distinct, nonzero, bounded
	if !ok {
		return &pb.SetProxiesReply{Refusal: "malformed"}, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.rec.CellID == 0:
		return &pb.SetProxiesReply{Refusal: "no_cell"}, nil
	case req.GetCellId() != m.rec.CellID:
		return &pb.SetProxiesReply{Refusal: "other_cell"}, nil
	}
	for _, p := range list {
		if acceptorMachine(m.rec, p.NodeID) {
			return &pb.SetProxiesReply{Refusal: fmt.Sprintf("member: %016x is an acceptor machine of the cell", p.NodeID)}, nil
		}
		if replicaMachine(m.rec, p.NodeID) {
			return &pb.SetProxiesReply{Refusal: fmt.Sprintf("replica: %016x is a replica machine of the cell", p.NodeID)}, nil
		}
	}
	next := m.rec
	next.Proxies = list
	proxy := m.rec.Proxy()
	if proxy {
		next.ProxyRemoved = !slices.ContainsFunc(list, func(x machinerecord.Member) bool { return x.NodeID == m.rec.NodeID })
	}
	if err := next.Validate(); err != nil {
		return &pb.SetProxiesReply{Refusal: "malformed: " + err.Error()}, nil
	}
	peers := list
	if proxy {
		peers = cellMachines(next)
	}
	refusal, err := m.setRoleList(ctx, next, peers, func() error { return m.rt.SetProxies(ctx, proxyIDs(next)) },
		!sameProxies(m.rec, next), "proxy list set", "proxies", len(list), "removed_self", next.ProxyRemoved)
	if err != nil || refusal != "" {
		return &pb.SetProxiesReply{Refusal: refusal}, err
	}
	return &pb.SetProxiesReply{Set: true}, nil
}

// replicaMachine reports whether node id is a replica machine of r's cell
// as r knows it: listed, or r's own machine, removed from the list.
func replicaMachine(r machinerecord.Record, id uint64) bool {
	return slices.ContainsFunc(r.Replicas, func(x machinerecord.Member) bool { return x.NodeID == id }) ||
		id == r.NodeID && r.Replica()
}

// proxyMachine reports whether node id is a proxy machine of r's cell as
// r knows it: listed, or r's own machine, removed from the list.
func proxyMachine(r machinerecord.Record, id uint64) bool {
	return slices.ContainsFunc(r.Proxies, func(x machinerecord.Member) bool { return x.NodeID == id }) ||
		id == r.NodeID && r.Proxy()
}

// sameProxies reports whether a and b keep the same proxy list and removal
// flag.
func sameProxies(a, b machinerecord.Record) bool {
	return slices.Equal(a.Proxies, b.Proxies) && a.ProxyRemoved == b.ProxyRemoved
}

func (l localClient) SetProxies(ctx context.Context, in *pb.SetProxiesRequest, _ ...grpc.CallOption) (*pb.SetProxiesReply, error) {
	return l.s.SetProxies(ctx, in)
}
