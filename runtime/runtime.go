// Package runtime runs one paros process for real: the only package with
// goroutines, sockets, files and the wall clock, and it decides nothing.
//
//	goroutine        owns                                  talks to
//	---------------  ------------------------------------  -------------------------
//	loop (one)       the host.Host and every core node     everyone, through its inbox
//	                 (a proxy process: host.ProxyHost, proxy.go)
//	storage (one)    the Pebble DB's write path            loop (completions)
//	ticker           time.Ticker                           loop (OnTick)
//	peer sender (N)  one gRPC Peer stream per peer         the peer's Peer.Stream
//	gRPC handlers    one call or inbound stream each       loop (Call, Deliver)
//
// Everything a process decides happens on the loop goroutine, inside
// host/ — the same code the simulator runs. The storage goroutine
// group-commits every pending batch of every journal into one synced Pebble
// commit per turn.
package runtime

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"log/slog"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/security"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/pebblestore"
)

// Config is one process's configuration.
type Config struct {
	NodeID   paxos.NodeID
	Peers    map[paxos.NodeID]string // address of every other member
	Journals []host.JournalSpec
	Tunables host.Tunables
	DB       *pebblestore.DB
	Logger   *slog.Logger
	Metrics  *Metrics // optional
	// TLS is the machine's credentials: each peer is dialled over mutual
	// TLS, its certificate required to name the peer's node id. Nil dials
	// plaintext (the explicit insecure mode).
	TLS *security.Node
	// Matchmakers is the cell's founding matchmaker set. When it names
	// NodeID, or MatchmakerRole is set (a node machine admitted later, a
	// member of no set until a handover names it), the process runs a
	// matchmaker over the DB's registry store, booted with RegistryClaim
	// (first boot when the store is formatted, existing member after).
	Matchmakers    []paxos.NodeID
	MatchmakerRole bool
	RegistryClaim  storage.Claim
	// KeepMatchmakerSet, when set, is told the newest chosen matchmaker
	// set the process learns (a handover), to keep for the next boot. It
	// runs on the loop: it must not block for long.
	// Proxy runs a proxy process (proxy.go): a host.ProxyHost instead of a
	// host.Host, with no journal, no matchmaker and nothing persisted (DB
	// may be nil).
	Proxy bool
	// (KeepMatchmakerSet, documented with Matchmakers.)
	KeepMatchmakerSet func(paxos.MatchmakerSet)
}

// Limits of the loop's inbox (the edge never blocks the loop: a full inbox
// drops deliveries, which resends repair). The inbox carries peers'
// Delivers, storage completions and control work only: client calls go
// through the fair queue (fairq.go), so however many calls clients have
// waiting, they never take the room of a peer's Accept or heartbeat.
const (
	// inboxCapacity is the inbox's room: with clients out of it, what fills
	// it is a burst of Delivers (each peer stream hands one at a time) and
	// one completion per storage commit, far below 4,096.
	inboxCapacity     = 4096
	peerQueueCapacity = 1024
	// inboxStreakMax bounds the inbox events the loop runs in a row before
	// it looks at the tick, a stop and client work again: the inbox goes
	// first (consensus traffic is never starved by clients), but a peer
	// flooding it cannot starve the tick or the clients either.
	inboxStreakMax = 64
)

// ErrBusy: the loop's inbox is full.
var ErrBusy = errors.New("paros/runtime: process busy")

// ErrStopped: the process stopped.
var ErrStopped = errors.New("paros/runtime: process stopped")

// Runtime is a running process.
type Runtime struct {
	cfg   Config
	log   *slog.Logger
	inbox chan func()
	// fq carries client calls (Call, Submit), one queue per submitter: the
	// loop takes them by round robin, a turn's calls in one OnCalls, so
	// concurrent Writes share a Ready and a persist.
	fq      *fairQueue
	h       *host.Host
	ph      *host.ProxyHost                     // a proxy process's, instead of h (proxy.go)
	calls   map[host.CallID]func(host.Response) // loop-owned; each must not block
	callID  atomic.Uint64
	store   *storer
	tr      *transport
	stop    chan struct{}
	stopped chan struct{}
	errMu   sync.Mutex
	err     error
	rng     *mrand.Rand // loop-owned
	metrics *Metrics
	// sampled counts ticks since the metrics were last sampled.
	sampled int
	// specs are the journals served (the configured ones, and those
	// joined since), by id: a machine may serve tens of thousands, and
	// the control plane asks after each one it creates. specMu guards it
	// (the loop writes, handlers read).
	specMu sync.Mutex
	specs  map[journal.ID]host.JournalSpec
}

