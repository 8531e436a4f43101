package paxos

import (
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/quorum"
)

// Node is one journal's colocated acceptor, proposer and learner. It is only
// wiring: role transitions, timers, message construction and the
// persist-before-send batch. The tallies live in election and rounds; the
// votes in Acceptor; the fold in Replica.
//
// Drive it like etcd raft's RawNode:
//
//	n.Step(msg) / n.Tick() / n.Propose(entry) / n.QuorumRead(ctx)
//	if n.HasReady() {
//		rd := n.Ready()   // a second Ready before Advance panics
//		// 1. persist rd.Writes (sync if rd.MustSync)
//		// 2. send rd.Messages once durable (EarlyOK ones may go before)
//		// 3. answer calls parked on rd.Applied slots
//		// 4. answer rd.ReadStates
//		n.Advance()
//	}
//
// The node never reads a clock or a random source: the caller ticks it and
// hands in the jittered election timeout with SetElectionTimeout.
type Node struct {
	cfg  Config
	opts Options
	// mms is the matchmaker set this node matchmakes with: cfg's at boot,
	// then each chosen successor a matchmaker pointed it at. Invariant:
	// its generation never decreases, and it is zero exactly on a plain
	// deployment.
	mms MatchmakerSet
	// mmsStopped is the generation a matchmaker answered MatchStopped for
	// with no successor (0: none since the set was adopted): a handover is
	// undecided, and whoever meets that finishes it (the host's
	// reconfigurer; MatchmakersStopped).
	mmsStopped uint64
	// mmsLagging are the members of mms that answered they do not serve
	// it (MatchmakersLagging); at most the set's size.
	mmsLagging map[NodeID]bool
	me         int // member index of cfg.ID
	sys        quorum.System

	acc *Acceptor
	lrn *Learner
	// sealed is the journal state at lrn.floor-1 (what a TrimmedTo names).
	sealed journal.State

	phase phase
	// contract holds a peer's contract violation; once set, the node takes
	// no input and hands out no batch (contract.go).
	contract contract

	// highestSeen is the highest ballot seen anywhere; a campaign picks a
	// round above it.
	highestSeen Ballot
	// leaderHint is the node last heard leading (0 = unknown).
	leaderHint NodeID
	// successor is the node the owner of successor.ballot handed that
	// ballot to, as the owner's handoff notice told this node (or as this
	// node itself handed it on): the one node besides the owner whose
	// Accepts, Commits and Heartbeats at that ballot are heard (speaksFor).
	// Only the highest such ballot is kept. Volatile: a rebooted node
	// forgets it and ignores the successor until an election moves on.
	successor struct {
		ballot Ballot
		to     NodeID
		// config is the ballot's configuration, which a notice names with
		// matchmakers (zero when unknown: no notice is sent then).
		config Configuration
	}

	// quiet: a follower that acked a quiet beat and has heard nothing
	// since (node_quiet.go); its election timer stands still.
	quiet           bool
	electionElapsed int
	// campaignHeld: the host's campaign budget holds this node's next
	// campaign (HoldCampaign); its timer stays due.
	campaignHeld bool
	// eager: the node's campaigns re-ask the silent members at every tick
	// (CampaignSoon). Invariant: set only by CampaignSoon; cleared once the
	// node leads or steps down to a higher ballot.
	eager           bool
	electionTimeout int
	wantTimeout     bool

	// catch-up: one request in flight at a time.
	catchUpTarget  NodeID
	catchUpElapsed int
	catchUpOpen    bool

	reads []*quorumRead

	// Matchmaker Paxos (node_matchmaking.go). belief is the configuration
	// the node believes in force (sys and me follow it); learned says it was
	// learned since boot (else it is the bootstrap default, and the node
	// probes before it campaigns); ballotCfg is the configuration of the
	// highest ballot heard with one (an Accept is voted only by its
	// members); lastMember is the highest ballot of a configuration naming
	// this node. All volatile: a reboot returns to the bootstrap belief.
	belief  Configuration
	learned bool
	// basis is the read basis: the ballot of the won leadership whose
	// heartbeat taught this node its belief, and that leadership's
	// election fence (the highest slot its Phase 1 could have found
	// chosen, in any older configuration). A follower's quorum read is
	// served at or past the fence: a write an older configuration chose
	// need not be voted by any acceptor of the newer one yet.
	basisBallot Ballot
	basisFence  Slot
	ballotCfg   Configuration
	lastMember  Ballot
	probe       *probe
	// prepared is at or above every ballot of this node's own at which it
	// may have sent a Prepare: from boot its promise (a candidate promises
	// its ballot before anything leaves), then each Phase 1 it opens. A
	// Match carries it, so the matchmakers retract the belief
	// registrations this node abandoned before Phase 1 (a stale belief
	// naming dead or retired machines would otherwise be in every later
	// candidate's history, and no Phase 1 could ever be won again).
	prepared Ballot
	// registered is the highest ballot of this node's own it sent a Match
	// for since boot. A node that will not campaign again retracts the
	// registrations in (prepared, registered] (node_matchmaking.go);
	// retractedBy holds the matchmakers that answered it did, and
	// retracted is registered once every one did. ownMember is the
	// highest of its own registrations naming itself: until they are
	// retracted (or collected) a later Phase 1 may need this node.
	registered  Ballot
	retracted   Ballot
	retractedBy map[NodeID]bool
	ownMember   Ballot

	// unrecoverable names slots found beyond the fault budget (ctrl.go).
	unrecoverable []Slot
	// scrub is the scrubber's state (node_scrub.go); repairs are damaged
	// chosen records waiting for a peer's copy.
	scrub   scrubber
	repairs map[Slot]Ballot

	// lastCommitSent is the commit watermark last announced to the peers.
	// knownCommit is the highest watermark heard from any leader.
	knownCommit    Slot
	lastCommitSent Slot
	// lastPushed is the commit watermark last pushed to the replicas, with
	// the values up to it (node_replica.go).
	lastPushed Slot

	cur, handed batch
	readyOut    bool

	// cold reads evicted records back (cold.go); cold.log nil keeps
	// everything in memory. durableBatch is the highest Ready number the
	// caller reported durable (MarkDurable).
	cold         coldReader
	durableBatch uint64

	counters Counters
}

