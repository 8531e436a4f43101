// Package pebblestore is paros's disk store: one Pebble database per process
// holding the durable state of every journal the process serves
// (docs/design/storage.md).
//
// A DB is opened once per data directory. DB.Journal returns the
// storage.LogStore of one journal; DB.Commit puts the op batches of many
// journals into one Pebble batch and one WAL sync (group commit). Every
// journal's keys live under its own prefix, so one journal's truncation is a
// range delete that cannot reach another's records.
//
// # Key schema
//
// All integers are big-endian, so keys sort by (tenant, journal, kind, slot).
//
//	key                                                  value            frozen constant
//	---------------------------------------------------  ---------------  ----------------------
//	00 01                                                store header     keyStoreHeader
//	01 | tenant (8) | journal (8) | 01                   format marker    keyspaceJournal, kindMarker
//	01 | tenant (8) | journal (8) | 02                   promise          kindPromise
//	01 | tenant (8) | journal (8) | 03                   chosen index     kindChosen
//	01 | tenant (8) | journal (8) | 04                   seal             kindSeal
//	01 | tenant (8) | journal (8) | 05                   scrub cursor     kindScrub
//	01 | tenant (8) | journal (8) | 10 | slot (8) | 00   record identity  kindRecord, partIdentity
//	01 | tenant (8) | journal (8) | 10 | slot (8) | 01   record value     kindRecord, partValue
//
// A record's identity and its value are two keys. A damaged or lost value
// leaves the identity readable, so boot reports faulty(slot, ballot) and
// never "nothing accepted". Truncation deletes the range
// [record(journal, 0), record(journal, floor)) in the same Pebble batch that
// writes the new seal and chosen index; it leaves the scrub cursor alone.
// DeleteJournal deletes the journal's whole prefix, scrub cursor included.
//
// # Value formats (version 1, frozen: they are on disk)
//
// Every value ends in a CRC-32C (Castagnoli) that covers the value's full key
// and every value byte before the CRC. The key carries the journal id, the
// kind and the slot, so a value written under the wrong key (a misdirected
// write) fails its check. A value whose length, version or CRC is wrong is
// refused; scalars and identities that fail are storage.ErrCorruption, a
// record value that fails is a faulty record, and a scrub cursor that fails
// reads as 0 (it only paces the scrubber; see Journal.Boot).
//
//	value            bytes  layout (offset:size)
//	---------------  -----  ---------------------------------------------------------------
//	store header     22     0:17 magic "paros.pebblestore" | 17:1 version | 18:4 crc
//	promise          21     0:1 version | 1:8 round | 9:8 node | 17:4 crc
//	chosen index     13     0:1 version | 1:8 slot | 9:4 crc
//	scrub cursor     13     0:1 version | 1:8 slot | 9:4 crc
//	seal             53     0:1 version | 1:8 floor | 9:16 leader uuid (hi, lo) |
//	                        25:8 term | 33:8 next seq | 41:8 first seq | 49:4 crc
//	record identity  30     0:1 version | 1:1 origin (1 accept, 2 learned) | 2:8 round |
//	                        10:8 node | 18:4 value length | 22:4 value crc | 26:4 crc
//	record value     n      the command codec of package storage (storage.AppendCommand)
//	format marker    var    0:1 version | 1:16 journal (tenant, journal) | 17:8 node |
//	                        25:2 member count m | 27:8m members | quorum kind (1) |
//	                        Q1, Q2, Rows, Cols (4 each, int32) | writer mode (1) |
//	                        proxies, replicas, matchmakers (4 each) | crc (4)
//
// The value crc of an identity is the CRC-32C of
// (value key | ballot round (8) | ballot node (8) | value bytes): it binds the
// value to its journal, slot and ballot. A seal holds the floor (first
// retained slot) and the sealed journal state with its hidden term, rebuilt by
// journal.Restore, which refuses a state that breaks an invariant. An
// OpRewrite (the scrubber's repair) writes a record exactly as an accept
// does: a new value and identity, origin 1.
//
// # Durability and failure
//
// A commit with Sync is durable when Commit returns; a commit without Sync
// (only relaxed ops: a chosen index, a scrub cursor) becomes durable with the
// next synced commit, in order. Pebble's WAL replay drops a torn tail after a
// crash, so a batch is all there or all gone, and a torn tail is never
// reported as rot.
//
// After any failed write or sync the DB refuses every further call with
// storage.ErrFailed until it is closed and reopened (fsyncgate: after a
// failed fsync the page cache can no longer be trusted). A failed sync is a
// *storage.IOError with outcome Unknown: the batch may or may not be on disk.
// Pebble treats a failed commit as fatal (Logger.Fatalf); the DB installs a
// logger whose Fatalf panics, recovers that panic in the committing goroutine
// and turns it into the error above. A Fatalf from one of Pebble's background
// goroutines still ends the process, as Pebble intends.
//
// Pebble's own corruption errors met while reading a journal's keys are
// returned as a *storage.CorruptionError naming that journal.
package pebblestore
