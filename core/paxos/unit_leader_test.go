package paxos_test

// This file holds the unit tests of elections and leading: the election
// timeout, stepping down, opening a quorum read, paged log reads, the
// leader's tally and a lost campaign. A solo node (unit_test.go) — node 1
// of a three-node majority, driven by hand with the test playing its peers
// — carries them.

import (
	"fmt"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
)

// The core reads no clock and draws no jitter: the host hands in the
// election timeout, never below ElectionTicks, and is told when the timer
// was reset so it can draw a fresh one.
func TestUnitElectionTimeout(t *testing.T) {
	s := newSolo(t, journal.ModeMulti, soloOpts(), nil)
	expectEq(t, "wants a timeout at boot", s.node.WantsElectionTimeout(), true)
	s.node.SetElectionTimeout(1) // clamped to ElectionTicks (5)
	expectEq(t, "wants after set", s.node.WantsElectionTimeout(), false)
	for range 4 {
		s.node.Tick()
	}
	expectEq(t, "role after 4 ticks", s.node.Role(), "follower")
	s.node.Tick()
	expectEq(t, "role after 5 ticks", s.node.Role(), "candidate")
	expectEq(t, "wants after a campaign", s.node.WantsElectionTimeout(), true)
	s.flush()

	s.node.SetElectionTimeout(8)
	for range 7 {
		s.node.Tick()
	}
	expectEq(t, "campaigns after 7 of 8 ticks", s.node.Counters().Campaigns, uint64(1))
	s.node.Tick()
	expectEq(t, "campaigns after 8 of 8 ticks", s.node.Counters().Campaigns, uint64(2))
}

// StepDown is the driver's abdication: always safe, a no-op on a follower.
func TestUnitStepDown(t *testing.T) {
	s := newSolo(t, journal.ModeMulti, soloOpts(), nil)
	s.node.StepDown()
	expectEq(t, "step-downs of a follower", s.node.Counters().StepDowns, uint64(0))
	b := s.lead()
	expectEq(t, "leader ballot", s.node.LeaderBallot(), b)
	expectEq(t, "leader hint", s.node.LeaderHint(), paxos.NodeID(1))
	s.node.StepDown()
	expectEq(t, "role", s.node.Role(), "follower")
	expectEq(t, "leader ballot after stepping down", s.node.LeaderBallot(), paxos.Ballot{})
	expectEq(t, "step-downs", s.node.Counters().StepDowns, uint64(1))
	expectEq(t, "promise kept", s.node.Promised(), b)
	res := s.node.ProposeControl(journal.Noop())
	expectEq(t, "propose after stepping down", res.Status, paxos.NotLeader)
}

// A quorum read is opened once per ctx and within
// ReadsMax; a leader's read waits for its own read fence as well.
func TestUnitQuorumReadOpening(t *testing.T) {
	opts := soloOpts()
	opts.ReadsMax = 2
	s := newSolo(t, journal.ModeMulti, opts, nil)
	expectEq(t, "first read", s.node.QuorumRead(1), true)
	expectEq(t, "same ctx again", s.node.QuorumRead(1), false)
	expectEq(t, "second read", s.node.QuorumRead(2), true)
	expectEq(t, "beyond ReadsMax", s.node.QuorumRead(3), false)
	rd := s.flush()
	expectEq(t, "PreReads", len(ofType(rd.Messages, paxos.MsgPreRead)), 4)

	// node 2 answers read 1: a quorum with node 1, watermark 0 — served.
	rd = s.step(paxos.Message{Type: paxos.MsgPreReadAck, From: 2, To: 1, Ctx: 1})
	if len(rd.ReadStates) != 1 || rd.ReadStates[0] != (paxos.ReadState{Ctx: 1, Index: 0, OK: true}) {
		t.Fatalf("read states %v", rd.ReadStates)
	}
	// a late duplicate answer is ignored.
	rd = s.step(paxos.Message{Type: paxos.MsgPreReadAck, From: 3, To: 1, Ctx: 1, Watermark: 9})
	expectEq(t, "read states after a late answer", len(rd.ReadStates), 0)
	// a PreRead is answered with the vote watermark.
	rd = s.step(paxos.Message{Type: paxos.MsgPreRead, From: 3, To: 1, Ctx: 5})
	if len(rd.Messages) != 1 || rd.Messages[0].Type != paxos.MsgPreReadAck || rd.Messages[0].Ctx != 5 {
		t.Fatalf("PreRead answered %v", rd.Messages)
	}
	expectEq(t, "reads served", s.node.Counters().ReadsServed, uint64(1))
}

