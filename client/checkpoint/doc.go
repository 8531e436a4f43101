// Package checkpoint is the journal owner's compaction pattern, written once
// for any journal (docs/guide/client.md, "Checkpoints: keeping a journal
// short"). paros never reads a record and so never compacts an application's
// state: the owner does. It folds its journal into a state it can encode
// (Checkpointable), writes that state into the journal as a run at the
// journal's next position s, and then truncates with up_to = s, so the run
// becomes the start of the journal.
//
// A run is ordinary fenced writes: a Begin, the state cut into Chunks, and
// an End that names the chunk count and their checksum. End is the commit
// point. A reader that jumped over a truncated prefix restores its state
// from the first complete run it meets (at its End); a reader that held the
// whole prefix verifies its own state against the run instead. A run
// without an End (the owner crashed inside it) is ignored; a run left in
// the middle of the log (the owner crashed after End, before Truncate) is a
// checkpoint like any other and every fold resets on it.
//
// # Record format (frozen)
//
// Every run record starts with the 8-byte magic, so readers tell run
// records from entries; the owner refuses an entry that starts with it
// (CheckEntries, ErrLooksLikeRun). Integers are little-endian.
//
//	record  offset  size              field
//	all     0       8                 magic "\x00PRSCKP\x01"
//	all     8       1                 kind: 1 Begin, 2 Chunk, 3 End
//	Begin   9       8                 covers_up_to: the Begin's own position s (>= 1)
//	Chunk   9       4                 index: 0, 1, 2, … (< ChunksMax)
//	Chunk   13      1..ChunkBytesMax  the chunk's bytes
//	End     9       4                 chunks (<= ChunksMax)
//	End     13      4                 CRC-32C (Castagnoli) of the chunks' bytes in order
//
// A Begin and an End are exactly 17 bytes; a Chunk is 13 bytes and its
// payload.
//
// The magic, the kind numbers, the layout, ChunkBytesMax and ChunksMax are
// frozen: runs written by one version are restored by every later one. The
// decoder is strict — exact lengths, no empty chunk, a zero CRC for zero
// chunks, no trailing bytes — so every record has exactly one encoding.
//
// # Use
//
// The owner (holding a client.Writer): checks each entry with CheckEntries
// before writing it; asks its Trigger when to checkpoint; then writes
// Plan(state.Checkpoint(), w.NextSeq(), 0), split by Batches, with nothing
// else in between; once End is written, sends w.Truncate(s). Every reader
// (a client.Reader) feeds each ReaderOutcome to Folder.FoldRead, or each
// record to Fold and each gap to Jump.
//
// Everything here is pure: no I/O, no clock, no randomness.
package checkpoint
