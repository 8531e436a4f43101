package paxos_test

// This file holds the unit tests of the acceptor: its Phase-1 and Phase-2
// answers (Paxos Made Simple §2.2) observed through the Node API and the
// read-only accessors, learning that is not a vote, the floor, and the
// Ready/Advance contract. A solo node (unit_test.go) — node 1 of a
// three-node majority, driven by hand with the test playing its peers —
// carries them.

import (
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
)

// Paxos Made Simple §2.2, phase 1(b): an acceptor that receives a prepare
// request with a number greater than any it has answered promises it and
// reports the highest-numbered proposal it accepted; it refuses a lower one
// (paros answers a Nack naming its promise and floor). An equal ballot re-asks
// for a page and changes nothing durable.
func TestUnitAcceptorPhase1(t *testing.T) {
	s := newSolo(t, journal.ModeMulti, soloOpts(), nil)
	x := cmdOf("x")
	s.step(paxos.Message{Type: paxos.MsgAccept, From: 2, To: 1, Ballot: bal(1, 2),
		Entries: []paxos.SlotCommand{{Slot: 1, Ballot: bal(1, 2), Command: x}}})

	// a higher ballot is promised, durably, and told the accepted value.
	rd := s.step(paxos.Message{Type: paxos.MsgPrepare, From: 3, To: 1, Ballot: bal(2, 3), Slot: 1})
	expectEq(t, "writes", opKinds(rd.Writes), "set-promise")
	expectEq(t, "must sync", rd.MustSync, true)
	ps := ofType(rd.Messages, paxos.MsgPromise)
	if len(ps) != 1 || ps[0].To != 3 || ps[0].Ballot != bal(2, 3) || ps[0].Next != 0 ||
		len(ps[0].Entries) != 1 || ps[0].Entries[0].Ballot != bal(1, 2) || !ps[0].Entries[0].Command.Equal(x) {
		t.Fatalf("promise %v", rd.Messages)
	}
	expectEq(t, "promised", s.node.Acceptor().Promised(), bal(2, 3))
	expectEq(t, "durable promise", s.store.InitialState().Promised, bal(2, 3))

	// a lower ballot is refused with a Nack naming the promise and floor.
	rd = s.step(paxos.Message{Type: paxos.MsgPrepare, From: 2, To: 1, Ballot: bal(2, 2), Slot: 1})
	expectEq(t, "writes on refusal", len(rd.Writes), 0)
	if len(rd.Messages) != 1 || rd.Messages[0].Type != paxos.MsgNack || rd.Messages[0].Ballot != bal(2, 3) ||
		rd.Messages[0].Refused != bal(2, 2) || rd.Messages[0].Slot != 1 {
		t.Fatalf("refusal %v", rd.Messages)
	}

	// the same ballot again: a Promise, and nothing to persist.
	rd = s.step(paxos.Message{Type: paxos.MsgPrepare, From: 3, To: 1, Ballot: bal(2, 3), Slot: 1})
	expectEq(t, "writes on an equal ballot", len(rd.Writes), 0)
	expectEq(t, "promises on an equal ballot", len(ofType(rd.Messages, paxos.MsgPromise)), 1)

	// the promise survives a restart.
	s.restart()
	expectEq(t, "promise after restart", s.node.Promised(), bal(2, 3))
}

