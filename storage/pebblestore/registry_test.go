package pebblestore

// These tests cover the matchmaker registry store inside the DB. The
// conformance suite (storetest.RunRegistry) runs on the crashable in-memory
// filesystem beside three formatted neighbour journals whose ids equal the
// registry's journals: Crash keeps exactly the synced data, FailNext fails
// the WAL's next fsync with EIO, and every neighbour must boot unchanged at
// the end. Then the store is damaged on purpose, because corruption must be
// reported as its own error class, never a panic or a silent truncate:
// a flipped byte in a registration, a watermark, an effective configuration
// or the marker, a value moved under another key, a configuration that
// passes its CRC but does not rebuild, a registration below its watermark,
// a key outside the schema and a lost marker are each a
// *storage.CorruptionError at Boot, never a silent skip. Last, a journal's
// truncation and a registry's collection do not reach each other's keys.

import (
	"errors"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/storetest"
)

// regStore is a storage.RegistryStore over a memHarness's DB that crashes
// (memHarness.Crash) and fails a sync on demand.
type regStore struct{ *memHarness }

func (r regStore) Boot() (*storage.RegistryBoot, error)  { return r.db.Registry().Boot() }
func (r regStore) Format(m storage.RegistryMarker) error { return r.db.Registry().Format(m) }
func (r regStore) Apply(ops []matchmaker.WriteOp) error  { return r.db.Registry().Apply(ops) }
func (r regStore) FailNext()                             { r.fault.on.Store(true) }

func TestRegistryConformance(t *testing.T) {
	storetest.RunRegistry(t, func(t *testing.T) storage.RegistryStore { return regStore{newMemHarness(t)} })
}

var majority3 = storetest.Config(quorum.Spec{Kind: quorum.KindMajority}, 1, 2, 3)

