package checkpoint

import (
	"errors"
	"fmt"

	"github.com/parosdb/paros/core/journal"
)

// ErrLooksLikeRun: an owner entry starts with Magic, so every reader would
// take it for a run record. The owner must not write it.
var ErrLooksLikeRun = errors.New("paros/checkpoint: entry looks like a run record")

// CheckEntries refuses a batch of owner entries if any of them starts with
// Magic (ErrLooksLikeRun, naming the record's index). The owner calls it
// before every entry write; run records come from Plan only.
func CheckEntries(records [][]byte) error {
	for i, r := range records {
		if IsRunRecord(r) {
			return fmt.Errorf("%w: record %d of the batch", ErrLooksLikeRun, i)
		}
	}
	return nil
}

// Plan returns the records of a run that checkpoints state at position at
// (the writer's next position): Begin{covers_up_to = at}, the state cut into
// chunks of chunkBytes (0: ChunkBytesDefault), and End{chunks, CRC-32C}.
// The owner writes them in order at [at, at+len) with nothing in between
// (Batches splits them into writes), and once End is written truncates with
// up_to = at.
//
// Plan panics when at is not a position, chunkBytes is outside
// [0, ChunkBytesMax] or the state is larger than StateBytesMax: each is a
// programmer error.
func Plan(state []byte, at journal.Seq, chunkBytes int) [][]byte {
	if chunkBytes == 0 {
		chunkBytes = ChunkBytesDefault
	}
	if at < journal.FirstSeq || chunkBytes < 0 || chunkBytes > ChunkBytesMax {
		panic(fmt.Sprintf("checkpoint: Plan at %d with chunks of %d bytes", at, chunkBytes))
	}
	if len(state) > StateBytesMax {
		panic(fmt.Sprintf("checkpoint: a state of %d bytes is over StateBytesMax %d", len(state), StateBytesMax))
	}
	chunks := (len(state) + chunkBytes - 1) / chunkBytes
	if chunks > ChunksMax {
		panic(fmt.Sprintf("checkpoint: %d chunks of %d bytes is over ChunksMax %d", chunks, chunkBytes, ChunksMax))
	}
	run := make([][]byte, 0, chunks+2)
	run = append(run, Begin(at).Encode())
	for i := range chunks {
		lo := i * chunkBytes
		hi := min(lo+chunkBytes, len(state))
		run = append(run, Chunk(uint32(i), state[lo:hi]).Encode())
	}
	run = append(run, End(uint32(chunks), Checksum(state)).Encode())
	return run
}

// Batches splits records into consecutive write batches that respect the
// API's write limits (journal.WriteRecordsMax, journal.WriteBytesMax). A
// small state's run is one batch. Written one after another by one writer,
// they land at consecutive positions.
func Batches(records [][]byte) [][][]byte {
	var out [][][]byte
	start, bytes := 0, 0
	for i, r := range records {
		if len(r) > journal.WriteBytesMax {
			panic(fmt.Sprintf("checkpoint: record %d of %d bytes fits no write", i, len(r)))
		}
		if i > start && (i-start == journal.WriteRecordsMax || bytes+len(r) > journal.WriteBytesMax) {
			out = append(out, records[start:i:i])
			start, bytes = i, 0
		}
		bytes += len(r)
	}
	if start < len(records) {
		out = append(out, records[start:len(records):len(records)])
	}
	return out
}
