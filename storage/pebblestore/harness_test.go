package pebblestore

// Test support shared by this package's tests: a store on Pebble's crashable
// in-memory filesystem, wrapped in errorfs so a test can fail the WAL's next
// sync with EIO; hooks that damage one record's value or identity in place;
// and a logger that keeps Pebble quiet.

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/storetest"
)

const testDir = "/db"

// quietLogger drops Pebble's log lines (Fatalf is the DB's own).
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

// walSyncFault fails every WAL sync with EIO while it is on.
type walSyncFault struct{ on atomic.Bool }

func (f *walSyncFault) String() string { return "wal-sync-eio" }

func (f *walSyncFault) MaybeError(op errorfs.Op) error {
	if !f.on.Load() || (op.Kind != errorfs.OpFileSync && op.Kind != errorfs.OpFileSyncData) || !strings.HasSuffix(op.Path, ".log") {
		return nil
	}
	return &os.PathError{Op: "sync", Path: op.Path, Err: syscall.EIO}
}

func testOptions(fs vfs.FS) *Options {
	return &Options{FS: fs, Logger: quietLogger{}}
}

func mustOpen(t testing.TB, fs vfs.FS) *DB {
	t.Helper()
	db, err := Open(testDir, testOptions(fs))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return db
}

// neighbours are journals beside the one under test, with ids adjacent to
// it, holding records: a range delete or a scan that strays past its prefix
// would touch them.
var neighbours = []journal.ID{
	{Tenant: storetest.JournalID.Tenant, Journal: storetest.JournalID.Journal - 1},
	{Tenant: storetest.JournalID.Tenant, Journal: storetest.JournalID.Journal + 1},
	{Tenant: storetest.JournalID.Tenant + 1, Journal: 1},
}

// memHarness is a storetest.Harness over a DB on a crashable MemFS.
type memHarness struct {
	t     testing.TB
	mem   *vfs.MemFS
	fault *walSyncFault
	db    *DB
	want  map[journal.ID]string // neighbours' boots
}

func newMemHarness(t testing.TB) *memHarness {
	h := &memHarness{t: t, mem: vfs.NewCrashableMem(), fault: &walSyncFault{}, want: map[journal.ID]string{}}
	h.open()
	for i, id := range neighbours {
		j := h.db.Journal(id)
		if err := j.Format(markerOf(id)); err != nil {
			t.Fatalf("format neighbour: %v", err)
		}
		ops := []paxos.WriteOp{{Kind: paxos.OpSetPromise, Ballot: paxos.Ballot{Round: 7, Node: 1}}}
		for s := paxos.Slot(1); s <= 12; s++ {
			ops = append(ops, storetest.Accept(s, paxos.Ballot{Round: uint64(i + 1), Node: 1}, i))
		}
		if err := j.Apply(ops, true); err != nil {
			t.Fatalf("neighbour apply: %v", err)
		}
		b, err := j.Boot()
		if err != nil {
			t.Fatalf("neighbour boot: %v", err)
		}
		h.want[id] = storetest.Render(b)
	}
	if tt, ok := t.(*testing.T); ok {
		tt.Cleanup(h.checkNeighbours)
	}
	return h
}

func (h *memHarness) open() {
	h.db = mustOpen(h.t, errorfs.Wrap(h.mem, h.fault))
}

func (h *memHarness) Store() storage.LogStore { return h.db.Journal(storetest.JournalID) }

// Crash keeps exactly what was synced (a crash clone at 0%) and reopens.
func (h *memHarness) Crash() {
	clone := h.mem.CrashClone(vfs.CrashCloneCfg{})
	_ = h.db.Close()
	h.mem = clone
	h.fault.on.Store(false)
	h.open()
}

func (h *memHarness) RotValue(slot paxos.Slot) bool {
	return h.db.Journal(storetest.JournalID).damageValue(h.t, slot)
}

func (h *memHarness) FailNextSync() { h.fault.on.Store(true) }

func (h *memHarness) checkNeighbours() {
	if h.db.failed != nil {
		h.Crash()
	}
	for _, id := range neighbours {
		b, err := h.db.Journal(id).Boot()
		if err != nil {
			h.t.Fatalf("neighbour %s: %v", id, err)
		}
		if got := storetest.Render(b); got != h.want[id] {
			h.t.Fatalf("neighbour %s changed:\n%s\nwant:\n%s", id, got, h.want[id])
		}
	}
	_ = h.db.Close()
}

// rawSet writes one key in a synced commit, bypassing the codec.
func (db *DB) rawSet(t testing.TB, key, value []byte) {
	t.Helper()
	if err := db.pdb.Set(key, value, pebble.Sync); err != nil {
		t.Fatalf("raw set: %v", err)
	}
}

func (db *DB) rawGet(t testing.TB, key []byte) ([]byte, bool) {
	t.Helper()
	v, closer, err := db.pdb.Get(key)
	if err == pebble.ErrNotFound {
		return nil, false
	}
	if err != nil {
		t.Fatalf("raw get: %v", err)
	}
	defer closer.Close()
	return append([]byte(nil), v...), true
}

// damageValue flips one bit of the value of the record at slot; its identity
// is untouched. It reports whether slot held a record.
func (j *Journal) damageValue(t testing.TB, slot paxos.Slot) bool {
	if _, ok := j.db.rawGet(t, appendRecordKey(nil, j.id, slot, partIdentity)); !ok {
		return false
	}
	k := appendRecordKey(nil, j.id, slot, partValue)
	v, ok := j.db.rawGet(t, k)
	if !ok {
		return false
	}
	v[len(v)/2] ^= 0x10
	j.db.rawSet(t, k, v)
	return true
}

// damageIdentity flips one bit of the identity of the record at slot.
func (j *Journal) damageIdentity(t testing.TB, slot paxos.Slot) bool {
	k := appendRecordKey(nil, j.id, slot, partIdentity)
	v, ok := j.db.rawGet(t, k)
	if !ok {
		return false
	}
	v[3] ^= 0x01 // inside the ballot
	j.db.rawSet(t, k, v)
	return true
}
