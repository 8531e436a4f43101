package machine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/machinerecord"
)

// The replica tier at the machine level. A replica machine is a machine
// started with Config.Role RoleReplica (paros serve --role replica): durable
// like a node (one Pebble store, the same boot scan, format markers and
// refusals), it serves every journal of the cell plan as a replica node
// (host.JournalSpec.Replica: it learns the chosen log, serves reads, never
// votes). The plan names the replicas by node id (machinerecord.Record's
// Replicas, CellPlan.replicas), the ids of their certificates as for every
// machine; every process of the cell gets the same list, so each journal's
// leader pushes to them and its acceptors answer their reads.
//
// How a replica enters the cell: it votes on nothing, so CellInit runs the
// decree over the members alone and, once the plan is chosen, asks each
// replica to join (JoinCell): the replica formats its stores, records the
// plan (the commit point, as a founder's vote) and serves. On a running
// cell the operator changes the list (replicaset.go): a new replica joins
// the same way, then every machine is told the new list (SetReplicas).

// Role is what a machine is started as.
type Role uint8

const (
	// RoleNode is an acceptor machine (the default): it votes on the cell
	// plan and serves its journals as a member.
	RoleNode Role = iota
	// RoleReplica is a replica machine: a learner of every journal.
	RoleReplica
	// RoleProxy is a proxy machine (proxy.go): a proxy leader of every
	// journal, with no store.
	RoleProxy
)

// Role names on the wire (IdentifyReply.role, InspectReply.machine_role)
// and on the command line (paros serve --role).
const (
	roleNodeName    = "node"
	roleReplicaName = "replica"
	roleProxyName   = "proxy"
)

func (r Role) String() string {
	switch r {
	case RoleReplica:
		return roleReplicaName
	case RoleProxy:
		return roleProxyName
	}
	return roleNodeName
}

// ParseRole parses a role name: "node", "replica" or "proxy".
func ParseRole(s string) (Role, error) {
	switch s {
	case roleNodeName:
		return RoleNode, nil
	case roleReplicaName:
		return RoleReplica, nil
	case roleProxyName:
		return RoleProxy, nil
	}
	return RoleNode, fmt.Errorf("paros/machine: role %q: want node, replica or proxy", s)
}

// ErrRoleMismatch: the machine record says the machine is a replica (or a
// proxy) of its cell and it was started as a node, or the other way round.
// Serving would make a learner vote, or an acceptor vanish from its
// quorums.
var ErrRoleMismatch = errors.New("paros/machine: the machine record names another role than the one the machine was started as")

// recordRole is the role the record gives its machine.
func recordRole(r machinerecord.Record) Role {
	switch {
	case r.Replica():
		return RoleReplica
	case r.Proxy():
		return RoleProxy
	}
	return RoleNode
}

// replicaIDs are the plan's replica machines' node ids, sorted.
func replicaIDs(r machinerecord.Record) []paxos.NodeID {
	out := make([]paxos.NodeID, len(r.Replicas))
	for i, m := range r.Replicas {
		out[i] = paxos.NodeID(m.NodeID)
	}
	slices.Sort(out)
	return out
}

// replicaSpecs is every journal a replica machine serves: each journal of
// the plan, as a replica node, over the founding members as the bootstrap
// acceptors (with matchmakers, the leader's beats tell it the configuration
// in force).
func replicaSpecs(r machinerecord.Record, claim storage.Claim) []host.JournalSpec {
	members := make([]paxos.NodeID, 0, len(r.Members))
	for _, mb := range r.Members {
		members = append(members, paxos.NodeID(mb.NodeID))
	}
	slices.Sort(members)
	var out []host.JournalSpec
	for _, j := range r.Journals {
		out = append(out, host.JournalSpec{ID: j.ID(), Members: members, Quorum: quorum.Spec{Kind: quorum.KindMajority},
			Mode: journal.ModeSingle, Claim: claim, Matchmakers: nodeIDs(r.Matchmakers),
			Replicas: replicaIDs(r), Replica: true, Proxies: proxyIDs(r)})
	}
	return out
}

