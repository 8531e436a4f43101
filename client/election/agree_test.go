// This file checks, over random runs of the election protocol, that every
// watcher folds to the same state at every position and that no term ever
// has two leaders. Candidates fold the log at their own pace and append
// what the protocol lets them (a campaign for their Term+1, a renewal or a
// resignation of a term they lead, a compaction up to their latest
// accepted renewal); each append may be delayed past later ones and land
// twice (an ambiguous append resent); foreign and malformed records are
// mixed in. Watchers read the truncated log: those that start late, or lag
// below the floor, meet a gap and restart from the first record after it.
// A reference fold reads the whole log, never truncated; every anchored
// watcher must equal it at the position it reached.
package election

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/parosdb/paros/core/journal"
)

// randLog is the journal of a random run: every record ever appended
// (whole), and the floor below which readers meet a gap.
type randLog struct {
	whole [][]byte
	floor journal.Seq
}

func (l *randLog) next() journal.Seq { return journal.Seq(len(l.whole)) + 1 }

// reader folds l from a cursor as a watcher over the truncated journal.
type reader struct {
	fold   Fold
	cursor journal.Seq
	uuid   journal.LeaderUUID // a candidate's, unset for a pure watcher
	jumps  int
}

// step reads up to n records; a cursor below the floor jumps.
func (r *reader) step(l *randLog, n int) {
	for range n {
		if r.cursor < l.floor {
			r.jumps++
			r.fold.Jump()
			r.cursor = l.floor
		}
		if r.cursor >= l.next() {
			return
		}
		r.fold.Apply(r.cursor, l.whole[r.cursor-1])
		r.cursor++
	}
}

func TestRandomRunsEveryWatcherAgreesAndATermHasOneLeader(t *testing.T) {
	var total runStats
	for seed := range uint64(300) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			s := randomRun(t, seed)
			total.terms += s.terms
			total.resigns += s.resigns
			total.jumps += s.jumps
		})
	}
	// The runs must have exercised what they check.
	if total.terms < 1000 || total.resigns < 100 || total.jumps < 100 {
		t.Fatalf("the runs were too tame: %+v", total)
	}
	if testing.Verbose() {
		t.Logf("exercised: %+v", total)
	}
}

// runStats counts what a run exercised.
type runStats struct{ terms, resigns, jumps int }

func randomRun(t *testing.T, seed uint64) runStats {
	var st runStats
	rng := rand.New(rand.NewPCG(seed, 0xe1ec7))
	l := &randLog{floor: journal.FirstSeq}
	var cands, watchers []*reader
	for i := range 2 + rng.IntN(4) {
		cands = append(cands, &reader{cursor: 1, uuid: journal.LeaderUUID{Hi: uint64(i + 1), Lo: seed}})
	}
	for range 3 {
		watchers = append(watchers, &reader{cursor: 1})
	}
	// ref[p] is the state of the fold of the whole log after position p.
	var ref Fold
	refs := []state{stateOf(&ref)}
	leaders := map[Term]journal.LeaderUUID{}
	// late holds appends in flight, landing later (maybe twice).
	var late [][]byte
	land := func(rec []byte) {
		l.whole = append(l.whole, rec)
		ref.Apply(l.next()-1, rec)
		s := stateOf(&ref)
		refs = append(refs, s)
		if s.Leader.IsSet() {
			if u, ok := leaders[s.Term]; ok && u != s.Leader {
				t.Fatalf("term %d led by %s and %s", s.Term, u, s.Leader)
			}
			leaders[s.Term] = s.Leader
		}
	}
	send := func(rec []byte) {
		switch rng.IntN(10) {
		case 0:
			late = append(late, rec)
		case 1:
			land(rec)
			late = append(late, rec) // ambiguous, resent: lands twice
		default:
			land(rec)
		}
	}
	for range 400 {
		c := cands[rng.IntN(len(cands))]
		switch x := rng.IntN(100); {
		case x < 35:
			c.step(l, 1+rng.IntN(4))
		case x < 45:
			if c.fold.Anchored() {
				send(CampaignRecord(c.fold.Term()+1, c.uuid, fmt.Sprint("c", c.uuid.Hi)))
			}
		case x < 65:
			if u, _, ok := c.fold.Leader(); ok && u == c.uuid {
				send(RenewRecord(c.fold.Term(), c.uuid, fmt.Sprint("r", rng.IntN(3))))
			}
		case x < 68:
			if u, _, ok := c.fold.Leader(); ok && u == c.uuid {
				send(ResignRecord(c.fold.Term(), c.uuid, cands[rng.IntN(len(cands))].uuid))
				st.resigns++
			}
		case x < 75:
			// Compaction: up to the candidate's latest accepted renewal.
			if u, _, ok := c.fold.Leader(); ok && u == c.uuid && c.fold.LastRenewalSeq() > 0 {
				l.floor = max(l.floor, c.fold.LastRenewalSeq())
			}
		case x < 85:
			if len(late) > 0 {
				i := rng.IntN(len(late))
				land(late[i])
				late = append(late[:i], late[i+1:]...)
			}
		case x < 88:
			land([]byte("foreign"))
		case x < 90:
			land(append([]byte(Magic), byte(rng.IntN(256))))
		case x < 93:
			watchers = append(watchers, &reader{cursor: journal.FirstSeq}) // a watcher starting now
		default:
			for _, w := range watchers {
				w.step(l, rng.IntN(8))
			}
		}
		for _, r := range append(append([]*reader(nil), cands...), watchers...) {
			if !r.fold.Anchored() {
				continue
			}
			if got, want := stateOf(&r.fold), refs[r.cursor-1]; got != want {
				t.Fatalf("a reader at %d (floor %d) folded %+v, the whole log %+v", r.cursor, l.floor, got, want)
			}
		}
	}
	// Every watcher catches up and agrees with the whole log's fold.
	for _, r := range append(cands, watchers...) {
		r.step(l, len(l.whole)+1)
		if r.fold.Anchored() && stateOf(&r.fold) != stateOf(&ref) {
			t.Fatalf("at the tail: %+v, the whole log %+v", stateOf(&r.fold), stateOf(&ref))
		}
		st.jumps += r.jumps
	}
	st.terms = int(ref.Term())
	return st
}
