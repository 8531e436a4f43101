// Package lincheck checks a journal's client history for linearizability
// with porcupine (the checker etcd's robustness tests use), against a
// sequential journal model written apart from journal.Apply: mode, leader,
// a dense log of record fingerprints, and a floor.
//
// A call whose reply carries no verdict (a timeout, a lost slot, a
// quarantine) is ambiguous: it may or may not have taken effect, at any
// moment after it was made. Such operations return at +∞ and the model
// steps them both ways (porcupine's nondeterministic model) — unless a
// definite answer elsewhere proves that from some moment on the operation
// can only be a no-op (a fenced write's position taken, a truncation's
// floor passed, a claim's old leader gone for good); then it returns at
// that moment (settledReturns). And an ambiguous retry identical to an
// earlier ambiguous call, when the command can land only once, is left
// out (twins), as is an operation the model steps as a no-op in every
// state (inert: a refused call, an unserved read). Without them, a
// pipelining writer's, a retrying truncator's or a retrying claimant's
// many ambiguous attempts stay concurrent with the rest of the history and
// the search explodes. All are exact: a history is linearizable with them
// exactly when it is without them (the proofs are at the functions;
// bounds_quick_test.go checks them against the plain check).
package lincheck

import (
	"cmp"
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
	Served     bool
	BelowFloor bool
	Records    []uint64 // fingerprints of the records from From
	View       journal.View
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
	log    tape[uint64] // record prints at positions 1..next-1
	// starts: the write accepted at each start position (fingerprint), for
	// the Duplicate rule; parallel tapes sorted by position.
	startSeq tape[journal.Seq]
	startFP  tape[uint64]
	hash     uint64
}

func initial() *state {
	s := &state{next: 1, first: 1}
	s.rehash()
	return s
}

func (s *state) view() journal.View {
	return journal.View{Leader: s.leader, NextSeq: s.next, FirstSeq: s.first}
}

func (s *state) rehash() {
	h := fnv.New64a()
	fmt.Fprintf(h, "%v|%d|%d|%d", s.leader, s.next, s.first, s.startSeq.n)
	if n := s.log.n; n > 0 {
		fmt.Fprintf(h, "|%d", s.log.at(n-1))
	}
	s.hash = h.Sum64()
}

func (s *state) clone() *state {
	c := *s
	return &c
}

func entryPrint(e journal.Entry) uint64 { return journal.Write(e).Fingerprint() }

