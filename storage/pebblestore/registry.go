package pebblestore

// The matchmaker registry store (storage.RegistryStore) inside the DB: its
// key schema and value formats are in registry_format.go.

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage"
)

// Registry is the storage.RegistryStore of a matchmaker process, inside a
// DB. It holds no state of its own: every Apply reads what it builds on, so
// handles are interchangeable and a crash leaves nothing stale.
type Registry struct{ db *DB }

var _ storage.RegistryStore = (*Registry)(nil)

// Registry returns the matchmaker registry store of the DB.
func (db *DB) Registry() *Registry { return &Registry{db: db} }

func regCorrupt(id journal.ID, what string, err error) error {
	return &storage.CorruptionError{Journal: id, What: what, Detail: err.Error()}
}

// getLocked reads one key; found is false when it is absent. The value is a
// copy.
func (r *Registry) getLocked(key []byte, id journal.ID, what string) (v []byte, found bool, err error) {
	raw, closer, err := r.db.pdb.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, r.db.readErr(id, what, err)
	}
	v = slices.Clone(raw)
	_ = closer.Close()
	return v, true, nil
}

// markerLocked reads the registry marker (nil: none).
func (r *Registry) markerLocked() (*storage.RegistryMarker, error) {
	v, found, err := r.getLocked(keyRegistryMarker, journal.ID{}, "registry marker")
	if err != nil || !found {
		return nil, err
	}
	m, err := decodeRegistryMarker(v)
	if err != nil {
		return nil, regCorrupt(journal.ID{}, "registry marker", err)
	}
	return &m, nil
}

// scanLocked walks the keys in [lower, upper) in order (only the last one
// with lastOnly), closing the iterator; fn gets copies.
func (r *Registry) scanLocked(lower, upper []byte, lastOnly bool, fn func(key, v []byte) error) error {
	it, err := r.db.pdb.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return r.db.readErr(journal.ID{}, "registry scan", err)
	}
	step, ok := it.Next, it.First()
	if lastOnly {
		step, ok = func() bool { return false }, it.Last()
	}
	for ; ok; ok = step() {
		raw, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return r.db.readErr(journal.ID{}, "registry value", err)
		}
		if err := fn(slices.Clone(it.Key()), slices.Clone(raw)); err != nil {
			_ = it.Close()
			return err
		}
	}
	if err := firstErr(it.Error(), it.Close()); err != nil {
		return r.db.readErr(journal.ID{}, "registry scan", err)
	}
	return nil
}

// Boot implements storage.RegistryStore. It reads and verifies every key of
// the registry keyspace: a damaged marker, watermark, effective
// configuration, registration or generation, a key outside the schema, a
// registration below its watermark, a pending registry without a pending
// bootstrap, a generation state that fails Generation.Validate, and
// registries without a marker are each a *storage.CorruptionError naming
// the journal. Nothing is rewritten.
func (r *Registry) Boot() (*storage.RegistryBoot, error) {
	db := r.db
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.usableLocked(); err != nil {
		return nil, err
	}
	b := &storage.RegistryBoot{}
	regs := map[journal.ID]*matchmaker.Registry{}
	pending := map[journal.ID]*matchmaker.Registry{}
	var gen *matchmaker.Generation
	err := r.scanLocked([]byte{keyspaceRegistry}, []byte{keyspaceRegistry + 1}, false, func(key, v []byte) error {
		switch string(key) {
		case string(keyRegistryMarker):
			m, err := decodeRegistryMarker(v)
			if err != nil {
				return regCorrupt(journal.ID{}, "registry marker", err)
			}
			b.Marker = &m
			return nil
		case string(keyRegistryGeneration):
			g, err := decodeGeneration(v)
			if err != nil {
				return regCorrupt(journal.ID{}, "generation", err)
			}
			gen = &g
			return nil
		}
		k, ok := parseRegKey(key)
		if !ok {
			return regCorrupt(journal.ID{}, "registry key", fmt.Errorf("key %x outside the schema", key))
		}
		if k.part == regPartJournal {
			return foldRegKey(regs, k, key, v)
		}
		// The generation key sorts before every pending key.
		if gen == nil || gen.Pending.Generation == 0 {
			return regCorrupt(k.id, "pending registry", errors.New("held without a pending bootstrap"))
		}
		return foldRegKey(pending, k, key, v)
	})
	if err != nil {
		return nil, err
	}
	if b.Marker == nil && (len(regs) > 0 || gen != nil) {
		// Registries exist only after a format: a lost marker must not read
		// as a fresh store (a first boot would reformat it).
		return nil, regCorrupt(journal.ID{}, "registry marker", errors.New("missing while the store holds registries"))
	}
	if b.Marker != nil {
		b.Generation = matchmaker.BootGeneration(b.Marker.Node, b.Marker.Matchmakers)
		if gen != nil {
			b.Generation = *gen
		}
		if b.Generation.Pending.Generation != 0 {
			b.Generation.Pending.Regs = make(map[journal.ID]matchmaker.Registry, len(pending))
			for id, reg := range pending {
				b.Generation.Pending.Regs[id] = *reg
			}
		}
		if err := b.Generation.Validate(b.Marker.Node); err != nil {
			return nil, regCorrupt(journal.ID{}, "generation", err)
		}
	}
	b.Registries = make(map[journal.ID]matchmaker.Registry, len(regs))
	for id, reg := range regs {
		b.Registries[id] = *reg
	}
	return b, nil
}

