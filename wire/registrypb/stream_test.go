// This file checks the Checkpointable over streams of records, byte for
// byte. A script (below) turns bytes into records: entries of every kind
// over small alphabets (names, ids, machines and request ids collide, and
// requests repeat), placements chosen by Place or drawn raw, tombstones of
// deleting journals, and raw byte strings (mostly malformed). runStream
// applies a script's records and checks at every step:
//
//  1. two States folding the same records, one through Apply and one
//     through Decode and Fold, have byte-equal checkpoints;
//  2. Restore(At, Checkpoint()) into a fresh State round-trips (every fifth
//     step in TestStreamProperties, every step in FuzzApply), and a State
//     restored at chosen steps and applying the rest ends byte-equal to
//     the uninterrupted one: a checkpoint equals the prefix it replaces;
//  3. a malformed record changes nothing, At included; a refusal changes
//     at most its recorded outcome; a repeat of a decided request returns
//     its first outcome and changes nothing;
//  4. no journal id and no tenant id is created twice.
//
// TestStreamProperties runs 200 fixed seeds of 300 records from
// math/rand/v2; FuzzApply runs the fuzzer's bytes as a script, after
// applying them whole as one record.
package registrypb

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/registry"
)

var (
	scriptNames   = []string{"t0", "t1", "j0", "j1", "", "a/b", "0123456789abcdef"}
	scriptAddrs   = []string{"", "m:1", "m:2"}
	scriptDomains = []string{"", "a", "b"}
)

// script reads records from bytes; past the end every byte reads 0.
type script struct {
	data  []byte
	i     int
	fresh int // request ids drawn fresh so far
}

func (sc *script) done() bool { return sc.i >= len(sc.data) }

func (sc *script) next() int {
	if sc.done() {
		return 0
	}
	sc.i++
	return int(sc.data[sc.i-1])
}

func (sc *script) pick(n int) int { return sc.next() % n }

func (sc *script) name() string { return scriptNames[sc.pick(len(scriptNames))] }

// request is nil, one of 8 shared request ids (repeats are common), or a
// fresh one.
func (sc *script) request() []byte {
	switch r := sc.pick(32); {
	case r == 0:
		return nil
	case r <= 8:
		return fmt.Appendf(nil, "r%d", r)
	}
	sc.fresh++
	return fmt.Appendf(nil, "f%d", sc.fresh)
}

func (sc *script) placement(s *State) registry.Placement {
	if sc.pick(2) == 0 {
		if members, err := s.Place(1+sc.pick(3), nil); err == nil {
			return majority(members...)
		}
	}
	p := registry.Placement{QuorumSystem: registry.QuorumSystem(sc.pick(4)),
		Phase1Quorum: uint32(sc.pick(4)), Phase2Quorum: uint32(sc.pick(4)),
		Rows: uint32(sc.pick(3)), Cols: uint32(sc.pick(3)), WriterMode: registry.WriterMode(sc.pick(4))}
	for range sc.pick(4) {
		p.Members = append(p.Members, uint64(sc.pick(6)))
	}
	return p
}

// record is the script's next record, given the state it will be applied
// to (a coordinator looks at its state too).
func (sc *script) record(s *State) []byte {
	var e registry.Entry
	switch sc.pick(10) {
	case 0:
		n := sc.pick(24)
		raw := make([]byte, 0, n)
		for range n {
			raw = append(raw, byte(sc.next()))
		}
		return raw
	case 1:
		e = registry.RegisterMachine(uint64(sc.pick(6)), scriptAddrs[sc.pick(3)], scriptDomains[sc.pick(3)])
	case 2:
		e = registry.DrainMachine(uint64(sc.pick(6)))
	case 3:
		e = registry.CreateTenant(sc.request(), sc.name(), uint64(sc.pick(5)+sc.pick(2)))
	case 4:
		e = registry.DeleteTenant(sc.request(), sc.name())
	case 5, 6:
		e = registry.CreateJournal(sc.request(), sc.tenant(s), sc.name(), uint64(sc.pick(6)), sc.placement(s))
	case 7, 8:
		e = registry.DeleteJournal(sc.request(), sc.tenant(s), sc.name())
	case 9:
		if d := s.Deleting(); len(d) > 0 && sc.pick(4) > 0 {
			e = registry.JournalGone(d[sc.pick(len(d))].ID)
		} else {
			e = registry.JournalGone(journal.ID{Tenant: uint64(sc.pick(5)), Journal: uint64(sc.pick(6))})
		}
	}
	return Encode(EntryToPB(e))
}

