// This file checks the owner's side of the pattern: Plan's argument checks,
// Batches (a run is split into writes that respect the API's write limits and
// land back to back), and the Trigger rule — checkpoint once the log since
// the last checkpoint is k = 4 times the state's size, or once a tick bound
// passed with anything written.
package checkpoint

import (
	"bytes"
	"testing"

	"github.com/parosdb/paros/core/journal"
)

func TestPlanRefusesWhatNoRunCanCarry(t *testing.T) {
	mustPanic(t, "position zero", func() { Plan(nil, 0, 0) })
	mustPanic(t, "negative chunks", func() { Plan(nil, 1, -1) })
	mustPanic(t, "oversized chunks", func() { Plan(nil, 1, ChunkBytesMax+1) })
	mustPanic(t, "too many chunks", func() { Plan(make([]byte, ChunksMax+1), 1, 1) })
	if ChunkBytesMax+chunkHeader > journal.ReadBytesMax || ChunkBytesDefault > ChunkBytesMax {
		t.Fatalf("a chunk record of %d bytes must fit a read page of %d", ChunkBytesMax+chunkHeader, journal.ReadBytesMax)
	}
	if n := len(Plan(make([]byte, ChunkBytesDefault+1), 1, 0)); n != 4 {
		t.Fatalf("a default plan of one byte over a chunk has %d records, want 4", n)
	}
}

func TestBatchesSplitARunIntoWritesWithinTheLimits(t *testing.T) {
	small := Plan([]byte("tiny"), 1, 0)
	many := Plan(bytes.Repeat([]byte("x"), 3000), 1, 1)                          // 3002 records of a few bytes
	big := Plan(bytes.Repeat([]byte("y"), 3*ChunkBytesMax*20), 1, ChunkBytesMax) // > 1 MiB

	for name, run := range map[string][][]byte{"small": small, "many": many, "big": big} {
		batches := Batches(run)

		var joined [][]byte
		for i, b := range batches {
			n := 0
			for _, r := range b {
				n += len(r)
			}
			if len(b) == 0 || len(b) > journal.WriteRecordsMax || n > journal.WriteBytesMax {
				t.Fatalf("%s: batch %d has %d records, %d bytes", name, i, len(b), n)
			}
			joined = append(joined, b...)
		}
		if len(joined) != len(run) {
			t.Fatalf("%s: batches carry %d records, the run %d", name, len(joined), len(run))
		}
		for i := range run {
			if !bytes.Equal(joined[i], run[i]) {
				t.Fatalf("%s: record %d moved", name, i)
			}
		}
	}
	if len(Batches(small)) != 1 || len(Batches(many)) != 3 || len(Batches(big)) < 2 {
		t.Fatalf("batches: small %d, many %d, big %d", len(Batches(small)), len(Batches(many)), len(Batches(big)))
	}
	mustPanic(t, "a record no write can carry", func() { Batches([][]byte{make([]byte, journal.WriteBytesMax+1)}) })
	if Batches(nil) != nil {
		t.Fatal("no records, no batches")
	}
}

func TestTriggerChecksWhenTheLogOutgrowsTheStateOrTimeRunsOut(t *testing.T) {
	def := Trigger{}
	timed := Trigger{Factor: 2, LogBytesMin: 100, TicksMax: 60}
	for _, tc := range []struct {
		tr         Trigger
		log, state int
		ticks      uint64
		want       bool
		why        string
	}{
		{def, 0, 0, 1 << 40, false, "nothing written is never due"},
		{def, 399, 100, 0, false, "under 4x the state"},
		{def, 400, 100, 0, true, "4x the state"},
		{def, 1, 0, 0, true, "an empty state with anything written"},
		{timed, 150, 100, 0, false, "under 2x"},
		{timed, 200, 100, 0, true, "2x"},
		{timed, 60, 10, 0, false, "6x but under the minimum"},
		{timed, 60, 10, 59, false, "not yet the tick bound"},
		{timed, 1, 1000, 60, true, "the tick bound"},
	} {
		if got := tc.tr.Due(tc.log, tc.state, tc.ticks); got != tc.want {
			t.Fatalf("%s: Due(%d, %d, %d) = %v", tc.why, tc.log, tc.state, tc.ticks, got)
		}
	}
}