// Paxos Made Simple §2.2, phase 2(b): an acceptor accepts a proposal unless
// it has promised a higher ballot. Votes are upserted by slot (a higher
// ballot replaces the record), a re-sent Accept is answered again without a
// new write, and the vote watermark is the highest slot ever voted in.
func TestUnitAcceptorPhase2(t *testing.T) {
	s := newSolo(t, journal.ModeMulti, soloOpts(), nil)
	x, y, z := cmdOf("x"), cmdOf("y"), cmdOf("z")
	acc := func(b paxos.Ballot, entries ...paxos.SlotCommand) paxos.Message {
		return paxos.Message{Type: paxos.MsgAccept, From: b.Node, To: 1, Ballot: b, Entries: entries}
	}

	// a first Accept raises the promise and records both votes.
	rd := s.step(acc(bal(1, 2), paxos.SlotCommand{Slot: 1, Ballot: bal(1, 2), Command: x},
		paxos.SlotCommand{Slot: 2, Ballot: bal(1, 2), Command: y}))
	expectEq(t, "writes", opKinds(rd.Writes), "set-promise accept accept")
	as := ofType(rd.Messages, paxos.MsgAccepted)
	if len(as) != 1 || as[0].To != 2 || len(as[0].Votes) != 2 ||
		as[0].Votes[0] != (paxos.SlotVote{Slot: 1, VHash: x.Fingerprint()}) || as[0].Votes[1] != (paxos.SlotVote{Slot: 2, VHash: y.Fingerprint()}) {
		t.Fatalf("accepted %v", rd.Messages)
	}
	a := s.node.Acceptor()
	if b, c, ok := a.Record(1); !ok || b != bal(1, 2) || !c.Equal(x) {
		t.Fatalf("record 1: %v %s %s", ok, b, c)
	}
	expectEq(t, "promised", a.Promised(), bal(1, 2))
	expectEq(t, "watermark", a.VoteWatermark(), paxos.Slot(2))
	expectEq(t, "last slot", a.LastSlot(), paxos.Slot(2))
	expectEq(t, "leader hint", s.node.LeaderHint(), paxos.NodeID(2))

	// the same Accept again: the vote is on record; answered, not rewritten.
	rd = s.step(acc(bal(1, 2), paxos.SlotCommand{Slot: 1, Ballot: bal(1, 2), Command: x}))
	expectEq(t, "writes on a re-sent Accept", len(rd.Writes), 0)
	expectEq(t, "Accepted on a re-sent Accept", len(ofType(rd.Messages, paxos.MsgAccepted)), 1)

	// a higher ballot replaces the record at slot 1.
	s.step(acc(bal(2, 3), paxos.SlotCommand{Slot: 1, Ballot: bal(2, 3), Command: z}))
	if b, c, _ := a.Record(1); b != bal(2, 3) || !c.Equal(z) {
		t.Fatalf("record 1 after a higher ballot: %s %s", b, c)
	}
	if _, c, _ := s.store.Accepted(1); !c.Equal(z) {
		t.Fatalf("durable record 1 after a higher ballot: %s", c)
	}

	// the lower ballot is now refused.
	rd = s.step(acc(bal(1, 2), paxos.SlotCommand{Slot: 3, Ballot: bal(1, 2), Command: x}))
	if len(rd.Messages) != 1 || rd.Messages[0].Type != paxos.MsgNack || rd.Messages[0].Ballot != bal(2, 3) || rd.Messages[0].Refused != bal(1, 2) {
		t.Fatalf("refusal %v", rd.Messages)
	}
	if _, _, ok := a.Record(3); ok {
		t.Fatalf("a refused Accept left a record")
	}

	// votes, promise and watermark survive a restart.
	s.restart()
	a = s.node.Acceptor()
	if b, c, ok := a.Record(2); !ok || b != bal(1, 2) || !c.Equal(y) {
		t.Fatalf("record 2 after restart: %v %s %s", ok, b, c)
	}
	expectEq(t, "promise after restart", a.Promised(), bal(2, 3))
	expectEq(t, "watermark after restart", a.VoteWatermark(), paxos.Slot(2))
}

// Learning: a chosen value learned by catch-up is
// not a vote — it moves neither the promise nor the vote watermark — but it
// is made durable, and it overwrites a stale lower-ballot accept so that a
// restart never reports the stale one. An acceptor holding a chosen value at
// a higher ballot refuses to vote for a stale proposer's value there. The
// batch names the vote among its writes (Ready.Votes), never a learned value.
func TestUnitAcceptorLearnIsNotAVote(t *testing.T) {
	s := newSolo(t, journal.ModeMulti, soloOpts(), nil)
	x, stale := cmdOf("x"), cmdOf("stale")

	// slot 2 holds a stale vote at 1.2, and the batch names it a vote.
	rd := s.step(paxos.Message{Type: paxos.MsgAccept, From: 2, To: 1, Ballot: bal(1, 2),
		Entries: []paxos.SlotCommand{{Slot: 2, Ballot: bal(1, 2), Command: stale}}})
	expectEq(t, "watermark", s.node.Acceptor().VoteWatermark(), paxos.Slot(2))
	if len(rd.Votes) != 1 || rd.Votes[0].Slot != 2 || rd.Votes[0].Ballot != bal(1, 2) || !rd.Votes[0].Command.Equal(stale) {
		t.Fatalf("votes named for an admitted Accept: %v", rd.Votes)
	}

	// catch-up learns x at slot 1 and x at slot 2, chosen at 3.3.
	rd = s.step(paxos.Message{Type: paxos.MsgCatchUpResponse, From: 3, To: 1, Entries: []paxos.SlotCommand{
		{Slot: 1, Ballot: bal(3, 3), Command: x}, {Slot: 2, Ballot: bal(3, 3), Command: x}}})
	expectEq(t, "writes", opKinds(rd.Writes), "accept accept set-chosen-index")
	expectEq(t, "votes named for learned values", len(rd.Votes), 0)
	expectEq(t, "chosen", s.node.ChosenIndex(), paxos.Slot(2))
	expectEq(t, "committed", len(rd.Applied), 2)
	a := s.node.Acceptor()
	expectEq(t, "promise untouched by learning", a.Promised(), bal(1, 2))
	expectEq(t, "watermark untouched by learning", a.VoteWatermark(), paxos.Slot(2))
	if b, c, _ := s.store.Accepted(2); b != bal(3, 3) || !c.Equal(x) {
		t.Fatalf("durable slot 2: %s at %s, want the learned value", c, b)
	}

	// a stale proposer at 2.2 (above the promise) asks for a vote at slot 1:
	// the learned chosen value at 3.3 stays, and no vote is cast.
	rd = s.step(paxos.Message{Type: paxos.MsgAccept, From: 2, To: 1, Ballot: bal(2, 2),
		Entries: []paxos.SlotCommand{{Slot: 1, Ballot: bal(2, 2), Command: stale}}})
	expectEq(t, "votes for a stale proposer", len(ofType(rd.Messages, paxos.MsgAccepted)), 0)
	if b, c, _ := a.Record(1); b != bal(3, 3) || !c.Equal(x) {
		t.Fatalf("slot 1 after a stale Accept: %s at %s", c, b)
	}

	// a repeated page changes nothing.
	rd = s.step(paxos.Message{Type: paxos.MsgCatchUpResponse, From: 3, To: 1, Entries: []paxos.SlotCommand{
		{Slot: 2, Ballot: bal(3, 3), Command: x}}})
	expectEq(t, "writes on a repeated page", len(rd.Writes), 0)
}

