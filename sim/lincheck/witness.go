package lincheck

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
)

// dueIndex answers, as the walk moves on in time, whether every definite
// answer that returned before a moment has found its place: a Fenwick
// tree over the definite operations in order of their returns.
type dueIndex struct {
	rank []int   // operation -> its place in return order, -1 if not definite
	rets []int64 // returns, ascending
	tree []int
}

func newDueIndex(d *decider) dueIndex {
	var defs []int
	for i, r := range d.role {
		if r == roleObserve || r == roleRequired || r == roleTrim {
			defs = append(defs, i)
		}
	}
	slices.SortStableFunc(defs, func(a, b int) int { return cmp.Compare(d.ops[a].Return, d.ops[b].Return) })
	x := dueIndex{rank: make([]int, len(d.ops)), rets: make([]int64, len(defs)), tree: make([]int, len(defs)+1)}
	for i := range x.rank {
		x.rank[i] = -1
	}
	for k, i := range defs {
		x.rank[i], x.rets[k] = k, d.ops[i].Return
	}
	return x
}

func (x *dueIndex) mark(i int, on bool) {
	delta := -1
	if on {
		delta = 1
	}
	for k := x.rank[i] + 1; k < len(x.tree); k += k & -k {
		x.tree[k] += delta
	}
}

func (x *dueIndex) allDoneBefore(t int64) bool {
	n := sort.Search(len(x.rets), func(k int) bool { return x.rets[k] >= t })
	sum := 0
	for k := n; k > 0; k -= k & -k {
		sum += x.tree[k]
	}
	return sum == n
}

// certify replays the walk's order through the sequential specification
// (step), with the Unheld answers put where they fit: every point must lie
// in its operation's interval and not before the one before it, every
// effect must change the state as its answer says and every other answer
// must leave it, and every definite answer must be in the order exactly
// once. An order that passes is a linearization, whatever the walk's
// reasoning was.
func (d *decider) certify() error {
	type placed struct {
		point
		state int
	}
	var order []placed
	type span struct {
		s   *state
		in  int64
		out int64
	}
	spans := []span{{s: initial(), in: math.MinInt64, out: math.MaxInt64}}
	for _, p := range d.lin {
		if p.effect {
			last := &spans[len(spans)-1]
			last.out = p.at
			n := d.effect(last.s, p.op)
			if n == nil {
				return fmt.Errorf("certify: #%d %s does not change %s", p.op, describeOp(d.ops[p.op]), viewString(last.s.view()))
			}
			spans = append(spans, span{s: n, in: p.at, out: math.MaxInt64})
		}
		order = append(order, placed{p, len(spans) - 1})
	}
	for i, r := range d.role {
		if r != roleFloating {
			continue
		}
		op, at := d.ops[i], -1
		for k, sp := range spans {
			if sp.in <= op.Return && sp.out >= op.Call && d.fits(sp.s, i) {
				at = k
				break
			}
		}
		if at < 0 {
			return fmt.Errorf("no linearization: #%d %s fits no state of the inferred order", i, describeOp(op))
		}
		order = append(order, placed{point{op: i, at: max(spans[at].in, op.Call)}, at})
	}
	slices.SortStableFunc(order, func(a, b placed) int {
		eff := func(p placed) int {
			if p.effect {
				return 0
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.state, b.state), cmp.Compare(eff(a), eff(b)), cmp.Compare(a.at, b.at))
	})
	s, last := initial(), int64(math.MinInt64)
	seen := make([]bool, len(d.ops))
	for _, p := range order {
		op := d.ops[p.op]
		if p.at < last || p.at < op.Call || p.at > d.ret(p.op) {
			return fmt.Errorf("certify: #%d %s placed at %d after %d", p.op, describeOp(op), p.at, last)
		}
		last = p.at
		var got *state
		for _, n := range step(s, d.mode, op.In, op.Out) {
			if p.effect != n.equal(s) {
				got = n
				break
			}
		}
		if got == nil {
			return fmt.Errorf("certify: #%d %s does not fit %s", p.op, describeOp(op), viewString(s.view()))
		}
		if seen[p.op] {
			return fmt.Errorf("certify: #%d placed twice", p.op)
		}
		s, seen[p.op] = got, true
	}
	for i, r := range d.role {
		if r != roleNone && r != roleOptional && !seen[i] {
			return fmt.Errorf("certify: #%d %s is not in the order", i, describeOp(d.ops[i]))
		}
	}
	return nil
}
