// This file holds the test doubles for package host: fakeEnv, a hand-driven
// host.Env, and cluster, three hosts wired through fake envs. Nothing here
// runs by itself and nothing is asynchronous: a test decides when each Send
// is delivered and when each Persist completes (in order or not, with or
// without an error), so every interleaving a test checks is spelled out in
// the test. fakeEnv records every Send per peer, queues every Persist,
// records every Reply by CallID (and fails the test on a second answer to
// one call: every call is answered exactly once), serves BootStore,
// FormatStores and ReopenStore from one memstore.Store per journal, and draws
// Rand from a fixed math/rand/v2 PCG seed so a run replays bit for bit.
package host_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/memstore"
)

// Journal ids and members shared by the tests.
var (
	jA      = journal.ID{Tenant: 7, Journal: 0xA}
	jB      = journal.ID{Tenant: 7, Journal: 0xB}
	members = []paxos.NodeID{1, 2, 3}
)

// sentDeliver is one Env.Send: a Deliver from the env's host to peer To.
type sentDeliver struct {
	From, To paxos.NodeID
	Batch    []host.Envelope
}

// persistCall is one Env.Persist the test has not completed yet.
type persistCall struct {
	Token   host.Token
	Journal journal.ID
	Ops     []paxos.WriteOp
	Sync    bool
	done    bool // completed without error, waiting for an earlier batch
}

// fakeEnv is a host.Env driven by hand.
type fakeEnv struct {
	t  testing.TB
	id paxos.NodeID
	h  *host.Host // set by attach once host.New returned

	outbox  []sentDeliver                      // sent, not yet consumed by the test
	sendLog map[paxos.NodeID][][]host.Envelope // every Deliver ever sent, per peer
	queue   []*persistCall                     // issued, not completed, oldest first
	disk    map[journal.ID][]*persistCall      // per journal, in issue order, not yet applied
	replies map[host.CallID]host.Response
	order   []host.CallID // reply order
	stores  map[journal.ID]*memstore.Store
	rng     *rand.Rand

	// Injected store faults, and how often each store call was made.
	bootErr, formatErr, reopenErr map[journal.ID]error
	boots, formats, reopens       map[journal.ID]int
	// formatCalls counts FormatStores calls (each one synced commit).
	formatCalls int
}

func newFakeEnv(t testing.TB, id paxos.NodeID) *fakeEnv {
	return &fakeEnv{t: t, id: id,
		sendLog: map[paxos.NodeID][][]host.Envelope{},
		replies: map[host.CallID]host.Response{},
		stores:  map[journal.ID]*memstore.Store{},
		disk:    map[journal.ID][]*persistCall{},
		rng:     rand.New(rand.NewPCG(0x5eed, uint64(id))),
		bootErr: map[journal.ID]error{}, formatErr: map[journal.ID]error{}, reopenErr: map[journal.ID]error{},
		boots: map[journal.ID]int{}, formats: map[journal.ID]int{}, reopens: map[journal.ID]int{},
	}
}

func (e *fakeEnv) attach(h *host.Host) { e.h = h }

// store is journal j's store, created empty on first use.
func (e *fakeEnv) store(j journal.ID) *memstore.Store {
	st := e.stores[j]
	if st == nil {
		st = memstore.New()
		e.stores[j] = st
	}
	return st
}

func (e *fakeEnv) Send(to paxos.NodeID, batch []host.Envelope) {
	if len(batch) == 0 {
		e.t.Fatalf("node %d sent an empty Deliver to %d", e.id, to)
	}
	b := slices.Clone(batch)
	e.outbox = append(e.outbox, sentDeliver{From: e.id, To: to, Batch: b})
	e.sendLog[to] = append(e.sendLog[to], b)
}

func (e *fakeEnv) Persist(t host.Token, j journal.ID, ops []paxos.WriteOp, sync bool) {
	if len(ops) == 0 {
		e.t.Fatalf("node %d persisted an empty batch (token %d)", e.id, t)
	}
	p := &persistCall{Token: t, Journal: j, Ops: slices.Clone(ops), Sync: sync}
	e.queue = append(e.queue, p)
	e.disk[j] = append(e.disk[j], p)
}

func (e *fakeEnv) Reply(id host.CallID, r host.Response) {
	if _, dup := e.replies[id]; dup {
		e.t.Fatalf("node %d answered call %d twice: %+v", e.id, id, r)
	}
	e.replies[id] = r
	e.order = append(e.order, id)
}

func (e *fakeEnv) BootStore(j journal.ID) (*storage.BootState, error) {
	e.boots[j]++
	if err := e.bootErr[j]; err != nil {
		return nil, err
	}
	return e.store(j).Boot()
}

func (e *fakeEnv) FormatStores(ms []storage.Marker) error {
	e.formatCalls++
	for _, m := range ms {
		e.formats[m.Journal]++
		if err := e.formatErr[m.Journal]; err != nil {
			return err
		}
	}
	for _, m := range ms {
		if err := e.store(m.Journal).Format(m); err != nil {
			return err
		}
	}
	return nil
}

