package pebblestore

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage"
)

// ColdLog implements paxos.ColdSource: the journal reads back the records
// its node evicted from memory.
func (j *Journal) ColdLog() paxos.ColdLog { return j }

var _ paxos.ColdLog = (*Journal)(nil)

// ColdRecords implements paxos.ColdLog: the records at [from, to), dense,
// each checked against its identity exactly as the boot scan checks it.
//
// It takes db.readers shared and never db.mu, so the event loop's cold
// read does not wait behind the storage goroutine's fsync; Pebble reads are
// safe alongside commits and see every committed batch. A missing or
// damaged record is a *storage.CorruptionError naming the slot: the node
// only evicts durable records, so a gap is damage, never "nothing here".
func (j *Journal) ColdRecords(from, to paxos.Slot) ([]paxos.SlotCommand, error) {
	if from >= to {
		return nil, nil
	}
	db := j.db
	db.readers.RLock()
	defer db.readers.RUnlock()
	if db.unusable.Load() {
		return nil, fmt.Errorf("paros/pebblestore: cold read of journal %s: %w", j.id, storage.ErrFailed)
	}
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: recordsFrom(j.id, from), UpperBound: recordsFrom(j.id, to)})
	if err != nil {
		return nil, db.readErr(j.id, "cold read", err)
	}
	out := make([]paxos.SlotCommand, 0, to-from)
	var ident identity
	identSlot, haveIdent := paxos.Slot(0), false
	for ok := it.First(); ok; ok = it.Next() {
		key := it.Key()
		k, valid := parseKey(key)
		if !valid || k.id != j.id || k.kind != kindRecord {
			_ = it.Close()
			return nil, j.corrupt("key", 0, fmt.Errorf("key %x outside the schema", key))
		}
		want := from + paxos.Slot(len(out))
		if k.slot != want {
			_ = it.Close()
			return nil, j.corrupt("record", want, errors.New("missing from a cold read"))
		}
		raw, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return nil, db.readErr(j.id, "cold read", err)
		}
		switch k.part {
		case partIdentity:
			if ident, err = decodeIdentity(key, raw); err != nil {
				_ = it.Close()
				return nil, j.corrupt("record identity", k.slot, err)
			}
			identSlot, haveIdent = k.slot, true
		case partValue:
			if !haveIdent || identSlot != k.slot {
				_ = it.Close()
				return nil, j.corrupt("record identity", k.slot, errors.New("a value without an identity"))
			}
			// One copy per record: the decoded records alias it.
			cmd, err := checkValue(key, ident, slices.Clone(raw))
			if err != nil {
				_ = it.Close()
				return nil, j.corrupt("record value", k.slot, err)
			}
			out = append(out, paxos.SlotCommand{Slot: k.slot, Ballot: ident.ballot, Command: cmd})
			haveIdent = false
		}
	}
	if err := firstErr(it.Error(), it.Close()); err != nil {
		return nil, db.readErr(j.id, "cold read", err)
	}
	if len(out) != int(to-from) {
		return nil, j.corrupt("record", from+paxos.Slot(len(out)), errors.New("missing from a cold read"))
	}
	return out, nil
}
