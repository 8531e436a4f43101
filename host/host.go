package host

import (
	"errors"
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage"
)

// Host is one process: a node id, a table of journals, peer mailboxes.
type Host struct {
	id        paxos.NodeID
	env       Env
	tun       Tunables
	journals  []*journalRT // sorted by journal id
	tokens    map[Token]journal.ID
	mailboxes map[paxos.NodeID]*mailbox
	peers     []paxos.NodeID // sorted: every member of every journal but this node
	now       uint64
	token     Token
	lastFault error
	stopped   bool
	counters  Counters
	observer  Observer
	mm        *mmRT
	// rec is the handover this process drives (nil: none); hoOut the
	// handover messages waiting for the next flush.
	rec   *recRT
	hoOut []matchmaker.Handover
	// mmsLearned is the newest chosen matchmaker set a handover taught
	// this process (its nodes may have none to follow: a machine that
	// retired from every journal).
	mmsLearned paxos.MatchmakerSet
	// live is what this process knows of its peers' machines: the machine
	// beat that keeps quiet journals quiet (quiet.go).
	live liveness
	// awake is the journals the next tick visits (awake.go).
	awake awakeSet
	// attention is the journals whose nodes found a matchmaker lagging or
	// their set stopped, for tickHandover (handover.go); each is flagged
	// attending while listed.
	attention []*journalRT
	// touched is the journals drained since the audit last took them
	// (TakeTouched; kept only with an observer).
	touched []*journalRT
	// due is the tick's journals whose campaign is due (campaigns.go),
	// kept to reuse its array.
	due []*journalRT
}

// Counters are observation only.
type Counters struct {
	Persists, Delivers, Evictions, Dropped     uint64
	Quarantines, Reopens, BootRefusals         uint64
	CallsAnswered, CallsLost, Redirects        uint64
	ReadsServed, ReadsUnserved, ReadsTruncated uint64
	// ColdReadFaults counts quarantines after a failed read of an evicted
	// record (a damaged or lost record on a live disk).
	ColdReadFaults uint64
	// ContractFaults counts quarantines after a peer broke the Paxos
	// contract (paxos.ErrContract): a bug or a lying member. Honest cells
	// never raise it; the simulator fails a seed that does.
	ContractFaults uint64
	// MachineBeats counts machine beats sent;
	// PeersSilent peers found silent past the election timeout; and
	// WokenByMachine the quiet journals woken for it (quiet.go).
	MachineBeats, PeersSilent, WokenByMachine uint64
	// ScrubTurns counts scrub pages granted to quiet journals.
	ScrubTurns uint64
	// CampaignsHeld counts ticks a due campaign waited for the machine's
	// campaign budget (campaigns.go).
	CampaignsHeld uint64
	// MatchmakerFaults counts matchmaker store faults (each closes the
	// matchmaker for good).
	MatchmakerFaults uint64
	// Joined, Created and Retired count journals added as a joiner, added
	// as a member of a journal the control plane created, and removed by
	// an honoured retire.
	Joined, Created, Retired uint64
	// HandedOff counts leaderships a graceful shutdown handed on
	// (HandOffAll); HandedOnAgain those among them a handoff had made
	// this node's, which re-elected itself first.
	HandedOff, HandedOnAgain uint64
	// Matchmaker-set handovers driven from this process (handover.go):
	// started by the operator, started as a finisher, ended with the
	// outcome chosen, abandoned without one.
	Handovers, Finishers, HandoversChosen, HandoversAbandoned uint64
	// Republished counts the chosen sets told to a member that missed
	// their publication.
	Republished uint64
	// TickVisits counts the journals ticks visited (the awake set,
	// awake.go): what idle journals cost a tick.
	TickVisits uint64
}

// Observer sees what a host decides, for the simulator's audit. It must
// return nothing and change nothing: deleting every call leaves the host
// bit-identical.
type Observer interface {
	// Applied is a slot folded on this node, released once durable.
	Applied(node paxos.NodeID, j journal.ID, c paxos.Applied)
}

// VoteObserver is an Observer that also sees the votes a node casts
// (paxos.Ready.Votes), as the batch that records them goes to the store:
// the simulator's audit ledgers them to tell an acceptor's votes from the
// chosen values it learned, which its store holds as the same records. The
// votes are the node's buffer: an observer copies what it keeps. Optional,
// and bound by Observer's rule: it changes nothing.
type VoteObserver interface {
	Voted(node paxos.NodeID, j journal.ID, votes []paxos.SlotCommand)
}

