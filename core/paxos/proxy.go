package paxos

import (
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/quorum"
)

// Proxy leaders (Compartmentalized Paxos, Whittaker et al., §3.1). A proxy
// leader is the proposer's own Phase-2 tally on another process, plus
// routing. The leader hands it the very Accept it would have broadcast (a
// delegation: the slots, the ballot, and the configuration whose quorum
// decides them); the proxy fans it out to each slot's Phase-2 addressees
// naming itself as the reply party and the leader as the hint, folds the
// Accepteds, and emits one Commit naming the decided slots and their values
// to the leader and every acceptor. The leader sends one message and
// receives one, whatever the width of the configuration.
//
// A proxy contributes nothing to the decision. It votes on nothing, orders
// nothing and adopts no ballot: a value it announces is one a Phase-2
// quorum durably accepted at one ballot (an acceptor's Accepted leaves only
// once its record is on disk), so moving the broadcast to another process
// cannot break agreement. It persists nothing: a crash reboots it empty,
// and the leader's next re-delegation rebuilds what it still needs.
//
// Bounded retention: the proxy re-fans-out its open rounds every beat, and
// after ProxyOptions.EvictAfter unanswered re-fan-outs it evicts a round.
// One class of round is never answered (a slot every acceptor compacted
// past ignores an Accept without a reply), and a delegation delayed on the
// wire past the leader's take-back would otherwise be re-sent for the rest
// of the process's life. An eviction is not a decision: nothing is emitted,
// and a leader that still needs the round re-delegates it, or takes it back
// and runs it itself (node_proxy.go).

// ProxyOptions are a proxy leader's tunables; zero means the default.
type ProxyOptions struct {
	// BeatTicks is the re-fan-out period (the leader's heartbeat period).
	BeatTicks int
	// EvictAfter is the budget of unanswered re-fan-outs after which a
	// round is evicted.
	EvictAfter int
}

// Defaults for ProxyOptions.
const (
	defaultProxyBeatTicks  = 2
	defaultProxyEvictAfter = 40
	// proxyRoundsMax bounds the rounds one proxy keeps for one journal; a
	// delegation past it is dropped (the leader takes the round back).
	proxyRoundsMax = 1 << 16
)

// ProxyCounters count how often each proxy path fired.
type ProxyCounters struct {
	// Delegated rounds opened; Decided rounds announced; Evicted rounds
	// dropped unanswered; Refans re-fan-outs; Relayed Nacks sent on to
	// the leader; Stale delegations of a ballot below the highest handed.
	Delegated, Decided, Evicted, Refans, Relayed, Stale uint64
}

// proxyRound is one delegated slot.
type proxyRound struct {
	cmd        journal.Command
	tally      Tally
	unanswered int
}

// Proxy is the proxy leader of one journal. Drive it like a node: Step each
// message addressed to it, Tick it, and send what Messages hands out (it
// has nothing to persist, so nothing waits for a disk).
type Proxy struct {
	id   NodeID
	opts ProxyOptions
	// ballot is the highest ballot handed to this proxy, leader the node
	// that last delegated at it (the owner, or a successor it handed its
	// leadership to), and sys the configuration whose quorums decide.
	ballot   Ballot
	leader   NodeID
	sys      quorum.System
	rounds   map[Slot]*proxyRound
	elapsed  int
	out      []Message
	counters ProxyCounters
}

// NewProxy returns an empty proxy leader (a boot and a reboot alike).
func NewProxy(id NodeID, opts ProxyOptions) *Proxy {
	if opts.BeatTicks < 1 {
		opts.BeatTicks = defaultProxyBeatTicks
	}
	if opts.EvictAfter < 1 {
		opts.EvictAfter = defaultProxyEvictAfter
	}
	return &Proxy{id: id, opts: opts, rounds: map[Slot]*proxyRound{}}
}

// ID is this proxy's id.
func (p *Proxy) ID() NodeID { return p.id }

// Counters returns how often each path fired.
func (p *Proxy) Counters() ProxyCounters { return p.counters }

// Open is the number of rounds the proxy holds open.
func (p *Proxy) Open() int { return len(p.rounds) }

// Ballot is the highest ballot handed to the proxy.
func (p *Proxy) Ballot() Ballot { return p.ballot }

// Messages hands out the messages queued since the last call.
func (p *Proxy) Messages() []Message {
	out := p.out
	p.out = nil
	return out
}

func (p *Proxy) send(m Message) {
	m.From = p.id
	p.out = append(p.out, m)
}

// Step feeds one message: a delegation (an Accept from a leader), an
// acceptor's Accepted, or an acceptor's Nack. Anything else, malformed or
// not addressed to this proxy, is ignored.
func (p *Proxy) Step(m Message) {
	if m.To != p.id || m.From == 0 || m.Validate() != nil {
		return
	}
	switch m.Type {
	case MsgAccept:
		p.delegate(m)
	case MsgAccepted:
		p.accepted(m)
	case MsgNack:
		p.nack(m)
	}
}

