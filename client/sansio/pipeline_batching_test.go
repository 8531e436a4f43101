// This file checks the Pipeline's window, coalescing, the
// one-request-leaving rule, the Stats counters and its invariant checks.
// Each test plays the driver by hand (helpers in pipeline_test.go).
package sansio

import (
	"slices"
	"testing"

	"github.com/parosdb/paros/core/journal"
)

func TestPipelineCoalescesTheAppendsQueuedWhileWritesAreOut(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	p := claimedPipeline(t, f, uA, PipelineOptions{WritesOut: 1})
	pappend(t, p, "a")
	s1 := send(t, p)
	b, _ := pappend(t, p, "b")
	c, seqC := pappend(t, p, "c1", "c2")
	d, seqD := pappend(t, p, "d")

	noSend(t, p, "WritesOut writes are out")
	p.Absorb(s1.ID, f.write(s1.Req), true)
	p.Completions()
	s2 := send(t, p)
	p.Absorb(s2.ID, f.write(s2.Req), true)
	done := settled(t, p)

	if s2.Req.Seq != 2 || !slices.Equal(recordsOf(s2.Req), []string{"b", "c1", "c2", "d"}) || seqC != 3 || seqD != 5 {
		t.Fatalf("the coalesced write %+v", s2.Req)
	}
	if done[b] != (Completion{ID: b, Seq: 2}) || done[c] != (Completion{ID: c, Seq: 3}) || done[d] != (Completion{ID: d, Seq: 5}) {
		t.Fatalf("completions %+v", done)
	}
	if st := p.Stats(); st.Writes != 2 || st.Appends != 4 {
		t.Fatalf("stats %+v", st)
	}
}

func TestPipelineCutsAWriteAtTheBatchLimits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first [][]byte
		then  [][]byte
	}{
		{"records", make([][]byte, journal.WriteRecordsMax-10), make([][]byte, 11)},
		{"bytes", [][]byte{make([]byte, journal.WriteBytesMax/2+1)}, [][]byte{make([]byte, journal.WriteBytesMax/2)}},
	} {
		p := claimedPipeline(t, newFakeJournal(journal.ModeSingle), uA, PipelineOptions{})
		for _, batch := range [][][]byte{tc.first, tc.then} {
			for i := range batch {
				if batch[i] == nil {
					batch[i] = []byte{'r'}
				}
			}
			if _, _, err := p.Append(batch); err != nil {
				t.Fatalf("%s: Append: %v", tc.name, err)
			}
		}

		s1 := send(t, p)
		s2 := send(t, p)

		if len(s1.Req.Records) != len(tc.first) || len(s2.Req.Records) != len(tc.then) || s2.Req.Seq != s1.Req.Seq+journal.Seq(len(tc.first)) {
			t.Fatalf("%s: writes of %d and %d records at %d and %d", tc.name, len(s1.Req.Records), len(s2.Req.Records), s1.Req.Seq, s2.Req.Seq)
		}
	}
}

func TestPipelineNoCoalesceCutsOneWritePerAppend(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	p := claimedPipeline(t, f, uA, PipelineOptions{NoCoalesce: true})
	for _, r := range []string{"a", "b", "c"} {
		pappend(t, p, r)
	}

	var got [][]string
	for range 3 {
		got = append(got, recordsOf(send(t, p).Req))
	}

	if !slices.EqualFunc(got, [][]string{{"a"}, {"b"}, {"c"}}, slices.Equal) {
		t.Fatalf("writes %q", got)
	}
}

func TestPipelineNextWaitsForThePreviousAttemptToLeaveAndForWritesOut(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	p := claimedPipeline(t, f, uA, PipelineOptions{NoCoalesce: true, WritesOut: 2})
	for _, r := range []string{"a", "b", "c", "d"} {
		pappend(t, p, r)
	}

	s1, _ := p.Next()
	_, beforeLeft := p.Next()
	p.Left(s1.ID + 100) // another attempt's Left changes nothing
	_, otherLeft := p.Next()
	p.Left(s1.ID)
	s2, afterLeft := p.Next()
	p.Left(s2.ID)
	_, full := p.Next()
	p.Absorb(s1.ID, f.write(s1.Req), true)
	s3, third := p.Next()
	p.Absorb(s3.ID, journal.Reply{NoVerdict: journal.Busy}, true) // an answer counts as Left
	p.Absorb(s2.ID, f.write(s2.Req), true)
	p.Timers()
	p.Wake(s3.ID)
	s4, fourth := p.Next()

	if beforeLeft || otherLeft || !afterLeft {
		t.Fatalf("Next before Left %v, after another's Left %v, after Left %v", beforeLeft, otherLeft, afterLeft)
	}
	if full || !third || s3.Req.Seq != 3 {
		t.Fatalf("Next with WritesOut writes out %v; after one settled %v (%+v)", full, third, s3)
	}
	if !fourth || s4.ID != s3.ID || s4.Attempt != 2 {
		t.Fatalf("after an answer that left no Left: %+v (%v), want write 3's resend", s4, fourth)
	}
}

