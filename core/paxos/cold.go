package paxos

import (
	"errors"
	"fmt"
)

// The hot window. A node keeps in memory only the records it may still
// need often: every slot above its fold, plus the last HotSlotsMax applied
// slots (at most HotBytesMax of record bytes). An applied slot below the
// window is evicted — both the acceptor's record and the learner's chosen
// value — and read back through the ColdLog port when a lagging peer, an
// old read, a retry of an old write or a lagging candidate's Phase 1 asks
// for it. Memory therefore stays bounded however long the retained log
// grows; without it a journal that is never truncated grows until the
// process dies.
//
// Eviction rules (each asserted or checked where it happens):
//
//  1. Only applied slots are evicted: the fold has used them, and every
//     slot above the fold (open rounds, undecided records) stays hot.
//  2. Only durable records are evicted: a record's write must belong to a
//     batch the caller reported durable with MarkDurable. A cold read of a
//     record still in the persist pipeline would find nothing.
//  3. An evicted slot's acceptor record is its chosen value (asserted), so
//     one cold read serves the acceptor (its vote) and the learner (its
//     chosen value) alike, and a later Learn of the same slot teaches
//     nothing.
//
// A cold read that fails (an I/O error, a damaged or missing record) never
// becomes "nothing accepted": the question that needed it goes unanswered
// (no Promise, no vote, an ambiguous verdict, an unserved read) and the
// error is raised as StorageFault, which ends the incarnation (the host
// quarantines the journal and reboots it from its store, where the boot
// scan classifies the damage).

// ColdLog reads back records a node evicted from memory. It is a port like
// Storage: the driver's store implements it, and the core calls it
// synchronously. It is only asked for slots whose records were durable
// when they were evicted.
type ColdLog interface {
	// ColdRecords returns the records at every slot in [from, to), ascending
	// and dense. A slot with no intact record is an error (wrap
	// storage.ErrCorruption for damage), never a shorter answer.
	ColdRecords(from, to Slot) ([]SlotCommand, error)
}

// ColdSource is implemented by a Storage that can hand NewNode a ColdLog.
// A nil ColdLog (or a Storage without the method) keeps every record in
// memory, as unit tests over hand-built storage do.
//
// ColdThrough is the boot's cold prefix: the store verified every record
// of [FirstSlot, ColdThrough] (all present and intact, all at or below the
// durable chosen index) and left them on disk, so Accepted reports none of
// them; the node folds them by reading them back in pages, and memory at
// boot stays bounded however long the retained log is. 0 (or below
// FirstSlot) means no cold prefix.
type ColdSource interface {
	ColdLog() ColdLog
	ColdThrough() Slot
}

// ErrColdRead wraps every failed cold read raised as StorageFault.
var ErrColdRead = errors.New("paros/paxos: cold read")

// coldChunkSlots bounds one cold read while a page is assembled, so a page
// bounded in bytes never reads far past its bound.
const coldChunkSlots = 16

// ColdPurpose names why an evicted record was read back.
type ColdPurpose uint8

const (
	// ColdCatchUp: a catch-up page for a lagging peer.
	ColdCatchUp ColdPurpose = iota
	// ColdPromise: a Promise page for a candidate whose Phase 1 starts
	// below this acceptor's hot window.
	ColdPromise
	// ColdVote: an Accept for an evicted slot (a lagging leader's recovery).
	ColdVote
	// ColdPage: a client read page below the hot window.
	ColdPage
	// ColdDedup: the fold judging a retry of a write below the window.
	ColdDedup
	// ColdLookup: any other Record or Chosen lookup (audits, tests).
	ColdLookup
	// ColdBoot: the fold of the boot's cold prefix.
	ColdBoot
	coldPurposes
)

// ColdReads counts cold reads by purpose.
type ColdReads [coldPurposes]uint64

// Total is the number of cold reads.
func (c ColdReads) Total() uint64 {
	var t uint64
	for _, v := range c {
		t += v
	}
	return t
}

// coldReader is the acceptor's and learner's shared access to the port.
type coldReader struct {
	log ColdLog
	// fault is the first failed read; it ends the incarnation.
	fault error
	reads ColdReads
}

// read returns the records at [from, to), or false after raising a fault.
func (c *coldReader) read(why ColdPurpose, from, to Slot) ([]SlotCommand, bool) {
	if c.log == nil || from >= to {
		return nil, c.log != nil
	}
	c.reads[why]++
	recs, err := c.log.ColdRecords(from, to)
	if err == nil && len(recs) != int(to-from) {
		err = fmt.Errorf("asked for slots [%d, %d), got %d records", from, to, len(recs))
	}
	if err == nil {
		for i, r := range recs {
			if r.Slot != from+Slot(i) || r.Ballot.IsZero() || !r.Command.Valid() {
				err = fmt.Errorf("slot %d answered with an invalid record at slot %d", from+Slot(i), r.Slot)
				break
			}
		}
	}
	if err != nil {
		if c.fault == nil {
			c.fault = fmt.Errorf("%w: slots [%d, %d): %w", ErrColdRead, from, to, err)
		}
		return nil, false
	}
	return recs, true
}

// one reads a single slot.
func (c *coldReader) one(why ColdPurpose, s Slot) (SlotCommand, bool) {
	recs, ok := c.read(why, s, s+1)
	if !ok || len(recs) == 0 {
		return SlotCommand{}, false
	}
	return recs[0], true
}

// evict moves the hot window up past every applied, durable slot beyond
// the HotSlotsMax / HotBytesMax bounds (the rules in this file's comment).
func (n *Node) evict() {
	if n.cold.log == nil {
		return
	}
	a, r := n.acc, n.lrn
	base := a.log.base
	bytes := a.hotBytes
	for base <= r.applied {
		if int(r.applied+1-base) <= n.opts.HotSlotsMax && bytes <= n.opts.HotBytesMax {
			break
		}
		rec := a.log.at(base)
		if rec == nil || !rec.ok || rec.batch > n.durableBatch {
			break
		}
		if c, ok := r.Chosen(base); !ok || !c.Equal(rec.cmd) {
			panic(fmt.Sprintf("paxos: node %d applied slot %d whose record %s is not its chosen value", n.cfg.ID, base, rec.cmd))
		}
		bytes -= commandBytes(rec.cmd)
		base++
	}
	if base == a.log.base {
		return
	}
	n.counters.Evicted += base - a.log.base
	a.evictBelow(base)
	r.chosen.dropBelow(base)
}

// MarkDurable tells the node that every write of every Ready up to and
// including the one numbered batch (Ready.Batch) is durable. Records of
// those batches may leave memory (the hot window).
func (n *Node) MarkDurable(batch uint64) {
	if batch > n.durableBatch {
		n.durableBatch = batch
	}
	n.evict()
	n.assertInvariants()
}

// StorageFault is the first failed cold read of this incarnation, or nil.
// A non-nil fault means the node could not answer something from its
// store: drop the node and reboot the journal from its store.
func (n *Node) StorageFault() error { return n.cold.fault }

// HotBase is the first slot held in memory (records below it, down to the
// floor, are read back through the ColdLog).
func (n *Node) HotBase() Slot { return n.acc.log.base }