// delegate opens the rounds of a leader's delegation and fans them out. A
// delegation above the highest ballot handed replaces every round of the
// older ballot (the proxy works for the newest leader); one below it is
// ignored, and its leader takes the round back after its budget.
func (p *Proxy) delegate(m Message) {
	if m.Ballot.IsZero() || m.Config.IsZero() || validateSystem(m.Config) != nil {
		return
	}
	switch {
	case m.Ballot.Less(p.ballot):
		p.counters.Stale++
		return
	case p.ballot.Less(m.Ballot):
		p.ballot, p.sys = m.Ballot, m.Config
		clear(p.rounds)
	case !SameSystem(p.sys, m.Config):
		return // one ballot is bound to one configuration
	}
	p.leader = m.From
	var fan []SlotCommand
	for _, e := range m.Entries {
		if e.Ballot != m.Ballot || e.Slot == 0 || !e.Command.Valid() {
			continue
		}
		r, ok := p.rounds[e.Slot]
		switch {
		case ok && r.tally.Fingerprint() != e.Command.Fingerprint():
			continue // one value per slot and ballot: keep the first
		case ok:
			r.unanswered = 0 // the leader still needs it: re-fan it out now
		case len(p.rounds) >= proxyRoundsMax:
			continue
		default:
			p.rounds[e.Slot] = &proxyRound{cmd: e.Command, tally: NewTally(e.Command.Fingerprint())}
			p.counters.Delegated++
		}
		fan = append(fan, e)
	}
	p.fanOut(fan)
}

// fanOut sends each entry to its slot's Phase-2 addressees but the leader:
// every member on a majority or flexible system, the slot's column on a
// grid. The leader's own vote comes with its delegation (node_proxy.go).
// Many slots ride in one Accept per addressee.
func (p *Proxy) fanOut(entries []SlotCommand) {
	if len(entries) == 0 {
		return
	}
	for i, id := range p.sys.Members() {
		if id == p.leader {
			continue
		}
		var mine []SlotCommand
		for _, e := range entries {
			if p.sys.ColumnOf(e.Slot) == p.sys.MemberColumn(i) {
				mine = append(mine, e)
			}
		}
		inPages(mine, func(page []SlotCommand) {
			p.send(Message{Type: MsgAccept, To: id, Ballot: p.ballot, Leader: p.leader, Entries: page})
		})
	}
}

// accepted folds an acceptor's votes; the slots that now hold a Phase-2
// quorum at the ballot are announced in one Commit to the leader and to
// every acceptor, each slot with its value's fingerprint (every addressee
// holds the value: the leader proposed it, an acceptor voted for it or
// learns it by catch-up).
func (p *Proxy) accepted(m Message) {
	idx, ok := p.sys.IndexOf(m.From)
	if !ok || m.Ballot != p.ballot {
		return
	}
	var decided []SlotVote
	for _, v := range m.Votes {
		r := p.rounds[v.Slot]
		if r == nil {
			continue
		}
		counted, won := r.tally.Grant(p.sys, v.Slot, idx, v.VHash)
		if counted {
			// A new vote is progress; a repeated one is not (a round whose
			// quorum cannot form still evicts).
			r.unanswered = 0
		}
		if won {
			decided = append(decided, SlotVote{Slot: v.Slot, VHash: v.VHash})
			delete(p.rounds, v.Slot)
			p.counters.Decided++
		}
	}
	if len(decided) == 0 {
		return
	}
	slices.SortFunc(decided, func(a, b SlotVote) int { return cmpSlot(a.Slot, b.Slot) })
	p.send(Message{Type: MsgCommit, To: p.leader, Ballot: p.ballot, Leader: p.leader, Votes: decided})
	for _, id := range p.sys.Members() {
		if id != p.leader {
			p.send(Message{Type: MsgCommit, To: id, Ballot: p.ballot, Leader: p.leader, Votes: decided})
		}
	}
}

// nack relays an acceptor's refusal of the ballot to the leader, which
// steps down on a higher promise; the refuser counts against each open
// round. A Nack that refuses no ballot of this proxy's (below its floor, a
// compacted slot) is not relayed: it would depose nobody, and the leader's
// take-back meets it itself.
func (p *Proxy) nack(m Message) {
	idx, ok := p.sys.IndexOf(m.From)
	if !ok || m.Refused != p.ballot || !p.ballot.Less(m.Ballot) {
		return
	}
	for _, r := range p.rounds {
		r.tally.Refuse(idx)
	}
	p.counters.Relayed++
	p.send(Message{Type: MsgNack, To: p.leader, Ballot: m.Ballot, Refused: m.Refused})
}

// Tick advances logical time: every beat the open rounds are fanned out
// again, and a round unanswered for the budget is evicted.
func (p *Proxy) Tick() {
	p.elapsed++
	if p.elapsed < p.opts.BeatTicks {
		return
	}
	p.elapsed = 0
	var fan []SlotCommand
	for s, r := range p.rounds {
		r.unanswered++
		if r.unanswered > p.opts.EvictAfter {
			delete(p.rounds, s)
			p.counters.Evicted++
			continue
		}
		fan = append(fan, SlotCommand{Slot: s, Ballot: p.ballot, Command: r.cmd})
	}
	if len(fan) == 0 {
		return
	}
	// Map order is random; the wire order is not (a seed replays).
	slices.SortFunc(fan, func(a, b SlotCommand) int { return cmpSlot(a.Slot, b.Slot) })
	p.counters.Refans += uint64(len(fan))
	p.fanOut(fan)
}

func cmpSlot(a, b Slot) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
