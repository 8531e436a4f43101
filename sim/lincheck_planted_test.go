package sim

// These tests plant illegal answers into real histories from the
// simulator and check that both checkers call each one Illegal, and that
// Decide names a contradiction that holds the planted operation and is
// itself illegal to porcupine. The plants are the classic ways a journal
// can lie: a value moved to another position, a read reordered before an
// earlier state, an acknowledged write dropped from a later read, and a
// refusal naming a view the journal never had.

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/sim/lincheck"
)

// plant changes one answer of ops (a copy) and returns the changed index,
// or -1 when the history offers no place for it.
type plant struct {
	name string
	do   func(ops []lincheck.Op) int
}

func servedReads(ops []lincheck.Op, minRecords int) []int {
	var out []int
	for i, op := range ops {
		if op.In.Kind == lincheck.OpRead && op.Out.Served && !op.Out.Ambiguous && !op.Out.BelowFloor && len(op.Out.Records) >= minRecords {
			out = append(out, i)
		}
	}
	return out
}

var plants = []plant{
	{"a value moved: a read shows two of its records swapped", func(ops []lincheck.Op) int {
		for _, i := range servedReads(ops, 2) {
			r := slices.Clone(ops[i].Out.Records)
			if r[0] == r[1] {
				continue
			}
			r[0], r[1] = r[1], r[0]
			ops[i].Out.Records = r
			return i
		}
		return -1
	}},
	{"a read reordered: a later state's read moved before an earlier one", func(ops []lincheck.Op) int {
		reads := servedReads(ops, 0)
		for _, a := range reads {
			for _, b := range reads {
				va, vb := ops[a].Out.View, ops[b].Out.View
				if ops[a].Return < ops[b].Call && vb.NextSeq > va.NextSeq {
					ops[b].Call, ops[b].Return = ops[a].Call-2, ops[a].Call-1
					return b
				}
			}
		}
		return -1
	}},
	{"an acknowledged write dropped: a later read ends before it", func(ops []lincheck.Op) int {
		for _, w := range ops {
			if w.Out.Ambiguous || w.Out.NoEffect || w.Out.Outcome.Kind != journal.Accepted {
				continue
			}
			p := w.Out.Outcome.Seq
			for _, r := range servedReads(ops, 0) {
				v := ops[r].Out.View
				if ops[r].Call > w.Return && v.FirstSeq <= p {
					ops[r].In.From, ops[r].Out.Records = p, nil
					ops[r].Out.View.NextSeq = p
					return r
				}
			}
		}
		return -1
	}},
	{"a refusal with a wrong view: next_seq no state ever had", func(ops []lincheck.Op) int {
		head := journal.Seq(0)
		for _, op := range ops {
			head = max(head, op.Out.View.NextSeq, op.Out.Outcome.View.NextSeq)
		}
		for i, op := range ops {
			if !op.Out.Ambiguous && !op.Out.NoEffect && op.In.Kind == lincheck.OpWrite && op.Out.Outcome.Kind == journal.Refused {
				ops[i].Out.Outcome.View.NextSeq = head + 5
				return i
			}
		}
		return -1
	}},
}

func TestPlantedIllegalHistoriesAreIllegal(t *testing.T) {
	var hists []History
	for _, seed := range []uint64{2, 3, 17} {
		r := Run(seed, Options{KeepHistories: true})
		if !r.OK() {
			t.Fatalf("seed %d: %v", seed, r.Violations)
		}
		for _, h := range r.Histories {
			if h.Mode == journal.ModeSingle && len(h.Ops) > 100 {
				hists = append(hists, h)
			}
		}
	}
	for _, p := range plants {
		planted := 0
		for _, h := range hists {
			ops := slices.Clone(h.Ops)
			i := p.do(ops)
			if i < 0 {
				continue
			}
			planted++
			t0 := time.Now()
			v := lincheck.Decide(h.Mode, ops)
			took := time.Since(t0)
			if v.Result != "Illegal" {
				t.Errorf("%s (%s, %d ops, #%d): Decide says %s", p.name, h.Journal, len(ops), i, v.Result)
				continue
			}
			if !slices.Contains(v.Ops, i) {
				t.Errorf("%s (%s): the contradiction leaves the planted #%d out:\n%s", p.name, h.Journal, i, v.Describe(ops))
			}
			sub := make([]lincheck.Op, len(v.Ops))
			for k, j := range v.Ops {
				sub[k] = ops[j]
			}
			if r := lincheck.Check(h.Mode, sub, 10*time.Second); r != "Illegal" {
				t.Errorf("%s (%s): porcupine finds the contradiction %s:\n%s", p.name, h.Journal, r, v.Describe(ops))
			}
			t1 := time.Now()
			whole := lincheck.Check(h.Mode, ops, 10*time.Second)
			if whole != "Illegal" && whole != "Unknown" {
				t.Errorf("%s (%s): porcupine says %s", p.name, h.Journal, whole)
			}
			t.Logf("%s: %s %d ops: Decide Illegal in %v, contradiction of %d ops; porcupine %s in %v\n%s",
				p.name, h.Journal, len(ops), took, len(v.Ops), whole, time.Since(t1), v.Describe(ops))
		}
		if planted == 0 {
			t.Errorf("%s: no history offered a place for it", p.name)
		}
	}
	_ = fmt.Sprint()
}
