package lincheck

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/parosdb/paros/core/journal"
)

// The walk behind Decide (decide.go has the argument). Operations fall in
// four roles:
//
//   - an observation: a definite answer that moved nothing (a read, a
//     refusal, a duplicate, a truncation that left the floor). It is placed
//     at a state whose view is the one it names, where step agrees.
//   - a required effect: a definite answer that moved the state (an
//     accepted write, a won claim). It must supply exactly the effect
//     whose result its view names.
//   - a trim: a definite truncation answered Trimmed is either the effect
//     that left its floor or an observation at a state with that floor.
//   - an optional effect: an ambiguous call. It supplies an effect when an
//     answer needs one, else it is left out (a no-op at no place at all:
//     nothing returned after it bounds it).
//
// Calls that constrain nothing (inert) and Unheld answers (they name no
// view; certify places them on the chain found) take no part.
type role uint8

const (
	roleNone role = iota
	roleObserve
	roleRequired
	roleTrim
	roleOptional
	roleFloating
)

type decider struct {
	mode journal.WriterMode
	ops  []Op
	role []role
	// conflict: two answers that put different bytes at one position.
	conflict string
	known    map[journal.Seq]uint64 // record print at a position, as answers show it
	head     journal.Seq            // the highest next_seq any answer shows
	floors   []journal.Seq          // every floor answers show, ascending, from 1
	// observations by the view they name, and by its next_seq and floor.
	obsAt   map[journal.View][]int
	byNext  map[journal.Seq][]int
	byFirst map[journal.Seq][]int
	// effects by where they can land.
	writesAt   map[journal.Seq][]int // single: by the entry's position; multi: accepted, by position
	multiBy    map[uint64][]int      // multi, ambiguous: by the first record's print
	multiAll   []int
	trims      []int
	claimsFrom map[journal.LeaderUUID][]int
	claimsTo   map[journal.LeaderUUID][]int
	useful     map[journal.LeaderUUID]bool
	// the walk's path: which operations are placed or used, and the points.
	done     []bool
	open     int    // definite operations not yet placed or used
	key      uint64 // xor of opKey over done operations
	due      dueIndex
	lin      []point
	memo     map[memoKey]int64
	steps    int
	budget   int
	definite int // how many operations are definite (observations, required effects, trims)
	// the deepest state the walk reached, for the reason it gives.
	best      int
	bestState *state
	bestAt    int64
	exhausted bool
}

type point struct {
	op     int
	at     int64
	effect bool
}

type memoKey struct {
	next, first journal.Seq
	leader      journal.LeaderUUID
	key         uint64
}

