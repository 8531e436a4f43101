package registry

import (
	"cmp"
	"fmt"
	"slices"
)

// Place chooses n distinct up machines for a new journal, leaving out the
// ones in exclude. It is deterministic in the folded state:
//
//  1. the candidates are the up machines not excluded, ordered least
//     loaded first (Load), ties by node id;
//  2. each pick is the first candidate whose failure domain no earlier
//     pick has, while any such remains, else the first candidate left.
//
// A failure domain is compared as written: machines that name none share
// the empty domain. The ids come back sorted. Fewer than n candidates is
// ErrNotEnoughMachines; n < 1 is ErrBadCount.
func (s *State) Place(n int, exclude []uint64) ([]uint64, error) {
	return s.place(n, exclude, nil)
}

// PlaceWith is Place counting pending[node] more journals on each node
// (the ones a batch of entries not yet folded will place there), with
// nothing excluded.
func (s *State) PlaceWith(n int, pending map[uint64]int) ([]uint64, error) {
	return s.place(n, nil, pending)
}

func (s *State) place(n int, exclude []uint64, pending map[uint64]int) ([]uint64, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: asked for %d", ErrBadCount, n)
	}
	type cand struct {
		m    Machine
		load int
	}
	var cands []cand
	up := 0
	for _, m := range s.machines {
		if m.State != MachineUp {
			continue
		}
		up++
		if !slices.Contains(exclude, m.ID) {
			cands = append(cands, cand{m, s.load[m.ID] + pending[m.ID]})
		}
	}
	if len(cands) < n {
		return nil, fmt.Errorf("%w: want %d, %d up, %d of them excluded", ErrNotEnoughMachines, n, up, up-len(cands))
	}
	slices.SortFunc(cands, func(a, b cand) int {
		return cmp.Or(cmp.Compare(a.load, b.load), cmp.Compare(a.m.ID, b.m.ID))
	})
	domains := map[string]bool{}
	chosen := make([]uint64, 0, n)
	for len(chosen) < n {
		pick := slices.IndexFunc(cands, func(c cand) bool { return !domains[c.m.FailureDomain] })
		if pick < 0 {
			pick = 0
		}
		chosen = append(chosen, cands[pick].m.ID)
		domains[cands[pick].m.FailureDomain] = true
		cands = slices.Delete(cands, pick, pick+1)
	}
	slices.Sort(chosen)
	return chosen, nil
}
