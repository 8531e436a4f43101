package pebblestore

// These tests damage the store on purpose and check how boot classifies it:
// corruption is its own error class, routed to repair, never a panic or a
// silent truncate. A damaged, lost or misdirected record value is
// a faulty(slot, ballot) record: its identity survived, so it never reads as
// "nothing accepted". Everything else is a *storage.CorruptionError naming
// the journal and what broke, never a silent skip and never a panic: a
// damaged identity, a value without an identity, a damaged or misdirected
// scalar, a seal that breaks a journal.State invariant, a record below the
// floor, a key outside the schema, a lost marker in a journal that holds
// state, a damaged store header, and Pebble's own block-checksum failures in
// an sstable holding the journal's keys. A damaged marker is refused by
// Format too: never a reformat. (A torn WAL tail after a crash is not rot:
// see TestCrashSeams, whose multi-block batches tear at 50%.)

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/storetest"
)

// rotFixture is a DB with journals A and B formatted, a promise, a chosen
// index, a seal and records 3..6 at ballot 2.2 in each.
func rotFixture(t *testing.T) *DB {
	db := mustOpen(t, vfs.NewMem())
	t.Cleanup(func() { _ = db.Close() })
	for _, id := range []journal.ID{jA, jB} {
		j := db.Journal(id)
		if err := j.Format(markerOf(id)); err != nil {
			t.Fatal(err)
		}
		ops := []paxos.WriteOp{{Kind: paxos.OpSetPromise, Ballot: ballotOf(2, 2)}}
		for s := paxos.Slot(1); s <= 6; s++ {
			ops = append(ops, storetest.Accept(s, ballotOf(2, 2), int(id.Journal)))
		}
		ops = append(ops, paxos.WriteOp{Kind: paxos.OpTruncate, Slot: 3, State: storetest.Sealed(1, 3, 1)},
			paxos.WriteOp{Kind: paxos.OpSetChosenIndex, Slot: 4})
		if err := j.Apply(ops, true); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// wantCorruption checks err is a CorruptionError of journal id about what.
func wantCorruption(t *testing.T, err error, id journal.ID, what string, slot paxos.Slot) {
	t.Helper()
	var ce *storage.CorruptionError
	if !errors.As(err, &ce) || !errors.Is(err, storage.ErrCorruption) {
		t.Fatalf("got %v, want a CorruptionError", err)
	}
	if ce.Journal != id || !strings.Contains(ce.What, what) || ce.Slot != slot {
		t.Fatalf("got %v, want journal %s, %q, slot %d", err, id, what, slot)
	}
}

func bootFaulty(t *testing.T, db *DB, id journal.ID) []paxos.SlotBallot {
	t.Helper()
	b, err := db.Journal(id).Boot()
	if err != nil {
		t.Fatalf("boot: %v", err)
	}
	return b.Faulty
}

func TestValueDamageIsFaulty(t *testing.T) {
	for name, damage := range map[string]func(t *testing.T, db *DB){
		"bit flip": func(t *testing.T, db *DB) { db.Journal(jA).damageValue(t, 4) },
		"value lost": func(t *testing.T, db *DB) {
			if err := db.pdb.Delete(appendRecordKey(nil, jA, 4, partValue), pebble.Sync); err != nil {
				t.Fatal(err)
			}
		},
		"value of another slot": func(t *testing.T, db *DB) {
			v, _ := db.rawGet(t, appendRecordKey(nil, jA, 5, partValue))
			db.rawSet(t, appendRecordKey(nil, jA, 4, partValue), v)
		},
		"value of another journal": func(t *testing.T, db *DB) {
			v, _ := db.rawGet(t, appendRecordKey(nil, jB, 4, partValue))
			db.rawSet(t, appendRecordKey(nil, jA, 4, partValue), v)
		},
		"truncated value": func(t *testing.T, db *DB) {
			v, _ := db.rawGet(t, appendRecordKey(nil, jA, 4, partValue))
			db.rawSet(t, appendRecordKey(nil, jA, 4, partValue), v[:len(v)-1])
		},
	} {
		t.Run(name, func(t *testing.T) {
			db := rotFixture(t)
			damage(t, db)
			if got := bootFaulty(t, db, jA); !slices.Equal(got, []paxos.SlotBallot{{Slot: 4, Ballot: ballotOf(2, 2)}}) {
				t.Fatalf("faulty %v, want [(4, 2.2)]", got)
			}
			if got := bootFaulty(t, db, jB); len(got) != 0 {
				t.Fatalf("journal B faulty %v", got)
			}
		})
	}
}

func TestLastRecordLosingItsValueIsFaulty(t *testing.T) {
	db := rotFixture(t)
	if err := db.pdb.Delete(appendRecordKey(nil, jA, 6, partValue), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	b, err := db.Journal(jA).Boot()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.Faulty, []paxos.SlotBallot{{Slot: 6, Ballot: ballotOf(2, 2)}}) || b.LastSlot() != 6 {
		t.Fatalf("faulty %v last %d", b.Faulty, b.LastSlot())
	}
	sc, err := db.Journal(jA).Scrub(6, 1)
	if err != nil || len(sc) != 1 || !sc[0].Damaged {
		t.Fatalf("scrub %+v %v", sc, err)
	}
}

func TestCorruptionIsTyped(t *testing.T) {
	flip := func(key []byte, at int) func(t *testing.T, db *DB) {
		return func(t *testing.T, db *DB) {
			v, ok := db.rawGet(t, key)
			if !ok {
				t.Fatalf("no key %x", key)
			}
			v[at%len(v)] ^= 0x04
			db.rawSet(t, key, v)
		}
	}
	copyFrom := func(from, to []byte) func(t *testing.T, db *DB) {
		return func(t *testing.T, db *DB) {
			v, _ := db.rawGet(t, from)
			db.rawSet(t, to, v)
		}
	}
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, db *DB)
		what   string
		slot   paxos.Slot
	}{
		{"identity bit flip", func(t *testing.T, db *DB) { db.Journal(jA).damageIdentity(t, 4) }, "record identity", 4},
		{"identity of another slot", copyFrom(appendRecordKey(nil, jA, 5, partIdentity), appendRecordKey(nil, jA, 4, partIdentity)), "record identity", 4},
		{"identity lost", func(t *testing.T, db *DB) {
			if err := db.pdb.Delete(appendRecordKey(nil, jA, 4, partIdentity), pebble.Sync); err != nil {
				t.Fatal(err)
			}
		}, "record identity", 4},
		{"promise bit flip", flip(scalarKey(jA, kindPromise), 5), "promise", 0},
		{"promise of another journal", copyFrom(scalarKey(jB, kindPromise), scalarKey(jA, kindPromise)), "promise", 0},
		{"chosen index bit flip", flip(scalarKey(jA, kindChosen), 3), "chosen index", 0},
		{"seal bit flip", flip(scalarKey(jA, kindSeal), 30), "seal", 0},
		{"seal breaking an invariant", func(t *testing.T, db *DB) {
			k := scalarKey(jA, kindSeal)
			db.rawSet(t, k, encodeSeal(k, 3, journal.State{})) // first seq 0
		}, "seal", 0},
		{"marker bit flip", flip(scalarKey(jA, kindMarker), 40), "marker", 0},
		{"marker of another journal", copyFrom(scalarKey(jB, kindMarker), scalarKey(jA, kindMarker)), "marker", 0},
		{"marker lost", func(t *testing.T, db *DB) {
			if err := db.pdb.Delete(scalarKey(jA, kindMarker), pebble.Sync); err != nil {
				t.Fatal(err)
			}
		}, "marker", 0},
		{"record below the floor", copyFrom(appendRecordKey(nil, jA, 4, partIdentity), appendRecordKey(nil, jA, 1, partIdentity)), "below the floor", 1},
		{"key outside the schema", func(t *testing.T, db *DB) {
			db.rawSet(t, append(scalarKey(jA, 0x05), 1), []byte{1})
		}, "key", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := rotFixture(t)
			tc.damage(t, db)
			db.Journal(jA).st = scalars{} // forget the cache: as after a restart
			_, err := db.Journal(jA).Boot()
			wantCorruption(t, err, jA, tc.what, tc.slot)
			if _, err := db.Journal(jB).Boot(); err != nil {
				t.Fatalf("journal B: %v", err)
			}
			// Writes are refused too rather than built on a damaged base,
			// and a damaged marker is never reformatted.
			switch {
			case strings.Contains(tc.what, "record"), tc.what == "key", tc.what == "below the floor":
			default:
				err := db.Journal(jA).Apply([]paxos.WriteOp{storetest.Accept(9, ballotOf(2, 2), 1)}, true)
				wantCorruption(t, err, jA, tc.what, 0)
			}
			if tc.what == "marker" {
				err := db.Journal(jA).Format(markerOf(jA))
				if !errors.Is(err, storage.ErrCorruption) {
					t.Fatalf("format over a damaged marker: %v, want ErrCorruption", err)
				}
			}
		})
	}
}

