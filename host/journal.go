package host

import (
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/storage"
)

// JournalSpec is how a process serves one journal: its identity, its
// configuration (recorded in the store's format marker) and the operator's
// claim about the store.
type JournalSpec struct {
	ID      journal.ID
	Members []paxos.NodeID
	Quorum  quorum.Spec
	Mode    journal.WriterMode
	Claim   storage.Claim
	// Matchmakers is the journal's founding matchmaker set (empty: plain
	// Multi-Paxos). Joiner: the store is formatted for a node joining
	// Members by reconfiguration.
	Matchmakers []paxos.NodeID
	// MatchmakerSet is the newest chosen matchmaker set the process knows
	// (zero: the founding set, Matchmakers, generation 1). The store's
	// marker names the founding set; the node matchmakes with this one.
	MatchmakerSet paxos.MatchmakerSet
	Joiner        bool
	// Replicas are the journal's replica nodes (the replica tier): the
	// leader pushes them every chosen value. Replica: this process serves
	// the journal as one of them (it learns and serves reads, never votes).
	Replicas []paxos.NodeID
	Replica  bool
	// Proxies are the journal's proxy leaders: a settled leader delegates
	// slot s's Phase 2 to Proxies[s % len(Proxies)] (empty: none).
	Proxies []paxos.NodeID
}

// JournalStatus is where a journal's incarnation stands.
type JournalStatus uint8

const (
	// Live: the journal's node runs.
	Live JournalStatus = iota + 1
	// Quarantined: a storage fault ended the incarnation; the journal is
	// reopened from its store after QuarantineTicks.
	Quarantined
	// Down: the store refused to boot (amnesia, configuration mismatch,
	// corruption): down for good, it never sends again.
	Down
)

func (s JournalStatus) String() string {
	switch s {
	case Live:
		return "live"
	case Quarantined:
		return "quarantined"
	case Down:
		return "down"
	}
	return "status(?)"
}

// pending is one Ready's effects waiting for its writes to be durable.
type pending struct {
	token Token
	// batch is the node's Ready number, reported to MarkDurable on release.
	batch     uint64
	durable   bool
	msgs      []paxos.Message
	committed []paxos.Applied
	reads     []paxos.ReadState
	// state is the node's fold as of this batch: servable once durable.
	state journal.State
}

// parkedCall is a Write, Truncate or SetLeader waiting for its slot.
type parkedCall struct {
	id       CallID
	kind     CallKind
	cmd      journal.Command
	slot     paxos.Slot
	ballot   paxos.Ballot // the leadership the proposal was made under
	deadline uint64
}

// parkedRead is a Read: confirming (a quorum read is open under ctx) or
// waiting at the tail for records to land (ctx 0).
type parkedRead struct {
	id       CallID
	req      journal.ReadRequest
	ctx      uint64
	waitTill uint64 // tick when the long-poll ends
	answered bool
}

// journalRT is one journal's incarnation on this process.
type journalRT struct {
	spec    JournalSpec
	cfg     paxos.Config
	marker  storage.Marker
	status  JournalStatus
	fault   error
	node    *paxos.Node
	batches []*pending // oldest first
	// reelecting: a graceful shutdown asked the journal's inherited
	// leadership to run its own Phase 1 before it is handed on
	// (handoff.go).
	reelecting bool
	calls      map[paxos.Slot]*parkedCall
	reads      []*parkedRead // arrival order
	reopenAt   uint64
	// idx is the journal's index in the host's table (awake.go), once
	// indexed: a journal not yet in the table has none.
	idx     int
	indexed bool
	// dueSince is the tick this journal's due campaign was first held by
	// the campaign budget (0: not held; campaigns.go).
	dueSince uint64
	// slotUntil is the tick until which a campaign the budget let start
	// counts against it (campaigns.go).
	slotUntil uint64
	// attending: listed in the host's attention (handover.go);
	// touched: listed in the host's touched (awake.go).
	attending, touched bool
	// tickedAt is the tick the node was last ticked or given a scrub turn
	// (quiet.go): what a quiet journal's scrubber is owed.
	tickedAt  uint64
	draining  bool
	incarnate int
	// jumpsSeen is the node's trim-jump count abandonJumped last acted on.
	jumpsSeen uint64
	// order holds fenced writes that reached the leader ahead of their
	// predecessors (order.go).
	order ordering
	// released is the journal state after the last slot whose verdict was
	// released (its batch durable). Reads are served from it, never from
	// the live fold: the live fold may hold slots a leader decided with its
	// own vote not yet on disk, and a crash could un-decide them.
	released journal.State
}

