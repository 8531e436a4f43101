package paxos_test

// This file holds the unit tests of the core's small pieces that need no
// running node, or only a fresh one: ballot ordering, the refusals of
// Options.Validate, Config.Validate and NewNode, which ops must be synced and
// which messages may leave early, smoke tests of the String methods, and the
// bounds on messages' sizes. Each cites the paper section or design rule it
// checks.

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

// Paxos Made Simple §2.2: proposals are totally ordered. paros orders
// ballots by round, then by node, so two proposers never share a ballot.
func TestUnitBallotOrdering(t *testing.T) {
	for _, tc := range []struct {
		a, b paxos.Ballot
		cmp  int
	}{
		{bal(0, 0), bal(0, 0), 0},
		{bal(0, 0), bal(0, 1), -1},
		{bal(1, 1), bal(1, 2), -1},
		{bal(1, 9), bal(2, 1), -1},
		{bal(2, 1), bal(1, 9), 1},
		{bal(3, 2), bal(3, 2), 0},
		{bal(3, 3), bal(3, 2), 1},
	} {
		if got := tc.a.Compare(tc.b); got != tc.cmp {
			t.Errorf("%s.Compare(%s) = %d, want %d", tc.a, tc.b, got, tc.cmp)
		}
		if got := tc.a.Less(tc.b); got != (tc.cmp < 0) {
			t.Errorf("%s.Less(%s) = %v", tc.a, tc.b, got)
		}
		if tc.b.Compare(tc.a) != -tc.cmp {
			t.Errorf("Compare is not antisymmetric on %s, %s", tc.a, tc.b)
		}
	}
	if !(paxos.Ballot{}).IsZero() || bal(0, 1).IsZero() || bal(1, 0).IsZero() {
		t.Errorf("IsZero is true exactly for the zero ballot")
	}
}

// Options.Validate names a floor for every tunable; the zero value of a
// field means its default.
func TestUnitOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts paxos.Options
		ok   bool
	}{
		{"defaults", paxos.Options{}, true},
		{"smallest election timeout", paxos.Options{ElectionTicks: 3, HeartbeatTicks: 2}, true},
		{"election timeout below 3", paxos.Options{ElectionTicks: 2, HeartbeatTicks: 1}, false},
		{"heartbeat not below the election timeout", paxos.Options{ElectionTicks: 4, HeartbeatTicks: 4}, false},
		{"default election with a long heartbeat", paxos.Options{HeartbeatTicks: 10}, false},
		{"negative heartbeat", paxos.Options{HeartbeatTicks: -1}, false},
		{"negative window", paxos.Options{PipelineWindow: -1}, false},
		{"queue below the window", paxos.Options{PipelineWindow: 8, ProposeQueueMax: 4}, false},
		{"queue equals the window", paxos.Options{PipelineWindow: 8, ProposeQueueMax: 8}, true},
		{"window above the default queue", paxos.Options{PipelineWindow: 5000}, false},
		{"promise batch at the ceiling", paxos.Options{PromiseBatch: 64}, true},
		{"promise batch above the ceiling", paxos.Options{PromiseBatch: 65}, false},
		{"negative promise batch", paxos.Options{PromiseBatch: -1}, false},
		{"negative catch-up batch", paxos.Options{CatchUpBatch: -1}, false},
		{"negative catch-up retry", paxos.Options{CatchUpRetryTicks: -1}, false},
		{"negative read TTL", paxos.Options{ReadTTLTicks: -1}, false},
		{"negative reads max", paxos.Options{ReadsMax: -1}, false},
		{"negative resend batch", paxos.Options{ResendBatch: -1}, false},
	} {
		err := tc.opts.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, paxos.ErrConfig) {
			t.Errorf("%s: %v is not ErrConfig", tc.name, err)
		}
	}
}

// Config.Validate refuses a configuration a colocated node cannot run.
func TestUnitConfigValidate(t *testing.T) {
	sys := majority(3)
	for _, tc := range []struct {
		name string
		cfg  paxos.Config
		ok   bool
	}{
		{"plain", paxos.Config{ID: 2, Acceptors: sys, Mode: journal.ModeSingle}, true},
		{"multi-writer", paxos.Config{ID: 3, Acceptors: sys, Mode: journal.ModeMulti}, true},
		{"node id 0", paxos.Config{ID: 0, Acceptors: sys, Mode: journal.ModeSingle}, false},
		{"no acceptors", paxos.Config{ID: 1, Mode: journal.ModeSingle}, false},
		{"not an acceptor", paxos.Config{ID: 4, Acceptors: sys, Mode: journal.ModeSingle}, false},
		{"writer mode unset", paxos.Config{ID: 1, Acceptors: sys}, false},
		{"writer mode unknown", paxos.Config{ID: 1, Acceptors: sys, Mode: journal.WriterMode(9)}, false},
	} {
		err := tc.cfg.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, paxos.ErrConfig) {
			t.Errorf("%s: %v is not ErrConfig", tc.name, err)
		}
	}
}