// tenant is mostly a tenant that exists.
func (sc *script) tenant(s *State) string {
	if ts := s.Tenants(); len(ts) > 0 && sc.pick(4) > 0 {
		return ts[sc.pick(len(ts))].Name
	}
	return sc.name()
}

// runStream applies up to n records of sc (until its bytes run out) and
// checks the properties of the file comment; resumeAt says at which steps
// a restored State joins, and Restore(Checkpoint()) is checked every
// roundTripEvery steps. It returns the outcome kinds it saw.
func runStream(t testing.TB, sc *script, n int, resumeAt func(step int) bool, roundTripEvery int) map[string]int {
	t.Helper()
	seen := map[string]int{}
	a, b := New(), New()
	var resumed []*State
	first := map[string]registry.Outcome{}
	created := map[journal.ID]bool{}
	for step, seq := 0, journal.FirstSeq; step < n && !sc.done(); step, seq = step+1, seq+1 {
		if resumeAt(step) {
			r := New()
			if err := r.Restore(a.At(), a.Checkpoint()); err != nil {
				t.Fatalf("step %d: restore: %v", step, err)
			}
			resumed = append(resumed, r)
		}
		rec := sc.record(a)
		before, beforeAt := a.Checkpoint(), a.At()

		// a applies the record; b decodes and folds it, which gives the
		// outcome Apply does not return.
		err := a.Apply(seq, rec)
		e, derr := Decode(rec)
		var o registry.Outcome
		if derr == nil {
			o = b.Fold(seq, EntryFromPB(e))
		}
		for _, r := range resumed {
			_ = r.Apply(seq, rec)
		}

		where := fmt.Sprintf("step %d record %x", step, rec)
		if (err == nil) != (derr == nil) {
			t.Fatalf("%s: Apply %v, Decode %v", where, err, derr)
		}
		after := a.Checkpoint()
		// 1. Two folds agree (and Apply is Decode then Fold).
		if !bytes.Equal(after, b.Checkpoint()) || a.At() != b.At() {
			t.Fatalf("%s: two folds disagree", where)
		}
		// 2. A checkpoint round-trips.
		if step%roundTripEvery == 0 {
			r := New()
			if err := r.Restore(a.At(), after); err != nil || !bytes.Equal(r.Checkpoint(), after) {
				t.Fatalf("%s: Restore(Checkpoint()) = %v, or it differs", where, err)
			}
		}
		// 3. Malformed, refused, repeated.
		if err != nil {
			seen["malformed"]++
			if !errors.Is(err, ErrMalformed) || !bytes.Equal(after, before) || a.At() != beforeAt {
				t.Fatalf("%s: a malformed record (%v) changed the state", where, err)
			}
			continue
		}
		seen[o.Kind]++
		if a.At() != seq+1 {
			t.Fatalf("%s: At = %d, want %d", where, a.At(), seq+1)
		}
		entry := EntryFromPB(e)
		f, repeat := first[string(entry.Request)]
		repeat = repeat && len(entry.Request) > 0
		switch {
		case repeat:
			if o != f || !bytes.Equal(after, before) {
				t.Fatalf("%s: a repeat folded to %+v (first %+v) or changed the state", where, o, f)
			}
		case o.Kind == registry.OutcomeBadRequest || o.Kind == registry.OutcomeUnknownMachine:
			if !bytes.Equal(after, before) {
				t.Fatalf("%s: refusal %s changed the state", where, o.Kind)
			}
		case o.Kind != "" && o.Kind != registry.OutcomeCreated && o.Kind != registry.OutcomeDeleted:
			st, err := DecodeState(before)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(withoutOutcome(a.Snapshot(), entry.Request), SnapshotFromPB(st)) {
				t.Fatalf("%s: refusal %s changed more than its outcome", where, o.Kind)
			}
		}
		if len(entry.Request) > 0 && !repeat {
			first[string(entry.Request)] = o
			// 4. No id created twice ({t,0} for a tenant).
			if o.Kind == registry.OutcomeCreated {
				if created[o.Journal] {
					t.Fatalf("%s: %v created twice", where, o.Journal)
				}
				created[o.Journal] = true
			}
		}
	}
	for _, r := range resumed {
		if !bytes.Equal(r.Checkpoint(), a.Checkpoint()) || r.At() != a.At() {
			t.Fatal("a fold resumed from a checkpoint ends elsewhere")
		}
	}
	return seen
}

