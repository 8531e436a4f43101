package machine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/grpc"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage/machinerecord"
)

// Changing the replica list of a running cell (parosctl replicas set). The
// list is no part of any quorum (paxos.Node.SetReplicas): a leader pushes
// chosen values to the listed replicas and acceptors answer their reads
// and catch-ups, so each machine may learn a new list on its own, with no
// decree. Each machine of the cell is told the whole list (SetReplicas),
// not a change, so telling it twice is a no-op and an interrupted change is
// finished by sending the list again.
//
// On one machine the steps are, in order:
//
//  1. refuse a list naming an acceptor machine of the cell (a founder, an
//     admitted machine, a member of a journal it joined): "member"; or a
//     proxy machine: "proxy";
//  2. make every listed replica a peer (it is dialled to push to it);
//  3. hand the list to the host (host.SetReplicas), which refuses it,
//     changing nothing, if a listed id is an acceptor of a configuration
//     in force: "member";
//  4. record the list in the machine record, so later boots serve with it.
//
// A crash between 3 and 4 boots with the old list: the operator's command
// run again converges. A replica machine left off the list records that it
// was removed (machinerecord.Record.ReplicaRemoved): it stays a replica
// machine with its stores, boots as one, and its reads go unserved, since
// no acceptor answers it any more. A list naming it again makes it a
// served replica once more; it catches up by itself.

// SetReplicas replaces the cell's replica list on this machine (see above).
func (s *Service) SetReplicas(ctx context.Context, req *pb.SetReplicasRequest) (*pb.SetReplicasReply, error) {
	m := s.M
	list, ok := replicaList(req.GetReplicas())
	if !ok {
		return &pb.SetReplicasReply{Refusal: "malformed"}, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.rec.CellID == 0:
		return &pb.SetReplicasReply{Refusal: "no_cell"}, nil
	case req.GetCellId() != m.rec.CellID:
		return &pb.SetReplicasReply{Refusal: "other_cell"}, nil
	}
	for _, r := range list {
		if acceptorMachine(m.rec, r.NodeID) {
			return &pb.SetReplicasReply{Refusal: fmt.Sprintf("member: %016x is an acceptor machine of the cell", r.NodeID)}, nil
		}
		if proxyMachine(m.rec, r.NodeID) {
			return &pb.SetReplicasReply{Refusal: fmt.Sprintf("proxy: %016x is a proxy machine of the cell", r.NodeID)}, nil
		}
	}
	next := m.rec
	next.Replicas = list
	if m.rec.Replica() {
		next.ReplicaRemoved = !slices.ContainsFunc(list, func(x machinerecord.Member) bool { return x.NodeID == m.rec.NodeID })
	}
	refusal, err := m.setRoleList(ctx, next, list, func() error { return m.rt.SetReplicas(ctx, replicaIDs(next)) },
		!sameReplicas(m.rec, next), "replica list set", "replicas", len(list), "removed_self", next.ReplicaRemoved)
	if err != nil || refusal != "" {
		return &pb.SetReplicasReply{Refusal: refusal}, err
	}
	return &pb.SetReplicasReply{Set: true}, nil
}

// setRoleList applies a list of role machines this machine was told
// (SetReplicas, SetProxies): it makes peers of peers, hands the list to
// the runtime (apply), and, when changed, records next with a new
// incarnation and logs msg with args. The refusal is "member: …" when the
// runtime refuses the list, "storage" when the record cannot be stored;
// the error is the context's. On a machine with no runtime yet only the
// record changes. The caller holds m.mu.
func (m *Machine) setRoleList(ctx context.Context, next machinerecord.Record, peers []machinerecord.Member, apply func() error,
	changed bool, msg string, args ...any) (string, error) {
	if m.rt != nil {
		for _, p := range peers {
			if err := m.rt.AddPeer(ctx, paxos.NodeID(p.NodeID), p.Addr); err != nil {
				return "", err
			}
		}
		if err := apply(); err != nil {
			if errors.Is(err, ctx.Err()) {
				return "", err
			}
			return "member: " + err.Error(), nil
		}
	}
	if changed {
		next.Incarnation++
		if err := machinerecord.Store(m.fs, m.cfg.DataDir, next); err != nil {
			return "storage", nil
		}
		m.rec = next
		m.log.Info(msg, args...)
	}
	return "", nil
}

// replicaList is a request's replica list as the record keeps it (sorted
// by node id), or false: a zero id, an empty or oversized address, an id
// twice, more than paxos.ReplicasMax.
func replicaList(ms []*pb.Member) ([]machinerecord.Member, bool) {
	if len(ms) > paxos.ReplicasMax {
		return nil, false
	}
	out := make([]machinerecord.Member, 0, len(ms))
	for _, mb := range ms {
		if mb.GetNodeId() == 0 || mb.GetAddr() == "" || len(mb.GetAddr()) > addrBytesMax {
			return nil, false
		}
		out = append(out, machinerecord.Member{NodeID: mb.GetNodeId(), Addr: mb.GetAddr()})
	}
	slices.SortFunc(out, func(a, b machinerecord.Member) int { return cmp.Compare(a.NodeID, b.NodeID) })
	for i := 1; i < len(out); i++ {
		if out[i-1].NodeID == out[i].NodeID {
			return nil, false
		}
	}
	return out, true
}

// addrBytesMax bounds an address of the list (the record's bound).
const addrBytesMax = 1 << 10

// acceptorMachine reports whether node id is an acceptor machine of r's
// cell as r knows it: a founder, an admitted machine, or a member of a
// journal r's machine joined.
func acceptorMachine(r machinerecord.Record, id uint64) bool {
	is := func(x machinerecord.Member) bool { return x.NodeID == id }
	return slices.ContainsFunc(r.Members, is) || slices.ContainsFunc(r.Admitted, is) ||
		slices.ContainsFunc(r.Joined, func(j machinerecord.JoinedJournal) bool { return slices.Contains(j.Members, id) })
}

// sameReplicas reports whether a and b keep the same replica list and
// removal flag.
func sameReplicas(a, b machinerecord.Record) bool {
	return slices.Equal(a.Replicas, b.Replicas) && a.ReplicaRemoved == b.ReplicaRemoved
}

func (l localClient) SetReplicas(ctx context.Context, in *pb.SetReplicasRequest, _ ...grpc.CallOption) (*pb.SetReplicasReply, error) {
	return l.s.SetReplicas(ctx, in)
}
