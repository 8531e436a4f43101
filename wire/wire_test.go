package wire

// These tests check that every core message and command survives the trip
// through protobuf bytes unchanged, Matchmaker Paxos fields and scrub pages
// included, and that hostile bytes are refused with ErrMalformed and never
// panic (FuzzDeliver): out-of-range numbers, acceptor configurations the
// core could not have built (quorum.New refuses them), and scrub pages
// paxos.Message.Validate refuses.

import (
	"errors"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/host"
)

func mustSystem(members []quorum.ID, spec quorum.Spec) quorum.System {
	s, err := quorum.New(members, spec)
	if err != nil {
		panic(err)
	}
	return s
}

// One system of each kind; the members are out of order on purpose
// (quorum.New sorts them, and the decoder must rebuild the same system).
var (
	majority3 = mustSystem([]quorum.ID{3, 1, 2}, quorum.Spec{Kind: quorum.KindMajority})
	flexible4 = mustSystem([]quorum.ID{4, 2, 3, 1}, quorum.Spec{Kind: quorum.KindFlexible, Q1: 3, Q2: 2})
	grid6     = mustSystem([]quorum.ID{1, 2, 3, 4, 5, 6}, quorum.Spec{Kind: quorum.KindGrid, Rows: 2, Cols: 3})
)

