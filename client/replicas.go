package client

import (
	"fmt"

	"github.com/parosdb/paros/core/journal"
)

// Replica machines (the replica tier: `paros serve --role replica`). A
// replica learns every journal of its cell and serves linearizable reads
// (a quorum read, like a node's) but never votes and never writes: it
// answers a Write, Truncate or SetLeader with a NotLeader redirect. Reading
// from replicas takes the read load off the nodes that decide.
//
// How the Client knows a replica: each server says so itself, in the
// Admin.Inspect{node_only} the Client already makes to learn its node id
// (InspectReply.machine_role). A Client uses the replicas among the
// addresses given to Dial; it learns none from the cell by itself. So the
// option is on by default and does nothing until replicas are dialled:
//
//	c, err := client.Dial(ctx, append(nodes, replicas...))
//
// Which server a call asks first (the one retry loop of each call,
// Journal.Read and Journal's mutating calls, walks these lists):
//
//	call                      order
//	------------------------  ---------------------------------------------------
//	read, replica reads on    the replica that last served the journal, the other
//	                          replicas in Servers order, then the nodes (the one
//	                          that last served first, else the believed leader)
//	read, replica reads off   the node that last served, else the believed
//	                          leader, the other nodes, then the replicas
//	write, truncate, claim    the believed leader, the other servers; never a
//	                          replica (an error at once when all are replicas)
//
// An unserved answer, an unknown journal or an unreachable replica sends
// the read on down the list within the same round, so a replica that is
// down or behind costs one failed attempt per read, never an error. A
// server whose role is not known yet (it did not answer Inspect) is taken
// for a node: at worst a write meets a replica's redirect.

// roleReplica is a replica machine's InspectReply.machine_role.
const roleReplica = "replica"

// errOnlyReplicas: a mutating call on a Client whose every server is a
// replica machine; nothing was sent.
var errOnlyReplicas = fmt.Errorf("%w: every server is a replica machine, which serves reads only (dial a node too)", ErrNoServer)

// isReplica reports whether server i is known to be a replica machine.
func (c *Client) isReplica(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	servers := c.list()
	return i >= 0 && i < len(servers) && servers[i].known && servers[i].replica
}

// readOrder lists the server indexes a read of journal id asks, in order
// (see the table above).
func (c *Client) readOrder(id journal.ID) []int {
	c.mu.Lock()
	last, served := c.readFrom[id]
	firstNode, firstReplica := c.leaderLocked(id), -1
	servers := c.list()
	replica := make([]bool, len(servers))
	for i, s := range servers {
		replica[i] = s.known && s.replica
	}
	c.mu.Unlock()
	if served && last < len(replica) {
		if replica[last] {
			firstReplica = last
		} else {
			firstNode = last
		}
	}
	nodes := filter(c.order(firstNode), replica, false)
	replicas := filter(c.order(firstReplica), replica, true)
	if !c.replicaReads {
		return append(nodes, replicas...)
	}
	return append(replicas, nodes...)
}

// writeOrder lists the server indexes a mutating call of journal id asks:
// the believed leader first, then the others in Servers order, without the
// known replicas.
func (c *Client) writeOrder(id journal.ID) []int {
	c.mu.Lock()
	first := c.leaderLocked(id)
	servers := c.list()
	replica := make([]bool, len(servers))
	for i, s := range servers {
		replica[i] = s.known && s.replica
	}
	c.mu.Unlock()
	return filter(c.order(first), replica, false)
}

// filter keeps the indexes in order whose replica flag is want; an index
// past the flags (a server learned since) counts as a node.
func filter(order []int, replica []bool, want bool) []int {
	out := make([]int, 0, len(order))
	for _, i := range order {
		if (i < len(replica) && replica[i]) == want {
			out = append(out, i)
		}
	}
	return out
}
