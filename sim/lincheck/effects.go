package lincheck

import (
	"cmp"
	"math"
	"slices"

	"github.com/parosdb/paros/core/journal"
)

// transition is one effect the walk may take next: op supplies it at
// moment at, leading to state next.
type transition struct {
	op   int
	at   int64
	next *state
	kind journal.Kind
}

// transitions lists the effects that may follow state s (entered at tIn),
// earliest first. here are the answers not yet placed that name s's view;
// maxCall is the latest of their calls (tIn if none). A write leaves s's
// next_seq and a truncation its floor for good, so each comes only when
// no other answer names that next_seq or floor, and after every call of
// here (all of which it places at s). A claim may come back to s's leader
// (a reinstated uuid) while next_seq and the floor stay, so it may also
// come at once and leave the answers called later for that return.
func (d *decider) transitions(s *state, tIn int64, here []int, maxCall int64) []transition {
	var out []transition
	v := s.view()
	if d.onlyHere(d.byNext[s.next], v) {
		out = append(out, d.writes(s, maxCall)...)
	}
	if d.onlyHere(d.byFirst[s.first], v) {
		out = append(out, d.truncations(s, maxCall)...)
	}
	out = append(out, d.claims(s, tIn, here, maxCall)...)
	slices.SortFunc(out, func(a, b transition) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.kind, b.kind), cmp.Compare(a.op, b.op))
	})
	return slices.CompactFunc(out, func(a, b transition) bool { return a.op == b.op && a.at == b.at })
}

// onlyHere says whether every answer of list not yet placed names view v.
func (d *decider) onlyHere(list []int, v journal.View) bool {
	for _, i := range list {
		if !d.done[i] && viewOf(d.ops[i]) != v {
			return false
		}
	}
	return true
}

func viewOf(op Op) journal.View {
	if op.In.Kind == OpRead {
		return op.Out.View
	}
	return op.Out.Outcome.View
}

// effect is the state op i leaves when it takes effect in s, nil if it
// cannot change s there (or its answer says it did not).
func (d *decider) effect(s *state, i int) *state {
	for _, n := range step(s, d.mode, d.ops[i].In, d.ops[i].Out) {
		if n != s && !n.equal(s) {
			return n
		}
	}
	return nil
}

// candidate is one operation able to supply an effect, and the state after.
type candidate struct {
	op   int
	next *state
}

// pick chooses, among operations supplying the same command, the one
// available earliest from lb (ties: the one due first), and the moment.
// A definite answer that moved the state (required) must supply an effect
// of its own, so the required ones are offered apart from the others; and
// since two of them may supply two effects of one command (a claim undone
// and made again), both the one available earliest and the one due first
// are offered: neither choice is always right.
func (d *decider) pick(group []candidate, lb int64, kind journal.Kind) []transition {
	var out []transition
	for _, required := range []bool{true, false} {
		var first, due transition
		firstRet, dueRet, ok := int64(math.MaxInt64), int64(math.MaxInt64), false
		for _, c := range group {
			if (d.role[c.op] == roleRequired) != required {
				continue
			}
			t := max(lb, d.ops[c.op].Call)
			r := d.ret(c.op)
			if t > r {
				continue
			}
			tr := transition{op: c.op, at: t, next: c.next, kind: kind}
			if !ok || t < first.at || t == first.at && r < firstRet {
				first, firstRet = tr, r
			}
			if !ok || r < dueRet || r == dueRet && t < due.at {
				due, dueRet = tr, r
			}
			ok = true
		}
		if ok {
			out = append(out, first)
			if required && due.op != first.op {
				out = append(out, due)
			}
		}
	}
	return out
}

// grouped splits candidates by the command they carry, in first-seen order.
func grouped(cands []candidate, key func(candidate) uint64) [][]candidate {
	idx := map[uint64]int{}
	var out [][]candidate
	for _, c := range cands {
		k := key(c)
		g, ok := idx[k]
		if !ok {
			g = len(out)
			idx[k] = g
			out = append(out, nil)
		}
		out[g] = append(out[g], c)
	}
	return out
}