// batch is the node's effect buffers (double-buffered with Ready).
type batch struct {
	writes    []WriteOp
	messages  []Message
	committed []Applied
	reads     []ReadState
	accepts   []SlotCommand // Accepts to fan out at the next Ready
	votes     []SlotCommand // the votes among writes (Ready.Votes)
}

func (b *batch) reset() {
	clear(b.writes)
	clear(b.messages)
	clear(b.committed)
	clear(b.accepts)
	clear(b.votes)
	b.writes, b.messages, b.committed, b.reads, b.accepts, b.votes = b.writes[:0], b.messages[:0], b.committed[:0], b.reads[:0], b.accepts[:0], b.votes[:0]
}

// NewNode boots a node from its store. Boot is restart: the node always
// starts following (leadership is volatile, so a crash is an abdication).
func NewNode(cfg Config, opts Options, st Storage) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	sealed := st.SealedState()
	if _, err := journal.Restore(sealed.Leader, sealed.Term(), sealed.NextSeq, sealed.FirstSeq); err != nil {
		return nil, fmt.Errorf("%w: sealed state: %v", ErrStorage, err)
	}
	if err := validateBoot(st); err != nil {
		return nil, err
	}
	idx, ok := cfg.Acceptors.IndexOf(cfg.ID)
	if !ok {
		idx = -1 // a replica node is no member
	}
	n := &Node{cfg: cfg, opts: opts, me: idx, sys: cfg.Acceptors, sealed: sealed,
		phase: following{}, electionTimeout: opts.ElectionTicks, wantTimeout: true}
	if len(cfg.Matchmakers) > 0 {
		n.mms = MatchmakerSet{Generation: max(cfg.MatchmakerGeneration, 1), Members: slices.Clone(cfg.Matchmakers)}
	}
	switch {
	case len(cfg.Matchmakers) == 0:
		n.belief, n.learned = Configuration{Acceptors: cfg.Acceptors}, true
	case cfg.Joiner, cfg.Replica:
		// Believes nothing yet; sys stays the formatted configuration, which
		// no tally uses before a configuration is learned.
	default:
		n.belief = Configuration{Acceptors: cfg.Acceptors}
		n.lastMember = Ballot{}
	}
	hs := st.InitialState()
	var coldThrough Slot
	if cs, ok := st.(ColdSource); ok {
		n.cold.log = cs.ColdLog()
		if n.cold.log != nil && cs.ColdThrough() >= max(st.FirstSlot(), 1) {
			coldThrough = cs.ColdThrough()
			if coldThrough > hs.ChosenIndex {
				return nil, fmt.Errorf("%w: cold prefix through %d above the chosen index %d", ErrStorage, coldThrough, hs.ChosenIndex)
			}
		}
	}
	acc, err := newAcceptor(st, &n.cur.writes, &n.cur.votes, &n.cold, coldThrough)
	if err != nil {
		return nil, err
	}
	n.acc = acc
	n.prepared = acc.Promised()
	n.acc.learner = cfg.Replica
	n.acc.contract = &n.contract
	if ss, ok := st.(ScrubSource); ok && ss.ScrubLog() != nil {
		n.scrub.log, n.scrub.cursor = ss.ScrubLog(), ss.ScrubCursor()
	}
	// The acceptor emitted nothing at boot; the out pointer follows n.cur.
	floor := n.acc.Floor()
	chosen := max(hs.ChosenIndex, floor-1)
	n.lrn = newLearner(cfg.Mode, floor, floor-1, sealed)
	n.lrn.cold = &n.cold
	n.lrn.contract = &n.contract
	if coldThrough >= floor {
		// The cold prefix is chosen; the fold reads it back in pages.
		n.lrn.chosen = newSlotLog[chosenValue](coldThrough + 1)
		n.lrn.chosenIndex = coldThrough
		n.lrn.coldChosen = coldThrough
	}
	// Every slot <= the durable chosen index is chosen with the value on
	// disk. A missing or faulty record clamps the index (CTRL repairs it).
	for s := n.lrn.chosenIndex + 1; s <= chosen; s++ {
		_, c, ok := n.acc.Record(s)
		if !ok {
			break
		}
		n.lrn.markChosen(s, c)
	}
	n.lrn.persistedChosen = max(hs.ChosenIndex, n.lrn.chosenIndex)
	n.highestSeen = n.acc.Promised()
	if p := n.acc.Promised(); n.opts.Quiesce && !cfg.Replica && !p.IsZero() && p.Node != cfg.ID {
		// A rebooted member asks the leader of its promise to beat: the
		// leader of a quiet journal sends nothing, so this node would
		// campaign at the end of its timeout and take the leadership
		// (a member restarted with 10,000 quiet journals re-elected them
		// all). A plain ack at that ballot wakes the leader
		// (node_quiet.go), whose beat resets this node's timer; to a
		// leader that is gone it is lost, and the timeout runs as it
		// should.
		n.send(Message{Type: MsgHeartbeatAck, To: p.Node, Ballot: p, Commit: n.lrn.chosenIndex,
			Watermark: n.acc.VoteWatermark()})
	}
	n.afterEvent()
	// What boot read is durable: the fold past the hot window leaves memory.
	n.evict()
	n.assertInvariants()
	return n, nil
}

