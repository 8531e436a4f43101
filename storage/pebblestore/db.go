package pebblestore

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage"
)

// Limits: every queue, batch and loop has a bound. Each is asserted where it
// is used.
const (
	// commitBatchesMax bounds the journal batches of one group commit. A
	// caller that gathers pending batches must cut its group at this size.
	commitBatchesMax = 1 << 16
	// commitOpsMax bounds the ops of one group commit, over all batches.
	commitOpsMax = 1 << 20
	// journalsMax bounds the journal handles one DB hands out.
	journalsMax = 1 << 20
	// scrubRecordsMax bounds one scrub page; a larger count is clamped.
	scrubRecordsMax = 1 << 12
)

// Pebble tuning for a WAL-bound workload: every commit is a synced batch of
// small records, read back only at boot and by scrubs.
const (
	// memTableBytesDefault: 64 MiB instead of Pebble's 4 MiB. A group
	// commit of 64 journals x 256 records is ~5 MiB; Pebble turns a batch of
	// half a memtable or more into a "large batch" (its own flushable, which
	// forces a memtable and WAL rotation), so a small memtable would make the
	// biggest commits the slowest. Fewer, larger flushes also write fewer L0
	// files per byte.
	memTableBytesDefault = 64 << 20
	// memTableStopWritesThreshold: let a flush of up to 3 full memtables run
	// behind commits before writes stall.
	memTableStopWritesThreshold = 4
	// Pebble's WALBytesPerSync stays 0 (off): every commit that matters
	// syncs the WAL already, and background syncs would only add I/O.
	// Automatic compactions stay on: truncation is a range delete, and only
	// compaction reclaims the space it frees.
)

// formatMajorVersion pins the on-disk format Pebble writes: the newest of
// pebble v2.1.7. It includes FormatWALSyncChunks, which lets WAL replay tell
// a torn tail from corruption in the middle of the log.
const formatMajorVersion = pebble.FormatValueSeparation

// Options configures a DB. The zero value is the production setting.
type Options struct {
	// FS is the filesystem; nil is the operating system's.
	FS vfs.FS
	// Logger receives Pebble's log lines; nil is Pebble's default. Its
	// Fatalf is never called: see the package doc.
	Logger pebble.Logger
	// MemTableBytes overrides memTableBytesDefault (tests shrink it to make
	// Pebble flush and compact).
	MemTableBytes uint64

	// tweak lets this package's tests adjust Pebble's options.
	tweak func(*pebble.Options)
}

// Batch is one journal's ordered ops inside a group commit.
type Batch struct {
	Journal journal.ID
	Ops     []paxos.WriteOp
	// Sync asks for the commit to be durable when Commit returns. Only a
	// batch of relaxed ops (SetChosenIndex, ScrubCursor) may leave it false.
	Sync bool
}

// DB is the one Pebble database of a process. It is safe for concurrent use;
// commits are serialized.
type DB struct {
	dir string
	pdb *pebble.DB

	mu sync.Mutex
	// readers is held shared by cold reads (which never take mu, so they
	// never wait behind a commit's fsync) and exclusively by Close.
	// unusable mirrors failed != nil || closed for them.
	readers  sync.RWMutex
	unusable atomic.Bool
	// failed is the first write or sync error. Invariant: failed != nil =>
	// every call but Close returns ErrFailed.
	failed   error
	closed   bool
	journals map[journal.ID]*Journal
	// Encoding scratch, reused by every commit (Pebble copies what it keeps).
	keyBuf, valueBuf, identityBuf []byte
	ballotBuf                     [16]byte
	// reusable is the batch every Commit fills (nil after a failure).
	reusable *pebble.Batch
}

