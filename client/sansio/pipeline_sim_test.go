// This file holds the Pipeline's property test against the fake journal as
// the model. A seeded driver (500 seeds) runs the pipeline over a simulated
// link that drops requests (some still land late), drops replies, reorders
// deliveries, reports unsent attempts and fires timers in random order,
// while a rival now and then takes the journal, the owner claims it back
// (with lost claims too), and truncations raise the floor. After every
// step it checks: no append completes twice; an append reported written
// holds its exact bytes at its position, and no two overlap; no record
// lands anywhere but the position Append returned; an append completed
// with an error that does not wrap ErrAmbiguous or ErrBelowFloor never
// lands; every attempt of a write is identical; Next never hands out an
// attempt before the previous one left, past WritesOut, or for an append
// already completed; and the pipeline's own invariants hold. With the
// faults off it then drives the pipeline to quiescence: every append
// completes, and fresh appends are all written.
package sansio

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/parosdb/paros/core/journal"
)

// The property test.

// simAttempt is one attempt on the simulated link.
type simAttempt struct {
	s       Send
	left    bool
	applied bool
	reply   journal.Reply
}

// simAppend is what the driver knows of one append.
type simAppend struct {
	seq     journal.Seq
	records []string
	done    bool
	ok      bool // completed as written
	gone    bool // completed with an error that says it was not written
	landed  bool // some of its records are in the log
}

type recordAt struct {
	id  AppendID
	idx int
}

// simTally counts, across seeds, what the faults provoked.
type simTally struct {
	duplicate, refused, superseded, truncated, abandoned, ghostLanded, windowFull, claims int
	stats                                                                                 PipelineStats
}

// pipeSim drives one pipeline against one fake journal.
type pipeSim struct {
	t      *testing.T
	seed   uint64
	rnd    *rand.Rand
	f      *fakeJournal
	p      *Pipeline
	rival  func() journal.LeaderUUID
	faults bool
	tally  *simTally

	appends     map[AppendID]*simAppend
	records     map[string]recordAt
	owner       map[journal.Seq]AppendID // positions of appends written
	requests    map[WriteID]Send         // the first attempt of every write
	link        []*simAttempt            // attempts out, in the order handed out
	ghosts      []journal.WriteRequest   // requests timed out but still on the wire
	timers      []Timer
	outstanding int
	checked     int // log entries checked
	tags        int
	sends       uint64 // attempts handed out
	written     uint64 // appends completed as written
	writesOut   int    // the largest WritesOut in force so far
	step        int
	trace       []traceLine
}

func newPipeSim(t *testing.T, seed uint64, tally *simTally) *pipeSim {
	rnd := rand.New(rand.NewPCG(seed, 0x5eed))
	o := PipelineOptions{
		Window:     []int{1, 3, 8, 16, 64, 0}[rnd.IntN(6)],
		WritesOut:  1 + rnd.IntN(6),
		NoCoalesce: rnd.IntN(5) == 0,
	}
	s := &pipeSim{t: t, seed: seed, rnd: rnd, f: newFakeJournal(journal.ModeSingle),
		p:     NewPipeline(NewWriter(testID, SeededUUIDs(seed)), o),
		rival: SeededUUIDs(seed ^ 0xdead_beef), faults: true, tally: tally,
		appends: map[AppendID]*simAppend{}, records: map[string]recordAt{}, owner: map[journal.Seq]AppendID{},
		requests: map[WriteID]Send{}}
	s.writesOut = s.p.Options().WritesOut
	return s
}

// traceLine is one step of the trace, formatted only when a check fails.
type traceLine struct {
	step   int
	format string
	args   []any
}

// traceLinesMax bounds the trace a failure prints.
const traceLinesMax = 60

func (s *pipeSim) note(format string, args ...any) {
	if len(s.trace) == 2*traceLinesMax {
		s.trace = append(s.trace[:0], s.trace[traceLinesMax:]...)
	}
	s.trace = append(s.trace, traceLine{s.step, format, args})
}

