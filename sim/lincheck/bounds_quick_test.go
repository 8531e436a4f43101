package lincheck

// This file checks settledReturns, twins and inert against the naive
// check they shortcut. Random small histories are drawn by running the
// specification (apply) as the truth, one operation at a time, each given
// an interval around its moment; some answers are lost (ambiguous, the
// operation landing or not), some calls are refused before any slot
// (NoEffect) and some reads go unserved, and half the histories get one
// definite answer corrupted, so both Ok and Illegal histories are drawn.
// The uuid pool is small, so claims reinstate old uuids, and calls are
// resent identically, as the workload's clients retry; a quarter of the
// histories are a writer chasing its own floor, so a resent truncation
// lands twice. Checks with bounds, twins and inert operations left out
// (Check) and without them (every operation kept, every ambiguous one
// returning at +∞) must agree on every history, and every uncorrupted
// history must pass. Counters make sure each bounding rule, each twin rule
// and the inert rule fired and both verdicts were seen.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/parosdb/paros/core/journal"
)

const (
	// quickHistories: 20,000 histories (about 3 s) catch every unsound
	// variant of the rules tried by hand (a claim bounded by any view of
	// another leader, or by one that returned but was not called after the
	// last way back; a write or truncation bound one position early; a
	// claim taken as a twin across a reinstatement; a truncation taken as
	// a twin without a view of the head at its target, or with a view one
	// position short, or with one not yet returned; every refused call or
	// every read taken as inert), the last of them at history 11,377;
	// 6,000 missed five.
	quickHistories      = 20000
	quickHistoriesShort = 1500
	quickOpsMax         = 14
	chaseOpsMore        = 6
)

type quickGen struct {
	r    *rand.Rand
	pool []journal.LeaderUUID
	// uuids: how many of pool this history draws from; claimsPct: how
	// often a call is a claim (half the histories are claim-heavy on two
	// uuids, so claims land, are undone and land again).
	uuids, claimsPct int
	// chase: a quarter of the histories are one writer chasing its own
	// floor (chaseCommand): longer (chaseOpsMore), more answers lost
	// (lostOneIn), intervals tighter (spread), so that a resent truncation
	// lands twice, the floor rising each time, and answers pin both.
	chase     bool
	lostOneIn int
	spread    int
	// writes: entries sent so far, resent now and then (Duplicate, or a
	// late ambiguous landing at a taken position).
	writes []journal.Entry
	// sent: the calls so far other than reads, resent identically now and
	// then (a retry, as the workload's clients do: twins when ambiguous).
	sent []Input
}

func (g *quickGen) uuid() journal.LeaderUUID { return g.pool[g.r.IntN(g.uuids)] }

// command draws a call against the truth s.
func (g *quickGen) command(s *state) Input {
	if g.chase {
		return g.chaseCommand(s)
	}
	if len(g.sent) > 0 && g.r.IntN(5) == 0 {
		return g.sent[len(g.sent)-1-g.r.IntN(min(len(g.sent), 3))]
	}
	if g.r.IntN(100) < g.claimsPct {
		old := s.leader
		if g.r.IntN(4) == 0 {
			old = g.uuid()
		}
		return Input{Kind: OpSetLeader, Cmd: journal.SetLeader(g.uuid(), old)}
	}
	switch g.r.IntN(8) {
	case 0:
		l := s.leader
		if g.r.IntN(4) == 0 {
			l = g.uuid()
		}
		return Input{Kind: OpTruncate, Cmd: journal.Truncate(l, journal.Seq(1+g.r.IntN(int(s.next)+1)))}
	case 1, 2, 3:
		var e journal.Entry
		if len(g.writes) > 0 && g.r.IntN(4) == 0 {
			e = g.writes[g.r.IntN(len(g.writes))]
		} else {
			e = journal.Entry{Leader: s.leader, Seq: s.next}
			if g.r.IntN(4) == 0 {
				e.Leader = g.uuid()
			}
			if g.r.IntN(4) == 0 {
				e.Seq = journal.Seq(max(1, int(s.next)-1+g.r.IntN(3)))
			}
			for range 1 + g.r.IntN(2) {
				e.Records = append(e.Records, []byte{byte('a' + g.r.IntN(3))})
			}
			g.writes = append(g.writes, e)
		}
		return Input{Kind: OpWrite, Cmd: journal.Write(e)}
	default:
		return g.read(s)
	}
}

