package paxos_test

import (
	"slices"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage/memstore"
)

// CTRL (spec "Faulty records"): a damaged record is its own answer, never
// "nothing accepted". Node 1 of three boots with slot 1 damaged at ballot
// faultyAt; it campaigns, and the tests hand it the other nodes' promises.
func ctrlSolo(t *testing.T, faultyAt paxos.Ballot) *solo {
	t.Helper()
	st := memstore.New()
	st.Append([]paxos.WriteOp{{Kind: paxos.OpSetPromise, Ballot: faultyAt},
		{Kind: paxos.OpAccept, Slot: 1, Ballot: faultyAt, Command: cmdOf("lost")}})
	st.Sync()
	st.Rot(1)
	s := newSolo(t, journal.ModeMulti, soloOpts(), st)
	if b, ok := s.node.Acceptor().Faulty(1); !ok || b != faultyAt {
		t.Fatalf("faulty(1) = %s %v", b, ok)
	}
	return s
}

// promise hands node 1 one terminal Promise page at ballot b.
func (s *solo) promise(from paxos.NodeID, b paxos.Ballot, entries []paxos.SlotCommand, faulty []paxos.SlotBallot) paxos.Ready {
	return s.step(paxos.Message{Type: paxos.MsgPromise, From: from, To: 1, Ballot: b, Slot: 1, Entries: entries, Faulty: faulty})
}

// accepted is what node 1 sent to be voted at slot 1, if anything.
func acceptAt1(msgs []paxos.Message) (journal.Command, bool) {
	for _, m := range ofType(msgs, paxos.MsgAccept) {
		for _, e := range m.Entries {
			if e.Slot == 1 {
				return e.Command, true
			}
		}
	}
	return journal.Command{}, false
}

func TestCtrlPromiseReportsTheDamagedRecord(t *testing.T) {
	s := ctrlSolo(t, bal(1, 2))
	rd := s.step(paxos.Message{Type: paxos.MsgPrepare, From: 3, To: 1, Ballot: bal(2, 3), Slot: 1})
	ps := ofType(rd.Messages, paxos.MsgPromise)
	if len(ps) != 1 || len(ps[0].Entries) != 0 || len(ps[0].Faulty) != 1 || ps[0].Faulty[0] != (paxos.SlotBallot{Slot: 1, Ballot: bal(1, 2)}) {
		t.Fatalf("promise %v", rd.Messages)
	}
}

// The planted bug this pins: a quorum of {damaged acceptor, silent
// acceptor} must not decide a Noop. The leadership waits (case 3), asks the
// straggler again, and a report of the value settles it (case 1).
func TestCtrlWaitsThenReproposes(t *testing.T) {
	s := ctrlSolo(t, bal(1, 2))
	b, _ := s.campaign()
	rd := s.promise(2, b, nil, nil)
	expectEq(t, "role", s.node.Role(), "leader")
	if c, ok := acceptAt1(rd.Messages); ok {
		t.Fatalf("slot 1 proposed (%s) on a quorum holding the damaged record's silence", c)
	}
	expectEq(t, "ctrl waits", s.node.Counters().CtrlWaits, uint64(1))
	if r := s.node.Propose(journal.Entry{Records: [][]byte{[]byte("w")}}); r.Status != paxos.Busy {
		t.Fatalf("a write while the recovery waits: %v", r.Status)
	}
	rd = s.tick(2)
	asked := false
	for _, m := range ofType(rd.Messages, paxos.MsgPrepare) {
		asked = asked || m.To == 3 && m.Ballot == b
		if m.To == 2 {
			t.Fatalf("node 2, which answered, was asked again")
		}
	}
	if !asked {
		t.Fatalf("the straggler was not asked again: %v", rd.Messages)
	}
	x := cmdOf("lost")
	rd = s.promise(3, b, []paxos.SlotCommand{{Slot: 1, Ballot: bal(1, 2), Command: x}}, nil)
	if c, ok := acceptAt1(rd.Messages); !ok || !c.Equal(x) {
		t.Fatalf("slot 1 proposed %s %v, want the reported value", c, ok)
	}
	expectEq(t, "reproposed", s.node.Counters().CtrlReproposed, uint64(1))
	if _, c, ok := s.node.Acceptor().Record(1); !ok || !c.Equal(x) {
		t.Fatalf("the damaged acceptor did not write the value back as it voted: %s %v", c, ok)
	}
	if _, ok := s.node.Acceptor().Faulty(1); ok {
		t.Fatalf("the vote did not clear the damage")
	}
}