func (s *pipeSim) fail(format string, args ...any) {
	s.t.Helper()
	var b strings.Builder
	for _, l := range s.trace[max(0, len(s.trace)-traceLinesMax):] {
		fmt.Fprintf(&b, "%5d "+l.format+"\n", append([]any{l.step}, l.args...)...)
	}
	s.t.Fatalf("seed %d, step %d: %s\nlast steps:\n%s", s.seed, s.step, fmt.Sprintf(format, args...), b.String())
}

// pick returns a random index into a slice of length n, or -1.
func (s *pipeSim) pick(n int) int {
	if n == 0 {
		return -1
	}
	return s.rnd.IntN(n)
}

func (s *pipeSim) doAppend() {
	n := 1 + s.rnd.IntN(3)
	rs := make([]string, n)
	for i := range rs {
		rs[i] = "k" + strconv.Itoa(s.tags) + "." + strconv.Itoa(i)
	}
	s.tags++
	id, seq, err := s.p.Append(recs(rs...))
	switch {
	case err == nil:
	case errors.Is(err, ErrWindowFull):
		s.tally.windowFull++
		if s.p.Outstanding() < s.p.Options().Window {
			s.fail("ErrWindowFull with %d outstanding in a window of %d", s.p.Outstanding(), s.p.Options().Window)
		}
		return
	case errors.Is(err, ErrNotHolding):
		if s.p.Holding() {
			s.fail("ErrNotHolding while holding")
		}
		return
	default:
		if err != s.p.Stopped() {
			s.fail("Append: %v, stopped %v", err, s.p.Stopped())
		}
		return
	}
	if _, dup := s.appends[id]; dup {
		s.fail("append id %d reused", id)
	}
	s.appends[id] = &simAppend{seq: seq, records: rs}
	for i, r := range rs {
		s.records[r] = recordAt{id, i}
	}
	s.outstanding++
	s.note("append %d at %d: %q", id, seq, rs)
}

func (s *pipeSim) doNext() {
	leaving := slices.ContainsFunc(s.link, func(a *simAttempt) bool { return !a.left })
	snd, ok := s.p.Next()
	if !ok {
		return
	}
	if leaving {
		s.fail("Next handed out write %d while the previous attempt had not left", snd.ID)
	}
	if first, seen := s.requests[snd.ID]; !seen {
		if snd.Attempt != 1 {
			s.fail("write %d first handed out as attempt %d", snd.ID, snd.Attempt)
		}
		s.requests[snd.ID] = snd
	} else if !sameRequest(first.Req, snd.Req) {
		s.fail("write %d attempt %d differs from its first attempt", snd.ID, snd.Attempt)
	}
	if at, ok := s.records[string(snd.Req.Records[0])]; !ok || s.appends[at.id].done {
		s.fail("Next handed out write %d at %d for an append that is not outstanding", snd.ID, snd.Req.Seq)
	}
	for _, a := range s.link {
		if a.s.ID == snd.ID {
			s.fail("write %d handed out again while its attempt %d is out", snd.ID, a.s.Attempt)
		}
	}
	a := &simAttempt{s: snd}
	s.link = append(s.link, a)
	s.sends++
	if len(s.link) > s.writesOut {
		s.fail("%d attempts out, WritesOut %d", len(s.link), s.writesOut)
	}
	if s.rnd.IntN(4) != 0 {
		s.p.Left(snd.ID)
		a.left = true
	}
	s.note("next: write %d attempt %d at %d (%d records), left %v", snd.ID, snd.Attempt, snd.Req.Seq, len(snd.Req.Records), a.left)
}

func (s *pipeSim) doLeave() {
	for _, a := range s.link {
		if !a.left {
			s.p.Left(a.s.ID)
			a.left = true
			s.note("left: write %d", a.s.ID)
		}
	}
}

// apply delivers a request to the journal and tallies the verdict.
func (s *pipeSim) apply(req journal.WriteRequest) journal.Reply {
	rep := s.f.write(req)
	switch rep.Outcome.Kind {
	case journal.Duplicate:
		s.tally.duplicate++
	case journal.Refused:
		s.tally.refused++
	case journal.BelowFloor:
		s.tally.truncated++
	}
	return rep
}