// A quorum read's page holds at most limit records
// and maxBytes bytes, but always one record when one is readable; a read at
// the tail is an empty page; the positions index answers which write starts
// where.
func TestUnitReadLogPages(t *testing.T) {
	s := newSolo(t, journal.ModeMulti, soloOpts(), nil)
	e1, e2 := unfenced("aa", "bb", "cc"), unfenced("dddd")
	s.step(paxos.Message{Type: paxos.MsgCatchUpResponse, From: 2, To: 1, Entries: []paxos.SlotCommand{
		{Slot: 1, Ballot: bal(1, 2), Command: e1}, {Slot: 2, Ballot: bal(1, 2), Command: journal.Noop()},
		{Slot: 3, Ballot: bal(1, 2), Command: e2}}})
	expectEq(t, "next seq", s.node.State().NextSeq, journal.Seq(5))
	for _, tc := range []struct {
		from     journal.Seq
		limit    int
		maxBytes int
		want     string
	}{
		{1, 10, 100, "[aa bb cc dddd]"},
		{2, 10, 100, "[bb cc dddd]"},
		{1, 2, 100, "[aa bb]"},
		{1, 10, 5, "[aa bb]"},
		{4, 10, 1, "[dddd]"}, // one record even above maxBytes
		{1, 0, 100, "[aa]"},  // one record even at limit 0
		{5, 10, 100, "[]"},   // the tail
		{9, 10, 100, "[]"},
	} {
		r := s.node.ReadLog(tc.from, tc.limit, tc.maxBytes)
		var got []string
		for _, rec := range r.Records {
			got = append(got, string(rec))
		}
		if r.Kind != paxos.ReadPage || fmt.Sprint(got) != tc.want && !(got == nil && tc.want == "[]") {
			t.Errorf("ReadLog(%d, %d, %d) = %d %v, want %s", tc.from, tc.limit, tc.maxBytes, r.Kind, got, tc.want)
		}
	}
	rep := s.node.Learner()
	if e, h := rep.EntryAt(1); h != journal.Found || !journal.Write(e).Equal(e1) {
		t.Errorf("EntryAt(1) = %v %v", e, h)
	}
	if _, h := rep.EntryAt(2); h != journal.Absent {
		t.Errorf("EntryAt(2) = %v, want absent (inside a write)", h)
	}
	if c, ok := rep.Chosen(2); !ok || c.Kind != journal.KindNoop {
		t.Errorf("Chosen(2) = %s %v", c, ok)
	}
	expectEq(t, "covers 3", rep.Covers(3), true)
	expectEq(t, "covers 4", rep.Covers(4), false)
	expectEq(t, "replica floor", rep.Floor(), paxos.Slot(1))
	expectEq(t, "replica chosen", rep.ChosenIndex(), paxos.Slot(3))
	expectEq(t, "replica applied", rep.Applied(), paxos.Slot(3))
	expectEq(t, "replica state", rep.State(), s.node.State())
}

