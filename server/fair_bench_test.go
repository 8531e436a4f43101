package server_test

// BenchmarkPipelinedWriter measures what the per-principal bounds and the
// runtime's fair queue cost a lone pipelined client: one Writer on a
// secure in-process three-machine cell (internal/testcell, served with
// ServerOptions as `paros serve` is), its appends issued b.N at a time
// without waiting, 64-byte records:
//
//   - "uncoalesced": every append its own write, 256 writes out (the
//     client library's most), so the stream's batches of up to 256 writes
//     are what the loop is handed;
//   - "coalesced": the default Writer (4 writes out, appends coalesced into
//     them), 1,000 appends in flight.
//
//	go test -run '^$' -bench BenchmarkPipelinedWriter -benchtime 20000x ./server/
//
// Compare appends/s (and writes/s) before and after a change.

import (
	"context"
	"testing"
	"time"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/internal/testcell"
)

func BenchmarkPipelinedWriter(b *testing.B) {
	for _, tc := range []struct {
		name     string
		opts     []client.WriterOption
		inFlight int
	}{
		{"uncoalesced", []client.WriterOption{client.WithoutCoalescing(), client.WithWritesOut(256), client.WithWindow(4096)}, 4096},
		{"coalesced", nil, 1000},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			c, err := testcell.Start(ctx, b.TempDir(), testcell.Options{Secure: true})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			cl, err := client.Dial(ctx, c.Addrs(), c.ClientOptions()...)
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			w := cl.Journal(c.Journals[0]).NewWriter(tc.opts...)
			defer w.Close()
			if err := w.Claim(ctx); err != nil {
				b.Fatal(err)
			}
			record := make([]byte, 64)
			appendAll := func(n int) {
				ops := make(chan *client.AppendOp, tc.inFlight)
				done := make(chan error, 1)
				go func() {
					for range n {
						if _, err := (<-ops).Wait(ctx); err != nil {
							done <- err
							return
						}
					}
					done <- nil
				}()
				for range n {
					op, err := w.AppendAsync(ctx, record)
					if err != nil {
						b.Fatal(err)
					}
					ops <- op
				}
				if err := <-done; err != nil {
					b.Fatal(err)
				}
			}
			appendAll(1000) // warm the stream and the cell
			before := w.Stats()
			start := time.Now()
			b.ResetTimer()
			appendAll(b.N)
			b.StopTimer()
			took := time.Since(start).Seconds()
			st := w.Stats()
			b.ReportMetric(float64(b.N)/took, "appends/s")
			b.ReportMetric(float64(st.Writes-before.Writes)/took, "writes/s")
		})
	}
}
