package memstore_test

// This file runs the registry conformance suite (storetest.RunRegistry)
// against memstore.RegistryStore, which crashes (Crash drops unsynced
// batches and clears a failure) and fails a sync on demand (FailNext), and
// checks what only memstore offers: a crash after SyncFirst loses the
// batches written after the first, Wipe makes a member amnesiac, and Rot is reported as
// corruption at Boot.

import (
	"errors"
	"testing"

	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/memstore"
	"github.com/parosdb/paros/storage/storetest"
)

func TestRegistryConformance(t *testing.T) {
	storetest.RunRegistry(t, func(t *testing.T) storage.RegistryStore { return memstore.NewRegistry() })
}

func TestRegistrySeamsWipeAndRot(t *testing.T) {
	// Arrange: a formatted store with one synced registration.
	j := storetest.JournalID
	s := memstore.NewRegistry()
	if err := s.Format(storetest.TestRegistryMarker()); err != nil {
		t.Fatal(err)
	}
	synced := storetest.Register(j, 1, 1, storetest.Config(quorum.Spec{Kind: quorum.KindMajority}, 1, 2, 3), false)
	if err := s.Apply([]matchmaker.WriteOp{synced}); err != nil {
		t.Fatal(err)
	}

	// Act: two batches written; the first one's sync returns; a crash.
	for _, op := range []matchmaker.WriteOp{storetest.Register(j, 2, 1, synced.Reg.Acceptors, true),
		storetest.Register(j, 3, 1, synced.Reg.Acceptors, false)} {
		if err := s.Append([]matchmaker.WriteOp{op}); err != nil {
			t.Fatal(err)
		}
	}
	s.SyncFirst()
	pending := s.Pending()
	s.Crash()

	// Check: the second batch is lost; a copy boots the same.
	b, err := s.Clone().Boot()
	if r := b.Registries[j]; err != nil || pending != 1 || len(r.Regs) != 2 || r.Effective.Ballot.Round != 2 {
		t.Fatalf("after a crash before the second sync: pending %d, %+v, %v", pending, b, err)
	}
	if err := s.Apply([]matchmaker.WriteOp{storetest.Register(j, 3, 1, synced.Reg.Acceptors, false)}); err != nil {
		t.Fatalf("the lost ballot again after the crash: %v", err)
	}
	// A registration rots: boot refuses with a corruption error.
	if !s.Rot(j, synced.Reg.Ballot) {
		t.Fatal("rot found no registration")
	}
	if _, err := s.Boot(); !errors.Is(err, storage.ErrCorruption) {
		t.Fatalf("boot of a rotted registration: %v, want ErrCorruption", err)
	}
	// The disk is wiped: an existing member is amnesiac.
	s.Wipe()
	b, err = s.Boot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storage.CheckRegistryBoot(storage.ClaimExistingMember, b.Marker, storetest.TestRegistryMarker()); !errors.Is(err, storage.ErrAmnesia) {
		t.Fatalf("existing member on a wiped disk: %v, want ErrAmnesia", err)
	}
}