// Open opens (creating if need be) the store in dir. A store whose header or
// Pebble metadata is damaged is refused with an ErrCorruption error.
func Open(dir string, o *Options) (*DB, error) {
	if o == nil {
		o = &Options{}
	}
	po := &pebble.Options{
		FS:                          o.FS,
		FormatMajorVersion:          formatMajorVersion,
		MemTableSize:                memTableBytesDefault,
		MemTableStopWritesThreshold: memTableStopWritesThreshold,
		Logger:                      fatalPanics{inner: o.Logger},
	}
	log := po.Logger
	po.EventListener = &pebble.EventListener{
		// Pebble's default reaction to a checksum failure in a file is
		// Logger.Fatalf, which would end the process. The read that met it
		// returns the error anyway, and the store reports it as a corruption
		// of the journal whose keys it was reading; here it is only logged.
		DataCorruption: func(info pebble.DataCorruptionInfo) {
			log.Errorf("pebblestore: data corruption: %s", info)
		},
		BackgroundError: func(err error) {
			log.Errorf("pebblestore: background error: %v", err)
		},
	}
	if o.MemTableBytes > 0 {
		po.MemTableSize = o.MemTableBytes
	}
	if po.FS == nil {
		po.FS = vfs.Default
	}
	if o.tweak != nil {
		o.tweak(po)
	}
	pdb, err := pebble.Open(dir, po)
	if err != nil {
		if pebble.IsCorruptionError(err) {
			detail, _, _ := strings.Cut(err.Error(), "\n")
			return nil, &storage.CorruptionError{What: "store", Detail: detail}
		}
		return nil, fmt.Errorf("paros/pebblestore: open %s: %w", dir, err)
	}
	db := &DB{dir: dir, pdb: pdb, journals: map[journal.ID]*Journal{}}
	if err := db.checkHeader(); err != nil {
		_ = pdb.Close()
		return nil, err
	}
	return db, nil
}

// checkHeader verifies the store header, writing it into an empty store.
func (db *DB) checkHeader() error {
	v, closer, err := db.pdb.Get(keyStoreHeader)
	switch {
	case err == nil:
		defer func() { _ = closer.Close() }()
		if err := decodeHeader(v); err != nil {
			return &storage.CorruptionError{What: "store header", Detail: err.Error()}
		}
		return nil
	case !errors.Is(err, pebble.ErrNotFound):
		return db.readErr(journal.ID{}, "store header", err)
	}
	// No header: the store must be empty, or it lost its header.
	it, err := db.pdb.NewIter(nil)
	if err != nil {
		return db.readErr(journal.ID{}, "store header", err)
	}
	holds := it.First()
	if err := firstErr(it.Error(), it.Close()); err != nil {
		return db.readErr(journal.ID{}, "store header", err)
	}
	if holds {
		return &storage.CorruptionError{What: "store header", Detail: "missing in a store that holds keys"}
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	pb := db.pdb.NewBatch()
	_ = pb.Set(keyStoreHeader, encodeHeader(), nil)
	return db.applyLocked(pb, true)
}

// Close closes the store. Journal handles fail with ErrClosed afterwards.
// Closing a failed store is how it is reopened: Close, then Open again.
func (db *DB) Close() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return storage.ErrClosed
	}
	db.closed = true
	db.unusable.Store(true)
	db.readers.Lock()
	defer db.readers.Unlock()
	err := db.closePebble()
	if db.failed != nil {
		return nil // the failure was reported when it happened
	}
	return err
}

func (db *DB) closePebble() (err error) {
	defer func() {
		// A Pebble whose WAL failed may complain again while closing.
		if r := recover(); r != nil {
			if _, ok := r.(*fatalError); !ok {
				panic(r)
			}
			err = r.(*fatalError)
		}
	}()
	return db.pdb.Close()
}

// Journal returns the store of one journal. Handles are cached: the same id
// always gives the same *Journal.
func (db *DB) Journal(id journal.ID) *Journal {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.journalLocked(id)
}