func opKey(i int) uint64 {
	z := uint64(i+1) * 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (d *decider) ret(i int) int64 {
	if d.ops[i].Out.Ambiguous {
		return math.MaxInt64
	}
	return d.ops[i].Return
}

func newDecider(mode journal.WriterMode, ops []Op) *decider {
	d := &decider{mode: mode, ops: ops, role: make([]role, len(ops)), done: make([]bool, len(ops)),
		known: map[journal.Seq]uint64{}, head: 1, obsAt: map[journal.View][]int{},
		byNext: map[journal.Seq][]int{}, byFirst: map[journal.Seq][]int{}, writesAt: map[journal.Seq][]int{},
		multiBy: map[uint64][]int{}, claimsFrom: map[journal.LeaderUUID][]int{}, claimsTo: map[journal.LeaderUUID][]int{},
		useful: map[journal.LeaderUUID]bool{}, memo: map[memoKey]int64{}, budget: budgetFor(len(ops))}
	shows := map[journal.Seq]int{} // who showed the print at a position
	see := func(i int, at journal.Seq, fp uint64) {
		if j, ok := shows[at]; ok && d.known[at] != fp && d.conflict == "" {
			d.conflict = fmt.Sprintf("position %d holds two values: #%d %s, and #%d %s", at, j, describeOp(ops[j]), i, describeOp(ops[i]))
		}
		shows[at], d.known[at] = i, fp
		d.head = max(d.head, at+1)
	}
	floors := map[journal.Seq]bool{1: true}
	floorsOf := func(v journal.View) {
		floors[v.FirstSeq] = true
		d.head = max(d.head, v.NextSeq)
		d.useful[v.Leader] = true
	}
	for i, op := range ops {
		c, o := op.In.Cmd, op.Out
		switch {
		case inert(op):
			continue
		case op.In.Kind == OpRead:
			d.observe(i, o.View)
			floorsOf(o.View)
			if !o.BelowFloor {
				for k, fp := range o.Records {
					see(i, op.In.From+journal.Seq(k), fp)
				}
			}
			continue
		case o.Ambiguous:
			d.role[i] = roleOptional
		case o.Outcome.Kind == journal.Unheld:
			d.role[i] = roleFloating
			continue
		}
		if !o.Ambiguous {
			v := o.Outcome.View
			floorsOf(v)
			switch o.Outcome.Kind {
			case journal.Accepted, journal.LeaderSet:
				d.role[i] = roleRequired
				d.open++
			case journal.Trimmed:
				d.observe(i, v)
				d.role[i] = roleTrim
			default:
				d.observe(i, v)
			}
			if k := o.Outcome.Kind; (k == journal.Accepted || k == journal.Duplicate) && c.Kind == journal.KindWrite {
				for r, rec := range c.Entry.Records {
					see(i, o.Outcome.Seq+journal.Seq(r), RecordPrint(rec))
				}
			}
		}
		switch {
		case c.Kind == journal.KindWrite && (o.Ambiguous || o.Outcome.Kind == journal.Accepted):
			d.useful[c.Entry.Leader] = true
			switch {
			case mode == journal.ModeSingle:
				d.writesAt[c.Entry.Seq] = append(d.writesAt[c.Entry.Seq], i)
			case !o.Ambiguous:
				d.writesAt[o.Outcome.Seq] = append(d.writesAt[o.Outcome.Seq], i)
			case len(c.Entry.Records) > 0:
				fp := RecordPrint(c.Entry.Records[0])
				d.multiBy[fp] = append(d.multiBy[fp], i)
				d.multiAll = append(d.multiAll, i)
			}
		case c.Kind == journal.KindTruncate && (o.Ambiguous || o.Outcome.Kind == journal.Trimmed):
			d.trims = append(d.trims, i)
		case c.Kind == journal.KindSetLeader && (o.Ambiguous || o.Outcome.Kind == journal.LeaderSet):
			d.claimsFrom[c.Old] = append(d.claimsFrom[c.Old], i)
			d.claimsTo[c.New] = append(d.claimsTo[c.New], i)
			d.useful[c.Old] = true
		}
	}
	for f := range floors {
		d.floors = append(d.floors, f)
	}
	slices.Sort(d.floors)
	d.definite = d.open
	d.due = newDueIndex(d)
	return d
}

func (d *decider) observe(i int, v journal.View) {
	d.role[i] = roleObserve
	d.obsAt[v] = append(d.obsAt[v], i)
	d.byNext[v.NextSeq] = append(d.byNext[v.NextSeq], i)
	d.byFirst[v.FirstSeq] = append(d.byFirst[v.FirstSeq], i)
	d.open++
}

// mark records i as placed or used (on) or undoes it.
func (d *decider) mark(i int, on bool) {
	d.done[i] = on
	d.key ^= opKey(i)
	if d.role[i] == roleOptional {
		return
	}
	if on {
		d.open--
	} else {
		d.open++
	}
	d.due.mark(i, on)
}

// visit walks on from state s, entered at moment tIn. It reports whether
// every definite answer found its place; the path is then in d.lin.
func (d *decider) visit(s *state, tIn int64) bool {
	d.steps++
	if d.steps > d.budget {
		d.exhausted = true
		return false
	}
	if d.definite-d.open > d.best || d.bestState == nil {
		d.best, d.bestState, d.bestAt = d.definite-d.open, s, tIn
	}
	// Every definite answer due before tIn must have found its place: none
	// can be placed at a state entered after it returned.
	if !d.due.allDoneBefore(tIn) {
		return false
	}
	mk := memoKey{next: s.next, first: s.first, leader: s.leader, key: d.key}
	if t, ok := d.memo[mk]; ok && t <= tIn {
		return false
	}
	// here: the answers not yet placed that name this state's view. Each
	// must agree with the state (a disagreement here is one everywhere: a
	// view's states share their log).
	var here []int
	maxCall := tIn
	for _, i := range d.obsAt[s.view()] {
		if d.done[i] {
			continue
		}
		if !d.fits(s, i) {
			d.memo[mk] = tIn
			return false
		}
		here = append(here, i)
		maxCall = max(maxCall, d.ops[i].Call)
	}
	if d.open == len(here) {
		d.place(here, tIn, math.MaxInt64)
		return true
	}
	for _, t := range d.transitions(s, tIn, here, maxCall) {
		n := len(d.lin)
		placed := d.place(here, tIn, t.at)
		d.mark(t.op, true)
		d.lin = append(d.lin, point{op: t.op, at: t.at, effect: true})
		if d.visit(t.next, t.at) {
			return true
		}
		d.mark(t.op, false)
		for _, i := range placed {
			d.mark(i, false)
		}
		d.lin = d.lin[:n]
		if d.exhausted {
			return false
		}
	}
	if t, ok := d.memo[mk]; !ok || tIn < t {
		d.memo[mk] = tIn
	}
	return false
}

// fits says whether answer i agrees with state s.
func (d *decider) fits(s *state, i int) bool {
	for _, n := range step(s, d.mode, d.ops[i].In, d.ops[i].Out) {
		if n.equal(s) {
			return true
		}
	}
	return false
}

// place puts the answers of here called by until at the state entered at
// tIn, each at the earliest moment it allows, in call order; it returns
// them.
func (d *decider) place(here []int, tIn, until int64) []int {
	var placed []int
	for _, i := range here {
		if d.ops[i].Call <= until {
			placed = append(placed, i)
		}
	}
	slices.SortStableFunc(placed, func(a, b int) int { return cmp.Compare(d.ops[a].Call, d.ops[b].Call) })
	for _, i := range placed {
		d.mark(i, true)
		d.lin = append(d.lin, point{op: i, at: max(tIn, d.ops[i].Call)})
	}
	return placed
}

// stall says where the walk got furthest, for an Illegal verdict.
func (d *decider) stall() string {
	s := d.bestState
	if s == nil {
		return "no linearization"
	}
	return fmt.Sprintf("no linearization: the inferred order places at most %d of %d definite answers; it stalls at %s entered at %d",
		d.best, d.definite, viewString(s.view()), d.bestAt)
}
