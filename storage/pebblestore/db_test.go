package pebblestore

// These tests check the DB around the per-journal contract: a journal is
// written only after it is formatted; Format refuses a marker of another
// journal; Journals lists the journals that hold keys; a group commit may
// carry one journal twice (in order) and is atomic across journals; handles
// are cached; a closed DB refuses calls; truncation's range delete and the
// boot scan stay inside their journal's prefix even with thousands of
// records and after Pebble flushed and compacted them into sstables; and a
// crash at any sync Pebble makes while flushing and compacting (its own
// durability seams) loses nothing that was synced.

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/memstore"
	"github.com/parosdb/paros/storage/storetest"
)

func TestWritesNeedAFormat(t *testing.T) {
	db := mustOpen(t, vfs.NewMem())
	defer func() { _ = db.Close() }()
	if b, err := db.Journal(jA).Boot(); err != nil || b.Marker != nil {
		t.Fatalf("boot of a fresh journal: %v", err)
	}
	err := db.Journal(jA).Apply([]paxos.WriteOp{storetest.Accept(1, ballotOf(1, 1), 1)}, true)
	if !errors.Is(err, ErrUnformatted) {
		t.Fatalf("apply before format: %v, want ErrUnformatted", err)
	}
	// Nothing of a refused group commit is written, formatted journal or not.
	if err := db.Journal(jB).Format(markerOf(jB)); err != nil {
		t.Fatal(err)
	}
	err = db.Commit(Batch{Journal: jB, Ops: []paxos.WriteOp{storetest.Accept(1, ballotOf(1, 1), 1)}, Sync: true},
		Batch{Journal: jA, Ops: []paxos.WriteOp{storetest.Accept(1, ballotOf(1, 1), 1)}, Sync: true})
	if !errors.Is(err, ErrUnformatted) {
		t.Fatalf("group commit with an unformatted journal: %v", err)
	}
	if b, _ := db.Journal(jB).Boot(); len(storetest.Records(t, b)) != 0 {
		t.Fatalf("a refused commit wrote %v", storetest.Records(t, b))
	}
	m := markerOf(jB)
	if err := db.Journal(jA).Format(m); !errors.Is(err, storage.ErrBadMarker) {
		t.Fatalf("format with a marker of another journal: %v", err)
	}
	if err := db.Journal(jA).Format(markerOf(jA)); err != nil {
		t.Fatal(err)
	}
	if err := db.Journal(jA).Apply([]paxos.WriteOp{storetest.Accept(1, ballotOf(1, 1), 1)}, true); err != nil {
		t.Fatal(err)
	}
	ids, err := db.Journals()
	if err != nil || len(ids) != 2 || ids[0] != jA || ids[1] != jB {
		t.Fatalf("journals %v %v", ids, err)
	}
	first, second := db.Journal(jA), db.Journal(jA)
	if first != second {
		t.Fatalf("handles are not cached")
	}
}

func TestGroupCommitOrderAndClose(t *testing.T) {
	mem := vfs.NewCrashableMem()
	db := mustOpen(t, mem)
	for _, id := range []journal.ID{jA, jB} {
		if err := db.Journal(id).Format(markerOf(id)); err != nil {
			t.Fatal(err)
		}
	}
	b1, b2 := ballotOf(1, 1), ballotOf(2, 1)
	err := db.Commit(
		Batch{Journal: jA, Ops: []paxos.WriteOp{storetest.Accept(1, b1, 1)}},
		Batch{Journal: jB, Ops: []paxos.WriteOp{storetest.Accept(1, b1, 1)}},
		Batch{Journal: jA, Ops: []paxos.WriteOp{storetest.Accept(1, b2, 2), {Kind: paxos.OpTruncate, Slot: 1, State: journal.Initial()}}},
		Batch{Journal: jB},
		Batch{Journal: jA, Ops: []paxos.WriteOp{storetest.Accept(2, b2, 2)}, Sync: true},
	)
	if err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashClone(vfs.CrashCloneCfg{})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("second close: %v", err)
	}
	if _, err := db.Journal(jA).Boot(); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("boot after close: %v", err)
	}
	if err := db.Commit(); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("commit after close: %v", err)
	}
	db = mustOpen(t, crashed)
	defer func() { _ = db.Close() }()
	a, _ := db.Journal(jA).Boot()
	b, _ := db.Journal(jB).Boot()
	if ra, rb := storetest.Records(t, a), storetest.Records(t, b); len(ra) != 2 || ra[0].Ballot != b2 || len(rb) != 1 {
		t.Fatalf("after crash:\n%s\n%s", storetest.Render(a), storetest.Render(b))
	}
}