// newJournalRT checks a spec and builds its (not yet booted) incarnation.
func newJournalRT(id paxos.NodeID, s JournalSpec) (*journalRT, error) {
	sys, err := quorum.New(s.Members, s.Quorum)
	if err != nil {
		return nil, fmt.Errorf("paros/host: journal %s: %w", s.ID, err)
	}
	mms := slices.Clone(s.Matchmakers)
	slices.Sort(mms)
	reps := slices.Clone(s.Replicas)
	slices.Sort(reps)
	proxies := slices.Clone(s.Proxies)
	slices.Sort(proxies)
	cfg := paxos.Config{ID: id, Acceptors: sys, Mode: s.Mode, Matchmakers: mms, Joiner: s.Joiner,
		Replicas: reps, Replica: s.Replica, Proxies: proxies}
	if !s.MatchmakerSet.IsZero() && len(mms) > 0 {
		cfg.Matchmakers, cfg.MatchmakerGeneration = slices.Clone(s.MatchmakerSet.Members), s.MatchmakerSet.Generation
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("paros/host: journal %s: %w", s.ID, err)
	}
	return &journalRT{spec: s, cfg: cfg, marker: s.marker(id)}, nil
}

func (s JournalSpec) marker(node paxos.NodeID) storage.Marker {
	members := slices.Clone(s.Members)
	slices.Sort(members)
	return storage.Marker{Journal: s.ID, Node: node, Members: members, Quorum: s.Quorum, Mode: s.Mode,
		Matchmakers: uint32(len(s.Matchmakers)), Joiner: s.Joiner, Replica: s.Replica}
}

// boot opens the journal's store, checks the operator's claim against the
// format marker (storage.CheckBoot), and starts a node. A refusal leaves
// the journal Down with the reason.
func (h *Host) boot(j *journalRT, claim storage.Claim) { h.bootAll([]*journalRT{j}, claim) }

// bootAll boots journals js under one claim, as boot does each, but
// formats every store that needs it in one Env.FormatStores call: a
// member that folds a registry page creating a hundred journals pays one
// synced commit for them, not a hundred. A store the format failed for
// leaves its journal Down; the others boot.
func (h *Host) bootAll(js []*journalRT, claim storage.Claim) {
	states := make([]*storage.BootState, len(js))
	var format []int // indices into js whose stores are formatted first
	for i, j := range js {
		j.incarnate++
		bs, err := h.env.BootStore(j.spec.ID)
		if err != nil {
			h.down(j, fmt.Errorf("boot journal %s: %w", j.spec.ID, err))
			continue
		}
		decision, err := storage.CheckBoot(claim, bs.Marker, j.marker)
		if err != nil {
			h.down(j, fmt.Errorf("boot journal %s: %w", j.spec.ID, err))
			continue
		}
		if decision == storage.DecideFormat {
			format = append(format, i)
			continue
		}
		states[i] = bs
	}
	if len(format) > 0 {
		markers := make([]storage.Marker, len(format))
		for k, i := range format {
			markers[k] = js[i].marker
		}
		err := h.env.FormatStores(markers)
		for _, i := range format {
			j := js[i]
			if err != nil {
				h.down(j, fmt.Errorf("format journal %s: %w", j.spec.ID, err))
				continue
			}
			bs, err := h.env.BootStore(j.spec.ID)
			if err != nil {
				h.down(j, fmt.Errorf("boot journal %s after format: %w", j.spec.ID, err))
				continue
			}
			states[i] = bs
		}
	}
	for i, j := range js {
		if states[i] != nil {
			h.start(j, states[i])
		}
	}
}

// start runs a node over journal j's booted store.
func (h *Host) start(j *journalRT, bs *storage.BootState) {
	n, err := paxos.NewNode(j.cfg, h.tun.coreOptions(), bs)
	if err != nil {
		h.down(j, fmt.Errorf("start journal %s: %w", j.spec.ID, err))
		return
	}
	j.node, j.status, j.fault = n, Live, nil
	j.jumpsSeen = 0
	j.calls = map[paxos.Slot]*parkedCall{}
	// The fold a booted node starts from is durable: it may be served.
	j.released = n.State()
	h.jitter(j)
	h.drain(j)
}

