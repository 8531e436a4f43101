package paxos_test

// This file feeds a node input no well-behaved peer sends and checks that
// Step never panics on it and answers as the design says: ignored (no batch,
// no state change), refused with a Nack naming the floor, or deduplicated.
// The table covers unknown senders, misaddressed and self-addressed
// messages, zero and foreign ballots, Accept entries at another ballot,
// Accepts and Prepares below the floor, duplicate, reordered, malformed and
// stale Promise pages, TrimmedTo with invalid or stale states and points,
// and CatchUpResponses with gaps. The Ready/Advance contract's documented
// panics are checked with recover. FuzzStep then decodes arbitrary bytes
// into a script of messages (from a five-id alphabet around a three-node
// majority, with ballots and slots drawn near the node's own state and at
// the edges of BallotRoundMax, SlotMax and the journal's SeqMax/TermMax)
// mixed with ticks, proposals, reads, step-downs, restarts and
// Ready/Advance rounds, and requires that nothing panics at all: a peer
// that breaks the Paxos contract raises ContractFault and the driver
// reboots the node, as the host does. The node's monotone scalars and the
// addressing of its messages are checked after every step. Seed inputs live in
// testdata/fuzz/FuzzStep and in fuzzStepSeeds below.

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage/memstore"
)

// expectIgnored steps m into s and requires that nothing happened: no batch,
// and the promise, chosen index, floor, role and state unchanged.
func expectIgnored(t *testing.T, s *solo, name string, m paxos.Message) {
	t.Helper()
	before := fmt.Sprint(s.node.Promised(), s.node.ChosenIndex(), s.node.Floor(), s.node.Role(), s.node.State(), movingCounters(s.node))
	s.node.Step(m)
	if s.node.HasReady() {
		rd := s.flush()
		t.Errorf("%s: produced writes %v messages %v", name, rd.Writes, rd.Messages)
	}
	after := fmt.Sprint(s.node.Promised(), s.node.ChosenIndex(), s.node.Floor(), s.node.Role(), s.node.State(), movingCounters(s.node))
	if before != after {
		t.Errorf("%s: state moved from %s to %s", name, before, after)
	}
}

// movingCounters are the node's counters less those that count a drop (a
// message refused for its sender's role or for a ballot its sender does
// not lead): counting the drop is how an ignored message shows.
func movingCounters(n *paxos.Node) paxos.Counters {
	c := n.Counters()
	c.RoleRefused, c.NotLeading = 0, 0
	return c
}

// mustPanic runs f and requires a panic whose message contains want.
func mustPanic(t *testing.T, name, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Errorf("%s: no panic", name)
			return
		}
		if !strings.Contains(fmt.Sprint(r), want) {
			t.Errorf("%s: panic %q does not mention %q", name, r, want)
		}
	}()
	f()
}

// Step's contract: messages not addressed to this node, from non-members,
// or malformed are ignored, and nothing a peer sends makes the node panic.
func TestBadInputIgnored(t *testing.T) {
	x := cmdOf("x")
	entry := []paxos.SlotCommand{{Slot: 1, Ballot: bal(1, 2), Command: x}}
	for _, tc := range []struct {
		name string
		m    paxos.Message
	}{
		{"unknown sender", paxos.Message{Type: paxos.MsgPrepare, From: 9, To: 1, Ballot: bal(1, 9), Slot: 1}},
		{"sender 0", paxos.Message{Type: paxos.MsgPrepare, From: 0, To: 1, Ballot: bal(1, 0), Slot: 1}},
		{"addressed to another node", paxos.Message{Type: paxos.MsgPrepare, From: 2, To: 3, Ballot: bal(1, 2), Slot: 1}},
		{"addressed to nobody", paxos.Message{Type: paxos.MsgAccept, From: 2, To: 0, Ballot: bal(1, 2), Entries: entry}},
		{"from itself", paxos.Message{Type: paxos.MsgAccept, From: 1, To: 1, Ballot: bal(1, 1), Entries: entry}},
		{"zero-ballot Prepare", paxos.Message{Type: paxos.MsgPrepare, From: 2, To: 1, Slot: 1}},
		{"zero-ballot Accept", paxos.Message{Type: paxos.MsgAccept, From: 2, To: 1, Entries: []paxos.SlotCommand{{Slot: 1, Command: x}}}},
		{"zero-ballot Heartbeat", paxos.Message{Type: paxos.MsgHeartbeat, From: 2, To: 1, Commit: 3}},
		{"zero-ballot Commit", paxos.Message{Type: paxos.MsgCommit, From: 2, To: 1, Commit: 3}},
		{"Prepare for another proposer's ballot", paxos.Message{Type: paxos.MsgPrepare, From: 2, To: 1, Ballot: bal(1, 3), Slot: 1}},
		{"Prepare from slot 0", paxos.Message{Type: paxos.MsgPrepare, From: 2, To: 1, Ballot: bal(1, 2), Slot: 0}},
		{"Accept for another proposer's ballot", paxos.Message{Type: paxos.MsgAccept, From: 2, To: 1, Ballot: bal(1, 3), Entries: entry}},
		{"Commit for another proposer's ballot", paxos.Message{Type: paxos.MsgCommit, From: 2, To: 1, Ballot: bal(1, 3), Commit: 3}},
		{"Accept naming a leader from a member", paxos.Message{Type: paxos.MsgAccept, From: 2, To: 1, Ballot: bal(1, 2), Leader: 2, Entries: entry}},
		{"Promise to a follower", paxos.Message{Type: paxos.MsgPromise, From: 2, To: 1, Ballot: bal(1, 1), Slot: 1}},
		{"Accepted to a follower", paxos.Message{Type: paxos.MsgAccepted, From: 2, To: 1, Ballot: bal(1, 1), Votes: []paxos.SlotVote{{Slot: 1}}}},
		{"HeartbeatAck to a follower", paxos.Message{Type: paxos.MsgHeartbeatAck, From: 2, To: 1, Ballot: bal(1, 1), Watermark: 9}},
		{"Nack to a follower at a low floor", paxos.Message{Type: paxos.MsgNack, From: 2, To: 1, Slot: 1}},
		{"PreReadAck for no open read", paxos.Message{Type: paxos.MsgPreReadAck, From: 2, To: 1, Ctx: 7, Watermark: 4}},
		{"CatchUpRequest from slot 0", paxos.Message{Type: paxos.MsgCatchUpRequest, From: 2, To: 1}},
		{"empty CatchUpResponse", paxos.Message{Type: paxos.MsgCatchUpResponse, From: 2, To: 1}},
		{"unknown message type", paxos.Message{Type: paxos.MsgType(99), From: 2, To: 1, Ballot: bal(1, 2)}},
		{"invalid message type", paxos.Message{Type: paxos.MsgInvalid, From: 2, To: 1, Ballot: bal(1, 2)}},
	} {
		s := newSolo(t, journal.ModeMulti, soloOpts(), nil)
		expectIgnored(t, s, tc.name, tc.m)
	}
}