func (s *pipeSim) doDeliver() {
	var ready []*simAttempt
	for _, a := range s.link {
		if a.left && !a.applied {
			ready = append(ready, a)
		}
	}
	if i := s.pick(len(ready)); i >= 0 {
		a := ready[i]
		a.applied, a.reply = true, s.apply(a.s.Req)
		s.note("deliver: write %d attempt %d at %d: %s", a.s.ID, a.s.Attempt, a.s.Req.Seq, a.reply.Outcome.Kind)
	}
}

func (s *pipeSim) doAnswer() {
	i := s.pick(len(s.link))
	if i < 0 {
		return
	}
	a := s.link[i]
	switch {
	case a.applied && (!s.faults || s.rnd.IntN(5) != 0):
		s.p.Absorb(a.s.ID, a.reply, true)
		s.note("answer: write %d attempt %d: %s", a.s.ID, a.s.Attempt, a.reply.Outcome.Kind)
	case a.applied:
		s.p.Absorb(a.s.ID, journal.Reply{}, true)
		s.note("answer lost: write %d attempt %d (applied: %s)", a.s.ID, a.s.Attempt, a.reply.Outcome.Kind)
	case !s.faults:
		return // deliver it first
	case s.rnd.IntN(3) == 0:
		s.p.Absorb(a.s.ID, journal.Reply{}, false)
		s.note("unsent: write %d attempt %d", a.s.ID, a.s.Attempt)
	default:
		ghost := a.left && s.rnd.IntN(2) == 0
		if ghost {
			s.ghosts = append(s.ghosts, a.s.Req)
		}
		s.p.Absorb(a.s.ID, journal.Reply{}, true)
		s.note("timeout: write %d attempt %d, request still on the wire %v", a.s.ID, a.s.Attempt, ghost)
	}
	s.link = slices.Delete(s.link, i, i+1)
}

func (s *pipeSim) doWake() {
	if i := s.pick(len(s.timers)); i >= 0 {
		tm := s.timers[i]
		s.timers = slices.Delete(s.timers, i, i+1)
		s.p.Wake(tm.ID)
		s.note("wake: write %d", tm.ID)
	}
}

func (s *pipeSim) doGhost() {
	i := s.pick(len(s.ghosts))
	if i < 0 {
		return
	}
	g := s.ghosts[i]
	s.ghosts = slices.Delete(s.ghosts, i, i+1)
	if s.rnd.IntN(2) == 0 {
		rep := s.apply(g)
		if rep.Outcome.Kind == journal.Accepted {
			s.tally.ghostLanded++
		}
		s.note("late delivery at %d: %s", g.Seq, rep.Outcome.Kind)
	}
}

// doClaim runs one round of a claim, with its faults.
func (s *pipeSim) doClaim() {
	req := s.p.BeginClaim()
	var rep journal.Reply
	switch k := s.rnd.IntN(6); {
	case s.faults && k == 0: // lost before it applied
	case s.faults && k == 1: // applied; the answer is lost
		s.f.setLeader(req)
	default:
		rep = s.f.setLeader(req)
	}
	res := s.p.AbsorbClaim(req, rep)
	s.tally.claims++
	s.note("claim %s over %s: %s, next %d", req.New, req.Old, res.Kind, s.p.NextSeq())
	if res.Kind == ResultWon && s.p.NextSeq() != s.f.st.NextSeq {
		s.fail("won a claim with next %d, the journal's is %d", s.p.NextSeq(), s.f.st.NextSeq)
	}
}