func (h *Host) down(j *journalRT, err error) {
	j.status, j.fault, j.node = Down, err, nil
	h.lastFault = err
	h.counters.BootRefusals++
}

// quarantine ends a journal's incarnation after a storage fault: the node is
// dropped (it sends nothing more), parked calls are answered ambiguously,
// its queued messages are dropped, and it reopens after QuarantineTicks.
func (h *Host) quarantine(j *journalRT, err error) {
	h.counters.Quarantines++
	h.lastFault = err
	j.reopenAt = h.now + uint64(h.tun.QuarantineTicks)
	h.endIncarnation(j, Quarantined, err)
}

// endIncarnation drops a journal's node: nothing of it is sent again, its
// unsynced batches are forgotten, parked calls are answered unavailable and
// reads unserved (a quarantine, or an honoured retire).
func (h *Host) endIncarnation(j *journalRT, status JournalStatus, why error) {
	j.status, j.fault, j.node = status, why, nil
	for _, tok := range j.tokens() {
		delete(h.tokens, tok)
	}
	j.batches = nil
	for _, s := range sortedSlots(j.calls) {
		c := j.calls[s]
		h.reply(c.id, Response{Kind: c.kind, Reply: journal.Reply{NoVerdict: journal.Unavailable}})
	}
	j.calls = map[paxos.Slot]*parkedCall{}
	h.dropHeld(j)
	for _, r := range j.reads {
		h.answerRead(r, journal.ReadReply{FromSeq: r.req.FromSeq})
	}
	j.reads = nil
	for _, mb := range h.mailboxes {
		mb.drop(j.spec.ID)
	}
	h.rouse(j) // a quarantine's reopen is due on a tick
}

func (j *journalRT) tokens() []Token {
	out := make([]Token, 0, len(j.batches))
	for _, b := range j.batches {
		out = append(out, b.token)
	}
	return out
}