// withMatchmakerFields sets every Matchmaker Paxos field of m.
func withMatchmakerFields(m paxos.Message) paxos.Message {
	m.Config = grid6
	m.Since = paxos.Ballot{Round: 2, Node: 3}
	m.History = []paxos.Registration{
		{Ballot: paxos.Ballot{Round: 2, Node: 3}, Acceptors: majority3, Reconfiguration: true},
		{Ballot: paxos.Ballot{Round: 3, Node: 1}, Acceptors: flexible4},
	}
	m.Effective = paxos.Registration{Ballot: paxos.Ballot{Round: 2, Node: 3}, Acceptors: majority3, Reconfiguration: true}
	m.GC = paxos.Ballot{Round: 1, Node: 2}
	m.Reconf = true
	m.Refusal = paxos.MatchBelowWatermark
	return m
}

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
		// Matchmaker Paxos, as the core sends them (core/paxos/message.go).
		{Type: paxos.MsgPrepare, From: 2, To: 1, Ballot: b, Slot: 3, Config: flexible4, Since: paxos.Ballot{Round: 2, Node: 3}},
		{Type: paxos.MsgHeartbeat, From: 2, To: 1, Ballot: b, Commit: 5, Config: grid6, Since: paxos.Ballot{Round: 2, Node: 3}},
		{Type: paxos.MsgPreReadAck, From: 2, To: 3, Ctx: 77, Watermark: 12, Since: paxos.Ballot{Round: 2, Node: 3}},
		{Type: paxos.MsgMatch, From: 2, To: 9, Ballot: b, Config: majority3, Reconf: true},
		{Type: paxos.MsgProbe, From: 2, To: 9},
		{Type: paxos.MsgMatchReply, From: 9, To: 2, Ballot: b, Refusal: paxos.MatchStale, Refused: paxos.Ballot{Round: 5, Node: 1},
			GC: paxos.Ballot{Round: 1, Node: 2}, History: []paxos.Registration{{Ballot: paxos.Ballot{Round: 3, Node: 1}, Acceptors: grid6}},
			Effective: paxos.Registration{Ballot: paxos.Ballot{Round: 2, Node: 3}, Acceptors: flexible4, Reconfiguration: true}},
		{Type: paxos.MsgMatchReply, From: 9, To: 2, Ballot: b, Refusal: paxos.MatchClosed},
		{Type: paxos.MsgMatch, From: 2, To: 9, Ballot: b, Config: majority3, Prepared: paxos.Ballot{Round: 1, Node: 2}},
		{Type: paxos.MsgMatch, From: 2, To: 9, Ballot: b, Prepared: paxos.Ballot{Round: 1, Node: 2}},
		{Type: paxos.MsgMatchReply, From: 9, To: 2, Ballot: b, Refusal: paxos.MatchRetracted},
		{Type: paxos.MsgMatch, From: 2, To: 9, Ballot: b, Config: majority3, Generation: 3},
		{Type: paxos.MsgMatchReply, From: 9, To: 2, Ballot: b, Refusal: paxos.MatchStopped, Generation: 3,
			Successor: paxos.MatchmakerSet{Generation: 4, Members: []paxos.NodeID{2, 9, 11}}},
		{Type: paxos.MsgMatchReply, From: 9, To: 2, Ballot: b, Refusal: paxos.MatchStopped, Generation: 3},
		{Type: paxos.MsgMatchReply, From: 9, To: 2, Refusal: paxos.MatchInactive, Generation: 7},
		{Type: paxos.MsgGarbageCollect, From: 2, To: 9, GC: b},
		{Type: paxos.MsgGarbageCollectAck, From: 9, To: 2, GC: b},
		// Every new type with every new field set.
		withMatchmakerFields(paxos.Message{Type: paxos.MsgMatch, From: 2, To: 9, Ballot: b}),
		withMatchmakerFields(paxos.Message{Type: paxos.MsgMatchReply, From: 9, To: 2, Ballot: b, Refused: b}),
		withMatchmakerFields(paxos.Message{Type: paxos.MsgGarbageCollect, From: 2, To: 9}),
		withMatchmakerFields(paxos.Message{Type: paxos.MsgGarbageCollectAck, From: 9, To: 2}),
		withMatchmakerFields(paxos.Message{Type: paxos.MsgProbe, From: 2, To: 9}),
		// The scrubber, as the core sends them (core/paxos/scrub.go).
		{Type: paxos.MsgScrub, From: 2, To: 3, Ballot: b, Slot: 10, Next: 20},
		{Type: paxos.MsgScrubReply, From: 3, To: 2, Ballot: b, Slot: 10, Next: 20},
		{Type: paxos.MsgScrubReply, From: 3, To: 2, Ballot: b, Slot: 10, Next: 20, Scrub: []paxos.ScrubEntry{
			{Slot: 10, Ballot: paxos.Ballot{Round: 2, Node: 1}, Hash: 0xffffffff},
			{Slot: 11, Ballot: paxos.Ballot{Round: 2, Node: 1}, Damaged: true},
			{Slot: 19, Ballot: b, Hash: 0},
		}},
		// Proxy leaders (core/paxos/proxy.go): a delegation, a fan-out, a
		// proxy's Commit.
		{Type: paxos.MsgAccept, From: 2, To: 7, Ballot: b, Entries: entries, Config: grid6},
		{Type: paxos.MsgAccept, From: 7, To: 3, Ballot: b, Entries: entries, Leader: 2},
		{Type: paxos.MsgCommit, From: 7, To: 3, Ballot: b, Entries: entries, Leader: 2},
		// Cooperative handoff (core/paxos/node_handoff.go).
		{Type: paxos.MsgRelinquish, From: 2, To: 3, Ballot: b, Slot: 1, Next: 5, Watermark: 3,
			Decided: entries[:2], Entries: entries[2:]},
		{Type: paxos.MsgRelinquish, From: 2, To: 3, Ballot: b, Slot: 1, Next: 5, Watermark: 3,
			Decided: entries[:1], Entries: entries[1:], Config: grid6, Since: paxos.Ballot{Round: 2, Node: 3}},
	}
}

// fullScrubReply answers the longest legal page with one entry a slot,
// from node 2 (the sender roundTrip uses).
func fullScrubReply() paxos.Message {
	m := paxos.Message{Type: paxos.MsgScrubReply, From: 2, To: 1, Ballot: paxos.Ballot{Round: 4, Node: 2},
		Slot: 1, Next: 1 + paxos.ScrubPageSlotsMax}
	for s := m.Slot; s < m.Next; s++ {
		m.Scrub = append(m.Scrub, paxos.ScrubEntry{Slot: s, Ballot: m.Ballot, Hash: uint32(s) * 2654435761, Damaged: s%97 == 0})
		if m.Scrub[len(m.Scrub)-1].Damaged {
			m.Scrub[len(m.Scrub)-1].Hash = 0
		}
	}
	return m
}

