package paxos_test

// This file holds the unit tests of the core's small pieces, each citing the
// paper section or design rule it checks: the acceptor's Phase-1 and Phase-2
// answers (Paxos Made Simple §2.2) observed through the Node API and the
// read-only accessors, ballot ordering, the refusals of Options.Validate,
// Config.Validate and NewNode, which ops must be synced and which messages
// may leave early, the Ready/Advance contract, and smoke tests of the String
// methods. A solo node — node 1 of a three-node majority, driven by hand with
// the test playing its peers — carries most of them.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/storage/memstore"
)

// solo drives node 1 of a three-node majority by hand: the test plays nodes
// 2 and 3, feeds it messages and reads what it sends. Every batch is
// persisted and synced at once unless the test takes Ready itself.
type solo struct {
	t     *testing.T
	node  *paxos.Node
	store *memstore.Store
	cfg   paxos.Config
	opts  paxos.Options
}

func soloOpts() paxos.Options { return paxos.Options{ElectionTicks: 5, HeartbeatTicks: 2} }

func newSolo(t *testing.T, mode journal.WriterMode, opts paxos.Options, st *memstore.Store) *solo {
	t.Helper()
	if st == nil {
		st = memstore.New()
	}
	s := &solo{t: t, store: st, cfg: paxos.Config{ID: 1, Acceptors: majority(3), Mode: mode}, opts: opts}
	s.restart()
	return s
}

// restart boots the node again from its store's durable state.
func (s *solo) restart() {
	s.t.Helper()
	s.store.Crash()
	n, err := paxos.NewNode(s.cfg, s.opts, s.store)
	if err != nil {
		s.t.Fatalf("boot: %v", err)
	}
	s.node = n
}

// flush takes every pending batch, persists and syncs it, and returns the
// union of the batches (copied: the node reuses its buffers).
func (s *solo) flush() paxos.Ready {
	var out paxos.Ready
	for s.node.HasReady() {
		rd := s.node.Ready()
		s.store.Append(rd.Writes)
		s.store.Sync()
		out.Writes = append(out.Writes, rd.Writes...)
		out.MustSync = out.MustSync || rd.MustSync
		out.Messages = append(out.Messages, rd.Messages...)
		out.Applied = append(out.Applied, rd.Applied...)
		out.ReadStates = append(out.ReadStates, rd.ReadStates...)
		out.Votes = append(out.Votes, rd.Votes...)
		s.node.Advance()
		if s.node.WantsElectionTimeout() {
			s.node.SetElectionTimeout(0) // no jitter: the floor, ElectionTicks
		}
	}
	return out
}

func (s *solo) step(m paxos.Message) paxos.Ready {
	s.node.Step(m)
	return s.flush()
}

func (s *solo) tick(n int) paxos.Ready {
	var out paxos.Ready
	for range n {
		s.node.Tick()
		rd := s.flush()
		out.Writes = append(out.Writes, rd.Writes...)
		out.Messages = append(out.Messages, rd.Messages...)
		out.Applied = append(out.Applied, rd.Applied...)
		out.ReadStates = append(out.ReadStates, rd.ReadStates...)
	}
	return out
}

// campaign ticks the node until it campaigns and returns its ballot and the
// Prepares it sent.
func (s *solo) campaign() (paxos.Ballot, []paxos.Message) {
	s.t.Helper()
	var sent []paxos.Message
	for range 100 {
		sent = append(sent, s.tick(1).Messages...)
		if s.node.Role() == "candidate" {
			return s.node.Promised(), ofType(sent, paxos.MsgPrepare)
		}
	}
	s.t.Fatalf("node never campaigned")
	return paxos.Ballot{}, nil
}

// lead wins an election with node 2's (empty) promise.
func (s *solo) lead() paxos.Ballot {
	s.t.Helper()
	b, prepares := s.campaign()
	s.step(paxos.Message{Type: paxos.MsgPromise, From: 2, To: 1, Ballot: b, Slot: prepares[0].Slot})
	if !s.node.IsLeader() {
		s.t.Fatalf("node did not win with node 2's promise")
	}
	return b
}

func ofType(msgs []paxos.Message, typ paxos.MsgType) []paxos.Message {
	var out []paxos.Message
	for _, m := range msgs {
		if m.Type == typ {
			out = append(out, m)
		}
	}
	return out
}

func opKinds(ops []paxos.WriteOp) string {
	var out []string
	for _, op := range ops {
		out = append(out, op.Kind.String())
	}
	return strings.Join(out, " ")
}

func cmdOf(rec string) journal.Command { return unfenced(rec) }

func bal(round uint64, node paxos.NodeID) paxos.Ballot { return paxos.Ballot{Round: round, Node: node} }

// truncatedStore is a store whose log was cut below floor with the journal
// state sealed at next/first (multi-writer: no leader).
func truncatedStore(t *testing.T, floor paxos.Slot, next, first journal.Seq) *memstore.Store {
	t.Helper()
	st, err := journal.Restore(journal.LeaderUUID{}, 0, next, first)
	if err != nil {
		t.Fatal(err)
	}
	s := memstore.New()
	s.Append([]paxos.WriteOp{{Kind: paxos.OpTruncate, Slot: floor, State: st}})
	s.Sync()
	return s
}

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