// withoutOutcome is snap without the outcome of request.
func withoutOutcome(snap registry.Snapshot, request []byte) registry.Snapshot {
	snap.Outcomes = slices.DeleteFunc(slices.Clone(snap.Outcomes), func(o registry.RecordedOutcome) bool {
		return bytes.Equal(o.Request, request)
	})
	if len(snap.Outcomes) == 0 {
		snap.Outcomes = nil // as a snapshot without outcomes has it
	}
	return snap
}

func TestStreamProperties(t *testing.T) {
	const seeds, records = 200, 300
	seen := map[string]int{}
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 0xc0ffee))
		data := make([]byte, records*16)
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		resume := map[int]bool{r.IntN(records): true, r.IntN(records): true, r.IntN(records): true}
		for k, v := range runStream(t, &script{data: data}, records, func(step int) bool { return resume[step] }, 5) {
			seen[k] += v
		}
	}
	for _, k := range []string{"malformed", "", registry.OutcomeCreated, registry.OutcomeDeleted,
		registry.OutcomeNameTaken, registry.OutcomeNameDeleting, registry.OutcomeUnknownTenant,
		registry.OutcomeUnknownJournal, registry.OutcomeTenantNotEmpty, registry.OutcomeBadName,
		registry.OutcomeBadPlacement, registry.OutcomeIDTaken, registry.OutcomeBadRequest, registry.OutcomeUnknownMachine} {
		if seen[k] == 0 {
			t.Errorf("the streams never reached %q", k)
		}
	}
	t.Logf("outcomes seen: %v", seen)
}

// fuzzRecordsMax bounds the records of one fuzz input: the checks cost
// O(records × state), and a long input would stall the fuzzer.
const fuzzRecordsMax = 256

func FuzzApply(f *testing.F) {
	f.Add([]byte{})
	f.Add(Encode(EntryToPB(everyKind[4])))
	f.Add([]byte{1, 1, 1, 1, 1, 2, 1, 2, 1, 3, 1, 1, 1, 5, 2, 0, 2, 1, 0, 7, 3, 0, 2, 8, 1, 0})
	f.Add([]byte{0, 5, 0xff, 0x01, 0x0a, 0x00, 0x12})
	for _, e := range everyKind {
		f.Add(Encode(EntryToPB(e)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// The whole input as one record.
		s := New()
		before := s.Checkpoint()
		if err := s.Apply(1, data); err != nil {
			if !errors.Is(err, ErrMalformed) || !bytes.Equal(s.Checkpoint(), before) || s.At() != journal.FirstSeq {
				t.Fatalf("a refused record changed the state: %v", err)
			}
		}
		r := New()
		if err := r.Restore(s.At(), s.Checkpoint()); err != nil || !bytes.Equal(r.Checkpoint(), s.Checkpoint()) {
			t.Fatalf("Restore(Checkpoint()) = %v, or it differs", err)
		}
		// The input as a script.
		runStream(t, &script{data: data}, fuzzRecordsMax, func(step int) bool { return step%16 == 0 }, 1)
	})
}