// SetElectionTimeout hands in the jittered election timeout in ticks (the
// core draws no randomness). The caller should hand a fresh value whenever
// WantsElectionTimeout reports true.
func (n *Node) SetElectionTimeout(ticks int) {
	if ticks < n.opts.ElectionTicks {
		ticks = n.opts.ElectionTicks
	}
	n.electionTimeout = ticks
	n.wantTimeout = false
}

// WantsElectionTimeout reports whether the timer was reset since the last
// SetElectionTimeout, so a fresh jitter would desynchronise candidates.
func (n *Node) WantsElectionTimeout() bool { return n.wantTimeout }

func (n *Node) resetElectionTimer() {
	n.electionElapsed = 0
	n.wantTimeout = true
}

// send queues one message.
func (n *Node) send(m Message) {
	m.From = n.cfg.ID
	n.cur.messages = append(n.cur.messages, m)
}

// HasReady reports whether Ready would carry anything.
func (n *Node) HasReady() bool {
	if len(n.cur.writes) > 0 || len(n.cur.messages) > 0 || len(n.cur.committed) > 0 ||
		len(n.cur.reads) > 0 || len(n.cur.accepts) > 0 {
		return true
	}
	if n.lrn.chosenIndex > n.lrn.persistedChosen {
		return true
	}
	if n.lrn.applied < n.lrn.chosenIndex && n.cold.fault == nil {
		return true // the fold goes on in pages (Ready continues it)
	}
	if l, ok := n.phase.(*leading); ok && n.lrn.chosenIndex > n.lastCommitSent && l != nil {
		return true
	}
	return false
}