// fakeStorage is a Storage whose answers the test sets field by field.
type fakeStorage struct {
	hs     paxos.HardState
	first  paxos.Slot
	sealed journal.State
}

func (f fakeStorage) InitialState() paxos.HardState { return f.hs }
func (f fakeStorage) FirstSlot() paxos.Slot         { return f.first }
func (f fakeStorage) LastSlot() paxos.Slot          { return 0 }
func (f fakeStorage) Accepted(paxos.Slot) (paxos.Ballot, journal.Command, bool) {
	return paxos.Ballot{}, journal.Command{}, false
}
func (f fakeStorage) SealedState() journal.State        { return f.sealed }
func (f fakeStorage) FaultyEntries() []paxos.SlotBallot { return nil }

// Boot is restart, and NewNode refuses what it cannot
// run — a bad configuration or tunables (ErrConfig), or a store whose sealed
// journal state breaks a State invariant (ErrStorage).
func TestUnitNewNodeRefusals(t *testing.T) {
	good := paxos.Config{ID: 1, Acceptors: majority(3), Mode: journal.ModeSingle}
	fresh := fakeStorage{first: 1, sealed: journal.Initial()}
	leaderWithoutTerm := journal.Initial()
	leaderWithoutTerm.Leader = writerU
	for _, tc := range []struct {
		name string
		cfg  paxos.Config
		opts paxos.Options
		st   paxos.Storage
		want error
	}{
		{"fresh store", good, paxos.Options{}, fresh, nil},
		{"bad configuration", paxos.Config{ID: 7, Acceptors: majority(3), Mode: journal.ModeSingle}, paxos.Options{}, fresh, paxos.ErrConfig},
		{"bad tunables", good, paxos.Options{ElectionTicks: 1}, fresh, paxos.ErrConfig},
		{"zero sealed state", good, paxos.Options{}, fakeStorage{first: 1}, paxos.ErrStorage},
		{"sealed first_seq above next_seq", good, paxos.Options{}, fakeStorage{first: 1, sealed: journal.State{NextSeq: 2, FirstSeq: 5}}, paxos.ErrStorage},
		{"sealed leader without a term", good, paxos.Options{}, fakeStorage{first: 1, sealed: leaderWithoutTerm}, paxos.ErrStorage},
	} {
		n, err := paxos.NewNode(tc.cfg, tc.opts, tc.st)
		if tc.want == nil {
			if err != nil || n == nil {
				t.Errorf("%s: NewNode = %v, %v", tc.name, n, err)
			}
			continue
		}
		if !errors.Is(err, tc.want) || n != nil {
			t.Errorf("%s: NewNode = %v, %v; want %v", tc.name, n, err, tc.want)
		}
	}
	// A zero first slot reads as 1: the floor is never 0.
	n, err := paxos.NewNode(good, paxos.Options{}, fakeStorage{sealed: journal.Initial()})
	if err != nil || n.Floor() != 1 || n.ChosenIndex() != 0 {
		t.Fatalf("boot with first slot 0: %v floor %d", err, n.Floor())
	}
}

// Every durable delta needs a sync before the batch's messages leave, except
// the chosen index, which is re-derivable.
func TestUnitWriteOpNeedsSync(t *testing.T) {
	for k := paxos.OpInvalid; k <= paxos.OpTrimmedTo+1; k++ {
		want := k != paxos.OpSetChosenIndex
		if got := (paxos.WriteOp{Kind: k}).NeedsSync(); got != want {
			t.Errorf("%s.NeedsSync() = %v, want %v", k, got, want)
		}
	}
}

// Persist before send: a message may leave before its batch is durable only
// if it promises nothing and announces no decision — Accept, PreRead and
// CatchUpRequest. Prepare is held (docs/design/divergences.md).
func TestUnitMessageEarlyOK(t *testing.T) {
	early := []paxos.MsgType{paxos.MsgAccept, paxos.MsgPreRead, paxos.MsgCatchUpRequest}
	for k := range paxos.MsgType(32) {
		if got := (paxos.Message{Type: k}).EarlyOK(); got != slices.Contains(early, k) {
			t.Errorf("%s.EarlyOK() = %v", k, got)
		}
	}
}