// regFixture is a DB whose registry holds, for jA and jB: watermark 2.1,
// registrations 2.1 (reconfiguration, grid) and 3.1, 4.2 (beliefs).
func regFixture(t *testing.T) *DB {
	db := mustOpen(t, vfs.NewMem())
	t.Cleanup(func() { _ = db.Close() })
	r := db.Registry()
	if err := r.Format(storetest.TestRegistryMarker()); err != nil {
		t.Fatal(err)
	}
	grid := storetest.Config(quorum.Spec{Kind: quorum.KindGrid, Rows: 2, Cols: 2}, 1, 2, 3, 4)
	for _, id := range []journal.ID{jA, jB} {
		if err := r.Apply([]matchmaker.WriteOp{
			storetest.Register(id, 1, 1, majority3, false),
			storetest.Register(id, 2, 1, grid, true),
			storetest.Register(id, 3, 1, majority3, false),
			storetest.Register(id, 4, 2, majority3, false),
			storetest.Watermark(id, 2, 1),
		}); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// wantRegCorruption checks err is a CorruptionError of journal id about what.
func wantRegCorruption(t *testing.T, err error, id journal.ID, what string) {
	t.Helper()
	var ce *storage.CorruptionError
	if !errors.As(err, &ce) || !errors.Is(err, storage.ErrCorruption) {
		t.Fatalf("got %v, want a CorruptionError", err)
	}
	if ce.Journal != id || !strings.Contains(ce.What, what) {
		t.Fatalf("got %v, want journal %s, %q", err, id, what)
	}
}

func TestRegistryDamageIsCorruption(t *testing.T) {
	flip := func(key []byte, at int) func(t *testing.T, db *DB) {
		return func(t *testing.T, db *DB) {
			v, ok := db.rawGet(t, key)
			if !ok {
				t.Fatalf("no key %x", key)
			}
			v[(at+len(v))%len(v)] ^= 0x04 // at < 0 counts from the end
			db.rawSet(t, key, v)
		}
	}
	move := func(from, to []byte) func(t *testing.T, db *DB) {
		return func(t *testing.T, db *DB) {
			v, _ := db.rawGet(t, from)
			db.rawSet(t, to, v)
		}
	}
	reg31 := registrationKey(jA, ballotOf(3, 1))
	for _, tc := range []struct {
		name, what string
		journal    journal.ID
		damage     func(t *testing.T, db *DB)
	}{
		{"registration byte flipped", "registration", jA, flip(reg31, 3)},
		{"registration crc flipped", "registration", jA, flip(reg31, -1)},
		{"watermark byte flipped", "watermark", jA, flip(regScalarKey(jA, regKindWatermark), 5)},
		{"effective byte flipped", "effective", jA, flip(regScalarKey(jA, regKindEffective), 12)},
		{"marker byte flipped", "registry marker", journal.ID{}, flip(keyRegistryMarker, 2)},
		{"registration under another ballot", "registration", jA, move(reg31, registrationKey(jA, ballotOf(5, 5)))},
		{"registration of another journal", "registration", jA, move(registrationKey(jB, ballotOf(3, 1)), reg31)},
		{"configuration that does not rebuild", "registration", jA, func(t *testing.T, db *DB) {
			v, _ := db.rawGet(t, reg31)
			v[1+1+1+8*3] = 9 // quorum kind 9, resealed with a valid CRC
			db.rawSet(t, reg31, reseal(reg31, v))
		}},
		{"registration below the watermark", "registration", jA, func(t *testing.T, db *DB) {
			k := registrationKey(jA, ballotOf(1, 9))
			db.rawSet(t, k, encodeRegistration(k, paxos.Registration{Ballot: ballotOf(1, 9), Acceptors: majority3}))
		}},
		{"key outside the schema", "registry key", journal.ID{}, func(t *testing.T, db *DB) {
			db.rawSet(t, regScalarKey(jA, 0x07), []byte{1})
		}},
		{"marker lost", "registry marker", journal.ID{}, func(t *testing.T, db *DB) {
			if err := db.pdb.Delete(keyRegistryMarker, pebble.Sync); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Arrange
			db := regFixture(t)
			tc.damage(t, db)

			// Act
			_, err := db.Registry().Boot()

			// Check
			wantRegCorruption(t, err, tc.journal, tc.what)
		})
	}
}

func TestRegistryDamageRefusesWrites(t *testing.T) {
	// Arrange: jA's highest registration rots.
	db := regFixture(t)
	k := registrationKey(jA, ballotOf(4, 2))
	v, _ := db.rawGet(t, k)
	v[2] ^= 0x01
	db.rawSet(t, k, v)

	// Act: a registration above it, and one in the healthy journal.
	errA := db.Registry().Apply([]matchmaker.WriteOp{storetest.Register(jA, 5, 1, majority3, false)})
	errB := db.Registry().Apply([]matchmaker.WriteOp{storetest.Register(jB, 5, 1, majority3, false)})

	// Check: the batch that builds on rot writes nothing; the other lands.
	wantRegCorruption(t, errA, jA, "registration")
	if errB != nil {
		t.Fatalf("healthy journal: %v", errB)
	}
	if _, ok := db.rawGet(t, registrationKey(jA, ballotOf(5, 1))); ok {
		t.Fatal("a refused batch was written")
	}
	// A store that lost its marker but holds registries is never reformatted.
	lost := regFixture(t)
	if err := lost.pdb.Delete(keyRegistryMarker, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := lost.Registry().Format(storetest.TestRegistryMarker()); !errors.Is(err, storage.ErrCorruption) {
		t.Fatalf("format over registries without a marker: %v, want ErrCorruption", err)
	}
}

func TestRegistryBesideJournals(t *testing.T) {
	// Arrange: journal jA holds records and a registry of the same id.
	db := regFixture(t)
	j := db.Journal(jA)
	if err := j.Format(markerOf(jA)); err != nil {
		t.Fatal(err)
	}
	var ops []paxos.WriteOp
	for s := paxos.Slot(1); s <= 6; s++ {
		ops = append(ops, storetest.Accept(s, ballotOf(2, 2), 1))
	}
	if err := j.Apply(ops, true); err != nil {
		t.Fatal(err)
	}
	before, err := db.Registry().Boot()
	if err != nil {
		t.Fatal(err)
	}

	// Act: the journal truncates; the registry collects everything.
	if err := j.Apply([]paxos.WriteOp{{Kind: paxos.OpTruncate, Slot: 5, State: storetest.Sealed(1, 5, 1)}}, true); err != nil {
		t.Fatal(err)
	}
	mid, err := db.Registry().Boot()
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Registry().Apply([]matchmaker.WriteOp{storetest.Watermark(jA, 99, 9)}); err != nil {
		t.Fatal(err)
	}

	// Check: each kept the other's keys; only journals are listed.
	if storetest.RenderRegistries(mid.Registries) != storetest.RenderRegistries(before.Registries) {
		t.Fatalf("a truncation changed the registry:\n%s", storetest.RenderRegistries(mid.Registries))
	}
	b, err := j.Boot()
	if err != nil || len(storetest.Records(t, b)) != 2 || b.FirstSlot() != 5 {
		t.Fatalf("journal after the registry collected: %v, %s", err, storetest.Render(b))
	}
	if ids, err := db.Journals(); err != nil || len(ids) != 1 || ids[0] != jA {
		t.Fatalf("journals %v %v, want [%s]", ids, err, jA)
	}
}

// FuzzDecodeRegistration: no byte string panics the decoders, and whatever
// decodes re-encodes to the same bytes.
func FuzzDecodeRegistration(f *testing.F) {
	b := ballotOf(3, 1)
	k := registrationKey(jA, b)
	f.Add(encodeRegistration(k, paxos.Registration{Ballot: b, Acceptors: majority3, Reconfiguration: true}))
	f.Add(encodeRegistration(k, paxos.Registration{Ballot: b,
		Acceptors: storetest.Config(quorum.Spec{Kind: quorum.KindFlexible, Q1: 3, Q2: 2}, 1, 2, 3, 4)}))
	f.Add(encodeRegistryMarker(storetest.TestRegistryMarker()))
	f.Fuzz(func(t *testing.T, v []byte) {
		if reg, err := decodeRegistration(k, b, v); err == nil {
			if got := encodeRegistration(k, reg); string(got) != string(v) {
				t.Fatalf("re-encoded %x, stored %x", got, v)
			}
		}
		if reg, err := decodeEffective(k, v); err == nil {
			if got := encodeEffective(k, reg); string(got) != string(v) {
				t.Fatalf("effective re-encoded %x, stored %x", got, v)
			}
		}
		if m, err := decodeRegistryMarker(v); err == nil {
			if got := encodeRegistryMarker(m); string(got) != string(v) {
				t.Fatalf("marker re-encoded %x, stored %x", got, v)
			}
		}
	})
}
