package paxos_test

// These tests read like the rules of roles.go: who may send which message,
// and who may speak at a ballot. Node 1 is the node under test, in a
// majority of {1, 2, 3}; 101 is a listed replica, 201 a listed proxy, 9 a
// machine of no role.

import (
	"fmt"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage/memstore"
)

const (
	rlReplica  paxos.NodeID = 101
	rlProxy    paxos.NodeID = 201
	rlStranger paxos.NodeID = 9
)

// newRoleSolo is node 1 with a listed replica and a listed proxy; with
// matchmakers, the founding three run them.
func newRoleSolo(t *testing.T, matchmakers bool) *solo {
	t.Helper()
	s := &solo{t: t, opts: soloOpts(), cfg: paxos.Config{ID: 1, Acceptors: majority(3), Mode: journal.ModeMulti,
		Replicas: []paxos.NodeID{rlReplica}, Proxies: []paxos.NodeID{rlProxy}}}
	if matchmakers {
		s.cfg.Matchmakers = []paxos.NodeID{1, 2, 3}
	}
	s.store = memstore.New()
	s.restart()
	return s
}

// roleOfSender is what the table says each test sender is.
var roleOfSender = map[paxos.NodeID]paxos.Role{
	2: paxos.RoleAcceptor, rlReplica: paxos.RoleReplica, rlProxy: paxos.RoleProxy, rlStranger: paxos.RoleNone,
}

// Every message type from every role: a type the role never sends is
// dropped before any field of it is read (counted RoleRefused, nothing
// moves, nothing is sent); a type the role sends passes the role check.
// With matchmakers the acceptor set moves, so a machine outside the
// configuration is heard as an acceptor of another one, but a listed
// replica or proxy is still only that.
func TestEveryMessageTypeFromEveryRole(t *testing.T) {
	for _, mm := range []bool{false, true} {
		for _, typ := range paxos.MsgTypes() {
			for from, role := range roleOfSender {
				if mm && role == paxos.RoleNone {
					role = paxos.RoleAcceptor
				}
				name := fmt.Sprintf("matchmakers=%v %s from %s %d", mm, typ, role, from)
				s := newRoleSolo(t, mm)
				m := paxos.Message{Type: typ, From: from, To: 1, Ballot: bal(1, from), Slot: 1}
				if from == rlProxy {
					m.Ballot, m.Leader = bal(1, 2), 2
				}
				if paxos.MaySend(role, typ) {
					s.node.Step(m)
					s.flush()
					expectEq(t, name+": refused for its role", s.node.Counters().RoleRefused, uint64(0))
					continue
				}
				expectIgnored(t, s, name, m)
				expectEq(t, name+": refused for its role", s.node.Counters().RoleRefused, uint64(1))
			}
		}
	}
}

// The table's rows, spelled out: a replica asks, a proxy fans out Phase 2,
// a stranger says nothing.
func TestRoleTable(t *testing.T) {
	for _, tc := range []struct {
		role  paxos.Role
		sends []paxos.MsgType
	}{
		{paxos.RoleReplica, []paxos.MsgType{paxos.MsgCatchUpRequest, paxos.MsgPreRead}},
		{paxos.RoleProxy, []paxos.MsgType{paxos.MsgAccept, paxos.MsgNack, paxos.MsgCommit}},
		{paxos.RoleNone, nil},
		{paxos.RoleAcceptor, paxos.MsgTypes()},
	} {
		for _, typ := range paxos.MsgTypes() {
			want := false
			for _, x := range tc.sends {
				want = want || x == typ
			}
			expectEq(t, fmt.Sprintf("%s sends %s", tc.role, typ), paxos.MaySend(tc.role, typ), want)
		}
	}
}

// promisedTo makes node 1 promise ballot b to its owner.
func promisedTo(s *solo, b paxos.Ballot) {
	s.step(paxos.Message{Type: paxos.MsgPrepare, From: b.Node, To: 1, Ballot: b, Slot: 1})
	expectEq(s.t, "promise", s.node.Promised(), b)
}

// votes is the slots of the Accepted messages rd sends to to.
func votes(rd paxos.Ready, to paxos.NodeID) []paxos.Slot {
	var out []paxos.Slot
	for _, m := range rd.Messages {
		if m.Type == paxos.MsgAccepted && m.To == to {
			for _, v := range m.Votes {
				out = append(out, v.Slot)
			}
		}
	}
	return out
}

func acceptAt(from paxos.NodeID, b paxos.Ballot, rec string) paxos.Message {
	return paxos.Message{Type: paxos.MsgAccept, From: from, To: 1, Ballot: b,
		Entries: []paxos.SlotCommand{{Slot: 1, Ballot: b, Command: cmdOf(rec)}}}
}