// An Accept's entries must carry the Accept's own ballot: one proposer
// proposes at one ballot. Entries at another ballot, at slot 0 or with an
// invalid command are skipped; the well-formed ones in the same message
// are still voted.
func TestBadInputAcceptEntries(t *testing.T) {
	s := newSolo(t, journal.ModeMulti, soloOpts(), nil)
	x := cmdOf("x")
	rd := s.step(paxos.Message{Type: paxos.MsgAccept, From: 2, To: 1, Ballot: bal(1, 2), Entries: []paxos.SlotCommand{
		{Slot: 1, Ballot: bal(2, 2), Command: x},
		{Slot: 2, Ballot: bal(1, 3), Command: x},
		{Slot: 0, Ballot: bal(1, 2), Command: x},
		{Slot: 3, Ballot: bal(1, 2), Command: journal.Command{}},
		{Slot: 4, Ballot: bal(1, 2), Command: journal.Command{Kind: journal.Kind(77)}},
	}})
	expectEq(t, "writes", len(rd.Writes), 0)
	expectEq(t, "Accepted", len(ofType(rd.Messages, paxos.MsgAccepted)), 0)
	for slot := paxos.Slot(0); slot <= 4; slot++ {
		if _, _, ok := s.node.Acceptor().Record(slot); ok {
			t.Fatalf("a malformed entry left a record at slot %d", slot)
		}
	}
	expectEq(t, "promise", s.node.Promised(), paxos.Ballot{})

	rd = s.step(paxos.Message{Type: paxos.MsgAccept, From: 2, To: 1, Ballot: bal(1, 2), Entries: []paxos.SlotCommand{
		{Slot: 1, Ballot: bal(2, 2), Command: x},
		{Slot: 2, Ballot: bal(1, 2), Command: x},
	}})
	as := ofType(rd.Messages, paxos.MsgAccepted)
	if len(as) != 1 || len(as[0].Votes) != 1 || as[0].Votes[0].Slot != 2 {
		t.Fatalf("votes %v, want slot 2 only", rd.Messages)
	}
}

// The acceptor's floor: it refuses an Accept below its floor with
// a Nack naming the floor (the slot is chosen and gone), while it still
// votes the entries at or above the floor.
func TestBadInputAcceptBelowFloor(t *testing.T) {
	s := newSolo(t, journal.ModeMulti, soloOpts(), truncatedStore(t, 5, 9, 9))
	x := cmdOf("x")
	rd := s.step(paxos.Message{Type: paxos.MsgAccept, From: 2, To: 1, Ballot: bal(1, 2), Entries: []paxos.SlotCommand{
		{Slot: 3, Ballot: bal(1, 2), Command: x},
		{Slot: 6, Ballot: bal(1, 2), Command: x},
	}})
	as := ofType(rd.Messages, paxos.MsgAccepted)
	if len(as) != 1 || len(as[0].Votes) != 1 || as[0].Votes[0].Slot != 6 {
		t.Fatalf("votes %v, want slot 6 only", rd.Messages)
	}
	ns := ofType(rd.Messages, paxos.MsgNack)
	if len(ns) != 1 || ns[0].To != 2 || ns[0].Slot != 5 || ns[0].Refused != bal(1, 2) || ns[0].Ballot != bal(1, 2) {
		t.Fatalf("nack %v, want one naming floor 5", rd.Messages)
	}
	if _, _, ok := s.node.Acceptor().Record(3); ok {
		t.Fatalf("a record below the floor")
	}
	// only below the floor: a Nack and no vote.
	rd = s.step(paxos.Message{Type: paxos.MsgAccept, From: 2, To: 1, Ballot: bal(1, 2), Entries: []paxos.SlotCommand{
		{Slot: 4, Ballot: bal(1, 2), Command: x}}})
	expectEq(t, "Accepted", len(ofType(rd.Messages, paxos.MsgAccepted)), 0)
	expectEq(t, "Nacks", len(ofType(rd.Messages, paxos.MsgNack)), 1)
}

// Election: a sender counts only after its terminal
// page, and each page must start where the last one said to continue. A
// duplicate page, a page from elsewhere in the log, a continuation that does
// not move forward, a page below the campaign's first slot, and a page for
// an earlier campaign's ballot are all ignored; a page after the terminal
// one, too.
func TestBadInputPromisePages(t *testing.T) {
	opts := soloOpts()
	s := newSolo(t, journal.ModeMulti, opts, nil)
	x, y, z := cmdOf("x"), cmdOf("y"), cmdOf("z")

	stale, _ := s.campaign()
	s.tick(opts.ElectionTicks) // the first campaign times out; a second begins
	b := s.node.Promised()
	if !stale.Less(b) || s.node.Role() != "candidate" {
		t.Fatalf("second campaign at %s after %s", b, stale)
	}
	page := func(from, next paxos.Slot, entries ...paxos.SlotCommand) paxos.Message {
		return paxos.Message{Type: paxos.MsgPromise, From: 2, To: 1, Ballot: b, Slot: from, Next: next, Entries: entries}
	}
	first := page(1, 3, paxos.SlotCommand{Slot: 1, Ballot: bal(1, 3), Command: x}, paxos.SlotCommand{Slot: 2, Ballot: bal(1, 3), Command: y})

	// a stale campaign's page, a page starting mid-log, and a page below the
	// campaign's first slot are ignored.
	expectIgnored(t, s, "stale ballot", paxos.Message{Type: paxos.MsgPromise, From: 2, To: 1, Ballot: stale, Slot: 1})
	expectIgnored(t, s, "page from slot 3 first", page(3, 0))
	expectIgnored(t, s, "page from slot 0", page(0, 0))
	expectIgnored(t, s, "continuation that does not advance", page(1, 1))

	// the first page asks for the next one.
	rd := s.step(first)
	if ps := ofType(rd.Messages, paxos.MsgPrepare); len(ps) != 1 || ps[0].Slot != 3 || ps[0].To != 2 || ps[0].Ballot != b {
		t.Fatalf("continuation %v, want a Prepare from 3", rd.Messages)
	}
	expectEq(t, "role after a partial page", s.node.Role(), "candidate")

	// the first page again (duplicate) and a jump past slot 3 are ignored.
	expectIgnored(t, s, "duplicate first page", first)
	expectIgnored(t, s, "page from slot 5 (reordered)", page(5, 0))

	// the terminal page from 3 wins, with every page's report recovered.
	s.step(page(3, 0, paxos.SlotCommand{Slot: 3, Ballot: bal(1, 3), Command: z}))
	expectEq(t, "role after the terminal page", s.node.Role(), "leader")
	expectEq(t, "recovered", s.node.Counters().Recovered, uint64(3))
	expectIgnored(t, s, "page after the terminal one", page(3, 0))
}

