package memstore

// RegistryStore is the in-memory store of one matchmaker process (every
// journal's registry), for the simulator and tests. Like Store it keeps
// what was synced apart from what was only written: Apply writes and syncs
// (what a host does), while Append and Sync let a test stop between the two
// and Crash there. Wipe loses the disk, FailNext fails the next Apply, and
// Rot damages one durable registration so that Boot reports corruption.

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage"
)

// registryOpsMax bounds the ops of one Append: every batch has a bound.
const registryOpsMax = 1 << 16

// errInjected is the cause of an IOError that FailNext injects.
var errInjected = errors.New("paros/memstore: injected sync failure")

// regKey names one durable registration (for Rot).
type regKey struct {
	journal journal.ID
	ballot  paxos.Ballot
}

// RegistryStore is a matchmaker process's registry store in memory.
type RegistryStore struct {
	marker *storage.RegistryMarker
	// durable is what a crash keeps. Invariant: every registry in it passes
	// storage.CheckRegistryOp for each op folded in.
	durable map[journal.ID]*matchmaker.Registry
	// gen is the durable generation state (nil: the marker's founding set).
	gen *matchmaker.Generation
	// heads mirrors durable plus pending, for the op checks, and headGen
	// the generation state with pending folded in (an activation replaces
	// every head by its pending bootstrap's).
	heads   map[journal.ID]storage.RegistryHead
	headGen *matchmaker.Generation
	pending [][]matchmaker.WriteOp
	// rotted lists durable registrations whose bytes are damaged.
	rotted   map[regKey]bool
	failed   bool
	failNext bool
	// Syncs counts Sync calls that made something durable.
	Syncs int
}

var _ storage.RegistryStore = (*RegistryStore)(nil)

// NewRegistry returns an empty, unformatted registry store.
func NewRegistry() *RegistryStore {
	return &RegistryStore{
		durable: map[journal.ID]*matchmaker.Registry{},
		heads:   map[journal.ID]storage.RegistryHead{},
		rotted:  map[regKey]bool{},
	}
}

// Boot implements storage.RegistryStore: the durable registries, copied.
// A rotted registration is a *storage.CorruptionError.
func (s *RegistryStore) Boot() (*storage.RegistryBoot, error) {
	b := &storage.RegistryBoot{Registries: make(map[journal.ID]matchmaker.Registry, len(s.durable))}
	if len(s.rotted) > 0 {
		k := slices.SortedFunc(maps.Keys(s.rotted), compareRegKeys)[0]
		return nil, &storage.CorruptionError{Journal: k.journal, What: "registration",
			Detail: fmt.Sprintf("ballot %s: damaged value (rot)", k.ballot)}
	}
	for j, r := range s.durable {
		if isEmpty(r) {
			continue
		}
		b.Registries[j] = r.Clone()
	}
	if s.marker != nil {
		m := s.marker.Clone()
		b.Marker = &m
		b.Generation = s.durableGen()
	}
	return b, nil
}

// Format implements storage.RegistryStore. The marker is durable at once.
func (s *RegistryStore) Format(m storage.RegistryMarker) error {
	if s.marker != nil {
		return fmt.Errorf("%w: %s", storage.ErrFormatted, s.marker)
	}
	if err := m.Validate(); err != nil {
		return err
	}
	m = m.Clone()
	s.marker = &m
	return nil
}

// Apply implements storage.RegistryStore: Append, then Sync (every pending
// batch, in order). An injected failure loses the batch, though it reports
// the outcome as unknown (a real sync error never says absent).
func (s *RegistryStore) Apply(ops []matchmaker.WriteOp) error {
	if err := s.Append(ops); err != nil {
		return err
	}
	s.Sync()
	return nil
}

// Append checks ops and queues them as one batch; they are not durable
// until Sync. It fails as Apply does (unformatted, failed, injected).
func (s *RegistryStore) Append(ops []matchmaker.WriteOp) error {
	if len(ops) > registryOpsMax {
		panic(fmt.Sprintf("memstore: %d registry ops in one batch (max %d)", len(ops), registryOpsMax))
	}
	if s.failed {
		return storage.ErrFailed
	}
	if s.marker == nil {
		return storage.ErrRegistryUnformatted
	}
	if len(ops) == 0 {
		return nil
	}
	if s.failNext {
		s.failNext, s.failed = false, true
		return &storage.IOError{Op: "sync", Outcome: storage.OutcomeUnknown, Err: errInjected}
	}
	// Check the whole batch on staged heads before queueing any of it.
	staged := map[journal.ID]storage.RegistryHead{}
	for _, op := range ops {
		if op.IsGeneration() {
			if s.headGen == nil {
				g := s.durableGen()
				s.headGen = &g
			}
			if op.Kind == matchmaker.OpActivate {
				// Every head is replaced by the pending bootstrap's, the
				// ones this batch staged before the activation too.
				for j := range s.heads {
					staged[j] = storage.RegistryHead{}
				}
				for j := range staged {
					staged[j] = storage.RegistryHead{}
				}
				for j, r := range s.headGen.Pending.Regs {
					staged[j] = headOf(&r)
				}
			}
			matchmaker.Apply(s.headGen, map[journal.ID]*matchmaker.Registry{}, op)
			continue
		}
		h, ok := staged[op.Journal]
		if !ok {
			h = s.heads[op.Journal]
		}
		if err := storage.CheckRegistryOp(h, op); err != nil {
			panic("memstore: " + err.Error())
		}
		h.Step(op)
		staged[op.Journal] = h
	}
	maps.Copy(s.heads, staged)
	s.pending = append(s.pending, slices.Clone(ops))
	return nil
}