// Journals lists the journals that hold any key, in key order.
func (db *DB) Journals() ([]journal.ID, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.usableLocked(); err != nil {
		return nil, err
	}
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: []byte{keyspaceJournal}, UpperBound: []byte{keyspaceJournal + 1}})
	if err != nil {
		return nil, db.readErr(journal.ID{}, "journal list", err)
	}
	var out []journal.ID
	for ok := it.First(); ok; {
		k, valid := parseKey(it.Key())
		if !valid {
			_ = it.Close()
			return nil, &storage.CorruptionError{What: "key", Detail: fmt.Sprintf("key %x outside the schema", it.Key())}
		}
		out = append(out, k.id)
		_, upper := journalBounds(k.id)
		ok = it.SeekGE(upper)
	}
	if err := firstErr(it.Error(), it.Close()); err != nil {
		return nil, db.readErr(journal.ID{}, "journal list", err)
	}
	return out, nil
}

// Commit persists the batches of many journals in one Pebble batch: all of
// them or none survive a crash. If any batch asks for Sync, the commit is one
// WAL sync and every earlier commit is durable with it.
//
// An error from Pebble is a *storage.IOError with outcome Unknown (the
// batches may or may not be on disk); the DB then refuses every call with
// ErrFailed until it is closed and reopened.
//
// A batch for a journal never formatted (ErrUnformatted), or whose scalars
// do not read back (a *storage.CorruptionError), fails the whole commit and
// nothing is written. Boot a journal before committing to it: Boot verifies
// and caches what Commit builds on, so a booted journal never fails here.
func (db *DB) Commit(batches ...Batch) error {
	if len(batches) > commitBatchesMax {
		panic(fmt.Sprintf("pebblestore: %d batches in one commit (max %d)", len(batches), commitBatchesMax))
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.usableLocked(); err != nil {
		return err
	}
	sync, ops, size := false, 0, 0
	for _, b := range batches {
		sync = sync || b.Sync
		ops += len(b.Ops)
		for _, op := range b.Ops {
			size += opBytesEstimate(op)
		}
	}
	if ops > commitOpsMax {
		panic(fmt.Sprintf("pebblestore: %d ops in one commit (max %d)", ops, commitOpsMax))
	}
	pb := db.commitBatchLocked(size)
	// Ops are staged on copies of each journal's scalars and installed only
	// once the commit succeeded.
	staged := make(map[*Journal]*scalars, min(len(batches), 64))
	for _, b := range batches {
		if len(b.Ops) == 0 {
			continue
		}
		j := db.journalLocked(b.Journal)
		st := staged[j]
		if st == nil {
			if err := j.writableLocked(); err != nil {
				pb.Reset()
				return err
			}
			c := j.st
			st = &c
			staged[j] = st
		}
		for _, op := range b.Ops {
			db.stageLocked(pb, j.id, st, op)
		}
	}
	if pb.Empty() {
		if !sync {
			return nil
		}
		// Nothing to write, but earlier unsynced commits must become
		// durable: a WAL-only record makes Pebble sync the log.
		_ = pb.LogData(nil, nil)
	}
	err := db.applyLocked(pb, sync)
	if err != nil {
		db.reusable = nil // Pebble may still hold it
		return err
	}
	for j, st := range staged {
		j.st = *st
	}
	return nil
}

func (db *DB) usableLocked() error {
	switch {
	case db.closed:
		return storage.ErrClosed
	case db.failed != nil:
		return fmt.Errorf("%w: %v", storage.ErrFailed, db.failed)
	}
	return nil
}

func (db *DB) journalLocked(id journal.ID) *Journal {
	if !id.IsSet() {
		panic(fmt.Sprintf("pebblestore: journal id %s is unset", id))
	}
	j := db.journals[id]
	if j == nil {
		if len(db.journals) >= journalsMax {
			panic(fmt.Sprintf("pebblestore: more than %d journal handles", journalsMax))
		}
		j = &Journal{db: db, id: id}
		db.journals[id] = j
	}
	return j
}

// stageLocked encodes one op into pb and moves st as the op does.
func (db *DB) stageLocked(pb *pebble.Batch, id journal.ID, st *scalars, op paxos.WriteOp) {
	switch op.Kind {
	case paxos.OpSetPromise:
		if op.Ballot.Less(st.promise) {
			panic(fmt.Sprintf("pebblestore: journal %s promise lowered %s -> %s", id, st.promise, op.Ballot))
		}
		st.promise = op.Ballot
		k := scalarKey(id, kindPromise)
		_ = pb.Set(k, encodePromise(k, op.Ballot), nil)
	case paxos.OpAccept, paxos.OpLearned, paxos.OpRewrite:
		// A rewrite is physically an accept: the same record written again
		// over its damaged copy, with origin accept.
		if op.Slot == 0 {
			panic(fmt.Sprintf("pebblestore: journal %s %s at slot 0", id, op.Kind))
		}
		if op.Slot < st.floor {
			return // below the floor: the prefix it belongs to is sealed
		}
		origin := originAccept
		if op.Kind == paxos.OpLearned {
			origin = originLearned
		}
		db.putRecordLocked(pb, id, op.Slot, origin, op.Ballot, op.Command)
	case paxos.OpSetChosenIndex:
		if op.Slot <= st.chosen {
			return
		}
		st.chosen = op.Slot
		k := scalarKey(id, kindChosen)
		_ = pb.Set(k, encodeChosen(k, st.chosen), nil)
	case paxos.OpScrubCursor:
		// Not monotone (a new pass starts over), nor cached: only Boot reads
		// it. A truncation leaves it alone.
		k := scalarKey(id, kindScrub)
		_ = pb.Set(k, encodeScrubCursor(k, op.Slot), nil)
	case paxos.OpTruncate, paxos.OpTrimmedTo:
		if op.Slot <= st.floor {
			return
		}
		if op.State.IsZero() {
			panic(fmt.Sprintf("pebblestore: journal %s %s seals a zero state", id, op.Kind))
		}
		// Drop every record below the new floor, in the same batch as the
		// seal: the floor never outruns what covers it, nor lags it.
		_ = pb.DeleteRange(recordsFrom(id, 0), recordsFrom(id, op.Slot), nil)
		st.floor, st.sealed = op.Slot, op.State
		k := scalarKey(id, kindSeal)
		_ = pb.Set(k, encodeSeal(k, st.floor, st.sealed), nil)
		if op.Slot-1 > st.chosen {
			st.chosen = op.Slot - 1
			k := scalarKey(id, kindChosen)
			_ = pb.Set(k, encodeChosen(k, st.chosen), nil)
		}
		// The promise is never touched here (TrimmedTo included).
	default:
		panic(fmt.Sprintf("pebblestore: journal %s unknown op %s", id, op.Kind))
	}
}

// opBytesEstimate is about what op adds to a Pebble batch.
func opBytesEstimate(op paxos.WriteOp) int {
	const perKey = recordKeyLen + 8 // key, lengths and kind of a batch entry
	switch op.Kind {
	case paxos.OpAccept, paxos.OpLearned, paxos.OpRewrite:
		n := 2*perKey + identityBytes + 48
		for _, r := range op.Command.Entry.Records {
			n += len(r) + 3
		}
		return n
	case paxos.OpTruncate, paxos.OpTrimmedTo:
		return 3*perKey + sealBytes + chosenBytes
	}
	return perKey + promiseBytes
}

// putRecordLocked writes a record's value and its identity.
func (db *DB) putRecordLocked(pb *pebble.Batch, id journal.ID, slot paxos.Slot, origin byte, b paxos.Ballot, cmd journal.Command) {
	if !cmd.Valid() {
		panic(fmt.Sprintf("pebblestore: journal %s slot %d: invalid command %s", id, slot, cmd))
	}
	db.valueBuf = storage.AppendCommand(db.valueBuf[:0], cmd)
	if len(db.valueBuf) > 1<<32-1 {
		panic(fmt.Sprintf("pebblestore: journal %s slot %d: value of %d bytes", id, slot, len(db.valueBuf)))
	}
	db.keyBuf = appendRecordKey(db.keyBuf[:0], id, slot, partValue)
	ident := identity{origin: origin, ballot: b, valueLen: uint32(len(db.valueBuf)), valueCRC: valueCRC(&db.ballotBuf, db.keyBuf, b, db.valueBuf)}
	_ = pb.Set(db.keyBuf, db.valueBuf, nil)
	db.keyBuf[len(db.keyBuf)-1] = partIdentity
	db.identityBuf = encodeIdentity(db.identityBuf[:0], db.keyBuf, ident)
	_ = pb.Set(db.keyBuf, db.identityBuf, nil)
}

// commitBatchLocked returns the DB's reusable Pebble batch, empty. Reusing
// one batch keeps its buffer: a fresh batch for a 5 MiB group commit would
// grow by doubling and copy itself each time.
func (db *DB) commitBatchLocked(size int) *pebble.Batch {
	if db.reusable == nil {
		db.reusable = db.pdb.NewBatchWithSize(size)
	}
	if !db.reusable.Empty() {
		db.reusable.Reset() // a commit that panicked mid-way left ops in it
	}
	return db.reusable
}

// applyLocked commits pb. Any error fails the DB (see the package doc).
func (db *DB) applyLocked(pb *pebble.Batch, sync bool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(*fatalError)
			if !ok {
				panic(r)
			}
			err = f
		}
		if err != nil {
			db.failed = err
			db.unusable.Store(true)
			op := "write"
			if sync {
				op = "sync"
			}
			err = &storage.IOError{Op: op, Outcome: storage.OutcomeUnknown, Err: err}
			return // pb is not closed: Pebble may still hold it
		}
		if pb == db.reusable {
			pb.Reset()
		} else {
			_ = pb.Close()
		}
	}()
	return db.pdb.Apply(pb, &pebble.WriteOptions{Sync: sync})
}