func sameRegistration(w, g paxos.Registration) bool {
	return w.Ballot == g.Ballot && w.Reconfiguration == g.Reconfiguration && w.Acceptors.IsZero() == g.Acceptors.IsZero() &&
		paxos.SameSystem(w.Acceptors, g.Acceptors)
}

// sameMessage reports whether g carries every field of w.
func sameMessage(w, g paxos.Message) bool {
	if g.Type != w.Type || g.From != w.From || g.To != w.To || g.Leader != w.Leader || g.Ballot != w.Ballot || g.Refused != w.Refused ||
		g.Slot != w.Slot || g.Next != w.Next || g.Commit != w.Commit || g.Watermark != w.Watermark || g.Ctx != w.Ctx ||
		g.State != w.State || !reflect.DeepEqual(g.Votes, w.Votes) || !reflect.DeepEqual(g.Faulty, w.Faulty) ||
		!reflect.DeepEqual(g.Scrub, w.Scrub) || !sameEntries(g.Entries, w.Entries) || !sameEntries(g.Decided, w.Decided) {
		return false
	}
	if g.Config.IsZero() != w.Config.IsZero() || !paxos.SameSystem(g.Config, w.Config) || g.Since != w.Since ||
		g.GC != w.GC || g.Reconf != w.Reconf || g.Refusal != w.Refusal || !sameRegistration(w.Effective, g.Effective) ||
		len(g.History) != len(w.History) {
		return false
	}
	for k := range w.History {
		if !sameRegistration(w.History[k], g.History[k]) {
			return false
		}
	}
	return true
}

func sameEntries(g, w []paxos.SlotCommand) bool {
	if len(g) != len(w) {
		return false
	}
	for k := range w {
		if !g[k].Command.Equal(w[k].Command) || g[k].Ballot != w[k].Ballot || g[k].Slot != w[k].Slot {
			return false
		}
	}
	return true
}

// roundTrip sends one message from node 2 through protobuf bytes.
func roundTrip(t *testing.T, m paxos.Message) (paxos.Message, error) {
	t.Helper()
	raw, err := proto.Marshal(DeliverToPB(2, []host.Envelope{{Journal: journal.ID{Tenant: 1, Journal: 2}, Msg: m}}))
	if err != nil {
		t.Fatal(err)
	}
	var d pb.Deliver
	if err := proto.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	_, got, err := DeliverFromPB(&d)
	if err != nil {
		return paxos.Message{}, err
	}
	return got[0].Msg, nil
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
	if len(got) != len(batch) {
		t.Fatalf("%d messages became %d", len(batch), len(got))
	}
	for i := range batch {
		if w, g := batch[i].Msg, got[i].Msg; !sameMessage(w, g) {
			t.Fatalf("message %d: %+v became %+v", i, w, g)
		}
	}
}

// TestMsgTypeNumbersMatchTheCore checks the frozen numbers of the Matchmaker
// Paxos and scrubber types: the core's MsgType and the wire's enum must
// agree.
func TestMsgTypeNumbersMatchTheCore(t *testing.T) {
	pairs := map[paxos.MsgType]pb.MsgType{
		paxos.MsgMatch: pb.MsgType_MSG_TYPE_MATCH, paxos.MsgMatchReply: pb.MsgType_MSG_TYPE_MATCH_REPLY,
		paxos.MsgGarbageCollect: pb.MsgType_MSG_TYPE_GARBAGE_COLLECT, paxos.MsgGarbageCollectAck: pb.MsgType_MSG_TYPE_GARBAGE_COLLECT_ACK,
		paxos.MsgProbe: pb.MsgType_MSG_TYPE_PROBE,
		paxos.MsgScrub: pb.MsgType_MSG_TYPE_SCRUB, paxos.MsgScrubReply: pb.MsgType_MSG_TYPE_SCRUB_REPLY,
		paxos.MsgRelinquish: pb.MsgType_MSG_TYPE_RELINQUISH, paxos.MsgHeartbeatAck: pb.MsgType_MSG_TYPE_HEARTBEAT_ACK,
	}
	for c, w := range pairs {
		if int32(c) != int32(w) {
			t.Errorf("%s is %d in the core and %d on the wire", c, c, w)
		}
	}
}

