//go:build parostesthooks

package pebblestore

// This file exists only in builds with the parostesthooks tag: it lets
// black-box tests (the host's, the scrubber's end-to-end ones) rot a record
// on disk as a real drive would, without reaching into the package.

import (
	"github.com/parosdb/paros/core/paxos"
)

// DamageValue rots the stored value of the record at slot: it writes the same
// bytes back with one bit flipped, straight into Pebble and synced, so the
// value fails its checksum and the identity (slot, ballot) is untouched. It is
// what rot on disk looks like to the store: Boot and Scrub report the record
// damaged. It reports whether slot held a record (identity and value). Tests
// only: build with -tags parostesthooks.
func (j *Journal) DamageValue(slot paxos.Slot) (bool, error) {
	db := j.db
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.usableLocked(); err != nil {
		return false, err
	}
	if _, found, err := j.get(appendRecordKey(nil, j.id, slot, partIdentity), "record identity"); err != nil || !found {
		return false, err
	}
	k := appendRecordKey(nil, j.id, slot, partValue)
	v, found, err := j.get(k, "record value")
	if err != nil || !found {
		return false, err
	}
	if len(v) == 0 {
		v = []byte{0} // an empty value grows a byte: its length check fails
	} else {
		v[len(v)/2] ^= 0x10
	}
	pb := db.pdb.NewBatch()
	_ = pb.Set(k, v, nil)
	if err := db.applyLocked(pb, true); err != nil {
		return false, err
	}
	return true, nil
}