// Case 2: a whole Phase-1 quorum other than the damaged acceptor reports
// nothing: a Noop is safe.
func TestCtrlNoopOnAQualifyingQuorumOfNothing(t *testing.T) {
	s := ctrlSolo(t, bal(1, 2))
	b, _ := s.campaign()
	s.promise(2, b, nil, nil)
	rd := s.promise(3, b, nil, nil)
	if c, ok := acceptAt1(rd.Messages); !ok || c.Kind != journal.KindNoop {
		t.Fatalf("slot 1 proposed %s %v, want a Noop", c, ok)
	}
	expectEq(t, "noops", s.node.Counters().CtrlNoops, uint64(1))
}

// A value below the damaged record's ballot does not settle the slot by
// itself, but with a qualifying quorum it is the value to re-propose,
// never a Noop.
func TestCtrlLowerValueWithQualifyingQuorumIsReproposed(t *testing.T) {
	s := ctrlSolo(t, bal(2, 2))
	b, _ := s.campaign()
	w := cmdOf("older")
	rd := s.promise(2, b, []paxos.SlotCommand{{Slot: 1, Ballot: bal(1, 1), Command: w}}, nil)
	if c, ok := acceptAt1(rd.Messages); ok {
		t.Fatalf("slot 1 proposed %s while only {2} qualifies", c)
	}
	rd = s.promise(3, b, nil, nil)
	if c, ok := acceptAt1(rd.Messages); !ok || !c.Equal(w) {
		t.Fatalf("slot 1 proposed %s %v, want the lower value", c, ok)
	}
}

// A damaged record at or below the best value's ballot qualifies: no wait.
func TestCtrlDamageBelowTheBestValueDoesNotBlock(t *testing.T) {
	s := ctrlSolo(t, bal(1, 2))
	b, _ := s.campaign()
	x := cmdOf("x")
	rd := s.promise(2, b, []paxos.SlotCommand{{Slot: 1, Ballot: bal(1, 2), Command: x}}, nil)
	if c, ok := acceptAt1(rd.Messages); !ok || !c.Equal(x) {
		t.Fatalf("slot 1 proposed %s %v", c, ok)
	}
	expectEq(t, "waits", s.node.Counters().CtrlWaits, uint64(0))
}

// Beyond the budget: every acceptor answered and no qualifying quorum
// exists. The leadership halts and names the slot; nothing is proposed.
func TestCtrlUnrecoverableHalts(t *testing.T) {
	s := ctrlSolo(t, bal(1, 2))
	b, _ := s.campaign()
	s.promise(2, b, nil, []paxos.SlotBallot{{Slot: 1, Ballot: bal(1, 2)}})
	rd := s.promise(3, b, nil, nil)
	if c, ok := acceptAt1(rd.Messages); ok {
		t.Fatalf("slot 1 proposed %s beyond the budget", c)
	}
	expectEq(t, "role", s.node.Role(), "follower")
	if got := s.node.Unrecoverable(); !slices.Equal(got, []paxos.Slot{1}) {
		t.Fatalf("unrecoverable %v", got)
	}
}

// A straggler that never answers holds a leadership for a bounded time.
func TestCtrlResignsAfterItsBudget(t *testing.T) {
	s := ctrlSolo(t, bal(1, 2))
	b, _ := s.campaign()
	s.promise(2, b, nil, nil)
	expectEq(t, "role", s.node.Role(), "leader")
	for i := 0; i < 100 && s.node.IsLeader(); i++ {
		s.tick(1)
		s.step(paxos.Message{Type: paxos.MsgHeartbeatAck, From: 2, To: 1, Ballot: b})
	}
	expectEq(t, "role", s.node.Role(), "follower")
	expectEq(t, "resigned", s.node.Counters().CtrlResigned, uint64(1))
}