// ErrStopped: every journal of the process is down or quarantined, so the
// process stops (fail-stop), naming the last fault.
var ErrStopped = errors.New("paros/host: every journal is down")

// New builds a host for node id serving the given journals, and boots each.
// Boot refusals leave the journal Down; Err reports why.
func New(id paxos.NodeID, env Env, tun Tunables, specs []JournalSpec) (*Host, error) {
	if err := tun.Validate(); err != nil {
		return nil, err
	}
	h := &Host{id: id, env: env, tun: tun.withDefaults(), tokens: map[Token]journal.ID{},
		mailboxes: map[paxos.NodeID]*mailbox{}}
	seen := map[journal.ID]bool{}
	for _, s := range specs {
		if !s.ID.IsSet() {
			return nil, fmt.Errorf("paros/host: journal id %s is unset", s.ID)
		}
		if seen[s.ID] {
			return nil, fmt.Errorf("paros/host: journal %s listed twice", s.ID)
		}
		seen[s.ID] = true
		j, err := newJournalRT(id, s)
		if err != nil {
			return nil, err
		}
		h.journals = append(h.journals, j)
		for _, m := range append(slices.Clone(j.cfg.Acceptors.Members()), s.Matchmakers...) {
			if m != id && !slices.Contains(h.peers, m) {
				h.peers = append(h.peers, m)
			}
		}
	}
	slices.SortFunc(h.journals, func(a, b *journalRT) int { return a.spec.ID.Compare(b.spec.ID) })
	slices.Sort(h.peers)
	h.reindex()
	for _, j := range h.journals {
		h.boot(j, j.spec.Claim)
	}
	h.checkStopped()
	h.flush()
	return h, nil
}

// SetObserver installs the audit observer (simulator only).
func (h *Host) SetObserver(o Observer) { h.observer = o }

// ID is this process's node id.
func (h *Host) ID() paxos.NodeID { return h.id }

// Now is the host's tick count.
func (h *Host) Now() uint64 { return h.now }

// Counters returns the host's counters.
func (h *Host) Counters() Counters { return h.counters }

// Stopped reports whether the process stopped, and the last fault.
func (h *Host) Stopped() (bool, error) { return h.stopped, h.lastFault }

// Journals lists the journal ids served, sorted.
func (h *Host) Journals() []journal.ID {
	out := make([]journal.ID, len(h.journals))
	for i, j := range h.journals {
		out[i] = j.spec.ID
	}
	return out
}

// JournalCount is the number of journals served.
func (h *Host) JournalCount() int { return len(h.journals) }

// Status reports a journal's status and its last fault.
func (h *Host) Status(id journal.ID) (JournalStatus, error) {
	if j := h.journal(id); j != nil {
		return j.status, j.fault
	}
	return 0, nil
}

// Node exposes a live journal's core node for audits (read only).
func (h *Host) Node(id journal.ID) *paxos.Node {
	if j := h.journal(id); j != nil && j.status == Live {
		return j.node
	}
	return nil
}

// EachJournal calls fn for every journal served, in id order, with its
// status, last fault and, when it is Live, its node (read only): one walk
// for a metrics sample instead of a lookup per journal.
func (h *Host) EachJournal(fn func(id journal.ID, st JournalStatus, fault error, n *paxos.Node)) {
	for _, j := range h.journals {
		var n *paxos.Node
		if j.status == Live {
			n = j.node
		}
		fn(j.spec.ID, j.status, j.fault, n)
	}
}

func (h *Host) journal(id journal.ID) *journalRT {
	i, ok := slices.BinarySearchFunc(h.journals, id, func(j *journalRT, id journal.ID) int { return j.spec.ID.Compare(id) })
	if !ok {
		return nil
	}
	return h.journals[i]
}

func (h *Host) nextToken() Token {
	h.token++
	return h.token
}

// OnDeliver routes every envelope of a Deliver to its journal's node. An
// unknown, quarantined or down journal drops the message: the sender's
// resend repairs.
func (h *Host) OnDeliver(from paxos.NodeID, batch []Envelope) {
	if h.stopped {
		return
	}
	h.counters.Delivers++
	h.route(from, batch)
	h.flush()
}

// route hands each envelope of a batch from node from to its recipient:
// the matchmaker role, or the journal's node.
func (h *Host) route(from paxos.NodeID, batch []Envelope) {
	h.heard(from)
	for _, e := range batch {
		if e.MachineBeat {
			continue // heard: that is all a machine beat says
		}
		if e.Handover != nil {
			h.stepHandover(from, *e.Handover)
			continue
		}
		if e.Msg.From == from && e.Msg.To == h.id && e.Msg.Type.IsMatchmakerRequest() {
			h.stepMatchmaker(e)
			continue
		}
		j := h.journal(e.Journal)
		if j == nil || j.status != Live || e.Msg.From != from || e.Msg.To != h.id {
			h.counters.Dropped++
			continue
		}
		j.node.Step(e.Msg)
		h.drain(j)
	}
}