// fillAndTrim writes n records to each journal in batches, truncates half
// of them, and returns the models.
func fillAndTrim(t *testing.T, db *DB, ids []journal.ID, n int) map[journal.ID]*memstore.Store {
	models := map[journal.ID]*memstore.Store{}
	for _, id := range ids {
		m := memstore.New()
		models[id] = m
		if err := db.Journal(id).Format(markerOf(id)); err != nil {
			t.Fatal(err)
		}
		_ = m.Format(markerOf(id))
	}
	const per = 100
	for from := 1; from <= n; from += per {
		var bs []Batch
		for i, id := range ids {
			var ops []paxos.WriteOp
			for s := from; s < from+per && s <= n; s++ {
				ops = append(ops, storetest.Accept(paxos.Slot(s), ballotOf(1, paxos.NodeID(i+1)), s))
			}
			bs = append(bs, Batch{Journal: id, Ops: ops, Sync: true})
		}
		if err := db.Commit(bs...); err != nil {
			t.Fatal(err)
		}
		for _, b := range bs {
			_ = models[b.Journal].Apply(b.Ops, true)
		}
	}
	trim := []paxos.WriteOp{{Kind: paxos.OpTruncate, Slot: paxos.Slot(n / 2), State: storetest.Sealed(1, journal.Seq(n), 3)}}
	if err := db.Journal(ids[1]).Apply(trim, true); err != nil {
		t.Fatal(err)
	}
	_ = models[ids[1]].Apply(trim, true)
	return models
}

func checkModels(t *testing.T, db *DB, models map[journal.ID]*memstore.Store) {
	t.Helper()
	for id, m := range models {
		want, _ := m.Boot()
		got, err := db.Journal(id).Boot()
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if storetest.Render(got) != storetest.Render(want) {
			t.Fatalf("%s differs from its model", id)
		}
	}
}

func TestPrefixIsolationThroughFlushAndCompaction(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions(mem)
	opts.MemTableBytes = 256 << 10 // flush often
	db, err := Open(testDir, opts)
	if err != nil {
		t.Fatal(err)
	}
	ids := []journal.ID{{Tenant: 1, Journal: 1}, {Tenant: 1, Journal: 2}, {Tenant: 1, Journal: 3}}
	models := fillAndTrim(t, db, ids, 2000)
	checkModels(t, db, models)
	if err := db.pdb.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.pdb.Compact(t.Context(), []byte{0}, []byte{0xff}, false); err != nil {
		t.Fatal(err)
	}
	checkModels(t, db, models)
	_ = db.Close()
	db = mustOpen(t, mem)
	defer func() { _ = db.Close() }()
	checkModels(t, db, models)
}

// TestCrashDuringFlushAndCompaction crashes at every sync Pebble makes while
// it flushes the memtable and compacts everything: the synced state is the
// only state any clone may boot to.
func TestCrashDuringFlushAndCompaction(t *testing.T) {
	mem := vfs.NewCrashableMem()
	hfs := storetest.NewHookFS(mem)
	opts := testOptions(hfs)
	opts.tweak = func(o *pebble.Options) { o.DisableAutomaticCompactions = true }
	db, err := Open(testDir, opts)
	if err != nil {
		t.Fatal(err)
	}
	ids := []journal.ID{{Tenant: 1, Journal: 1}, {Tenant: 1, Journal: 2}}
	models := fillAndTrim(t, db, ids, 600)
	if err := db.pdb.Flush(); err != nil {
		t.Fatal(err)
	}
	models2 := fillAndTrim(t, db, []journal.ID{{Tenant: 2, Journal: 1}, {Tenant: 2, Journal: 2}}, 300)
	for id, m := range models2 {
		models[id] = m
	}

	var (
		mu     sync.Mutex
		clones []*vfs.MemFS
		at     []string
	)
	hfs.SetHook(func(op, path string) {
		mu.Lock()
		defer mu.Unlock()
		for _, k := range []storetest.Keep{{Percent: 0}, {Percent: 50, Seed: uint64(len(clones))}, {Percent: 100}} {
			clones = append(clones, mem.CrashClone(cloneCfg(k)))
			at = append(at, fmt.Sprintf("before %s %s keeping %s", op, mem.PathBase(path), k))
		}
	})
	if err := db.pdb.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.pdb.Compact(t.Context(), []byte{0}, []byte{0xff}, false); err != nil {
		t.Fatal(err)
	}
	hfs.SetHook(nil)
	_ = db.Close()
	if len(clones) == 0 {
		t.Fatalf("no sync seen during flush and compaction")
	}
	kinds := map[string]int{}
	for i, c := range clones {
		db, err := Open(testDir, testOptions(c))
		if err != nil {
			t.Fatalf("%s: open: %v", at[i], err)
		}
		checkModels(t, db, models)
		_ = db.Close()
		f := strings.Fields(at[i])
		kinds[f[1]+" "+strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return -1
			}
			return r
		}, f[2])]++
	}
	t.Logf("%d crash clones at Pebble's own seams, all booted to the synced state: %v", len(clones), kinds)
}
