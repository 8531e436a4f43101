package machine

import (
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/machinerecord"
)

// The machine's part in matchmaker-set generations. Every node machine of
// a cell with matchmakers runs a matchmaker role: a founder serves the
// founding set (generation 1) from formation, a machine admitted later is
// fresh until a handover names it. Its registry store is formatted under
// the founding set when the machine joins the plan (a founder's when it
// votes for it), before the record that commits the plan is written, so a
// restart never finds a member without one (refused as amnesia). The
// newest chosen set the machine learns is kept in its record, so a
// restarted node matchmakes with it rather than with founders that may all
// be gone.

// runsMatchmaker reports whether a machine of rec runs a matchmaker role.
func runsMatchmaker(rec machinerecord.Record) bool {
	return len(rec.Matchmakers) > 0 && !rec.Replica() && !rec.Proxy()
}

// formatRegistry formats the machine's registry store under the founding
// set if it runs a matchmaker and the store holds no marker; a marker of
// another configuration is refused ("storage").
func (m *Machine) formatRegistry(rec machinerecord.Record) string {
	if !runsMatchmaker(rec) {
		return ""
	}
	reg := m.db.Registry()
	want := storage.RegistryMarker{Node: paxos.NodeID(rec.NodeID), Matchmakers: nodeIDs(rec.Matchmakers)}
	bs, err := reg.Boot()
	switch {
	case err != nil:
		return "storage"
	case bs.Marker == nil:
		if reg.Format(want) != nil {
			return "storage"
		}
	case !bs.Marker.Equal(want):
		return "storage"
	}
	return ""
}

// upgradeRegistry gives an admitted node machine whose record predates
// matchmaker-set generations (MatchmakerRegistry unset) the fresh registry
// it would have been given at admission. Such a machine ran no matchmaker
// and was never a member of any set, so a fresh one holds everything it
// ever knew; a founder's registry was always formatted at formation and is
// judged as before (a missing one is amnesia).
func (m *Machine) upgradeRegistry() error {
	rec := m.rec
	if !runsMatchmaker(rec) || rec.Founder() || rec.MatchmakerRegistry {
		return nil
	}
	if refusal := m.formatRegistry(rec); refusal != "" {
		return fmt.Errorf("paros/machine: give the admitted machine its matchmaker registry: %s", refusal)
	}
	rec.MatchmakerRegistry = true
	rec.Incarnation++
	if err := machinerecord.Store(m.fs, m.cfg.DataDir, rec); err != nil {
		return fmt.Errorf("paros/machine: record the matchmaker registry: %w", err)
	}
	m.rec = rec
	m.log.Info("formatted a fresh matchmaker registry for a machine admitted before generations")
	return nil
}

// matchmakerSetOf is the newest chosen set rec keeps (zero: the founding
// set).
func matchmakerSetOf(rec machinerecord.Record) paxos.MatchmakerSet {
	if rec.MatchmakerGeneration == 0 {
		return paxos.MatchmakerSet{}
	}
	return paxos.MatchmakerSet{Generation: rec.MatchmakerGeneration, Members: nodeIDs(rec.MatchmakerSet)}
}

// keepMatchmakerSet records s in the machine record if it is newer than
// the one kept. The runtime calls it on its loop, so the write happens on
// a goroutine of its own; a failed write is logged and costs only a longer
// search for the chain after the next restart.
func (m *Machine) keepMatchmakerSet(s paxos.MatchmakerSet) {
	s = s.Clone()
	go func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if s.Generation <= m.rec.MatchmakerGeneration || m.rec.CellID == 0 {
			return
		}
		next := m.rec
		next.MatchmakerGeneration = s.Generation
		next.MatchmakerSet = nil
		for _, id := range s.Members {
			next.MatchmakerSet = append(next.MatchmakerSet, uint64(id))
		}
		slices.Sort(next.MatchmakerSet)
		next.Incarnation++
		if err := next.Validate(); err != nil {
			m.log.Error("a learned matchmaker set does not fit the record", "set", s.String(), "err", err)
			return
		}
		if err := machinerecord.Store(m.fs, m.cfg.DataDir, next); err != nil {
			m.log.Error("keeping the learned matchmaker set failed", "set", s.String(), "err", err)
			return
		}
		m.rec = next
		m.log.Info("following a new matchmaker set", "generation", s.Generation, "members", s.Members)
	}()
}
