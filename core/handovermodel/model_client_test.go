package handovermodel

import (
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

// client matchmakes as a candidate does (core/paxos's node, reduced to its
// matchmaking): it registers a ballot with a configuration at a quorum of
// the set it believes in force, follows refusals that name a newer chosen
// set, and finishes a handover it meets stopped with no successor. It also
// raises watermarks and starts handovers of its own.
type client struct {
	w     *World
	id    paxos.NodeID
	up    bool
	set   matchmaker.Set
	round uint64
	att   map[journal.ID]*attempt
	gc    map[journal.ID]*gcAttempt
	// own are the ballots of its registrations that completed, per
	// journal (a watermark is raised to one of them: a leader collects at
	// its own ballot).
	own map[journal.ID][]paxos.Ballot
	rec *matchmaker.Reconfigurer
	// finishing: rec is a finisher.
	finishing bool
	// rebooted: the client rebooted to the founding set and has not yet
	// followed the chain beyond it.
	rebooted bool
}

type attempt struct {
	// ticks counts the ticks the attempt waited: a candidate abandons its
	// matchmaking at its election timeout (attemptTicks).
	ticks  int
	b      paxos.Ballot
	cfg    quorum.System
	reconf bool
	set    matchmaker.Set
	oks    map[paxos.NodeID]paxos.Message
	done   bool
}

type gcAttempt struct {
	w    paxos.Ballot
	set  matchmaker.Set
	acks map[paxos.NodeID]bool
	done bool
}

// attemptTicks is how long a client waits for a matchmaker quorum before
// it abandons the ballot (its election timeout).
const attemptTicks = 3

func newClient(w *World, id paxos.NodeID) *client {
	c := &client{w: w, id: id}
	c.reboot()
	return c
}

// reboot loses everything volatile: the client believes the founding set
// again (its bootstrap belief) and must follow the chain.
func (c *client) reboot() {
	c.up, c.set = true, c.w.sets[1].Clone()
	c.att, c.gc, c.own = map[journal.ID]*attempt{}, map[journal.ID]*gcAttempt{}, map[journal.ID][]paxos.Ballot{}
	c.rec, c.finishing = nil, false
	c.round += 10 // a rebooted candidate opens above its earlier ballots (its durable promise)
	c.rebooted = true
}

// adopt follows the chain to the chosen set s.
func (c *client) adopt(s matchmaker.Set) {
	if s.Generation <= c.set.Generation {
		return
	}
	c.w.logf("c%d adopts %s", c.id, s)
	c.w.reach["node: a late request was pointed at the successor"]++
	if c.rebooted && s.Generation > 1 {
		c.w.reach["node: a rebooted client followed the chain from its bootstrap belief"]++
		c.rebooted = false
	}
	c.set = s.Clone()
	// What was counted against the old generation counts nothing now.
	c.att, c.gc = map[journal.ID]*attempt{}, map[journal.ID]*gcAttempt{}
}

// register opens a registration on j at a fresh ballot.
func (c *client) register(j journal.ID) {
	c.round++
	a := &attempt{b: paxos.Ballot{Round: c.round, Node: c.id}, cfg: c.w.configs[c.w.rng.IntN(len(c.w.configs))],
		reconf: c.w.rng.IntN(3) == 0, set: c.set.Clone(), oks: map[paxos.NodeID]paxos.Message{}}
	c.att[j] = a
	c.sendMatch(j, a)
}

func (c *client) sendMatch(j journal.ID, a *attempt) {
	for _, id := range a.set.Members {
		if _, ok := a.oks[id]; !ok {
			c.w.post(msg{j: j, m: paxos.Message{Type: paxos.MsgMatch, From: c.id, To: id, Ballot: a.b, Config: a.cfg,
				Reconf: a.reconf, Prepared: a.b, Generation: a.set.Generation}})
		}
	}
}

// collect raises j's watermark to one of its own completed ballots.
func (c *client) collect(j journal.ID) {
	own := c.own[j]
	if len(own) == 0 {
		return
	}
	g := &gcAttempt{w: own[c.w.rng.IntN(len(own))], set: c.set.Clone(), acks: map[paxos.NodeID]bool{}}
	c.gc[j] = g
	c.sendGC(j, g)
}

func (c *client) sendGC(j journal.ID, g *gcAttempt) {
	for _, id := range g.set.Members {
		if !g.acks[id] {
			c.w.post(msg{j: j, m: paxos.Message{Type: paxos.MsgGarbageCollect, From: c.id, To: id, GC: g.w, Generation: g.set.Generation}})
		}
	}
}

// startHandover proposes a random set of the pool as the next generation.
func (c *client) startHandover() {
	if c.rec != nil {
		return
	}
	sizes := []int{3, 3, 3, 1, 5, 4}
	n := sizes[c.w.rng.IntN(len(sizes))]
	members := append([]paxos.NodeID(nil), pool...)
	c.w.rng.Shuffle(len(members), func(i, k int) { members[i], members[k] = members[k], members[i] })
	members = members[:n]
	sortIDs(members)
	c.rec, c.finishing = matchmaker.NewReconfigurer(c.id, c.set, members, c.w.opts), false
	c.w.logf("c%d starts a handover of %s to %v", c.id, c.set, members)
	c.flush()
}

// finish starts a finisher of the client's set.
func (c *client) finish() {
	if c.rec != nil {
		return
	}
	c.w.reach["handover: a finisher met a generation stopped with no successor"]++
	c.rec, c.finishing = matchmaker.NewFinisher(c.id, c.set, c.w.opts), true
	c.w.logf("c%d finishes the handover of %s", c.id, c.set)
	c.flush()
}

// flush posts what the reconfigurer has to send.
func (c *client) flush() {
	if c.rec == nil {
		return
	}
	for _, h := range c.rec.Messages() {
		c.w.post(msg{h: &h})
	}
	c.settle()
}

// settle reads the reconfigurer's outcome.
func (c *client) settle() {
	r := c.rec
	if s := r.Chosen(); !s.IsZero() {
		c.w.noteSet(s, "a reconfigurer's outcome")
	}
	switch r.Step() {
	case matchmaker.RDone:
		if c.finishing {
			c.w.reach["handover: a finisher completed a handover"]++
		}
		c.adopt(r.Chosen())
		c.rec = nil
	case matchmaker.RAbandoned:
		c.w.reach["handover: a reconfigurer abandoned a phase"]++
		if s := r.Chosen(); !s.IsZero() {
			c.adopt(s)
		}
		c.rec = nil
	}
}

// tick resends what is outstanding and ticks the reconfigurer.
func (c *client) tick() {
	for _, j := range journals { // journal order: deterministic
		if a := c.att[j]; a != nil && !a.done {
			if a.ticks++; a.ticks > attemptTicks {
				a.done = true
			} else {
				c.sendMatch(j, a)
			}
		}
		if g := c.gc[j]; g != nil && !g.done {
			c.sendGC(j, g)
		}
	}
	if c.rec != nil {
		before := c.rec.Counters()
		c.rec.Tick()
		// A decree a higher ballot refused reopens after its backoff, on
		// a tick.
		if after := c.rec.Counters(); after.DecreeRounds > before.DecreeRounds && before.DecreeRounds > 0 {
			c.w.reach["handover: a lost decree round reopened higher"]++
		}
		c.flush()
	}
}

func (c *client) receive(x msg) {
	if x.h != nil {
		if c.rec != nil {
			before := c.rec.Counters()
			c.rec.StepHandover(*x.h)
			after := c.rec.Counters()
			if after.Stopped > before.Stopped {
				c.w.reach["handover: a stop quorum froze a generation"]++
			}
			if after.Bootstrapped > before.Bootstrapped {
				c.w.reach["handover: every proposed member holds the whole bootstrap"]++
			}
			if after.Adopted > before.Adopted {
				c.w.reach["handover: the decree adopted a vote of another proposal"]++
			}
			if after.DecreeRounds > before.DecreeRounds && before.DecreeRounds > 0 {
				c.w.reach["handover: a lost decree round reopened higher"]++
			}
			c.flush()
		}
		return
	}
	m := x.m
	if !c.set.Has(m.From) || m.Generation != c.set.Generation {
		return
	}
	if m.Refusal >= paxos.MatchStopped {
		switch {
		case m.Refusal != paxos.MatchInactive && !m.Successor.IsZero() && c.set.Generation < m.Successor.Generation:
			c.w.noteSet(m.Successor, "a matchmaker's pointer")
			c.adopt(m.Successor)
		case m.Refusal == paxos.MatchStopped && m.Successor.IsZero():
			c.finish()
		case m.Refusal == paxos.MatchInactive && c.set.Generation >= 2:
			// A member of a chosen set that missed its publication: tell
			// it (the driver's rule, host.publishToLagging).
			c.w.reach["node: a member that missed a publication is told the set"]++
			h := matchmaker.Handover{Kind: matchmaker.HChosen, From: c.id, To: m.From, Generation: c.set.Generation, Set: c.set.Clone()}
			c.w.post(msg{h: &h})
		}
		return
	}
	switch m.Type {
	case paxos.MsgMatchReply:
		c.matchReply(x.j, m)
	case paxos.MsgGarbageCollectAck:
		g := c.gc[x.j]
		if g == nil || g.done || m.GC.Less(g.w) {
			return
		}
		g.acks[m.From] = true
		if 2*len(g.acks) > len(g.set.Members) {
			g.done = true
			c.w.reach["gc: a watermark becomes effective"]++
			c.w.effective[x.j] = append(c.w.effective[x.j], watermark{w: g.w, gen: g.set.Generation})
		}
	}
}

func (c *client) matchReply(j journal.ID, m paxos.Message) {
	a := c.att[j]
	if a == nil || a.done || m.Ballot != a.b {
		return
	}
	if m.Refusal != paxos.MatchOK {
		if c.round < m.Refused.Round {
			c.round = m.Refused.Round
		}
		a.done = true
		return
	}
	a.oks[m.From] = m
	if 2*len(a.oks) <= len(a.set.Members) {
		return
	}
	a.done = true
	c.own[j] = append(c.own[j], a.b)
	c.w.reach["registration: a registration completes at a matchmaker quorum"]++
	c.w.completedRegistration(j, a)
}

func sortIDs(ids []paxos.NodeID) {
	for i := 1; i < len(ids); i++ {
		for k := i; k > 0 && ids[k] < ids[k-1]; k-- {
			ids[k], ids[k-1] = ids[k-1], ids[k]
		}
	}
}
