package sim

import (
	"hash/fnv"

	"github.com/parosdb/paros/client/checkpoint"
	cl "github.com/parosdb/paros/client/sansio"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/registry"
	"github.com/parosdb/paros/wire/registrypb"
)

// The control plane's board: what every fold of the registry must agree
// on, kept as the folds happen.
//
//   - The registry folds alike everywhere: the state a folder holds after
//     the entry at position p (its checkpoint encoding) is the same on
//     every folder, coordinators included, whether it folded the whole
//     prefix or restored from a checkpoint.
//   - A checkpoint equals the prefix it replaces: a folder that holds the
//     whole prefix verifies every run against its own fold, and a
//     mismatch is a violation (the Folder reports it).
//   - One request folds to one outcome: the outcome a request id is given
//     where it is first folded is the one every later fold of it, and of
//     its retries, reads back.
//   - A journal is tombstoned only once sealed, and no append to a sealed
//     journal is acknowledged at or past its seal.
type regBoard struct {
	digests  map[journal.Seq]uint64
	outcomes map[string]registry.Outcome
	// sealed: the victim's next position when its seal was seen in force.
	sealed map[journal.ID]journal.Seq
	// ackedTo: the end of the highest acknowledged append per journal.
	ackedTo map[journal.ID]journal.Seq
}

func newRegBoard() regBoard {
	return regBoard{digests: map[journal.Seq]uint64{}, outcomes: map[string]registry.Outcome{},
		sealed: map[journal.ID]journal.Seq{}, ackedTo: map[journal.ID]journal.Seq{}}
}

// acked is every acknowledged append (audit.ack).
func (b *regBoard) acked(w *World, j journal.ID, s journal.Seq, n int) {
	if b.digests == nil {
		return // no control plane in this world
	}
	end := s + journal.Seq(n)
	b.ackedTo[j] = max(b.ackedTo[j], end)
	if at, ok := b.sealed[j]; ok && end > at {
		w.audit.violation("registry: no append is acknowledged after a deleted journal's seal",
			"%s sealed at %d, an append acknowledged at [%d,%d)", short(j), at, s, end)
	}
}

// sealedAt records the seal of j seen in force with next position at.
func (b *regBoard) sealedAt(w *World, j journal.ID, at journal.Seq) {
	if prev, ok := b.sealed[j]; ok {
		if prev != at {
			w.audit.violation("registry: no append is acknowledged after a deleted journal's seal",
				"%s seen sealed at %d, then at %d", short(j), prev, at)
		}
		return
	}
	w.audit.gate("registry: a deleted journal is sealed")
	b.sealed[j] = at
	if b.ackedTo[j] > at {
		w.audit.violation("registry: no append is acknowledged after a deleted journal's seal",
			"%s sealed at %d, an append acknowledged up to %d", short(j), at, b.ackedTo[j])
	}
}

// regFold feeds a read's outcome to a control-journal client's folder and
// judges every record it folded.
func (cs *clients) regFold(c *client, out cl.ReaderOutcome) {
	w, rc := cs.w, c.reg
	b := &w.reg.board
	for _, f := range rc.fold.FoldRead(out) {
		switch f.Kind {
		case checkpoint.FoldedEntry:
			if f.Err != nil {
				w.audit.violation("registry: every entry a coordinator writes folds", "c%d at %d: %v", c.idx, f.Seq, f.Err)
				continue
			}
			cs.judgeEntry(c, out.Records[f.Seq-out.From])
		case checkpoint.FoldedCheckpoint:
			if f.Err != nil {
				w.audit.violation("registry: a checkpoint equals the prefix it replaces", "c%d at %d: %v", c.idx, f.Seq, f.Err)
				continue
			}
			if f.Verified {
				w.audit.gate("registry: a folder verifies a checkpoint against its own fold")
			}
			if f.Restored {
				w.audit.gate("registry: a folder restores the registry from a checkpoint")
				if rc.late {
					w.audit.gate("registry: a machine joining from an empty disk folds the registry from a checkpoint")
				}
			}
			b.judgeDigest(w, c, rc.fold.State())
		case checkpoint.FoldedUnreadable:
			w.audit.violation("registry: every run a coordinator writes is readable", "c%d at %d: %v", c.idx, f.Seq, f.Err)
		case checkpoint.FoldedSkipped:
			// The coordinators truncate only at a run's Begin, so a folder
			// that jumps a gap lands on a run: an entry skipped is a
			// truncation that was not the checkpoint pattern's.
			w.audit.violation("registry: the registry is truncated only behind a checkpoint", "c%d skipped the entry at %d", c.idx, f.Seq)
		}
	}
	if st := rc.fold.State(); !rc.fold.Gapped() && !rc.fold.InRun() && len(out.Records) > 0 {
		b.judgeDigest(w, c, st)
		cs.memberApply(c)
	}
}

// judgeEntry checks the outcome of one folded entry against the board.
func (cs *clients) judgeEntry(c *client, rec []byte) {
	w := cs.w
	b := &w.reg.board
	pe, err := registrypb.Decode(rec)
	if err != nil {
		return // Apply would have refused it (FoldedEntry with Err)
	}
	e := registrypb.EntryFromPB(pe)
	st := c.reg.fold.State()
	if e.Kind == registry.EntryJournalGone {
		if v := w.shape.Victim; v >= 0 && e.Journal == w.shape.Journals[v].ID {
			if _, ok := b.sealed[e.Journal]; !ok {
				w.audit.violation("registry: a journal is tombstoned only once sealed", "c%d folded the tombstone of %s unsealed", c.idx, short(e.Journal))
			}
			if st.Gone(e.Journal) {
				w.audit.gate("registry: a deleted journal is tombstoned")
			}
		}
	}
	if len(e.Request) == 0 {
		return
	}
	o, ok := st.Outcome(e.Request)
	if !ok {
		w.audit.violation("registry: one request folds to one outcome", "c%d folded request %q and kept no outcome", c.idx, e.Request)
		return
	}
	prev, seen := b.outcomes[string(e.Request)]
	switch {
	case !seen:
		b.outcomes[string(e.Request)] = o
	case prev != o:
		w.audit.violation("registry: one request folds to one outcome", "c%d: request %q folded to %+v, earlier to %+v", c.idx, e.Request, o, prev)
	default:
		w.audit.gate("registry: a repeated request reads back its outcome")
	}
}

// judgeDigest compares a folder's state with every other fold that
// reached the same position.
func (b *regBoard) judgeDigest(w *World, c *client, st *registrypb.State) {
	h := fnv.New64a()
	h.Write(st.Checkpoint())
	d := h.Sum64()
	at := st.At()
	prev, ok := b.digests[at]
	switch {
	case !ok:
		b.digests[at] = d
	case prev != d:
		w.audit.violation("registry: every machine folds the registry alike", "c%d's registry at %d differs from another fold's", c.idx, at)
	default:
		w.audit.gate("registry: two folds of the registry agree")
	}
}
