// Package lincheck checks a journal's client history for linearizability
// with porcupine (the checker etcd's robustness tests use), against a
// sequential journal model written apart from journal.Apply: mode, leader,
// a dense log of record fingerprints, and a floor.
//
// A call whose reply carries no verdict (a timeout, a lost slot, a
// quarantine) is ambiguous: it may or may not have taken effect, at any
// moment after it was made. Such operations return at +∞ and the model
// steps them both ways (porcupine's nondeterministic model) — except a
// fenced write whose identical resend later got a verdict that it is in
// the log (Accepted or Duplicate): that attempt returns when the resend
// did (settledReturns). Without it, a pipelining writer's many ambiguous
// attempts stay concurrent with the rest of the history and the search
// explodes.
package lincheck

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/parosdb/paros/core/journal"
)

// OpKind names a journal call.
type OpKind uint8

const (
	OpWrite OpKind = iota + 1
	OpRead
	OpTruncate
	OpSetLeader
)

// Input is one call.
type Input struct {
	Kind  OpKind
	Entry journal.Entry // Write
	From  journal.Seq   // Read
	Cmd   journal.Command
}

// Output is one reply. Ambiguous: no verdict (the call may have taken
// effect). Unserved reads carry no information and constrain nothing.
type Output struct {
	Ambiguous bool
	// NoEffect: the call was refused before any slot (not leader, busy,
	// too large, unknown journal): it changed nothing.
	NoEffect bool
	Outcome  journal.Outcome // Write, Truncate, SetLeader
	// Read:
	Served    bool
	Truncated bool
	Records   []uint64 // fingerprints of the records from From
	View      journal.View
}

// Op is one operation of the history: call and return in simulated time.
type Op struct {
	Client int
	In     Input
	Out    Output
	Call   int64
	Return int64 // ignored for ambiguous operations (they return at +∞)
}

// RecordPrint fingerprints one record's bytes (FNV-1a 64).
func RecordPrint(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

type state struct {
	leader journal.LeaderUUID
	next   journal.Seq
	first  journal.Seq
	log    []uint64 // record prints at positions 1..next-1
	// starts: the write accepted at each start position (fingerprint), for
	// the Duplicate rule; parallel sorted slices.
	startSeq []journal.Seq
	startFP  []uint64
	hash     uint64
}

func (s *state) view() journal.View {
	return journal.View{Leader: s.leader, NextSeq: s.next, FirstSeq: s.first}
}

func (s *state) rehash() {
	h := fnv.New64a()
	fmt.Fprintf(h, "%v|%d|%d|%d", s.leader, s.next, s.first, len(s.startSeq))
	if n := len(s.log); n > 0 {
		fmt.Fprintf(h, "|%d", s.log[n-1])
	}
	s.hash = h.Sum64()
}

func (s *state) clone() *state {
	c := *s
	c.log = slices.Clip(s.log)
	c.startSeq = slices.Clip(s.startSeq)
	c.startFP = slices.Clip(s.startFP)
	return &c
}

func entryPrint(e journal.Entry) uint64 { return journal.Write(e).Fingerprint() }

// apply is the sequential specification (reference design §3.1).
func apply(s *state, mode journal.WriterMode, c journal.Command) (*state, journal.Outcome) {
	single := mode == journal.ModeSingle
	out := func(k journal.OutcomeKind) journal.Outcome { return journal.Outcome{Kind: k, View: s.view()} }
	switch c.Kind {
	case journal.KindNoop:
		return s, out(journal.NoopDone)
	case journal.KindSetLeader:
		if !single {
			return s, out(journal.WrongMode)
		}
		if c.Old != s.leader || !c.New.IsSet() || c.New == s.leader {
			return s, out(journal.LeaderRefused)
		}
		n := s.clone()
		n.leader = c.New
		n.rehash()
		return n, journal.Outcome{Kind: journal.LeaderSet, View: n.view()}
	case journal.KindTruncate:
		if single != c.Leader.IsSet() {
			return s, out(journal.WrongMode)
		}
		if single && c.Leader != s.leader {
			return s, out(journal.TruncateRefused)
		}
		n := s.clone()
		if up := min(c.UpTo, s.next); up > n.first {
			n.first = up
		}
		n.rehash()
		return n, journal.Outcome{Kind: journal.Trimmed, View: n.view()}
	case journal.KindWrite:
		e := c.Entry
		k := uint64(len(e.Records))
		if single {
			if !e.Leader.IsSet() {
				return s, out(journal.WrongMode)
			}
			if e.Seq < s.first {
				return s, out(journal.Truncated)
			}
			if e.Seq < s.next {
				if i, ok := slices.BinarySearch(s.startSeq, e.Seq); ok && s.startFP[i] == entryPrint(e) {
					return s, journal.Outcome{Kind: journal.Duplicate, Seq: e.Seq, Count: k, View: s.view()}
				}
				return s, out(journal.Refused)
			}
			if e.Leader != s.leader || e.Seq != s.next || k == 0 {
				return s, out(journal.Refused)
			}
		} else {
			if e.Leader.IsSet() {
				return s, out(journal.WrongMode)
			}
			if k == 0 {
				return s, out(journal.Refused)
			}
		}
		n := s.clone()
		at := n.next
		n.startSeq = append(n.startSeq, at)
		n.startFP = append(n.startFP, entryPrint(journal.Entry{Leader: e.Leader, Seq: at, Records: e.Records}))
		if single {
			n.startFP[len(n.startFP)-1] = entryPrint(e)
		}
		for _, r := range e.Records {
			n.log = append(n.log, RecordPrint(r))
		}
		n.next += journal.Seq(k)
		n.rehash()
		return n, journal.Outcome{Kind: journal.Accepted, Seq: at, Count: k, View: n.view()}
	}
	return s, out(journal.WrongMode)
}

func sameOutcome(got, want journal.Outcome) bool {
	if got.Kind == journal.Unheld {
		return want.Kind == journal.Duplicate || want.Kind == journal.Refused
	}
	return got.Kind == want.Kind && got.Seq == want.Seq && got.Count == want.Count && got.View == want.View
}

// Model is the journal's nondeterministic sequential model for mode.
func Model(mode journal.WriterMode) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []interface{} {
			s := &state{next: 1, first: 1}
			s.rehash()
			return []interface{}{s}
		},
		Step: func(st, in, out interface{}) []interface{} {
			s, i, o := st.(*state), in.(Input), out.(Output)
			switch i.Kind {
			case OpRead:
				if !o.Served || o.Ambiguous {
					return []interface{}{s}
				}
				if o.Truncated {
					if i.From < s.first && o.View == s.view() {
						return []interface{}{s}
					}
					return nil
				}
				if i.From < s.first || o.View != s.view() {
					return nil
				}
				if len(o.Records) == 0 {
					if i.From >= s.next {
						return []interface{}{s}
					}
					return nil
				}
				for k, fp := range o.Records {
					pos := int(i.From) + k
					if pos >= int(s.next) || s.log[pos-1] != fp {
						return nil
					}
				}
				return []interface{}{s}
			default:
				if o.NoEffect {
					return []interface{}{s}
				}
				next, want := apply(s, mode, i.Cmd)
				if o.Ambiguous {
					if next == s {
						return []interface{}{s}
					}
					return []interface{}{s, next}
				}
				if !sameOutcome(o.Outcome, want) {
					return nil
				}
				return []interface{}{next}
			}
		},
		Equal: func(a, b interface{}) bool {
			x, y := a.(*state), b.(*state)
			return x.hash == y.hash && x.leader == y.leader && x.next == y.next && x.first == y.first &&
				slices.Equal(x.log, y.log) && slices.Equal(x.startFP, y.startFP)
		},
		Hash: func(s interface{}) uint64 { return s.(*state).hash },
		DescribeOperation: func(in, out interface{}) string {
			return fmt.Sprintf("%+v -> %+v", in, out)
		},
	}
	return nm.ToModel()
}