// The acceptor: it refuses Prepare and Accept below its
// floor — a Nack naming the floor, never an under-reporting Promise, since
// the dropped slots would read as "nothing accepted".
func TestUnitAcceptorFloor(t *testing.T) {
	s := newSolo(t, journal.ModeMulti, soloOpts(), truncatedStore(t, 5, 9, 9))
	a := s.node.Acceptor()
	expectEq(t, "floor", a.Floor(), paxos.Slot(5))
	expectEq(t, "node floor", s.node.Floor(), paxos.Slot(5))
	expectEq(t, "chosen", s.node.ChosenIndex(), paxos.Slot(4))
	expectEq(t, "applied", s.node.Applied(), paxos.Slot(4))
	expectEq(t, "watermark", a.VoteWatermark(), paxos.Slot(4))
	expectEq(t, "last slot", a.LastSlot(), paxos.Slot(0))
	expectEq(t, "state", s.node.State().View(), journal.View{NextSeq: 9, FirstSeq: 9})

	rd := s.step(paxos.Message{Type: paxos.MsgPrepare, From: 2, To: 1, Ballot: bal(1, 2), Slot: 3})
	if len(rd.Messages) != 1 || rd.Messages[0].Type != paxos.MsgNack || rd.Messages[0].Slot != 5 {
		t.Fatalf("Prepare below the floor answered %v", rd.Messages)
	}
	expectEq(t, "promise after a refused Prepare", a.Promised(), paxos.Ballot{})
	rd = s.step(paxos.Message{Type: paxos.MsgPrepare, From: 2, To: 1, Ballot: bal(1, 2), Slot: 5})
	expectEq(t, "Prepare at the floor", len(ofType(rd.Messages, paxos.MsgPromise)), 1)

	// a catch-up request below the floor is answered with the trim point.
	rd = s.step(paxos.Message{Type: paxos.MsgCatchUpRequest, From: 3, To: 1, Slot: 2})
	if len(rd.Messages) != 1 || rd.Messages[0].Type != paxos.MsgTrimmedTo || rd.Messages[0].Slot != 5 ||
		rd.Messages[0].State.View() != (journal.View{NextSeq: 9, FirstSeq: 9}) {
		t.Fatalf("catch-up below the floor answered %v", rd.Messages)
	}
}

// The Ready contract. An idle node has nothing to
// hand out; a batch holding only the chosen index needs no sync.
func TestUnitReadyContract(t *testing.T) {
	s := newSolo(t, journal.ModeMulti, soloOpts(), nil)
	expectEq(t, "idle HasReady", s.node.HasReady(), false)
	rd := s.node.Ready()
	expectEq(t, "idle batch is empty", rd.IsEmpty(), true)
	s.node.Advance()

	x := cmdOf("x")
	s.step(paxos.Message{Type: paxos.MsgAccept, From: 2, To: 1, Ballot: bal(1, 2),
		Entries: []paxos.SlotCommand{{Slot: 1, Ballot: bal(1, 2), Command: x}}})
	s.node.Step(paxos.Message{Type: paxos.MsgHeartbeat, From: 2, To: 1, Ballot: bal(1, 2), Commit: 1})
	rd = s.node.Ready()
	expectEq(t, "writes", opKinds(rd.Writes), "set-chosen-index")
	expectEq(t, "must sync", rd.MustSync, false)
	expectEq(t, "committed", len(rd.Applied), 1)
	expectEq(t, "not empty", rd.IsEmpty(), false)
	acks := ofType(rd.Messages, paxos.MsgHeartbeatAck)
	if len(acks) != 1 || acks[0].Commit != 1 || acks[0].Watermark != 1 {
		t.Fatalf("heartbeat ack %v", rd.Messages)
	}
	s.node.Advance()
}
