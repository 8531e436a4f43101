package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/sim/lincheck"
	"github.com/parosdb/paros/storage/memstore"
)

// Options shape a run.
type Options struct {
	ChaosMs int64 // chaos window (default 4000)
	TailMs  int64 // quiet tail (default 6000)
	Nodes   int   // force the node count of majority seeds (0: drawn)
	// Plain forces the plain deployment (no matchmakers, no
	// reconfiguration).
	Plain bool
	Trace bool
	// LincheckTimeout bounds porcupine, the second opinion, per journal
	// (default 30 s); its timeout is no verdict and counts as none.
	LincheckTimeout time.Duration
	// CrossCheck runs porcupine on every history, not only small ones, and
	// fails the seed where it decides otherwise than lincheck.Decide.
	CrossCheck bool
	// KeepHistories returns every journal's client history in the Result.
	KeepHistories bool
}

func (o Options) withDefaults() Options {
	if o.ChaosMs == 0 {
		o.ChaosMs = 4000
	}
	if o.TailMs == 0 {
		o.TailMs = 6000
	}
	if o.LincheckTimeout == 0 {
		o.LincheckTimeout = 30 * time.Second
	}
	return o
}

// Counts are what happened in a run.
type Counts struct {
	// Proxy leaders (proxy.go).
	ProxyCrashes, ProxyEvicted, ProxyAnnounced, ProxyRelayed, ProxyChanges                    uint64
	ProxyDelegated, ProxyDecided, ProxyTakenBack, ProxyLearned, ProxyBypassed, ProxyRecovered uint64
	// Cooperative handoff (handoff.go).
	Relinquished, Inherited, RelinquishRefused, InheritedDecided, HandoffResigned     uint64
	RelinquishReplays, GracefulHandoffs, OperatorHandoffs, Reelections, HandedOnAgain uint64
	Events, Calls, Messages, Dropped, Duplicated, Partitioned, Delayed                uint64
	Crashes, CrashesUnsynced, CrashesAfterSync, LongOutages                           uint64
	Partitions, Pauses, DiskFaults, Rots, Wipes, EditedRestarts                       uint64
	Elections, GapFills, TrimJumps, Truncations, CatchUps, Blocked                    uint64
	CheckQuorum, Quarantines, HistoryOps, FailStops, StaleLeaders                     uint64
	Evicted, CallBatches, CallsBatched                                                uint64
	ColdReads                                                                         paxos.ColdReads
	// Matchmaker Paxos.
	Reconfigures, ReplacedDead, Probes, StaleConfigurations, MatchRefusals uint64
	ReconfiguredElections, ResignedRemoved, RemovedPromises, JoinerVotes   uint64
	Collections, ReadsAbandoned, Joined, Retired, OwnMatchmaker            uint64
	// Retracted counts registrations matchmakers retracted.
	Retracted uint64
	// Matchmaker-set handovers (handover.go): asked by the operator and
	// answered chosen; generations stopped and activated at matchmakers;
	// chosen sets nodes followed; generations nodes met stopped with no
	// successor; finishers started and handovers chosen by a process.
	HandoversAsked, HandoversDone, HandoverStops, Activations           uint64
	SetsAdopted, SetsStopped, Finishers, HandoversChosen, HandoverLinks uint64
	// ReadsWidened counts grid reads that asked every member after their
	// row did not settle them.
	ReadsWidened uint64
	// Reasked counts Prepares eager first campaigns sent again to silent
	// members (create.go).
	Reasked uint64
	// CTRL and scrubbing.
	CtrlReproposed, CtrlNoops, CtrlResigned, CtrlUnrecoverable uint64
	RepairedFromMemory, RepairedFromPeer                       uint64
	ScrubPages, ScrubPasses, ScrubResumed                      uint64
	// The replica tier: trim-point jumps, catch-ups, Commits with pushed
	// values learned, and reads served, on replica nodes.
	ReplicaTrimJumps, ReplicaCatchUps, ReplicaPushes, ReplicaReads uint64
	// ReplicaChanges counts the operator's changes of the replica list.
	ReplicaChanges uint64
	// Roles (forgery.go): forgeries sent; messages the core dropped for
	// their sender's role or for a ballot their sender does not lead;
	// handoff notices heard.
	Forgeries, RoleRefused, NotLeading, HandoffNotices uint64
	// Quiescence: leaderships fallen quiet, quiet nodes woken, and quiet
	// journals woken because their leader's machine went silent.
	Quiesced, Woken, WokenByMachine uint64
	// CampaignsHeld: ticks a due campaign waited for its machine's budget.
	CampaignsHeld uint64
	// QuietLeaderKills counts machines killed as the leader of quiet
	// journals (quiet.go).
	QuietLeaderKills                   uint64
	SuccessorsAssumed, NoticesAnswered uint64
	// Holds (hold.go): journals held on every node, the envelopes the
	// holds dropped, and the holds the oracle judged.
	Holds, HeldEnvelopes, HoldsJudged uint64
}

