package main

// The raw disk baseline, measured in the same run on the same file system
// as the members' data: one file, appended to with write(2), each append
// followed by fdatasync(2). 4 KiB appends give the synced-append rate (the
// floor of any durable log's per-write cost); 64 KiB appends give the synced
// bandwidth (what the disk allows a log that batches).

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

type diskResult struct {
	BlockBytes int     `json:"block_bytes"`
	Appends    int64   `json:"appends"`
	Seconds    float64 `json:"seconds"`
	PerS       float64 `json:"appends_per_s"`
	MBPerS     float64 `json:"mb_per_s"`
	P50ms      float64 `json:"p50_ms"`
	P99ms      float64 `json:"p99_ms"`
	Error      string  `json:"error,omitempty"`
}

func runDisk(dir string, block int, d time.Duration) diskResult {
	res := diskResult{BlockBytes: block}
	p := filepath.Join(dir, "disk-baseline.dat")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_TRUNC, 0o644)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer os.Remove(p)
	defer f.Close()
	buf := randomFillerN(block)
	var lat latencies
	start := time.Now()
	for time.Since(start) < d {
		t0 := time.Now()
		if _, err := f.Write(buf); err != nil {
			res.Error = err.Error()
			break
		}
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			res.Error = err.Error()
			break
		}
		lat = append(lat, int64(time.Since(t0)))
	}
	el := time.Since(start).Seconds()
	slices.Sort(lat)
	res.Appends = int64(len(lat))
	res.Seconds = el
	res.PerS = float64(len(lat)) / el
	res.MBPerS = res.PerS * float64(block) / 1e6
	res.P50ms, res.P99ms = ms(lat.quantile(0.5)), ms(lat.quantile(0.99))
	return res
}

func randomFillerN(n int) []byte {
	b := make([]byte, 0, n)
	for len(b) < n {
		b = append(b, randomFiller()...)
	}
	return b[:n]
}
