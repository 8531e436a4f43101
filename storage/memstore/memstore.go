// Package memstore is a deterministic in-memory store for one journal. It
// keeps what was synced apart from what was only written, so a test (and
// later the simulator) can crash a node at a durability seam and boot it from
// exactly what a real disk would have kept.
//
// Writes land in a pending list; Sync makes every pending batch durable in
// order; Crash drops the pending list. The paxos.Storage methods read the
// durable state only, which is what a node boots from.
package memstore

import (
	"fmt"
	"maps"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage"
)

type rec struct {
	ballot paxos.Ballot
	cmd    journal.Command
}

// state is one image of the store (the durable one).
//
// Invariant: every slot of records and faulty is in [floor, last]; last
// bounds the slots from above (a truncation may leave it past every one).
type state struct {
	marker  *storage.Marker
	promise paxos.Ballot
	chosen  paxos.Slot
	floor   paxos.Slot
	sealed  journal.State
	records map[paxos.Slot]rec
	faulty  map[paxos.Slot]paxos.Ballot
	// last is at or above every slot held (Scrub walks up to it).
	last paxos.Slot
	// scrub is the scrub cursor (OpScrubCursor); a truncation keeps it.
	scrub paxos.Slot
}

// Store is one journal's in-memory store.
type Store struct {
	durable state
	pending [][]paxos.WriteOp
	// failed: an injected write or sync error; the store refuses writes
	// until Reopen, like a real one after fsyncgate.
	failed   bool
	failNext error
	// Syncs counts Sync calls that made something durable.
	Syncs int
	// ColdReads counts ColdRecords calls.
	ColdReads int
}

// New returns an empty store (a fresh journal).
func New() *Store {
	return &Store{durable: state{floor: 1, sealed: journal.Initial(), records: map[paxos.Slot]rec{}}}
}

// Append queues one ordered batch of ops; it is not durable until Sync.
// The batch slice is copied (a node reuses its Ready buffers).
func (s *Store) Append(ops []paxos.WriteOp) {
	if len(ops) == 0 {
		return
	}
	s.pending = append(s.pending, slices.Clone(ops))
}

// Pending is the number of batches written and not yet synced.
func (s *Store) Pending() int { return len(s.pending) }

// PendingFirst is the oldest batch written and not yet synced: the one
// SyncFirst makes durable next (nil when none). It is the store's own
// slice, for audits to read before the sync, never to change.
func (s *Store) PendingFirst() []paxos.WriteOp {
	if len(s.pending) == 0 {
		return nil
	}
	return s.pending[0]
}

// SyncFirst makes only the oldest pending batch durable, as a disk that
// completes writes in order does when that batch's sync returns: batches
// written after it are not yet on disk (nor readable by a cold read) and
// a crash still loses them.
func (s *Store) SyncFirst() {
	if len(s.pending) == 0 {
		return
	}
	for _, op := range s.pending[0] {
		s.durable.apply(op)
	}
	s.pending[0] = nil
	s.pending = s.pending[1:]
	s.Syncs++
}

// Sync makes every pending batch durable, in order.
func (s *Store) Sync() {
	if len(s.pending) == 0 {
		return
	}
	for _, b := range s.pending {
		for _, op := range b {
			s.durable.apply(op)
		}
	}
	s.pending = s.pending[:0]
	s.Syncs++
}

// Crash drops everything written since the last Sync.
func (s *Store) Crash() { s.pending = s.pending[:0] }

// Clone returns an independent copy of the durable state (what a disk image
// taken now would boot). Pending writes are not copied.
func (s *Store) Clone() *Store {
	d := s.durable
	d.records = maps.Clone(d.records)
	d.faulty = maps.Clone(d.faulty)
	if d.marker != nil {
		m := *d.marker
		m.Members = slices.Clone(m.Members)
		d.marker = &m
	}
	return &Store{durable: d}
}

// Wipe loses the whole disk, format marker included (a replaced or wiped
// drive). A member booting from it must be refused as amnesia.
func (s *Store) Wipe() {
	*s = *New()
}

// FailNext makes the next Apply fail with err (outcome unknown when it was a
// sync). The store then refuses writes until Reopen.
func (s *Store) FailNext(err error) { s.failNext = err }