// Result is porcupine's verdict: Ok, Illegal or Unknown (timed out).
type Result = porcupine.CheckResult

// Check checks one journal's history. Unknown means the search timed out:
// count it as a failure to investigate.
func Check(mode journal.WriterMode, ops []Op, timeout time.Duration) Result {
	hist := make([]porcupine.Operation, 0, len(ops))
	settled := settledReturns(ops)
	for i, op := range ops {
		ret := op.Return
		if op.Out.Ambiguous {
			ret = settled[i]
		}
		hist = append(hist, porcupine.Operation{ClientId: op.Client, Input: op.In, Call: op.Call, Output: op.Out, Return: ret})
	}
	return porcupine.CheckOperationsTimeout(Model(mode), hist, timeout)
}

// settledReturns gives each ambiguous operation the time it returns at:
// +∞, unless a definite answer elsewhere in the history proves that from
// some moment on the operation can no longer change the state. Then it
// returns at that moment (or at its call, if the proof came earlier). An
// ambiguous operation may take any output, so "takes effect after that
// moment" and "takes no effect" are the same to the model: the
// linearizations the bound removes are all ones where it is a no-op. The
// proofs, each sound because positions are never reused and the floor
// only rises:
//
//   - a fenced write at position p: an answer whose view shows next_seq > p.
//     Position p is taken (by this write, which then landed before, or by
//     another): applied later, the write finds p taken and is a Duplicate
//     or refused, or finds it truncated.
//   - a truncation up to u: an answer whose view shows first_seq >= u (a
//     later application moves nothing).
//
// Without these bounds, a pipelining writer's ambiguous attempts stay
// concurrent with the rest of the history and porcupine's search explodes.
func settledReturns(ops []Op) []int64 {
	out := make([]int64, len(ops))
	for i, op := range ops {
		out[i] = math.MaxInt64
		if !op.Out.Ambiguous {
			continue
		}
		c := op.In.Cmd
		var settles func(v journal.View) bool
		switch {
		case op.In.Kind == OpWrite && c.Kind == journal.KindWrite && c.Entry.Leader.IsSet():
			settles = func(v journal.View) bool { return v.NextSeq > c.Entry.Seq }
		case op.In.Kind == OpTruncate && c.Kind == journal.KindTruncate && c.UpTo > 0:
			settles = func(v journal.View) bool { return v.FirstSeq >= c.UpTo }
		default:
			continue
		}
		for _, o := range ops {
			if !o.Out.Ambiguous && settles(viewOf(o)) {
				out[i] = min(out[i], max(op.Call, o.Return))
			}
		}
	}
	return out
}

// viewOf is the journal view a definite answer carries (zero if none).
func viewOf(o Op) journal.View {
	if o.In.Kind == OpRead {
		if o.Out.Served {
			return o.Out.View
		}
		return journal.View{}
	}
	return o.Out.Outcome.View
}
