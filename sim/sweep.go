package sim

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Summary aggregates a sweep.
type Summary struct {
	Seeds    int
	Failed   []Result
	Gates    map[string]int
	Counts   Counts
	Lincheck map[string]int
	SimMs    int64
	Wall     time.Duration
}

// Sweep runs seeds [from, from+n) on workers goroutines (independent
// worlds; each world itself is single-threaded), calling progress after
// each seed.
func Sweep(from uint64, n, workers int, o Options, progress func(done int, r Result)) Summary {
	if workers < 1 {
		workers = 1
	}
	start := time.Now()
	seeds := make(chan uint64)
	results := make(chan Result)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range seeds {
				results <- Run(s, o)
			}
		}()
	}
	go func() {
		for s := from; s < from+uint64(n); s++ {
			seeds <- s
		}
		close(seeds)
		wg.Wait()
		close(results)
	}()
	sum := Summary{Gates: map[string]int{}, Lincheck: map[string]int{}}
	done := 0
	for r := range results {
		done++
		sum.Seeds++
		sum.SimMs += r.SimMs
		for k, v := range r.Gates {
			sum.Gates[k] += v
		}
		for k, v := range r.Lincheck {
			sum.Lincheck[k] += v
		}
		sum.Counts.add(r.Counts)
		if !r.OK() {
			sum.Failed = append(sum.Failed, r)
		}
		if progress != nil {
			progress(done, r)
		}
	}
	slices.SortFunc(sum.Failed, func(a, b Result) int { return int(a.Seed) - int(b.Seed) })
	sum.Wall = time.Since(start)
	return sum
}

func (c *Counts) add(o Counts) {
	c.Events += o.Events
	c.Calls += o.Calls
	c.Messages += o.Messages
	c.Dropped += o.Dropped
	c.Duplicated += o.Duplicated
	c.Partitioned += o.Partitioned
	c.Delayed += o.Delayed
	c.Crashes += o.Crashes
	c.CrashesUnsynced += o.CrashesUnsynced
	c.CrashesAfterSync += o.CrashesAfterSync
	c.LongOutages += o.LongOutages
	c.Partitions += o.Partitions
	c.Pauses += o.Pauses
	c.DiskFaults += o.DiskFaults
	c.Rots += o.Rots
	c.Wipes += o.Wipes
	c.EditedRestarts += o.EditedRestarts
	c.Elections += o.Elections
	c.GapFills += o.GapFills
	c.TrimJumps += o.TrimJumps
	c.Truncations += o.Truncations
	c.CatchUps += o.CatchUps
	c.Blocked += o.Blocked
	c.CheckQuorum += o.CheckQuorum
	c.Evicted += o.Evicted
	c.CallBatches += o.CallBatches
	c.CallsBatched += o.CallsBatched
	for i, v := range o.ColdReads {
		c.ColdReads[i] += v
	}
	c.Quarantines += o.Quarantines
	c.HistoryOps += o.HistoryOps
	c.FailStops += o.FailStops
	c.StaleLeaders += o.StaleLeaders
	c.GracefulHandoffs += o.GracefulHandoffs
	c.RelinquishReplays += o.RelinquishReplays
	c.OperatorHandoffs += o.OperatorHandoffs
	c.Forgeries += o.Forgeries
	c.RoleRefused += o.RoleRefused
	c.NotLeading += o.NotLeading
	c.HandoffNotices += o.HandoffNotices
	c.SuccessorsAssumed += o.SuccessorsAssumed
	c.NoticesAnswered += o.NoticesAnswered
	c.Quiesced += o.Quiesced
	c.Woken += o.Woken
	c.WokenByMachine += o.WokenByMachine
	c.CampaignsHeld += o.CampaignsHeld
	c.QuietLeaderKills += o.QuietLeaderKills
	c.Holds += o.Holds
	c.HeldEnvelopes += o.HeldEnvelopes
	c.HoldsJudged += o.HoldsJudged
}

// UnfiredGates lists the required gates that never fired.
func (s Summary) UnfiredGates() []string {
	var out []string
	for _, g := range GateNames() {
		if s.Gates[g] == 0 {
			out = append(out, g)
		}
	}
	return out
}

// OK reports whether the sweep passed: no failed seed, every gate fired.
func (s Summary) OK() bool { return len(s.Failed) == 0 && len(s.UnfiredGates()) == 0 }

// WriteTable prints the sweep's table.
func (s Summary) WriteTable(out io.Writer) {
	rate := float64(s.SimMs) / 1000 / s.Wall.Seconds()
	fmt.Fprintf(out, "seeds %d   failed %d   wall %s   %.0f simulated s per wall s   %.1f seeds/s\n",
		s.Seeds, len(s.Failed), s.Wall.Round(time.Millisecond), rate, float64(s.Seeds)/s.Wall.Seconds())
	c := s.Counts
	fmt.Fprintln(out, "\nfaults")
	rows := [][2]any{
		{"crashes (before sync)", c.Crashes}, {"  of which lost unsynced writes", c.CrashesUnsynced},
		{"crashes after sync, before send", c.CrashesAfterSync}, {"long outages", c.LongOutages},
		{"partitions", c.Partitions}, {"pauses", c.Pauses}, {"  of which a stale leader wakes", c.StaleLeaders}, {"failed syncs (quarantine)", c.DiskFaults},
		{"fail-stops", c.FailStops}, {"rotted records", c.Rots}, {"wiped disks", c.Wipes},
		{"restarts under an edited configuration", c.EditedRestarts},
		{"graceful restarts that handed on", c.GracefulHandoffs}, {"replayed Relinquish messages", c.RelinquishReplays},
		{"operator handoffs", c.OperatorHandoffs}, {"forged Accepts and Commits", c.Forgeries},
		{"journals held on every node", c.Holds}, {"  of which judged", c.HoldsJudged}, {"  envelopes dropped by a hold", c.HeldEnvelopes},
		{"messages", c.Messages}, {"  dropped", c.Dropped}, {"  duplicated", c.Duplicated}, {"  held back 20-400 ms", c.Delayed}, {"  cut by a partition", c.Partitioned},
	}
	for _, r := range rows {
		fmt.Fprintf(out, "  %-44s %d\n", r[0], r[1])
	}
	fmt.Fprintln(out, "\ngates")
	names := GateNames()
	for k := range s.Gates {
		if !slices.Contains(names, k) {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, g := range names {
		mark := " "
		if slices.Contains(GateNames(), g) && s.Gates[g] == 0 {
			mark = "!"
		}
		fmt.Fprintf(out, " %s %-78s %d\n", mark, g, s.Gates[g])
	}
	fmt.Fprintf(out, "\nlinearizability (lincheck.Decide): %d journal histories, %d operations:", s.Lincheck["Ok"]+s.Lincheck["Illegal"]+s.Lincheck["Unknown"], c.HistoryOps)
	for _, k := range []string{"Ok", "Illegal", "Unknown"} {
		fmt.Fprintf(out, " %s %d", strings.ToLower(k), s.Lincheck[k])
	}
	fmt.Fprintf(out, "\n  second opinion (porcupine):")
	for _, k := range []string{"Ok", "Illegal", "Unknown"} {
		fmt.Fprintf(out, " %s %d", strings.ToLower(k), s.Lincheck["porcupine "+k])
	}
	fmt.Fprintln(out)
	for _, r := range s.Failed {
		fmt.Fprintf(out, "FAILED %s\n", r.Describe())
	}
}
