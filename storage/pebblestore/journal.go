package pebblestore

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage"
)

// scalars is a journal's state as its last commit left it (synced or not:
// Pebble reads see both, and a crash reopens the whole DB).
//
// Invariant: floor >= 1 once loaded; sealed is a valid journal.State.
type scalars struct {
	loaded    bool
	formatted bool
	promise   paxos.Ballot
	chosen    paxos.Slot
	floor     paxos.Slot
	sealed    journal.State
}

// ErrUnformatted refuses a write to a journal that was never formatted: a
// journal's first write is its marker, so state never exists without one.
var ErrUnformatted = errors.New("paros/pebblestore: journal not formatted")

// Journal is one journal's storage.LogStore inside a DB.
type Journal struct {
	db *DB
	id journal.ID
	st scalars // guarded by db.mu
}

var _ storage.LogStore = (*Journal)(nil)

// ID is the journal this store holds.
func (j *Journal) ID() journal.ID { return j.id }

func (j *Journal) corrupt(what string, slot paxos.Slot, err error) error {
	return &storage.CorruptionError{Journal: j.id, What: what, Slot: slot, Detail: err.Error()}
}

// get reads one key; found is false when it is absent. The value is a copy.
func (j *Journal) get(key []byte, what string) (v []byte, found bool, err error) {
	raw, closer, err := j.db.pdb.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, j.db.readErr(j.id, what, err)
	}
	v = slices.Clone(raw)
	_ = closer.Close()
	return v, true, nil
}

// loadLocked reads the journal's scalars unless they are cached.
func (j *Journal) loadLocked() error {
	if j.st.loaded {
		return nil
	}
	st := scalars{loaded: true, floor: 1, sealed: journal.Initial()}
	for _, kind := range []byte{kindMarker, kindPromise, kindChosen, kindSeal} {
		k := scalarKey(j.id, kind)
		v, ok, err := j.get(k, kindName(kind))
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		switch kind {
		case kindMarker:
			_, err = decodeMarker(k, v, j.id)
			st.formatted = true
		case kindPromise:
			st.promise, err = decodePromise(k, v)
		case kindChosen:
			st.chosen, err = decodeChosen(k, v)
		case kindSeal:
			st.floor, st.sealed, err = decodeSeal(k, v)
		}
		if err != nil {
			return j.corrupt(kindName(kind), 0, err)
		}
	}
	if !st.formatted {
		holds, err := j.holdsAnyLocked()
		if err != nil {
			return err
		}
		if holds {
			return j.corrupt("marker", 0, errors.New("missing while the journal holds state"))
		}
	}
	j.st = st
	return nil
}

// writableLocked loads the scalars and refuses a journal never formatted.
func (j *Journal) writableLocked() error {
	if err := j.loadLocked(); err != nil {
		return err
	}
	if !j.st.formatted {
		return fmt.Errorf("%w: journal %s", ErrUnformatted, j.id)
	}
	return nil
}

// holdsAnyLocked reports whether the journal has any key at all.
func (j *Journal) holdsAnyLocked() (bool, error) {
	lower, upper := journalBounds(j.id)
	it, err := j.db.pdb.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return false, j.db.readErr(j.id, "scan", err)
	}
	holds := it.First()
	if err := firstErr(it.Error(), it.Close()); err != nil {
		return false, j.db.readErr(j.id, "scan", err)
	}
	return holds, nil
}

func kindName(kind byte) string {
	switch kind {
	case kindMarker:
		return "marker"
	case kindPromise:
		return "promise"
	case kindChosen:
		return "chosen index"
	case kindSeal:
		return "seal"
	case kindScrub:
		return "scrub cursor"
	case kindRecord:
		return "record"
	}
	return fmt.Sprintf("kind %#x", kind)
}

