package storetest

// The boot cases: a fresh store boots empty, the format marker round-trips
// and is never rewritten, and every row of storage.CheckBoot's table holds
// with what the store reports.

import (
	"errors"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage"
)

func testFreshBoot(t *testing.T, h Harness) {
	b := boot(t, h.Store())
	if b.Marker != nil || !b.Hard.Promised.IsZero() || b.Hard.ChosenIndex != 0 || b.FirstSlot() != 1 ||
		b.SealedState() != journal.Initial() || len(Records(t, b)) != 0 || len(b.Faulty) != 0 || b.LastSlot() != 0 {
		t.Fatalf("fresh store boots as\n%s", Render(b))
	}
}

func testFormatRoundTrip(t *testing.T, h Harness) {
	formatted(t, h)
	b := crashSame(t, h)
	if b.Marker == nil || !b.Marker.Equal(TestMarker()) {
		t.Fatalf("marker %v, want %s", b.Marker, TestMarker())
	}
	if _, err := storage.CheckBoot(storage.ClaimExistingMember, b.Marker, TestMarker()); err != nil {
		t.Fatalf("check boot: %v", err)
	}
}

func testRefuseReformat(t *testing.T, h Harness) {
	bad := TestMarker()
	bad.Node = 9 // not a member
	if err := h.Store().Format(bad); !errors.Is(err, storage.ErrBadMarker) {
		t.Fatalf("format with a bad marker: %v, want ErrBadMarker", err)
	}
	s := formatted(t, h)
	other := TestMarker()
	other.Mode = journal.ModeMulti
	if err := s.Format(other); !errors.Is(err, storage.ErrFormatted) {
		t.Fatalf("second format: %v, want ErrFormatted", err)
	}
	h.Crash()
	if err := h.Store().Format(TestMarker()); !errors.Is(err, storage.ErrFormatted) {
		t.Fatalf("format after a crash: %v, want ErrFormatted", err)
	}
	b := boot(t, h.Store())
	if b.Marker == nil || !b.Marker.Equal(TestMarker()) {
		t.Fatalf("marker rewritten: %v", b.Marker)
	}
	if _, err := storage.CheckBoot(storage.ClaimFirstBoot, b.Marker, TestMarker()); !errors.Is(err, storage.ErrFormatted) {
		t.Fatalf("first boot on a formatted store: %v", err)
	}
}

// testBootDecisions walks every row of storage.CheckBoot's table with what
// the store's Boot reports.
func testBootDecisions(t *testing.T, h Harness) {
	want := TestMarker()
	other := TestMarker()
	other.Members = []paxos.NodeID{1, 2, 4}
	decide := func(claim storage.Claim, m storage.Marker) (storage.BootDecision, error) {
		return storage.CheckBoot(claim, boot(t, h.Store()).Marker, m)
	}
	if d, err := decide(storage.ClaimFirstBoot, want); err != nil || d != storage.DecideFormat {
		t.Fatalf("first boot, no marker: %v %v", d, err)
	}
	if _, err := decide(storage.ClaimExistingMember, want); !errors.Is(err, storage.ErrAmnesia) {
		t.Fatalf("existing member, no marker: %v, want ErrAmnesia", err)
	}
	formatted(t, h)
	h.Crash()
	if _, err := decide(storage.ClaimFirstBoot, want); !errors.Is(err, storage.ErrFormatted) {
		t.Fatalf("first boot, marker: %v, want ErrFormatted", err)
	}
	if d, err := decide(storage.ClaimExistingMember, want); err != nil || d != storage.DecideBoot {
		t.Fatalf("existing member, same marker: %v %v", d, err)
	}
	if _, err := decide(storage.ClaimExistingMember, other); !errors.Is(err, storage.ErrConfigMismatch) {
		t.Fatalf("existing member, other marker: %v, want ErrConfigMismatch", err)
	}
}
