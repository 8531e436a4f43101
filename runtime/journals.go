package runtime

import (
	"context"
	"maps"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/host"
)

// The served journals: the table of specs the runtime keeps beside its
// host, and the calls that add journals to the host and remove them from
// it at run time (the control plane's creations and deletions, a
// reconfiguration's joins and retires). Each change runs on the event
// loop; the specs are what the loop leaves served.

// Journals lists the journals served.
func (r *Runtime) Journals() []journal.ID {
	r.specMu.Lock()
	defer r.specMu.Unlock()
	return slices.SortedFunc(maps.Keys(r.specs), journal.ID.Compare)
}

// Spec returns the configuration a served journal was booted or joined
// under (its format marker's; with matchmakers the configuration in force
// may have moved since: Inspect it).
func (r *Runtime) Spec(id journal.ID) (host.JournalSpec, bool) {
	r.specMu.Lock()
	defer r.specMu.Unlock()
	j, ok := r.specs[id]
	return j, ok
}

// AddJournal starts serving a journal this machine joins (host.AddJournal:
// a joiner's first boot formats its store) and waits for the outcome.
func (r *Runtime) AddJournal(ctx context.Context, spec host.JournalSpec) error {
	return r.AddJournals(ctx, []host.JournalSpec{spec})
}

// AddJournals starts serving journals the control plane placed here
// (host.AddJournals: their stores formatted in one synced commit) and
// waits for the outcome. Every journal that boots is served, even when
// another failed (the error names each failure).
func (r *Runtime) AddJournals(ctx context.Context, specs []host.JournalSpec) error {
	if r.ph != nil {
		return ErrProxy
	}
	return r.onLoop(ctx, func() error {
		err := r.h.AddJournals(specs)
		r.specMu.Lock()
		defer r.specMu.Unlock()
		for _, s := range specs {
			if st, _ := r.h.Status(s.ID); st == host.Live {
				r.specs[s.ID] = s
			}
		}
		return err
	})
}

// Holds reports which of ids the host holds in any status: served,
// quarantined, or down after a store that refused to boot (adding one
// again is refused: it stays as it is until the process restarts).
func (r *Runtime) Holds(ctx context.Context, ids []journal.ID) (map[journal.ID]bool, error) {
	res := make(chan map[journal.ID]bool, 1)
	err := r.onLoop(ctx, func() error {
		held := make(map[journal.ID]bool, len(ids))
		for _, id := range ids {
			if st, _ := r.h.Status(id); st != 0 {
				held[id] = true
			}
		}
		res <- held
		return nil
	})
	if err != nil {
		return nil, err
	}
	return <-res, nil
}

// RemoveJournal stops serving a deleted journal and deletes its store
// (host.RemoveJournal), then forgets its spec.
func (r *Runtime) RemoveJournal(ctx context.Context, id journal.ID) error {
	return r.RemoveJournals(ctx, []journal.ID{id})
}

// RemoveJournals removes several deleted journals as RemoveJournal does
// one (host.RemoveJournals: one renumbering of the table for them all),
// and forgets each the host no longer serves.
func (r *Runtime) RemoveJournals(ctx context.Context, ids []journal.ID) error {
	if r.ph != nil {
		return ErrProxy
	}
	return r.onLoop(ctx, func() error {
		err := r.h.RemoveJournals(ids)
		r.specMu.Lock()
		defer r.specMu.Unlock()
		for _, id := range ids {
			if st, _ := r.h.Status(id); st == 0 {
				delete(r.specs, id)
			}
		}
		return err
	})
}

// Forget drops a retired journal from the served list (the host removed it
// when it honoured the retire).
func (r *Runtime) Forget(id journal.ID) {
	r.specMu.Lock()
	defer r.specMu.Unlock()
	delete(r.specs, id)
}