// Boot implements storage.LogStore. It reads every key of the journal and
// verifies each one: a damaged scalar, marker or record identity is a
// *storage.CorruptionError; a damaged or missing record value is reported as
// faulty(slot, ballot). Nothing is ever truncated or rewritten.
func (j *Journal) Boot() (*storage.BootState, error) {
	db := j.db
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.usableLocked(); err != nil {
		return nil, err
	}
	lower, upper := journalBounds(j.id)
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, db.readErr(j.id, "boot scan", err)
	}
	b := &storage.BootState{Floor: 1, Sealed: journal.Initial(), Cold: j, Scrubber: j}
	st := scalars{loaded: true, floor: 1, sealed: journal.Initial()}
	holdsState := false
	var rs recordScan
	// The dense, intact prefix at or below the durable chosen index is
	// verified here and left on disk (BootState.ColdEnd): the node folds
	// it back in pages, so boot never holds the whole retained log. The
	// scalars sort before the records, so floor and chosen index are known
	// when the first record arrives.
	var prefix storage.ColdPrefix
	started := false
	emit := func(r scanned) bool {
		if !started {
			prefix, started = storage.NewColdPrefix(b.Floor), true
		}
		if prefix.Take(r.slot, b.Hard.ChosenIndex, r.damaged) {
			return true
		}
		if r.damaged {
			b.Faulty = append(b.Faulty, paxos.SlotBallot{Slot: r.slot, Ballot: r.ident.ballot})
		} else {
			b.Records = append(b.Records, paxos.SlotCommand{Slot: r.slot, Ballot: r.ident.ballot, Command: r.cmd})
		}
		return true
	}
	err = j.scan(it, func(k parsedKey, key, v []byte) error {
		if k.kind != kindMarker {
			holdsState = true
		}
		switch k.kind {
		case kindMarker:
			m, err := decodeMarker(key, v, j.id)
			if err != nil {
				return j.corrupt("marker", 0, err)
			}
			b.Marker, st.formatted = &m, true
		case kindPromise:
			p, err := decodePromise(key, v)
			if err != nil {
				return j.corrupt("promise", 0, err)
			}
			b.Hard.Promised, st.promise = p, p
		case kindChosen:
			c, err := decodeChosen(key, v)
			if err != nil {
				return j.corrupt("chosen index", 0, err)
			}
			b.Hard.ChosenIndex, st.chosen = c, c
		case kindSeal:
			f, s, err := decodeSeal(key, v)
			if err != nil {
				return j.corrupt("seal", 0, err)
			}
			b.Floor, b.Sealed, st.floor, st.sealed = f, s, f, s
		case kindScrub:
			// A damaged scrub cursor is not corruption of the journal: it
			// holds no vote and no state, it only paces the scrubber (a
			// relaxed op the store may lose in a crash anyway). Boot reads it
			// as 0, a pass from the floor, and goes on; refusing the boot
			// would take a healthy acceptor out over a progress mark. The
			// next OpScrubCursor overwrites it.
			if c, err := decodeScrubCursor(key, v); err == nil {
				b.Cursor = c
			}
		case kindRecord:
			// Scalars sort before records, so the floor is known here.
			if k.slot < b.Floor {
				return j.corrupt("record below the floor", k.slot, fmt.Errorf("floor %d", b.Floor))
			}
			return rs.add(j, k, key, v, emit)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rs.flush(emit)
	if started && prefix.Through() >= b.Floor {
		b.ColdEnd = prefix.Through()
	}
	if b.Marker == nil && holdsState {
		// A journal that holds state was formatted; a lost marker must not
		// read as a fresh store (a first boot would reformat it).
		return nil, j.corrupt("marker", 0, errors.New("missing while the journal holds state"))
	}
	j.st = st
	return b, nil
}

// scan walks it over one journal's keys, closing it. Records reach fn in key
// order; rs.flush is the caller's duty for a trailing identity.
func (j *Journal) scan(it *pebble.Iterator, fn func(k parsedKey, key, v []byte) error) error {
	for ok := it.First(); ok; ok = it.Next() {
		key := it.Key()
		k, valid := parseKey(key)
		if !valid || k.id != j.id {
			_ = it.Close()
			return j.corrupt("key", 0, fmt.Errorf("key %x outside the schema", key))
		}
		raw, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return j.db.readErr(j.id, "value", err)
		}
		if err := fn(k, slices.Clone(key), slices.Clone(raw)); err != nil {
			_ = it.Close()
			return err
		}
	}
	if err := firstErr(it.Error(), it.Close()); err != nil {
		return j.db.readErr(j.id, "scan", err)
	}
	return nil
}

// scanned is one record as a scan found it.
type scanned struct {
	slot    paxos.Slot
	ident   identity
	cmd     journal.Command
	hash    uint32 // CRC-32C of the stored value (0 if damaged or none)
	damaged bool
}

// recordScan pairs each identity with the value that follows it.
type recordScan struct {
	pending bool
	slot    paxos.Slot
	ident   identity
	stopped bool
}

// add takes one record key; emit returns false to stop the scan.
func (rs *recordScan) add(j *Journal, k parsedKey, key, v []byte, emit func(scanned) bool) error {
	if rs.stopped {
		return nil
	}
	switch k.part {
	case partIdentity:
		if rs.pending { // the previous record lost its value
			if !emit(scanned{slot: rs.slot, ident: rs.ident, damaged: true}) {
				rs.stopped = true
				return nil
			}
		}
		id, err := decodeIdentity(key, v)
		if err != nil {
			return j.corrupt("record identity", k.slot, err)
		}
		rs.pending, rs.slot, rs.ident = true, k.slot, id
	case partValue:
		if !rs.pending || rs.slot != k.slot {
			return j.corrupt("record identity", k.slot, errors.New("a value without an identity"))
		}
		rs.pending = false
		r := scanned{slot: k.slot, ident: rs.ident}
		cmd, err := checkValue(key, rs.ident, v)
		if err != nil {
			r.damaged = true // Hash 0: only the identity survived
		} else {
			r.cmd, r.hash = cmd, storage.CRC32C(v)
		}
		if !emit(r) {
			rs.stopped = true
		}
	}
	return nil
}

// flush emits a trailing identity whose value is missing.
func (rs *recordScan) flush(emit func(scanned) bool) {
	if rs.pending && !rs.stopped {
		rs.pending = false
		emit(scanned{slot: rs.slot, ident: rs.ident, damaged: true})
	}
}

// Format implements storage.LogStore: it writes the marker in a synced
// commit. A store already formatted is refused with ErrFormatted; a damaged
// marker, or state without a marker, with ErrCorruption: never a reformat.
func (j *Journal) Format(m storage.Marker) error {
	if m.Journal != j.id {
		return fmt.Errorf("%w: marker names journal %s, store holds %s", storage.ErrBadMarker, m.Journal, j.id)
	}
	return j.db.FormatJournals([]storage.Marker{m})
}

// FormatJournals formats the store of every marker's journal in one synced
// commit, each under Format's rules: all or nothing, the first refusal
// names its journal and nothing is written. A cell formed with 10,000
// journals formats them with one fsync, not 10,000.
func (db *DB) FormatJournals(ms []storage.Marker) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.usableLocked(); err != nil {
		return err
	}
	if len(ms) == 0 {
		return nil
	}
	pb := db.pdb.NewBatch()
	staged := make([]*Journal, 0, len(ms))
	seen := make(map[journal.ID]bool, len(ms))
	for _, m := range ms {
		if seen[m.Journal] {
			_ = pb.Close()
			return fmt.Errorf("%w: journal %s formatted twice in one batch", storage.ErrBadMarker, m.Journal)
		}
		seen[m.Journal] = true
		j := db.journalLocked(m.Journal)
		if err := j.stageFormatLocked(pb, m); err != nil {
			_ = pb.Close()
			return err
		}
		staged = append(staged, j)
	}
	if err := db.applyLocked(pb, true); err != nil {
		return err
	}
	for _, j := range staged {
		j.st = scalars{loaded: true, formatted: true, floor: 1, sealed: journal.Initial()}
	}
	return nil
}

