package pebblestore

// These tests cover the generation state in the registry keyspace (the
// conformance suite checks what it means; these check the bytes). A
// flipped byte in the generation value or a pending registry, a value
// moved between a pending and an active key, a generation that decodes
// but breaks its invariants, pending registries without a pending
// bootstrap and a pending key outside the schema are each a
// *storage.CorruptionError at Boot; a batch that builds on damage writes
// nothing. The generation value stays small however many journals a
// bootstrap holds, and no byte string panics its decoder.

import (
	"errors"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage/storetest"
)

var genG2 = storetest.MatchmakerSet(2, 4, 5, 7)

// genFixture is regFixture frozen, with a decree vote for genG2 and page 0
// of 2 of a bootstrap of genG2 holding jA (watermark 2.1, registrations
// 2.1 and 3.1) and jB.
func genFixture(t *testing.T) *DB {
	db := regFixture(t)
	pend := storetest.RegistryOf(storetest.Register(jA, 2, 1, majority3, true), storetest.Register(jA, 3, 1, majority3, false),
		storetest.Watermark(jA, 2, 1))
	err := db.Registry().Apply([]matchmaker.WriteOp{
		storetest.Stop(1),
		storetest.Decree(ballotOf(2, 4), ballotOf(2, 4), genG2),
		storetest.Bootstrap(genG2, ballotOf(2, 4), 0, 2,
			matchmaker.JournalRegistry{Journal: jA, Registry: pend},
			matchmaker.JournalRegistry{Journal: jB, Registry: storetest.RegistryOf(storetest.Register(jB, 9, 2, majority3, false))}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestRegistryGenerationDamageIsCorruption(t *testing.T) {
	flip := func(key []byte, at int) func(t *testing.T, db *DB) {
		return func(t *testing.T, db *DB) {
			v, ok := db.rawGet(t, key)
			if !ok {
				t.Fatalf("no key %x", key)
			}
			v[(at+len(v))%len(v)] ^= 0x10 // at < 0 counts from the end
			db.rawSet(t, key, v)
		}
	}
	move := func(from, to []byte) func(t *testing.T, db *DB) {
		return func(t *testing.T, db *DB) {
			v, _ := db.rawGet(t, from)
			db.rawSet(t, to, v)
		}
	}
	// put writes g with the fixture's pending bootstrap, so only what g
	// breaks is wrong.
	put := func(g matchmaker.Generation) func(t *testing.T, db *DB) {
		return func(t *testing.T, db *DB) {
			g.Pending = matchmaker.Pending{Generation: 2, Origins: []matchmaker.Origin{
				{Ballot: ballotOf(2, 4), Set: genG2, Pages: 2, Held: []bool{true, false}}}}
			db.rawSet(t, keyRegistryGeneration, encodeGeneration(g))
		}
	}
	pend31 := regPartRegistrationKey(regPartPending, jA, ballotOf(3, 1))
	for _, tc := range []struct {
		name, what string
		journal    journal.ID
		damage     func(t *testing.T, db *DB)
	}{
		{"generation byte flipped", "generation", journal.ID{}, flip(keyRegistryGeneration, 12)},
		{"generation crc flipped", "generation", journal.ID{}, flip(keyRegistryGeneration, -1)},
		{"generation flags unknown", "generation", journal.ID{}, func(t *testing.T, db *DB) {
			v, _ := db.rawGet(t, keyRegistryGeneration)
			v[1] |= 0x80
			db.rawSet(t, keyRegistryGeneration, reseal(keyRegistryGeneration, v))
		}},
		{"generation not naming the matchmaker", "generation", journal.ID{}, put(matchmaker.Founding([]paxos.NodeID{4, 6}))},
		{"generation successor without a stop", "generation", journal.ID{},
			put(matchmaker.Generation{Set: matchmaker.Founding([]paxos.NodeID{4, 5, 6}).Set, Successor: genG2})},
		{"pending registration byte flipped", "pending registration", jA, flip(pend31, 2)},
		{"pending watermark byte flipped", "pending watermark", jA, flip(regPartScalarKey(regPartPending, jA, regKindWatermark), 4)},
		{"pending value under an active key", "registration", jA, move(pend31, registrationKey(jA, ballotOf(3, 1)))},
		{"active value under a pending key", "pending registration", jA, move(registrationKey(jA, ballotOf(3, 1)), pend31)},
		{"pending registration below its watermark", "pending registration", jA, func(t *testing.T, db *DB) {
			k := regPartRegistrationKey(regPartPending, jA, ballotOf(1, 9))
			db.rawSet(t, k, encodeRegistration(k, paxos.Registration{Ballot: ballotOf(1, 9), Acceptors: majority3}))
		}},
		{"pending key outside the schema", "registry key", journal.ID{}, func(t *testing.T, db *DB) {
			db.rawSet(t, regPartScalarKey(regPartPending, jA, 0x07), []byte{1})
		}},
		{"pending registries without a generation", "pending registry", jA, func(t *testing.T, db *DB) {
			rawDelete(t, db, keyRegistryGeneration)
		}},
		{"pending registries without a pending bootstrap", "pending registry", jA, func(t *testing.T, db *DB) {
			db.rawSet(t, keyRegistryGeneration, encodeGeneration(matchmaker.Founding([]paxos.NodeID{4, 5, 6})))
		}},
		{"generation without a marker", "registry marker", journal.ID{}, func(t *testing.T, db *DB) {
			rawDelete(t, db, keyRegistryMarker)
			for _, id := range []journal.ID{jA, jB} {
				for _, part := range []byte{regPartJournal, regPartPending} {
					lo, hi := regJournalBounds(part, id)
					if err := db.pdb.DeleteRange(lo, hi, nil); err != nil {
						t.Fatal(err)
					}
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Arrange
			db := genFixture(t)
			if _, err := db.Registry().Boot(); err != nil {
				t.Fatalf("the fixture does not boot: %v", err)
			}
			tc.damage(t, db)

			// Act
			_, err := db.Registry().Boot()

			// Check
			wantRegCorruption(t, err, tc.journal, tc.what)
		})
	}
}

func TestRegistryGenerationDamageRefusesWrites(t *testing.T) {
	page := func(id journal.ID) matchmaker.WriteOp {
		return storetest.Bootstrap(genG2, ballotOf(2, 4), 1, 2,
			matchmaker.JournalRegistry{Journal: id, Registry: storetest.RegistryOf(storetest.Register(id, 4, 4, majority3, false))})
	}
	t.Run("damaged generation", func(t *testing.T) {
		db := genFixture(t)
		v, _ := db.rawGet(t, keyRegistryGeneration)
		v[3] ^= 0x01
		db.rawSet(t, keyRegistryGeneration, v)

		errGen := db.Registry().Apply([]matchmaker.WriteOp{storetest.Register(jA, 7, 1, majority3, false), storetest.Chosen(genG2)})
		errReg := db.Registry().Apply([]matchmaker.WriteOp{storetest.Register(jB, 7, 1, majority3, false)})

		// The batch that builds on the generation writes nothing, its
		// registration neither; a batch without generation ops lands.
		wantRegCorruption(t, errGen, journal.ID{}, "generation")
		if _, ok := db.rawGet(t, registrationKey(jA, ballotOf(7, 1))); ok {
			t.Fatal("a refused batch was written")
		}
		if errReg != nil {
			t.Fatalf("a batch without generation ops: %v", errReg)
		}
	})
	t.Run("damaged pending registry", func(t *testing.T) {
		db := genFixture(t)
		k := regPartRegistrationKey(regPartPending, jA, ballotOf(3, 1))
		v, _ := db.rawGet(t, k)
		v[2] ^= 0x01
		db.rawSet(t, k, v)

		errA := db.Registry().Apply([]matchmaker.WriteOp{page(jA)})
		errAct := db.Registry().Apply([]matchmaker.WriteOp{page(jB), storetest.Activate(genG2)})
		errB := db.Registry().Apply([]matchmaker.WriteOp{page(jB)})

		// A page merging into the damage and an activation of it are
		// refused; a page of another journal reads only its own.
		wantRegCorruption(t, errA, jA, "pending registration")
		wantRegCorruption(t, errAct, jA, "pending registration")
		if errB != nil {
			t.Fatalf("a page of a healthy journal: %v", errB)
		}
		if _, ok := db.rawGet(t, regPartRegistrationKey(regPartPending, jA, ballotOf(4, 4))); ok {
			t.Fatal("a refused page was written")
		}
	})
}

// TestRegistryGenerationValueStaysSmall: the pending registries have keys
// of their own, so the generation value a bootstrap page rewrites does not
// grow with the journals the bootstrap holds.
func TestRegistryGenerationValueStaysSmall(t *testing.T) {
	// Arrange
	db := regFixture(t)
	const journals = 5 * matchmaker.RegistryPage
	pages := uint32(journals / matchmaker.RegistryPage)

	// Act: every page of a bootstrap of 320 journals.
	for p := range pages {
		var js []matchmaker.JournalRegistry
		for i := range matchmaker.RegistryPage {
			id := journal.ID{Tenant: 9, Journal: uint64(int(p)*matchmaker.RegistryPage + i + 1)}
			js = append(js, matchmaker.JournalRegistry{Journal: id,
				Registry: storetest.RegistryOf(storetest.Register(id, 3, 2, majority3, true))})
		}
		if err := db.Registry().Apply([]matchmaker.WriteOp{storetest.Bootstrap(genG2, ballotOf(2, 4), p, pages, js...)}); err != nil {
			t.Fatal(err)
		}
	}

	// Check
	v, _ := db.rawGet(t, keyRegistryGeneration)
	b, err := db.Registry().Boot()
	if err != nil {
		t.Fatal(err)
	}
	if len(v) > 200 || len(b.Generation.Pending.Regs) != journals || !b.Generation.Pending.Complete(genG2) {
		t.Fatalf("generation value of %d bytes, %d pending journals, complete %t", len(v), len(b.Generation.Pending.Regs),
			b.Generation.Pending.Complete(genG2))
	}
}

// genSamples are generation states the matchmaker writes, one of each
// shape.
func genSamples() []matchmaker.Generation {
	founding := matchmaker.Founding([]paxos.NodeID{4, 5, 6})
	held := make([]bool, 11)
	held[0], held[9] = true, true
	return []matchmaker.Generation{
		founding,
		{},
		{Set: founding.Set, Stopped: true, Successor: genG2,
			Decree: paxos.DecreeAcceptor[matchmaker.Set]{Promised: ballotOf(3, 6),
				Vote: paxos.DecreeVote[matchmaker.Set]{Ballot: ballotOf(2, 4), Value: genG2}}},
		{Pending: matchmaker.Pending{Generation: 2, Origins: []matchmaker.Origin{
			{Ballot: ballotOf(1, 4), Set: genG2, Pages: 8, Held: make([]bool, 8)},
			{Ballot: ballotOf(2, 7), Set: genG2, Pages: 11, Held: held},
		}}},
	}
}

func TestGenerationRoundTrip(t *testing.T) {
	for i, g := range genSamples() {
		got, err := decodeGeneration(encodeGeneration(g))
		if err != nil {
			t.Fatalf("sample %d: %v", i, err)
		}
		if a, b := storetest.RenderGeneration(got), storetest.RenderGeneration(g); a != b {
			t.Fatalf("sample %d decodes to\n%swant\n%s", i, a, b)
		}
	}
}

// FuzzDecodeGeneration: no byte string panics the decoder or the boot's
// Validate, and whatever decodes re-encodes to the same bytes. Each input
// is tried as it is and resealed with a valid CRC, so the fields behind
// the checksum are fuzzed too.
func FuzzDecodeGeneration(f *testing.F) {
	for _, g := range genSamples() {
		f.Add(encodeGeneration(g))
	}
	f.Add(encodeRegistryMarker(storetest.TestRegistryMarker()))
	f.Fuzz(func(t *testing.T, v []byte) {
		for _, v := range [][]byte{v, reseal(keyRegistryGeneration, v)} {
			g, err := decodeGeneration(v)
			if err != nil {
				if !errors.Is(err, errValue) {
					t.Fatalf("error %v is not a bad value", err)
				}
				continue
			}
			_ = g.Validate(5)
			if got := encodeGeneration(g); string(got) != string(v) {
				t.Fatalf("re-encoded %x, stored %x", got, v)
			}
		}
	})
}

func rawDelete(t *testing.T, db *DB, key []byte) {
	t.Helper()
	if err := db.pdb.Delete(key, pebble.Sync); err != nil {
		t.Fatalf("raw delete: %v", err)
	}
}
