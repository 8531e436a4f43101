// This file checks the boot decision table, quarantine and reopen
// (docs/design/host.md "Boot and quarantine") from outside package host.
// Hosts are driven by hand through fakeEnv (fakeenv_test.go); helpers are
// in host_test.go.
package host_test

import (
	"errors"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/storage"
)

// ---------------------------------------------------------------------------
// 4. Boot (docs/design/host.md "Boot and quarantine"; storage.CheckBoot's
// table).

func TestBoot_DecisionTableThroughNew(t *testing.T) {
	cases := []struct {
		name      string
		claim     storage.Claim
		formatted journal.WriterMode // ModeUnset: the store is empty
		want      error              // nil: Live
	}{
		{"FirstBoot on an empty store formats it", first, journal.ModeUnset, nil},
		{"FirstBoot on a formatted store is refused", first, multi, storage.ErrFormatted},
		{"ExistingMember with no marker is amnesia", existing, journal.ModeUnset, storage.ErrAmnesia},
		{"ExistingMember under another writer mode is a mismatch", existing, single, storage.ErrConfigMismatch},
		{"ExistingMember with its own marker boots", existing, multi, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Arrange.
			s := spec(jA, multi, tc.claim)
			env := newFakeEnv(t, 1)
			if tc.formatted != journal.ModeUnset {
				other := s
				other.Mode = tc.formatted
				if err := env.store(jA).Format(marker(other, 1)); err != nil {
					t.Fatal(err)
				}
			}
			formatsBefore := env.formats[jA]

			// Act.
			h, err := host.New(1, env, testTunables(), []host.JournalSpec{s})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			env.attach(h)

			// Check.
			st, fault := h.Status(jA)
			stopped, stopErr := h.Stopped()
			if tc.want == nil {
				if st != host.Live || fault != nil || stopped {
					t.Fatalf("status %v fault %v stopped %v, want Live", st, fault, stopped)
				}
				bs, _ := env.store(jA).Boot()
				if bs.Marker == nil || !bs.Marker.Equal(marker(s, 1)) {
					t.Fatalf("store marker = %v, want %v", bs.Marker, marker(s, 1))
				}
				if wantFormats := map[storage.Claim]int{first: 1, existing: 0}[tc.claim]; env.formats[jA]-formatsBefore != wantFormats {
					t.Fatalf("FormatStores calls for jA = %d, want %d", env.formats[jA]-formatsBefore, wantFormats)
				}
				return
			}
			if st != host.Down || !errors.Is(fault, tc.want) {
				t.Fatalf("status %v fault %v, want Down with %v", st, fault, tc.want)
			}
			if h.Node(jA) != nil {
				t.Fatalf("a Down journal exposes a node")
			}
			// docs/design/host.md: "A process whose every journal is down or
			// quarantined stops (fail-stop) with the last fault."
			if !stopped || !errors.Is(stopErr, host.ErrStopped) || !errors.Is(stopErr, tc.want) {
				t.Fatalf("Stopped() = %v, %v; want stopped with ErrStopped and %v", stopped, stopErr, tc.want)
			}
			if got := h.Counters().BootRefusals; got != 1 {
				t.Fatalf("BootRefusals = %d, want 1", got)
			}
		})
	}
}

// docs/design/host.md: "A refused journal is Down for good"; the process keeps
// serving its other journals, and a Down journal's calls and messages are
// refused.
func TestBoot_OneJournalDownOthersServe(t *testing.T) {
	// Arrange: jA claims membership with no store (amnesia); jB is new.
	env := newFakeEnv(t, 3)
	h, err := host.New(3, env, testTunables(), []host.JournalSpec{spec(jA, multi, existing), spec(jB, multi, first)})
	if err != nil {
		t.Fatal(err)
	}
	env.attach(h)

	// Act.
	h.OnCall(write(1, jA, "x"))
	h.OnCall(read(2, jA, 1, 0, 0))
	h.OnCall(host.Call{ID: 3, Kind: host.CallInspect, Inspect: host.InspectRequest{Journal: jA}})
	h.OnDeliver(2, append(env1(jA, paxos.Message{Type: paxos.MsgPrepare, From: 2, To: 3, Ballot: paxos.Ballot{Round: 1, Node: 2}, Slot: 1}),
		env1(jB, paxos.Message{Type: paxos.MsgPrepare, From: 2, To: 3, Ballot: paxos.Ballot{Round: 1, Node: 2}, Slot: 1})...))

	// Check.
	if stopped, _ := h.Stopped(); stopped {
		t.Fatalf("a host with a live journal stopped")
	}
	if st, _ := h.Status(jB); st != host.Live {
		t.Fatalf("jB status %v, want Live", st)
	}
	if r, _ := env.reply(1); r.Reply.NoVerdict != journal.Unavailable {
		t.Fatalf("write to a Down journal = %+v, want Unavailable", r.Reply)
	}
	if r, _ := env.reply(2); r.Read.Served || r.Read.UnknownJournal {
		t.Fatalf("read of a Down journal = %+v, want unserved", r.Read)
	}
	if r, _ := env.reply(3); r.Inspect.Role != "down" || r.Inspect.UnknownJournal {
		t.Fatalf("inspect of a Down journal = %+v, want role down", r.Inspect)
	}
	if got := h.Counters().Dropped; got != 1 {
		t.Fatalf("Dropped = %d, want 1 (the Down journal's Prepare)", got)
	}
	if got := h.Node(jB).Promised(); got != (paxos.Ballot{Round: 1, Node: 2}) {
		t.Fatalf("jB promised %v, want 1.2", got)
	}
}

