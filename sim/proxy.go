package sim

import (
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/host"
)

// Proxy leaders in the simulator (core/paxos/proxy.go). The proxies are
// their own process group (Shape.Proxies, 0–3 per seed, ids
// ProxyIDBase+rank), each the shipped proxy driver (host.ProxyHost) on the
// simulated network, killed and revived by their own attrition: a crash
// reboots a proxy empty, sometimes only after long enough for the leaders
// to take their rounds back. Every node's journals name the proxies, so a
// settled leader delegates each slot's Phase 2 to slot % proxy_count.
//
// The oracle: every Commit a proxy emits is backed by a Phase-2 quorum of
// durable accepts at one ballot, as the audit folds them from the
// acceptors' own Accepted messages (each leaves only once its record is
// on disk), never from the proxy's tally.

// ProxyIDBase is the first proxy process id.
const ProxyIDBase paxos.NodeID = 2000

// proxyProc is one proxy process.
type proxyProc struct {
	id  paxos.NodeID
	ph  *host.ProxyHost
	up  bool
	inc int
}

func (w *World) proxyByID(id paxos.NodeID) *proxyProc {
	for _, pp := range w.proxies {
		if pp.id == id {
			return pp
		}
	}
	return nil
}

// startProxies boots the proxy group.
func (w *World) startProxies() {
	for _, id := range w.shape.Proxies {
		pp := &proxyProc{id: id}
		w.proxies = append(w.proxies, pp)
		w.startProxy(pp)
	}
}

func (w *World) startProxy(pp *proxyProc) {
	pp.inc++
	pp.up = true
	inc := pp.inc
	pp.ph = host.NewProxyHost(pp.id, func(to paxos.NodeID, batch []host.Envelope) {
		if pp.up && pp.inc == inc {
			w.net.send(pp.id, to, batch)
		}
	}, w.shape.Tun)
	w.sched.note("start proxy n%d", pp.id)
	w.proxyTick(pp, inc)
}

func (w *World) proxyTick(pp *proxyProc, inc int) {
	w.sched.after(int64(w.shape.Tun.TickMs)*ms, lbl("tick proxy n%d", uint64(pp.id)), func() {
		if !pp.up || pp.inc != inc {
			return
		}
		pp.ph.OnTick()
		w.proxyTick(pp, inc)
	})
}

// crashProxy kills a proxy process: everything it held is gone.
func (w *World) crashProxy(pp *proxyProc) {
	if !pp.up {
		return
	}
	w.collectProxy(pp)
	pp.up, pp.ph = false, nil
	w.counts.ProxyCrashes++
	w.sched.note("crash proxy n%d", pp.id)
}

func (w *World) collectProxy(pp *proxyProc) {
	if pp.ph == nil {
		return
	}
	c := pp.ph.Counters()
	w.counts.ProxyEvicted += c.Evicted
	w.counts.ProxyAnnounced += c.Decided
	w.counts.ProxyRelayed += c.Relayed
}

// proxyChaos is the proxies' attrition during the chaos window.
func (w *World) proxyChaos() {
	if len(w.proxies) == 0 || w.sched.now >= w.chaosEnd {
		return
	}
	w.sched.after(w.g.between(100*ms, 700*ms), lbl("proxy chaos"), func() {
		if w.sched.now >= w.chaosEnd {
			return
		}
		if w.calm() {
			w.proxyChaos() // no proxy crashes while a hold is judged (hold.go)
			return
		}
		if w.g.pct(15) {
			w.changeProxies()
			w.proxyChaos()
			return
		}
		pp := w.proxies[w.g.intn(len(w.proxies))]
		if !pp.up {
			return
		}
		w.crashProxy(pp)
		down := w.g.between(20*ms, 500*ms)
		if w.g.pct(30) {
			down = w.g.between(1000*ms, 3000*ms) // long enough for take-backs
		}
		w.sched.after(down, lbl("restart proxy n%d", uint64(pp.id)), func() {
			if !pp.up {
				w.startProxy(pp)
			}
		})
		w.proxyChaos()
	})
}

// changeProxies is the operator changing the proxy list (parosctl proxies
// set): one listed proxy leaves it, or one left out comes back. Every
// process learns the new list on its own, within 0–50 ms (no quorum
// depends on it), and a process that is down learns it when it restarts.
// A proxy left out keeps running: what it still sends reaches nodes that
// no longer hear it.
func (w *World) changeProxies() {
	g := w.g
	var out []paxos.NodeID
	for _, id := range w.shape.Proxies {
		if !slices.Contains(w.proxySet, id) {
			out = append(out, id)
		}
	}
	next := slices.Clone(w.proxySet)
	if len(out) > 0 && (len(next) == 0 || g.pct(50)) {
		next = append(next, out[g.intn(len(out))])
		slices.Sort(next)
	} else if len(next) > 0 {
		i := g.intn(len(next))
		next = slices.Delete(next, i, i+1)
	}
	w.proxySet = next
	w.counts.ProxyChanges++
	w.sched.note("operator sets the proxies to %v", next)
	for _, p := range w.procs {
		inc := p.inc
		w.sched.after(g.between(0, 50*ms), lbl("proxies → n%d", uint64(p.id)), func() {
			if !p.up || p.inc != inc || p.h == nil {
				return // it learns the list when it restarts
			}
			if err := p.h.SetProxies(next); err != nil {
				w.audit.violation("proxy: the operator's proxy list is accepted", "n%d: %v", p.id, err)
			}
			p.after()
		})
	}
}

// proxyVote is a value an acceptor reported durable at a ballot.
type proxyVote struct {
	j      journal.ID
	slot   paxos.Slot
	ballot paxos.Ballot
	fp     uint64
}

// observeVotes folds the acceptors' Accepted messages (each sent once the
// vote is on disk) and judges each Commit a proxy emits against them.
func (a *audit) observeVotes(from paxos.NodeID, batch []host.Envelope) {
	if len(a.w.shape.Proxies) == 0 {
		return
	}
	for _, e := range batch {
		m := e.Msg
		switch {
		case m.Type == paxos.MsgAccepted:
			for _, v := range m.Votes {
				k := proxyVote{e.Journal, v.Slot, m.Ballot, v.VHash}
				if a.votes == nil {
					a.votes = map[proxyVote][]paxos.NodeID{}
				}
				a.votes[k] = append(a.votes[k], from)
			}
		case m.Type == paxos.MsgCommit && a.w.proxyByID(from) != nil:
			for _, v := range m.Votes {
				a.proxyDecision(e.Journal, from, m.Ballot, v)
			}
		}
	}
}

// proxyDecision: the slot a proxy announced holds a Phase-2 quorum of the
// ballot's configuration whose members reported that value durable.
func (a *audit) proxyDecision(j journal.ID, proxy paxos.NodeID, b paxos.Ballot, v paxos.SlotVote) {
	sys, ok := a.configOf(j, b)
	voters := a.votes[proxyVote{j, v.Slot, b, v.VHash}]
	if !ok || sys.Phase2(v.Slot, sys.SetOf(voters...), 0) != quorum.Won {
		a.violation("proxy: every Commit a proxy emits is backed by a Phase-2 quorum of durable accepts at one ballot",
			"%s slot %d at %s announced by proxy n%d, reported durable by %v only", short(j), v.Slot, b, proxy, voters)
		return
	}
	a.gate("proxy: a proxy announces a slot a durable quorum accepted")
}
