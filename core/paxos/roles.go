package paxos

import (
	"fmt"
	"slices"
)

// Role is what a peer machine is to the cell: it says which messages the
// machine may send. A certificate proves which machine a peer is; the
// role says what that machine may do. One table (sends) answers for the
// core (Node.Step) and for the gRPC edge (the Peer stream), so the two
// cannot disagree.
type Role uint8

const (
	// RoleNone is no machine of the cell: it sends nothing.
	RoleNone Role = iota
	// RoleAcceptor is a node: a founding or admitted member. It votes,
	// campaigns, leads, runs a matchmaker (a founding machine), answers
	// catch-up, scrubs and hands its leadership on.
	RoleAcceptor
	// RoleReplica is a replica machine: it learns chosen values and serves
	// reads, and never votes or leads.
	RoleReplica
	// RoleProxy is a proxy leader: it fans a leader's delegated Phase 2 out
	// to the acceptors and announces what a quorum accepted.
	RoleProxy
)

func (r Role) String() string {
	switch r {
	case RoleNone:
		return "none"
	case RoleAcceptor:
		return "acceptor"
	case RoleReplica:
		return "replica"
	case RoleProxy:
		return "proxy"
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

// roleSet is a set of roles, one bit each.
type roleSet uint8

func rolesOf(rs ...Role) roleSet {
	var s roleSet
	for _, r := range rs {
		s |= 1 << r
	}
	return s
}

// sends is who may send what. Every message type has a row (a test checks
// it against the type list, and every type × role pair against a node).
// A message from a role its row does not name is dropped by the core and
// ends the sender's Peer stream at the edge.
//
//	message            senders    why no other role
//	-----------------  ---------  ------------------------------------------
//	Prepare            acceptor   only a node campaigns; a replica or proxy
//	                              Prepare would let a non-voter raise every
//	                              promise and stall the cell
//	Promise            acceptor   a promise is a vote of the Phase-1 quorum
//	Accept             acceptor,  the leader's Phase 2 (to acceptors, and to
//	                   proxy      a proxy as a delegation); a proxy's fan-out
//	                              names the leader it speaks for, and the
//	                              acceptor checks that leader leads the
//	                              ballot (Node.speaksFor)
//	Accepted           acceptor   a Phase-2 vote; only a voter casts it
//	Nack               acceptor,  an acceptor's refusal; a proxy relays one
//	                   proxy      to its leader (at worst a leader steps down:
//	                              liveness, never safety)
//	Commit             acceptor,  a leader's watermark; a proxy's decision,
//	                   proxy      naming the leader and the values'
//	                              fingerprints (an acceptor marks chosen only
//	                              a record it holds at that ballot)
//	CatchUpRequest     acceptor,  asks for chosen values; answering one
//	                   replica    reveals only what a replica learns anyway
//	CatchUpResponse    acceptor   hands out values as chosen: only a node
//	                              holds a chosen log to copy from
//	Heartbeat          acceptor   a leader's beat (and its handoff notice)
//	HeartbeatAck       acceptor   an acceptor's answer to its leader
//	Relinquish         acceptor   only an elected leader hands its ballot on
//	PreRead            acceptor,  a quorum read's first round; it moves
//	                   replica    nothing at the acceptor
//	PreReadAck         acceptor   a read quorum's answer is an acceptor's
//	                              vote watermark
//	TrimmedTo          acceptor   says a prefix is truncated: a node's log
//	Match, MatchReply, acceptor   matchmaking runs between nodes and the
//	GarbageCollect(Ack),          matchmaker roles node machines run
//	Probe
//	Scrub, ScrubReply  acceptor   a scrub page compares and repairs votes
var sends = map[MsgType]roleSet{
	MsgPrepare:           rolesOf(RoleAcceptor),
	MsgPromise:           rolesOf(RoleAcceptor),
	MsgAccept:            rolesOf(RoleAcceptor, RoleProxy),
	MsgAccepted:          rolesOf(RoleAcceptor),
	MsgNack:              rolesOf(RoleAcceptor, RoleProxy),
	MsgCommit:            rolesOf(RoleAcceptor, RoleProxy),
	MsgCatchUpRequest:    rolesOf(RoleAcceptor, RoleReplica),
	MsgCatchUpResponse:   rolesOf(RoleAcceptor),
	MsgHeartbeat:         rolesOf(RoleAcceptor),
	MsgHeartbeatAck:      rolesOf(RoleAcceptor),
	MsgRelinquish:        rolesOf(RoleAcceptor),
	MsgPreRead:           rolesOf(RoleAcceptor, RoleReplica),
	MsgPreReadAck:        rolesOf(RoleAcceptor),
	MsgTrimmedTo:         rolesOf(RoleAcceptor),
	MsgMatch:             rolesOf(RoleAcceptor),
	MsgMatchReply:        rolesOf(RoleAcceptor),
	MsgGarbageCollect:    rolesOf(RoleAcceptor),
	MsgGarbageCollectAck: rolesOf(RoleAcceptor),
	MsgProbe:             rolesOf(RoleAcceptor),
	MsgScrub:             rolesOf(RoleAcceptor),
	MsgScrubReply:        rolesOf(RoleAcceptor),
}

// MsgTypes lists every message type, in number order.
func MsgTypes() []MsgType {
	return []MsgType{MsgPrepare, MsgPromise, MsgAccept, MsgAccepted, MsgNack, MsgCommit,
		MsgCatchUpRequest, MsgCatchUpResponse, MsgHeartbeat, MsgHeartbeatAck, MsgRelinquish,
		MsgPreRead, MsgPreReadAck, MsgTrimmedTo, MsgMatch, MsgMatchReply, MsgGarbageCollect,
		MsgGarbageCollectAck, MsgProbe, MsgScrub, MsgScrubReply}
}

// MaySend reports whether a machine of role r may send a message of type
// t. RoleNone sends nothing, and an unknown type has no sender.
func MaySend(r Role, t MsgType) bool {
	return r != RoleNone && sends[t]&(1<<r) != 0
}

// roleOf is what this node knows sender to be for its journal: an acceptor
// of the configuration it follows, a listed proxy or replica, or, with
// matchmakers (where the acceptor set moves), an acceptor of another
// configuration: the edge admitted only machines of the cell, and a
// listed replica or proxy is never taken for one. A node with id 0 is
// nobody.
func (n *Node) roleOf(sender NodeID) Role {
	switch {
	case sender == 0:
		return RoleNone
	case n.sys.Contains(sender):
		return RoleAcceptor
	case slices.Contains(n.cfg.Proxies, sender):
		return RoleProxy
	case slices.Contains(n.cfg.Replicas, sender):
		return RoleReplica
	case n.matchmakers():
		return RoleAcceptor
	}
	return RoleNone
}

// speaksFor reports whether m, from a sender of role r, speaks for a
// leadership that this node knows may lead at m's ballot. An Accept, a
// Commit or a Heartbeat at ballot b comes from:
//
//   - b's owner (b.Node): the leader it elected;
//   - the successor b's owner handed b to, once the owner's handoff notice
//     told this node (Node.successor); a node that missed the notice
//     ignores the successor, its election timer runs out, and an election
//     repairs it: a lost notice costs liveness, never safety;
//   - a listed proxy, for either of those two (m.Leader names whom).
//
// A message naming Leader from an acceptor is only the owner's handoff
// notice (a Heartbeat). Every other type carries no leadership claim this
// check could bind: its handler checks what it needs (a vote counts only
// from an acceptor of the tally's configuration).
func (n *Node) speaksFor(m Message, r Role) bool {
	switch m.Type {
	case MsgAccept, MsgCommit, MsgHeartbeat:
	default:
		return true
	}
	if r == RoleProxy {
		// A proxy fans an Accept out to every addressee but the leader it
		// names: the leader's own vote never comes from a proxy, so a
		// proxy's Accept naming this node is refused, and a compromised
		// proxy cannot put a value into the leader's own log.
		if m.Type == MsgAccept && m.Leader == n.cfg.ID {
			return false
		}
		return m.Leader != 0 && n.mayLead(m.Leader, m.Ballot)
	}
	if m.Leader != 0 {
		return m.Type == MsgHeartbeat && m.Ballot.Node == m.From && m.Leader != m.From
	}
	return n.mayLead(m.From, m.Ballot)
}

// mayLead reports whether node s may lead at ballot b as far as this node
// knows: s is an acceptor, and it owns b or b's owner named it its
// successor. A replica or a proxy leads nothing, whatever ballot it mints
// in its own name (a proxy naming itself the leader of a ballot of its own
// was voted above the real leader's until this rule: the role fuzz target
// found it).
func (n *Node) mayLead(s NodeID, b Ballot) bool {
	if b.IsZero() || n.roleOf(s) != RoleAcceptor {
		return false
	}
	if b.Node == s || n.successor.ballot == b && n.successor.to == s {
		return true
	}
	// A ballot's owner keeps no durable record of whom it handed the ballot
	// to, and a reboot forgets it. Its durable promise is still that ballot,
	// which it no longer leads: the first acceptor it then hears at it is
	// taken for the successor, and bound (a second one is refused). Without
	// this a rolling restart, leader first, cost an election at every
	// machine: the restarted owner ignored its successor and campaigned.
	// Honest peers speak at another's ballot only as its successor, so this
	// is safe; what it lends a lying member is in docs/guide/security.md.
	if b.Node == n.cfg.ID && b == n.acc.Promised() && n.ownBallot() != b && n.successor.ballot.Less(b) {
		n.successor.ballot, n.successor.to = b, s
		n.successor.config = Configuration{}
		if n.ballotCfg.Ballot == b {
			n.successor.config = n.ballotCfg
		}
		n.counters.SuccessorsAssumed++
		return true
	}
	return false
}