// Ready returns the next batch of effects. A second Ready before Advance
// panics: one batch is in flight at a time.
func (n *Node) Ready() Ready {
	if n.readyOut {
		panic("paxos: Ready called twice without Advance")
	}
	if n.lrn.applied < n.lrn.chosenIndex && len(n.cur.committed) == 0 {
		// The fold's next page (a long catch-up, or the boot's cold
		// prefix): each Ready carries at most walkSlotsMax folded slots.
		n.afterEvent()
	}
	n.flushAccepts()
	n.flushCommit()
	if op, ok := n.lrn.chosenIndexOp(); ok {
		n.cur.writes = append(n.cur.writes, op)
	}
	rd := Ready{Writes: n.cur.writes, Messages: n.cur.messages, Applied: n.cur.committed, ReadStates: n.cur.reads,
		Votes: n.cur.votes, Batch: n.acc.batch}
	n.acc.batch++
	// A replica node's writes are all relaxed (node_replica.go): it
	// promises nothing, and its records hold values already chosen and
	// durable on a Phase-2 quorum, so a crash that loses a suffix of them
	// costs only a catch-up. An fsync per batch on every replica would
	// buy nothing and tax the disk the acceptors sync on.
	for _, op := range rd.Writes {
		if op.NeedsSync() && !n.cfg.Replica {
			rd.MustSync = true
			break
		}
	}
	n.cur, n.handed = n.handed, n.cur
	n.cur.reset()
	n.acc.out, n.acc.votes = &n.cur.writes, &n.cur.votes
	n.readyOut = true
	return rd
}

// Advance releases the batch handed out by Ready. Its buffers are reused.
func (n *Node) Advance() {
	if !n.readyOut {
		panic("paxos: Advance without Ready")
	}
	n.readyOut = false
}

// Rest tells a quiet node that its host stops ticking it: it gives its
// effect buffers, grown by its busiest turn, back to the heap (with
// 10,000 quiet journals they were the largest share of an idle process's
// memory). A node that is not quiet, holds effects or has a Ready out
// keeps them. The acceptor's pointers name the fields, which stay put.
func (n *Node) Rest() {
	if n.readyOut || !n.Quiescent() || n.HasReady() {
		return
	}
	n.cur, n.handed = batch{}, batch{}
}