// TestPlainMessagesCarryNoMatchmakerBytes checks that a plain deployment's
// message leaves every Matchmaker Paxos field unset on the wire, and that
// an absent configuration decodes to the zero System.
func TestPlainMessagesCarryNoMatchmakerBytes(t *testing.T) {
	// Arrange: a plain Prepare, as a deployment without matchmakers sends it.
	m := paxos.Message{Type: paxos.MsgPrepare, From: 2, To: 1, Ballot: paxos.Ballot{Round: 4, Node: 2}, Slot: 3}

	// Act.
	p := MessageToPB(m)
	got, err := roundTrip(t, m)

	// Check.
	if p.Config != nil || p.Since != nil || p.History != nil || p.Effective != nil || p.Gc != nil || p.Reconf || p.Refusal != 0 || p.Scrub != nil {
		t.Fatalf("plain message carries matchmaker fields: %v", p)
	}
	if err != nil || !got.Config.IsZero() || !got.Effective.IsZero() || !got.Effective.Acceptors.IsZero() || got.History != nil {
		t.Fatalf("plain message came back as %+v (err %v)", got, err)
	}
}

// malformedConfigs are acceptor configurations quorum.New refuses, each
// named by the fault.
func malformedConfigs() map[string]*pb.AcceptorConfig {
	return map[string]*pb.AcceptorConfig{
		"empty":            {},
		"empty flexible":   {QuorumSystem: pb.QuorumSystem_QUORUM_SYSTEM_FLEXIBLE, Phase1Quorum: 1, Phase2Quorum: 1},
		"duplicate member": {Members: []uint64{1, 2, 2}},
		"zero member":      {Members: []uint64{0, 1, 2}},
		"non-intersecting": {Members: []uint64{1, 2, 3, 4}, QuorumSystem: pb.QuorumSystem_QUORUM_SYSTEM_FLEXIBLE, Phase1Quorum: 2, Phase2Quorum: 2},
		"quorum too large": {Members: []uint64{1, 2, 3}, QuorumSystem: pb.QuorumSystem_QUORUM_SYSTEM_FLEXIBLE, Phase1Quorum: 4, Phase2Quorum: 1},
		"grid shape":       {Members: []uint64{1, 2, 3, 4, 5}, QuorumSystem: pb.QuorumSystem_QUORUM_SYSTEM_GRID, Rows: 2, Cols: 3},
		"grid wraps":       {Members: []uint64{1, 2, 3, 4, 5, 6, 7}, QuorumSystem: pb.QuorumSystem_QUORUM_SYSTEM_GRID, Rows: 7, Cols: 0},
		"unknown kind":     {Members: []uint64{1, 2, 3}, QuorumSystem: 7},
		"65 members": {Members: func() []uint64 {
			m := make([]uint64, 65)
			for i := range m {
				m[i] = uint64(i + 1)
			}
			return m
		}()},
	}
}

// TestMalformedConfigsAreRefused checks that a configuration the core could
// not have built is refused wherever the message carries one: its Config,
// a History registration, or its Effective registration.
func TestMalformedConfigsAreRefused(t *testing.T) {
	b := &pb.Ballot{Round: 4, Node: 2}
	for name, c := range malformedConfigs() {
		carriers := map[string]*pb.ConsensusMessage{
			"config":    {Type: pb.MsgType_MSG_TYPE_MATCH, From: 2, To: 9, Ballot: b, Config: c},
			"history":   {Type: pb.MsgType_MSG_TYPE_MATCH_REPLY, From: 2, To: 9, Ballot: b, History: []*pb.Registration{{Ballot: b, Config: c}}},
			"effective": {Type: pb.MsgType_MSG_TYPE_MATCH_REPLY, From: 2, To: 9, Ballot: b, Effective: &pb.Registration{Ballot: b, Config: c}},
		}
		for where, m := range carriers {
			if _, err := MessageFromPB(m); !errors.Is(err, ErrMalformed) {
				t.Errorf("%s config in %s: err %v, want ErrMalformed", name, where, err)
			}
		}
	}
}

