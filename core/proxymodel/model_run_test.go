package proxymodel

import (
	"fmt"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

// Run plays steps chaos steps and then a quiet tail on w, checking after
// every step; it returns the first violation.
func (w *World) Run(steps int) error {
	for step := range steps {
		w.chaosStep()
		if w.err != nil {
			return fmt.Errorf("step %d: %w", step, w.err)
		}
	}
	w.quiet()
	return w.err
}

// chaosStep delivers a burst (with duplicates and losses), syncs, ticks,
// proposes, and perhaps injects one fault.
func (w *World) chaosStep() {
	g := w.rng
	for range 1 + g.IntN(6) {
		if len(w.mail) == 0 {
			break
		}
		i := g.IntN(len(w.mail))
		switch g.IntN(40) {
		case 0, 1:
			w.reach["mailbox: a message is duplicated"]++
			w.mail = append(w.mail, w.mail[i])
			w.deliver(i)
		case 2:
			w.reach["mailbox: a message is lost"]++
			w.logf("lose %s", w.mail[i])
			w.mail = append(w.mail[:i], w.mail[i+1:]...)
		default:
			w.deliver(i)
		}
	}
	switch r := g.IntN(10); {
	case r < 5:
		w.sync(w.nodes[g.IntN(len(w.nodes))])
	case r < 7:
		for _, nd := range w.nodes {
			w.sync(nd)
		}
	}
	if g.IntN(10) < 3 {
		for _, nd := range w.nodes {
			w.tickNode(nd)
		}
		for _, p := range w.proxies {
			w.tickProxy(p)
		}
	} else if g.IntN(3) == 0 {
		w.tickNode(w.nodes[g.IntN(len(w.nodes))])
	}
	if g.IntN(3) == 0 {
		w.propose()
	}
	w.fault()
}

// propose asks the leader (or anyone) to decide a fresh write.
func (w *World) propose() {
	nd := w.leader()
	if nd == nil {
		nd = w.nodes[w.rng.IntN(len(w.nodes))]
	}
	if !nd.up {
		return
	}
	w.writes++
	e := journal.Entry{Records: [][]byte{[]byte(fmt.Sprintf("w%d.%d", w.seed, w.writes))}}
	var res paxos.ProposeResult
	if w.sys.Kind() == quorum.KindGrid && w.rng.IntN(3) == 0 {
		// The driver chooses the command's column (a leader's own, or
		// another).
		res = nd.n.ProposeIn(e, w.rng.IntN(w.sys.Spec().Cols))
	} else {
		res = nd.n.Propose(e)
	}
	w.logf("propose at n%d -> %v slot %d", nd.id, res.Status, res.Slot)
	w.drain(nd)
}

// fault injects at most one fault.
func (w *World) fault() {
	g := w.rng
	switch r := g.IntN(200); {
	case r < 4:
		nd := w.nodes[g.IntN(len(w.nodes))]
		if nd.up && g.IntN(2) == 0 {
			w.sync(nd) // crash after the batch is durable
		}
		w.crashNode(nd)
	case r < 12:
		for _, nd := range w.nodes {
			if !nd.up {
				w.boot(nd)
				w.drain(nd)
				break
			}
		}
	case r < 16:
		w.crashProxy(w.proxies[g.IntN(len(w.proxies))])
	case r < 22:
		for _, p := range w.proxies {
			if !p.up {
				p.p, p.up = paxos.NewProxy(p.id, w.popts), true
				w.logf("reboot proxy %d", p.id)
				break
			}
		}
	case r < 25:
		if l := w.leader(); l != nil {
			w.logf("n%d resigns", l.id)
			w.reach["leader: a leader resigns mid-round"]++
			l.n.StepDown()
			w.drain(l)
		}
	case r < 30:
		if l := w.leader(); l != nil {
			to := w.sys.Members()[g.IntN(w.sys.Size())]
			err := l.n.RelinquishTo(to)
			w.logf("n%d hands on to n%d: %v", l.id, to, err)
			w.drain(l)
		}
	case r < 33:
		if len(w.replay) > 0 {
			m := w.replay[g.IntN(len(w.replay))]
			w.logf("replay %s", m)
			w.post(m)
		}
	case r < 36:
		if len(w.late) > 0 {
			m := w.late[g.IntN(len(w.late))]
			w.logf("late %s", m)
			w.post(m)
		}
	case r < 42:
		w.successorAuthority()
	case r < 44:
		w.setProxies()
	}
}

// setProxies is the operator changing the proxy list: one proxy leaves it,
// or the full list comes back. Every live node learns it at once; a node
// down learns it at its boot. A proxy left out keeps running: its late
// answers reach nodes that no longer hear it.
func (w *World) setProxies() {
	next := []paxos.NodeID{101, 102}
	if len(w.proxyList) == 2 {
		next = []paxos.NodeID{w.proxyList[w.rng.IntN(2)]}
	}
	w.proxyList = next
	w.reach["operator: the proxy list changes"]++
	w.logf("operator sets the proxies to %v", next)
	for _, nd := range w.nodes {
		if nd.up {
			if err := nd.n.SetProxies(next); err != nil {
				w.fail("node %d refused the proxy list %v: %v", nd.id, next, err)
			}
			w.drain(nd)
		}
	}
}

// successorAuthority targets the durable frontier: a successor leading an
// inherited authority crashes (before or after its batch is durable),
// reboots at once, and is handed the Relinquish that made it leader again
// before any other ballot reaches it.
func (w *World) successorAuthority() {
	l := w.leader()
	if l == nil || !l.n.Inherited() {
		return
	}
	var m paxos.Message
	found := false
	for i := len(w.replay) - 1; i >= 0; i-- {
		if r := w.replay[i]; r.To == l.id && r.Ballot == l.n.LeaderBallot() {
			m, found = r, true
			break
		}
	}
	if !found {
		return
	}
	if w.rng.IntN(2) == 0 {
		w.sync(l)
	}
	w.crashNode(l)
	w.boot(l)
	w.logf("successor n%d rebooted and handed %s again", l.id, m)
	l.n.Step(m)
	w.drain(l)
}

// quiet heals everything (one proxy perhaps dead for good), lets the world
// settle, and requires convergence.
func (w *World) quiet() {
	if w.err != nil {
		return
	}
	for _, nd := range w.nodes {
		if !nd.up {
			w.boot(nd)
		}
	}
	if w.rng.IntN(2) == 0 {
		p := w.proxies[w.rng.IntN(len(w.proxies))]
		w.crashProxy(p)
		p.dead = true
	}
	for _, p := range w.proxies {
		if !p.up && !p.dead {
			p.p, p.up = paxos.NewProxy(p.id, w.popts), true
		}
	}
	// Every write proposed in the chaos that is still open must get a
	// verdict; a last write proves the settled leader still decides.
	for round := range 600 {
		for len(w.mail) > 0 {
			w.deliver(0)
		}
		for _, nd := range w.nodes {
			w.sync(nd)
		}
		for _, nd := range w.nodes {
			w.tickNode(nd)
		}
		for _, p := range w.proxies {
			w.tickProxy(p)
		}
		if round == 300 {
			w.propose()
		}
		if w.err != nil {
			return
		}
		if round > 300 && w.converged() == "" {
			break
		}
	}
	if why := w.converged(); why != "" {
		w.fail("the quiet tail did not converge: %s", why)
	}
	for _, nd := range w.nodes {
		w.collectNode(nd)
	}
	for _, p := range w.proxies {
		if p.up {
			w.collectProxy(p)
		}
	}
}

// converged names what is not settled yet ("" when everything is): every
// node up with one chosen index that covers every slot any node voted in,
// one leader with nothing delegated, no live proxy with a round open.
func (w *World) converged() string {
	l := w.leader()
	if l == nil {
		return "no leader"
	}
	var top paxos.Slot
	for _, nd := range w.nodes {
		top = max(top, nd.n.Acceptor().VoteWatermark())
	}
	for _, nd := range w.nodes {
		if nd.n.ChosenIndex() < top || nd.n.Applied() < top {
			return fmt.Sprintf("n%d chosen %d applied %d, highest vote %d", nd.id, nd.n.ChosenIndex(), nd.n.Applied(), top)
		}
	}
	if d := l.n.Delegated(); d > 0 {
		return fmt.Sprintf("leader n%d holds %d delegated rounds", l.id, d)
	}
	for _, p := range w.proxies {
		if p.up && p.p.Open() > 0 {
			return fmt.Sprintf("proxy %d holds %d open rounds", p.id, p.p.Open())
		}
	}
	return ""
}
