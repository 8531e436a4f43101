package storage

// The durable store of a Matchmaker Paxos matchmaker (Whittaker et al.,
// "Matchmaker Paxos", §3): one store per matchmaker process holds
// the registry of every journal the matchmaker serves, under one format
// marker of its own. A matchmaker's Ready carries matchmaker.WriteOps; the
// host applies them with RegistryStore.Apply, which is synced, before any
// reply of that Ready leaves (a registration is a promise to every later
// candidate, and an acknowledged watermark lets a leader forget history).
//
// Two stores implement RegistryStore and pass one conformance suite
// (storetest.RunRegistry): memstore.RegistryStore and the Registry of a
// pebblestore.DB.

import (
	"errors"
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

// RegistryMatchmakersMax bounds the matchmaker set a registry marker names
// (the set is a majority quorum system, so quorum.MembersMax).
const RegistryMatchmakersMax = quorum.MembersMax

// ErrRegistryUnformatted refuses a write to a registry store that holds no
// marker: a store's first write is its marker, so registries never exist
// without one.
var ErrRegistryUnformatted = errors.New("paros/storage: matchmaker registry not formatted")

// RegistryStore is the durable store of one matchmaker process: every
// journal's registry, and the marker it was formatted under.
type RegistryStore interface {
	// Boot reads and verifies the whole store. A record failing its
	// checksum or not decoding, a registration below its journal's
	// watermark, a generation state that breaks its invariants
	// (matchmaker.Generation.Validate), or registries without a marker
	// are a *CorruptionError (ErrCorruption): never a silent skip, never a
	// reformat. A store never formatted boots with a nil Marker, no
	// registries and a zero Generation.
	Boot() (*RegistryBoot, error)
	// Format writes the marker, durably. It refuses a malformed marker
	// (ErrBadMarker) and a store already formatted (ErrFormatted).
	Format(m RegistryMarker) error
	// Apply persists ops in order, atomically (all or none survive a
	// crash), and synced: they are durable when Apply returns nil. The
	// generation ops (WriteOp.IsGeneration) change the Generation as
	// matchmaker.Apply does, in the same batch as the registry ops beside
	// them; an OpActivate replaces every registry by the pending
	// bootstrap's, and the ops after it build on those. An
	// unformatted store refuses with ErrRegistryUnformatted and writes
	// nothing. An I/O error is an *IOError; with outcome Unknown the batch
	// may or may not be on disk. After one the store refuses every write
	// (ErrFailed) until it is reopened, and the matchmaker must Close.
	// An op that breaks a registry invariant (see CheckRegistryOp) is a
	// programmer error and panics.
	Apply(ops []matchmaker.WriteOp) error
}

// RegistryBoot is what a registry store holds: the input of matchmaker.New.
type RegistryBoot struct {
	Marker *RegistryMarker // nil: never formatted
	// Registries holds every journal with a watermark, an effective
	// configuration or a registration; a journal with none is absent.
	Registries map[journal.ID]matchmaker.Registry
	// Generation is the matchmaker's place in the chain of matchmaker
	// sets: the founding set of the marker (matchmaker.Founding) until a
	// handover op changed it.
	Generation matchmaker.Generation
}

// RegistryMarker is the configuration a registry store was formatted
// under: the matchmaker's own id and the bootstrap matchmaker set.
type RegistryMarker struct {
	Node paxos.NodeID
	// Matchmakers is the bootstrap matchmaker set, sorted.
	Matchmakers []paxos.NodeID
}

// Equal reports whether two markers name the same configuration.
func (m RegistryMarker) Equal(o RegistryMarker) bool {
	return m.Node == o.Node && slices.Equal(m.Matchmakers, o.Matchmakers)
}

// Validate refuses a marker that names no usable configuration: node
// nonzero, a nonempty set of at most RegistryMatchmakersMax ids, sorted,
// without duplicates or zero. The set is the founding one (generation 1);
// a matchmaker outside it was added later and boots fresh
// (matchmaker.BootGeneration), a member of no set until a handover names
// it.
func (m RegistryMarker) Validate() error {
	if m.Node == 0 || len(m.Matchmakers) == 0 {
		return fmt.Errorf("%w: registry node %d matchmakers %v", ErrBadMarker, m.Node, m.Matchmakers)
	}
	if len(m.Matchmakers) > RegistryMatchmakersMax {
		return fmt.Errorf("%w: %d matchmakers (max %d)", ErrBadMarker, len(m.Matchmakers), RegistryMatchmakersMax)
	}
	for i, id := range m.Matchmakers {
		if id == 0 {
			return fmt.Errorf("%w: matchmaker id 0 in %v", ErrBadMarker, m.Matchmakers)
		}
		if i > 0 && m.Matchmakers[i-1] >= id {
			return fmt.Errorf("%w: matchmakers %v not sorted and distinct", ErrBadMarker, m.Matchmakers)
		}
	}
	return nil
}

func (m RegistryMarker) String() string {
	return fmt.Sprintf("{matchmaker %d of %v}", m.Node, m.Matchmakers)
}

// Clone returns a copy that shares no memory with m.
func (m RegistryMarker) Clone() RegistryMarker {
	m.Matchmakers = slices.Clone(m.Matchmakers)
	return m
}

// CheckRegistryBoot is the boot decision table of a matchmaker's store
// (one row per case), the same as CheckBoot's. Legend: claim is the
// operator's; marker is what the store holds (nil: unformatted); want is
// the configuration the matchmaker runs under.
//
//	claim            marker     marker == want   decision
//	---------------  ---------  ---------------  ---------------------
//	FirstBoot        none       -                DecideFormat
//	FirstBoot        present    -                ErrFormatted
//	ExistingMember   none       -                ErrAmnesia
//	ExistingMember   present    yes              DecideBoot
//	ExistingMember   present    no               ErrConfigMismatch
//
// A damaged marker never reaches this table: Boot reports ErrCorruption.
// An amnesiac matchmaker must not serve: it would register ballots below
// promises it already made.
func CheckRegistryBoot(claim Claim, marker *RegistryMarker, want RegistryMarker) (BootDecision, error) {
	switch claim {
	case ClaimFirstBoot:
		if marker == nil {
			return DecideFormat, nil
		}
		return 0, fmt.Errorf("%w: registry store holds %s", ErrFormatted, marker)
	case ClaimExistingMember:
		if marker == nil {
			return 0, fmt.Errorf("%w: matchmaker %d", ErrAmnesia, want.Node)
		}
		if !marker.Equal(want) {
			return 0, fmt.Errorf("%w: registry store %s, configured %s", ErrConfigMismatch, marker, want)
		}
		return DecideBoot, nil
	}
	return 0, fmt.Errorf("paros/storage: unknown boot claim %d", claim)
}

// RegistryHead is what a store must know of one journal's registry to
// apply an op to it: its watermark, the ballot of its effective
// configuration, and its highest registration (zero: none).
//
// Invariant: Highest is zero or at or above Watermark.
type RegistryHead struct {
	Watermark paxos.Ballot
	Effective paxos.Ballot
	Retracted paxos.Ballot
	Highest   paxos.Ballot
}

// RegistryHeadOf is the head of registry r: what CheckRegistryOp needs of
// it. A retracted ballot counts as the highest only at or above the
// watermark (below it, collection forgot it with the registrations).
func RegistryHeadOf(r matchmaker.Registry) RegistryHead {
	h := RegistryHead{Watermark: r.Watermark, Effective: r.Effective.Ballot, Retracted: r.Retracted}
	if n := len(r.Regs); n > 0 {
		h.Highest = r.Regs[n-1].Ballot
	}
	if h.Highest.Less(r.Retracted) && !r.Retracted.Less(r.Watermark) {
		h.Highest = r.Retracted
	}
	return h
}

// CheckRegistryOp says why op cannot apply to a registry whose head is h
// (nil: it can). The stores panic on a non-nil answer: the matchmaker only
// emits ops that pass (a registration above every other one and at or
// above the watermark, with a configuration; a nonzero watermark).
func CheckRegistryOp(h RegistryHead, op matchmaker.WriteOp) error {
	if op.IsGeneration() {
		return nil // the generation state, not a journal's registry
	}
	if !op.Journal.IsSet() {
		return fmt.Errorf("op on unset journal %s", op.Journal)
	}
	switch op.Kind {
	case matchmaker.OpRegister:
		b := op.Reg.Ballot
		switch {
		case b.IsZero() || !b.InRange():
			return fmt.Errorf("journal %s: registration at ballot %s", op.Journal, b)
		case op.Reg.Acceptors.IsZero():
			return fmt.Errorf("journal %s: registration %s without acceptors", op.Journal, b)
		case b.Less(h.Watermark):
			return fmt.Errorf("journal %s: registration %s below the watermark %s", op.Journal, b, h.Watermark)
		case !h.Highest.Less(b):
			return fmt.Errorf("journal %s: registration %s not above %s", op.Journal, b, h.Highest)
		}
	case matchmaker.OpWatermark:
		if op.Watermark.IsZero() || !op.Watermark.InRange() {
			return fmt.Errorf("journal %s: watermark %s", op.Journal, op.Watermark)
		}
	case matchmaker.OpRetract:
		// Only a registration is retracted: at or below the highest, and
		// the highest stays (a retracted ballot still counts).
		if b := op.Reg.Ballot; b.IsZero() || !b.InRange() || h.Highest.Less(b) || b.Less(h.Watermark) {
			return fmt.Errorf("journal %s: retraction at %s outside [%s, %s]", op.Journal, b, h.Watermark, h.Highest)
		}
	default:
		return fmt.Errorf("journal %s: unknown op kind %d", op.Journal, op.Kind)
	}
	return nil
}

// Step moves h as op does (op passed CheckRegistryOp). It reports what op
// changes: whether it raised the watermark, and whether it made a new
// effective configuration.
func (h *RegistryHead) Step(op matchmaker.WriteOp) (raised, effective bool) {
	switch op.Kind {
	case matchmaker.OpRegister:
		h.Highest = op.Reg.Ballot
		if op.Reg.Reconfiguration && h.Effective.Less(op.Reg.Ballot) {
			h.Effective = op.Reg.Ballot
			return false, true
		}
	case matchmaker.OpRetract:
		// The pebble store raises Retracted itself (it writes the scalar
		// only when it grows); Highest already counts the ballot.
	case matchmaker.OpWatermark:
		if h.Watermark.Less(op.Watermark) {
			h.Watermark = op.Watermark
			if h.Highest.Less(h.Watermark) {
				h.Highest = paxos.Ballot{} // every registration was collected
			}
			return true, false
		}
	}
	return false, false
}