// TestMatchmakerNumbersAreBounded checks the refusal's range (checked
// before the narrowing to the core's uint8) and the history's bound.
func TestMatchmakerNumbersAreBounded(t *testing.T) {
	b := &pb.Ballot{Round: 4, Node: 2}
	for _, r := range []uint32{uint32(paxos.MatchInactive) + 1, 255, 256, 259, ^uint32(0)} {
		m := &pb.ConsensusMessage{Type: pb.MsgType_MSG_TYPE_MATCH_REPLY, From: 9, To: 2, Ballot: b, Refusal: r}
		if _, err := MessageFromPB(m); !errors.Is(err, ErrMalformed) {
			t.Errorf("refusal %d: err %v, want ErrMalformed", r, err)
		}
	}
	reg := &pb.Registration{Ballot: b, Config: ConfigToPB(majority3)}
	long := &pb.ConsensusMessage{Type: pb.MsgType_MSG_TYPE_MATCH_REPLY, From: 9, To: 2, Ballot: b, History: make([]*pb.Registration, HistoryMax+1)}
	for i := range long.History {
		long.History[i] = reg
	}
	if _, err := MessageFromPB(long); !errors.Is(err, ErrMalformed) {
		t.Errorf("%d registrations: err %v, want ErrMalformed", len(long.History), err)
	}
	long.History = long.History[:HistoryMax]
	if _, err := MessageFromPB(long); err != nil {
		t.Errorf("%d registrations refused: %v", len(long.History), err)
	}
	// A registration without a configuration is refused in a history
	// (the core's Validate) and as the effective one.
	for _, m := range []*pb.ConsensusMessage{
		{Type: pb.MsgType_MSG_TYPE_MATCH_REPLY, From: 9, To: 2, Ballot: b, History: []*pb.Registration{{Ballot: b}}},
		{Type: pb.MsgType_MSG_TYPE_MATCH_REPLY, From: 9, To: 2, Ballot: b, Effective: &pb.Registration{Ballot: b}},
	} {
		if _, err := MessageFromPB(m); !errors.Is(err, ErrMalformed) {
			t.Errorf("registration without a configuration: err %v, want ErrMalformed", err)
		}
	}
}

// malformedScrubPages are scrub messages paxos.Message.Validate refuses,
// each named by the fault.
func malformedScrubPages() map[string]paxos.Message {
	b := paxos.Ballot{Round: 4, Node: 2}
	reply := func(es ...paxos.ScrubEntry) paxos.Message {
		return paxos.Message{Type: paxos.MsgScrubReply, From: 2, To: 1, Ballot: b, Slot: 10, Next: 20, Scrub: es}
	}
	return map[string]paxos.Message{
		"no ballot":          {Type: paxos.MsgScrub, From: 2, To: 1, Slot: 10, Next: 20},
		"page from slot 0":   {Type: paxos.MsgScrub, From: 2, To: 1, Ballot: b, Slot: 0, Next: 20},
		"page end at start":  {Type: paxos.MsgScrub, From: 2, To: 1, Ballot: b, Slot: 10, Next: 10},
		"page too long":      {Type: paxos.MsgScrub, From: 2, To: 1, Ballot: b, Slot: 10, Next: 11 + paxos.ScrubPageSlotsMax},
		"entry outside page": reply(paxos.ScrubEntry{Slot: 20, Ballot: b}),
		"entry zero ballot":  reply(paxos.ScrubEntry{Slot: 11}),
		"entries unsorted":   reply(paxos.ScrubEntry{Slot: 12, Ballot: b}, paxos.ScrubEntry{Slot: 11, Ballot: b}),
		"damaged with hash":  reply(paxos.ScrubEntry{Slot: 11, Ballot: b, Hash: 5, Damaged: true}),
	}
}