// Start boots the host (every journal's boot scan and format-marker check)
// and starts the goroutines. A boot refusal of every journal is returned as
// an error wrapping host.ErrStopped and the refusal (amnesia, mismatch).
func Start(cfg Config) (*Runtime, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Tunables == (host.Tunables{}) {
		cfg.Tunables = host.Production()
	}
	var seed [16]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return nil, err
	}
	r := &Runtime{cfg: cfg, log: cfg.Logger.With("node", cfg.NodeID), inbox: make(chan func(), inboxCapacity),
		fq:    newFairQueue(),
		calls: map[host.CallID]func(host.Response){}, stop: make(chan struct{}), stopped: make(chan struct{}),
		rng:     mrand.New(mrand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:]))),
		metrics: cfg.Metrics}
	if r.metrics == nil {
		r.metrics = NewMetrics(nil)
	}
	r.store = newStorer(r)
	r.tr = newTransport(r)
	if cfg.Proxy {
		return r.startProxy()
	}
	h, err := host.New(cfg.NodeID, env{r}, cfg.Tunables, cfg.Journals)
	if err != nil {
		return nil, err
	}
	r.h = h
	if len(cfg.Matchmakers) > 0 && (slices.Contains(cfg.Matchmakers, cfg.NodeID) || cfg.MatchmakerRole) {
		mm, err := bootMatchmaker(cfg)
		if err != nil {
			return nil, err
		}
		h.SetMatchmaker(mm)
	}
	r.specs = make(map[journal.ID]host.JournalSpec, len(cfg.Journals))
	for _, js := range cfg.Journals {
		r.specs[js.ID] = js
	}
	if stopped, cause := h.Stopped(); stopped {
		return nil, cause
	}
	r.h.SetObserver(observer{r})
	go r.store.run()
	go r.loop()
	r.log.Info("process started", "journals", len(cfg.Journals), "peers", len(cfg.Peers))
	return r, nil
}

// loop is the one goroutine that touches the host.
func (r *Runtime) loop() {
	defer close(r.stopped)
	tick := time.NewTicker(time.Duration(r.cfg.Tunables.TickMs) * time.Millisecond)
	defer tick.Stop()
	streak := 0
	for {
		// The inbox first: peers' Accepts, replies and heartbeats and the
		// storage completions that release acknowledgements never wait
		// behind client work (up to inboxStreakMax in a row).
		var fn func()
		if streak < inboxStreakMax {
			select {
			case fn = <-r.inbox:
			default:
			}
		}
		if fn != nil {
			streak++
			fn()
		} else {
			streak = 0
			select {
			case fn := <-r.inbox:
				fn()
			case <-r.fq.ready:
				r.takeSubmissions()
			case <-tick.C:
				if r.ph != nil {
					r.ph.OnTick()
					r.sampleProxyMetrics()
					continue
				}
				r.h.OnTick()
				// The metrics walk every journal: once a second, not once a
				// tick (with 10,000 journals a walk per 50 ms tick cost more
				// than the journals themselves), and a millisecond per
				// journal beyond a thousand, up to 15 s: the walk touches
				// every node's memory, and at 10,000 quiet journals a walk a
				// second was a third of an idle process's CPU.
				if r.sampled++; r.sampled >= max(1, sampleEveryMs(r.h.JournalCount())/r.cfg.Tunables.TickMs) {
					r.sampled = 0
					r.sampleMetrics()
				}
			case <-r.stop:
				return
			}
		}
		if r.ph != nil {
			continue // a proxy process never stops on its own
		}
		if stopped, cause := r.h.Stopped(); stopped {
			r.fail(cause)
			return
		}
	}
}

