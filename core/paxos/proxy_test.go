package paxos_test

// This file checks a proxy leader alone (proxy.go; Compartmentalized Paxos,
// Whittaker et al., §3.1): no nodes, no network. Each test hands a
// paxos.Proxy messages built by hand — a leader's delegation, acceptors'
// Accepteds and Nacks — ticks it, and reads what Messages hands out and what
// Counters, Open and Ballot report: the fan-out to each slot's Phase-2
// addressees but the leader, the one Commit per member once a Phase-2 quorum
// voted, the votes that do not count, eviction, ballots, Nack relay, the
// beat's re-fan-out and the input it ignores.

import (
	"fmt"
	"slices"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

// pxID is the proxy under test; the leader is node 1 unless a test says.
const pxID paxos.NodeID = 201

// pxDelegation is leader's delegation of the given slots at ballot b in sys;
// slot s carries the value pxValue(s).
func pxDelegation(sys quorum.System, b paxos.Ballot, leader paxos.NodeID, slots ...paxos.Slot) paxos.Message {
	m := paxos.Message{Type: paxos.MsgAccept, From: leader, To: pxID, Ballot: b, Config: sys}
	for _, s := range slots {
		m.Entries = append(m.Entries, paxos.SlotCommand{Slot: s, Ballot: b, Command: pxValue(s)})
	}
	return m
}

// pxValue is the value the tests propose at slot s.
func pxValue(s paxos.Slot) journal.Command { return unfenced(fmt.Sprintf("v%d", s)) }

// pxVotes is acceptor from's Accepted at ballot b for the given slots' values.
func pxVotes(from paxos.NodeID, b paxos.Ballot, slots ...paxos.Slot) paxos.Message {
	m := paxos.Message{Type: paxos.MsgAccepted, From: from, To: pxID, Ballot: b}
	for _, s := range slots {
		m.Votes = append(m.Votes, paxos.SlotVote{Slot: s, VHash: pxValue(s).Fingerprint()})
	}
	return m
}

// pxSlots lists the slots of m's entries in the order m carries them.
func pxSlots(m paxos.Message) []paxos.Slot {
	var out []paxos.Slot
	for _, e := range m.Entries {
		out = append(out, e.Slot)
	}
	for _, v := range m.Votes { // a proxy's Commit names slots by votes
		out = append(out, v.Slot)
	}
	return out
}

// pxByAddressee indexes msgs by addressee, failing on a second message to one.
func pxByAddressee(t *testing.T, msgs []paxos.Message) map[paxos.NodeID]paxos.Message {
	t.Helper()
	out := map[paxos.NodeID]paxos.Message{}
	for _, m := range msgs {
		if _, dup := out[m.To]; dup {
			t.Fatalf("two messages to %d: %v", m.To, msgs)
		}
		out[m.To] = m
	}
	return out
}

// expectQuiet checks that the proxy has nothing to send.
func expectQuiet(t *testing.T, p *paxos.Proxy, what string) {
	t.Helper()
	if out := p.Messages(); len(out) != 0 {
		t.Fatalf("%s: the proxy sent %v, want nothing", what, out)
	}
}

// Compartmentalized Paxos §3.1: the leader sends a proxy leader the Phase-2
// request and the proxy broadcasts it to the acceptors. The leader's own
// vote reaches the proxy as an Accepted, so the proxy addresses every member
// of a majority system but the leader, naming itself as the sender and the
// leader as the hint, at the delegation's ballot.
func TestProxyDelegationFansOutToEveryAddresseeButTheLeader(t *testing.T) {
	p := paxos.NewProxy(pxID, paxos.ProxyOptions{})
	b := bal(1, 1)

	p.Step(pxDelegation(majority(3), b, 1, 1, 2))

	out := pxByAddressee(t, p.Messages())
	expectEq(t, "addressees", len(out), 2)
	if _, ok := out[1]; ok {
		t.Fatalf("the proxy sent the leader an Accept: %v", out[1])
	}
	for _, id := range []paxos.NodeID{2, 3} {
		m, ok := out[id]
		if !ok {
			t.Fatalf("no Accept to %d: %v", id, out)
		}
		expectEq(t, "type", m.Type, paxos.MsgAccept)
		expectEq(t, "from", m.From, pxID)
		expectEq(t, "leader", m.Leader, paxos.NodeID(1))
		expectEq(t, "ballot", m.Ballot, b)
		expectEq(t, "slots", fmt.Sprint(pxSlots(m)), "[1 2]")
		for _, e := range m.Entries {
			expectEq(t, "entry ballot", e.Ballot, b)
			if !e.Command.Equal(pxValue(e.Slot)) {
				t.Fatalf("Accept to %d carries %s at slot %d, want %s", id, e.Command, e.Slot, pxValue(e.Slot))
			}
		}
	}
	expectEq(t, "delegated", p.Counters().Delegated, uint64(2))
	expectEq(t, "open", p.Open(), 2)
	expectEq(t, "ballot", p.Ballot(), b)
}

// Flexible Paxos §4: on a grid the Phase-2 quorum of a slot is its column.
// The proxy addresses only the slot's column (the leader excluded) and
// decides the slot only once the whole column voted. 2x2 grid over 1..4:
// column 0 is {1, 3}, column 1 is {2, 4}; leader 1 delegates slots 1 and 2.
func TestProxyGridAddressesTheSlotsColumnOnly(t *testing.T) {
	grid, err := quorum.NewGrid(ids(4), 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	p := paxos.NewProxy(pxID, paxos.ProxyOptions{})
	b := bal(1, 1)

	p.Step(pxDelegation(grid, b, 1, 1, 2))

	out := pxByAddressee(t, p.Messages())
	expectEq(t, "addressees", len(out), 3)
	expectEq(t, "slots to 2", fmt.Sprint(pxSlots(out[2])), "[1]")
	expectEq(t, "slots to 4", fmt.Sprint(pxSlots(out[4])), "[1]")
	expectEq(t, "slots to 3", fmt.Sprint(pxSlots(out[3])), "[2]")
	if _, ok := out[1]; ok {
		t.Fatalf("the proxy sent the leader an Accept: %v", out[1])
	}

	// half of slot 1's column is no quorum; the whole column is.
	p.Step(pxVotes(2, b, 1))
	expectQuiet(t, p, "after one vote of column 1")
	p.Step(pxVotes(4, b, 1))
	commits := pxByAddressee(t, p.Messages())
	expectEq(t, "Commits", len(commits), 4)
	expectEq(t, "decided slots", fmt.Sprint(pxSlots(commits[1])), "[1]")
	expectEq(t, "open", p.Open(), 1)
}

// Compartmentalized Paxos §3.1: once a Phase-2 quorum voted, the proxy
// tells the leader and the acceptors the decision. One Commit to the leader
// and one to each other member, the decided slots in slot order with their
// values, and the rounds close: a late vote and the next beats send nothing.
func TestProxyQuorumCommitsOnceToTheLeaderAndEveryMember(t *testing.T) {
	p := paxos.NewProxy(pxID, paxos.ProxyOptions{BeatTicks: 1})
	b := bal(3, 1)
	p.Step(pxDelegation(majority(3), b, 1, 4, 2, 3))
	p.Messages()

	// the leader's own vote alone is no quorum of three.
	p.Step(pxVotes(1, b, 4, 2, 3))
	expectQuiet(t, p, "after the leader's vote")
	expectEq(t, "open before the quorum", p.Open(), 3)

	// node 2's vote makes a quorum on every slot at once.
	p.Step(pxVotes(2, b, 4, 2, 3))

	out := p.Messages()
	expectEq(t, "messages", len(out), 3)
	commits := pxByAddressee(t, out)
	expectEq(t, "first Commit goes to", out[0].To, paxos.NodeID(1))
	for _, id := range []paxos.NodeID{1, 2, 3} {
		m, ok := commits[id]
		if !ok {
			t.Fatalf("no Commit to %d: %v", id, out)
		}
		expectEq(t, "type", m.Type, paxos.MsgCommit)
		expectEq(t, "from", m.From, pxID)
		expectEq(t, "leader", m.Leader, paxos.NodeID(1))
		expectEq(t, "ballot", m.Ballot, b)
		expectEq(t, "decided slots", fmt.Sprint(pxSlots(m)), "[2 3 4]")
		for _, v := range m.Votes {
			if v.VHash != pxValue(v.Slot).Fingerprint() {
				t.Fatalf("Commit to %d names fingerprint %x at slot %d, want %x", id, v.VHash, v.Slot, pxValue(v.Slot).Fingerprint())
			}
		}
	}
	expectEq(t, "open", p.Open(), 0)
	expectEq(t, "decided", p.Counters().Decided, uint64(3))

	// the rounds are closed: a late vote and the beats send nothing.
	p.Step(pxVotes(3, b, 4, 2, 3))
	expectQuiet(t, p, "after a late vote")
	for range 3 {
		p.Tick()
	}
	expectQuiet(t, p, "beats after the decision")
	expectEq(t, "decided after the late vote", p.Counters().Decided, uint64(3))
}

// Paxos Made Simple §2.2: a value is chosen when a quorum accepted that
// value at one ballot. A vote for another value, a vote from outside the
// configuration and a vote at another ballot each leave the round open —
// each alone with the leader's vote would be a majority of three if it
// counted — and a genuine vote then decides it.
func TestProxyCountsOnlyVotesForTheValueAtTheBallotFromMembers(t *testing.T) {
	p := paxos.NewProxy(pxID, paxos.ProxyOptions{})
	b := bal(2, 1)
	p.Step(pxDelegation(majority(3), b, 1, 5))
	p.Messages()
	p.Step(pxVotes(1, b, 5))

	other := pxVotes(2, b, 5)
	other.Votes[0].VHash = unfenced("another value").Fingerprint()
	stranger := pxVotes(9, b, 5)
	otherBallot := pxVotes(3, bal(1, 1), 5)
	for _, tc := range []struct {
		name string
		m    paxos.Message
	}{
		{"a vote for another value", other},
		{"a vote from a non-member", stranger},
		{"a vote at another ballot", otherBallot},
	} {
		p.Step(tc.m)
		expectQuiet(t, p, tc.name)
		expectEq(t, tc.name+": open", p.Open(), 1)
	}
	expectEq(t, "decided by bad votes", p.Counters().Decided, uint64(0))

	p.Step(pxVotes(3, b, 5))
	expectEq(t, "Commits after a good vote", len(ofType(p.Messages(), paxos.MsgCommit)), 3)
	expectEq(t, "open after a good vote", p.Open(), 0)
}

// proxy.go, bounded retention: after EvictAfter unanswered re-fan-outs a
// round is evicted, and only a new vote is an answer. With EvictAfter 3 and
// a one-tick beat: two beats pass, node 2's first vote restarts the budget,
// two beats pass, node 2 votes again (no progress), and the round dies on
// the fourth beat after the first vote — not the sixth, as it would if the
// repeat counted. An eviction announces nothing.
func TestProxyRepeatedVoteDoesNotPostponeEviction(t *testing.T) {
	p := paxos.NewProxy(pxID, paxos.ProxyOptions{BeatTicks: 1, EvictAfter: 3})
	b := bal(1, 1)
	p.Step(pxDelegation(majority(3), b, 1, 7))
	p.Messages()

	p.Tick()
	p.Tick()
	p.Step(pxVotes(2, b, 7)) // a new vote: the budget restarts
	p.Tick()
	p.Tick()
	p.Step(pxVotes(2, b, 7)) // a repeat: no progress
	p.Messages()
	p.Tick()
	expectEq(t, "open after three beats since the first vote", p.Open(), 1)
	expectEq(t, "Accepts re-fanned on the third beat", len(ofType(p.Messages(), paxos.MsgAccept)), 2)

	p.Tick()

	expectEq(t, "open after the fourth beat", p.Open(), 0)
	expectEq(t, "evicted", p.Counters().Evicted, uint64(1))
	expectQuiet(t, p, "the evicting beat")
	p.Tick()
	p.Step(pxVotes(1, b, 7))
	expectQuiet(t, p, "after the eviction")
	expectEq(t, "decided", p.Counters().Decided, uint64(0))
}

// Paxos Made Simple §2.2: a higher ballot supersedes a lower one. A proxy
// works for the newest leader: a delegation below the highest ballot it was
// handed is ignored (Stale), and one above it drops the older ballot's
// rounds and answers to its own leader.
func TestProxyBallotsStaleIgnoredNewerReplaces(t *testing.T) {
	p := paxos.NewProxy(pxID, paxos.ProxyOptions{})
	sys := majority(3)
	b1, b2, b3 := bal(1, 1), bal(2, 1), bal(3, 2)
	p.Step(pxDelegation(sys, b2, 1, 1))
	p.Messages()

	// a delegation at a lower ballot is ignored.
	p.Step(pxDelegation(sys, b1, 1, 2))
	expectQuiet(t, p, "stale delegation")
	expectEq(t, "stale", p.Counters().Stale, uint64(1))
	expectEq(t, "open after the stale delegation", p.Open(), 1)
	expectEq(t, "ballot after the stale delegation", p.Ballot(), b2)

	// node 2's higher ballot replaces the round of b2.
	p.Step(pxDelegation(sys, b3, 2, 5))
	out := pxByAddressee(t, p.Messages())
	expectEq(t, "ballot", p.Ballot(), b3)
	expectEq(t, "open", p.Open(), 1)
	expectEq(t, "addressees of the new leader's round", len(out), 2)
	for _, id := range []paxos.NodeID{1, 3} {
		expectEq(t, fmt.Sprintf("slots to %d", id), fmt.Sprint(pxSlots(out[id])), "[5]")
		expectEq(t, "hint", out[id].Leader, paxos.NodeID(2))
		expectEq(t, "ballot of the fan-out", out[id].Ballot, b3)
	}

	// slot 1's round is gone: its quorum at b2 decides nothing.
	p.Step(pxVotes(1, b2, 1))
	p.Step(pxVotes(3, b2, 1))
	expectQuiet(t, p, "votes for the replaced round")

	// slot 5 is decided for the new leader, which hears first.
	p.Step(pxVotes(2, b3, 5))
	p.Step(pxVotes(3, b3, 5))
	commits := ofType(p.Messages(), paxos.MsgCommit)
	expectEq(t, "Commits", len(commits), 3)
	expectEq(t, "first Commit goes to", commits[0].To, paxos.NodeID(2))
	expectEq(t, "decided slots", fmt.Sprint(pxSlots(commits[0])), "[5]")
}

// Paxos Made Simple §2.2 (a proposer that learns of a higher promise
// abandons its ballot): the proxy relays a Nack refusing its ballot with a
// higher promise to the leader, once — the beats that follow repeat no
// Nack. A Nack whose promise is not above the ballot (an Accept below an
// acceptor's floor), one refusing another ballot, and one from outside the
// configuration depose nobody and are not relayed.
func TestProxyRelaysAHigherPromiseOnce(t *testing.T) {
	p := paxos.NewProxy(pxID, paxos.ProxyOptions{BeatTicks: 1})
	b := bal(1, 1)
	p.Step(pxDelegation(majority(3), b, 1, 4))
	p.Messages()

	p.Step(paxos.Message{Type: paxos.MsgNack, From: 2, To: pxID, Ballot: bal(2, 3), Refused: b, Slot: 1})

	out := p.Messages()
	expectEq(t, "messages", len(out), 1)
	r := out[0]
	expectEq(t, "type", r.Type, paxos.MsgNack)
	expectEq(t, "to", r.To, paxos.NodeID(1))
	expectEq(t, "from", r.From, pxID)
	expectEq(t, "promise", r.Ballot, bal(2, 3))
	expectEq(t, "refused", r.Refused, b)
	expectEq(t, "relayed", p.Counters().Relayed, uint64(1))
	for range 3 {
		p.Tick()
	}
	expectEq(t, "Nacks on the beats", len(ofType(p.Messages(), paxos.MsgNack)), 0)

	for _, tc := range []struct {
		name string
		m    paxos.Message
	}{
		{"below the floor", paxos.Message{Type: paxos.MsgNack, From: 3, To: pxID, Ballot: b, Refused: b, Slot: 9}},
		{"another ballot refused", paxos.Message{Type: paxos.MsgNack, From: 3, To: pxID, Ballot: bal(4, 3), Refused: bal(0, 1)}},
		{"a non-member", paxos.Message{Type: paxos.MsgNack, From: 9, To: pxID, Ballot: bal(5, 3), Refused: b}},
	} {
		p.Step(tc.m)
		expectQuiet(t, p, tc.name)
		expectEq(t, tc.name+": relayed", p.Counters().Relayed, uint64(1))
	}
}

// proxy.go, bounded retention: the proxy re-fans-out its open rounds every
// BeatTicks, in slot order whatever order they were handed in (a seed
// replays), and counts each re-sent round.
func TestProxyTickRefansOutEveryBeatInSlotOrder(t *testing.T) {
	p := paxos.NewProxy(pxID, paxos.ProxyOptions{BeatTicks: 3})
	slots := []paxos.Slot{9, 3, 14, 6, 1, 11, 4, 8}
	p.Step(pxDelegation(majority(3), bal(1, 1), 1, slots...))
	p.Messages()
	want := fmt.Sprint(slices.Sorted(slices.Values(slots)))

	for beat := 1; beat <= 2; beat++ {
		p.Tick()
		p.Tick()
		expectQuiet(t, p, fmt.Sprintf("beat %d, between beats", beat))

		p.Tick()

		out := pxByAddressee(t, p.Messages())
		expectEq(t, "addressees", len(out), 2)
		for _, id := range []paxos.NodeID{2, 3} {
			expectEq(t, fmt.Sprintf("beat %d: type to %d", beat, id), out[id].Type, paxos.MsgAccept)
			expectEq(t, fmt.Sprintf("beat %d: slots to %d", beat, id), fmt.Sprint(pxSlots(out[id])), want)
		}
		expectEq(t, "refans", p.Counters().Refans, uint64(beat*len(slots)))
	}
}

// The proxy's input contract (Step): a message not addressed to it, one with
// no sender, a malformed one, a delegation without a ballot or a valid
// configuration, a kind a proxy does not take, and a delegation naming
// another configuration at its ballot are all ignored; entries at another
// ballot, at slot 0 or with an invalid command are dropped from a
// delegation that is otherwise taken.
func TestProxyIgnoresMalformedOrMisaddressedInput(t *testing.T) {
	sys := majority(3)
	b := bal(1, 1)
	good := pxDelegation(sys, b, 1, 1)
	with := func(edit func(*paxos.Message)) paxos.Message {
		m := cloneMsg(good)
		edit(&m)
		return m
	}
	for _, tc := range []struct {
		name string
		m    paxos.Message
	}{
		{"addressed to another", with(func(m *paxos.Message) { m.To = 202 })},
		{"no sender", with(func(m *paxos.Message) { m.From = 0 })},
		{"ballot round out of range", with(func(m *paxos.Message) { m.Ballot = paxos.Ballot{Round: paxos.BallotRoundMax + 1, Node: 1} })},
		{"entry slot out of range", with(func(m *paxos.Message) { m.Entries[0].Slot = paxos.SlotMax + 1 })},
		{"zero ballot", with(func(m *paxos.Message) { m.Ballot = paxos.Ballot{} })},
		{"no configuration", with(func(m *paxos.Message) { m.Config = quorum.System{} })},
		{"a Commit", with(func(m *paxos.Message) { m.Type = paxos.MsgCommit })},
		{"a Heartbeat", with(func(m *paxos.Message) { m.Type = paxos.MsgHeartbeat })},
		{"a Prepare", with(func(m *paxos.Message) { m.Type = paxos.MsgPrepare })},
		{"an Accepted before any delegation", pxVotes(2, b, 1)},
		{"a Nack before any delegation", paxos.Message{Type: paxos.MsgNack, From: 2, To: pxID, Ballot: bal(2, 2), Refused: b}},
	} {
		p := paxos.NewProxy(pxID, paxos.ProxyOptions{BeatTicks: 1})
		p.Step(tc.m)
		p.Tick()
		expectQuiet(t, p, tc.name)
		expectEq(t, tc.name+": open", p.Open(), 0)
		expectEq(t, tc.name+": counters", p.Counters(), paxos.ProxyCounters{})
	}

	// the same ballot under another configuration is not taken.
	p := paxos.NewProxy(pxID, paxos.ProxyOptions{})
	p.Step(good)
	p.Messages()
	p.Step(pxDelegation(majority(5), b, 1, 2))
	expectQuiet(t, p, "same ballot, another configuration")
	expectEq(t, "open after another configuration", p.Open(), 1)

	// bad entries are dropped, the good one is taken.
	p = paxos.NewProxy(pxID, paxos.ProxyOptions{})
	m := pxDelegation(sys, b, 1, 2, 3, 4, 5)
	m.Entries[0].Ballot = bal(0, 9)
	m.Entries[1].Slot = 0
	m.Entries[2].Command = journal.Command{}
	p.Step(m)
	out := p.Messages()
	expectEq(t, "Accepts", len(out), 2)
	expectEq(t, "slots fanned out", fmt.Sprint(pxSlots(out[0])), "[5]")
	expectEq(t, "delegated", p.Counters().Delegated, uint64(1))
}
