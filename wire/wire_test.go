package wire

// These tests check that every core message and command survives the trip
// through protobuf bytes unchanged, and that hostile bytes are refused with
// ErrMalformed and never panic (FuzzDeliver).

import (
	"errors"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
)

func sampleMessages() []paxos.Message {
	u := journal.LeaderUUID{Hi: 7, Lo: 9}
	st, _ := journal.Restore(u, 3, 40, 12)
	cmds := []journal.Command{
		journal.Write(journal.Entry{Leader: u, Seq: 5, Records: [][]byte{[]byte("a"), {}, []byte("ccc")}}),
		journal.Truncate(u, 9), journal.SetLeader(u, journal.LeaderUUID{}), journal.Noop(),
	}
	var entries []paxos.SlotCommand
	for i, c := range cmds {
		entries = append(entries, paxos.SlotCommand{Slot: uint64(i + 1), Ballot: paxos.Ballot{Round: 2, Node: 1}, Command: c})
	}
	b := paxos.Ballot{Round: 4, Node: 2}
	return []paxos.Message{
		{Type: paxos.MsgPrepare, From: 2, To: 1, Ballot: b, Slot: 3},
		{Type: paxos.MsgPromise, From: 1, To: 2, Ballot: b, Slot: 3, Next: 9, Entries: entries, Faulty: []paxos.SlotBallot{{Slot: 7, Ballot: b}}},
		{Type: paxos.MsgAccept, From: 2, To: 3, Ballot: b, Entries: entries},
		{Type: paxos.MsgAccepted, From: 3, To: 2, Ballot: b, Votes: []paxos.SlotVote{{Slot: 1, VHash: 99}}},
		{Type: paxos.MsgNack, From: 3, To: 2, Ballot: b, Refused: paxos.Ballot{Round: 1, Node: 2}, Slot: 4},
		{Type: paxos.MsgCommit, From: 2, To: 3, Ballot: b, Commit: 17},
		{Type: paxos.MsgTrimmedTo, From: 2, To: 3, Slot: 10, State: st},
		{Type: paxos.MsgPreReadAck, From: 2, To: 3, Ctx: 77, Watermark: 12},
	}
}

func TestMessagesRoundTripThroughBytes(t *testing.T) {
	jid := journal.ID{Tenant: 1, Journal: 2}
	var batch []host.Envelope
	for _, m := range sampleMessages() {
		m.From = 2
		batch = append(batch, host.Envelope{Journal: jid, Msg: m})
	}
	raw, err := proto.Marshal(DeliverToPB(2, batch))
	if err != nil {
		t.Fatal(err)
	}
	var d pb.Deliver
	if err := proto.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	from, got, err := DeliverFromPB(&d)
	if err != nil || from != 2 {
		t.Fatalf("decode: %v from %d", err, from)
	}
	for i := range batch {
		w, g := batch[i].Msg, got[i].Msg
		if g.Type != w.Type || g.Ballot != w.Ballot || g.Refused != w.Refused || g.Slot != w.Slot || g.Next != w.Next ||
			g.Commit != w.Commit || g.Watermark != w.Watermark || g.Ctx != w.Ctx || g.State != w.State ||
			!reflect.DeepEqual(g.Votes, w.Votes) || !reflect.DeepEqual(g.Faulty, w.Faulty) || len(g.Entries) != len(w.Entries) {
			t.Fatalf("message %d: %+v became %+v", i, w, g)
		}
		for k := range w.Entries {
			if !g.Entries[k].Command.Equal(w.Entries[k].Command) || g.Entries[k].Ballot != w.Entries[k].Ballot {
				t.Fatalf("entry %d of message %d differs", k, i)
			}
		}
	}
}

func TestDeliverRefusesForgedSenderAndUnsetJournal(t *testing.T) {
	m := sampleMessages()[0]
	forged := DeliverToPB(3, []host.Envelope{{Journal: journal.ID{Tenant: 1, Journal: 2}, Msg: m}})
	if _, _, err := DeliverFromPB(forged); !errors.Is(err, ErrMalformed) {
		t.Fatalf("forged sender: %v", err)
	}
	m.From = 2
	unset := DeliverToPB(2, []host.Envelope{{Journal: journal.ID{Tenant: 1}, Msg: m}})
	if _, _, err := DeliverFromPB(unset); !errors.Is(err, ErrMalformed) {
		t.Fatalf("unset journal: %v", err)
	}
	bad := &pb.Deliver{From: 2, Envelopes: []*pb.Envelope{{Journal: &pb.JournalId{Tenant: 1, Journal: 2},
		Msg: &pb.ConsensusMessage{Type: 99, From: 2, To: 1}}}}
	if _, _, err := DeliverFromPB(bad); !errors.Is(err, ErrMalformed) {
		t.Fatalf("unknown type: %v", err)
	}
}