func (s *pipeSim) doRare() {
	switch k := s.rnd.IntN(10); {
	case k < 2 && s.faults:
		u := s.rival()
		s.f.claimAs(u)
		s.note("rival %s claims", u)
	case k < 3:
		s.doClaim() // the owner claims again while it may still hold
	case k < 6:
		v := s.f.st.View()
		tr, err := s.p.Truncate(v.FirstSeq + journal.Seq(s.rnd.Uint64N(uint64(v.NextSeq-v.FirstSeq)+1)))
		if err != nil {
			return
		}
		rep := s.f.truncate(tr)
		if s.faults && s.rnd.IntN(4) == 0 {
			rep = journal.Reply{}
		}
		res := s.p.AbsorbTruncate(tr, rep)
		s.note("truncate below %d: %s", tr.UpTo, res.Kind)
	case k < 7:
		o := PipelineOptions{Window: 1 + s.rnd.IntN(16), WritesOut: 1 + s.rnd.IntN(6), NoCoalesce: s.rnd.IntN(3) == 0}
		s.p.SetOptions(o)
		s.writesOut = max(s.writesOut, s.p.Options().WritesOut)
		s.note("options %+v", s.p.Options())
	}
}

// check runs the oracles after a step.
func (s *pipeSim) check() {
	s.t.Helper()
	s.p.assertInvariants()
	for _, c := range s.p.Completions() {
		a, ok := s.appends[c.ID]
		if !ok {
			s.fail("completion of an unknown append %d", c.ID)
		}
		if a.done {
			s.fail("append %d completed twice", c.ID)
		}
		a.done = true
		s.outstanding--
		if c.Seq != a.seq {
			s.fail("append %d completed at %d, placed at %d", c.ID, c.Seq, a.seq)
		}
		switch {
		case c.Err == nil:
			a.ok = true
			s.written++
			for i, r := range a.records {
				pos := a.seq + journal.Seq(i)
				if int(pos) > len(s.f.log) || string(s.f.log[pos-1]) != r {
					s.fail("append %d reported written, but position %d does not hold %q (log %d long)", c.ID, pos, r, len(s.f.log))
				}
				if other, taken := s.owner[pos]; taken {
					s.fail("appends %d and %d both reported written at %d", other, c.ID, pos)
				}
				s.owner[pos] = c.ID
			}
		case errors.Is(c.Err, ErrAmbiguous) || errors.Is(c.Err, ErrBelowFloor):
			if errors.Is(c.Err, ErrNotHolding) {
				s.tally.abandoned++
			}
			if errors.Is(c.Err, ErrBelowFloor) {
				s.tally.truncated++
			}
		default:
			if errors.Is(c.Err, ErrSuperseded) {
				s.tally.superseded++
			}
			a.gone = true
			if a.landed {
				s.fail("append %d is in the log, yet completed as not written: %v", c.ID, c.Err)
			}
		}
	}
	for ; s.checked < len(s.f.log); s.checked++ {
		pos := journal.Seq(s.checked + 1)
		r := string(s.f.log[s.checked])
		at, ok := s.records[r]
		if !ok {
			s.fail("position %d holds %q, which no append queued", pos, r)
		}
		a := s.appends[at.id]
		if want := a.seq + journal.Seq(at.idx); want != pos {
			s.fail("record %q of append %d landed at %d; Append placed it at %d", r, at.id, pos, want)
		}
		if a.gone {
			s.fail("append %d completed as not written, yet landed at %d", at.id, pos)
		}
		a.landed = true
	}
	for _, tm := range s.p.Timers() {
		if tm.After < BackoffMin || tm.After > BackoffMax {
			s.fail("timer for write %d after %v", tm.ID, tm.After)
		}
		s.timers = append(s.timers, tm)
	}
	if s.p.Outstanding() != s.outstanding || s.outstanding < 0 {
		s.fail("pipeline has %d outstanding, the driver counts %d", s.p.Outstanding(), s.outstanding)
	}
}

// run steps the driver with the faults on.
func (s *pipeSim) run(steps int) {
	for s.step = 0; s.step < steps; s.step++ {
		if (s.p.Stopped() != nil || !s.p.Holding()) && s.rnd.IntN(6) == 0 {
			s.doClaim()
		} else {
			switch r := s.rnd.IntN(100); {
			case r < 25:
				s.doAppend()
			case r < 45:
				s.doNext()
			case r < 49:
				s.doLeave()
			case r < 66:
				s.doDeliver()
			case r < 85:
				s.doAnswer()
			case r < 94:
				s.doWake()
			case r < 97:
				s.doGhost()
			default:
				s.doRare()
			}
		}
		s.check()
	}
}

