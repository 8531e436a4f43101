package main

// The report's proxy-leader section: paros without proxies against paros
// with two, on W2 with one client.Writer: throughput and latency beside
// what the phase cost journal 0's leader (its peer messages and its CPU,
// per acknowledged append). Only when the run has both.

import (
	"fmt"
	"strings"
)

// proxySection writes the comparison, when the run has paros and paros
// with proxies.
func (r *report) proxySection(w func(string, ...any)) {
	a, b := r.sys("paros"), r.sys("paros-proxies")
	if a == nil || b == nil {
		return
	}
	w("## Proxy leaders: W2 with 0 and %d proxies\n\n", parosProxies)
	w("paros (the headline system) against the same cell with %d proxy leaders (`paros serve --role proxy`, named at cell init): a settled leader hands the Phase 2 of slot s to proxy s %% %d, sending it the Accept and its own vote, and learns the decision from the proxy's Commit; the proxy fans the Accepts out to the other members and tallies their votes. ", parosProxies, parosProxies)
	w("W2 with one `client.Writer` on journal 0 (the writers' Client dials the members only). ")
	w("**The leader** is journal 0's consensus leader (`Client.Inspect`). Its messages are the envelopes it queued for its peers and took in from them (`paros_peer_messages_sent_total`, `paros_peer_messages_received_total` on its `/metrics`), and its CPU is from `/proc/PID/stat`, both from the Writer's claim to its close (warm-up included), divided by the appends acknowledged in that time (`Writer.Stats`). ")
	w("They count every journal the leader process serves: its idle rate (measured for %v just before the phase, with no load) is the background of heartbeats. ", leaderIdleWindow)
	w("The Writer coalesces the appends in flight into writes, and the leader puts the writes it has into slots; one slot is one Phase 2, so the messages per append fall as the appends per slot rise (slots: the leader's `paros_journal_commits_total` over the window): compare the two systems at similar appends per slot. ")
	w("Under load the idle background is a large share of the leader's messages (most of it at 1,000 in flight), and a leader busy with Accepts may send fewer heartbeats, so the background cannot simply be subtracted. ")
	w("Every process shares the machine's %d cores: a proxy adds a process, not a core. Ratio = %d proxies ÷ 0.\n\n", r.Host.CPUs, parosProxies)
	w("| W2: proxy_count 0 vs %d | metric | paros (0 proxies) | paros (%d proxies) | ratio |\n|---|---|---:|---:|---:|\n", parosProxies, parosProxies)
	ph := func(id string, f func(*loadResult) float64) func(*sysResult) float64 {
		return func(s *sysResult) float64 {
			if p := r.phase(s.Key, id); p != nil {
				return f(p)
			}
			return 0
		}
	}
	lc := func(id string, f func(*leaderCost) float64) func(*sysResult) float64 {
		return func(s *sysResult) float64 {
			if c := s.LeaderCost[id]; c != nil && c.Appends > 0 {
				return f(c)
			}
			return 0
		}
	}
	per := func(v float64) string {
		if v == 0 {
			return "—"
		}
		return fmt.Sprintf("%.3f", v)
	}
	type proxyRow struct {
		label, metric string
		get           func(*sysResult) float64
		format        func(float64) string
	}
	var rows []proxyRow
	for _, v := range []struct{ id, label string }{{"w2-64", "W2 64 in flight"}, {"w2-1000", "W2 1,000 in flight"}} {
		rows = append(rows,
			proxyRow{v.label, "writes/s", ph(v.id, func(l *loadResult) float64 { return l.WritesPerS }), thousands},
			proxyRow{v.label, "p50 ms", ph(v.id, func(l *loadResult) float64 { return l.P50ms }), f1},
			proxyRow{v.label, "p99 ms", ph(v.id, func(l *loadResult) float64 { return l.P99ms }), f1},
			proxyRow{v.label, "appends per write", lc(v.id, func(c *leaderCost) float64 { return safeDiv(float64(c.Appends), float64(c.Writes)) }), f1},
			proxyRow{v.label, "leader: messages sent per command", lc(v.id, func(c *leaderCost) float64 { return c.SentPerCommand }), per},
			proxyRow{v.label, "leader: messages received per command", lc(v.id, func(c *leaderCost) float64 { return c.ReceivedPerCommand }), per},
			proxyRow{v.label, "appends per slot (leader's commits)", lc(v.id, func(c *leaderCost) float64 { return safeDiv(float64(c.Appends), c.Slots) }), f1},
			proxyRow{v.label, "leader: messages sent + received per slot", lc(v.id, func(c *leaderCost) float64 { return safeDiv(c.Sent+c.Received, c.Slots) }), f1},
			proxyRow{v.label, "leader idle: messages sent + received /s", lc(v.id, func(c *leaderCost) float64 { return c.IdleSentPerS + c.IdleReceivedPerS }), thousands},
			proxyRow{v.label, "leader: CPU µs per command", lc(v.id, func(c *leaderCost) float64 { return c.CPUMicrosPerCommand }), f1},
			proxyRow{v.label, "leader: CPU cores", lc(v.id, func(c *leaderCost) float64 { return c.leaderCores() }), f1},
			proxyRow{v.label, "CPU cores: the 3 members", func(s *sysResult) float64 { return s.CPUCores[v.id] }, f1},
			proxyRow{v.label, "CPU cores: the proxies", lc(v.id, func(c *leaderCost) float64 { return c.proxiesCores() }), f1},
			proxyRow{v.label, "proxy rounds delegated", lc(v.id, func(c *leaderCost) float64 { return c.Delegated }), thousands},
		)
	}
	for _, rw := range rows {
		x, y := rw.get(a), rw.get(b)
		w("| %s | %s | %s | %s | %s |\n", rw.label, rw.metric, rw.format(x), rw.format(y), ratio(y, x))
	}
	w("\n")
	w("| system | phase | leader | appends | writes | leader slots | leader messages sent / received | proxy rounds delegated / decided / evicted | rounds taken back | note |\n|---|---|---|---:|---:|---:|---|---|---:|---|\n")
	for _, s := range []*sysResult{a, b} {
		for _, id := range []string{"w2-64", "w2-1000"} {
			c := s.LeaderCost[id]
			if c == nil {
				continue
			}
			var notes []string
			if c.LeaderChanged {
				notes = append(notes, "the leader changed during the phase")
			}
			if c.Error != "" {
				notes = append(notes, c.Error)
			}
			w("| %s | %s | %s | %s | %s | %s | %s / %s | %s / %s / %s | %s | %s |\n", s.Title, id, orDash(c.Leader, "?"),
				count(float64(c.Appends)), count(float64(c.Writes)), count(c.Slots), count(c.Sent), count(c.Received),
				count(c.Delegated), count(c.Decided), count(c.Evicted), count(c.TakenBack), orDash(strings.Join(notes, "; "), "none"))
		}
	}
	w("\n")
}