func sortedSlots(m map[paxos.Slot]*parkedCall) []paxos.Slot {
	out := make([]paxos.Slot, 0, len(m))
	for s := range m {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// drain takes every Ready of the journal's node: copies the buckets,
// advances, persists the writes, sends EarlyOK messages at once and holds
// the rest, then releases whatever is durable.
func (h *Host) drain(j *journalRT) {
	h.rouse(j) // touched: the next tick decides whether it rests
	h.touch(j)
	if j.draining {
		return
	}
	j.draining = true
	defer func() { j.draining = false }()
	defer h.attend(j)
	for j.status == Live && j.node.HasReady() {
		if err := j.node.ContractFault(); err != nil {
			// Nothing of this batch leaves, not even its EarlyOK messages:
			// the node refused to act on the contradicting input, and the
			// journal reboots from its store as after a crash before sync.
			h.counters.ContractFaults++
			h.quarantine(j, fmt.Errorf("journal %s: %w", j.spec.ID, err))
			return
		}
		rd := j.node.Ready()
		// A batch whose writes are all relaxed (SetChosenIndex) promises
		// nothing that a crash could un-make: losing it only lowers the
		// chosen-index hint boot starts from. It is released at once, not
		// after a trip through the storage goroutine (a leader's verdicts
		// and a follower's folds ride in such batches).
		//
		// A replica node's batches are never synced (core/paxos,
		// node_replica.go), but they carry records: one is released once
		// the store took its writes, so that nothing leaves the hot window
		// before a cold read could find it in the store.
		relaxed := !rd.MustSync && (len(rd.Writes) == 0 || !j.cfg.Replica)
		b := &pending{token: h.nextToken(), batch: rd.Batch, durable: relaxed}
		for _, m := range rd.Messages {
			if m.EarlyOK() {
				h.enqueue(j, m)
			} else {
				b.msgs = append(b.msgs, m)
			}
		}
		b.committed = slices.Clone(rd.Applied)
		b.state = j.node.State()
		b.reads = slices.Clone(rd.ReadStates)
		var ops []paxos.WriteOp
		if len(rd.Writes) > 0 {
			ops = slices.Clone(rd.Writes)
		}
		sync := rd.MustSync
		h.observeVotes(j, rd.Votes) // before Advance: the buffer is the node's
		j.node.Advance()
		if j.node.StorageFault() != nil {
			h.coldFault(j)
			return
		}
		h.jitter(j)
		j.batches = append(j.batches, b)
		if ops != nil {
			h.tokens[b.token] = j.spec.ID
			h.counters.Persists++
			h.env.Persist(b.token, j.spec.ID, ops, sync)
		}
		h.release(j)
	}
}

// jitter hands the node a fresh election timeout when its timer was reset
// (and at boot, so nodes booted together do not all campaign on the same
// tick).
//
// The timeout is ranked, not only jittered: each journal orders its members
// by a rotation its id picks (electionRank), and a member of rank r draws
// base + r·base/2 + [0, base/4). So one member per journal comes first, the
// next a quarter of a timeout after it at the least, and two members of one
// journal rarely campaign against each other. With thousands of journals
// booting or losing their leader's machine at once, plain jitter in [base,
// 2·base) made most of them duel: under load a campaign outlives the gap
// between two members' timeouts, the later one pre-empts it, and so on.
// The rotation spreads the first choices over the members, so leadership
// spreads over the machines. It is a liveness policy only: any member may
// still campaign and win.
func (h *Host) jitter(j *journalRT) {
	if j.node.WantsElectionTimeout() {
		base := h.tun.ElectionTicks
		rank := h.electionRank(j)
		j.node.SetElectionTimeout(base + rank*max(1, base/2) + int(h.env.Rand()%uint64(max(1, base/4))))
	}
}

// electionRank is this process's place in journal j's election order: its
// index among the members of the configuration the node believes, rotated
// by a hash of the journal's id.
func (h *Host) electionRank(j *journalRT) int {
	members := j.node.Configuration().Acceptors.Members()
	if len(members) == 0 {
		members = j.cfg.Acceptors.Members()
	}
	i := slices.Index(members, h.id)
	if i < 0 || len(members) == 0 {
		return 0
	}
	id := j.spec.ID
	rot := int((id.Tenant*0x9e3779b97f4a7c15 ^ id.Journal*0xc2b2ae3d27d4eb4f) >> 33 % uint64(len(members)))
	return (i - rot + len(members)) % len(members)
}

// release hands out the effects of every batch at the head of the queue
// that is durable, in batch order: messages, then verdicts, then reads.
func (h *Host) release(j *journalRT) {
	for j.status == Live && len(j.batches) > 0 && j.batches[0].durable {
		b := j.batches[0]
		j.batches[0] = nil
		j.batches = j.batches[1:]
		for _, m := range b.msgs {
			h.enqueue(j, m)
		}
		j.released = b.state
		// This batch and every earlier one are durable: their records may
		// leave the node's hot window.
		j.node.MarkDurable(b.batch)
		for _, c := range b.committed {
			h.observeApplied(j, c)
			h.answerApplied(j, c)
		}
		for _, r := range b.reads {
			h.settleRead(j, r)
		}
	}
	if j.status == Live {
		h.abandonJumped(j)
		h.wakeWaitingReads(j)
	}
	if j.status == Live && j.node.StorageFault() != nil {
		h.coldFault(j) // a read page met it (the read was answered unserved)
	}
}

// coldFault ends an incarnation whose node could not read an evicted
// record back. Nothing built on the failed read was released (the core
// answers no such question, and a verdict it could not judge is Unheld);
// the journal reboots from its store, whose boot scan classifies the damage.
func (h *Host) coldFault(j *journalRT) {
	h.counters.ColdReadFaults++
	h.quarantine(j, fmt.Errorf("journal %s: %w", j.spec.ID, j.node.StorageFault()))
}

// onPersisted marks a batch durable, or quarantines its journal.
func (h *Host) onPersisted(j *journalRT, t Token, err error) {
	delete(h.tokens, t)
	if err != nil {
		h.quarantine(j, fmt.Errorf("journal %s: persist: %w", j.spec.ID, err))
		return
	}
	for _, b := range j.batches {
		if b.token == t {
			b.durable = true
			break
		}
	}
	h.release(j)
	h.drain(j)
}