// takeSubmissions hands the host one turn of the fair queue in one
// OnCalls, in the order taken (each submitter's in its arrival order). A
// submission whose caller went away before the loop took it is answered
// Busy, never proposed.
func (r *Runtime) takeSubmissions() {
	subs := r.fq.take()
	cs := make([]host.Call, 0, 8)
	for _, s := range subs {
		if s.ctx.Err() != nil {
			for i, c := range s.calls {
				if takesSlot(c.Kind) {
					r.fq.answered(s.key)
				}
				s.reply(s.off+i, host.Response{Kind: c.Kind, Reply: journal.Reply{NoVerdict: journal.Busy}})
			}
			continue
		}
		for i, c := range s.calls {
			i += s.off
			if takesSlot(c.Kind) {
				r.calls[c.ID] = func(resp host.Response) {
					r.fq.answered(s.key)
					s.reply(i, resp)
				}
			} else {
				r.calls[c.ID] = func(resp host.Response) { s.reply(i, resp) }
			}
			cs = append(cs, c)
		}
	}
	if len(cs) > 0 {
		r.h.OnCalls(cs)
	}
}

func (r *Runtime) fail(err error) {
	r.errMu.Lock()
	if r.err == nil {
		r.err = err
		r.log.Error("process stops", "err", err)
	}
	r.errMu.Unlock()
}

// Err is why the process stopped (nil while it runs or after Stop).
func (r *Runtime) Err() error {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	return r.err
}

// Done is closed when the loop has ended.
func (r *Runtime) Done() <-chan struct{} { return r.stopped }

// Stop ends the process: the loop, the storage goroutine, the transport.
func (r *Runtime) Stop() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.stopped
	r.store.close()
	r.tr.close()
}

// post runs fn on the loop; it refuses when the inbox is full.
func (r *Runtime) post(fn func()) error {
	select {
	case <-r.stopped:
		return ErrStopped
	default:
	}
	select {
	case r.inbox <- fn:
		return nil
	default:
		return ErrBusy
	}
}

