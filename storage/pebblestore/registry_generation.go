package pebblestore

// The matchmaker's generation state (matchmaker.Generation) in the registry
// keyspace: the generation value's format, and how an Apply batch stages
// the generation ops. The key schema is in registry_format.go.

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage"
)

// Generation value constants (frozen).
const (
	genFlagStopped byte = 1
	// genSetMinBytes is a set's generation and member count.
	genSetMinBytes = 8 + 1
	// genMinBytes is a generation value without origins and with three
	// zero sets.
	genMinBytes = 1 + 1 + 3*genSetMinBytes + 16 + 16 + 8 + 1 + 4
)

func appendSet(dst []byte, s matchmaker.Set) []byte {
	if len(s.Members) > paxos.MatchmakersMax {
		panic(fmt.Sprintf("pebblestore: matchmaker set %s of %d members", s, len(s.Members)))
	}
	dst = binary.BigEndian.AppendUint64(dst, s.Generation)
	dst = append(dst, byte(len(s.Members)))
	for _, id := range s.Members {
		dst = binary.BigEndian.AppendUint64(dst, uint64(id))
	}
	return dst
}

// encodeGeneration encodes g without its pending registries (they have
// keys of their own). It panics on a state the format cannot hold, which
// the matchmaker never produces.
func encodeGeneration(g matchmaker.Generation) []byte {
	if len(g.Pending.Origins) > matchmaker.OriginsMax {
		panic(fmt.Sprintf("pebblestore: %d bootstrap origins (max %d)", len(g.Pending.Origins), matchmaker.OriginsMax))
	}
	flags := byte(0)
	if g.Stopped {
		flags |= genFlagStopped
	}
	b := append(make([]byte, 0, genMinBytes+8*paxos.MatchmakersMax), valueV1, flags)
	b = appendSet(b, g.Set)
	b = appendSet(b, g.Successor)
	b = appendBallot(b, g.Decree.Promised)
	b = appendBallot(b, g.Decree.Vote.Ballot)
	b = appendSet(b, g.Decree.Vote.Value)
	b = binary.BigEndian.AppendUint64(b, g.Pending.Generation)
	b = append(b, byte(len(g.Pending.Origins)))
	for _, o := range g.Pending.Origins {
		if o.Pages == 0 || o.Pages > matchmaker.PagesMax || len(o.Held) != int(o.Pages) {
			panic(fmt.Sprintf("pebblestore: bootstrap origin %s of %d pages holding %d", o.Ballot, o.Pages, len(o.Held)))
		}
		b = appendBallot(b, o.Ballot)
		b = appendSet(b, o.Set)
		b = binary.BigEndian.AppendUint32(b, o.Pages)
		held := make([]byte, (o.Pages+7)/8)
		for i, h := range o.Held {
			if h {
				held[i/8] |= 1 << (i % 8)
			}
		}
		b = append(b, held...)
	}
	return seal(keyRegistryGeneration, b)
}

// genReader reads a generation value's payload front to back; the first
// shortfall or bad field sticks in err and every later read returns zeros.
type genReader struct {
	p   []byte
	err error
}

func (r *genReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if len(r.p) < n {
		r.err = valueErr("generation truncated")
		return nil
	}
	b := r.p[:n]
	r.p = r.p[n:]
	return b
}