// stageFormatLocked checks that j may be formatted with m and stages its
// marker in pb.
func (j *Journal) stageFormatLocked(pb *pebble.Batch, m storage.Marker) error {
	if err := m.Validate(); err != nil {
		return err
	}
	k := scalarKey(j.id, kindMarker)
	v, found, err := j.get(k, "marker")
	if err != nil {
		return err
	}
	if found {
		old, err := decodeMarker(k, v, j.id)
		if err != nil {
			return j.corrupt("marker", 0, err)
		}
		return fmt.Errorf("%w: %s", storage.ErrFormatted, old)
	}
	holds, err := j.holdsAnyLocked()
	if err != nil {
		return err
	}
	if holds {
		return j.corrupt("marker", 0, errors.New("missing while the journal holds state"))
	}
	enc, err := encodeMarker(k, m)
	if err != nil {
		return err
	}
	_ = pb.Set(k, enc, nil)
	return nil
}

// Apply implements storage.LogStore: one Commit of one batch.
func (j *Journal) Apply(ops []paxos.WriteOp, sync bool) error {
	return j.db.Commit(Batch{Journal: j.id, Ops: ops, Sync: sync})
}

// Scrub implements storage.LogStore: it reads and checksums up to count
// records (at most scrubRecordsMax) from slot from. A damaged identity is a
// *storage.CorruptionError.
func (j *Journal) Scrub(from paxos.Slot, count int) ([]storage.ScrubEntry, error) {
	count = min(count, scrubRecordsMax)
	if count <= 0 {
		return nil, nil
	}
	db := j.db
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.usableLocked(); err != nil {
		return nil, err
	}
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: recordsFrom(j.id, from), UpperBound: recordsEnd(j.id)})
	if err != nil {
		return nil, db.readErr(j.id, "scrub", err)
	}
	var out []storage.ScrubEntry
	var rs recordScan
	emit := func(r scanned) bool {
		out = append(out, storage.ScrubEntry{Slot: r.slot, Ballot: r.ident.ballot, Hash: r.hash, Damaged: r.damaged})
		return len(out) < count
	}
	err = j.scan(it, func(k parsedKey, key, v []byte) error {
		if k.kind != kindRecord {
			return j.corrupt("key", 0, fmt.Errorf("key %x among records", key))
		}
		return rs.add(j, k, key, v, emit)
	})
	if err != nil {
		return nil, err
	}
	rs.flush(emit)
	return out, nil
}