// Pending is the number of batches written and not yet synced.
func (s *RegistryStore) Pending() int { return len(s.pending) }

// Sync makes every pending batch durable, in order.
func (s *RegistryStore) Sync() {
	if len(s.pending) == 0 {
		return
	}
	for _, b := range s.pending {
		s.syncBatch(b)
	}
	s.pending = s.pending[:0]
	s.Syncs++
}

// SyncFirst makes only the oldest pending batch durable, as a disk that
// completes writes in order does when that batch's sync returns: later
// batches are still lost by a crash.
func (s *RegistryStore) SyncFirst() {
	if len(s.pending) == 0 {
		return
	}
	s.syncBatch(s.pending[0])
	s.pending[0] = nil
	s.pending = s.pending[1:]
	s.Syncs++
}

func (s *RegistryStore) syncBatch(ops []matchmaker.WriteOp) {
	for _, op := range ops {
		if s.gen == nil {
			g := s.durableGen()
			s.gen = &g
		}
		matchmaker.Apply(s.gen, s.durable, op)
		if op.Kind == matchmaker.OpActivate {
			s.rotted = map[regKey]bool{} // the registries were replaced
		}
		if op.Kind == matchmaker.OpWatermark {
			s.forgetRotBelow(op.Journal, s.durable[op.Journal].Watermark)
		}
	}
}

// Crash is a power loss and restart: every batch not synced is lost and an
// injected failure is cleared (the store is reopened).
func (s *RegistryStore) Crash() {
	s.pending = s.pending[:0]
	s.headGen = nil
	s.failed, s.failNext = false, false
	s.heads = make(map[journal.ID]storage.RegistryHead, len(s.durable))
	for j, r := range s.durable {
		s.heads[j] = headOf(r)
	}
}

// Wipe loses the whole disk, marker included (a replaced drive). A
// matchmaker that claims to be an existing member is then refused as
// amnesia.
func (s *RegistryStore) Wipe() { *s = *NewRegistry() }

// FailNext makes the next Apply (or Append) fail with an *IOError of
// outcome unknown; the store then refuses writes until Crash.
func (s *RegistryStore) FailNext() { s.failNext = true }

// Rot damages the durable registration of journal j at ballot b: Boot then
// reports a *storage.CorruptionError. It reports whether there was one.
func (s *RegistryStore) Rot(j journal.ID, b paxos.Ballot) bool {
	r := s.durable[j]
	if r == nil {
		return false
	}
	for _, reg := range r.Regs {
		if reg.Ballot == b {
			s.rotted[regKey{journal: j, ballot: b}] = true
			return true
		}
	}
	return false
}

// Clone returns an independent copy of the durable state (what a disk image
// taken now would boot). Pending writes and faults are not copied.
func (s *RegistryStore) Clone() *RegistryStore {
	c := NewRegistry()
	if s.marker != nil {
		m := s.marker.Clone()
		c.marker = &m
	}
	for j, r := range s.durable {
		cr := r.Clone()
		c.durable[j] = &cr
		c.heads[j] = headOf(r)
	}
	maps.Copy(c.rotted, s.rotted)
	if s.gen != nil {
		g := s.gen.Clone()
		c.gen = &g
	}
	return c
}

// forgetRotBelow drops rot of registrations a watermark deleted.
func (s *RegistryStore) forgetRotBelow(j journal.ID, w paxos.Ballot) {
	for k := range s.rotted {
		if k.journal == j && k.ballot.Less(w) {
			delete(s.rotted, k)
		}
	}
}

func headOf(r *matchmaker.Registry) storage.RegistryHead { return storage.RegistryHeadOf(*r) }

func isEmpty(r *matchmaker.Registry) bool {
	return r.Watermark.IsZero() && r.Effective.IsZero() && r.Retracted.IsZero() && len(r.Regs) == 0
}

func compareRegKeys(a, b regKey) int {
	if c := cmp.Compare(a.journal.Tenant, b.journal.Tenant); c != 0 {
		return c
	}
	if c := cmp.Compare(a.journal.Journal, b.journal.Journal); c != 0 {
		return c
	}
	return a.ballot.Compare(b.ballot)
}

// durableGen is the durable generation state: the marker's founding set
// until a handover op changed it.
func (s *RegistryStore) durableGen() matchmaker.Generation {
	if s.gen != nil {
		return s.gen.Clone()
	}
	return matchmaker.BootGeneration(s.marker.Node, s.marker.Matchmakers)
}