// Tick advances logical time by one tick.
func (n *Node) Tick() {
	if n.contract.fault != nil {
		return
	}
	if c, ok := n.phase.(*campaigning); ok && n.eager {
		n.reaskSilent(c)
	}
	switch p := n.phase.(type) {
	case *leading:
		n.eager = false
		n.tickLeader(p)
	default:
		if n.cfg.Replica || n.quiet {
			break // a replica never campaigns; a quiet follower waits to be woken
		}
		n.electionElapsed++
		if n.electionElapsed >= n.electionTimeout {
			if n.campaignHeld {
				// The host's campaign budget is spent (node_election.go,
				// HoldCampaign): stay due, ask again at the next tick.
				n.electionElapsed = n.electionTimeout
				n.counters.CampaignsHeld++
				break
			}
			n.campaign()
		}
	}
	if n.catchUpOpen {
		n.catchUpElapsed++
		if n.catchUpElapsed >= n.opts.CatchUpRetryTicks {
			n.catchUpOpen = false
			if n.catchUpTarget != 0 && n.lrn.chosenIndex < n.commitHint() {
				n.requestCatchUp(n.catchUpTarget)
			}
		}
	}
	n.tickReads()
	n.afterEvent()
	n.assertInvariants()
}

// Step feeds one message. Messages not addressed to this node, from
// non-members, or malformed (zero ballot where one is required, a slot
// beyond SlotsAheadMax) are ignored or Nack'd: the sender's resend repairs a
// lost message. One thing is not bad input but a broken contract: a peer
// that reports two values at one (slot, ballot), or a "chosen" value that
// contradicts a higher-ballot record, trips an assertion. Crash-fault Paxos
// cannot continue safely past that, so the node stops (panics) rather than
// spread it.
func (n *Node) Step(m Message) {
	if m.To != n.cfg.ID || m.From == n.cfg.ID && !n.fromOwnMatchmaker(m) || n.contract.fault != nil {
		return
	}
	// A node hears a message only from a role that sends its type (the
	// table in roles.go): a plain deployment's members, its listed
	// replicas and proxies, and with matchmakers (where the acceptor set
	// moves) any other machine the edge admitted, as an acceptor of
	// another configuration. Each handler asks the configuration it
	// tallies in; from is -1 outside the believed one.
	role := n.roleOf(m.From)
	if !MaySend(role, m.Type) {
		n.counters.RoleRefused++
		return
	}
	from, ok := n.sys.IndexOf(m.From)
	if !ok {
		from = -1
	}
	// Nothing of a malformed message moves the node: not even highestSeen,
	// which the next campaign adds one to (a round of 2^64-1 once wrapped it
	// to 0, the candidate's own promise refused its ballot, and every
	// machine of a cell panicked on one forged Commit).
	if m.Validate() != nil {
		n.counters.Malformed++
		return
	}
	// An Accept, a Commit or a Heartbeat is heard only from whoever may
	// lead at its ballot (speaksFor): a member cannot slip a value into
	// another member's ballot, nor a proxy speak for a leader that does
	// not lead it. A replica node votes on nothing and keeps no promise: it
	// learns from any acceptor (see docs/guide/security.md).
	if !n.cfg.Replica && !n.speaksFor(m, role) {
		n.counters.NotLeading++
		n.askOwner(m, role)
		n.afterEvent()
		n.assertInvariants()
		return
	}
	if n.highestSeen.Less(m.Ballot) {
		n.highestSeen = m.Ballot
	}
	if !quietMessage(m) {
		n.wake()
	}
	if n.cfg.Replica {
		n.stepReplica(m)
		n.afterEvent()
		n.assertInvariants()
		return
	}
	switch m.Type {
	case MsgPrepare:
		n.handlePrepare(m)
	case MsgPromise:
		n.handlePromise(m)
	case MsgNack:
		n.handleNack(m)
	case MsgAccept:
		n.handleAccept(m)
	case MsgAccepted:
		n.handleAccepted(m, from)
	case MsgCommit:
		n.handleCommit(m)
	case MsgHeartbeat:
		n.handleHeartbeat(m)
	case MsgHeartbeatAck:
		n.handleHeartbeatAck(m, from)
	case MsgCatchUpRequest:
		n.handleCatchUpRequest(m)
	case MsgCatchUpResponse:
		n.handleCatchUpResponse(m)
	case MsgTrimmedTo:
		n.handleTrimmedTo(m)
	case MsgScrub:
		n.handleScrub(m)
	case MsgScrubReply:
		n.handleScrubReply(m)
	case MsgPreRead:
		n.handlePreRead(m)
	case MsgPreReadAck:
		n.handlePreReadAck(m, from)
	case MsgMatchReply:
		if m.From == n.cfg.ID {
			n.counters.OwnMatchmaker++
		}
		n.handleMatchReply(m)
	case MsgGarbageCollectAck:
		n.handleGarbageCollectAck(m)
	case MsgRelinquish:
		n.handleRelinquish(m)
	}
	n.afterEvent()
	n.assertInvariants()
}