// readErr classifies a read error: Pebble's corruption becomes a
// *storage.CorruptionError naming the journal; anything else an IOError.
func (db *DB) readErr(id journal.ID, what string, err error) error {
	if pebble.IsCorruptionError(err) {
		// The first line: Pebble's errors carry detail lines after it.
		detail, _, _ := strings.Cut(err.Error(), "\n")
		return &storage.CorruptionError{Journal: id, What: what, Detail: detail}
	}
	return &storage.IOError{Op: "read", Outcome: storage.OutcomeLost, Err: err}
}

// Metrics returns Pebble's metrics (for benchmarks and the admin port).
func (db *DB) Metrics() *pebble.Metrics { return db.pdb.Metrics() }

// fatalError is a Pebble Fatalf caught by fatalPanics.
type fatalError struct {
	msg   string
	cause error
}

func (e *fatalError) Error() string { return e.msg }
func (e *fatalError) Unwrap() error { return e.cause }

// fatalPanics is the Pebble logger the DB installs: Fatalf panics with a
// *fatalError, which applyLocked recovers in the committing goroutine.
type fatalPanics struct{ inner pebble.Logger }

func (l fatalPanics) Infof(format string, args ...any) {
	if l.inner != nil {
		l.inner.Infof(format, args...)
	} else {
		pebble.DefaultLogger.Infof(format, args...)
	}
}

func (l fatalPanics) Errorf(format string, args ...any) {
	if l.inner != nil {
		l.inner.Errorf(format, args...)
	} else {
		pebble.DefaultLogger.Errorf(format, args...)
	}
}

func (l fatalPanics) Fatalf(format string, args ...any) {
	l.Errorf(format, args...)
	f := &fatalError{msg: fmt.Sprintf(format, args...)}
	for _, a := range args {
		if e, ok := a.(error); ok {
			f.cause = e
			break
		}
	}
	panic(f)
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
