package host

import (
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
)

// ProxyHost is the driver of a proxy process (core/paxos/proxy.go): one
// paxos.Proxy per journal, selected by each envelope's journal id, so no
// round of one journal meets a round of another. It has nothing to
// persist and answers no client: a crash reboots it empty, and the
// leaders' next re-delegations rebuild every round they still need.
//
// A journal's proxy is made on the first delegation for it (the leaders
// know the deployment's proxies; the proxy need not know the journals),
// up to ProxyJournalsMax journals.
type ProxyHost struct {
	id      paxos.NodeID
	send    func(to paxos.NodeID, batch []Envelope)
	opts    paxos.ProxyOptions
	proxies map[journal.ID]*paxos.Proxy
	order   []journal.ID // sorted: ticks and flushes are deterministic
	out     map[paxos.NodeID][]Envelope
	dropped uint64
}

// ProxyJournalsMax bounds the journals one proxy process serves.
const ProxyJournalsMax = 4096

// NewProxyHost returns an empty proxy process; send hands one Deliver to
// the transport (best effort, like Env.Send).
func NewProxyHost(id paxos.NodeID, send func(to paxos.NodeID, batch []Envelope), tun Tunables) *ProxyHost {
	tun = tun.withDefaults()
	return &ProxyHost{id: id, send: send, opts: paxos.ProxyOptions{BeatTicks: tun.HeartbeatTicks, EvictAfter: tun.ProxyEvictAfter},
		proxies: map[journal.ID]*paxos.Proxy{}, out: map[paxos.NodeID][]Envelope{}}
}

// ID is the proxy process's node id.
func (h *ProxyHost) ID() paxos.NodeID { return h.id }

// OnDeliver steps each envelope into its journal's proxy and sends what
// the proxies emitted.
func (h *ProxyHost) OnDeliver(from paxos.NodeID, batch []Envelope) {
	for _, e := range batch {
		if e.Msg.From != from || e.Msg.To != h.id {
			continue
		}
		p := h.proxies[e.Journal]
		if p == nil {
			if e.Msg.Type != paxos.MsgAccept || len(h.proxies) >= ProxyJournalsMax {
				h.dropped++
				continue
			}
			p = paxos.NewProxy(h.id, h.opts)
			h.proxies[e.Journal] = p
			i, _ := slices.BinarySearchFunc(h.order, e.Journal, journal.ID.Compare)
			h.order = slices.Insert(h.order, i, e.Journal)
		}
		p.Step(e.Msg)
		h.collect(e.Journal, p)
	}
	h.flush()
}

// OnTick advances every proxy's logical time (re-fan-outs, evictions).
func (h *ProxyHost) OnTick() {
	for _, j := range h.order {
		p := h.proxies[j]
		p.Tick()
		h.collect(j, p)
	}
	h.flush()
}

func (h *ProxyHost) collect(j journal.ID, p *paxos.Proxy) {
	for _, m := range p.Messages() {
		h.out[m.To] = append(h.out[m.To], Envelope{Journal: j, Msg: m})
	}
}

func (h *ProxyHost) flush() {
	if len(h.out) == 0 {
		return
	}
	tos := make([]paxos.NodeID, 0, len(h.out))
	for to := range h.out {
		tos = append(tos, to)
	}
	slices.Sort(tos)
	for _, to := range tos {
		h.send(to, h.out[to])
		delete(h.out, to)
	}
}

// Counters sums the counters of every journal's proxy.
func (h *ProxyHost) Counters() paxos.ProxyCounters {
	var c paxos.ProxyCounters
	for _, p := range h.proxies {
		pc := p.Counters()
		c.Delegated += pc.Delegated
		c.Decided += pc.Decided
		c.Evicted += pc.Evicted
		c.Refans += pc.Refans
		c.Relayed += pc.Relayed
		c.Stale += pc.Stale
	}
	return c
}

// Open is the rounds every proxy of the process holds open.
func (h *ProxyHost) Open() int {
	n := 0
	for _, p := range h.proxies {
		n += p.Open()
	}
	return n
}
