package machine

import (
	"slices"

	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage/machinerecord"
)

// The proxy leaders at the machine level. A proxy machine is a machine
// started with Config.Role RoleProxy (paros serve --role proxy): its
// runtime drives a host.ProxyHost (one paxos.Proxy per journal, made on the
// first delegation) instead of a host.Host. It keeps no store: its data dir
// holds its machine record alone, and a restart boots it empty (the
// leaders re-delegate what they still need). It answers no client data
// call (every journal is unknown to it), votes on nothing (PrepareCell,
// FormCell and JoinJournal are refused "proxy"), and hands off no
// leadership.
//
// The plan names the proxies by node id (machinerecord.Record's Proxies,
// CellPlan.proxies), as it names the replicas; every process of the cell
// gets the same list: each acceptor's and replica's journal spec carries
// it (host.JournalSpec.Proxies, so a settled leader delegates slot s's
// Phase 2 to Proxies[s % len]), every machine makes the proxies peers (a
// leader dials them), and a proxy makes every machine of the plan a peer
// (it fans out to the acceptors and answers the leader). CellInit names
// them at formation and, once the plan is chosen, asks each to join
// (JoinCell), as it does the replicas. On a running cell the operator
// changes the list (proxyset.go): a new proxy joins the same way, then
// every machine is told the new list (SetProxies). A machine admitted
// later learns the list from the plan it joins with, and the proxies are
// told of it (Admit) as every machine of the cell is, so they fan out to
// it.

// proxyIDs are the plan's proxy machines' node ids, sorted.
func proxyIDs(r machinerecord.Record) []paxos.NodeID {
	out := make([]paxos.NodeID, len(r.Proxies))
	for i, m := range r.Proxies {
		out[i] = paxos.NodeID(m.NodeID)
	}
	slices.Sort(out)
	return out
}
