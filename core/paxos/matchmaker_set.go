package paxos

import (
	"fmt"
	"slices"
)

// MatchmakerSet is one generation of a matchmaker set. The set is itself a
// chosen value: generation 1 is the founding set, and generation g+1 is
// what the decree over the members of generation g chose (core/matchmaker's
// handover). Every matchmaking message carries the generation its sender
// believes in force, and a matchmaker serves only its own active
// generation.
//
// Invariant (Validate): a nonzero set has a generation of at least 1 and
// between 1 and MatchmakersMax members, sorted, distinct and nonzero.
type MatchmakerSet struct {
	Generation uint64
	Members    []NodeID
}

// IsZero reports whether s names no set.
func (s MatchmakerSet) IsZero() bool { return s.Generation == 0 && len(s.Members) == 0 }

// Validate refuses a malformed set.
func (s MatchmakerSet) Validate() error {
	if s.IsZero() {
		return nil
	}
	if s.Generation == 0 || s.Generation > GenerationMax {
		return fmt.Errorf("%w: matchmaker set generation %d", ErrConfig, s.Generation)
	}
	if len(s.Members) == 0 || len(s.Members) > MatchmakersMax {
		return fmt.Errorf("%w: matchmaker set of %d members (1 to %d)", ErrConfig, len(s.Members), MatchmakersMax)
	}
	for i, id := range s.Members {
		if id == 0 || (i > 0 && s.Members[i-1] >= id) {
			return fmt.Errorf("%w: matchmakers %v not sorted, distinct and nonzero", ErrConfig, s.Members)
		}
	}
	return nil
}

// GenerationMax bounds a matchmaker-set generation (far above any number
// of handovers a cell makes; keeps generation+1 exact).
const GenerationMax = 1 << 62

// Has reports whether id is a member.
func (s MatchmakerSet) Has(id NodeID) bool {
	_, ok := slices.BinarySearch(s.Members, id)
	return ok
}

// Quorum reports whether ids hold a majority of the members (matchmaker
// quorums are majorities only, and the handover's safety argument is made
// under that model alone). ids outside the set do not count.
func (s MatchmakerSet) Quorum(ids []NodeID) bool {
	n := 0
	for _, id := range ids {
		if s.Has(id) {
			n++
		}
	}
	return 2*n > len(s.Members)
}

// Equal reports whether two sets are the same generation and members.
func (s MatchmakerSet) Equal(o MatchmakerSet) bool {
	return s.Generation == o.Generation && slices.Equal(s.Members, o.Members)
}

// Clone returns a copy that shares no memory with s.
func (s MatchmakerSet) Clone() MatchmakerSet {
	s.Members = slices.Clone(s.Members)
	return s
}

// Fingerprint identifies the set as a decree value (FNV-1a over the
// generation and the members).
func (s MatchmakerSet) Fingerprint() uint64 {
	h := uint64(14695981039346656037)
	mix := func(x uint64) {
		for i := 0; i < 8; i++ {
			h ^= x & 0xff
			h *= 1099511628211
			x >>= 8
		}
	}
	mix(s.Generation)
	for _, id := range s.Members {
		mix(uint64(id))
	}
	return h
}

func (s MatchmakerSet) String() string {
	if s.IsZero() {
		return "g0{}"
	}
	return fmt.Sprintf("g%d%v", s.Generation, s.Members)
}
