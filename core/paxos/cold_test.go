package paxos_test

// This file checks the hot window (cold.go): an applied record leaves
// memory only once its batch is reported durable, and everything that asks
// for an evicted record — a read page, the fold judging a retry, a
// candidate's Phase 1, a lagging peer's catch-up — gets the same answer it
// got from memory, read back from the store. A cold read that fails
// answers nothing (no Promise page, no catch-up page, an unserved read) and
// raises StorageFault; it never reads as "nothing accepted". A solo node is
// driven by hand over memstore.

import (
	"errors"
	"fmt"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage"
)

// coldSolo is a multi-writer solo node with a two-slot hot window that
// learned ten writes ("r1" … "r10") from a catch-up page, all synced.
func coldSolo(t *testing.T) *solo {
	t.Helper()
	opts := soloOpts()
	opts.HotSlotsMax, opts.HotBytesMax = 2, 1<<20
	s := newSolo(t, journal.ModeMulti, opts, nil)
	var page []paxos.SlotCommand
	for i := 1; i <= 10; i++ {
		page = append(page, paxos.SlotCommand{Slot: paxos.Slot(i), Ballot: bal(1, 2), Command: unfenced(fmt.Sprintf("r%d", i))})
	}
	s.step(paxos.Message{Type: paxos.MsgCatchUpResponse, From: 2, To: 1, Entries: page})
	expectEq(t, "applied", s.node.Applied(), paxos.Slot(10))
	return s
}

func TestHotWindowEvictsOnlyDurableAppliedRecords(t *testing.T) {
	s := coldSolo(t)

	hotBefore := s.node.HotBase()
	s.node.MarkDurable(^uint64(0)) // every batch so far was synced by flush

	expectEq(t, "hot base before MarkDurable", hotBefore, paxos.Slot(1))
	expectEq(t, "hot base after MarkDurable (the last two applied slots stay)", s.node.HotBase(), paxos.Slot(9))
	expectEq(t, "evicted", s.node.Counters().Evicted, uint64(8))
}

func TestHotWindowServesEvictedRecordsFromTheStore(t *testing.T) {
	s := coldSolo(t)
	s.node.MarkDurable(^uint64(0))

	page := s.node.ReadLog(1, 100, 1<<20)
	_, _, held := s.node.Acceptor().Record(3)
	retry := s.step(paxos.Message{Type: paxos.MsgCatchUpResponse, From: 2, To: 1,
		Entries: []paxos.SlotCommand{{Slot: 11, Ballot: bal(1, 2), Command: unfenced("r11")}}})
	promise := ofType(s.step(paxos.Message{Type: paxos.MsgPrepare, From: 2, To: 1, Ballot: bal(5, 2), Slot: 1}).Messages, paxos.MsgPromise)
	catchUp := ofType(s.step(paxos.Message{Type: paxos.MsgCatchUpRequest, From: 3, To: 1, Slot: 2}).Messages, paxos.MsgCatchUpResponse)

	if page.Kind != paxos.ReadPage || len(page.Records) != 10 || string(page.Records[0]) != "r1" || string(page.Records[9]) != "r10" {
		t.Fatalf("read page from 1 = kind %d, %d records", page.Kind, len(page.Records))
	}
	expectEq(t, "record 3 read back", held, true)
	expectEq(t, "the next write folds", len(retry.Applied), 1)
	if len(promise) != 1 || len(promise[0].Entries) < 10 || promise[0].Entries[0].Slot != 1 || promise[0].Entries[9].Slot != 10 {
		t.Fatalf("Promise from slot 1 must report every evicted record: %v", promise)
	}
	if len(catchUp) != 1 || len(catchUp[0].Entries) != 10 || catchUp[0].Entries[0].Slot != 2 {
		t.Fatalf("catch-up from slot 2 = %v, want slots 2..11", catchUp)
	}
	c := s.node.Counters().ColdReads
	if c[paxos.ColdPage] == 0 || c[paxos.ColdPromise] == 0 || c[paxos.ColdCatchUp] == 0 {
		t.Fatalf("cold reads by purpose = %v: a path did not read the store", c)
	}
	if err := s.node.StorageFault(); err != nil {
		t.Fatalf("storage fault on an intact store: %v", err)
	}
}

func TestHotWindowRetryOfAnEvictedWriteIsJudgedFromTheStore(t *testing.T) {
	opts := soloOpts()
	opts.HotSlotsMax, opts.HotBytesMax = 1, 1<<20
	s := newSolo(t, journal.ModeSingle, opts, nil)
	u := journal.LeaderUUID{Hi: 7, Lo: 7}
	w1 := fencedWrite(u, 1, "a")
	s.step(paxos.Message{Type: paxos.MsgCatchUpResponse, From: 2, To: 1, Entries: []paxos.SlotCommand{
		{Slot: 1, Ballot: bal(1, 2), Command: journal.SetLeader(u, journal.LeaderUUID{})},
		{Slot: 2, Ballot: bal(1, 2), Command: w1},
		{Slot: 3, Ballot: bal(1, 2), Command: fencedWrite(u, 2, "b")}}})
	s.node.MarkDurable(^uint64(0))

	rd := s.step(paxos.Message{Type: paxos.MsgCatchUpResponse, From: 2, To: 1, Entries: []paxos.SlotCommand{
		{Slot: 4, Ballot: bal(1, 2), Command: w1}, // an identical retry of the write in evicted slot 2
		{Slot: 5, Ballot: bal(1, 2), Command: fencedWrite(u, 1, "other")}}})

	expectEq(t, "slot 2 evicted", s.node.HotBase() > 2, true)
	expectEq(t, "a retry with the same bytes", rd.Applied[0].Outcome.Kind, journal.Duplicate)
	expectEq(t, "other bytes at a taken position", rd.Applied[1].Outcome.Kind, journal.Refused)
	expectEq(t, "dedup read the store", s.node.Counters().ColdReads[paxos.ColdDedup] > 0, true)
}

func TestHotWindowFailedColdReadAnswersNothing(t *testing.T) {
	s := coldSolo(t)
	s.node.MarkDurable(^uint64(0))
	if !s.store.Rot(4) {
		t.Fatal("no durable record at slot 4 to rot")
	}

	prep := s.step(paxos.Message{Type: paxos.MsgPrepare, From: 2, To: 1, Ballot: bal(5, 2), Slot: 1})
	catchUp := s.step(paxos.Message{Type: paxos.MsgCatchUpRequest, From: 3, To: 1, Slot: 2})
	page := s.node.ReadLog(1, 100, 1<<20)

	if n := len(ofType(prep.Messages, paxos.MsgPromise)) + len(ofType(prep.Messages, paxos.MsgNack)); n != 0 {
		t.Fatalf("a Prepare over a damaged evicted record was answered: %v", prep.Messages)
	}
	if n := len(ofType(catchUp.Messages, paxos.MsgCatchUpResponse)); n != 0 {
		t.Fatalf("a catch-up over a damaged evicted record was answered: %v", catchUp.Messages)
	}
	expectEq(t, "read page kind", page.Kind, paxos.ReadNotHeld)
	err := s.node.StorageFault()
	if !errors.Is(err, paxos.ErrColdRead) || !errors.Is(err, storage.ErrCorruption) {
		t.Fatalf("StorageFault = %v, want ErrColdRead wrapping ErrCorruption", err)
	}
}