// The trim-point jump (docs/design/core.md, "Decided truncation and the
// trim-point jump"): a TrimmedTo is installed only if its point is above the
// node's floor and fold and its state is a valid journal state not behind
// the node's own fold. journal.State's invariants are checked by
// journal.Restore, which the node applies to what it is handed: the zero
// State{}, first_seq above next_seq, and a leader without a term are all
// invalid (the exported fields let a peer — or a test — build them).
func TestBadInputTrimmedTo(t *testing.T) {
	valid, err := journal.Restore(journal.LeaderUUID{}, 0, 9, 4)
	if err != nil {
		t.Fatal(err)
	}
	leaderNoTerm := valid
	leaderNoTerm.Leader = writerU
	for _, tc := range []struct {
		name  string
		point paxos.Slot
		state journal.State
	}{
		{"zero state", 5, journal.State{}},
		{"first_seq above next_seq", 5, journal.State{NextSeq: 2, FirstSeq: 5}},
		{"first_seq 0", 5, journal.State{NextSeq: 2, FirstSeq: 0}},
		{"leader without a term", 5, leaderNoTerm},
		{"point 0", 0, valid},
		{"point at the floor", 1, valid},
	} {
		s := newSolo(t, journal.ModeMulti, soloOpts(), nil)
		expectIgnored(t, s, tc.name, paxos.Message{Type: paxos.MsgTrimmedTo, From: 2, To: 1, Slot: tc.point, State: tc.state})
	}

	// a node already past a point, or handed a state behind its own fold,
	// ignores it; a good jump is installed once.
	s := newSolo(t, journal.ModeMulti, soloOpts(), truncatedStore(t, 5, 9, 9))
	expectIgnored(t, s, "point below the floor", paxos.Message{Type: paxos.MsgTrimmedTo, From: 2, To: 1, Slot: 3, State: valid})
	expectIgnored(t, s, "point at the floor", paxos.Message{Type: paxos.MsgTrimmedTo, From: 2, To: 1, Slot: 5, State: valid})
	expectIgnored(t, s, "state behind the fold", paxos.Message{Type: paxos.MsgTrimmedTo, From: 2, To: 1, Slot: 8, State: valid})
	ahead, _ := journal.Restore(journal.LeaderUUID{}, 0, 12, 10)
	jump := paxos.Message{Type: paxos.MsgTrimmedTo, From: 2, To: 1, Slot: 8, State: ahead}
	rd := s.step(jump)
	expectEq(t, "writes", opKinds(rd.Writes), "trimmed-to set-chosen-index")
	expectEq(t, "floor", s.node.Floor(), paxos.Slot(8))
	expectIgnored(t, s, "the same jump again", jump)
}

// Catch-up entries are learned strictly in slot order from the chosen
// prefix: a page that starts above it (a gap), an entry at the zero ballot
// or with an invalid command stops the page there.
func TestBadInputCatchUpResponse(t *testing.T) {
	x := cmdOf("x")
	s := newSolo(t, journal.ModeMulti, soloOpts(), nil)
	expectIgnored(t, s, "page starting at slot 2", paxos.Message{Type: paxos.MsgCatchUpResponse, From: 2, To: 1,
		Entries: []paxos.SlotCommand{{Slot: 2, Ballot: bal(1, 2), Command: x}}})
	expectIgnored(t, s, "zero ballot", paxos.Message{Type: paxos.MsgCatchUpResponse, From: 2, To: 1,
		Entries: []paxos.SlotCommand{{Slot: 1, Command: x}}})
	expectIgnored(t, s, "invalid command", paxos.Message{Type: paxos.MsgCatchUpResponse, From: 2, To: 1,
		Entries: []paxos.SlotCommand{{Slot: 1, Ballot: bal(1, 2)}}})

	s.step(paxos.Message{Type: paxos.MsgCatchUpResponse, From: 2, To: 1, Entries: []paxos.SlotCommand{
		{Slot: 1, Ballot: bal(1, 2), Command: x}, {Slot: 3, Ballot: bal(1, 2), Command: x}, {Slot: 2, Ballot: bal(1, 2), Command: x}}})
	expectEq(t, "chosen after a page with a gap", s.node.ChosenIndex(), paxos.Slot(1))
	if _, _, ok := s.node.Acceptor().Record(3); ok {
		t.Fatalf("an entry past the gap was learned")
	}
	expectIgnored(t, s, "the learned slot again", paxos.Message{Type: paxos.MsgCatchUpResponse, From: 3, To: 1,
		Entries: []paxos.SlotCommand{{Slot: 1, Ballot: bal(1, 2), Command: x}}})
}

// The Ready contract: one batch is in flight at a time. A second Ready
// before Advance, an Advance without a Ready and a write handed to
// ProposeControl are programmer errors, and programmer errors panic while
// operating errors are values.
func TestBadInputReadyContractPanics(t *testing.T) {
	s := newSolo(t, journal.ModeMulti, soloOpts(), nil)
	mustPanic(t, "Advance without Ready", "Advance without Ready", s.node.Advance)
	s.node.Ready()
	mustPanic(t, "second Ready", "Ready called twice", func() { s.node.Ready() })
	s.node.Advance()
	mustPanic(t, "Advance twice", "Advance without Ready", s.node.Advance)
	s.lead()
	mustPanic(t, "ProposeControl(write)", "control command", func() { s.node.ProposeControl(cmdOf("x")) })
	mustPanic(t, "ProposeControl(invalid)", "control command", func() { s.node.ProposeControl(journal.Command{Kind: journal.Kind(9)}) })
}