// A member cannot slip a value into another member's ballot: node 3's
// Accept and Commit at node 2's ballot move nothing, while node 2's own
// are voted and learned. (Before the rule, node 3's forged record was
// voted by every member and chosen under node 2's ballot.)
func TestAMemberCannotSpeakAtAnotherMembersBallot(t *testing.T) {
	s := newRoleSolo(t, false)
	b := bal(4, 2)
	promisedTo(s, b)

	rd := s.step(acceptAt(3, b, "forged"))
	expectEq(t, "votes for node 3's Accept at node 2's ballot", len(votes(rd, 3)), 0)
	if _, _, ok := s.node.Acceptor().Record(1); ok {
		t.Fatalf("node 1 recorded node 3's value at node 2's ballot")
	}
	s.step(paxos.Message{Type: paxos.MsgCommit, From: 3, To: 1, Ballot: b, Commit: 1})
	expectEq(t, "chosen after node 3's Commit", s.node.ChosenIndex(), paxos.Slot(0))
	s.step(paxos.Message{Type: paxos.MsgHeartbeat, From: 3, To: 1, Ballot: b, Commit: 1})
	expectEq(t, "leader hint after node 3's Heartbeat", s.node.LeaderHint(), paxos.NodeID(0))
	expectEq(t, "dropped as not leading", s.node.Counters().NotLeading, uint64(3))

	rd = s.step(acceptAt(2, b, "real"))
	expectEq(t, "votes for the owner's Accept", fmt.Sprint(votes(rd, 2)), "[1]")
	s.step(paxos.Message{Type: paxos.MsgCommit, From: 2, To: 1, Ballot: b, Commit: 1})
	expectEq(t, "chosen after the owner's Commit", s.node.ChosenIndex(), paxos.Slot(1))
}

// A proxy speaks only for the leader of the ballot it fans out: its Accept
// must name that leader, or nothing is voted.
func TestAProxySpeaksOnlyForTheBallotsLeader(t *testing.T) {
	s := newRoleSolo(t, false)
	b := bal(4, 2)
	promisedTo(s, b)
	for _, leader := range []paxos.NodeID{0, 3, rlProxy} {
		m := acceptAt(rlProxy, b, "forged")
		m.Leader = leader
		rd := s.step(m)
		expectEq(t, fmt.Sprintf("votes for a proxy's Accept naming %d", leader), len(votes(rd, rlProxy)), 0)
	}
	// A proxy leads nothing, even at a ballot it mints in its own name,
	// above the leader's (the role fuzz target found it voted).
	own := bal(5, rlProxy)
	m := acceptAt(rlProxy, own, "self-appointed")
	m.Leader = rlProxy
	rd := s.step(m)
	expectEq(t, "votes for a proxy's Accept naming itself at its own ballot", len(votes(rd, rlProxy)), 0)

	m = acceptAt(rlProxy, b, "delegated")
	m.Leader = 2
	rd = s.step(m)
	expectEq(t, "votes for a proxy's Accept naming the owner", fmt.Sprint(votes(rd, rlProxy)), "[1]")
}

// A leader's own vote never comes from a proxy: a proxy's Accept naming
// this node as its leader is refused, so a compromised proxy cannot put a
// value into the leader's own log.
func TestALeaderTakesNoAcceptFromAProxy(t *testing.T) {
	s := newRoleSolo(t, false)
	b := s.lead()
	m := paxos.Message{Type: paxos.MsgAccept, From: rlProxy, To: 1, Ballot: b, Leader: 1,
		Entries: []paxos.SlotCommand{{Slot: 50, Ballot: b, Command: cmdOf("forged")}}}
	expectIgnored(t, s, "a proxy's Accept naming the leader itself", m)
	expectEq(t, "dropped as not leading", s.node.Counters().NotLeading, uint64(1))
}

// A replica's certificate sends no Phase 2, with or without matchmakers
// (with them, any machine outside the configuration is heard as an
// acceptor of another one: a listed replica never is).
func TestAReplicaSendsNoPhase2(t *testing.T) {
	for _, mm := range []bool{false, true} {
		s := newRoleSolo(t, mm)
		b := bal(4, rlReplica)
		for _, m := range []paxos.Message{
			acceptAt(rlReplica, b, "forged"),
			{Type: paxos.MsgCommit, From: rlReplica, To: 1, Ballot: b, Commit: 1},
			{Type: paxos.MsgPrepare, From: rlReplica, To: 1, Ballot: b, Slot: 1},
		} {
			expectIgnored(t, s, fmt.Sprintf("matchmakers=%v replica %s", mm, m.Type), m)
		}
		expectEq(t, "refused for the replica's role", s.node.Counters().RoleRefused, uint64(3))
	}
}