// writes: the writes that can take next_seq. A write must leave bytes
// that agree with every answer showing those positions, stop at or below
// the head any answer shows, and skip no next_seq an answer names.
func (d *decider) writes(s *state, lb int64) []transition {
	cands := d.writesAt[s.next]
	if d.mode != journal.ModeSingle {
		if fp, ok := d.known[s.next]; ok {
			cands = append(slices.Clip(cands), d.multiBy[fp]...)
		} else {
			cands = append(slices.Clip(cands), d.multiAll...)
		}
	}
	var ok []candidate
	for _, i := range cands {
		if d.done[i] {
			continue
		}
		n := d.effect(s, i)
		if n == nil || n.next > d.head || !d.agrees(s.next, n) {
			continue
		}
		ok = append(ok, candidate{i, n})
	}
	var out []transition
	for _, g := range grouped(ok, func(c candidate) uint64 { return entryPrint(d.ops[c.op].In.Cmd.Entry) }) {
		out = append(out, d.pick(g, lb, journal.KindWrite)...)
	}
	return out
}

// agrees says whether the records n added from position from agree with
// what answers show there, and whether no answer names a next_seq the
// write jumps over.
func (d *decider) agrees(from journal.Seq, n *state) bool {
	for p := from; p < n.next; p++ {
		if fp, ok := d.known[p]; ok && fp != n.log.at(int(p)-1) {
			return false
		}
		if p > from && len(d.byNext[p]) > 0 {
			return false
		}
	}
	return true
}

// truncations: the truncations that lift the floor to the next floor an
// answer shows.
func (d *decider) truncations(s *state, lb int64) []transition {
	k, found := slices.BinarySearch(d.floors, s.first)
	if !found || k+1 >= len(d.floors) {
		return nil
	}
	target := d.floors[k+1]
	var ok []candidate
	for _, i := range d.trims {
		c := d.ops[i].In.Cmd
		if d.done[i] || c.UpTo < target || c.UpTo != target && s.next != target {
			continue
		}
		if n := d.effect(s, i); n != nil && n.first == target {
			ok = append(ok, candidate{i, n})
		}
	}
	var out []transition
	for _, g := range grouped(ok, func(c candidate) uint64 {
		cmd := d.ops[c.op].In.Cmd
		return opKey(int(cmd.UpTo)) ^ cmd.Leader.Hi ^ cmd.Leader.Lo*31
	}) {
		out = append(out, d.pick(g, lb, journal.KindTruncate)...)
	}
	return out
}

// claims: the SetLeader calls that can move the fence from the leader in
// force to a uuid some answer or call names. Each comes after every call
// of the answers waiting at s, or, when a claim could bring s's leader
// back, at once (the answers called later wait for that return).
func (d *decider) claims(s *state, tIn int64, here []int, lb int64) []transition {
	var ok []candidate
	for _, i := range d.claimsFrom[s.leader] {
		if d.done[i] {
			continue
		}
		if n := d.effect(s, i); n != nil && d.useful[n.leader] {
			ok = append(ok, candidate{i, n})
		}
	}
	if len(ok) == 0 {
		return nil
	}
	back := false
	if lb > tIn {
		for _, i := range d.claimsTo[s.leader] {
			back = back || !d.done[i]
		}
	}
	// splits: the moments a claim may leave at when the answers called
	// later wait for s's leader to come back: at once, or just after one
	// of the answers waiting here was called (those called by then are
	// placed here).
	var splits []int64
	if back {
		splits = append(splits, tIn)
		for _, i := range here {
			if c := d.ops[i].Call; c > tIn && c < lb {
				splits = append(splits, c)
			}
		}
		slices.Sort(splits)
		splits = slices.Compact(splits)
	}
	var out []transition
	for _, g := range grouped(ok, func(c candidate) uint64 { return c.next.leader.Hi ^ c.next.leader.Lo*31 }) {
		out = append(out, d.pick(g, lb, journal.KindSetLeader)...)
		if !back {
			continue
		}
		for _, from := range splits {
			for _, t := range d.pick(g, from, journal.KindSetLeader) {
				if t.at < lb {
					out = append(out, t)
				}
			}
		}
	}
	return out
}
