package lincheck

// These tests check the checker: a history that is linearizable passes, a
// history that is not (a read that sees a write before it could have
// happened, a duplicate verdict without an identical write, a lost
// acknowledged write) is found Illegal, and an ambiguous write may or may
// not have taken effect.

import (
	"math"
	"testing"
	"time"

	"github.com/parosdb/paros/core/journal"
)

var u = journal.LeaderUUID{Hi: 1, Lo: 1}

func setLeader(call, ret int64) Op {
	return Op{Client: 0, Call: call, Return: ret,
		In:  Input{Kind: OpSetLeader, Cmd: journal.SetLeader(u, journal.LeaderUUID{})},
		Out: Output{Outcome: journal.Outcome{Kind: journal.LeaderSet, View: journal.View{Leader: u, NextSeq: 1, FirstSeq: 1}}}}
}

func write(call, ret int64, seq journal.Seq, rec string, out Output) Op {
	return Op{Client: 0, Call: call, Return: ret, In: Input{Kind: OpWrite,
		Cmd: journal.Write(journal.Entry{Leader: u, Seq: seq, Records: [][]byte{[]byte(rec)}})}, Out: out}
}

func accepted(seq journal.Seq) Output {
	return Output{Outcome: journal.Outcome{Kind: journal.Accepted, Seq: seq, Count: 1,
		View: journal.View{Leader: u, NextSeq: seq + 1, FirstSeq: 1}}}
}

func read(client int, call, ret int64, from journal.Seq, recs []string, next journal.Seq) Op {
	out := Output{Served: true, View: journal.View{Leader: u, NextSeq: next, FirstSeq: 1}}
	for _, r := range recs {
		out.Records = append(out.Records, RecordPrint([]byte(r)))
	}
	return Op{Client: client, Call: call, Return: ret, In: Input{Kind: OpRead, From: from}, Out: out}
}

func check(t *testing.T, ops []Op) Result {
	t.Helper()
	return Check(journal.ModeSingle, ops, 5*time.Second)
}

func TestALinearizableHistoryPasses(t *testing.T) {
	ops := []Op{setLeader(0, 1), write(2, 3, 1, "a", accepted(1)), read(1, 4, 5, 1, []string{"a"}, 2)}
	if r := check(t, ops); r != "Ok" {
		t.Fatalf("got %s", r)
	}
}

func TestAReadOfAnUnwrittenRecordIsIllegal(t *testing.T) {
	ops := []Op{setLeader(0, 1), read(1, 2, 3, 1, []string{"a"}, 2), write(4, 5, 1, "a", accepted(1))}
	if r := check(t, ops); r != "Illegal" {
		t.Fatalf("a read that saw a later write: got %s", r)
	}
}

func TestALostAcknowledgedWriteIsIllegal(t *testing.T) {
	ops := []Op{setLeader(0, 1), write(2, 3, 1, "a", accepted(1)), read(1, 4, 5, 1, nil, 1)}
	if r := check(t, ops); r != "Illegal" {
		t.Fatalf("a read after an acked write that misses it: got %s", r)
	}
}

func TestADuplicateNeedsTheIdenticalWrite(t *testing.T) {
	dup := Output{Outcome: journal.Outcome{Kind: journal.Duplicate, Seq: 1, Count: 1, View: journal.View{Leader: u, NextSeq: 2, FirstSeq: 1}}}
	ok := []Op{setLeader(0, 1), write(2, 3, 1, "a", accepted(1)), write(4, 5, 1, "a", dup)}
	if r := check(t, ok); r != "Ok" {
		t.Fatalf("an identical retry acked Duplicate: got %s", r)
	}
	bad := []Op{setLeader(0, 1), write(2, 3, 1, "a", accepted(1)), write(4, 5, 1, "b", dup)}
	if r := check(t, bad); r != "Illegal" {
		t.Fatalf("other bytes acked Duplicate: got %s", r)
	}
}