// quiesce steps the driver without faults and appends until nothing is
// outstanding, out, or waiting for a timer.
func (s *pipeSim) quiesce(stepsMax int) {
	for n := 0; !(s.p.Idle() && len(s.link) == 0 && len(s.timers) == 0); n++ {
		if n >= stepsMax {
			s.fail("no quiescence in %d steps: %d outstanding, %d out, %d timers, stopped %v",
				stepsMax, s.p.Outstanding(), len(s.link), len(s.timers), s.p.Stopped())
		}
		s.step++
		switch s.rnd.IntN(5) {
		case 0:
			s.doNext()
		case 1:
			s.doLeave()
		case 2:
			s.doDeliver()
		case 3:
			s.doAnswer()
		case 4:
			s.doWake()
		}
		s.check()
	}
}

// settle turns the faults off, delivers every late request, drives the
// pipeline to quiescence, then claims if it must and checks that fresh
// appends are all written.
func (s *pipeSim) settle() {
	s.faults = false
	s.note("faults off")
	for _, g := range s.ghosts {
		s.apply(g)
		s.check()
	}
	s.ghosts = nil
	s.quiesce(20000)
	for i := 0; s.p.Stopped() != nil || !s.p.Holding() || s.f.st.Leader != s.p.Fence(); i++ {
		if i == 4 {
			s.fail("no claim won in %d rounds without faults", i)
		}
		s.doClaim()
		s.check()
	}
	s.p.SetOptions(PipelineOptions{})
	before := len(s.appends)
	for range 20 {
		s.doAppend()
	}
	if len(s.appends) != before+20 {
		s.fail("fresh appends refused")
	}
	s.quiesce(20000)
	for id, a := range s.appends {
		if !a.done {
			s.fail("append %d at %d never completed", id, a.seq)
		}
		if id > AppendID(before) && !a.ok {
			s.fail("fresh append %d at %d failed without faults", id, a.seq)
		}
	}
	if st := s.p.Stats(); st.Sends != s.sends || st.Appends != s.written || st.Writes > st.Appends {
		s.fail("stats %+v: the driver saw %d sends and %d appends written", st, s.sends, s.written)
	}
	s.tally.stats.Sends += s.p.Stats().Sends
	s.tally.stats.Ambiguous += s.p.Stats().Ambiguous
	s.tally.stats.Refused += s.p.Stats().Refused
	s.tally.stats.RefusedWhileOut += s.p.Stats().RefusedWhileOut
	s.tally.stats.Unsent += s.p.Stats().Unsent
	s.tally.stats.Writes += s.p.Stats().Writes
	s.tally.stats.Appends += s.p.Stats().Appends
}

// TestPipelineUnderRandomFaultsWritesEveryAppendAtItsPositionOrSaysWhy is
// the property test: see the file's opening paragraph.
func TestPipelineUnderRandomFaultsWritesEveryAppendAtItsPositionOrSaysWhy(t *testing.T) {
	const seeds, steps = 500, 800
	var tally simTally
	for seed := range uint64(seeds) {
		s := newPipeSim(t, seed, &tally)
		func() {
			defer func() {
				if r := recover(); r != nil {
					s.fail("panic: %v", r)
				}
			}()
			s.run(steps)
			s.settle()
		}()
	}
	st := tally.stats
	t.Logf("across %d seeds: %+v, %+v", seeds, tally, st)
	if tally.duplicate == 0 || tally.refused == 0 || tally.superseded == 0 || tally.truncated == 0 ||
		tally.abandoned == 0 || tally.ghostLanded == 0 || tally.windowFull == 0 {
		t.Fatalf("some fault never fired: %+v", tally)
	}
	if st.Ambiguous == 0 || st.Refused == 0 || st.RefusedWhileOut == 0 || st.Unsent == 0 || st.Appends <= st.Writes {
		t.Fatalf("some path never ran: %+v", st)
	}
}
