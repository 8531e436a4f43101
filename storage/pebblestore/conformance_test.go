package pebblestore

// This file runs the storage conformance suite (storage/storetest) against a
// pebblestore journal on Pebble's crashable in-memory filesystem. Crash keeps
// exactly the synced data (a crash clone at 0%) and reopens the DB; RotValue
// flips a bit of one record's value; FailNextSync makes the WAL's fsync fail
// with EIO through errorfs. Three neighbour journals with adjacent ids share
// the DB and must come out of every test unchanged.

import (
	"testing"

	"github.com/parosdb/paros/storage/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness { return newMemHarness(t) })
}