// Result is the outcome of one seed.
type Result struct {
	Seed       uint64
	Shape      Shape
	Violations []string
	Gates      map[string]int
	Counts     Counts
	Lincheck   map[string]int // Decide's verdicts (Ok, Illegal, Unknown), and porcupine's as "porcupine Ok"…
	Histories  []History      // with Options.KeepHistories
	SimMs      int64
	TraceHash  uint64
	Trace      string
}

// OK reports whether the seed passed.
func (r Result) OK() bool { return len(r.Violations) == 0 }

// World is one simulated cell.
type World struct {
	seed      uint64
	opts      Options
	sched     scheduler
	g         rng
	shape     Shape
	procs     []*proc
	byID      map[paxos.NodeID]*proc
	net       *network
	clients   *clients
	audit     *audit
	counts    Counts
	chaosEnd  int64
	rot       rotLedger
	wipedOnce bool
	// the operator's Admin calls in flight (reconfig.go)
	opCalls map[host.CallID]operatorCall
	opNext  uint64
	// replicaSet is the replica list the operator set last (replica.go);
	// replicaReadds counts replicas it added back after removing them.
	replicaSet    []paxos.NodeID
	replicaReadds int
	// replicaSeq numbers the operator's replica lists (setReplicas).
	replicaSeq uint64
	// proxies are the proxy processes (proxy.go); proxySet is the proxy
	// list the operator set last.
	proxies  []*proxyProc
	proxySet []paxos.NodeID
	// hold is the seed's hold of one journal (hold.go; nil without one).
	hold *holdRun
	// reg is the control plane's shared state (registry.go).
	reg *regWorld
}

func (w *World) proc(id paxos.NodeID) *proc { return w.byID[id] }

func (w *World) system() quorum.System {
	s, err := quorum.New(w.shape.Nodes, w.shape.Quorum)
	if err != nil {
		panic(err)
	}
	return s
}

// Run simulates one seed. A panic inside the world (an assertion in the
// shipped code) fails the seed with the panic as its violation, so one
// broken world does not end a sweep.
func Run(seed uint64, o Options) (res Result) {
	defer func() {
		if r := recover(); r != nil {
			res = Result{Seed: seed, Violations: []string{fmt.Sprintf("an assertion held: panic: %v", r)},
				Gates: map[string]int{}, Lincheck: map[string]int{}}
		}
	}()
	return run(seed, o)
}

func run(seed uint64, o Options) Result {
	o = o.withDefaults()
	w := newWorld(seed, o, func(w *World) Shape { return drawShape(w.g, o) })
	w.chaos()
	w.replicaChaos()
	w.handoffChaos()
	w.proxyChaos()
	w.forgeryChaos()
	w.quietChaos()
	w.holdChaos()
	w.createChaos()
	w.joinLateReplica()
	w.operate()
	w.sched.runUntil(w.chaosEnd)

	w.recoverThenTail(w.sched.runUntil)
	res := w.conclude()
	if o.Trace {
		res.Trace = w.Trace()
	}
	return res
}

// newWorld builds the world of seed with the shape draw gives, starts
// every process and the clients, and schedules nothing else: the caller
// adds the faults.
func newWorld(seed uint64, o Options, draw func(w *World) Shape) *World {
	w := &World{seed: seed, opts: o, g: newRNG(seed), opCalls: map[host.CallID]operatorCall{}, byID: map[paxos.NodeID]*proc{}}
	w.sched.trace = o.Trace
	w.shape = draw(w)
	w.audit = newAudit(w)
	w.reg = &regWorld{}
	if w.shape.Control {
		w.reg.board = newRegBoard()
	}
	w.formCell()
	w.replicaSet = slices.DeleteFunc(slices.Clone(w.shape.Replicas), func(id paxos.NodeID) bool { return id == w.shape.lateReplica() })
	w.rot = newRotLedger(w.shape.RotBudget)
	w.net = &network{w: w}
	w.clients = newClients(w)
	for _, id := range w.shape.Procs() {
		p := &proc{w: w, id: id, stores: map[journal.ID]*memstore.Store{}, failNext: map[journal.ID]bool{}, failed: map[journal.ID]bool{},
			joined: map[journal.ID]host.JournalSpec{}, retired: map[journal.ID]bool{}}
		if slices.Contains(w.shape.Nodes, id) || slices.Contains(w.shape.Replicas, id) {
			for _, j := range w.shape.Journals {
				if j.CreatedAtMs == 0 { // a created journal has no store before its creation
					p.stores[j.ID] = memstore.New()
				}
			}
		}
		if slices.Contains(w.shape.matchmakerMachines(), id) {
			p.registry = memstore.NewRegistry()
		}
		w.procs = append(w.procs, p)
		w.byID[id] = p
	}
	w.sched.note("seed %d shape %s", seed, w.shape)
	for _, p := range w.procs {
		if !w.unjoined(p) {
			w.start(p, false)
		}
	}
	w.proxySet = slices.Clone(w.shape.Proxies)
	w.startProxies()
	w.chaosEnd = o.ChaosMs * ms
	w.clients.start()
	return w
}

