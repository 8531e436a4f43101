package main

import (
	"fmt"
	"slices"
	"strings"
)

// checkTargets evaluates the targets.
func checkTargets(r *report) []targetCheck {
	var out []targetCheck
	add := func(target, value string, met bool) { out = append(out, targetCheck{target, value, met}) }
	get := func(key, id string) *loadResult { return r.phase(key, id) }
	etcd2, js2 := get("etcd", "w2-1000"), get("nats-always", "w2-1000")
	for _, v := range []struct{ id, what string }{
		{"w2-1000", "one client.Writer"},
		{"w2-1000-journals", "64 journals, a client.Writer each"},
	} {
		p := get("paros", v.id)
		if p == nil || etcd2 == nil {
			continue
		}
		add(fmt.Sprintf("W2 1,000 in flight (%s): paros ≥ 5× etcd", v.what),
			fmt.Sprintf("%s vs %s writes/s = %s", thousands(p.WritesPerS), thousands(etcd2.WritesPerS), ratio(p.WritesPerS, etcd2.WritesPerS)),
			p.WritesPerS >= 5*etcd2.WritesPerS)
		if js2 != nil {
			add(fmt.Sprintf("W2 1,000 in flight (%s): paros ≥ JetStream (sync always)", v.what),
				fmt.Sprintf("%s vs %s writes/s = %s", thousands(p.WritesPerS), thousands(js2.WritesPerS), ratio(p.WritesPerS, js2.WritesPerS)),
				p.WritesPerS >= js2.WritesPerS)
		}
	}
	if p, e := get("paros", "w1"), get("etcd", "w1"); p != nil && e != nil {
		add("W1 p50: paros ≤ etcd", fmt.Sprintf("%.3f vs %.3f ms", p.P50ms, e.P50ms), p.P50ms <= e.P50ms)
	}
	if p, j := get("paros", "w1"), get("nats-always", "w1"); p != nil && j != nil {
		add("W1 p50: paros ≤ JetStream (sync always)", fmt.Sprintf("%.3f vs %.3f ms", p.P50ms, j.P50ms), p.P50ms <= j.P50ms)
	}
	if d := r.disk(64 << 10); d != nil {
		goal := 0.5 * d.MBPerS * 1e6 / recordBytes
		best, which := 0.0, ""
		for _, id := range []string{"w3-1", "w3-16"} {
			if p := get("paros", id); p != nil && p.RecsPerS > best {
				best, which = p.RecsPerS, id
			}
		}
		add("W3: paros records/s ≥ 50% of synced 64 KiB append bandwidth ÷ 256 B",
			fmt.Sprintf("%s records/s (%s) vs goal %s (disk %.0f MB/s) = %.1f%% of the bandwidth", thousands(best), which, thousands(goal), d.MBPerS, 100*best/(2*goal)),
			best >= goal)
	}
	if c, ok := tlsCostTarget(r); ok {
		out = append(out, c)
	}
	if c, ok := replicaTarget(r); ok {
		out = append(out, c)
	}
	if s := r.sys("paros"); s != nil && s.Failover != nil {
		v := s.Failover.RecoveryMs
		add("W5: failover ≤ 1 s", fmt.Sprintf("%.0f ms (longest ack gap %.0f ms)", v, s.Failover.GapMs), v > 0 && v <= 1000)
	}
	if s := r.sys("paros"); s != nil {
		peak := 0.0
		for id, v := range s.PeakRSSMiB {
			if strings.HasPrefix(id, "w2") {
				peak = max(peak, slices.Max(append(v, 0)))
			}
		}
		all, at := 0.0, ""
		for id, v := range s.PeakRSSMiB {
			if m := slices.Max(append(v, 0)); m > all {
				all, at = m, id
			}
		}
		if peak > 0 {
			add("memory: each paros member ≤ 512 MiB RSS under W2", fmt.Sprintf("peak %.0f MiB under W2 (peak of the whole run: %.0f MiB, in %s)", peak, all, at), peak <= 512)
		}
	}
	return out
}

// tlsCostTargetSlack is how far paros with TLS and tokens may fall behind
// its plaintext variant: 10 % on W1 p50 and on W2 throughput.
const tlsCostTargetSlack = 0.10

// tlsCostTarget checks "TLS on: W1 p50 and W2 throughput within 10% of
// plaintext" (ok false: the run lacks one of the figures).
func tlsCostTarget(r *report) (targetCheck, bool) {
	var parts []string
	met := true
	w1s, w1p := r.phase("paros", "w1"), r.phase("paros-plaintext", "w1")
	if w1s == nil || w1p == nil {
		return targetCheck{}, false
	}
	parts = append(parts, fmt.Sprintf("W1 p50 %.3f vs %.3f ms = %s", w1s.P50ms, w1p.P50ms, ratio(w1s.P50ms, w1p.P50ms)))
	met = met && w1s.P50ms <= (1+tlsCostTargetSlack)*w1p.P50ms
	for _, v := range []struct{ id, name string }{{"w2-64", "W2 64"}, {"w2-1000", "W2 1,000"}} {
		a, b := r.phase("paros", v.id), r.phase("paros-plaintext", v.id)
		if a == nil || b == nil {
			return targetCheck{}, false
		}
		parts = append(parts, fmt.Sprintf("%s %s vs %s writes/s = %s", v.name, thousands(a.WritesPerS), thousands(b.WritesPerS), ratio(a.WritesPerS, b.WritesPerS)))
		met = met && a.WritesPerS >= (1-tlsCostTargetSlack)*b.WritesPerS
	}
	return targetCheck{Target: "TLS on: W1 p50 and W2 throughput within 10% of plaintext", Value: strings.Join(parts, "; "), Met: met}, true
}