// Step's doc: a peer that breaks the Paxos contract — two values at one
// (slot, ballot), or a "chosen" value below a higher-ballot record of another
// value — is not bad input crash-fault Paxos can explain. The node refuses
// to act on it (no second vote, no contradicting value learned), raises
// ContractFault naming the contract, and takes no further input; it never
// panics, so one lying member cannot kill a process (the driver reboots
// the journal from its store).
func TestBadInputConflictingValuesAtOneBallot(t *testing.T) {
	x, y := cmdOf("x"), cmdOf("y")
	expectContract := func(t *testing.T, s *solo, name, want string) {
		t.Helper()
		err := s.node.ContractFault()
		if !errors.Is(err, paxos.ErrContract) || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: ContractFault %v, want one mentioning %q", name, err, want)
		}
		if _, c, ok := s.node.Acceptor().Record(1); ok && !c.Equal(x) {
			t.Fatalf("%s: the acceptor holds %s at slot 1, want the first value %s", name, c, x)
		}
		before := fmt.Sprint(s.node.Promised(), s.node.ChosenIndex(), s.node.Counters())
		s.node.Step(paxos.Message{Type: paxos.MsgPrepare, From: 2, To: 1, Ballot: bal(9, 2), Slot: 1})
		s.node.Tick()
		if after := fmt.Sprint(s.node.Promised(), s.node.ChosenIndex(), s.node.Counters()); after != before {
			t.Fatalf("%s: a faulted node moved from %s to %s", name, before, after)
		}
	}
	t.Run("two Accepts at one (slot, ballot)", func(t *testing.T) {
		s := newSolo(t, journal.ModeMulti, soloOpts(), nil)
		for _, c := range []journal.Command{x, y} {
			s.node.Step(paxos.Message{Type: paxos.MsgAccept, From: 2, To: 1, Ballot: bal(1, 2),
				Entries: []paxos.SlotCommand{{Slot: 1, Ballot: bal(1, 2), Command: c}}})
		}
		expectContract(t, s, "two Accepts", "two values")
	})
	t.Run("two Promises reporting one (slot, ballot)", func(t *testing.T) {
		s := newSolo(t, journal.ModeMulti, soloOpts(), nil)
		s.step(paxos.Message{Type: paxos.MsgAccept, From: 2, To: 1, Ballot: bal(1, 2),
			Entries: []paxos.SlotCommand{{Slot: 1, Ballot: bal(1, 2), Command: x}}})
		b, prep := s.campaign()
		s.node.Step(paxos.Message{Type: paxos.MsgPromise, From: 3, To: 1, Ballot: b, Slot: prep[0].Slot,
			Entries: []paxos.SlotCommand{{Slot: 1, Ballot: bal(1, 2), Command: y}}})
		expectContract(t, s, "two Promises", "two values reported")
		if s.node.IsLeader() {
			t.Fatal("a candidate led on a contradicting Phase 1")
		}
	})
	t.Run("catch-up below a higher-ballot record of another value", func(t *testing.T) {
		s := newSolo(t, journal.ModeMulti, soloOpts(), nil)
		s.step(paxos.Message{Type: paxos.MsgAccept, From: 2, To: 1, Ballot: bal(2, 2),
			Entries: []paxos.SlotCommand{{Slot: 1, Ballot: bal(2, 2), Command: x}}})
		s.node.Step(paxos.Message{Type: paxos.MsgCatchUpResponse, From: 3, To: 1,
			Entries: []paxos.SlotCommand{{Slot: 1, Ballot: bal(1, 3), Command: y}}})
		expectContract(t, s, "catch-up", "at higher ballot")
	})
}

// The hostile-input probe: a Commit at round 2^64-1 from a member once
// raised highestSeen before any check; the next campaign's round+1 wrapped
// to 0, the candidate's own promise refused it, and the node panicked (in
// paros dev, all three machines died). Now the message is malformed and
// moves nothing, and the next campaign is at round 1.
func TestBadInputMaxRoundCommitIsMalformed(t *testing.T) {
	s := newSolo(t, journal.ModeMulti, soloOpts(), nil)

	for _, m := range []paxos.Message{
		{Type: paxos.MsgCommit, From: 2, To: 1, Ballot: paxos.Ballot{Round: math.MaxUint64, Node: 2}, Commit: 1},
		{Type: paxos.MsgPrepare, From: 2, To: 1, Ballot: paxos.Ballot{Round: paxos.BallotRoundMax + 1, Node: 2}, Slot: 1},
		{Type: paxos.MsgHeartbeat, From: 2, To: 1, Ballot: bal(1, 2), Commit: math.MaxUint64},
	} {
		s.node.Step(m)
	}
	b, _ := s.campaign()

	if got := s.node.Counters().Malformed; got != 3 {
		t.Fatalf("Malformed = %d, want 3", got)
	}
	if b.Round != 1 || s.node.Promised() != b {
		t.Fatalf("campaign at %s, promise %s: want round 1", b, s.node.Promised())
	}
}

// A promise at the last round in range is legal, and the round after it
// is not: a node that has seen BallotRoundMax stays a follower (counted
// as Exhausted) instead of proposing a ballot every peer would refuse.
// Only a member lying about its ballots can drive a cell there.
func TestBadInputRoundsExhaustedStandsDown(t *testing.T) {
	s := newSolo(t, journal.ModeMulti, soloOpts(), nil)
	top := paxos.Ballot{Round: paxos.BallotRoundMax, Node: 2}

	s.step(paxos.Message{Type: paxos.MsgPrepare, From: 2, To: 1, Ballot: top, Slot: 1})
	for range 4 * soloOpts().ElectionTicks {
		s.node.Tick()
		s.flush()
	}

	if s.node.Promised() != top || s.node.Counters().Exhausted == 0 || s.node.Counters().Campaigns != 0 {
		t.Fatalf("promise %s, counters %+v: want the top promise kept and campaigns exhausted", s.node.Promised(), s.node.Counters())
	}
}

// Every queue and loop has a bound: one Accept entry at a slot far
// above the acceptor's log must not cost memory in proportion to the slot
// number. The acceptor's window is dense from its floor, so today a single
// corrupt or forged slot allocates every slot below it (~144 bytes each: a
// slot of 2^30 asks for ~150 GB), and an honest acceptor that rejoins far
// behind the leader's frontier pays for its whole gap on the first Accept.
func TestBadInputAcceptFarAboveTheLog(t *testing.T) {
	const far = paxos.Slot(1 << 20)
	const budget = 4 << 20
	s := newSolo(t, journal.ModeMulti, soloOpts(), nil)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s.node.Step(paxos.Message{Type: paxos.MsgAccept, From: 2, To: 1, Ballot: bal(1, 2),
		Entries: []paxos.SlotCommand{{Slot: far, Ballot: bal(1, 2), Command: cmdOf("x")}}})
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > budget {
		t.Fatalf("one Accept at slot %d allocated %d KiB (budget %d KiB)", far, grew>>10, budget>>10)
	}
}

// fuzzIn reads a fuzz input one byte per decision; past the end it reads
// 0, or, when recording a seed, appends and reads 1.
type fuzzIn struct {
	data   []byte
	pos    int
	record bool
}

