package memstore_test

// This file runs the storage conformance suite (storage/storetest) against
// memstore: Crash drops every unsynced batch and clears an injected failure,
// RotValue is memstore's Rot, and FailNextSync is FailNext.

import (
	"errors"
	"testing"

	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/memstore"
	"github.com/parosdb/paros/storage/storetest"
)

type harness struct{ s *memstore.Store }

func (h *harness) Store() storage.LogStore       { return h.s }
func (h *harness) Crash()                        { h.s.Reopen() }
func (h *harness) RotValue(slot paxos.Slot) bool { return h.s.Rot(slot) }
func (h *harness) FailNextSync()                 { h.s.FailNext(errEIO) }

var errEIO = errors.New("injected EIO on sync")

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness { return &harness{s: memstore.New()} })
}
