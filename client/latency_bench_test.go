package client_test

// BenchmarkLoneAppend measures what the pipeline adds to a lone append: one
// caller, one record at a time, through the default Writer (queue, cut,
// WriteStream, verdict) against the raw unary Journal.Write of the same
// fenced write, on the same in-process three-machine cell. Compare the
// p50-us metrics:
//
//	go test -run '^$' -bench BenchmarkLoneAppend -benchtime 2000x ./client/

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
)

func BenchmarkLoneAppend(b *testing.B) {
	c, id, err := sharedJournal()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	cl, err := client.Dial(ctx, c.Addrs(), c.ClientOptions()...)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	j := cl.Journal(id)
	w := j.NewWriter(seeded(99))
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		b.Fatal(err)
	}
	record := make([]byte, 256)
	report := func(b *testing.B, lat []time.Duration) {
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
		b.ReportMetric(float64(lat[len(lat)*90/100].Microseconds()), "p90-us")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-us")
		b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-us")
	}
	b.Run("writer", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			t0 := time.Now()
			if _, err := w.Append(ctx, record); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		report(b, lat)
	})
	b.Run("unary", func(b *testing.B) {
		// The Writer is idle from here on: the unary writes take the
		// positions after its last append, under its fence.
		fence, next := w.Fence(), w.NextSeq()
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			req := journal.WriteRequest{Leader: fence, Seq: next, Records: [][]byte{record}}
			t0 := time.Now()
			r, err := j.Write(ctx, req)
			if err != nil || r.Outcome.Kind != journal.Accepted {
				b.Fatalf("unary write at %d: %+v %v", next, r, err)
			}
			lat = append(lat, time.Since(t0))
			next++
		}
		report(b, lat)
	})
}