func TestVerdictMarksAmbiguity(t *testing.T) {
	cases := []journal.Reply{
		{Outcome: journal.Outcome{Kind: journal.Accepted, Seq: 4, Count: 2}},
		{NoVerdict: journal.NotLeader, LeaderHint: 3},
		{NoVerdict: journal.Lost},
		{Outcome: journal.Outcome{Kind: journal.Unheld}},
	}
	for _, r := range cases {
		v := VerdictToPB(r)
		if v.GetAmbiguous() != r.Ambiguous() {
			t.Fatalf("%+v: ambiguous %v", r, v.GetAmbiguous())
		}
		back := VerdictFromPB(v)
		if back.Outcome.Kind != r.Outcome.Kind || back.NoVerdict != r.NoVerdict || back.Ambiguous() != r.Ambiguous() {
			t.Fatalf("%+v came back as %+v", r, back)
		}
	}
}

// outOfRange are messages whose numbers pass the core's bounds: the
// probe's Commit at round 2^64-1 (one such message once crashed every
// machine of a cell), and each other field at its first value past the
// bound.
func outOfRange() []paxos.Message {
	top := paxos.Ballot{Round: ^uint64(0), Node: 2}
	past := paxos.Ballot{Round: paxos.BallotRoundMax + 1, Node: 2}
	e := []paxos.SlotCommand{{Slot: paxos.SlotMax + 1, Ballot: paxos.Ballot{Round: 1, Node: 2}, Command: journal.Noop()}}
	return []paxos.Message{
		{Type: paxos.MsgCommit, From: 2, To: 1, Ballot: top, Commit: 1},
		{Type: paxos.MsgPrepare, From: 2, To: 1, Ballot: past, Slot: 1},
		{Type: paxos.MsgNack, From: 2, To: 1, Ballot: paxos.Ballot{Round: 1, Node: 2}, Refused: past},
		{Type: paxos.MsgHeartbeat, From: 2, To: 1, Ballot: paxos.Ballot{Round: 1, Node: 2}, Commit: paxos.SlotMax + 1},
		{Type: paxos.MsgAccept, From: 2, To: 1, Ballot: paxos.Ballot{Round: 1, Node: 2}, Entries: e},
		{Type: paxos.MsgAccepted, From: 2, To: 1, Ballot: paxos.Ballot{Round: 1, Node: 2}, Votes: []paxos.SlotVote{{Slot: ^uint64(0)}}},
		{Type: paxos.MsgPromise, From: 2, To: 1, Ballot: paxos.Ballot{Round: 1, Node: 1}, Slot: 1, Faulty: []paxos.SlotBallot{{Slot: 1, Ballot: top}}},
		{Type: paxos.MsgPreReadAck, From: 2, To: 1, Ctx: 1, Watermark: ^uint64(0)},
		{Type: paxos.MsgPromise, From: 2, To: 1, Ballot: paxos.Ballot{Round: 1, Node: 1}, Slot: 1, Next: paxos.SlotMax + 1},
	}
}

func TestNumbersAboveTheCoreBoundsAreMalformed(t *testing.T) {
	jid := journal.ID{Tenant: 1, Journal: 2}
	for _, m := range outOfRange() {
		raw, err := proto.Marshal(DeliverToPB(2, []host.Envelope{{Journal: jid, Msg: m}}))
		if err != nil {
			t.Fatal(err)
		}
		var d pb.Deliver
		if err := proto.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		if _, _, err := DeliverFromPB(&d); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: decoded (err %v), want ErrMalformed", m, err)
		}
	}
	// The bounds themselves are in range.
	edge := paxos.Message{Type: paxos.MsgCommit, From: 2, To: 1, Ballot: paxos.Ballot{Round: paxos.BallotRoundMax, Node: 2}, Commit: paxos.SlotMax}
	raw, _ := proto.Marshal(DeliverToPB(2, []host.Envelope{{Journal: jid, Msg: edge}}))
	var d pb.Deliver
	_ = proto.Unmarshal(raw, &d)
	if _, _, err := DeliverFromPB(&d); err != nil {
		t.Errorf("the bounds themselves were refused: %v", err)
	}
}

func FuzzDeliver(f *testing.F) {
	jid := journal.ID{Tenant: 1, Journal: 2}
	for _, m := range append(sampleMessages(), outOfRange()...) {
		m.From = 2
		raw, _ := proto.Marshal(DeliverToPB(2, []host.Envelope{{Journal: jid, Msg: m}}))
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var d pb.Deliver
		if proto.Unmarshal(raw, &d) != nil {
			return
		}
		_, batch, err := DeliverFromPB(&d)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		for _, e := range batch {
			if !e.Journal.IsSet() || e.Msg.From == 0 || e.Msg.Validate() != nil {
				t.Fatal("decoded an envelope the core must never see")
			}
			for _, sc := range e.Msg.Entries {
				if !sc.Command.Valid() {
					t.Fatal("decoded an invalid command")
				}
			}
		}
	})
}