func (e *fakeEnv) ReopenStore(j journal.ID) error {
	e.reopens[j]++
	if err := e.reopenErr[j]; err != nil {
		return err
	}
	e.store(j).Reopen()
	e.disk[j] = nil // a reopened store forgets the writes in flight
	return nil
}

func (e *fakeEnv) Rand() uint64 { return e.rng.Uint64() }

func (e *fakeEnv) PersistRegistry(t host.Token, ops []matchmaker.WriteOp) {
	e.t.Fatalf("a host without a matchmaker persisted a registry batch")
}

func (e *fakeEnv) DeleteStore(j journal.ID) error {
	delete(e.stores, j)
	return nil
}

var _ host.Env = (*fakeEnv)(nil)

// complete finishes the i-th outstanding persist, then the host hears
// OnPersisted. On success its ops become durable in the journal's store as
// soon as every earlier batch of the journal is (Env.Persist: "in order
// after every earlier Persist of j"); on error they never reach the store.
func (e *fakeEnv) complete(i int, err error) *persistCall {
	e.t.Helper()
	if i >= len(e.queue) {
		e.t.Fatalf("node %d: no persist #%d (%d outstanding)", e.id, i, len(e.queue))
	}
	p := e.queue[i]
	e.queue = slices.Delete(e.queue, i, i+1)
	q := e.disk[p.Journal]
	if err != nil {
		q = slices.DeleteFunc(q, func(x *persistCall) bool { return x == p })
	} else {
		p.done = true
	}
	for len(q) > 0 && q[0].done {
		st := e.store(p.Journal)
		st.Append(q[0].Ops)
		st.Sync()
		q = q[1:]
	}
	e.disk[p.Journal] = q
	e.h.OnPersisted(p.Token, err)
	return p
}

// completeToken finishes the outstanding persist named t.
func (e *fakeEnv) completeToken(t host.Token, err error) {
	e.t.Helper()
	for i, p := range e.queue {
		if p.Token == t {
			e.complete(i, err)
			return
		}
	}
	e.t.Fatalf("node %d: no outstanding persist with token %d", e.id, t)
}

// completeAll finishes every outstanding persist in order, including the
// ones the completions themselves issue.
func (e *fakeEnv) completeAll() bool {
	did := false
	for len(e.queue) > 0 {
		e.complete(0, nil)
		did = true
	}
	return did
}

// persistsOf lists the outstanding persists of journal j.
func (e *fakeEnv) persistsOf(j journal.ID) []*persistCall {
	var out []*persistCall
	for _, p := range e.queue {
		if p.Journal == j {
			out = append(out, p)
		}
	}
	return out
}

// takeSent returns and forgets every Deliver sent since the last take.
func (e *fakeEnv) takeSent() []sentDeliver {
	out := e.outbox
	e.outbox = nil
	return out
}

// reply is the answer to call id, if any.
func (e *fakeEnv) reply(id host.CallID) (host.Response, bool) {
	r, ok := e.replies[id]
	return r, ok
}

// envelopes flattens Delivers into their envelopes, in send order.
func envelopes(ds []sentDeliver) []host.Envelope {
	var out []host.Envelope
	for _, d := range ds {
		out = append(out, d.Batch...)
	}
	return out
}

// msgTypes lists the message types of envelopes, in order.
func msgTypes(es []host.Envelope) []paxos.MsgType {
	out := make([]paxos.MsgType, 0, len(es))
	for _, e := range es {
		out = append(out, e.Msg.Type)
	}
	return out
}

// countType counts the envelopes of type t.
func countType(es []host.Envelope, t paxos.MsgType) int {
	n := 0
	for _, e := range es {
		if e.Msg.Type == t {
			n++
		}
	}
	return n
}

// testTunables is a small, fast profile: every knob at or near its floor
// where a test wants to reach it in a few ticks. Its journals stay awake
// (these tests count messages tick by tick); quiet_test.go turns
// quiescence on.
func testTunables() host.Tunables {
	return host.Tunables{ElectionTicks: 5, HeartbeatTicks: 1, QuarantineTicks: 3,
		ReadRetryTicks: 4, CallTimeoutTicks: 6, TickMs: 100, WaitMsMax: 1000, StayAwake: true}
}

// spec is the journal spec every test host uses: members 1, 2, 3, majority.
func spec(j journal.ID, mode journal.WriterMode, claim storage.Claim) host.JournalSpec {
	return host.JournalSpec{ID: j, Members: members, Quorum: quorum.Spec{}, Mode: mode, Claim: claim}
}

// marker is the format marker node id's store of spec s carries.
func marker(s host.JournalSpec, id paxos.NodeID) storage.Marker {
	m := slices.Clone(s.Members)
	slices.Sort(m)
	return storage.Marker{Journal: s.ID, Node: id, Members: m, Quorum: s.Quorum, Mode: s.Mode}
}