// chaseCommand draws a call of a writer chasing its floor: a claim until
// a leader holds (and now and then after), then a resend of the latest
// truncation, a write at the head, a truncation up to the head or one
// past it (which lifts the floor to the head only, and a resend landing
// after more writes lifts it again), or a read.
func (g *quickGen) chaseCommand(s *state) Input {
	if !s.leader.IsSet() || g.r.IntN(20) == 0 {
		return Input{Kind: OpSetLeader, Cmd: journal.SetLeader(g.uuid(), s.leader)}
	}
	if g.r.IntN(3) == 0 {
		for _, in := range slices.Backward(g.sent) {
			if in.Kind == OpTruncate {
				return in
			}
		}
	}
	switch g.r.IntN(8) {
	case 0, 1, 2, 3:
		e := journal.Entry{Leader: s.leader, Seq: s.next}
		for range 1 + g.r.IntN(2) {
			e.Records = append(e.Records, []byte{byte('a' + g.r.IntN(3))})
		}
		return Input{Kind: OpWrite, Cmd: journal.Write(e)}
	case 4, 5:
		return Input{Kind: OpTruncate, Cmd: journal.Truncate(s.leader, s.next+journal.Seq(g.r.IntN(2)))}
	default:
		return g.read(s)
	}
}

// read draws a read from just below the floor up to the head.
func (g *quickGen) read(s *state) Input {
	return Input{Kind: OpRead, From: journal.Seq(max(1, int(s.first)-1+g.r.IntN(int(s.next-s.first)+2)))}
}

// answer is the truth's reply to in, and the state after it.
func answer(s *state, in Input) (*state, Output) {
	if in.Kind != OpRead {
		n, out := apply(s, journal.ModeSingle, in.Cmd)
		return n, Output{Outcome: out}
	}
	out := Output{Served: true, View: s.view()}
	switch {
	case in.From < s.first:
		out.BelowFloor = true
	case in.From < s.next:
		out.Records = slices.Clone(s.log.slice()[in.From-1:])
	}
	return s, out
}

// corrupt changes one definite answer (the history may stay linearizable).
func (g *quickGen) corrupt(o *Output) {
	if o.Served {
		switch g.r.IntN(3) {
		case 0:
			o.View.Leader = g.uuid()
		case 1:
			o.View.NextSeq++
		default:
			if len(o.Records) > 0 {
				o.Records[len(o.Records)-1] ^= 1
			} else {
				o.View.NextSeq--
			}
		}
		return
	}
	switch g.r.IntN(3) {
	case 0:
		o.Outcome.View.Leader = g.uuid()
	case 1:
		o.Outcome.View.NextSeq++
	default:
		o.Outcome.Kind = journal.LeaderSet + journal.OutcomeKind(g.r.IntN(3))
	}
}

// history draws one history; corrupted says whether an answer was changed.
func (g *quickGen) history() (ops []Op, corrupted bool) {
	s := &state{next: 1, first: 1}
	s.rehash()
	g.writes, g.sent = g.writes[:0], g.sent[:0]
	g.uuids, g.claimsPct, g.chase, g.lostOneIn, g.spread = len(g.pool), 20, false, 4, 25
	switch g.r.IntN(4) {
	case 0, 1:
		g.uuids, g.claimsPct = 2, 50
	case 2:
		g.chase, g.lostOneIn, g.spread = true, 3, 6
	}
	n := 4 + g.r.IntN(quickOpsMax-3)
	if g.chase {
		n += chaseOpsMore
	}
	for i := range n {
		in := g.command(s)
		if in.Kind != OpRead {
			g.sent = append(g.sent, in)
		}
		at := int64(10 * (i + 1))
		op := Op{Client: g.r.IntN(3), In: in, Call: at - int64(g.r.IntN(g.spread)), Return: at + int64(g.r.IntN(g.spread))}
		next, out := answer(s, in)
		switch {
		case in.Kind != OpRead && g.r.IntN(g.lostOneIn) == 0:
			out = Output{Ambiguous: true}
			if g.r.IntN(2) == 0 {
				next = s // lost before it landed
			}
		case g.r.IntN(10) == 0:
			// Refused before any slot (NoEffect), or an unserved read.
			next, out = s, Output{NoEffect: in.Kind != OpRead}
		}
		s = next
		op.Out = out
		ops = append(ops, op)
	}
	if g.r.IntN(2) == 0 {
		var definite []int
		for i, op := range ops {
			if !op.Out.Ambiguous && !inert(op) {
				definite = append(definite, i)
			}
		}
		if len(definite) > 0 {
			g.corrupt(&ops[definite[g.r.IntN(len(definite))]].Out)
			corrupted = true
		}
	}
	return ops, corrupted
}

