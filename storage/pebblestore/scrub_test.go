package pebblestore

// These tests check the scrubber's pieces of the disk store that the
// conformance suite cannot see: a scrub cursor that fails its checksum
// (flipped, truncated, or misdirected from another key) is not corruption of
// the journal, so boot reads it as 0 and goes on with every other piece of
// state as it was; an OpRewrite writes a record exactly as an accept does
// (origin accept); and DeleteJournal takes the scrub cursor with the rest of
// the journal's prefix, leaving its neighbour's alone. Each test damages or
// reads keys in place through the raw hooks of harness_test.go.

import (
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage/storetest"
)

func TestDamagedScrubCursorReadsAsZero(t *testing.T) {
	ck := scalarKey(jA, kindScrub)
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, db *DB)
	}{
		{"bit flip", func(t *testing.T, db *DB) {
			v, _ := db.rawGet(t, ck)
			v[4] ^= 0x02
			db.rawSet(t, ck, v)
		}},
		{"truncated", func(t *testing.T, db *DB) {
			v, _ := db.rawGet(t, ck)
			db.rawSet(t, ck, v[:len(v)-1])
		}},
		{"the chosen index's bytes", func(t *testing.T, db *DB) {
			v, _ := db.rawGet(t, scalarKey(jA, kindChosen))
			db.rawSet(t, ck, v)
		}},
		{"another journal's cursor", func(t *testing.T, db *DB) {
			v, _ := db.rawGet(t, scalarKey(jB, kindScrub))
			db.rawSet(t, ck, v)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := rotFixture(t)
			writeCursor(t, db, jA, 5)
			writeCursor(t, db, jB, 4)
			before, err := db.Journal(jA).Boot()
			if err != nil || before.ScrubCursor() != 5 {
				t.Fatalf("boot before the damage: cursor %d, %v", before.ScrubCursor(), err)
			}

			tc.damage(t, db)
			db.Journal(jA).st = scalars{} // forget the cache: as after a restart
			b, err := db.Journal(jA).Boot()

			if err != nil {
				t.Fatalf("boot with a damaged scrub cursor: %v, want it read as 0", err)
			}
			if b.ScrubCursor() != 0 {
				t.Fatalf("damaged scrub cursor read as %d, want 0", b.ScrubCursor())
			}
			if got, want := storetest.Render(b), storetest.Render(before); got != want {
				t.Fatalf("the rest of the journal changed:\n%s\nwant:\n%s", got, want)
			}
			if c, err := db.Journal(jB).Boot(); err != nil || c.ScrubCursor() != 4 {
				t.Fatalf("journal B: cursor %d, %v", c.ScrubCursor(), err)
			}
			// The next cursor written overwrites the damaged one.
			writeCursor(t, db, jA, 6)
			if b, err := db.Journal(jA).Boot(); err != nil || b.ScrubCursor() != 6 {
				t.Fatalf("after a new cursor: %d, %v", b.ScrubCursor(), err)
			}
		})
	}
}

func TestRewriteWritesAnAccept(t *testing.T) {
	db := rotFixture(t)
	// Slot 5 as a learned record, then rotted and rewritten by the scrubber.
	learned := paxos.WriteOp{Kind: paxos.OpLearned, Slot: 5, Ballot: ballotOf(3, 1), Command: storetest.Cmd(5, 9)}
	if err := db.Journal(jA).Apply([]paxos.WriteOp{learned}, true); err != nil {
		t.Fatal(err)
	}
	db.Journal(jA).damageValue(t, 5)

	rewrite := learned
	rewrite.Kind = paxos.OpRewrite
	if err := db.Journal(jA).Apply([]paxos.WriteOp{rewrite}, true); err != nil {
		t.Fatal(err)
	}

	ik := appendRecordKey(nil, jA, 5, partIdentity)
	iv, _ := db.rawGet(t, ik)
	id, err := decodeIdentity(ik, iv)
	if err != nil || id.origin != originAccept || id.ballot != ballotOf(3, 1) {
		t.Fatalf("identity after a rewrite: %+v %v, want origin accept at 3.1", id, err)
	}
	vk := appendRecordKey(nil, jA, 5, partValue)
	vv, _ := db.rawGet(t, vk)
	if cmd, err := checkValue(vk, id, vv); err != nil || !cmd.Equal(storetest.Cmd(5, 9)) {
		t.Fatalf("value after a rewrite: %s %v", cmd, err)
	}
}

func TestDeleteJournalDropsTheScrubCursor(t *testing.T) {
	db := mustOpen(t, vfs.NewMem())
	defer func() { _ = db.Close() }()
	for _, id := range []journal.ID{jA, jB} {
		if err := db.Journal(id).Format(markerOf(id)); err != nil {
			t.Fatal(err)
		}
		if err := db.Journal(id).Apply([]paxos.WriteOp{storetest.Accept(1, ballotOf(1, 1), 1)}, true); err != nil {
			t.Fatal(err)
		}
	}
	writeCursor(t, db, jA, 7)
	writeCursor(t, db, jB, 8)

	if err := db.DeleteJournal(jA); err != nil {
		t.Fatalf("delete: %v", err)
	}

	if _, found := db.rawGet(t, scalarKey(jA, kindScrub)); found {
		t.Fatal("the scrub cursor survived DeleteJournal")
	}
	if b, err := db.Journal(jA).Boot(); err != nil || b.Marker != nil || b.ScrubCursor() != 0 {
		t.Fatalf("boot of a deleted journal: cursor %d, %v", b.ScrubCursor(), err)
	}
	if b, err := db.Journal(jB).Boot(); err != nil || b.ScrubCursor() != 8 || b.Marker == nil {
		t.Fatalf("neighbour after the delete: cursor %d, %v", b.ScrubCursor(), err)
	}
}

// writeCursor writes journal id's scrub cursor in a synced commit.
func writeCursor(t *testing.T, db *DB, id journal.ID, cursor paxos.Slot) {
	t.Helper()
	if err := db.Journal(id).Apply([]paxos.WriteOp{{Kind: paxos.OpScrubCursor, Slot: cursor}}, true); err != nil {
		t.Fatalf("write the scrub cursor of %s: %v", id, err)
	}
}