// OnTick advances logical time: every live node ticks, parked calls and
// long-polls time out, quarantined journals come back when due.
func (h *Host) OnTick() {
	if h.stopped {
		return
	}
	h.now++
	h.tickLiveness()
	campaigning := 0
	due := h.due[:0]
	h.eachAwake(func(j *journalRT) bool {
		h.counters.TickVisits++
		switch j.status {
		case Live:
			if h.resting(j) {
				j.node.Rest()
				return false // quiet: no timer runs until touched (quiet.go)
			}
			if j.node.CampaignDue() {
				due = append(due, j) // ticked once the budget is shared (campaigns.go)
				return true
			}
			h.tickJournal(j)
			if j.status == Live && j.slotUntil > h.now && j.node.Campaigning() { // a drain may quarantine it
				campaigning++
			}
			return true
		case Quarantined:
			if h.now >= j.reopenAt {
				h.counters.Reopens++
				if err := h.env.ReopenStore(j.spec.ID); err != nil {
					h.down(j, fmt.Errorf("reopen journal %s: %w", j.spec.ID, err))
					return false
				}
				h.boot(j, storage.ClaimExistingMember)
			}
			return true
		default:
			return false // down (or retired): nothing is due again
		}
	})
	h.tickDue(due, campaigning)
	clear(due)
	h.due = due[:0]
	h.scrubTurns()
	h.tickHandover()
	h.checkStopped()
	h.flush()
}

// OnPersisted reports that the batch named t is durable (err nil) or that
// its journal's store failed (the journal is quarantined).
func (h *Host) OnPersisted(t Token, err error) {
	if h.stopped {
		return
	}
	if h.mm != nil && h.mm.tokens[t] {
		h.onRegistryPersisted(t, err)
		h.flush()
		return
	}
	jid, ok := h.tokens[t]
	if !ok {
		return // a batch of an incarnation that was quarantined meanwhile
	}
	if j := h.journal(jid); j != nil && j.status == Live {
		h.onPersisted(j, t, err)
	}
	h.checkStopped()
	h.flush()
}

func (h *Host) checkStopped() {
	if h.stopped {
		return
	}
	if h.mm != nil && h.mm.mm.Closed() != nil {
		// A matchmaker's store fault closes the whole set of registries:
		// the process stops (fail-stop) and its supervisor restarts it,
		// which reopens the store from what is durable. A closed
		// matchmaker must not linger, refusing every candidate.
		h.stopped = true
		h.lastFault = fmt.Errorf("%w: %w", ErrStopped, h.lastFault)
		return
	}
	if len(h.journals) == 0 || h.mm != nil {
		return // a live matchmaker keeps the process up whatever its journals
	}
	for _, j := range h.journals {
		if j.status == Live {
			return
		}
	}
	h.stopped = true
	if h.lastFault == nil {
		h.lastFault = ErrStopped
	}
	h.lastFault = fmt.Errorf("%w: %w", ErrStopped, h.lastFault)
}

// enqueue queues a message on its peer's mailbox.
func (h *Host) enqueue(j *journalRT, m paxos.Message) { h.enqueueTo(j.spec.ID, m) }

// flush sends up to FlushDeliversMax Delivers to each peer, in peer order.
func (h *Host) flush() {
	h.deliverLoopback()
	h.flushHandovers()
	for _, p := range h.peers {
		mb := h.mailboxes[p]
		if mb == nil {
			continue
		}
		for range h.tun.FlushDeliversMax {
			batch := mb.take(h.tun.DeliveryBatch)
			if len(batch) == 0 {
				break
			}
			h.env.Send(p, batch)
			h.sent(p)
		}
	}
}

func (h *Host) reply(id CallID, r Response) {
	h.counters.CallsAnswered++
	h.env.Reply(id, r)
}

func (h *Host) observeVotes(j *journalRT, votes []paxos.SlotCommand) {
	if len(votes) == 0 {
		return
	}
	if o, ok := h.observer.(VoteObserver); ok {
		o.Voted(h.id, j.spec.ID, votes)
	}
}

func (h *Host) observeApplied(j *journalRT, c paxos.Applied) {
	if h.observer != nil {
		h.observer.Applied(h.id, j.spec.ID, c)
	}
}