func TestPipelineStatsCountWhatHappened(t *testing.T) {
	// Write 1 (a at 1) and write 2 (b at 2) out; write 2 overtakes write 1
	// (refused while out), write 1 reaches no server (unsent), both are
	// resent, write 1 lands but its answer is lost (ambiguous), write 2 is
	// written, write 1's last resend is a duplicate. Then write 3 (c at 3)
	// is lost and write 4 (d at 4) refused with nothing else out.
	f := newFakeJournal(journal.ModeSingle)
	p, _, _, s1, s2 := twoOut(t, f)
	var st []PipelineStats

	p.Absorb(s2.ID, f.write(s2.Req), true)
	st = append(st, p.Stats())
	p.Absorb(s1.ID, journal.Reply{}, false)
	st = append(st, p.Stats())
	p.Wake(s1.ID)
	r1, r2 := send(t, p), send(t, p)
	f.write(r1.Req)
	p.Absorb(r1.ID, journal.Reply{}, true)
	st = append(st, p.Stats())
	p.Absorb(r2.ID, f.write(r2.Req), true)
	st = append(st, p.Stats())
	p.Wake(s1.ID)
	r3 := send(t, p)
	p.Absorb(r3.ID, f.write(r3.Req), true)
	st = append(st, p.Stats())
	pappend(t, p, "c")
	s3 := send(t, p)
	pappend(t, p, "d")
	s4 := send(t, p)
	p.Absorb(s3.ID, journal.Reply{}, true)
	p.Absorb(s4.ID, f.write(s4.Req), true)
	st = append(st, p.Stats())

	want := []PipelineStats{
		{Sends: 2, Refused: 1, RefusedWhileOut: 1},
		{Sends: 2, Refused: 1, RefusedWhileOut: 1, Unsent: 1},
		{Sends: 4, Refused: 1, RefusedWhileOut: 1, Unsent: 1, Ambiguous: 1},
		{Sends: 4, Refused: 1, RefusedWhileOut: 1, Unsent: 1, Ambiguous: 1, Writes: 1, Appends: 1},
		{Sends: 5, Refused: 1, RefusedWhileOut: 1, Unsent: 1, Ambiguous: 1, Writes: 2, Appends: 2},
		{Sends: 7, Refused: 2, RefusedWhileOut: 1, Unsent: 1, Ambiguous: 2, Writes: 2, Appends: 2},
	}
	for i := range want {
		if st[i] != want[i] {
			t.Fatalf("after step %d: %+v, want %+v", i+1, st[i], want[i])
		}
	}
}

func TestThePipelineAssertsItsInvariants(t *testing.T) {
	f := newFakeJournal(journal.ModeSingle)
	p := claimedPipeline(t, f, uA, PipelineOptions{NoCoalesce: true})
	pappend(t, p, "a")
	pappend(t, p, "b")
	pappend(t, p, "c")
	send(t, p)
	send(t, p)

	p.writes[0], p.writes[1] = p.writes[1], p.writes[0]
	mustPanic(t, "writes out of order", p.assertInvariants)
	p.writes[0], p.writes[1] = p.writes[1], p.writes[0]
	p.queued[0].seq = 2
	mustPanic(t, "an append queued inside a write", p.assertInvariants)
	p.queued[0].seq = 3
	p.appends = -1
	mustPanic(t, "negative appends", p.assertInvariants)
	p.appends, p.out = 3, 0
	mustPanic(t, "an answer with nothing out", func() { p.Absorb(1, journal.Reply{}, true) })
}
