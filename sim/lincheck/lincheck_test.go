package lincheck

// These tests check the checker: a history that is linearizable passes, a
// history that is not (a read that sees a write before it could have
// happened, a duplicate verdict without an identical write, a lost
// acknowledged write, a stale read, a claim landing after its old leader
// is gone) is found Illegal, an ambiguous write may or may not have taken
// effect, and each rule that bounds an ambiguous operation fires on its
// evidence and not without it (a reinstated uuid keeps a claim open, an
// unchecked view is no evidence), as does the rule that leaves identical
// ambiguous retries out (twins; a truncation resent before the head
// reached its target is none), and the one that leaves out operations
// that constrain nothing (inert). bounds_quick_test.go checks them against
// the plain check.

import (
	"math"
	"slices"
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

// A read after two acknowledged writes that shows only the first one is
// stale: no order puts it after the second write.
func TestAStaleReadIsIllegal(t *testing.T) {
	second := Output{Outcome: journal.Outcome{Kind: journal.Accepted, Seq: 2, Count: 1,
		View: journal.View{Leader: u, NextSeq: 3, FirstSeq: 1}}}
	ops := []Op{setLeader(0, 1), write(2, 3, 1, "a", accepted(1)), write(4, 5, 2, "b", second),
		read(1, 6, 7, 1, []string{"a"}, 2)}

	if r := check(t, ops); r != "Illegal" {
		t.Fatalf("a read after two acked writes that shows one: got %s", r)
	}
}

var (
	v = journal.LeaderUUID{Hi: 2, Lo: 2}
	w = journal.LeaderUUID{Hi: 3, Lo: 3}
)

func claim(client int, call, ret int64, newLeader, old journal.LeaderUUID, out Output) Op {
	return Op{Client: client, Call: call, Return: ret, In: Input{Kind: OpSetLeader, Cmd: journal.SetLeader(newLeader, old)}, Out: out}
}

func leaderSet(l journal.LeaderUUID) Output {
	return Output{Outcome: journal.Outcome{Kind: journal.LeaderSet, View: journal.View{Leader: l, NextSeq: 1, FirstSeq: 1}}}
}

func readLeader(client int, call, ret int64, l journal.LeaderUUID) Op {
	return Op{Client: client, Call: call, Return: ret, In: Input{Kind: OpRead, From: 1},
		Out: Output{Served: true, View: journal.View{Leader: l, NextSeq: 1, FirstSeq: 1}}}
}

// An ambiguous claim u→v is bounded by the first view of another leader
// from a call made after every claim naming u as its new leader returned:
// from there u never leads again and the claim can only be refused. The
// bound reaches a fixpoint: an ambiguous claim that could reinstate u
// holds the bound back until it is bounded itself. A read of leader v
// after u is gone for good is Illegal.
func TestAnAmbiguousClaimSettlesOnceItsOldLeaderIsGoneForGood(t *testing.T) {
	amb := Output{Ambiguous: true}
	ops := []Op{
		claim(0, 0, 1, u, journal.LeaderUUID{}, leaderSet(u)), // 0: u leads
		claim(0, 2, 3, v, u, amb),                             // 1: u→v, ambiguous
		claim(0, 4, 5, w, u, leaderSet(w)),                    // 2: w leads
		claim(0, 6, 7, u, journal.LeaderUUID{}, amb),          // 3: 0→u, ambiguous: a way back for u until bounded
		readLeader(1, 8, 9, w),                                // 4: called after 3's bound: bounds 1
	}

	got := settledReturns(ops)

	if got[3] != 6 {
		t.Errorf("a claim from the zero uuid, called after a leader was set: returns at %d, want its call 6", got[3])
	}
	if got[1] != 9 {
		t.Errorf("a claim whose old uuid is gone for good: returns at %d, want 9", got[1])
	}
	if r := check(t, ops); r != "Ok" {
		t.Fatalf("the bounded history: got %s", r)
	}
	late := append(slices.Clone(ops), readLeader(1, 10, 11, v))
	if r := check(t, late); r != "Illegal" {
		t.Fatalf("the claim u→v seen landing after u was gone for good: got %s", r)
	}
}

// Client uuids are reused: a claim that reinstates u keeps every ambiguous
// claim from u open past it, since u leads again and the old claim may
// still land. A view of another leader before the reinstatement returned
// bounds nothing, and the history where the old claim lands late passes.
func TestAReinstatedUUIDKeepsAClaimOpen(t *testing.T) {
	amb := Output{Ambiguous: true}
	ops := []Op{
		claim(0, 0, 1, u, journal.LeaderUUID{}, leaderSet(u)), // 0: u leads
		claim(0, 2, 3, v, u, amb),                             // 1: u→v, ambiguous
		claim(0, 4, 5, w, u, leaderSet(w)),                    // 2: w leads (not enough: u comes back)
		claim(0, 6, 7, u, w, leaderSet(u)),                    // 3: u reinstated
		readLeader(1, 10, 11, v),                              // 4: the old claim landed after 3
	}

	got := settledReturns(ops)

	if got[1] != 11 {
		t.Errorf("a claim whose old uuid was reinstated: returns at %d, want 11 (the first view after the reinstatement)", got[1])
	}
	if r := check(t, ops); r != "Ok" {
		t.Fatalf("the old claim landing after its uuid was reinstated: got %s", r)
	}
}

// A fenced write names its position: one past next_seq is refused, and an
// acknowledgement of it there is Illegal (the model must not place it at
// next_seq instead).
func TestAWriteAtAWrongPositionIsRefused(t *testing.T) {
	refused := Output{Outcome: journal.Outcome{Kind: journal.Refused, View: journal.View{Leader: u, NextSeq: 1, FirstSeq: 1}}}
	acked := Output{Outcome: journal.Outcome{Kind: journal.Accepted, Seq: 2, Count: 1,
		View: journal.View{Leader: u, NextSeq: 3, FirstSeq: 1}}}

	ok := []Op{setLeader(0, 1), write(2, 3, 2, "a", refused)}
	bad := []Op{setLeader(0, 1), write(2, 3, 2, "a", acked)}

	if r := check(t, ok); r != "Ok" {
		t.Fatalf("a write past next_seq refused: got %s", r)
	}
	if r := check(t, bad); r != "Illegal" {
		t.Fatalf("a write past next_seq acknowledged there: got %s", r)
	}
}

// A retried claim answered ambiguous again and again is one claim: the
// copies after the first, whose windows the first's holds, are left out
// of the check (twins), since once the claim lands its old uuid never
// leads again. Identical ambiguous fenced writes are twins too (a position
// is taken once).
func TestIdenticalAmbiguousRetriesAreTwins(t *testing.T) {
	amb := Output{Ambiguous: true}
	ops := []Op{claim(0, 0, 1, u, journal.LeaderUUID{}, leaderSet(u))}
	for i := range 5 {
		ops = append(ops, claim(0, int64(2+i), int64(3+i), v, u, amb)) // 1..5
	}
	ops = append(ops,
		claim(0, 10, 11, v, u, leaderSet(v)), // 6: the retry that got its verdict
		readLeader(1, 12, 13, v),             // 7
		write(14, 15, 1, "a", amb),           // 8
		write(16, 17, 1, "a", amb),           // 9: its resend
		write(16, 17, 1, "b", amb),           // 10: other bytes: no twin
	)

	got := twins(ops, settledReturns(ops))

	want := []bool{false, false, true, true, true, true, false, false, false, true, false}
	if !slices.Equal(got, want) {
		t.Fatalf("twins %v, want %v", got, want)
	}
	if r := check(t, ops); r != "Ok" {
		t.Fatalf("the history with its twins left out: got %s", r)
	}
}

// Twins need the claim to land at most once: a claim u→v resent after u
// was reinstated may land twice (u→v, v→u, u→v again), so the resend is
// kept, and the history that needs both landings passes.
func TestAClaimResentAcrossAReinstatementIsNoTwin(t *testing.T) {
	amb := Output{Ambiguous: true}
	ops := []Op{
		claim(0, 0, 1, u, journal.LeaderUUID{}, leaderSet(u)), // 0: u leads
		claim(0, 2, 3, v, u, amb),                             // 1: u→v lands
		claim(2, 5, 6, u, v, leaderSet(u)),                    // 2: v→u: u reinstated
		claim(0, 7, 8, v, u, amb),                             // 3: the resend lands again
		readLeader(1, 10, 11, v),                              // 4
	}

	got := twins(ops, settledReturns(ops))

	if slices.Contains(got, true) {
		t.Fatalf("twins %v: the resend may land a second time", got)
	}
	if r := check(t, ops); r != "Ok" {
		t.Fatalf("a claim landing twice around a reinstatement: got %s", r)
	}
}

func truncate(call, ret int64, upTo journal.Seq, out Output) Op {
	return Op{Client: 0, Call: call, Return: ret, In: Input{Kind: OpTruncate, Cmd: journal.Truncate(u, upTo)}, Out: out}
}

// acceptedOver acknowledges a one-record write at seq over the floor first.
func acceptedOver(seq, first journal.Seq) Output {
	return Output{Outcome: journal.Outcome{Kind: journal.Accepted, Seq: seq, Count: 1,
		View: journal.View{Leader: u, NextSeq: seq + 1, FirstSeq: first}}}
}

// floorRead reads from the floor and sees nothing: the journal is empty
// above it.
func floorRead(call, ret int64, first journal.Seq) Op {
	return Op{Client: 1, Call: call, Return: ret, In: Input{Kind: OpRead, From: first},
		Out: Output{Served: true, View: journal.View{Leader: u, NextSeq: first, FirstSeq: first}}}
}

// A retried truncation answered ambiguous again and again (seed 637) is
// one truncation once an answer showed the head at or past its target
// before the first copy was sent: wherever a copy lands it lifts the
// floor to the target, and the floor only rises, so only one copy can
// move it. The copies after the first are left out (twins); a truncation
// to another point is no twin.
func TestIdenticalAmbiguousTruncationsAreTwinsOnceTheHeadPassedThem(t *testing.T) {
	amb := Output{Ambiguous: true}
	ops := []Op{
		setLeader(0, 1),                           // 0
		write(2, 3, 1, "a", acceptedOver(1, 1)),   // 1
		write(4, 5, 2, "b", acceptedOver(2, 1)),   // 2: the head is at 3
		truncate(6, 7, 3, amb),                    // 3
		truncate(8, 9, 3, amb),                    // 4: its resend
		truncate(10, 11, 3, amb),                  // 5: and again
		truncate(10, 11, 2, amb),                  // 6: another target: no twin
		floorRead(12, 13, 3),                      // 7
		write(14, 15, 3, "c", acceptedOver(3, 3)), // 8
	}

	got := twins(ops, settledReturns(ops))

	want := []bool{false, false, false, false, true, true, false, false, false}
	if !slices.Equal(got, want) {
		t.Fatalf("twins %v, want %v", got, want)
	}
	if r := check(t, ops); r != "Ok" {
		t.Fatalf("the history with its twins left out: got %s", r)
	}
}

// Twins need the truncation to land at most once: sent while the head is
// still below its target, a copy landing there lifts the floor to the
// head only, and a resend landing after more writes lifts it again. The
// resend is kept, and the history that needs both landings passes; it
// fails without the resend, which is what leaving it out as a twin would
// do.
func TestATruncationResentBeforeTheHeadReachedItIsNoTwin(t *testing.T) {
	amb := Output{Ambiguous: true}
	ops := []Op{
		setLeader(0, 1),                         // 0
		write(2, 3, 1, "a", acceptedOver(1, 1)), // 1: the head is at 2
		truncate(4, 5, 3, amb),                  // 2: lands: floor 2
		write(6, 7, 2, "b", acceptedOver(2, 2)), // 3: the head is at 3
		truncate(8, 9, 3, amb),                  // 4: the resend lands: floor 3
		floorRead(10, 11, 3),                    // 5
	}

	got := twins(ops, settledReturns(ops))

	if slices.Contains(got, true) {
		t.Fatalf("twins %v: the resend may lift the floor a second time", got)
	}
	if r := check(t, ops); r != "Ok" {
		t.Fatalf("a truncation landing twice: got %s", r)
	}
	once := slices.Delete(slices.Clone(ops), 4, 5)
	if r := check(t, once); r != "Illegal" {
		t.Fatalf("the floor lifted twice by one truncation: got %s", r)
	}
}

// A refused call and an unserved read constrain nothing (the model steps
// them as no-ops in every state): Check leaves them out. A served read,
// an answered or ambiguous call are kept.
func TestOperationsThatConstrainNothingAreInert(t *testing.T) {
	refused := write(2, 3, 1, "a", Output{NoEffect: true})
	unserved := Op{Client: 1, Call: 2, Return: 3, In: Input{Kind: OpRead, From: 1}}
	kept := []Op{setLeader(0, 1), write(2, 3, 1, "a", accepted(1)), write(2, 3, 1, "a", Output{Ambiguous: true}),
		read(1, 4, 5, 1, []string{"a"}, 2)}

	for _, op := range []Op{refused, unserved} {
		if !inert(op) {
			t.Errorf("%+v: not inert", op)
		}
	}
	for _, op := range kept {
		if inert(op) {
			t.Errorf("%+v: inert", op)
		}
	}
	if r := check(t, append(slices.Clone(kept), refused, unserved)); r != "Ok" {
		t.Fatalf("a history with inert operations: got %s", r)
	}
}

// Only a view the model checks is evidence: an Unheld outcome is matched
// by its kind alone, so its view (here the zero view, "no leader") bounds
// no ambiguous claim, and the claim may still land after it (here it must:
// a read after the Unheld answer still sees u).
func TestAnUncheckedViewBoundsNothing(t *testing.T) {
	amb := Output{Ambiguous: true}
	unheld := Output{Outcome: journal.Outcome{Kind: journal.Unheld}}
	stranger := Op{Client: 2, Call: 4, Return: 5, In: Input{Kind: OpWrite,
		Cmd: journal.Write(journal.Entry{Leader: w, Seq: 1, Records: [][]byte{[]byte("a")}})}, Out: unheld}
	ops := []Op{
		claim(0, 0, 1, u, journal.LeaderUUID{}, leaderSet(u)), // 0: u leads
		claim(0, 2, 3, v, u, amb),                             // 1: u→v, ambiguous
		stranger,                                              // 2: refused, answered Unheld: a view nobody checks
		readLeader(1, 6, 7, u),                                // 3: the claim has not landed yet
		readLeader(1, 10, 11, v),                              // 4: now it has
	}

	got := settledReturns(ops)

	if got[1] != 11 {
		t.Errorf("a claim after an unchecked view: returns at %d, want 11", got[1])
	}
	if r := check(t, ops); r != "Ok" {
		t.Fatalf("the claim landing after an Unheld answer: got %s", r)
	}
}