// Reopen clears a failure, as reopening a real store after a crash does;
// unsynced writes are dropped.
func (s *Store) Reopen() {
	s.Crash()
	s.failed, s.failNext = false, nil
}

// Boot implements storage.LogStore: the durable state as the core sees it.
func (s *Store) Boot() (*storage.BootState, error) {
	b := &storage.BootState{Hard: s.InitialState(), Floor: s.durable.floor, Sealed: s.durable.sealed,
		Faulty: s.FaultyEntries(), Cold: s, Scrubber: s, Cursor: s.durable.scrub}
	// Like the Pebble store: the dense, intact prefix at or below the
	// chosen index stays "on disk" (read back through ColdRecords).
	prefix := storage.NewColdPrefix(s.durable.floor)
	for _, r := range s.Records() {
		_, damaged := s.durable.faulty[r.Slot]
		if !prefix.Take(r.Slot, s.durable.chosen, damaged) {
			b.Records = append(b.Records, r)
		}
	}
	if prefix.Through() >= s.durable.floor {
		b.ColdEnd = prefix.Through()
	}
	if s.durable.marker != nil {
		m := *s.durable.marker
		m.Members = slices.Clone(m.Members)
		b.Marker = &m
	}
	return b, nil
}

// Format implements storage.LogStore. The marker is durable at once.
func (s *Store) Format(m storage.Marker) error {
	if s.durable.marker != nil {
		return fmt.Errorf("%w: %s", storage.ErrFormatted, s.durable.marker)
	}
	if err := m.Validate(); err != nil {
		return err
	}
	m.Members = slices.Clone(m.Members)
	s.durable.marker = &m
	return nil
}

// Apply implements storage.LogStore: the batch is appended, and synced
// (with every earlier batch) when sync is set.
func (s *Store) Apply(ops []paxos.WriteOp, sync bool) error {
	if s.failed {
		return storage.ErrFailed
	}
	if err := s.failNext; err != nil {
		s.failNext, s.failed = nil, true
		outcome := storage.OutcomeLost
		if sync {
			outcome = storage.OutcomeUnknown
		}
		return &storage.IOError{Op: "sync", Outcome: outcome, Err: err}
	}
	s.Append(ops)
	if sync {
		s.Sync()
	}
	return nil
}

// Rewrite implements storage.LogStore: a damaged or healthy record at slot
// gets cmd as its value, keeping ballot. Durable at once.
func (s *Store) Rewrite(slot paxos.Slot, ballot paxos.Ballot, cmd journal.Command) error {
	if s.failed {
		return storage.ErrFailed
	}
	_, held := s.durable.records[slot]
	fb, faulty := s.durable.faulty[slot]
	if !held && !faulty {
		return fmt.Errorf("paros/memstore: rewrite of slot %d, which holds no record", slot)
	}
	if faulty && fb != ballot {
		return fmt.Errorf("paros/memstore: rewrite of slot %d at ballot %s, record is at %s", slot, ballot, fb)
	}
	s.durable.records[slot] = rec{ballot: ballot, cmd: cmd}
	delete(s.durable.faulty, slot)
	return nil
}

var _ storage.LogStore = (*Store)(nil)

func (st *state) apply(op paxos.WriteOp) {
	switch op.Kind {
	case paxos.OpSetPromise:
		if op.Ballot.Less(st.promise) {
			panic(fmt.Sprintf("memstore: promise lowered %s -> %s", st.promise, op.Ballot))
		}
		st.promise = op.Ballot
	case paxos.OpAccept, paxos.OpLearned, paxos.OpRewrite:
		// A rewrite is physically an accept: the same record written again
		// over its damaged copy.
		if op.Slot >= st.floor {
			st.records[op.Slot] = rec{ballot: op.Ballot, cmd: op.Command}
			delete(st.faulty, op.Slot)
			st.last = max(st.last, op.Slot)
		}
	case paxos.OpSetChosenIndex:
		st.chosen = max(st.chosen, op.Slot)
	case paxos.OpScrubCursor:
		// Not monotone: a new pass starts over from the floor.
		st.scrub = op.Slot
	case paxos.OpTruncate, paxos.OpTrimmedTo:
		if op.Slot <= st.floor {
			return
		}
		st.floor = op.Slot
		st.sealed = op.State
		st.chosen = max(st.chosen, op.Slot-1)
		for k := range st.records {
			if k < st.floor {
				delete(st.records, k)
			}
		}
		for k := range st.faulty {
			if k < st.floor {
				delete(st.faulty, k)
			}
		}
	default:
		panic(fmt.Sprintf("memstore: unknown op %s", op.Kind))
	}
}