// recoverThenTail ends the chaos: no new faults, partitions healed, pauses
// over, every node that can come back comes back (persistent damage
// stays), then runs the quiet tail with runUntil, the clients stopping
// part way through it.
func (w *World) recoverThenTail(runUntil func(end int64)) {
	w.net.heal()
	for _, p := range w.procs {
		p.pausedUntil = 0
		p.crashAfterSync = false
		clear(p.failNext)
		if !p.up && !p.downForGood && !p.heldDown && !w.unjoined(p) {
			w.start(p, false)
		}
	}
	// The proxies come back, but for one left dead for good on some seeds:
	// its leaders take its rounds back.
	for i, pp := range w.proxies {
		if !pp.up && (i > 0 || w.g.pct(60)) {
			w.startProxy(pp)
		}
	}
	w.sched.note("chaos over")
	quietFrom := w.chaosEnd + w.opts.TailMs*ms*6/10
	w.sched.at(quietFrom, lbl("clients stop"), func() { w.clients.stopped = true })
	runUntil(w.chaosEnd + w.opts.TailMs*ms)
}

// conclude runs the end-of-seed oracles and returns the seed's result.
func (w *World) conclude() Result {

	converged := w.audit.converged()
	w.audit.everyJournalLed()
	if converged && w.replicaReadds > 0 {
		w.audit.gate("replica: a replica the operator added back catches up")
	}
	if late := w.shape.lateReplica(); converged && late != 0 && w.proc(late).up && slices.Contains(w.replicaSet, late) {
		w.audit.gate("replica: a replica that joined from an empty disk catches up")
	}
	w.audit.replicasHearLeaders()
	w.audit.replyOwners()
	w.audit.durableQuorums()
	w.audit.checkEveryStore()
	w.audit.unrecoverableHeld()
	for _, p := range w.procs {
		w.collect(p)
	}
	for _, pp := range w.proxies {
		w.collectProxy(pp)
	}
	w.audit.ackedInLog()
	res := Result{Seed: w.seed, Shape: w.shape, Gates: w.audit.gates, SimMs: w.sched.now / ms, Lincheck: map[string]int{}}
	w.lincheck(&res)
	w.counts.Events = w.sched.events
	res.Counts = w.counts
	res.Violations = w.audit.violations
	res.TraceHash = w.sched.hash
	w.gateCounts(&res)
	return res
}

// lincheck decides every journal's client history with the journal-model
// checker (lincheck.Decide): near-linear, never out of time in practice,
// and its Ok certified by a replay through the sequential model. Porcupine
// runs beside it as a second opinion on histories small enough for its
// general search (every one with CrossCheck), and a disagreement between
// the two is a violation: one of the checkers is wrong.
func (w *World) lincheck(r *Result) {
	for _, js := range w.shape.Journals {
		ops := w.clients.hist[js.ID]
		w.counts.HistoryOps += uint64(len(ops))
		if w.opts.KeepHistories {
			r.Histories = append(r.Histories, History{Journal: short(js.ID), Mode: js.Mode, Ops: ops})
		}
		var second time.Duration
		if w.opts.CrossCheck || len(ops) <= crossCheckOps {
			second = w.opts.LincheckTimeout
		}
		jd := lincheck.Judge(js.Mode, ops, second)
		v := jd.Verdict
		r.Lincheck[string(v.Result)]++
		switch v.Result {
		case "Ok":
		case "Illegal":
			w.audit.violation("journal: every client history is linearizable", "%s: %d operations: %s", short(js.ID), len(ops), v.Describe(ops))
		default:
			w.audit.violation("journal: every client history is linearizable", "%s: the checker did not decide %d operations (%s): a failure of the checker, investigate", short(js.ID), len(ops), v.Reason)
		}
		if second == 0 {
			continue
		}
		r.Lincheck["porcupine "+string(jd.Porcupine)]++
		if jd.Disagree() {
			w.audit.violation("lincheck: the journal checker and porcupine agree", "%s: %d operations: Decide %s, porcupine %s", short(js.ID), len(ops), v.Result, jd.Porcupine)
		}
	}
}

// crossCheckOps: histories up to this size are checked by porcupine too on
// every run (it decides them in milliseconds).
const crossCheckOps = 150

// Describe renders one result on a line.
func (r Result) Describe() string {
	status := "ok"
	if !r.OK() {
		status = "FAIL " + r.Violations[0]
	}
	return fmt.Sprintf("seed %d [%s] %s", r.Seed, r.Shape, status)
}

// History is one journal's client history, kept when Options.KeepHistories
// asks (tests plant faults into real histories to check the checkers).
type History struct {
	Journal string
	Mode    journal.WriterMode
	Ops     []lincheck.Op
}
