package paxos_test

// This file feeds a node input no well-behaved peer sends and checks that
// Step never panics on it and answers as the design says: ignored (no batch,
// no state change), refused with a Nack naming the floor, or deduplicated.
// The table covers unknown senders, misaddressed and self-addressed
// messages, zero and foreign ballots, Accept entries at another ballot,
// Accepts and Prepares below the floor, duplicate, reordered, malformed and
// stale Promise pages, TrimmedTo with invalid or stale states and points,
// and CatchUpResponses with gaps. The Ready/Advance contract's documented
// panics are checked with recover. FuzzStep (bad_input_fuzz_test.go and
// bad_input_fuzz_driver_test.go) then fuzzes the same input.

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
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
