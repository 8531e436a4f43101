package sim

import (
	"errors"
	"slices"

	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage"
)

// startMatchmaker boots a matchmaker process's role from its registry
// store, with the boot refusals a journal store has: a wiped store is
// refused as amnesia and an edited configuration as a mismatch. It reports
// whether the role runs.
func (w *World) startMatchmaker(p *proc, claim storage.Claim, edited bool) bool {
	want := storage.RegistryMarker{Node: p.id, Matchmakers: slices.Clone(w.shape.Matchmakers)}
	if edited {
		// The operator's file lost a member of the set.
		want.Matchmakers = slices.DeleteFunc(want.Matchmakers, func(id paxos.NodeID) bool { return id != p.id && id == w.shape.Matchmakers[0] })
		if len(want.Matchmakers) == len(w.shape.Matchmakers) {
			want.Matchmakers = want.Matchmakers[:len(want.Matchmakers)-1]
		}
	}
	bs, err := p.registry.Boot()
	if err == nil {
		var dec storage.BootDecision
		dec, err = storage.CheckRegistryBoot(claim, bs.Marker, want)
		if err == nil && dec == storage.DecideFormat {
			if err = p.registry.Format(want); err == nil {
				bs, err = p.registry.Boot()
			}
		}
	}
	switch {
	case err == nil:
	case p.wiped && errors.Is(err, storage.ErrAmnesia):
		w.audit.gate("a wiped matchmaker's boot is refused as amnesia")
		return false
	case edited && errors.Is(err, storage.ErrConfigMismatch):
		w.audit.gate("a matchmaker restarted under an edited configuration is refused")
		return false
	default:
		w.audit.violation("a matchmaker boots from its own store", "n%d: %v", p.id, err)
		return false
	}
	mm, err := matchmaker.New(p.id, bs.Generation, bs.Registries)
	if err != nil {
		w.audit.violation("a matchmaker boots from its own store", "n%d: %v", p.id, err)
		return false
	}
	p.h.SetMatchmaker(mm)
	w.audit.registrySynced(p)
	return true
}

// operatorBit marks the call ids of the operator's Admin calls (their
// replies go to the operator, not to a client).
const operatorBit = 1 << 62