// apply is the sequential specification: the rules on journal.Apply's doc
// comment, written again here so the checker does not trust the code it
// checks.
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
		// The seal is never moved (journal.Sealed).
		if c.Old != s.leader || c.Old == journal.Sealed || !c.New.IsSet() || c.New == s.leader {
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
		if single && (c.Leader != s.leader || c.Leader == journal.Sealed) {
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
				return s, out(journal.BelowFloor)
			}
			if e.Seq < s.next {
				if i, ok := slices.BinarySearch(s.startSeq.slice(), e.Seq); ok && s.startFP.at(i) == entryPrint(e) {
					return s, journal.Outcome{Kind: journal.Duplicate, Seq: e.Seq, Count: k, View: s.view()}
				}
				return s, out(journal.Refused)
			}
			if e.Leader != s.leader || e.Leader == journal.Sealed || e.Seq != s.next || k == 0 {
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
		n.startSeq = n.startSeq.push(at)
		if single {
			n.startFP = n.startFP.push(entryPrint(e))
		} else {
			n.startFP = n.startFP.push(entryPrint(journal.Entry{Leader: e.Leader, Seq: at, Records: e.Records}))
		}
		for _, r := range e.Records {
			n.log = n.log.push(RecordPrint(r))
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

// step is the sequential specification of one operation: the states the
// model may be in after op (in, out) is applied in state s, none if the
// answer is impossible there. A read or a refusal leaves s; an ambiguous
// call may or may not take effect. Both checkers use it: porcupine through
// Model, Decide to place every operation and to replay its witness.
func step(s *state, mode journal.WriterMode, i Input, o Output) []*state {
	switch i.Kind {
	case OpRead:
		if !o.Served || o.Ambiguous {
			return []*state{s}
		}
		if o.BelowFloor {
			if i.From < s.first && o.View == s.view() {
				return []*state{s}
			}
			return nil
		}
		if i.From < s.first || o.View != s.view() {
			return nil
		}
		if len(o.Records) == 0 {
			if i.From >= s.next {
				return []*state{s}
			}
			return nil
		}
		for k, fp := range o.Records {
			pos := int(i.From) + k
			if pos >= int(s.next) || s.log.at(pos-1) != fp {
				return nil
			}
		}
		return []*state{s}
	default:
		if o.NoEffect {
			return []*state{s}
		}
		next, want := apply(s, mode, i.Cmd)
		if o.Ambiguous {
			if next == s {
				return []*state{s}
			}
			return []*state{s, next}
		}
		if !sameOutcome(o.Outcome, want) {
			return nil
		}
		return []*state{next}
	}
}

func (s *state) equal(y *state) bool {
	return s.hash == y.hash && s.leader == y.leader && s.next == y.next && s.first == y.first &&
		slices.Equal(s.log.slice(), y.log.slice()) && slices.Equal(s.startFP.slice(), y.startFP.slice())
}

// Model is the journal's nondeterministic sequential model for mode.
func Model(mode journal.WriterMode) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []interface{} { return []interface{}{initial()} },
		Step: func(st, in, out interface{}) []interface{} {
			next := step(st.(*state), mode, in.(Input), out.(Output))
			res := make([]interface{}, len(next))
			for k, n := range next {
				res[k] = n
			}
			return res
		},
		Equal: func(a, b interface{}) bool { return a.(*state).equal(b.(*state)) },
		Hash:  func(s interface{}) uint64 { return s.(*state).hash },
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
	twin := twins(ops, settled)
	for i, op := range ops {
		if twin[i] || inert(op) {
			continue
		}
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
// returns at that moment (or at its call, if the proof came earlier).
//
// Why a bound loses nothing: let A be ambiguous, D a definite operation
// after whose linearization A can only be a no-op, and R = max(A.Call,
// D.Return). Take any linearization of the history with A unbounded. If A
// takes effect there, it comes before D, and D comes before every
// operation called after R, so A does too. If A is a no-op there, move it
// to just after the last operation that returned before A's call: an
// ambiguous operation may be a no-op in any state (the model steps it
// both ways), and every operation called after R still follows it. Either
// way a linearization honours A returning at R, so the bounded history is
// linearizable exactly when the unbounded one is.
//
// The proofs, each resting on a view the model checks (checkedView) and
// on facts of the specification:
//
//   - a fenced write at position p: a view with next_seq > p. Positions
//     are never reused: applied later, the write finds p taken and is a
//     Duplicate or refused, or finds it truncated.
//   - a truncation up to u: a view with first_seq >= u. The floor only
//     rises, so a later application moves nothing.
//   - a claim SetLeader(old o, new n): a view with leader != o from an
//     operation D called after every operation that could make o the
//     leader again — every SetLeader naming o as its new leader — has
//     returned (with its own bound, if ambiguous; hence the fixpoint).
//     The leader changes only by a SetLeader taking effect, and only to
//     its new uuid; each of those precedes D in any linearization, so from
//     D on the leader is never o, and the claim is refused whenever it is
//     applied. Client uuids are sometimes reused (a writer reinstates an
//     old one), so "a view showed another leader" alone would not do: o
//     may lead again, and then the claim can still land.
//
// Without these bounds, the ambiguous attempts of a pipelining writer or
// of a writer retrying its claim stay concurrent with the rest of the
// history, and porcupine's search explodes (seed 369: 24 ambiguous claims
// left open, still Unknown after 60 s; bounded, it checks in well under a
// second).
func settledReturns(ops []Op) []int64 {
	out := make([]int64, len(ops))
	for i := range out {
		out[i] = math.MaxInt64
	}
	for i, op := range ops {
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
			if v, ok := checkedView(o); ok && settles(v) {
				out[i] = min(out[i], max(op.Call, o.Return))
			}
		}
	}
	settleClaims(ops, out)
	return out
}

// settleClaims bounds the ambiguous SetLeader calls in out (see
// settledReturns) and iterates to a fixpoint: bounding one claim may let
// it stop counting as a way back for its old uuid, which bounds others.
// Bounds only fall, and each to a call or return of the history, so every
// round but the last lowers one: the rounds are bounded by roundsMax.
func settleClaims(ops []Op, out []int64) {
	ret := func(i int) int64 {
		if ops[i].Out.Ambiguous {
			return out[i]
		}
		return ops[i].Return
	}
	var claims []int
	for i, op := range ops {
		if op.Out.Ambiguous && op.In.Kind == OpSetLeader && op.In.Cmd.Kind == journal.KindSetLeader {
			claims = append(claims, i)
		}
	}
	roundsMax := len(claims)*(len(ops)+1) + 1
	for round := 0; ; round++ {
		if round > roundsMax {
			panic(fmt.Sprintf("lincheck: settleClaims: no fixpoint after %d rounds", round))
		}
		lastSet := waysBack(ops, ret)
		lowered := false
		for _, i := range claims {
			a := ops[i]
			old := a.In.Cmd.Old
			after, comesBack := lastSet[old]
			for _, d := range ops {
				v, ok := checkedView(d)
				if !ok || v.Leader == old || comesBack && d.Call <= after {
					continue
				}
				if r := max(a.Call, d.Return); r < out[i] {
					out[i], lowered = r, true
				}
			}
		}
		if !lowered {
			return
		}
	}
}

// twins marks the ambiguous operations a check may leave out: a twin is
// an ambiguous call identical to a kept ambiguous call K whose window
// (call to bounded return) holds the twin's, when the command can take
// effect at most once from K's call on:
//
//   - a fenced write: always. It lands only at next_seq = its position,
//     and positions are never reused.
//   - a claim SetLeader(old o, new n): when every operation that could
//     make o the leader — every SetLeader naming o as its new leader —
//     returned before K was called. Once the claim lands, the leader is n
//     (≠ o) and could be o again only by one of those, which all precede
//     K and the twin.
//   - a truncation up to u (fenced or not): when a view (checkedView)
//     with next_seq >= u came from an operation that returned before K was
//     called. That operation precedes K and the twin, and next_seq never
//     falls, so wherever the command is applied from K's call on it lifts
//     the floor to min(u, next_seq) = u or leaves it; the floor only
//     rises, so after one application that moved it every later one moves
//     nothing. Without the view it may land twice: applied at next_seq <
//     u it lifts the floor to next_seq only, and applied again later,
//     further.
//
// Why leaving a twin T out loses nothing: a linearization without T gets
// T back as a no-op placed just after the last operation that returned
// before T's call (as in settledReturns). A linearization with T is one
// without it: if T is a no-op, drop it; if T takes effect, K cannot also
// (at most once), so K is a no-op there: drop K and give T's place and
// effect to K, which T's window allows since K's holds it. Each twin is
// judged against a kept call, so leaving out several, one by one, keeps
// every step's condition (fewer operations can only make it easier).
//
// A writer retrying a claim (seed 369: twenty identical claims in 250 ms,
// each answered ambiguous) or a truncation (seed 637: two writers resent
// theirs thirteen times through a 3.7 s outage, each copy open for
// seconds across ninety refused calls and unserved reads) would
// otherwise make porcupine try every subset of the copies before it can
// call a history Illegal, or before it backtracks out of a wrong early
// guess.
func twins(ops []Op, settled []int64) []bool {
	ret := func(i int) int64 {
		if ops[i].Out.Ambiguous {
			return settled[i]
		}
		return ops[i].Return
	}
	lastSet := waysBack(ops, ret)
	onceFrom := func(k int) bool {
		c := ops[k].In.Cmd
		switch c.Kind {
		case journal.KindWrite:
			return true
		case journal.KindTruncate:
			return reachedBefore(ops, c.UpTo, ops[k].Call)
		}
		after, comesBack := lastSet[c.Old]
		return !comesBack || after < ops[k].Call
	}
	type key struct {
		kind     journal.Kind
		print    uint64 // a write's entry print
		old, new journal.LeaderUUID
		leader   journal.LeaderUUID // a truncation's
		upTo     journal.Seq
	}
	var order []int
	keys := map[int]key{}
	once := make([]bool, len(ops)) // onceFrom, for the keyed operations
	for i, op := range ops {
		c := op.In.Cmd
		switch {
		case !op.Out.Ambiguous || inert(op):
			continue
		case op.In.Kind == OpWrite && c.Kind == journal.KindWrite && c.Entry.Leader.IsSet():
			keys[i] = key{kind: c.Kind, print: entryPrint(c.Entry)}
		case op.In.Kind == OpSetLeader && c.Kind == journal.KindSetLeader:
			keys[i] = key{kind: c.Kind, old: c.Old, new: c.New}
		case op.In.Kind == OpTruncate && c.Kind == journal.KindTruncate:
			keys[i] = key{kind: c.Kind, leader: c.Leader, upTo: c.UpTo}
		default:
			continue
		}
		order = append(order, i)
		once[i] = onceFrom(i)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(ops[a].Call, ops[b].Call) })
	drop := make([]bool, len(ops))
	kept := map[key][]int{}
	for _, i := range order {
		k := keys[i]
		for _, j := range kept[k] {
			same := ops[i].In.Cmd.Kind != journal.KindWrite || ops[i].In.Cmd.Entry.Equal(ops[j].In.Cmd.Entry)
			if same && ops[j].Call <= ops[i].Call && ret(i) <= ret(j) && once[j] {
				drop[i] = true
				break
			}
		}
		if !drop[i] {
			kept[k] = append(kept[k], i)
		}
	}
	return drop
}

// reachedBefore says whether an operation that returned before t carries
// a view (checkedView) with next_seq >= seq: then in every linearization
// next_seq >= seq from t on.
func reachedBefore(ops []Op, seq journal.Seq, t int64) bool {
	for _, o := range ops {
		if v, ok := checkedView(o); ok && o.Return < t && v.NextSeq >= seq {
			return true
		}
	}
	return false
}

// inert says whether the model steps op as a no-op in every state: a
// refused call (NoEffect), an unserved or ambiguous read. Check leaves
// these out, which loses nothing: a linearization without op gets it
// back just after the last operation that returned before op's call
// (everything called after op's return still follows it, as in
// settledReturns), and one with op is one without it once op is dropped.
// The rules above already ignore them (checkedView, waysBack). They are
// many in an outage (seed 637: ninety of them beside thirteen open
// truncations), and each one multiplies the places porcupine tries an
// open ambiguous operation.
func inert(op Op) bool {
	if op.In.Kind == OpRead {
		return !op.Out.Served || op.Out.Ambiguous
	}
	return op.Out.NoEffect
}

// waysBack maps each uuid u to the latest return (ret) of an operation
// that may make u the leader: any non-read whose command is a SetLeader
// naming u as its new leader, whatever its Kind says (the model applies
// the command), unless it is NoEffect (the model steps it as a no-op).
func waysBack(ops []Op, ret func(i int) int64) map[journal.LeaderUUID]int64 {
	last := map[journal.LeaderUUID]int64{}
	for i, op := range ops {
		if op.In.Kind != OpRead && !op.Out.NoEffect && op.In.Cmd.Kind == journal.KindSetLeader {
			u := op.In.Cmd.New
			if r, ok := last[u]; !ok || ret(i) > r {
				last[u] = ret(i)
			}
		}
	}
	return last
}

// checkedView is the journal view of a definite answer, if the model
// checks it against the state: a served read's view, or the view of a
// write's, truncation's or claim's outcome. An ambiguous or NoEffect
// answer, an unserved read and an Unheld outcome (sameOutcome checks only
// its kind) carry none.
func checkedView(o Op) (journal.View, bool) {
	if o.Out.Ambiguous {
		return journal.View{}, false
	}
	if o.In.Kind == OpRead {
		return o.Out.View, o.Out.Served
	}
	if o.Out.NoEffect || o.Out.Outcome.Kind == journal.Unheld {
		return journal.View{}, false
	}
	return o.Out.Outcome.View, true
}