func TestDamagedIdentityFailsScrubAndRewrite(t *testing.T) {
	db := rotFixture(t)
	db.Journal(jA).damageIdentity(t, 5)
	_, err := db.Journal(jA).Scrub(3, 10)
	wantCorruption(t, err, jA, "record identity", 5)
	err = db.Journal(jA).Rewrite(5, ballotOf(2, 2), storetest.Cmd(5, 1))
	wantCorruption(t, err, jA, "record identity", 5)
	if sc, err := db.Journal(jA).Scrub(3, 2); err != nil || len(sc) != 2 {
		t.Fatalf("a scrub page before the damage: %+v %v", sc, err)
	}
}

func TestStoreHeader(t *testing.T) {
	mem := vfs.NewMem()
	db := mustOpen(t, mem)
	v, _ := db.rawGet(t, keyStoreHeader)
	v[0] ^= 1
	db.rawSet(t, keyStoreHeader, v)
	_ = db.Close()
	if _, err := Open(testDir, testOptions(mem)); !errors.Is(err, storage.ErrCorruption) {
		t.Fatalf("open with a damaged header: %v, want ErrCorruption", err)
	}

	mem = vfs.NewMem()
	db = mustOpen(t, mem)
	if err := db.Journal(jA).Format(markerOf(jA)); err != nil {
		t.Fatal(err)
	}
	if err := db.pdb.Delete(keyStoreHeader, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	if _, err := Open(testDir, testOptions(mem)); !errors.Is(err, storage.ErrCorruption) {
		t.Fatalf("open of a store that lost its header: %v, want ErrCorruption", err)
	}
}

// TestPebbleCorruptionIsClassified flips a byte of the sstable holding
// journal A's records: Pebble's block checksum catches it, and the store
// reports it as a corruption of journal A while journal B boots.
func TestPebbleCorruptionIsClassified(t *testing.T) {
	// Arrange: the header, A and B each in an sstable of their own.
	mem := vfs.NewMem()
	opts := testOptions(mem)
	opts.tweak = func(o *pebble.Options) { o.DisableAutomaticCompactions = true }
	db, err := Open(testDir, opts)
	if err != nil {
		t.Fatal(err)
	}
	tables := func() []string {
		names, _ := mem.List(testDir)
		var out []string
		for _, n := range names {
			if strings.HasSuffix(n, ".sst") {
				out = append(out, n)
			}
		}
		slices.Sort(out)
		return out
	}
	var tableOf = map[journal.ID]string{}
	if err := db.pdb.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []journal.ID{jA, jB} {
		before := tables()
		j := db.Journal(id)
		if err := j.Format(markerOf(id)); err != nil {
			t.Fatal(err)
		}
		var ops []paxos.WriteOp
		for s := paxos.Slot(1); s <= 40; s++ {
			ops = append(ops, storetest.Accept(s, ballotOf(1, 1), 1))
		}
		if err := j.Apply(ops, true); err != nil {
			t.Fatal(err)
		}
		if err := db.pdb.Flush(); err != nil {
			t.Fatal(err)
		}
		after := tables()
		if len(after) != len(before)+1 {
			t.Fatalf("tables %v -> %v", before, after)
		}
		tableOf[id] = after[len(after)-1]
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Act: damage a data block of A's table.
	buf, err := mem.UnsafeGetFileDataBuffer(mem.PathJoin(testDir, tableOf[jA]))
	if err != nil {
		t.Fatal(err)
	}
	buf[64] ^= 0xff

	// Check.
	db, err = Open(testDir, opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer func() { _ = db.Close() }()
	_, err = db.Journal(jA).Boot()
	var ce *storage.CorruptionError
	if !errors.As(err, &ce) || ce.Journal != jA || !strings.Contains(ce.Detail, "pebble") {
		t.Fatalf("boot of the damaged journal: %v, want a CorruptionError of journal %s from pebble", err, jA)
	}
	t.Logf("classified: %v", err)
	if _, err := db.Journal(jB).Boot(); err != nil {
		t.Fatalf("boot of the healthy journal: %v", err)
	}
}
