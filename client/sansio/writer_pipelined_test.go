// This file drives a pipelined Writer through random lost calls, lost
// answers and reordered deliveries and checks that the log ends up holding
// every batch exactly once, in order; and checks that the Writer asserts its
// invariants.
package sansio

import (
	"fmt"
	"testing"

	"github.com/parosdb/paros/core/journal"
)

// TestAPipelinedWriterLandsEveryBatchOnceInOrder drives one writer with up
// to eight writes in flight through a journal whose calls may be lost before
// they apply, whose answers may be lost after, and whose deliveries happen
// in random order, with a second client taking the fence away now and then.
// Every write is resent identically until a verdict settles it. At the end
// the log must hold every batch the writer reported ResultWritten or ResultDuplicate,
// exactly once and in the order Next placed them, and nothing else from it.
func TestAPipelinedWriterLandsEveryBatchOnceInOrder(t *testing.T) {
	fired := map[ResultKind]int{}
	for seed := range uint64(50) {
		rnd := SeededUUIDs(seed)
		roll := func(n uint64) uint64 { return rnd().Lo % n }
		f := newFakeJournal(journal.ModeSingle)
		w := NewWriter(testID, SeededUUIDs(seed+1000))
		written := map[journal.Seq]string{}
		var order []journal.WriteRequest
		sent := 0
		for step := 0; step < 4000 && (sent < 40 || len(w.Pending()) > 0 || !w.Holding()); step++ {
			if !w.Holding() {
				if w.Stopped() != nil && sent >= 40 {
					break
				}
				req := w.Claim()
				for {
					res := w.AbsorbClaim(req, f.setLeader(req))
					if res.Kind == ResultWon || res.Kind == ResultRefused {
						break
					}
				}
				continue
			}
			if sent < 40 && len(w.Pending()) < 8 && roll(2) == 0 {
				req, err := w.Next(recs(fmt.Sprintf("s%d-%d", seed, sent)))
				if err != nil {
					t.Fatalf("seed %d: Next: %v", seed, err)
				}
				order = append(order, req)
				sent++
				continue
			}
			if roll(100) == 0 {
				f.claimAs(SeededUUIDs(seed + uint64(step))())
			}
			p := w.Pending()
			if len(p) == 0 {
				continue
			}
			req := p[roll(uint64(len(p)))]
			var rep journal.Reply
			switch roll(4) {
			case 0: // lost before it applied
			case 1: // applied, answer lost
				f.write(req)
			default:
				rep = f.write(req)
			}
			res := w.AbsorbWrite(req, rep)
			fired[res.Kind]++
			if res.Kind == ResultWritten || res.Kind == ResultDuplicate {
				written[req.Seq] = string(req.Records[0])
			}
		}
		for s, want := range written {
			if got := string(f.log[s-1]); got != want {
				t.Fatalf("seed %d: position %d holds %q, the writer was told %q", seed, s, got, want)
			}
		}
		last := journal.Seq(0)
		for _, req := range order {
			if written[req.Seq] == string(req.Records[0]) {
				if req.Seq <= last {
					t.Fatalf("seed %d: %q written at %d, after a later batch at %d", seed, req.Records[0], req.Seq, last)
				}
				last = req.Seq
			}
		}
		seen := map[string]int{}
		for _, r := range f.log {
			seen[string(r)]++
		}
		for _, req := range order {
			if n := seen[string(req.Records[0])]; n > 1 {
				t.Fatalf("seed %d: %q landed %d times", seed, req.Records[0], n)
			}
		}
	}
	for _, k := range []ResultKind{ResultWritten, ResultDuplicate, ResultRetry, ResultRefused, ResultSuperseded} {
		if fired[k] == 0 {
			t.Fatalf("no write was ever %s across the seeds: %v", k, fired)
		}
	}
}

func TestTheWriterAssertsItsInvariants(t *testing.T) {
	w := claimed(t, newFakeJournal(journal.ModeSingle), uA)
	next(t, w, "a")
	next(t, w, "b")

	w.pending[0], w.pending[1] = w.pending[1], w.pending[0]
	mustPanic(t, "writes out of order", w.assertInvariants)
	w.pending = nil
	w.believed = uB
	mustPanic(t, "holding a fence it does not believe in", w.assertInvariants)
	w.believed = uA
	w.pending = make([]journal.WriteRequest, WritesInFlightMax+1)
	mustPanic(t, "too many in flight", w.assertInvariants)
	w.pending = nil
	mustPanic(t, "a win with writes in flight", func() {
		w.pending = []journal.WriteRequest{{}}
		w.win(uA, journal.View{NextSeq: 1})
	})
}