// unbounded checks ops with every ambiguous operation returning at +∞.
func unbounded(ops []Op) Result {
	hist := make([]porcupine.Operation, 0, len(ops))
	for _, op := range ops {
		ret := op.Return
		if op.Out.Ambiguous {
			ret = math.MaxInt64
		}
		hist = append(hist, porcupine.Operation{ClientId: op.Client, Input: op.In, Call: op.Call, Output: op.Out, Return: ret})
	}
	return porcupine.CheckOperationsTimeout(Model(journal.ModeSingle), hist, 10*time.Second)
}

func TestBoundsAgreeWithTheUnboundedCheck(t *testing.T) {
	g := &quickGen{r: rand.New(rand.NewPCG(369, 1911))}
	for range 3 {
		g.pool = append(g.pool, journal.LeaderUUID{Hi: g.r.Uint64() | 1, Lo: g.r.Uint64()})
	}
	verdicts := map[Result]int{}
	fired, twinned, inerts := map[OpKind]int{}, map[OpKind]int{}, map[OpKind]int{}

	n := quickHistories
	if testing.Short() {
		n = quickHistoriesShort
	}
	for range n {
		ops, corrupted := g.history()
		bounded, naive := Check(journal.ModeSingle, ops, 10*time.Second), unbounded(ops)

		if bounded != naive || bounded == porcupine.Unknown {
			t.Fatalf("bounded %s, unbounded %s, for:\n%s", bounded, naive, describe(ops))
		}
		if !corrupted && bounded != porcupine.Ok {
			t.Fatalf("the truth's own history: got %s for:\n%s", bounded, describe(ops))
		}
		verdicts[bounded]++
		settled := settledReturns(ops)
		twin := twins(ops, settled)
		for i, r := range settled {
			if ops[i].Out.Ambiguous && r != math.MaxInt64 {
				fired[ops[i].In.Kind]++
			}
			if twin[i] {
				twinned[ops[i].In.Kind]++
			}
			if inert(ops[i]) {
				inerts[ops[i].In.Kind]++
			}
		}
	}

	if verdicts[porcupine.Ok] == 0 || verdicts[porcupine.Illegal] == 0 {
		t.Errorf("verdicts %v: want both Ok and Illegal histories", verdicts)
	}
	for _, k := range []OpKind{OpWrite, OpTruncate, OpSetLeader} {
		if fired[k] == 0 {
			t.Errorf("no ambiguous operation of kind %d was bounded (fired %v)", k, fired)
		}
	}
	for _, k := range []OpKind{OpWrite, OpTruncate, OpSetLeader} {
		if twinned[k] == 0 {
			t.Errorf("no ambiguous operation of kind %d was left out as a twin (twins %v)", k, twinned)
		}
	}
	for _, k := range []OpKind{OpWrite, OpRead, OpTruncate, OpSetLeader} {
		if inerts[k] == 0 {
			t.Errorf("no operation of kind %d was left out as inert (inert %v)", k, inerts)
		}
	}
	t.Logf("verdicts %v, bounded ambiguous operations by kind %v, twins by kind %v, inert by kind %v", verdicts, fired, twinned, inerts)
}

func describe(ops []Op) string {
	var b []byte
	for i, op := range ops {
		b = fmt.Appendf(b, "%2d c%d [%d,%d] %+v -> %+v\n", i, op.Client, op.Call, op.Return, op.In.Cmd, op.Out)
		if op.In.Kind == OpRead {
			b = fmt.Appendf(b, "      read from %d\n", op.In.From)
		}
	}
	return string(b)
}