// A ballot's owner that rebooted since it handed its ballot on no longer
// knows whom to: it takes the first acceptor it hears leading its own
// ballot (its promise, which it no longer leads) for the successor, and
// refuses a second one.
func TestARebootedOwnerBindsTheFirstSuccessorItHears(t *testing.T) {
	s := newRoleSolo(t, false)
	b := s.lead()
	s.restart()
	expectEq(t, "promise after the reboot", s.node.Promised(), b)

	rd := s.step(acceptAt(2, b, "inherited"))
	expectEq(t, "votes for the first acceptor at the owner's ballot", fmt.Sprint(votes(rd, 2)), "[1]")
	expectEq(t, "successors assumed", s.node.Counters().SuccessorsAssumed, uint64(1))
	rd = s.step(paxos.Message{Type: paxos.MsgAccept, From: 3, To: 1, Ballot: b,
		Entries: []paxos.SlotCommand{{Slot: 2, Ballot: b, Command: cmdOf("second")}}})
	expectEq(t, "votes for a second acceptor at the owner's ballot", len(votes(rd, 3)), 0)
}

// An acceptor that drops a Heartbeat at a ballot whose leader it does not
// know asks the ballot's owner, with a HeartbeatAck at that ballot; an
// owner that handed the ballot on answers with its notice, and from then
// on the successor is heard.
func TestAnAcceptorAsksTheOwnerWhoLeadsItsBallot(t *testing.T) {
	s := newRoleSolo(t, false)
	b := bal(4, 2)
	promisedTo(s, b)
	rd := s.step(paxos.Message{Type: paxos.MsgHeartbeat, From: 3, To: 1, Ballot: b, Commit: 0})
	var asked []string
	for _, m := range rd.Messages {
		asked = append(asked, fmt.Sprintf("%s to %d at %s", m.Type, m.To, m.Ballot))
	}
	expectEq(t, "what a Heartbeat from a node not known to lead the ballot sends", fmt.Sprint(asked), "[HeartbeatAck to 2 at 4.0000000000000002]")
	expectEq(t, "owners asked", s.node.Counters().NoticesAsked, uint64(1))

	// The owner's side: node 1 leads, hands its ballot to node 2, and
	// answers node 3's question with its notice.
	o := newRoleSolo(t, false)
	ob := o.lead()
	if err := o.node.RelinquishTo(2); err != nil {
		t.Fatalf("relinquish: %v", err)
	}
	o.flush()
	rd = o.step(paxos.Message{Type: paxos.MsgHeartbeatAck, From: 3, To: 1, Ballot: ob})
	var told []string
	for _, m := range rd.Messages {
		told = append(told, fmt.Sprintf("%s to %d at %s naming %d", m.Type, m.To, m.Ballot, m.Leader))
	}
	expectEq(t, "the owner's answer", fmt.Sprint(told), fmt.Sprintf("[Heartbeat to 3 at %s naming 2]", ob))
}

// A successor is heard at its predecessor's ballot once the predecessor's
// handoff notice named it, and only then; a notice comes from the ballot's
// owner only, and a lower ballot's notice does not replace a higher one.
func TestTheHandoffNoticeNamesTheSuccessor(t *testing.T) {
	s := newRoleSolo(t, false)
	b := bal(4, 2)
	promisedTo(s, b)

	rd := s.step(acceptAt(3, b, "early"))
	expectEq(t, "votes for the successor before the notice", len(votes(rd, 3)), 0)

	s.step(paxos.Message{Type: paxos.MsgHeartbeat, From: 3, To: 1, Ballot: b, Leader: 3})
	expectEq(t, "notices taken from a non-owner", s.node.Counters().HandoffNotices, uint64(0))
	s.step(paxos.Message{Type: paxos.MsgHeartbeat, From: 2, To: 1, Ballot: b, Leader: 3})
	expectEq(t, "notices taken from the owner", s.node.Counters().HandoffNotices, uint64(1))
	expectEq(t, "leader hint after the notice", s.node.LeaderHint(), paxos.NodeID(3))

	rd = s.step(acceptAt(3, b, "inherited"))
	expectEq(t, "votes for the successor after the notice", fmt.Sprint(votes(rd, 3)), "[1]")

	s.step(paxos.Message{Type: paxos.MsgHeartbeat, From: 3, To: 1, Ballot: bal(3, 3), Leader: 2})
	rd = s.step(paxos.Message{Type: paxos.MsgAccept, From: 3, To: 1, Ballot: b,
		Entries: []paxos.SlotCommand{{Slot: 2, Ballot: b, Command: cmdOf("still")}}})
	expectEq(t, "a lower ballot's notice leaves the successor in place", fmt.Sprint(votes(rd, 3)), "[2]")
}