func (in *fuzzIn) next() byte {
	if in.pos >= len(in.data) {
		if !in.record {
			return 0
		}
		in.data = append(in.data, 1)
	}
	b := in.data[in.pos]
	in.pos++
	return b
}

// fuzzDriver plays a fuzz input against node 1 of a three-node majority.
type fuzzDriver struct {
	t        testing.TB
	in       *fuzzIn
	decoded  int // input position after the last step's op and fields
	cfg      paxos.Config
	opts     paxos.Options
	store    *memstore.Store
	node     *paxos.Node
	proposed map[paxos.Slot]journal.Command
	trace    []string
	// monotone within a boot
	promise paxos.Ballot
	chosen  paxos.Slot
	floor   paxos.Slot
	first   journal.Seq
	// monotone across boots
	durablePromise paxos.Ballot
}

var fuzzUUIDs = [...]journal.LeaderUUID{{}, {Hi: 1, Lo: 0xa}, {Hi: 2, Lo: 0xb}}

var fuzzMsgTypes = [...]paxos.MsgType{paxos.MsgPrepare, paxos.MsgPromise, paxos.MsgAccept, paxos.MsgAccepted,
	paxos.MsgNack, paxos.MsgCommit, paxos.MsgCatchUpRequest, paxos.MsgCatchUpResponse, paxos.MsgHeartbeat,
	paxos.MsgHeartbeatAck, paxos.MsgPreRead, paxos.MsgPreReadAck, paxos.MsgTrimmedTo, paxos.MsgType(99)}

// Fuzz ops after the message types.
const (
	fuzzOpTick = iota + len(fuzzMsgTypes)
	fuzzOpPropose
	fuzzOpProposeControl
	fuzzOpRead
	fuzzOpStepDown
	fuzzOpRestart
	fuzzOpDrain
	fuzzOpCount
	fuzzStepsMax = 200
)

func (d *fuzzDriver) boot() {
	n, err := paxos.NewNode(d.cfg, d.opts, d.store)
	if err != nil {
		d.t.Fatalf("boot: %v\n%s", err, d.history())
	}
	d.node = n
	d.promise, d.chosen, d.floor, d.first = n.Promised(), n.ChosenIndex(), n.Floor(), n.State().FirstSeq
	if n.Promised().Less(d.durablePromise) {
		d.t.Fatalf("durable promise fell from %s to %s across a restart\n%s", d.durablePromise, n.Promised(), d.history())
	}
}

// rebootOnContractFault does what the host does when a peer broke the
// Paxos contract: the faulted batch is never persisted or sent, and the
// journal reboots from what its store made durable. It reports whether
// it rebooted.
func (d *fuzzDriver) rebootOnContractFault() bool {
	err := d.node.ContractFault()
	if err == nil {
		return false
	}
	d.trace = append(d.trace, "contract fault, reboot: "+err.Error())
	d.store.Crash()
	d.boot()
	return true
}

func (d *fuzzDriver) history() string {
	if len(d.trace) > 40 {
		return strings.Join(d.trace[len(d.trace)-40:], "\n")
	}
	return strings.Join(d.trace, "\n")
}

// ballot draws a ballot near the node's own state.
func (d *fuzzDriver) ballot(from paxos.NodeID) paxos.Ballot {
	b := d.in.next()
	p := d.node.Promised()
	switch b % 7 {
	case 0:
		if b >= 224 {
			// The edges of the round bound and past it: the probe's Commit
			// at round 2^64-1 once crashed every machine, and the old
			// alphabet (rounds near the node's own) never drew it.
			rounds := [...]uint64{paxos.BallotRoundMax, paxos.BallotRoundMax + 1, math.MaxUint64, math.MaxUint64, paxos.BallotRoundMax - 1}
			return paxos.Ballot{Round: rounds[(b-224)/7], Node: from}
		}
		return paxos.Ballot{}
	case 1:
		return paxos.Ballot{Round: uint64(b / 7 % 4), Node: from}
	case 2:
		return p
	case 3:
		return paxos.Ballot{Round: p.Round + 1, Node: from}
	case 4:
		return d.node.LeaderBallot()
	case 5:
		return paxos.Ballot{Round: uint64(b / 7 % 4), Node: paxos.NodeID(b / 28 % 5)}
	default:
		return paxos.Ballot{Round: max(p.Round, 1) - 1, Node: from}
	}
}

// slot draws a slot near the node's floor, chosen index or last record.
func (d *fuzzDriver) slot() paxos.Slot {
	b := d.in.next()
	k := paxos.Slot(b / 5 % 4)
	switch b % 5 {
	case 0:
		return paxos.Slot(b / 5 % 10)
	case 1:
		return d.node.ChosenIndex() + 1 + k
	case 2:
		return d.node.Floor() - 1 + k
	case 3:
		return d.node.Acceptor().LastSlot() + k
	default:
		if b >= 240 {
			// The edges of the slot bound: 244, 249, 254.
			return [...]paxos.Slot{paxos.SlotMax, paxos.SlotMax + 1, math.MaxUint64}[(b-244)/5]
		}
		return d.node.ChosenIndex() + 1 + paxos.Slot(b/5%16)
	}
}

// canonical is the value an honest cluster would propose at s: mostly one
// value per slot, so most inputs keep the Paxos contract.
func (d *fuzzDriver) canonical(s paxos.Slot) journal.Command {
	if d.cfg.Mode == journal.ModeMulti {
		if s%5 == 4 {
			return journal.Truncate(journal.LeaderUUID{}, journal.Seq(s))
		}
		return journal.Write(journal.Entry{Records: [][]byte{{'a' + byte(s%3)}}})
	}
	switch s % 4 {
	case 1:
		return journal.SetLeader(fuzzUUIDs[1], journal.LeaderUUID{})
	case 3:
		return journal.Truncate(fuzzUUIDs[1], journal.Seq(s/2))
	}
	return journal.Write(journal.Entry{Leader: fuzzUUIDs[1], Seq: journal.Seq(s / 2), Records: [][]byte{{'a'}}})
}

// command draws the value of an entry at slot s.
func (d *fuzzDriver) command(s paxos.Slot) journal.Command {
	b := d.in.next()
	if b%4 != 0 {
		return d.canonical(s)
	}
	st := d.node.State()
	u := fuzzUUIDs[b/4%3]
	switch b / 12 % 6 {
	case 0:
		return journal.Noop()
	case 1:
		return journal.Write(journal.Entry{Records: [][]byte{{'m'}}})
	case 2:
		return journal.Write(journal.Entry{Leader: u, Seq: st.NextSeq, Records: [][]byte{{'s'}, {'t'}}})
	case 3:
		return journal.Truncate(u, st.NextSeq-journal.Seq(b/72%2))
	case 4:
		return journal.SetLeader(u, st.Leader)
	}
	return journal.Command{Kind: journal.Kind(b / 72 % 2 * 9)} // invalid: kind 0 or 9
}