// newHost boots one host over a fresh fake env.
func newHost(t testing.TB, id paxos.NodeID, tun host.Tunables, specs ...host.JournalSpec) (*host.Host, *fakeEnv) {
	t.Helper()
	env := newFakeEnv(t, id)
	h, err := host.New(id, env, tun, specs)
	if err != nil {
		t.Fatalf("host.New(%d): %v", id, err)
	}
	env.attach(h)
	return h, env
}

// cluster is three hosts wired through fake envs. Sends are delivered and
// persists completed only when the test says so (settle, deliver).
type cluster struct {
	t     testing.TB
	ids   []paxos.NodeID
	hosts map[paxos.NodeID]*host.Host
	envs  map[paxos.NodeID]*fakeEnv
	// blocked drops nothing: a Deliver on a blocked link stays in its
	// sender's outbox until the link is unblocked and the cluster settles.
	blocked func(from, to paxos.NodeID) bool
}

func newCluster(t testing.TB, tun host.Tunables, specs ...host.JournalSpec) *cluster {
	t.Helper()
	c := &cluster{t: t, ids: members, hosts: map[paxos.NodeID]*host.Host{}, envs: map[paxos.NodeID]*fakeEnv{}}
	for _, id := range c.ids {
		c.hosts[id], c.envs[id] = newHost(t, id, tun, specs...)
	}
	return c
}

// settleTicks settles, then ticks every host n times, settling after each.
func (c *cluster) settleTicks(n int) {
	c.settle()
	for range n {
		for _, id := range c.ids {
			c.hosts[id].OnTick()
		}
		c.settle()
	}
}

// requireRunning fails the test if any host stopped.
func (c *cluster) requireRunning(t testing.TB) {
	t.Helper()
	for _, id := range c.ids {
		if stopped, err := c.hosts[id].Stopped(); stopped {
			t.Fatalf("host %d stopped: %v", id, err)
		}
	}
}

// deliver hands every Deliver on an open link to its receiver; it reports
// whether any was delivered.
func (c *cluster) deliver() bool {
	did := false
	for _, id := range c.ids {
		env := c.envs[id]
		out := env.takeSent()
		for _, d := range out {
			if c.blocked != nil && c.blocked(d.From, d.To) {
				env.outbox = append(env.outbox, d)
				continue
			}
			h := c.hosts[d.To]
			if h == nil {
				continue // a machine the cluster does not run (a listed replica or proxy)
			}
			h.OnDeliver(d.From, d.Batch)
			did = true
		}
	}
	return did
}

// settle completes every persist and delivers every open-link Deliver until
// nothing moves. It never ticks.
func (c *cluster) settle() {
	c.t.Helper()
	for range 10000 {
		did := false
		for _, id := range c.ids {
			if c.envs[id].completeAll() {
				did = true
			}
		}
		if c.deliver() {
			did = true
		}
		if !did {
			return
		}
	}
	c.t.Fatalf("cluster did not settle")
}

// elect ticks node id alone (settling after each tick) until it leads every
// journal js; the other nodes never time out because they are never ticked.
func (c *cluster) elect(id paxos.NodeID, js ...journal.ID) {
	c.t.Helper()
	for range 100 {
		c.hosts[id].OnTick()
		c.settle()
		all := true
		for _, j := range js {
			if n := c.hosts[id].Node(j); n == nil || !n.IsLeader() {
				all = false
			}
		}
		if all {
			return
		}
	}
	c.t.Fatalf("node %d did not win %v", id, js)
}

// call sends one call to node id and returns the reply, if one came at once.
func (c *cluster) call(id paxos.NodeID, call host.Call) (host.Response, bool) {
	c.hosts[id].OnCall(call)
	return c.envs[id].reply(call.ID)
}

// mustReply returns the reply to call id on node n or fails.
func (c *cluster) mustReply(n paxos.NodeID, id host.CallID) host.Response {
	c.t.Helper()
	r, ok := c.envs[n].reply(id)
	if !ok {
		c.t.Fatalf("node %d: call %d unanswered", n, id)
	}
	return r
}

// write is a multi-writer Write call of the given records.
func write(id host.CallID, j journal.ID, recs ...string) host.Call {
	rs := make([][]byte, len(recs))
	for i, r := range recs {
		rs[i] = []byte(r)
	}
	return host.Call{ID: id, Kind: host.CallWrite, Write: journal.WriteRequest{Journal: j, Records: rs}}
}

// read is a Read call.
func read(id host.CallID, j journal.ID, from journal.Seq, limit, waitMs uint32) host.Call {
	return host.Call{ID: id, Kind: host.CallRead, Read: journal.ReadRequest{Journal: j, FromSeq: from, Limit: limit, WaitMs: waitMs}}
}

// strs turns records into strings for comparison.
func strs(recs [][]byte) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r)
	}
	return out
}