// Env.BootStore / FormatStores / ReopenStore: a store that cannot be opened,
// formatted or reopened leaves its journal Down with the reason.
func TestBoot_StoreFaultsLeaveJournalDown(t *testing.T) {
	for _, which := range []string{"boot", "format"} {
		t.Run(which, func(t *testing.T) {
			env := newFakeEnv(t, 1)
			if which == "boot" {
				env.bootErr[jA] = errDisk
			} else {
				env.formatErr[jA] = errDisk
			}
			h, err := host.New(1, env, testTunables(), []host.JournalSpec{spec(jA, multi, first), spec(jB, multi, first)})
			if err != nil {
				t.Fatal(err)
			}
			if st, fault := h.Status(jA); st != host.Down || !errors.Is(fault, errDisk) {
				t.Fatalf("status %v fault %v, want Down with the disk error", st, fault)
			}
			if st, _ := h.Status(jB); st != host.Live {
				t.Fatalf("jB status %v, want Live", st)
			}
		})
	}
}

// host.New refuses a configuration it cannot run (and builds nothing).
func TestBoot_NewRefusesBadConfiguration(t *testing.T) {
	good := spec(jA, multi, first)
	unsetMode := good
	unsetMode.Mode = journal.ModeUnset
	noMembers := good
	noMembers.Members = nil
	notMember := good
	notMember.Members = []paxos.NodeID{2, 3, 4}
	cases := []struct {
		name  string
		tun   host.Tunables
		specs []host.JournalSpec
	}{
		{"tunables below a floor", host.Tunables{ElectionTicks: 2}, []host.JournalSpec{good}},
		{"unset journal id", testTunables(), []host.JournalSpec{spec(journal.ID{Tenant: 7}, multi, first)}},
		{"journal listed twice", testTunables(), []host.JournalSpec{good, good}},
		{"no members", testTunables(), []host.JournalSpec{noMembers}},
		{"node not a member", testTunables(), []host.JournalSpec{notMember}},
		{"writer mode unset", testTunables(), []host.JournalSpec{unsetMode}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newFakeEnv(t, 1)
			h, err := host.New(1, env, tc.tun, tc.specs)
			if err == nil || h != nil {
				t.Fatalf("New accepted %s", tc.name)
			}
			if len(env.boots) != 0 {
				t.Fatalf("New booted a store before refusing the configuration")
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 5. Quarantine (docs/design/host.md "Boot and quarantine").

// docs/design/host.md: "A storage error on a journal quarantines it: its node
// is dropped and sends nothing; its parked calls are answered ambiguously and
// its queued messages are dropped; the process keeps serving its other
// journals; after QuarantineTicks the store is reopened and the journal boots
// again from what is durable."
func TestQuarantine_PersistErrorIsolatesOneJournal(t *testing.T) {
	// Arrange: node 1 leads jA and jB. Its mailbox to node 2 drains eight
	// messages per event, so a burst of 60 PreReadAcks of jA leaves many of
	// them queued.
	tun := testTunables()
	tun.DeliveryBatch, tun.FlushDeliversMax = 8, 1
	c := newCluster(t, tun, spec(jA, multi, first), spec(jB, multi, first))
	c.elect(1, jA, jB)
	h1, e1 := c.hosts[1], c.envs[1]
	var burst []paxos.Message
	for i := range 60 {
		burst = append(burst, paxos.Message{Type: paxos.MsgPreRead, From: 2, To: 1, Ctx: uint64(1000 + i)})
	}
	h1.OnDeliver(2, env1(jA, burst...))
	h1.OnCall(write(1, jA, "a")) // parks on jA; its vote outstanding
	h1.OnCall(write(2, jB, "b")) // parks on jB
	h1.OnCall(read(5, jA, 1, 0, 0))
	c.deliver() // whatever left so far
	voteA := e1.persistsOf(jA)
	if len(voteA) != 1 {
		t.Fatalf("jA outstanding persists = %d, want 1", len(voteA))
	}
	mark := sendMark(e1)
	if acks := countType(envelopes(sentSince(e1, sendMark(nil), 2)), paxos.MsgPreReadAck); acks >= len(burst) {
		t.Fatalf("all %d PreReadAcks already left; the test needs some queued", acks)
	}

	// Act: jA's persist fails.
	e1.completeToken(voteA[0].Token, &storage.IOError{Op: "sync", Outcome: storage.OutcomeUnknown, Err: errDisk})

	// Check: jA quarantined, its parked call answered Unavailable
	// (ambiguous), the process still up.
	st, fault := h1.Status(jA)
	if st != host.Quarantined || !errors.Is(fault, errDisk) {
		t.Fatalf("jA status %v fault %v, want Quarantined with the disk error", st, fault)
	}
	if r := c.mustReply(1, 1); r.Reply.NoVerdict != journal.Unavailable || !r.Reply.Ambiguous() {
		t.Fatalf("parked jA call = %+v, want Unavailable (ambiguous)", r.Reply)
	}
	if r := c.mustReply(1, 5); r.Read.Served || r.Read.FromSeq != 1 {
		t.Fatalf("parked jA read = %+v, want unserved", r.Read)
	}
	if stopped, _ := h1.Stopped(); stopped {
		t.Fatalf("host stopped with jB still live")
	}
	if h1.Node(jA) != nil {
		t.Fatalf("a quarantined journal still exposes its node")
	}
	if r, _ := c.call(1, host.Call{ID: 3, Kind: host.CallInspect, Inspect: host.InspectRequest{Journal: jA}}); !r.Inspect.Quarantined || r.Inspect.Role != "quarantined" {
		t.Fatalf("inspect = %+v, want quarantined", r.Inspect)
	}
	if r, _ := c.call(1, write(4, jA, "late")); r.Reply.NoVerdict != journal.Unavailable {
		t.Fatalf("write to a quarantined journal = %+v, want Unavailable", r.Reply)
	}

	// Act: the cluster runs on; node 2 and 3 still send jA messages to 1.
	c.settle()
	for range 2 {
		h1.OnTick()
		c.settle()
	}

	// Check: jB committed; node 1 sent nothing of jA since the fault
	// (its queued PreReadAcks were dropped with its lane).
	if r := c.mustReply(1, 2); r.Reply.Outcome.Kind != journal.Accepted {
		t.Fatalf("jB write = %+v, want Accepted while jA is quarantined", r.Reply)
	}
	if n := sentOfJournalSince(e1, jA, mark); n != 0 {
		t.Fatalf("node 1 sent %d messages of the quarantined journal", n)
	}
	if got := h1.Counters().Quarantines; got != 1 {
		t.Fatalf("Quarantines = %d, want 1", got)
	}

	// Act: the third tick of the quarantine.
	h1.OnTick()
	c.settle()

	// Check: jA reopened and boots again from its store.
	if e1.reopens[jA] != 1 {
		t.Fatalf("ReopenStore(jA) called %d times, want 1", e1.reopens[jA])
	}
	if st, fault := h1.Status(jA); st != host.Live || fault != nil {
		t.Fatalf("jA status %v fault %v after QuarantineTicks, want Live", st, fault)
	}
	if h1.Node(jA).Promised() != c.hosts[2].Node(jA).Promised() {
		t.Fatalf("reopened jA promised %v, want the durable promise %v", h1.Node(jA).Promised(), c.hosts[2].Node(jA).Promised())
	}
	if got := h1.Counters().Reopens; got != 1 {
		t.Fatalf("Reopens = %d, want 1", got)
	}
}

// sendMark is how many Delivers env has sent to each peer so far.
func sendMark(e *fakeEnv) map[paxos.NodeID]int {
	m := map[paxos.NodeID]int{}
	if e == nil {
		return m // the beginning of time
	}
	for to, ds := range e.sendLog {
		m[to] = len(ds)
	}
	return m
}

// sentSince lists the Delivers env sent to peer to after mark.
func sentSince(e *fakeEnv, mark map[paxos.NodeID]int, to paxos.NodeID) []sentDeliver {
	var out []sentDeliver
	for _, d := range e.sendLog[to][mark[to]:] {
		out = append(out, sentDeliver{From: e.id, To: to, Batch: d})
	}
	return out
}

// sentOfJournalSince counts the envelopes of journal j env sent after mark.
func sentOfJournalSince(e *fakeEnv, j journal.ID, mark map[paxos.NodeID]int) int {
	n := 0
	for to, ds := range e.sendLog {
		for _, d := range ds[mark[to]:] {
			for _, env := range d {
				if env.Journal == j {
					n++
				}
			}
		}
	}
	return n
}

// docs/design/host.md: "A process whose every journal is down or quarantined
// stops (fail-stop) with the last fault."
func TestQuarantine_OnlyJournalStopsTheHost(t *testing.T) {
	// Arrange.
	c := newCluster(t, testTunables(), spec(jA, multi, first))
	c.elect(1, jA)
	h1, e1 := c.hosts[1], c.envs[1]
	h1.OnCall(write(1, jA, "a"))
	vote := e1.persistsOf(jA)

	// Act.
	e1.completeToken(vote[0].Token, errDisk)

	// Check.
	stopped, err := h1.Stopped()
	if !stopped || !errors.Is(err, host.ErrStopped) || !errors.Is(err, errDisk) {
		t.Fatalf("Stopped() = %v, %v; want stopped with ErrStopped and the disk error", stopped, err)
	}
	if r := c.mustReply(1, 1); r.Reply.NoVerdict != journal.Unavailable {
		t.Fatalf("parked call = %+v, want Unavailable", r.Reply)
	}

	// Check: a stopped host answers calls Unavailable and does nothing else.
	mark, now := sendMark(e1), h1.Now()
	h1.OnCall(write(2, jA, "b"))
	h1.OnCall(read(3, jA, 1, 0, 0))
	h1.OnTick()
	h1.OnDeliver(2, env1(jA, paxos.Message{Type: paxos.MsgHeartbeat, From: 2, To: 1, Ballot: paxos.Ballot{Round: 9, Node: 2}}))
	h1.OnPersisted(vote[0].Token, nil)
	if r := c.mustReply(1, 2); r.Reply.NoVerdict != journal.Unavailable || !r.Reply.Ambiguous() {
		t.Fatalf("write to a stopped host = %+v, want Unavailable (ambiguous)", r.Reply)
	}
	if r := c.mustReply(1, 3); r.Read.Served {
		t.Fatalf("read on a stopped host = %+v, want unserved", r.Read)
	}
	if h1.Now() != now || sentOfJournalSince(e1, jA, mark) != 0 || e1.reopens[jA] != 0 {
		t.Fatalf("a stopped host ticked, sent or reopened")
	}
}

// docs/design/host.md: "after QuarantineTicks the store is reopened"; a store
// that will not reopen leaves its journal Down for good.
func TestQuarantine_ReopenFailureLeavesJournalDown(t *testing.T) {
	// Arrange: jA quarantined on node 1, jB live.
	tun := testTunables()
	c := newCluster(t, tun, spec(jA, multi, first), spec(jB, multi, first))
	c.elect(1, jA, jB)
	h1, e1 := c.hosts[1], c.envs[1]
	h1.OnCall(write(1, jA, "a"))
	e1.completeToken(e1.persistsOf(jA)[0].Token, errDisk)
	e1.reopenErr[jA] = errDisk

	// Act.
	for range tun.QuarantineTicks {
		h1.OnTick()
		c.settle()
	}

	// Check.
	if st, fault := h1.Status(jA); st != host.Down || !errors.Is(fault, errDisk) {
		t.Fatalf("jA status %v fault %v, want Down", st, fault)
	}
	if stopped, _ := h1.Stopped(); stopped {
		t.Fatalf("host stopped with jB live")
	}
	for range tun.QuarantineTicks {
		h1.OnTick()
	}
	if e1.reopens[jA] != 1 {
		t.Fatalf("ReopenStore(jA) called %d times, want 1 (Down is for good)", e1.reopens[jA])
	}
}

// docs/design/host.md: a batch completed after its journal was quarantined
// belongs to an incarnation that is gone and changes nothing.
func TestQuarantine_LateCompletionOfOldIncarnationIgnored(t *testing.T) {
	// Arrange: two writes on jA; the first persist fails, the second is
	// still outstanding.
	c := newCluster(t, testTunables(), spec(jA, multi, first), spec(jB, multi, first))
	c.elect(1, jA, jB)
	h1, e1 := c.hosts[1], c.envs[1]
	h1.OnCall(write(1, jA, "a"))
	h1.OnCall(write(2, jA, "b"))
	ps := e1.persistsOf(jA)
	if len(ps) != 2 {
		t.Fatalf("outstanding = %d, want 2", len(ps))
	}
	e1.completeToken(ps[0].Token, errDisk)
	mark := sendMark(e1)

	// Act.
	e1.completeToken(ps[1].Token, nil)

	// Check.
	if st, _ := h1.Status(jA); st != host.Quarantined {
		t.Fatalf("jA status %v, want still Quarantined", st)
	}
	if sentOfJournalSince(e1, jA, mark) != 0 {
		t.Fatalf("a late completion released messages of a quarantined journal")
	}
	for _, id := range []host.CallID{1, 2} {
		if r := c.mustReply(1, id); r.Reply.NoVerdict != journal.Unavailable {
			t.Fatalf("call %d = %+v, want Unavailable", id, r.Reply)
		}
	}
}