// The String methods name what they print; a smoke test that each kind
// renders and unknown values do not panic.
func TestUnitStrings(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{bal(3, 2).String(), "3.0000000000000002"},
		{paxos.MsgPromise.String(), "Promise"},
		{paxos.MsgType(99).String(), "Msg(99)"},
		{paxos.OpTrimmedTo.String(), "trimmed-to"},
		{paxos.OpKind(42).String(), "op(42)"},
		{(paxos.WriteOp{Kind: paxos.OpSetPromise, Ballot: bal(2, 1)}).String(), "promise(2.0000000000000001)"},
		{(paxos.WriteOp{Kind: paxos.OpSetChosenIndex, Slot: 7}).String(), "chosen(7)"},
		{(paxos.WriteOp{Kind: paxos.OpInvalid}).String(), "invalid"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	for _, op := range []paxos.WriteOp{
		{Kind: paxos.OpAccept, Slot: 3, Ballot: bal(1, 1), Command: cmdOf("x")},
		{Kind: paxos.OpLearned, Slot: 3, Ballot: bal(1, 1), Command: journal.Noop()},
		{Kind: paxos.OpTruncate, Slot: 4, State: journal.Initial()},
		{Kind: paxos.OpTrimmedTo, Slot: 4, State: journal.Initial()},
	} {
		if s := op.String(); !strings.HasPrefix(s, op.Kind.String()+"(") {
			t.Errorf("%q does not name its kind %s", s, op.Kind)
		}
	}
	entries := []paxos.SlotCommand{{Slot: 2, Ballot: bal(1, 2), Command: cmdOf("x")}}
	for k := range paxos.MsgType(21) {
		m := paxos.Message{Type: k, From: 2, To: 1, Ballot: bal(1, 2), Entries: entries}
		if s := m.String(); !strings.HasPrefix(s, k.String()+" 0000000000000002→0000000000000001 b=1.0000000000000002") {
			t.Errorf("%q does not start with its type and route", s)
		}
	}
	if s := (paxos.Message{Type: paxos.MsgAccept}).String(); strings.Contains(s, "slots=") {
		t.Errorf("an empty Accept names slots: %q", s)
	}
	s := newSolo(t, journal.ModeMulti, soloOpts(), nil)
	expectEq(t, "id", s.node.ID(), paxos.NodeID(1))
	expectEq(t, "follower", s.node.Role(), "follower")
	s.campaign()
	expectEq(t, "candidate", s.node.Role(), "candidate")
}

// A lone member may not be a Phase-1 quorum of several: it would win on its
// own undurable promise and send Accepts early (docs/design/divergences.md).
func TestConfigRefusesALoneMemberPhase1Quorum(t *testing.T) {
	flex, err := quorum.NewFlexible([]quorum.ID{1, 2, 3}, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	column, err := quorum.NewGrid([]quorum.ID{1, 2, 3}, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	solo, err := quorum.NewMajority([]quorum.ID{1})
	if err != nil {
		t.Fatal(err)
	}
	for _, sys := range []quorum.System{flex, column} {
		cfg := paxos.Config{ID: 1, Acceptors: sys, Mode: journal.ModeSingle}
		if err := cfg.Validate(); !errors.Is(err, paxos.ErrConfig) {
			t.Fatalf("%s: Validate = %v, want ErrConfig", sys, err)
		}
	}
	if err := (paxos.Config{ID: 1, Acceptors: solo, Mode: journal.ModeSingle}).Validate(); err != nil {
		t.Fatalf("a one-member cell: %v", err)
	}
}

// Every queue and loop has a bound: messages are bounded in bytes as well as
// in entries. With writes of 600 KiB, an Accept batch, a Promise page and a
// catch-up page each carry at most MessageBytesMax of records plus one write.
func TestMessagesAreBoundedInBytes(t *testing.T) {
	big := func(i int) journal.Entry {
		return journal.Entry{Records: [][]byte{make([]byte, 600<<10), {byte(i)}}}
	}
	net := newNetwork(t, majority(3), journal.ModeMulti, paxos.Options{ElectionTicks: 6, HeartbeatTicks: 2}, 1)
	l := net.node(1)
	net.electLeader(l)
	for i := range 12 {
		l.node.Propose(big(i))
	}
	net.drain(l)
	limit := paxos.MessageBytesMax + (600<<10 + 1)
	check := func(what string) {
		for _, m := range net.pool {
			bytes := 0
			for _, e := range m.Entries {
				bytes += e.Command.Entry.Bytes()
			}
			if bytes > limit {
				t.Fatalf("%s: a %s carries %d record bytes (limit %d)", what, m.Type, bytes, limit)
			}
		}
	}
	check("accepts")
	net.settle(5)
	if l.node.ChosenIndex() < 12 {
		t.Fatalf("chosen %d, want all 12 big writes", l.node.ChosenIndex())
	}
	// A lagging node catches up through byte-bounded pages.
	lag := net.node(3)
	net.crash(lag)
	for i := range 12 {
		l.node.Propose(big(100 + i))
	}
	net.drain(l)
	net.settle(5)
	net.boot(lag)
	sawCatchUp := false
	for range 40 {
		for len(net.pool) > 0 {
			check("catch-up")
			if net.pool[0].Type == paxos.MsgCatchUpResponse && len(net.pool[0].Entries) > 0 {
				sawCatchUp = true
			}
			net.deliver(0)
			for _, x := range net.nodes {
				net.sync(x)
			}
		}
		for _, x := range net.nodes {
			net.tick(x)
		}
	}
	if !sawCatchUp {
		t.Fatalf("the lagging node never received a catch-up page")
	}
	if got, want := lag.node.ChosenIndex(), l.node.ChosenIndex(); got != want {
		t.Fatalf("lagging node chose %d, leader %d", got, want)
	}
}