// Format implements storage.RegistryStore: it writes the marker in a synced
// commit. A store already formatted is refused with ErrFormatted; a damaged
// marker, or registries without one, with ErrCorruption: never a reformat.
func (r *Registry) Format(m storage.RegistryMarker) error {
	if err := m.Validate(); err != nil {
		return err
	}
	db := r.db
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.usableLocked(); err != nil {
		return err
	}
	old, err := r.markerLocked()
	if err != nil {
		return err
	}
	if old != nil {
		return fmt.Errorf("%w: %s", storage.ErrFormatted, old)
	}
	// Registries without a marker: the marker was lost, not never written.
	holds := false
	err = r.scanLocked([]byte{keyspaceRegistry, regPartJournal}, []byte{keyspaceRegistry + 1}, true, func(_, _ []byte) error {
		holds = true
		return nil
	})
	if err != nil {
		return err
	}
	if holds {
		return regCorrupt(journal.ID{}, "registry marker", errors.New("missing while the store holds registries"))
	}
	pb := db.pdb.NewBatch()
	_ = pb.Set(keyRegistryMarker, encodeRegistryMarker(m), nil)
	return db.applyLocked(pb, true)
}

// Apply implements storage.RegistryStore: ops become one synced Pebble
// batch. A registration is a key of its own; a raised watermark is a range
// delete of the registrations below it with the new watermark; a newer
// reconfiguration rewrites the effective configuration. Generation ops are
// staged on the generation state (genStage), which is written once after
// the last op; a bootstrap page rewrites its journals' pending registries,
// and an activation replaces every registry by them (the ops after it
// build on those, never on the disk). An unformatted store refuses with
// storage.ErrRegistryUnformatted; a damaged key the batch builds on with a
// *storage.CorruptionError; either way nothing is written.
func (r *Registry) Apply(ops []matchmaker.WriteOp) error {
	if len(ops) > registryOpsMax {
		panic(fmt.Sprintf("pebblestore: %d registry ops in one batch (max %d)", len(ops), registryOpsMax))
	}
	db := r.db
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.usableLocked(); err != nil {
		return err
	}
	m, err := r.markerLocked()
	if err != nil {
		return err
	}
	if m == nil {
		return storage.ErrRegistryUnformatted
	}
	heads := map[journal.ID]*storage.RegistryHead{}
	var st *genStage
	activated := false // the registries on disk are replaced: read none
	pb := db.pdb.NewBatch()
	for _, op := range ops {
		if op.IsGeneration() {
			if st == nil {
				if st, err = r.genStageLocked(m); err != nil {
					_ = pb.Close()
					return err
				}
			}
			regs, err := r.stageGenerationLocked(pb, st, op)
			if err != nil {
				_ = pb.Close()
				return err
			}
			if op.Kind == matchmaker.OpActivate {
				activated = true
				heads = make(map[journal.ID]*storage.RegistryHead, len(regs))
				for id, reg := range regs {
					h := storage.RegistryHeadOf(*reg)
					heads[id] = &h
				}
			}
			continue
		}
		h := heads[op.Journal]
		if h == nil {
			h = &storage.RegistryHead{} // an unset journal: CheckRegistryOp refuses it
			if op.Journal.IsSet() && !activated {
				if h, err = r.headLocked(op.Journal); err != nil {
					_ = pb.Close()
					return err
				}
			}
			heads[op.Journal] = h
		}
		if err := storage.CheckRegistryOp(*h, op); err != nil {
			panic("pebblestore: " + err.Error())
		}
		raised, effective := h.Step(op)
		switch {
		case op.Kind == matchmaker.OpRegister:
			k := registrationKey(op.Journal, op.Reg.Ballot)
			_ = pb.Set(k, encodeRegistration(k, op.Reg), nil)
			if effective {
				k := regScalarKey(op.Journal, regKindEffective)
				_ = pb.Set(k, encodeEffective(k, op.Reg), nil)
			}
		case op.Kind == matchmaker.OpRetract:
			// The highest retracted ballot is a scalar of its own: the
			// head's highest counts it, so nothing registers at or below
			// it again (the retracted registration may have been the
			// highest).
			_ = pb.Delete(registrationKey(op.Journal, op.Reg.Ballot), nil)
			if h.Retracted.Less(op.Reg.Ballot) {
				h.Retracted = op.Reg.Ballot
				k := regScalarKey(op.Journal, regKindRetracted)
				_ = pb.Set(k, encodeWatermark(k, op.Reg.Ballot), nil)
			}
		case raised:
			_ = pb.DeleteRange(registrationKey(op.Journal, paxos.Ballot{}), registrationKey(op.Journal, op.Watermark), nil)
			k := regScalarKey(op.Journal, regKindWatermark)
			_ = pb.Set(k, encodeWatermark(k, op.Watermark), nil)
		}
	}
	if st != nil {
		_ = pb.Set(keyRegistryGeneration, encodeGeneration(st.gen), nil)
	}
	if pb.Empty() {
		_ = pb.Close()
		return nil
	}
	return db.applyLocked(pb, true)
}