// fromOwnMatchmaker reports whether m, sent by this node's own id, is the
// answer of the matchmaker its process runs (a founding machine runs a node
// and a matchmaker; the host hands their messages back): it counts toward
// a matchmaker quorum like any other matchmaker's.
func (n *Node) fromOwnMatchmaker(m Message) bool {
	return (m.Type == MsgMatchReply || m.Type == MsgGarbageCollectAck) && n.mms.Has(n.cfg.ID)
}

// afterEvent runs the apply walk and settles reads after every input.
func (n *Node) afterEvent() {
	if n.lrn.applied < n.lrn.chosenIndex {
		n.lrn.walk(&n.cur.committed, n.cut)
	}
	if l, ok := n.phase.(*leading); ok {
		n.releaseDecided(l)
		n.pump(l)
	}
	n.settleReads()
}

// stepDown abandons any campaign or leadership. Open rounds are forgotten:
// their slots are decided by whoever leads next, and a caller parked on one
// learns the verdict (or that another command won it) from Applied.
func (n *Node) stepDown() {
	switch n.phase.(type) {
	case *leading:
		n.counters.StepDowns++
	case *campaigning, *matchmaking:
	default:
		return
	}
	n.phase = following{}
	n.scrub.page = nil
	n.eager = false
	n.resetElectionTimer()
}

// StepDown is the driver-policy abdication; always safe.
func (n *Node) StepDown() { n.wake(); n.stepDown(); n.afterEvent(); n.assertInvariants() }

// assertInvariants checks cross-role invariants at the exit of every public
// mutating entry point (TigerBeetle style: always on, cheap).
func (n *Node) assertInvariants() {
	a, r := n.acc, n.lrn
	if a.floor != r.floor {
		panic(fmt.Sprintf("paxos: node %d acceptor floor %d != learner floor %d", n.cfg.ID, a.floor, r.floor))
	}
	if a.log.base != r.chosen.base || a.log.base < a.floor || a.log.base > max(r.applied, r.coldChosen)+1 {
		panic(fmt.Sprintf("paxos: node %d hot window: acceptor %d learner %d floor %d applied %d",
			n.cfg.ID, a.log.base, r.chosen.base, a.floor, r.applied))
	}
	if r.applied+1 < r.floor || r.applied > r.chosenIndex {
		panic(fmt.Sprintf("paxos: node %d floor %d applied %d chosen %d", n.cfg.ID, r.floor, r.applied, r.chosenIndex))
	}
	if l, ok := n.phase.(*leading); ok {
		if a.promised.Less(l.ballot) {
			panic(fmt.Sprintf("paxos: node %d leads at %s above its promise %s", n.cfg.ID, l.ballot, a.promised))
		}
		if !l.config.IsZero() && !SameSystem(l.config, n.sys) {
			panic(fmt.Sprintf("paxos: node %d leads %s under %s, not its ballot's configuration %s", n.cfg.ID, l.ballot, n.sys, l.config))
		}
		if l.unsent > l.nextSlot || l.inflight < 0 {
			panic(fmt.Sprintf("paxos: node %d window unsent %d next %d inflight %d", n.cfg.ID, l.unsent, l.nextSlot, l.inflight))
		}
	}
}
