package client_test

// BenchmarkLoneAppendTLS measures what TLS and tokens add to a lone append:
// the same one-record appends through the default Writer on two in-process
// three-machine cells started side by side, one plaintext and one secure
// (TLS 1.3 to the client, mutual TLS between machines, a token checked on
// every call). Compare the p50-us metrics of the two sub-benchmarks:
//
//	go test -run '^$' -bench BenchmarkLoneAppendTLS -benchtime 3000x ./client/

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/internal/testcell"
)

func BenchmarkLoneAppendTLS(b *testing.B) {
	for _, secure := range []bool{false, true} {
		name := "plaintext"
		if secure {
			name = "tls"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			c, err := testcell.Start(ctx, b.TempDir(), testcell.Options{Secure: secure})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			cl, err := client.Dial(ctx, c.Addrs(), c.ClientOptions()...)
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			w := cl.Journal(c.Journals[0]).NewWriter(seeded(7))
			defer w.Close()
			if err := w.Claim(ctx); err != nil {
				b.Fatal(err)
			}
			record := make([]byte, 256)
			for range 200 { // warm the connections and the stream
				if _, err := w.Append(ctx, record); err != nil {
					b.Fatal(err)
				}
			}
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				t0 := time.Now()
				if _, err := w.Append(ctx, record); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-us")
		})
	}
}