// headLocked reads what Apply builds on for journal id: its watermark, its
// effective ballot and its highest registration, each verified.
func (r *Registry) headLocked(id journal.ID) (*storage.RegistryHead, error) {
	h := &storage.RegistryHead{}
	wk := regScalarKey(id, regKindWatermark)
	v, found, err := r.getLocked(wk, id, "watermark")
	if err != nil {
		return nil, err
	}
	if found {
		if h.Watermark, err = decodeWatermark(wk, v); err != nil {
			return nil, regCorrupt(id, "watermark", err)
		}
	}
	ek := regScalarKey(id, regKindEffective)
	if v, found, err = r.getLocked(ek, id, "effective configuration"); err != nil {
		return nil, err
	}
	if found {
		eff, err := decodeEffective(ek, v)
		if err != nil {
			return nil, regCorrupt(id, "effective configuration", err)
		}
		h.Effective = eff.Ballot
	}
	err = r.scanLocked(registrationKey(id, paxos.Ballot{}), registrationsEnd(id), true, func(key, v []byte) error {
		k, ok := parseRegKey(key)
		if !ok || k.part != regPartJournal || k.id != id || k.kind != regKindRegistration {
			return regCorrupt(id, "registry key", fmt.Errorf("key %x outside the schema", key))
		}
		if _, err := decodeRegistration(key, k.ballot, v); err != nil {
			return regCorrupt(id, "registration", fmt.Errorf("ballot %s: %w", k.ballot, err))
		}
		if k.ballot.Less(h.Watermark) {
			return regCorrupt(id, "registration", fmt.Errorf("ballot %s below the watermark %s", k.ballot, h.Watermark))
		}
		h.Highest = k.ballot
		return nil
	})
	if err != nil {
		return nil, err
	}
	rk := regScalarKey(id, regKindRetracted)
	if v, found, err = r.getLocked(rk, id, "retracted ballot"); err != nil {
		return nil, err
	}
	if found {
		if h.Retracted, err = decodeWatermark(rk, v); err != nil {
			return nil, regCorrupt(id, "retracted ballot", err)
		}
		if h.Highest.Less(h.Retracted) && !h.Retracted.Less(h.Watermark) {
			h.Highest = h.Retracted
		}
	}
	return h, nil
}
