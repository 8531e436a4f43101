//go:build linux

package pebblestore

// BenchmarkCommit measures group commits on a real directory (b.TempDir):
// J journals x R records of 256 bytes per commit, one WAL sync per commit.
//
// Every iteration also runs the raw baseline: append the same record bytes
// to a plain file and fdatasync it. The two alternate op by op, so both see
// the same disk and the same background load (the machine this runs on is
// shared; back-to-back runs of separate benchmarks varied 3x), and the
// ratio pebble/raw is the number to read.
//
// Reported per case:
//
//	rec/s, raw-rec/s        records per second
//	MB/s, raw-MB/s          record bytes per second (10^6)
//	syncs/s, raw-syncs/s    commits (= fsyncs) per second
//	ratio                   pebble throughput / raw throughput
//	walB/rec                WAL bytes written per record
//	totalB/rec              WAL + sstable bytes flushed and compacted during
//	                        the run, per record (a short run undercounts the
//	                        compactions a long one pays)

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
)

const benchRecordBytes = 256

func BenchmarkCommit(b *testing.B) {
	for _, journals := range []int{1, 8, 64} {
		for _, records := range []int{1, 16, 256} {
			b.Run(fmt.Sprintf("journals=%d/records=%d", journals, records), func(b *testing.B) {
				benchCommit(b, journals, records)
			})
		}
	}
}

func tableBytes(db *DB) uint64 {
	m := db.Metrics()
	var n uint64
	for i := range m.Levels {
		n += m.Levels[i].TableBytesFlushed + m.Levels[i].TableBytesCompacted
	}
	return n
}

func benchCommit(b *testing.B, journals, records int) {
	dir := b.TempDir()
	db, err := Open(filepath.Join(dir, "db"), &Options{Logger: quietLogger{}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	raw, err := os.OpenFile(filepath.Join(dir, "raw"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = raw.Close() }()

	payload := bytes.Repeat([]byte{0xa5}, benchRecordBytes)
	rawBuf := bytes.Repeat(payload, journals*records)
	batches := make([]Batch, journals)
	for i := range batches {
		id := journal.ID{Tenant: 1, Journal: uint64(i + 1)}
		if err := db.Journal(id).Format(markerOf(id)); err != nil {
			b.Fatal(err)
		}
		ops := make([]paxos.WriteOp, records)
		for r := range ops {
			ops[r] = paxos.WriteOp{Kind: paxos.OpAccept, Ballot: paxos.Ballot{Round: 1, Node: 1},
				Command: journal.Write(journal.Entry{Leader: journal.LeaderUUID{Lo: 1}, Seq: 1, Records: [][]byte{payload}})}
		}
		batches[i] = Batch{Journal: id, Ops: ops, Sync: true}
	}
	walBefore, tablesBefore := db.Metrics().WAL.BytesWritten, tableBytes(db)

	b.ResetTimer()
	var pebbleTime, rawTime time.Duration
	slot := paxos.Slot(1)
	for range b.N {
		for i := range batches {
			for r := range batches[i].Ops {
				batches[i].Ops[r].Slot = slot + paxos.Slot(r)
			}
		}
		slot += paxos.Slot(records)
		t0 := time.Now()
		if err := db.Commit(batches...); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := raw.Write(rawBuf); err != nil {
			b.Fatal(err)
		}
		if err := syscall.Fdatasync(int(raw.Fd())); err != nil {
			b.Fatal(err)
		}
		pebbleTime += t1.Sub(t0)
		rawTime += time.Since(t1)
	}
	b.StopTimer()

	total := float64(b.N * journals * records)
	wal := db.Metrics().WAL.BytesWritten - walBefore
	tables := tableBytes(db) - tablesBefore
	b.ReportMetric(total/pebbleTime.Seconds(), "rec/s")
	b.ReportMetric(total/rawTime.Seconds(), "raw-rec/s")
	b.ReportMetric(total*benchRecordBytes/1e6/pebbleTime.Seconds(), "MB/s")
	b.ReportMetric(total*benchRecordBytes/1e6/rawTime.Seconds(), "raw-MB/s")
	b.ReportMetric(float64(b.N)/pebbleTime.Seconds(), "syncs/s")
	b.ReportMetric(float64(b.N)/rawTime.Seconds(), "raw-syncs/s")
	b.ReportMetric(rawTime.Seconds()/pebbleTime.Seconds(), "ratio")
	b.ReportMetric(float64(wal)/total, "walB/rec")
	b.ReportMetric(float64(wal+tables)/total, "totalB/rec")
}