// Rot destroys the value of the durable record at slot, keeping its
// identity: boot then reports it as faulty(slot, ballot).
func (s *Store) Rot(slot paxos.Slot) bool {
	r, ok := s.durable.records[slot]
	if !ok {
		return false
	}
	delete(s.durable.records, slot)
	if s.durable.faulty == nil {
		s.durable.faulty = map[paxos.Slot]paxos.Ballot{}
	}
	s.durable.faulty[slot] = r.ballot
	return true
}

// FaultyAt reports whether the durable record at slot lost its value.
func (s *Store) FaultyAt(slot paxos.Slot) (paxos.Ballot, bool) {
	b, ok := s.durable.faulty[slot]
	return b, ok
}

// InitialState implements paxos.Storage.
func (s *Store) InitialState() paxos.HardState {
	return paxos.HardState{Promised: s.durable.promise, ChosenIndex: s.durable.chosen}
}

// FirstSlot implements paxos.Storage.
func (s *Store) FirstSlot() paxos.Slot { return s.durable.floor }

// LastSlot implements paxos.Storage.
func (s *Store) LastSlot() paxos.Slot {
	var last paxos.Slot
	for k := range s.durable.records {
		last = max(last, k)
	}
	for k := range s.durable.faulty {
		last = max(last, k)
	}
	return last
}

// Accepted implements paxos.Storage.
func (s *Store) Accepted(slot paxos.Slot) (paxos.Ballot, journal.Command, bool) {
	r, ok := s.durable.records[slot]
	return r.ballot, r.cmd, ok
}

// SealedState implements paxos.Storage.
func (s *Store) SealedState() journal.State { return s.durable.sealed }

// FaultyEntries implements paxos.Storage, in slot order.
func (s *Store) FaultyEntries() []paxos.SlotBallot {
	out := make([]paxos.SlotBallot, 0, len(s.durable.faulty))
	for _, k := range slices.Sorted(maps.Keys(s.durable.faulty)) {
		out = append(out, paxos.SlotBallot{Slot: k, Ballot: s.durable.faulty[k]})
	}
	return out
}

// Records returns the durable records in slot order (for audits).
func (s *Store) Records() []paxos.SlotCommand {
	out := make([]paxos.SlotCommand, 0, len(s.durable.records))
	for _, k := range slices.Sorted(maps.Keys(s.durable.records)) {
		r := s.durable.records[k]
		out = append(out, paxos.SlotCommand{Slot: k, Ballot: r.ballot, Command: r.cmd})
	}
	return out
}

// ColdRecords implements paxos.ColdLog over the durable records: a node
// only evicts durable ones. A slot without an intact record is a
// corruption error (a rotted value, or a record that never reached disk).
func (s *Store) ColdRecords(from, to paxos.Slot) ([]paxos.SlotCommand, error) {
	s.ColdReads++
	out := make([]paxos.SlotCommand, 0, to-from)
	for slot := from; slot < to; slot++ {
		r, ok := s.durable.records[slot]
		if !ok || slot < s.durable.floor {
			what := "record"
			if _, rotted := s.durable.faulty[slot]; rotted {
				what = "record value"
			}
			return nil, &storage.CorruptionError{What: what, Slot: slot, Detail: "no intact durable record for a cold read"}
		}
		out = append(out, paxos.SlotCommand{Slot: slot, Ballot: r.ballot, Command: r.cmd})
	}
	return out, nil
}

// ColdLog implements paxos.ColdSource.
func (s *Store) ColdLog() paxos.ColdLog { return s }

// ColdThrough implements paxos.ColdSource: as a Storage itself the store
// serves every record through Accepted (no cold prefix; Boot makes one).
func (s *Store) ColdThrough() paxos.Slot { return 0 }

var (
	_ paxos.Storage    = (*Store)(nil)
	_ paxos.ColdSource = (*Store)(nil)
)