// state draws a journal state for a TrimmedTo: valid or not, ahead or behind.
func (d *fuzzDriver) state() journal.State {
	b := d.in.next()
	cur := d.node.State()
	k := min(journal.Seq(b/6%4), journal.SeqMax-cur.NextSeq) // a state at the bounds stays within them
	switch b % 6 {
	case 0:
		return journal.State{}
	case 1:
		return journal.Initial()
	case 2:
		return cur
	case 3:
		st, err := journal.Restore(cur.Leader, cur.Term(), cur.NextSeq+k, min(cur.FirstSeq+k/2, cur.NextSeq+k))
		if err != nil {
			d.t.Fatalf("restore: %v", err)
		}
		return st
	case 4:
		st, err := journal.Restore(fuzzUUIDs[2], min(cur.Term()+1, journal.TermMax), cur.NextSeq+k, cur.FirstSeq)
		if err != nil {
			d.t.Fatalf("restore: %v", err)
		}
		return st
	}
	if b >= 240 {
		// A state at the bounds: the next SetLeader or write must be
		// refused, not wrap the term or the positions.
		st, err := journal.Restore(fuzzUUIDs[1], journal.TermMax, journal.SeqMax, journal.SeqMax)
		if err != nil {
			d.t.Fatalf("restore: %v", err)
		}
		return st
	}
	return journal.State{NextSeq: 1, FirstSeq: 3}
}

func (d *fuzzDriver) entries(b paxos.Ballot, from paxos.NodeID) []paxos.SlotCommand {
	var out []paxos.SlotCommand
	for range d.in.next() % 4 {
		e := paxos.SlotCommand{Slot: d.slot(), Ballot: b}
		if d.in.next()%4 == 0 {
			e.Ballot = d.ballot(from)
		}
		e.Command = d.command(e.Slot)
		out = append(out, e)
	}
	return out
}

func (d *fuzzDriver) message(typ paxos.MsgType) paxos.Message {
	in := d.in
	from := paxos.NodeID(in.next() % 5) // 0 and 4 are not members
	m := paxos.Message{Type: typ, From: from, To: 1}
	if b := in.next(); b%8 == 0 {
		m.To = paxos.NodeID(b / 8 % 5)
	}
	switch typ {
	case paxos.MsgPrepare:
		m.Ballot, m.Slot = d.ballot(from), d.slot()
	case paxos.MsgPromise:
		m.Ballot, m.Slot, m.Next = d.ballot(from), d.slot(), d.slot()
		m.Entries = d.entries(m.Ballot, from)
		for range in.next() % 2 {
			m.Faulty = append(m.Faulty, paxos.SlotBallot{Slot: d.slot(), Ballot: d.ballot(from)})
		}
	case paxos.MsgAccept:
		m.Ballot = d.ballot(from)
		m.Entries = d.entries(m.Ballot, from)
		m.Commit = d.slot()
	case paxos.MsgAccepted:
		m.Ballot = d.ballot(from)
		for range in.next() % 3 {
			v := paxos.SlotVote{Slot: d.slot()}
			b := in.next()
			if c, ok := d.proposed[v.Slot]; ok && b%4 != 0 {
				v.VHash = c.Fingerprint()
			} else {
				v.VHash = d.canonical(v.Slot).Fingerprint() + uint64(b%2)
			}
			m.Votes = append(m.Votes, v)
		}
	case paxos.MsgNack:
		m.Ballot, m.Refused, m.Slot = d.ballot(from), d.ballot(from), d.slot()
	case paxos.MsgCommit, paxos.MsgHeartbeat:
		m.Ballot, m.Commit = d.ballot(from), d.slot()
	case paxos.MsgHeartbeatAck:
		m.Ballot, m.Commit, m.Watermark = d.ballot(from), d.slot(), d.slot()
	case paxos.MsgCatchUpRequest:
		m.Slot = d.slot()
	case paxos.MsgCatchUpResponse:
		m.Entries = d.entries(d.ballot(from), from)
	case paxos.MsgPreRead:
		m.Ctx = uint64(in.next() % 4)
	case paxos.MsgPreReadAck:
		m.Ctx, m.Watermark = uint64(in.next()%4), d.slot()
	case paxos.MsgTrimmedTo:
		m.Slot, m.State = d.slot(), d.state()
	default:
		m.Ballot = d.ballot(from)
	}
	return m
}

// drain hands out every batch, checks its addressing and sync flag, and
// persists it (synced or not, as the input says).
func (d *fuzzDriver) drain() {
	if d.rebootOnContractFault() {
		return
	}
	for d.node.HasReady() {
		rd := d.node.Ready()
		needs := false
		for _, op := range rd.Writes {
			needs = needs || op.NeedsSync()
		}
		if rd.MustSync != needs {
			d.t.Fatalf("MustSync %v for writes %v\n%s", rd.MustSync, rd.Writes, d.history())
		}
		for _, m := range rd.Messages {
			if m.From != 1 || m.To == 1 || !d.cfg.Acceptors.Contains(m.To) {
				d.t.Fatalf("message %s is misaddressed\n%s", m, d.history())
			}
		}
		d.store.Append(rd.Writes)
		if d.in.next()%4 != 0 {
			d.store.Sync()
			d.durablePromise = d.store.InitialState().Promised
		}
		d.node.Advance()
		if d.node.WantsElectionTimeout() {
			d.node.SetElectionTimeout(d.opts.ElectionTicks + int(d.in.next()%3))
		}
	}
}

// check runs the oracles a single node can be held to after every step.
func (d *fuzzDriver) check() {
	n := d.node
	switch {
	case n.Promised().Less(d.promise):
		d.t.Fatalf("promise fell from %s to %s\n%s", d.promise, n.Promised(), d.history())
	case n.ChosenIndex() < d.chosen:
		d.t.Fatalf("chosen index fell from %d to %d\n%s", d.chosen, n.ChosenIndex(), d.history())
	case n.Floor() < d.floor:
		d.t.Fatalf("floor fell from %d to %d\n%s", d.floor, n.Floor(), d.history())
	case n.State().FirstSeq < d.first:
		d.t.Fatalf("first_seq fell from %d to %d\n%s", d.first, n.State().FirstSeq, d.history())
	case n.Applied() != n.ChosenIndex() || n.Floor() > n.Applied()+1:
		d.t.Fatalf("floor %d applied %d chosen %d\n%s", n.Floor(), n.Applied(), n.ChosenIndex(), d.history())
	}
	d.promise, d.chosen, d.floor, d.first = n.Promised(), n.ChosenIndex(), n.Floor(), n.State().FirstSeq
}

