//go:build parostesthooks

package pebblestore

// This file checks the parostesthooks hook DamageValue (run it with
// go test -tags parostesthooks): it rots exactly one record's value on disk,
// synced, as the harness's damageValue does, so boot reports the record
// faulty at its ballot, a scrub reports it damaged, the damage survives a
// crash, and a slot without a record is left alone.

import (
	"testing"

	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage/storetest"
)

func TestDamageValueHook(t *testing.T) {
	h := newMemHarness(t)
	j := h.db.Journal(storetest.JournalID)
	if err := j.Format(storetest.TestMarker()); err != nil {
		t.Fatal(err)
	}
	b2 := ballotOf(2, 2)
	if err := j.Apply([]paxos.WriteOp{storetest.Accept(1, b2, 1), storetest.Accept(2, b2, 1)}, true); err != nil {
		t.Fatal(err)
	}

	ok, err := j.DamageValue(2)
	missing, merr := j.DamageValue(9)
	h.Crash() // the damage was synced: it is on disk

	if !ok || err != nil || missing || merr != nil {
		t.Fatalf("DamageValue(2) = %v %v, DamageValue(9) = %v %v", ok, err, missing, merr)
	}
	b, err := h.db.Journal(storetest.JournalID).Boot()
	if err != nil {
		t.Fatalf("boot: %v", err)
	}
	if len(b.Faulty) != 1 || b.Faulty[0] != (paxos.SlotBallot{Slot: 2, Ballot: b2}) || len(storetest.Records(t, b)) != 1 {
		t.Fatalf("after DamageValue(2):\n%s", storetest.Render(b))
	}
	page, err := b.ScrubLog().Scrub(1, 5)
	if err != nil || len(page) != 2 || page[0].Damaged || !page[1].Damaged || page[1].Ballot != b2 || page[1].Hash != 0 {
		t.Fatalf("scrub after DamageValue(2): %+v %v", page, err)
	}
}
