package main

// The report's scale section (scale.go): W2 over 1, 64 and 1,000
// journals (streams), the idle cost of many journals (streams), and
// paros's restart and failover with many journals. A row that failed shows
// "failed" and its error is listed under the tables.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

func (r *report) scale(key string) *scaleResult {
	for i := range r.Scale {
		if r.Scale[i].Key == key {
			return &r.Scale[i]
		}
	}
	return nil
}

// scaleSection writes the scale rows, when the run has any.
func (r *report) scaleSection(w func(string, ...any)) {
	ps, ns := r.scale("paros-scale"), r.scale("nats-scale")
	if ps == nil && ns == nil {
		return
	}
	plan := ps
	if plan == nil {
		plan = ns
	}
	p := plan.Plan
	w("## Scale: many journals\n\n")
	w("paros: a fresh secure cell of three members (as the paros system starts them) per size, formed with CellInit `journals` = N; JetStream (sync always): a fresh cluster per size with N R3 file streams. ")
	w("**W2**: %s single-record appends in flight in total (warm-up %.1f s, measured %.1f s), spread round robin over the N journals, one `client.Writer` with the defaults per journal, claimed once, at most %d Writers per `client.Client` (which shares one WriteStream per member among them), one read/write token; JetStream: the same over N streams (one subject each), %d connections. ",
		thousands(float64(p.Inflight)), p.WarmupS, p.MeasureS, scaleWritersPerClient, connsFor(p.Inflight))
	w("**Idle**: after %.0f s of settling with no load, the three members' CPU (utime + stime from `/proc/PID/stat`) over %.0f s, summed, in cores, and each member's VmRSS at the end of the window; ", p.SettleS, p.WindowS)
	w("RSS per journal = (mean member RSS with N − mean member RSS of the same system with 1 journal or stream, measured in the same run) ÷ N. ")
	w("**Restart** (paros): kill -9 member %d, restart it on its data dir, and time from the restart until it answers `Client.Inspect` with its cell and until every journal has served a `Journal.Read` (from position 1, limit 1) through a Client of that member alone (%d journals at once). ", scaleRestartMember+1, scaleReaders)
	w("**Failover** (paros): a Writer claimed on every journal, the leaders found with `Client.Inspect`, kill -9 the member that leads the most; then one append per journal (%d journals at once over %d Client, each Writer closed when acknowledged), and the time from the kill to each journal's first acknowledgement. ", scaleWorkers, scaleFailoverClients)
	w("Every wait is bounded by 60 s + 12 ms per journal; a row that runs out of it fails with its error.\n\n")

	var fails []string
	fail := func(who, row, err string) string {
		fails = append(fails, fmt.Sprintf("- %s, %s: %s", who, row, err))
		return "failed"
	}
	w("| W2 %s in flight over N journals / streams | metric | paros | paros ÷ paros over 1 journal | JetStream (sync always) | paros ÷ JetStream |\n|---|---|---:|---:|---:|---:|\n", thousands(float64(p.Inflight)))
	w2 := func(s *scaleResult, n int) *loadResult {
		if c := s.cell(n); c != nil && c.W2 != nil && c.W2.Error == "" && c.W2.Load != nil {
			return c.W2.Load
		}
		return nil
	}
	w2err := func(s *scaleResult, n int) string {
		if c := s.cell(n); c != nil && c.W2 != nil && c.W2.Error != "" {
			return c.W2.Error
		}
		return ""
	}
	for _, n := range p.W2Sizes {
		label := fmt.Sprintf("over %s %s", thousands(float64(n)), plural(n, "journal / stream", "journals / streams"))
		for _, m := range []struct {
			name   string
			get    func(*loadResult) float64
			format func(float64) string
		}{
			{"writes/s", func(l *loadResult) float64 { return l.WritesPerS }, thousands},
			{"p50 ms", func(l *loadResult) float64 { return l.P50ms }, f1},
			{"p99 ms", func(l *loadResult) float64 { return l.P99ms }, f1},
		} {
			cell := func(s *scaleResult, who string) (string, float64) {
				if s == nil {
					return "not run", 0
				}
				if l := w2(s, n); l != nil {
					return m.format(m.get(l)), m.get(l)
				}
				if e := w2err(s, n); e != "" {
					if m.name == "writes/s" {
						return fail(who, "W2 "+label, e), 0
					}
					return "failed", 0
				}
				return "—", 0
			}
			pv, pn := cell(ps, "paros")
			nv, nn := cell(ns, "JetStream")
			base := 0.0
			if ps != nil {
				if l := w2(ps, 1); l != nil {
					base = m.get(l)
				}
			}
			w("| %s | %s | %s | %s | %s | %s |\n", label, m.name, pv, ratio(pn, base), nv, ratio(pn, nn))
		}
	}
	w("\n")

	w("| idle | metric | paros | JetStream (sync always) |\n|---|---|---:|---:|\n")
	sizes := []int{1}
	if ps != nil {
		sizes = append(sizes, ps.Plan.IdleSizes...)
	}
	if ns != nil && !slices.Contains(sizes, ns.Plan.NATSIdle) {
		sizes = append(sizes, ns.Plan.NATSIdle)
	}
	for _, n := range sizes {
		label := fmt.Sprintf("%s idle %s", thousands(float64(n)), plural(n, "journal / stream", "journals / streams"))
		get := func(s *scaleResult, who string, f func(*scaleIdle, float64) string, first bool) string {
			if s == nil {
				return "not run"
			}
			c := s.cell(n)
			if c == nil || c.Idle == nil {
				return "not run"
			}
			if c.Idle.Error != "" {
				if first {
					return fail(who, label, c.Idle.Error)
				}
				return "failed"
			}
			base := 0.0
			if b := s.cell(1); b != nil {
				base = b.Idle.meanRSS()
			}
			return f(c.Idle, base)
		}
		rows := []idleRow{
			{"CPU of the 3 members, cores", func(i *scaleIdle, _ float64) string { return fmt.Sprintf("%.3f", i.CPUCores) }},
			{"RSS per member, MiB", func(i *scaleIdle, _ float64) string { return joinF(i.RSSMiB, "%.0f") }},
		}
		if n > 1 {
			rows = append(rows, idleRow{"RSS per journal / stream, KiB (above 1)", func(i *scaleIdle, base float64) string {
				if base == 0 {
					return "— (no baseline)"
				}
				return fmt.Sprintf("%.1f", (i.meanRSS()-base)*1024/float64(n))
			}})
		}
		for k, rw := range rows {
			w("| %s | %s | %s | %s |\n", label, rw.metric, get(ps, "paros", rw.f, k == 0), get(ns, "JetStream", rw.f, k == 0))
		}
	}
	w("\n")

	if ps != nil {
		w("| paros with many journals | metric | value |\n|---|---|---:|\n")
		if c := ps.cell(ps.Plan.Recover); c != nil {
			n := thousands(float64(c.Journals))
			if rs := c.Restart; rs != nil {
				label := fmt.Sprintf("restart with %s journals (kill -9 %s)", n, orDash(rs.Member, "a member"))
				if rs.InspectMs > 0 {
					w("| %s | Inspect answered with the cell, ms from the restart (journals named) | %s (%s) |\n", label, f1(rs.InspectMs), thousands(float64(rs.InspectJournals)))
				}
				if rs.Error != "" {
					w("| %s | every journal served a read through it | %s |\n", label, fail("paros", label, rs.Error))
				} else {
					w("| %s | every journal served a read through it, ms from the restart | %s |\n", label, f1(rs.AllReadMs))
					w("| %s | per journal, p50 / p99 ms from the restart | %s / %s |\n", label, f1(rs.ReadP50Ms), f1(rs.ReadP99Ms))
				}
			}
			if fo := c.Failover; fo != nil {
				label := fmt.Sprintf("failover with %s journals (kill -9 %s, which led %s)", n, orDash(fo.Killed, "the busiest leader"), thousands(float64(fo.KilledLed)))
				if fo.Error != "" {
					w("| %s | every journal acknowledged an append | %s |\n", label, fail("paros", label, fo.Error))
				} else {
					w("| %s | every journal acknowledged an append, ms after the kill | %s |\n", label, f1(fo.LastAckMs))
					w("| %s | per journal, p50 / p99 ms after the kill | %s / %s |\n", label, f1(fo.P50Ms), f1(fo.P99Ms))
					w("| %s | journals it led: last, p50 / p99 ms after the kill | %s, %s / %s |\n", label, f1(fo.LedLastMs), f1(fo.LedP50Ms), f1(fo.LedP99Ms))
					w("| %s | per journal, from its Append call: p50 / p99 ms | %s / %s |\n", label, f1(fo.CallP50Ms), f1(fo.CallP99Ms))
				}
			}
		}
		w("\n")
	}

	w("| system | journals / streams | formed s | ready s | journals led per member | W2 Writers / Clients, claims s | W2 appends per write | notes |\n|---|---:|---:|---:|---|---|---:|---|\n")
	for _, s := range []*scaleResult{ps, ns} {
		if s == nil {
			continue
		}
		for _, c := range s.Cells {
			lead, wr, per := "—", "—", "—"
			if len(c.Leaders) > 0 {
				lead = joinI(c.Leaders)
			}
			if c.W2 != nil && c.W2.Writers > 0 {
				wr = fmt.Sprintf("%s / %d, %.1f", thousands(float64(c.W2.Writers)), c.W2.Clients, c.W2.SetupS)
			}
			if c.W2 != nil && c.W2.Stats != nil && c.W2.Stats.Writes > 0 {
				per = f1(float64(c.W2.Stats.Appends) / float64(c.W2.Stats.Writes))
			}
			var notes []string
			if c.Error != "" {
				notes = append(notes, c.Error)
			}
			if c.W2 != nil && c.W2.Load != nil && c.W2.Load.Errors > 0 {
				notes = append(notes, fmt.Sprintf("W2: %d errors (%s)", c.W2.Load.Errors, c.W2.Load.FirstError))
			}
			if c.W2 != nil && len(c.W2.Counters) > 0 {
				notes = append(notes, "W2: "+countersNote(c.W2.Counters))
			}
			if c.Failover != nil && len(c.Failover.Counters) > 0 {
				notes = append(notes, "failover: "+countersNote(c.Failover.Counters))
			}
			if c.Restart != nil && c.Restart.Retries > 0 {
				notes = append(notes, fmt.Sprintf("restart: %d reads retried (%s)", c.Restart.Retries, c.Restart.FirstRetry))
			}
			if c.Failover != nil && c.Failover.Retries > 0 {
				notes = append(notes, fmt.Sprintf("failover: %d appends retried (%s)", c.Failover.Retries, c.Failover.FirstRetry))
			}
			if c.Failover != nil && c.Failover.ClaimS > 0 {
				notes = append(notes, fmt.Sprintf("failover: claims %.1f s, leaders before the kill %s", c.Failover.ClaimS, joinI(c.Failover.LeadersBefore)))
			}
			w("| %s | %s | %.1f | %.1f | %s | %s | %s | %s |\n", s.Title, thousands(float64(c.Journals)), c.StartS, c.ReadyS, lead, wr, per, orDash(strings.Join(notes, "; "), "none"))
		}
	}
	w("\n")
	if len(fails) > 0 {
		w("Failed rows:\n\n%s\n\n", strings.Join(fails, "\n"))
	}
}

// countersNote prints the members' counters over a row.
func countersNote(m map[string]float64) string {
	return fmt.Sprintf("elections won %s, messages dropped on a full inbox %s, on a full peer queue %s",
		count(m["paros_elections"]), count(m["paros_inbound_dropped_total"]), count(m["paros_outbound_dropped_total"]))
}

// idleRow is one metric of an idle row; base is the mean member RSS of
// the same system with 1 journal (stream), 0 when not measured.
type idleRow struct {
	metric string
	f      func(i *scaleIdle, base float64) string
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func joinF(v []float64, format string) string {
	var parts []string
	for _, x := range v {
		parts = append(parts, fmt.Sprintf(format, x))
	}
	return orDash(strings.Join(parts, " / "), "—")
}

func joinI(v []int) string {
	var parts []string
	for _, x := range v {
		parts = append(parts, strconv.Itoa(x))
	}
	return strings.Join(parts, " / ")
}