// markerOf is the format marker the host checks spec's store against on
// node (host.JournalSpec's marker): formation writes exactly this one.
func markerOf(spec host.JournalSpec, node paxos.NodeID) storage.Marker {
	return storage.Marker{Journal: spec.ID, Node: node, Members: spec.Members, Quorum: spec.Quorum, Mode: spec.Mode,
		Matchmakers: uint32(len(spec.Matchmakers)), Joiner: spec.Joiner, Replica: spec.Replica}
}

// formatStores formats the store of every journal rec's machine serves
// under rec, or checks that a store already formatted carries exactly the
// marker it would get (a formation interrupted after formatting resumes).
// It returns a refusal ("" when every store is ready).
func (m *Machine) formatStores(rec machinerecord.Record) string {
	specs := (&Machine{rec: rec}).specs(storage.ClaimFirstBoot)
	if len(specs) == 0 {
		return "" // none served (a proxy has no store)
	}
	// One scan names the journals holding anything: only those (a
	// formation interrupted after formatting) are booted to check their
	// marker. A boot per journal cost about a millisecond each, so forming
	// 100,000 journals spent its whole deadline reading empty stores.
	held, err := m.db.Journals()
	if err != nil {
		return "storage"
	}
	var fresh []storage.Marker
	for _, spec := range specs {
		want := markerOf(spec, paxos.NodeID(rec.NodeID))
		if _, found := slices.BinarySearchFunc(held, spec.ID, journal.ID.Compare); !found {
			fresh = append(fresh, want)
			continue
		}
		bs, err := m.db.Journal(spec.ID).Boot()
		if err != nil {
			return "storage"
		}
		if bs.Marker == nil {
			fresh = append(fresh, want)
		} else if !bs.Marker.Equal(want) {
			return "storage"
		}
	}
	if len(fresh) == 0 {
		return "" // all formatted already
	}
	// One synced commit for every store still to format, however many.
	if err := m.db.FormatJournals(fresh); err != nil {
		return "storage"
	}
	return ""
}

// cellMachines is every machine of rec's cell: founders, admitted machines,
// replicas and proxies. Each may open a Peer stream to any other.
func cellMachines(r machinerecord.Record) []machinerecord.Member {
	out := make([]machinerecord.Member, 0, len(r.Members)+len(r.Admitted)+len(r.Replicas)+len(r.Proxies))
	out = append(out, r.Members...)
	out = append(out, r.Admitted...)
	out = append(out, r.Replicas...)
	return append(out, r.Proxies...)
}

// planReplicas are the plan's replica machines: addrs with their proven
// ids, sorted by node id (the record's order).
func planReplicas(addrs []string, ids []uint64) []*pb.Member {
	out := make([]*pb.Member, len(addrs))
	for i, a := range addrs {
		out[i] = &pb.Member{NodeId: ids[i], Addr: a}
	}
	slices.SortFunc(out, func(a, b *pb.Member) int { return cmp.Compare(a.GetNodeId(), b.GetNodeId()) })
	return out
}

// joinReplicas asks each replica (what "replica") or proxy (what "proxy")
// machine to join the cell of the chosen plan (JoinCell: a replica formats
// its stores and serves, a proxy serves). It returns a refusal naming the
// first that did not: init again resumes, since the decree adopts the
// chosen plan and a join is idempotent.
func joinReplicas(ctx context.Context, plan *pb.CellPlan, addrs []string, machines []pb.MachineClient, what string) string {
	for i, r := range machines {
		rep, err := r.JoinCell(ctx, &pb.JoinCellRequest{Plan: plan})
		switch {
		case err != nil:
			return what + "_unreachable: " + addrs[i]
		case !rep.GetJoined():
			return fmt.Sprintf("%s_refused: %s: %s", what, addrs[i], rep.GetRefusal())
		}
	}
	return ""
}