func (r *genReader) u64() uint64 {
	if b := r.take(8); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

func (r *genReader) ballot() paxos.Ballot {
	b := r.take(16)
	if b == nil {
		return paxos.Ballot{}
	}
	if got := readBallot(b); got.InRange() {
		return got
	}
	r.err = valueErr("generation ballot out of range")
	return paxos.Ballot{}
}

func (r *genReader) set() matchmaker.Set {
	g := r.u64()
	n := r.take(1)
	if n == nil {
		return matchmaker.Set{}
	}
	if int(n[0]) > paxos.MatchmakersMax {
		r.err = valueErr("matchmaker set of %d members", n[0])
		return matchmaker.Set{}
	}
	s := matchmaker.Set{Generation: g}
	if n[0] > 0 {
		s.Members = make([]paxos.NodeID, n[0])
	}
	for i := range s.Members {
		s.Members[i] = paxos.NodeID(r.u64())
	}
	if r.err == nil {
		if err := s.Validate(); err != nil {
			r.err = valueErr("%v", err)
		}
	}
	return s
}

// decodeGeneration checks length and CRC and that every field is well
// formed (see the format's doc); Pending.Regs is left nil.
func decodeGeneration(v []byte) (matchmaker.Generation, error) {
	if len(v) < genMinBytes {
		return matchmaker.Generation{}, valueErr("generation of %d bytes", len(v))
	}
	p, err := unseal(keyRegistryGeneration, v, -1)
	if err != nil {
		return matchmaker.Generation{}, err
	}
	r := &genReader{p: p}
	var g matchmaker.Generation
	flags := p[0] // unseal left at least genMinBytes-5 bytes
	r.p = p[1:]
	if flags&^genFlagStopped != 0 {
		return matchmaker.Generation{}, valueErr("generation flags %#x", flags)
	}
	g.Stopped = flags&genFlagStopped != 0
	g.Set, g.Successor = r.set(), r.set()
	g.Decree.Promised, g.Decree.Vote.Ballot = r.ballot(), r.ballot()
	g.Decree.Vote.Value = r.set()
	g.Pending.Generation = r.u64()
	var n byte
	if b := r.take(1); b != nil {
		n = b[0]
	}
	switch {
	case r.err != nil:
		return matchmaker.Generation{}, r.err
	case g.Decree.Vote.Ballot.IsZero() != g.Decree.Vote.Value.IsZero():
		return matchmaker.Generation{}, valueErr("decree vote %s for %s", g.Decree.Vote.Ballot, g.Decree.Vote.Value)
	case g.Pending.Generation > paxos.GenerationMax:
		return matchmaker.Generation{}, valueErr("pending generation %d", g.Pending.Generation)
	case int(n) > matchmaker.OriginsMax || (n > 0 && g.Pending.Generation == 0):
		return matchmaker.Generation{}, valueErr("%d bootstrap origins of pending generation %d", n, g.Pending.Generation)
	}
	for range n {
		o := matchmaker.Origin{Ballot: r.ballot(), Set: r.set()}
		if b := r.take(4); b != nil {
			o.Pages = binary.BigEndian.Uint32(b)
		}
		if r.err == nil && (o.Pages == 0 || o.Pages > matchmaker.PagesMax || o.Ballot.IsZero() || o.Set.IsZero()) {
			return matchmaker.Generation{}, valueErr("bootstrap origin %s of %s with %d pages", o.Ballot, o.Set, o.Pages)
		}
		held := r.take(int(o.Pages+7) / 8)
		if r.err != nil {
			return matchmaker.Generation{}, r.err
		}
		if o.Pages%8 != 0 && held[len(held)-1]>>(o.Pages%8) != 0 {
			return matchmaker.Generation{}, valueErr("bootstrap origin %s holds pages past its %d", o.Ballot, o.Pages)
		}
		o.Held = make([]bool, o.Pages)
		for i := range o.Held {
			o.Held[i] = held[i/8]&(1<<(i%8)) != 0
		}
		g.Pending.Origins = append(g.Pending.Origins, o)
	}
	if len(r.p) != 0 {
		return matchmaker.Generation{}, valueErr("generation with %d trailing bytes", len(r.p))
	}
	return g, nil
}

// foldRegKey decodes one key of a journal's registry or pending registry
// into regs (Boot and the pending reads of Apply share it). Keys arrive in
// order, so the watermark is known before the first registration.
func foldRegKey(regs map[journal.ID]*matchmaker.Registry, k parsedRegKey, key, v []byte) error {
	what := func(s string) string {
		if k.part == regPartPending {
			return "pending " + s
		}
		return s
	}
	reg := regs[k.id]
	if reg == nil {
		reg = &matchmaker.Registry{}
		regs[k.id] = reg
	}
	var err error
	switch k.kind {
	case regKindWatermark:
		if reg.Watermark, err = decodeWatermark(key, v); err != nil {
			return regCorrupt(k.id, what("watermark"), err)
		}
	case regKindEffective:
		if reg.Effective, err = decodeEffective(key, v); err != nil {
			return regCorrupt(k.id, what("effective configuration"), err)
		}
	case regKindRetracted:
		if reg.Retracted, err = decodeWatermark(key, v); err != nil {
			return regCorrupt(k.id, what("retracted ballot"), err)
		}
	case regKindRegistration:
		if k.ballot.Less(reg.Watermark) {
			return regCorrupt(k.id, what("registration"), fmt.Errorf("ballot %s below the watermark %s", k.ballot, reg.Watermark))
		}
		got, err := decodeRegistration(key, k.ballot, v)
		if err != nil {
			return regCorrupt(k.id, what("registration"), fmt.Errorf("ballot %s: %w", k.ballot, err))
		}
		reg.Regs = append(reg.Regs, got)
	}
	return nil
}

// putRegistry writes reg as journal id's keys in part. A registry that
// holds nothing has no keys (boot then lists no registry for it).
func putRegistry(pb *pebble.Batch, part byte, id journal.ID, reg matchmaker.Registry) {
	if !id.IsSet() {
		panic(fmt.Sprintf("pebblestore: registry of unset journal %s", id))
	}
	if !reg.Watermark.IsZero() {
		k := regPartScalarKey(part, id, regKindWatermark)
		_ = pb.Set(k, encodeWatermark(k, reg.Watermark), nil)
	}
	if !reg.Effective.IsZero() {
		k := regPartScalarKey(part, id, regKindEffective)
		_ = pb.Set(k, encodeEffective(k, reg.Effective), nil)
	}
	if !reg.Retracted.IsZero() {
		k := regPartScalarKey(part, id, regKindRetracted)
		_ = pb.Set(k, encodeWatermark(k, reg.Retracted), nil)
	}
	for _, r := range reg.Regs {
		k := regPartRegistrationKey(part, id, r.Ballot)
		_ = pb.Set(k, encodeRegistration(k, r), nil)
	}
}

// genStage is the generation state an Apply batch builds on, changed by
// the batch's generation ops as they are staged. It is read at the
// batch's first generation op: the generation key, then pending
// registries only as ops need them (a page's own journals; every one at
// an activation), so a page of a large bootstrap reads and rewrites only
// its own journals.
type genStage struct {
	// gen.Pending.Regs holds the pending registries read or written so
	// far: every one once all is set.
	gen   matchmaker.Generation
	known map[journal.ID]bool
	all   bool
}

// genStageLocked reads the generation state (the marker's when the store
// holds none).
func (r *Registry) genStageLocked(m *storage.RegistryMarker) (*genStage, error) {
	st := &genStage{known: map[journal.ID]bool{}}
	v, found, err := r.getLocked(keyRegistryGeneration, journal.ID{}, "generation")
	switch {
	case err != nil:
		return nil, err
	case found:
		if st.gen, err = decodeGeneration(v); err != nil {
			return nil, regCorrupt(journal.ID{}, "generation", err)
		}
	default:
		st.gen = matchmaker.BootGeneration(m.Node, m.Matchmakers)
	}
	st.gen.Pending.Regs = map[journal.ID]matchmaker.Registry{}
	// Without a pending bootstrap there is no pending registry (Boot
	// refuses one).
	st.all = st.gen.Pending.Generation == 0
	return st, nil
}

// loadPendingLocked reads journal id's pending registry into st, unless it
// is already there.
func (r *Registry) loadPendingLocked(st *genStage, id journal.ID) error {
	if st.all || st.known[id] {
		return nil
	}
	regs := map[journal.ID]*matchmaker.Registry{}
	lo, hi := regJournalBounds(regPartPending, id)
	err := r.scanLocked(lo, hi, false, func(key, v []byte) error {
		k, ok := parseRegKey(key)
		if !ok || k.part != regPartPending || k.id != id {
			return regCorrupt(id, "registry key", fmt.Errorf("key %x outside the schema", key))
		}
		return foldRegKey(regs, k, key, v)
	})
	if err != nil {
		return err
	}
	if reg := regs[id]; reg != nil {
		st.gen.Pending.Regs[id] = *reg
	}
	st.known[id] = true
	return nil
}

// loadAllPendingLocked reads every pending registry st does not hold yet.
func (r *Registry) loadAllPendingLocked(st *genStage) error {
	if st.all {
		return nil
	}
	regs := map[journal.ID]*matchmaker.Registry{}
	lo, hi := regPartBounds(regPartPending)
	err := r.scanLocked(lo, hi, false, func(key, v []byte) error {
		k, ok := parseRegKey(key)
		if !ok || k.part != regPartPending {
			return regCorrupt(journal.ID{}, "registry key", fmt.Errorf("key %x outside the schema", key))
		}
		if st.known[k.id] {
			return nil // staged by this batch: newer than the disk
		}
		return foldRegKey(regs, k, key, v)
	})
	if err != nil {
		return err
	}
	for id, reg := range regs {
		st.gen.Pending.Regs[id] = *reg
	}
	st.all = true
	return nil
}

// stageGenerationLocked folds generation op into st and writes what it
// changes besides the generation key (the caller writes that once, after
// the batch's last op). An activation returns the registries it made.
func (r *Registry) stageGenerationLocked(pb *pebble.Batch, st *genStage, op matchmaker.WriteOp) (map[journal.ID]*matchmaker.Registry, error) {
	switch op.Kind {
	case matchmaker.OpBootstrap:
		if st.gen.Pending.Generation < op.Set.Generation {
			// The page replaces the pending bootstrap of an older
			// generation (matchmaker.Pending's take): its registries go.
			lo, hi := regPartBounds(regPartPending)
			_ = pb.DeleteRange(lo, hi, nil)
			st.gen.Pending.Regs, st.known, st.all = map[journal.ID]matchmaker.Registry{}, map[journal.ID]bool{}, true
		}
		for _, jr := range op.Journals {
			if err := r.loadPendingLocked(st, jr.Journal); err != nil {
				return nil, err
			}
		}
		matchmaker.Apply(&st.gen, nil, op)
		for _, jr := range op.Journals {
			// The merged registry may hold fewer keys than the one on
			// disk (Reconstruct drops what is below a higher watermark).
			lo, hi := regJournalBounds(regPartPending, jr.Journal)
			_ = pb.DeleteRange(lo, hi, nil)
			putRegistry(pb, regPartPending, jr.Journal, st.gen.Pending.Regs[jr.Journal])
			st.known[jr.Journal] = true
		}
	case matchmaker.OpActivate:
		if err := r.loadAllPendingLocked(st); err != nil {
			return nil, err
		}
		regs := map[journal.ID]*matchmaker.Registry{}
		matchmaker.Apply(&st.gen, regs, op)
		for _, part := range []byte{regPartJournal, regPartPending} {
			lo, hi := regPartBounds(part)
			_ = pb.DeleteRange(lo, hi, nil)
		}
		for id, reg := range regs {
			putRegistry(pb, regPartJournal, id, *reg)
		}
		st.gen.Pending.Regs, st.known, st.all = map[journal.ID]matchmaker.Registry{}, map[journal.ID]bool{}, true
		return regs, nil
	default:
		matchmaker.Apply(&st.gen, nil, op)
	}
	return nil, nil
}