// Paxos Made Simple §2.2, the leader's side of phase 2: its own vote is cast
// when it opens a round, the decision needs a majority of matching votes,
// and a vote for another value (fingerprint) does not count.
func TestUnitLeaderTally(t *testing.T) {
	s := newSolo(t, journal.ModeMulti, soloOpts(), nil)
	b := s.lead()
	x := cmdOf("x")
	res := s.node.Propose(journal.Entry{Records: [][]byte{[]byte("x")}})
	expectEq(t, "proposed", res.Status, paxos.Proposed)
	rd := s.flush()
	expectEq(t, "Accepts", len(ofType(rd.Messages, paxos.MsgAccept)), 2)
	if _, c, ok := s.node.Acceptor().Record(res.Slot); !ok || !c.Equal(x) {
		t.Fatalf("leader's own vote missing")
	}

	s.step(paxos.Message{Type: paxos.MsgAccepted, From: 2, To: 1, Ballot: b, Votes: []paxos.SlotVote{{Slot: res.Slot, VHash: x.Fingerprint() + 1}}})
	expectEq(t, "chosen after a vote for another value", s.node.ChosenIndex(), paxos.Slot(0))
	s.step(paxos.Message{Type: paxos.MsgAccepted, From: 2, To: 1, Ballot: bal(b.Round+1, 2), Votes: []paxos.SlotVote{{Slot: res.Slot, VHash: x.Fingerprint()}}})
	expectEq(t, "chosen after a vote at another ballot", s.node.ChosenIndex(), paxos.Slot(0))
	rd = s.step(paxos.Message{Type: paxos.MsgAccepted, From: 2, To: 1, Ballot: b, Votes: []paxos.SlotVote{{Slot: res.Slot, VHash: x.Fingerprint()}}})
	expectEq(t, "chosen after a matching vote", s.node.ChosenIndex(), res.Slot)
	expectEq(t, "decided", s.node.Counters().Decided, uint64(1))
	cs := ofType(rd.Messages, paxos.MsgCommit)
	if len(cs) != 2 || cs[0].Commit != res.Slot || cs[0].Ballot != b {
		t.Fatalf("commits %v", rd.Messages)
	}

	// a Nack at a higher ballot deposes the leader.
	s.step(paxos.Message{Type: paxos.MsgNack, From: 3, To: 1, Ballot: bal(b.Round+5, 3), Refused: b, Slot: 1})
	expectEq(t, "role after a higher Nack", s.node.Role(), "follower")
}

// Phase 1 is lost as well as won: refusals from enough acceptors end a
// campaign at once; a higher-ballot Prepare deposes a candidate, which then
// promises it.
func TestUnitCampaignLost(t *testing.T) {
	s := newSolo(t, journal.ModeMulti, soloOpts(), nil)
	b, _ := s.campaign()
	s.step(paxos.Message{Type: paxos.MsgNack, From: 2, To: 1, Ballot: b, Refused: b, Slot: 1})
	expectEq(t, "role after one refusal", s.node.Role(), "candidate")
	s.step(paxos.Message{Type: paxos.MsgNack, From: 3, To: 1, Ballot: b, Refused: b, Slot: 1})
	expectEq(t, "role after two refusals", s.node.Role(), "follower")

	b, _ = s.campaign()
	higher := bal(b.Round+1, 3)
	rd := s.step(paxos.Message{Type: paxos.MsgPrepare, From: 3, To: 1, Ballot: higher, Slot: 1})
	expectEq(t, "role after a higher Prepare", s.node.Role(), "follower")
	expectEq(t, "promised", s.node.Promised(), higher)
	expectEq(t, "promises sent", len(ofType(rd.Messages, paxos.MsgPromise)), 1)

	// a Nack whose floor is above the chosen prefix asks for catch-up.
	rd = s.step(paxos.Message{Type: paxos.MsgNack, From: 2, To: 1, Ballot: higher, Refused: bal(1, 1), Slot: 7})
	if reqs := ofType(rd.Messages, paxos.MsgCatchUpRequest); len(reqs) != 1 || reqs[0].To != 2 || reqs[0].Slot != 1 {
		t.Fatalf("catch-up after a high floor: %v", rd.Messages)
	}
}
