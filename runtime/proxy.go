package runtime

import (
	"context"
	"errors"
	"slices"

	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
)

// A proxy process (Config.Proxy, paros serve --role proxy) runs a
// host.ProxyHost on the loop instead of a host.Host: the same transport
// (its Delivers go out through the peer senders, the acceptors' and
// leaders' come in through Deliver), the same tick, and no storage. It
// serves no journal: every call is answered at once as for a journal it
// does not serve (host.ProxyHost.Answer), it joins none and hands off
// nothing. Its metrics are the proxies' counters (sampleProxyMetrics).
//
//	goroutine        owns
//	---------------  ---------------------------------------------
//	loop (one)       the host.ProxyHost and every journal's proxy
//	storage (one)    idle: nothing is ever persisted
//	peer sender (N)  as on every process

// ErrProxy: a proxy process serves no journal (AddJournal).
var ErrProxy = errors.New("paros/runtime: a proxy process serves no journal")

// errProxyConfig: a proxy process was configured with journals or a
// matchmaker.
var errProxyConfig = errors.New("paros/runtime: a proxy process serves no journal and runs no matchmaker")

// startProxy starts a proxy process's goroutines (Start, Config.Proxy).
func (r *Runtime) startProxy() (*Runtime, error) {
	if len(r.cfg.Journals) > 0 || slices.Contains(r.cfg.Matchmakers, r.cfg.NodeID) {
		return nil, errProxyConfig
	}
	r.ph = host.NewProxyHost(r.cfg.NodeID, r.tr.send, r.cfg.Tunables)
	go r.store.run()
	go r.loop()
	r.log.Info("proxy process started", "peers", len(r.cfg.Peers))
	return r, nil
}

// proxyAnswers answers calls on a proxy process (each as for a journal it
// does not serve).
func (r *Runtime) proxyAnswers(calls []host.Call) []host.Response {
	out := make([]host.Response, len(calls))
	for i, c := range calls {
		out[i] = r.ph.Answer(c)
	}
	return out
}

// sampleProxyMetrics runs on a proxy process's loop each tick: the
// proxies' counters (summed over journals; they only grow, the proxies
// living as long as the process) and the rounds they hold open.
func (r *Runtime) sampleProxyMetrics() {
	m := r.metrics
	m.Inbox.Set(float64(len(r.inbox)))
	c := r.ph.Counters()
	m.proxyDelegated.advance(m.ProxyDelegated, c.Delegated)
	m.proxyDecided.advance(m.ProxyDecided, c.Decided)
	m.proxyEvicted.advance(m.ProxyEvicted, c.Evicted)
	m.ProxyOpen.Set(float64(r.ph.Open()))
}

// SetProxies replaces the proxy list of every journal the process serves
// (host.SetProxies: a leader takes back the rounds of a proxy that left
// the list) and waits for the outcome: nothing is changed unless every
// journal accepts it. The specs Spec reports carry the new list too. On a
// proxy process it does nothing: a proxy serves no journal to give the
// list to.
func (r *Runtime) SetProxies(ctx context.Context, ids []paxos.NodeID) error {
	ids = slices.Sorted(slices.Values(ids))
	if r.ph != nil {
		return nil
	}
	return r.onLoop(ctx, func() error {
		err := r.h.SetProxies(ids)
		if err == nil {
			r.specMu.Lock()
			for id, s := range r.specs {
				s.Proxies = ids
				r.specs[id] = s
			}
			r.specMu.Unlock()
		}
		return err
	})
}
