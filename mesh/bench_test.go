// This file benchmarks the fold and compaction on the scale the issue
// names: 20,000 events over 768 streams (24 nodes of 32 runs each). The
// corpus is built once per process by writer journals that open sessions,
// claim and release paths from a pool of 400, publish, take and review,
// and is ingested (signatures verified) by one observer that hears the
// even streams fresh and the odd ones 25 hours ago; only the even streams
// take handovers and answer reviews, so the odd ones are what compaction
// may drop. BenchmarkFold folds
// everything with the observer's liveness; BenchmarkCompact compacts a
// cheap copy of the observer (expiry 30 s, retention 15 min, the handover
// retention, forced), so half the streams are due and the keep-set is
// computed over all of them. Run: go test -run '^$' -bench . ./mesh/
package mesh

import (
	"fmt"
	"maps"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	benchEvents  = 20_000
	benchStreams = 768
	benchNodes   = 24
)

var benchCorpus struct {
	once sync.Once
	j    *Journal
}

func benchJournal(b *testing.B) *Journal {
	benchCorpus.once.Do(func() {
		clock := NewManualClock(testEpoch)
		obsKey := testKey(b, 0xfe)
		j := NewJournal(JournalConfig{Key: obsKey, Stream: NewStreamID(obsKey.Node, RuntimeOf("observer"), instanceN(1)),
			Repo: testRepo(b), Expiry: 30 * time.Second, Clock: clock})
		var ws []*writer
		for i := range benchStreams {
			key := testKey(b, byte(i%benchNodes))
			ws = append(ws, newWriter(b, key, clock, RuntimeOf(fmt.Sprintf("rt-%d", i/benchNodes%4)), instanceN(i)))
		}
		var paths []string
		for d := range 40 {
			for f := range 10 {
				paths = append(paths, fmt.Sprintf("pkg%02d/sub%d", d, f))
			}
		}
		var handovers []string
		reviews := []string{}
		total := 0
		for step := 0; total < benchEvents; step++ {
			for i, w := range ws {
				if total >= benchEvents {
					break
				}
				n := len(w.lines())
				var body Body
				switch {
				case n == 0:
					body = openBody("s")
				case n%7 == 3:
					h := fmt.Sprintf("handover %d/%d", i, n)
					body = Body{Kind: KindHandoverPublished, Handover: &HandoverInfo{ID: HandoverID(h), Body: h}}
					handovers = append(handovers, HandoverID(h))
				case n%7 == 4 && i%2 == 0 && len(handovers) > 0:
					body = Body{Kind: KindHandoverConsumed, HandoverID: handovers[(i*31+n)%len(handovers)], Session: "s"}
				case n%7 == 5:
					body = Body{Kind: KindReviewRequested, Review: fmt.Sprintf("r-%d", n), Session: "s", Subject: "x"}
					reviews = append(reviews, RecordKey(w.stream(), fmt.Sprintf("r-%d", n)))
				case n%7 == 6 && i%2 == 0 && len(reviews) > 0:
					body = Body{Kind: KindReviewAnswered, Request: reviews[(i*17+n)%len(reviews)], Session: "t", Verdict: VerdictCommented}
				case n%5 == 0:
					body = Body{Kind: KindClaimReleased, Claim: fmt.Sprintf("c-%d", n-1)}
				default:
					mode := ModeExclusive
					if n%3 == 0 {
						mode = ModeAdvisory
					}
					body = claimBody(fmt.Sprintf("c-%d", n), "s", mode, paths[(i*13+n*7)%len(paths)])
				}
				w.write(b, body)
				total++
			}
		}
		for _, w := range ws {
			j.Ingest(w.lines(), trustAll)
		}
		for i, w := range ws {
			if i%2 == 1 {
				hear(j, w, 1)
			}
		}
		clock.Advance(25 * time.Hour) // past the handover retention too
		for i, w := range ws {
			if i%2 == 0 {
				hear(j, w, 1)
			}
		}
		if j.EventsHeld() != benchEvents || len(j.Streams()) != benchStreams+1 {
			panic(fmt.Sprintf("corpus holds %d events in %d streams", j.EventsHeld(), len(j.Streams())))
		}
		benchCorpus.j = j
	})
	return benchCorpus.j
}

// cloneJournal copies a journal's maps; held events are immutable and shared.
func cloneJournal(j *Journal) *Journal {
	c := *j
	c.streams = make(map[StreamID]*streamLog, len(j.streams))
	for s, l := range j.streams {
		lc := *l
		c.streams[s] = &lc
	}
	c.tombstones = maps.Clone(j.tombstones)
	c.nodeStreams = maps.Clone(j.nodeStreams)
	c.nodeEvents = maps.Clone(j.nodeEvents)
	c.tallies.Rejected = maps.Clone(j.tallies.Rejected)
	return &c
}

// cpuTime is the process's user+system CPU time; on a shared machine it
// says what the work cost when the wall clock says how long it waited.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkFold(b *testing.B) {
	j := benchJournal(b)
	b.ResetTimer()
	var st State
	cpu := cpuTime()
	for b.Loop() {
		st = j.Fold()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/fold")
	b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/fold")
	b.ReportMetric(float64(len(st.Claims)), "claims")
	b.ReportMetric(float64(len(st.Overlaps)), "overlaps")
}

func BenchmarkCompact(b *testing.B) {
	j := benchJournal(b)
	b.ResetTimer()
	dropped := 0
	var elapsed, cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		c := cloneJournal(j)
		b.StartTimer()
		start, startCPU := time.Now(), cpuTime()
		dropped = c.Compact(CompactParams{Expiry: 30 * time.Second, Retention: PeerRetention, Handovers: HandoverRetention, Force: true}).Dropped
		elapsed += time.Since(start)
		cpu += cpuTime() - startCPU
	}
	b.ReportMetric(float64(elapsed.Microseconds())/1000/float64(b.N), "ms/compaction")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/compaction")
	b.ReportMetric(float64(dropped), "events-dropped")
}