func (d *fuzzDriver) step() {
	op := int(d.in.next()) % fuzzOpCount
	switch {
	case op < len(fuzzMsgTypes):
		m := d.message(fuzzMsgTypes[op])
		d.trace = append(d.trace, "step "+m.String())
		d.node.Step(m)
		d.rebootOnContractFault()
	case op == fuzzOpTick:
		k := 1 + int(d.in.next()%8)
		d.trace = append(d.trace, fmt.Sprintf("tick ×%d", k))
		for range k {
			d.node.Tick()
		}
	case op == fuzzOpPropose:
		st := d.node.State()
		e := journal.Entry{Records: [][]byte{{'p', d.in.next() % 3}}}
		if d.cfg.Mode == journal.ModeSingle {
			e.Leader, e.Seq = st.Leader, st.NextSeq
		}
		res := d.node.Propose(e)
		d.trace = append(d.trace, fmt.Sprintf("propose write -> %d slot %d", res.Status, res.Slot))
		if res.Status == paxos.Proposed {
			d.proposed[res.Slot] = journal.Write(e)
		}
	case op == fuzzOpProposeControl:
		st := d.node.State()
		var c journal.Command
		switch d.in.next() % 3 {
		case 0:
			c = journal.Noop()
		case 1:
			u := st.Leader
			if d.cfg.Mode == journal.ModeMulti {
				u = journal.LeaderUUID{}
			}
			c = journal.Truncate(u, st.NextSeq)
		default:
			c = journal.SetLeader(fuzzUUIDs[1+int(st.Term()%2)], st.Leader)
		}
		res := d.node.ProposeControl(c)
		d.trace = append(d.trace, fmt.Sprintf("propose %s -> %d slot %d", c, res.Status, res.Slot))
		if res.Status == paxos.Proposed {
			d.proposed[res.Slot] = c
		}
	case op == fuzzOpRead:
		ctx := uint64(d.in.next() % 4)
		d.trace = append(d.trace, fmt.Sprintf("read %d -> %v", ctx, d.node.QuorumRead(ctx)))
	case op == fuzzOpStepDown:
		d.trace = append(d.trace, "step down")
		d.node.StepDown()
	case op == fuzzOpRestart:
		d.trace = append(d.trace, "restart")
		d.store.Crash()
		d.boot()
	case op == fuzzOpDrain:
		d.trace = append(d.trace, "drain")
		d.drain()
	}
	d.decoded = d.in.pos
	if d.in.next()%4 != 0 {
		d.drain()
	}
	d.check()
}

// newFuzzDriver reads the writer mode from the input's first byte and boots
// node 1 of a three-node majority with small bounds, so that paging,
// windows, catch-up pages and read expiry are reached in a few steps.
func newFuzzDriver(tb testing.TB, in *fuzzIn) *fuzzDriver {
	mode := journal.ModeMulti
	if in.next()%2 == 1 {
		mode = journal.ModeSingle
	}
	d := &fuzzDriver{t: tb, in: in, store: memstore.New(), proposed: map[paxos.Slot]journal.Command{},
		cfg: paxos.Config{ID: 1, Acceptors: majority(3), Mode: mode},
		opts: paxos.Options{ElectionTicks: 3, HeartbeatTicks: 1, PipelineWindow: 2, ProposeQueueMax: 4, PromiseBatch: 2,
			CatchUpBatch: 2, CatchUpRetryTicks: 2, ReadTTLTicks: 3, ReadsMax: 3, ResendBatch: 2}}
	d.boot()
	return d
}

// playFuzzStep runs one input to its end; any panic fails it.
func playFuzzStep(t *testing.T, data []byte) {
	in := &fuzzIn{data: data}
	d := newFuzzDriver(t, in)
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("panic: %v\n%s", r, d.history())
		}
	}()
	for i := 0; i < fuzzStepsMax && in.pos < len(in.data); i++ {
		d.step()
	}
}

// recordSeed plays a script and returns the fuzz input that replays it.
// Each script step is the op byte and the field bytes that step decodes;
// the bytes the driver reads between steps (drain, sync, jitter) are
// recorded as 1 — drain, sync, jitter +1. It fails if a step's fields do
// not line up with what the decoder read.
func recordSeed(tb testing.TB, mode byte, steps ...[]byte) []byte {
	tb.Helper()
	in := &fuzzIn{data: []byte{mode}, record: true}
	d := newFuzzDriver(tb, in)
	for i, st := range steps {
		at := len(in.data)
		in.data = append(in.data, st...)
		d.step()
		if d.decoded != at+len(st) {
			tb.Fatalf("seed step %d (%v) decoded %d bytes, scripted %d\n%s", i, st, d.decoded-at, len(st), d.history())
		}
	}
	return in.data
}

// Seed script encoders: each returns the op byte and the field bytes the
// decoder reads for that step (see fuzzDriver.message). Field choices:
// messages go to node 1; ballots ballotPromised (the node's promise),
// ballotAbove (one round above it, the sender's) and ballotLeading (the
// node's leader ballot); slots slotAbs(k) = k and slotNext(k) = chosen
// index + 1 + k, resolved when the step is played; entries carry the
// sender's ballot and the slot's canonical value.
const (
	ballotPromised = 2
	ballotAbove    = 3
	ballotLeading  = 4
	stateAhead     = 3
)

func slotAbs(k byte) byte  { return 5 * k }   // k < 10
func slotNext(k byte) byte { return 1 + 5*k } // k < 4

// entryAt is one entry at slot: keep the message's ballot, canonical value.
func entryAt(slot byte) []byte { return []byte{slot, 1, 1} }

func msgBytes(typ paxos.MsgType, from byte, fields ...byte) []byte {
	op := byte(slices.Index(fuzzMsgTypes[:], typ))
	return append([]byte{op, from, 1}, fields...)
}

func entryBytes(entries [][]byte) []byte {
	out := []byte{byte(len(entries))}
	for _, e := range entries {
		out = append(out, e...)
	}
	return out
}

// sPromise: a page at the node's own ballot from slot, continuing at next
// (slotAbs(0) = terminal), with the given entries and no faulty records.
func sPromise(from, slot, next byte, entries ...[]byte) []byte {
	f := append([]byte{ballotPromised, slot, next}, entryBytes(entries)...)
	return msgBytes(paxos.MsgPromise, from, append(f, 0)...)
}

// sPromiseFaulty: a terminal page reporting one faulty record.
func sPromiseFaulty(from, slot, faultySlot, faultyBallot byte) []byte {
	return msgBytes(paxos.MsgPromise, from, ballotPromised, slot, slotAbs(0), 0, 1, faultySlot, faultyBallot)
}