// Rewrite implements storage.LogStore: the record at slot gets cmd as its
// value at ballot, in a synced commit. A damaged record must be rewritten at
// the ballot its identity names.
func (j *Journal) Rewrite(slot paxos.Slot, ballot paxos.Ballot, cmd journal.Command) error {
	db := j.db
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.usableLocked(); err != nil {
		return err
	}
	if err := j.writableLocked(); err != nil {
		return err
	}
	ik := appendRecordKey(nil, j.id, slot, partIdentity)
	iv, found, err := j.get(ik, "record identity")
	if err != nil {
		return err
	}
	if !found || slot < j.st.floor {
		return fmt.Errorf("paros/pebblestore: journal %s: rewrite of slot %d, which holds no record", j.id, slot)
	}
	id, err := decodeIdentity(ik, iv)
	if err != nil {
		return j.corrupt("record identity", slot, err)
	}
	vk := appendRecordKey(nil, j.id, slot, partValue)
	v, found, err := j.get(vk, "record value")
	if err != nil {
		return err
	}
	damaged := !found
	if found {
		_, verr := checkValue(vk, id, v)
		damaged = verr != nil
	}
	if damaged && id.ballot != ballot {
		return fmt.Errorf("paros/pebblestore: journal %s: rewrite of slot %d at ballot %s, record is at %s", j.id, slot, ballot, id.ballot)
	}
	pb := db.pdb.NewBatch()
	db.putRecordLocked(pb, j.id, slot, id.origin, ballot, cmd)
	return db.applyLocked(pb, true)
}
