package lincheck

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/parosdb/paros/core/journal"
)

// Decide checks one journal's history for linearizability without a general
// search over orderings. It infers the one order the journal's state can have
// gone through from what the clients observed, and checks every answer
// against a point of it. The argument (docs/design/linearizability.md has it
// in full):
//
//   - The state is (leader, next_seq, first_seq, log). Every change of it
//     is an effect of one operation: an accepted write raises next_seq, a
//     truncation that moves the floor raises first_seq, a won SetLeader
//     changes the leader. So the states form a chain, and every definite
//     answer names the view (leader, next_seq, first_seq) of the chain's
//     point it was judged at; a read also names the log's bytes there.
//   - next_seq and first_seq only rise, and positions are never reused, so
//     the writes' effects are ordered by position and the truncations' by
//     the floor they left. Every floor an answer shows must be a state of
//     the chain, so the truncations move the floor exactly through the
//     floors answers show (an unseen intermediate floor only adds a
//     constraint). The leader changes are SetLeader calls whose old uuid is
//     the leader in force: the chain of leaders is a walk along them.
//   - Decide walks the chain forward, one effect at a time, choosing which
//     dimension moves next (a write at next_seq, a truncation to the next
//     floor shown, a claim from the leader in force). Each effect gets the
//     earliest moment its operation's interval and the answers placed
//     before it allow; every answer whose view is the current state's is
//     placed there, in the gap before the next effect. The earliest moment
//     dominates: from a given state with the same operations used and
//     placed, reaching it earlier never loses a linearization, so a state
//     failed once is not searched again at a later moment (memo).
//   - Among operations that could supply one effect with the same command
//     (a writer's identical resends), the one available earliest is used,
//     ties to the one whose answer is due first: an exchange argument
//     shows no other choice places more.
//
// When Decide finds a chain, it replays it through the same sequential
// specification porcupine uses (step), checking that every point lies in
// its operation's interval and is not before the previous one: an Ok is a
// certified linearization, never a guess. When the walk fails, the history
// has no linearization (for the rare choices the walk makes greedily, the
// cross-check against porcupine is the guard, see decide_quick_test.go);
// Decide then shrinks the history to a set of operations that has none by
// itself and no operation of which can be left out (Ops).
//
// A search that passes its step budget answers Unknown: a failure of the
// checker, never a pass.
func Decide(mode journal.WriterMode, ops []Op) Verdict {
	v := decideOnce(mode, ops)
	if v.Result == porcupine.Illegal {
		v.Ops = shrink(mode, ops)
	}
	return v
}

// Verdict is Decide's answer.
type Verdict struct {
	Result Result
	// Reason says, for Illegal, where the inferred order breaks; for
	// Unknown, that the budget ran out.
	Reason string
	// Ops, for Illegal, indexes (into the history) a set of operations
	// that has no linearization by itself and none of which can be left
	// out.
	Ops []int
	// Steps is how many states the walk visited.
	Steps int
}

// Describe renders the verdict with the contradicting operations.
func (v Verdict) Describe(ops []Op) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", v.Result)
	if v.Reason != "" {
		fmt.Fprintf(&b, ": %s", v.Reason)
	}
	for _, i := range v.Ops {
		fmt.Fprintf(&b, "\n  #%d %s", i, describeOp(ops[i]))
	}
	return b.String()
}

func describeOp(op Op) string {
	ret := fmt.Sprint(op.Return)
	if op.Out.Ambiguous {
		ret = "∞"
	}
	var what string
	switch {
	case op.In.Kind == OpRead:
		what = fmt.Sprintf("read from %d", op.In.From)
	default:
		what = op.In.Cmd.String()
	}
	var got string
	switch {
	case op.Out.Ambiguous:
		got = "ambiguous"
	case op.Out.NoEffect:
		got = "refused before any slot"
	case op.In.Kind == OpRead && !op.Out.Served:
		got = "unserved"
	case op.In.Kind == OpRead && op.Out.BelowFloor:
		got = fmt.Sprintf("truncated %s", viewString(op.Out.View))
	case op.In.Kind == OpRead:
		got = fmt.Sprintf("%d records %x %s", len(op.Out.Records), op.Out.Records, viewString(op.Out.View))
	default:
		got = fmt.Sprintf("%s %s", op.Out.Outcome, viewString(op.Out.Outcome.View))
	}
	return fmt.Sprintf("client %d [%d, %s] %s -> %s", op.Client, op.Call, ret, what, got)
}

func viewString(v journal.View) string {
	return fmt.Sprintf("{leader %s next %d first %d}", v.Leader, v.NextSeq, v.FirstSeq)
}

// budgetFor bounds the walk: states visited per operation, plus a floor.
func budgetFor(n int) int { return 200_000 + 400*n }

func decideOnce(mode journal.WriterMode, ops []Op) Verdict {
	d := newDecider(mode, ops)
	if d.conflict != "" {
		return Verdict{Result: porcupine.Illegal, Reason: d.conflict}
	}
	if d.visit(initial(), math.MinInt64) {
		if err := d.certify(); err != nil {
			return Verdict{Result: porcupine.Illegal, Reason: err.Error(), Steps: d.steps}
		}
		return Verdict{Result: porcupine.Ok, Steps: d.steps}
	}
	if d.exhausted {
		return Verdict{Result: porcupine.Unknown, Reason: fmt.Sprintf("the walk passed its budget of %d states", d.budget), Steps: d.steps}
	}
	return Verdict{Result: porcupine.Illegal, Reason: d.stall(), Steps: d.steps}
}

// shrink finds a set of operations with no linearization by itself, none
// of which can be left out: each operation in turn is left out for good if
// the rest still has none. A history that Decide cannot call Illegal
// without an operation keeps it (Unknown counts as not Illegal).
func shrink(mode journal.WriterMode, ops []Op) []int {
	keep := make([]int, 0, len(ops))
	for i, op := range ops {
		if !inert(op) {
			keep = append(keep, i)
		}
	}
	sub := func(idx []int) []Op {
		out := make([]Op, len(idx))
		for k, i := range idx {
			out[k] = ops[i]
		}
		return out
	}
	if decideOnce(mode, sub(keep)).Result != porcupine.Illegal {
		return keep
	}
	for k := len(keep) - 1; k >= 0; k-- {
		try := slices.Delete(slices.Clone(keep), k, k+1)
		if decideOnce(mode, sub(try)).Result == porcupine.Illegal {
			keep = try
		}
	}
	return keep
}