func sAccept(from, ballot, commit byte, entries ...[]byte) []byte {
	f := append([]byte{ballot}, entryBytes(entries)...)
	return msgBytes(paxos.MsgAccept, from, append(f, commit)...)
}

// sAccepted: votes at the node's leader ballot for what it proposed there.
func sAccepted(from byte, slots ...byte) []byte {
	f := []byte{ballotLeading, byte(len(slots))}
	for _, s := range slots {
		f = append(f, s, 1)
	}
	return msgBytes(paxos.MsgAccepted, from, f...)
}

func sCatchUpResponse(from, ballot byte, entries ...[]byte) []byte {
	return msgBytes(paxos.MsgCatchUpResponse, from, append([]byte{ballot}, entryBytes(entries)...)...)
}

func sTick(n byte) []byte       { return []byte{byte(fuzzOpTick), n - 1} }
func sPropose(rec byte) []byte  { return []byte{byte(fuzzOpPropose), rec} }
func sControl(kind byte) []byte { return []byte{byte(fuzzOpProposeControl), kind} } // 0 noop, 1 truncate, 2 set-leader
func sRead(ctx byte) []byte     { return []byte{byte(fuzzOpRead), ctx} }
func sRestart() []byte          { return []byte{byte(fuzzOpRestart)} }

// fuzzStepSeeds are three scripted runs: a leader that is elected, decides,
// truncates, serves a read, Noop-fills, loses CheckQuorum and restarts; a
// single-writer follower that learns by Accept, Commit and catch-up,
// truncates, serves a trim point, jumps, restarts and wins a paged
// campaign; and a candidate that loses on refusals, is blocked by a faulty
// report, and then leads.
func fuzzStepSeeds(tb testing.TB) [][]byte {
	leader := recordSeed(tb, 0,
		sTick(3),                              // campaign at 1.1
		sPromise(2, slotNext(0), slotAbs(0)),  // node 2's terminal page: lead
		sPropose(0), sPropose(1), sPropose(2), // slots 1-3; the window holds 3
		sAccepted(2, slotAbs(1), slotAbs(2)), // decide 1, 2; slot 3 leaves
		sControl(1),                          // truncate(next_seq) at slot 4
		sAccepted(3, slotAbs(3), slotAbs(4)), // decide 3, 4: the walk cuts
		sRead(1),                             //
		msgBytes(paxos.MsgPreReadAck, 2, 1, slotAbs(4)),                            // the read is served
		msgBytes(paxos.MsgHeartbeatAck, 2, ballotLeading, slotAbs(4), slotNext(3)), // a watermark past the frontier
		sTick(2),                             // beat: Noop-fill
		sAccepted(2, slotAbs(5), slotAbs(6)), //
		sTick(8), sTick(8),                   // CheckQuorum: no acks for a window
		sRestart(), //
		msgBytes(paxos.MsgPrepare, 2, ballotAbove, slotNext(0)),
	)
	follower := recordSeed(tb, 1,
		sAccept(2, ballotAbove, slotAbs(0), entryAt(slotNext(0)), entryAt(slotNext(1)), entryAt(slotNext(2))),    // slots 1-3 at 1.2
		msgBytes(paxos.MsgCommit, 2, ballotPromised, slotNext(2)),                                                // commit 3
		sAccept(2, ballotPromised, slotAbs(0), entryAt(slotNext(0)), entryAt(slotNext(1)), entryAt(slotNext(2))), // slots 4-6
		sAccept(2, ballotPromised, slotAbs(0), entryAt(slotNext(3))),                                             // slot 7: truncate(3)
		msgBytes(paxos.MsgHeartbeat, 2, ballotPromised, slotAbs(7)),                                              // commit 7: the walk cuts at 6
		msgBytes(paxos.MsgHeartbeat, 2, ballotPromised, slotNext(2)),                                             // commit 10: ask for catch-up
		sCatchUpResponse(2, ballotPromised, entryAt(slotNext(0)), entryAt(slotNext(1))),                          // learn 8, 9
		msgBytes(paxos.MsgCatchUpRequest, 3, slotAbs(1)),                                                         // below the floor: TrimmedTo
		msgBytes(paxos.MsgCatchUpRequest, 3, slotAbs(6)),                                                         // a page from the floor
		msgBytes(paxos.MsgTrimmedTo, 3, slotNext(3), stateAhead),                                                 // jump ahead
		msgBytes(paxos.MsgPreRead, 3, 2),                                                                         //
		sRestart(),                                                                                               //
		sTick(5),                                                                                                 // campaign
		sPromise(3, slotNext(0), slotNext(1), entryAt(slotNext(0))),                                              // a first page
		sPromise(3, slotNext(1), slotAbs(0)),                                                                     // the terminal page: lead
		sAccepted(3, slotNext(0)),                                                                                //
		sTick(3),
	)
	candidate := recordSeed(tb, 0,
		sTick(3), // campaign
		msgBytes(paxos.MsgNack, 2, ballotPromised, ballotPromised, slotAbs(1)), // one refusal
		msgBytes(paxos.MsgNack, 3, ballotPromised, ballotPromised, slotAbs(1)), // two: lost
		sAccept(2, ballotAbove, slotAbs(0), entryAt(slotNext(0))),              // a vote at slot 1
		sTick(5), // campaign
		sPromiseFaulty(2, slotNext(0), slotAbs(1), ballotAbove), // slot 1 faulty at a higher ballot: blocked
		sTick(5), // campaign
		sPromise(3, slotNext(0), slotAbs(0), entryAt(slotAbs(1))), // lead
		sAccepted(3, slotAbs(1)),                                  //
		sControl(2), sControl(0),                                  //
		msgBytes(paxos.MsgNack, 2, ballotAbove, ballotLeading, slotAbs(9)), // deposed, and behind a floor
		sTick(4),
	)
	// The hostile-input probe's crash: a Commit at round 2^64-1 from a
	// member, then a campaign; then a Nack naming the last round in range,
	// and a campaign that must stand down instead of passing the bound.
	probe := recordSeed(tb, 0,
		msgBytes(paxos.MsgCommit, 2, 238, slotAbs(1)), // round 2^64-1: malformed
		sTick(5), // campaign at round 1
		msgBytes(paxos.MsgNack, 2, 224, 224, slotAbs(1)), // a promise at BallotRoundMax
		sTick(8), sTick(8), // campaigns exhausted
	)
	return [][]byte{leader, follower, candidate, probe}
}

func FuzzStep(f *testing.F) {
	for _, seed := range fuzzStepSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(playFuzzStep)
}