// TestScrubPagesAreBounded checks that a legal full page decodes, that one
// entry more is refused before the core sees it (ScrubEntriesMax), and
// that every page shape the core refuses is refused on the wire.
func TestScrubPagesAreBounded(t *testing.T) {
	// Arrange.
	full := fullScrubReply()
	over := MessageToPB(full)
	over.Scrub = append(over.Scrub, over.Scrub[0])

	// Act.
	got, err := roundTrip(t, full)
	_, overErr := MessageFromPB(over)

	// Check.
	if err != nil || !sameMessage(full, got) {
		t.Fatalf("a full page of %d entries did not survive: err %v", len(full.Scrub), err)
	}
	if !errors.Is(overErr, ErrMalformed) {
		t.Errorf("%d scrub entries: err %v, want ErrMalformed", len(over.Scrub), overErr)
	}
	for name, m := range malformedScrubPages() {
		if _, err := roundTrip(t, m); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err %v, want ErrMalformed", name, err)
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
		{Type: paxos.MsgPrepare, From: 2, To: 1, Ballot: paxos.Ballot{Round: 1, Node: 2}, Config: majority3, Since: past},
		{Type: paxos.MsgGarbageCollect, From: 2, To: 9, GC: top},
		{Type: paxos.MsgMatchReply, From: 2, To: 1, Ballot: paxos.Ballot{Round: 1, Node: 2},
			History: []paxos.Registration{{Ballot: past, Acceptors: majority3}}},
		{Type: paxos.MsgMatchReply, From: 2, To: 1, Ballot: paxos.Ballot{Round: 1, Node: 2},
			Effective: paxos.Registration{Ballot: past, Acceptors: majority3, Reconfiguration: true}},
		{Type: paxos.MsgMatchReply, From: 2, To: 1, Ballot: paxos.Ballot{Round: 1, Node: 2}, Refusal: paxos.MatchInactive + 1},
		{Type: paxos.MsgMatch, From: 2, To: 9, Ballot: paxos.Ballot{Round: 1, Node: 2}, Config: majority3, Generation: paxos.GenerationMax + 1},
		{Type: paxos.MsgMatchReply, From: 9, To: 2, Ballot: paxos.Ballot{Round: 1, Node: 2}, Refusal: paxos.MatchStopped,
			Successor: paxos.MatchmakerSet{Generation: 2, Members: []paxos.NodeID{3, 1}}},
		{Type: paxos.MsgMatchReply, From: 9, To: 2, Ballot: paxos.Ballot{Round: 1, Node: 2}, Refusal: paxos.MatchGeneration,
			Successor: paxos.MatchmakerSet{Members: []paxos.NodeID{1}}},
		{Type: paxos.MsgMatch, From: 2, To: 9, Ballot: paxos.Ballot{Round: 1, Node: 2}, Config: majority3, Prepared: top},
		{Type: paxos.MsgScrub, From: 2, To: 1, Ballot: paxos.Ballot{Round: 1, Node: 2}, Slot: paxos.SlotMax, Next: paxos.SlotMax + 1},
		{Type: paxos.MsgScrubReply, From: 2, To: 1, Ballot: paxos.Ballot{Round: 1, Node: 2}, Slot: 1, Next: 2,
			Scrub: []paxos.ScrubEntry{{Slot: 1, Ballot: past}}},
		{Type: paxos.MsgRelinquish, From: 2, To: 1, Ballot: paxos.Ballot{Round: 1, Node: 2}, Slot: 1, Next: 2, Decided: e},
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
	for _, m := range malformedScrubPages() {
		raw, _ := proto.Marshal(DeliverToPB(2, []host.Envelope{{Journal: jid, Msg: m}}))
		f.Add(raw)
	}
	// No full page here: a 100 KB seed stalls the fuzzer in minimization
	// (TestScrubPagesAreBounded checks the full page and its count bound).
	for _, c := range malformedConfigs() {
		d := &pb.Deliver{From: 2, Envelopes: []*pb.Envelope{{Journal: JournalIDToPB(jid),
			Msg: &pb.ConsensusMessage{Type: pb.MsgType_MSG_TYPE_MATCH, From: 2, To: 9, Ballot: &pb.Ballot{Round: 1, Node: 2}, Config: c}}}}
		raw, _ := proto.Marshal(d)
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
			// Every decoded configuration is one quorum.New builds.
			systems := []quorum.System{e.Msg.Config, e.Msg.Effective.Acceptors}
			for _, r := range e.Msg.History {
				systems = append(systems, r.Acceptors)
			}
			for _, s := range systems {
				if s.IsZero() {
					continue
				}
				if _, err := quorum.New(s.Members(), s.Spec()); err != nil {
					t.Fatalf("decoded a configuration quorum.New refuses: %v", err)
				}
			}
		}
	})
}