// postWait runs fn on the loop, waiting for room in the inbox.
func (r *Runtime) postWait(ctx context.Context, fn func()) error {
	select {
	case r.inbox <- fn:
		return nil
	case <-r.stopped:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Call submits a client call and waits for its reply. A context that ends
// first leaves the call ambiguous (it may still take effect).
func (r *Runtime) Call(ctx context.Context, c host.Call) (host.Response, error) {
	if r.ph != nil {
		return r.proxyAnswers([]host.Call{c})[0], nil
	}
	c.ID = host.CallID(r.callID.Add(1))
	ch := make(chan host.Response, 1)
	start := time.Now()
	s := newSubmission(ctx, []host.Call{c}, func(_ int, resp host.Response) { ch <- resp })
	if err := r.fq.push(ctx, r.stopped, s); err != nil {
		return host.Response{}, err
	}
	select {
	case resp := <-ch:
		r.metrics.observeCall(c.Kind, time.Since(start))
		return resp, nil
	case <-ctx.Done():
		// The sink stays: the host answers every call it took (a write
		// within CallTimeoutTicks, a read within its wait), which drops it
		// and counts the call out of its submitter's share of the host
		// (fairq.go); until then the call is still in consensus.
		return host.Response{}, ctx.Err()
	case <-r.stopped:
		return host.Response{}, ErrStopped
	}
}

// Submit hands calls to the loop, in order, without waiting for their
// replies: reply(i, resp) is called on the loop when calls[i] is answered
// (on a proxy process, before Submit returns), and must not block (give it
// a channel with room for every call outstanding). Calls that reach the
// loop together are proposed together, so a pipelined stream's writes
// share Accepts and syncs. The calls wait in their submitter's queue
// (WithSubmitter, fairq.go) while it is full; an error (ctx ended or the
// process stopped first) means none was submitted. Once submitted, every
// call is answered, Busy if ctx ended before the loop took it.
func (r *Runtime) Submit(ctx context.Context, calls []host.Call, reply func(i int, resp host.Response)) error {
	if r.ph != nil {
		// A proxy answers at once (not_leader) without its loop: client
		// work never takes the inbox room of the Phase-2 traffic it carries.
		if err := ctx.Err(); err != nil {
			return err
		}
		for i, resp := range r.proxyAnswers(calls) {
			reply(i, resp)
		}
		return nil
	}
	start := time.Now()
	cs := make([]host.Call, len(calls))
	for i := range calls {
		cs[i] = calls[i]
		cs[i].ID = host.CallID(r.callID.Add(1))
	}
	return r.fq.push(ctx, r.stopped, newSubmission(ctx, cs, func(i int, resp host.Response) {
		r.metrics.observeCall(cs[i].Kind, time.Since(start))
		reply(i, resp)
	}))
}

// Deliver hands an inbound batch to the loop; a full inbox drops it (client
// work never fills the inbox: only a burst of peers' Delivers can).
func (r *Runtime) Deliver(from paxos.NodeID, batch []host.Envelope) {
	fn := func() { r.h.OnDeliver(from, batch) }
	if r.ph != nil {
		fn = func() { r.ph.OnDeliver(from, batch) }
	}
	if r.post(fn) != nil {
		r.metrics.InboundDropped.Inc()
		return
	}
	r.metrics.PeerMessagesReceived.Add(float64(len(batch)))
}

// NodeID is this process's node id.
func (r *Runtime) NodeID() paxos.NodeID { return r.cfg.NodeID }

// HandOff is the first step of a graceful shutdown: it hands every journal
// this process leads to a live follower (host.HandOffAll) and waits until
// the Relinquish messages left: the batches carrying them durable and
// released, the mailboxes flushed, and every send returned. It reports how
// many leaderships it handed on. The caller stops the runtime next; a ctx
// that ends first leaves the rest to an election.
func (r *Runtime) HandOff(ctx context.Context) (int, error) {
	if r.ph != nil {
		return 0, nil // a proxy leads nothing
	}
	handed := 0
	for {
		settled := false
		err := r.onLoop(ctx, func() error {
			n, waiting := r.h.HandOffAll()
			handed += n
			settled = waiting == 0 && r.h.Settled() && r.tr.idle()
			return nil
		})
		if err != nil {
			return handed, err
		}
		if settled {
			break
		}
		select {
		case <-time.After(time.Millisecond):
		case <-ctx.Done():
			return handed, ctx.Err()
		}
	}
	if handed == 0 {
		return 0, nil
	}
	// A returned send sits in the stream's buffer: give it a moment on the
	// wire before the streams are cancelled.
	select {
	case <-time.After(handOffLinger):
	case <-ctx.Done():
	}
	r.metrics.HandedOff.Add(float64(handed))
	return handed, nil
}

// handOffLinger is how long HandOff lets the last sends reach the wire.
const handOffLinger = 20 * time.Millisecond

// onLoop runs fn on the event loop and waits for its error (or ctx).
func (r *Runtime) onLoop(ctx context.Context, fn func() error) error {
	done := make(chan error, 1)
	if err := r.postWait(ctx, func() { done <- fn() }); err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// AddPeer makes a machine admitted to the cell a peer: the process dials
// it when it has something to send it.
func (r *Runtime) AddPeer(ctx context.Context, id paxos.NodeID, addr string) error {
	return r.postWait(ctx, func() { r.tr.add(id, addr) })
}

// SetReplicas replaces the replica list of every journal the process
// serves (host.SetReplicas) and waits for the outcome: nothing is changed
// unless every journal accepts it. The specs Spec reports carry the new
// list too.
func (r *Runtime) SetReplicas(ctx context.Context, ids []paxos.NodeID) error {
	ids = slices.Sorted(slices.Values(ids))
	if r.ph != nil {
		return nil // a proxy serves no journal to give the list to
	}
	return r.onLoop(ctx, func() error {
		err := r.h.SetReplicas(ids)
		if err == nil {
			r.specMu.Lock()
			for id, s := range r.specs {
				s.Replicas = ids
				r.specs[id] = s
			}
			r.specMu.Unlock()
		}
		return err
	})
}

// sampleEveryMs is the metrics sample period for a process serving n
// journals: a second, or a millisecond per journal, at most 15 seconds
// (a common scrape interval).
func sampleEveryMs(n int) int { return min(max(1000, n), 15_000) }
