package pebblestore

import (
	"github.com/parosdb/paros/core/journal"
)

// DeleteJournal deletes every key of journal id (its marker, scalars and
// records) in one synced range delete, and forgets its handle. It is how a
// machine retires from a journal: the caller has established that the
// cluster no longer needs anything this store holds (the journal's node
// judged the retire's evidence), because a deleted store is an amnesiac
// one. A later Boot of the id finds an unformatted store.
func (db *DB) DeleteJournal(id journal.ID) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.usableLocked(); err != nil {
		return err
	}
	lower, upper := journalBounds(id)
	pb := db.pdb.NewBatch()
	if err := pb.DeleteRange(lower, upper, nil); err != nil {
		_ = pb.Close()
		return err
	}
	if err := db.applyLocked(pb, true); err != nil {
		return err
	}
	delete(db.journals, id)
	return nil
}