func TestAnAmbiguousWriteMayOrMayNotLand(t *testing.T) {
	amb := Output{Ambiguous: true}
	landed := []Op{setLeader(0, 1), write(2, 3, 1, "a", amb), read(1, 4, 5, 1, []string{"a"}, 2)}
	missing := []Op{setLeader(0, 1), write(2, 3, 1, "a", amb), read(1, 4, 5, 1, nil, 1)}
	if r := check(t, landed); r != "Ok" {
		t.Fatalf("ambiguous write seen: got %s", r)
	}
	if r := check(t, missing); r != "Ok" {
		t.Fatalf("ambiguous write not seen: got %s", r)
	}
}

// An ambiguous fenced write whose identical resend was later answered
// Duplicate returns when the resend did; a write of other bytes at the
// same position settles nothing. The history stays linearizable, and a
// read after the resend that does not see the write is still caught.
func TestAnAmbiguousWriteSettlesWhenItsIdenticalResendLands(t *testing.T) {
	dup := Output{Outcome: journal.Outcome{Kind: journal.Duplicate, Seq: 1, Count: 1,
		View: journal.View{Leader: u, NextSeq: 2, FirstSeq: 1}}}
	amb := write(2, 3, 1, "a", Output{Ambiguous: true})
	ops := []Op{setLeader(0, 1), amb, write(4, 9, 1, "a", dup)}

	got := settledReturns(ops)

	if got[1] != 9 || got[0] != math.MaxInt64 {
		t.Fatalf("settled returns %v: want the ambiguous write to return at 9", got)
	}
	settledOnly := []Op{setLeader(0, 1), amb, write(4, 9, 1, "a", dup), read(1, 10, 11, 1, []string{"a"}, 2)}
	if r := check(t, settledOnly); r != "Ok" {
		t.Fatalf("an ambiguous write settled by its resend: got %s", r)
	}
	lost := []Op{setLeader(0, 1), amb, write(4, 9, 1, "a", dup), read(1, 10, 11, 1, nil, 1)}
	if r := check(t, lost); r != "Illegal" {
		t.Fatalf("a read after the resend that misses the write: got %s", r)
	}
}

// An ambiguous write is also settled once its position is shown to hold
// other bytes (another write landed there, or a read saw them): it never
// landed and never will. An ambiguous truncation is settled once a view
// shows the floor at or past it. A write whose position is never shown
// taken stays open.
func TestAmbiguityIsSettledByEvidenceThatItCanChangeNothing(t *testing.T) {
	amb := write(2, 3, 1, "a", Output{Ambiguous: true})
	other := write(4, 6, 1, "b", accepted(1))
	sawB := read(1, 7, 8, 1, []string{"b"}, 2)
	open := write(2, 3, 5, "z", Output{Ambiguous: true})
	trunc := Op{Client: 0, Call: 10, Return: 11, In: Input{Kind: OpTruncate, Cmd: journal.Truncate(u, 2)}, Out: Output{Ambiguous: true}}
	floor := Op{Client: 2, Call: 12, Return: 13, In: Input{Kind: OpRead, From: 2},
		Out: Output{Served: true, View: journal.View{Leader: u, NextSeq: 2, FirstSeq: 2}}}

	got := settledReturns([]Op{setLeader(0, 1), amb, other, sawB, open, trunc, floor})

	if got[1] != 6 {
		t.Errorf("a write whose position another write took: returns at %d, want 6", got[1])
	}
	if got[4] != math.MaxInt64 {
		t.Errorf("a write whose position nothing took: returns at %d, want +inf", got[4])
	}
	if got[5] != 13 {
		t.Errorf("a truncation the floor passed: returns at %d, want 13", got[5])
	}
	if r := check(t, []Op{setLeader(0, 1), amb, other, sawB}); r != "Ok" {
		t.Fatalf("the ambiguous write never landed: got %s", r)
	}
	landed := []Op{setLeader(0, 1), amb, read(1, 7, 8, 1, []string{"a"}, 2)}
	if r := check(t, landed); r != "Ok" {
		t.Fatalf("the ambiguous write landed and a read saw it: got %s", r)
	}
}
