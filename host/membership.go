package host

import (
	"errors"
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/storage"
)

// AddJournal starts serving a journal at run time (claim FirstBoot). A
// joiner of a reconfiguration (spec.Joiner) has its store formatted as a
// joiner's, and the node believes nothing until a leader or the
// matchmakers tell it its configuration: it answers Phase 1 at once, votes
// once a ballot's configuration names it, and catches up (or jumps to the
// trim point) like any lagging member. A journal the control plane created
// (not a joiner) is formatted under its bootstrap configuration, as
// formation formats the plan's: its members format it each when they fold
// its creation, and it elects once a quorum of them has.
func (h *Host) AddJournal(s JournalSpec) error { return h.AddJournals([]JournalSpec{s}) }

// AddJournals starts serving several journals at run time, each as
// AddJournal does one, formatting all their stores in one synced commit
// (a registry page that creates many journals costs a member one fsync).
// Nothing is added unless every spec is acceptable; a journal whose store
// then fails to boot is added Down, the others serve, and the error names
// each failure.
func (h *Host) AddJournals(specs []JournalSpec) error {
	if h.stopped {
		return ErrStopped
	}
	js := make([]*journalRT, 0, len(specs))
	seen := make(map[journal.ID]bool, len(specs))
	for _, s := range specs {
		if !s.ID.IsSet() {
			return fmt.Errorf("paros/host: journal id %s is unset", s.ID)
		}
		if h.journal(s.ID) != nil || seen[s.ID] {
			return fmt.Errorf("paros/host: journal %s is already served here", s.ID)
		}
		seen[s.ID] = true
		if s.Claim != storage.ClaimFirstBoot || s.Replica {
			return fmt.Errorf("paros/host: journal %s: only an acceptor's first boot is added at run time", s.ID)
		}
		j, err := newJournalRT(h.id, s)
		if err != nil {
			return err
		}
		js = append(js, j)
	}
	if len(js) == 0 {
		return nil
	}
	h.journals = append(h.journals, js...)
	slices.SortFunc(h.journals, func(a, b *journalRT) int { return a.spec.ID.Compare(b.spec.ID) })
	for _, j := range js {
		if j.spec.Joiner {
			h.counters.Joined++
		} else {
			h.counters.Created++
		}
	}
	h.reindex()
	h.bootAll(js, storage.ClaimFirstBoot)
	var faults []error
	for _, j := range js {
		if j.status != Live {
			faults = append(faults, j.fault)
			continue
		}
		if !j.spec.Joiner && h.electionRank(j) == 0 {
			// A journal created at run time: its first member in the
			// election order campaigns at the next tick (CampaignSoon).
			j.node.CampaignSoon()
		}
	}
	h.flush()
	return errors.Join(faults...)
}

// SetReplicas replaces the replica list of every journal this process
// serves (the operator added or removed a replica machine): its leaders
// push chosen values to the new list, its acceptors answer the new
// replicas' reads and catch-ups, and a later boot uses it too. Nothing is
// changed unless every journal accepts the list.
func (h *Host) SetReplicas(ids []paxos.NodeID) error {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	for _, j := range h.journals {
		c := j.cfg
		c.Replicas = ids
		if err := c.Validate(); err != nil {
			return fmt.Errorf("paros/host: journal %s: %w", j.spec.ID, err)
		}
	}
	for _, j := range h.journals {
		if j.status == Live {
			if err := j.node.SetReplicas(ids); err != nil {
				return fmt.Errorf("paros/host: journal %s: %w", j.spec.ID, err)
			}
			// The node woke (a journal with replicas never rests): the
			// host must visit it again, or a quiet leader would never
			// beat the new replica, which learns from that beat what to
			// fetch and would stay unserved for good.
			h.drain(j)
		}
	}
	for _, j := range h.journals {
		j.spec.Replicas, j.cfg.Replicas = ids, ids
	}
	h.flush()
	return nil
}

// admin answers Reconfigure, Retire and Handoff.
func (h *Host) admin(j *journalRT, c Call) AdminReply {
	if j.cfg.Replica {
		// A replica is in no configuration: it can neither lead a change
		// nor vouch for a retirement.
		return AdminReply{Refusal: "replica", Detail: fmt.Sprintf("journal %s: node %d is a replica", j.spec.ID, h.id)}
	}
	switch c.Kind {
	case CallReconfigure:
		sys, err := quorum.New(c.Reconfigure.Members, c.Reconfigure.Quorum)
		if err != nil {
			return AdminReply{Refusal: "invalid_configuration", Detail: err.Error()}
		}
		err = j.node.Reconfigure(sys)
		switch {
		case errors.Is(err, paxos.ErrNoMatchmakers):
			return AdminReply{Refusal: "no_matchmakers", Detail: err.Error()}
		case err != nil:
			return AdminReply{Refusal: "invalid_configuration", Detail: err.Error()}
		}
		return AdminReply{}
	case CallRetire:
		if r := j.node.MayRetire(c.Retire.Watermark); r != paxos.RetireOK {
			return AdminReply{Refusal: r.String(), Detail: fmt.Sprintf("journal %s: configuration %s", j.spec.ID, j.node.Configuration())}
		}
		if err := h.retire(j); err != nil {
			return AdminReply{Refusal: "storage", Detail: err.Error()}
		}
		return AdminReply{}
	case CallHandoff:
		return h.handoffCall(j, c.Handoff)
	}
	return AdminReply{Refusal: "unknown_call"}
}

// RemoveJournal stops serving a journal the control plane deleted and
// deletes its store: nothing of it is sent again and its parked calls are
// answered unavailable. The caller recorded the removal first (a restart
// must not serve the journal again, nor look for its store). Removing a
// journal not served here is a no-op: the removal is idempotent.
func (h *Host) RemoveJournal(id journal.ID) error { return h.RemoveJournals([]journal.ID{id}) }

// RemoveJournals removes several journals as RemoveJournal does one, with
// one renumbering of the table (a page of tombstones removes hundreds).
// Every store deletion is asked for; the error names each that failed.
func (h *Host) RemoveJournals(ids []journal.ID) error {
	gone := make(map[*journalRT]bool, len(ids))
	var js []*journalRT // in the caller's order: replies leave in it
	for _, id := range ids {
		if j := h.journal(id); j != nil && !gone[j] {
			gone[j] = true
			js = append(js, j)
		}
	}
	return h.retireAll(js)
}

// retire removes an honoured journal: nothing of it is sent again, its
// parked calls are answered unavailable, and only then is its store
// deleted (the node's MayRetire judged the five conditions first).
func (h *Host) retire(j *journalRT) error { return h.retireAll([]*journalRT{j}) }

// retireAll removes journals js of the table (distinct), in order: each
// ends its incarnation, the table is renumbered once, then every store
// deletion is asked for; the error names each that failed.
func (h *Host) retireAll(js []*journalRT) error {
	if len(js) == 0 {
		return nil
	}
	gone := make(map[*journalRT]bool, len(js))
	for _, j := range js {
		// A retirement is not a fault: no quarantine is counted and the
		// process's last fault stays what it was (if its other journals
		// are all down, it stops naming why).
		h.endIncarnation(j, Down, fmt.Errorf("journal %s retired", j.spec.ID))
		h.counters.Retired++
		gone[j] = true
	}
	h.journals = slices.DeleteFunc(h.journals, func(j *journalRT) bool { return gone[j] })
	h.reindex()
	var errs []error
	for _, j := range js {
		if err := h.env.DeleteStore(j.spec.ID); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
