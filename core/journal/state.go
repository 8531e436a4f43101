package journal

import (
	"errors"
	"fmt"
)

// State is what the journal's log folds to. Leader is the writer fence in
// force, NextSeq the position the next accepted record takes, FirstSeq the
// first position still readable (everything below was truncated).
//
// Invariant: FirstSeq <= NextSeq; FirstSeq >= 1.
// Invariant: Leader is set iff term > 0 (single-writer journals only).
// Invariant: every field is monotone; Leader changes only with term.
//
// The term is hidden from clients (View has none) but sealed with the state
// when a prefix is dropped, so a restarted node folds from the same base.
type State struct {
	Leader   LeaderUUID
	term     uint64
	NextSeq  Seq
	FirstSeq Seq
}

// Initial is the state of a fresh journal: no leader, nothing written.
func Initial() State { return State{NextSeq: FirstSeq, FirstSeq: FirstSeq} }

// ErrBadState reports a sealed state that breaks a State invariant (a damaged
// or forged record); boot refuses it.
var ErrBadState = errors.New("paros/journal: state breaks an invariant")

// Restore rebuilds a sealed state from its four scalars, checking every
// invariant. Stores use it when they read a sealed state back.
func Restore(leader LeaderUUID, term uint64, nextSeq, firstSeq Seq) (State, error) {
	s := State{Leader: leader, term: term, NextSeq: nextSeq, FirstSeq: firstSeq}
	if err := s.check(); err != nil {
		return State{}, err
	}
	return s, nil
}

// Term is the number of leader changes folded so far. Only stores and the
// audit read it; clients never see it.
func (s State) Term() uint64 { return s.term }

// IsZero reports whether s is the zero value (never a valid state).
func (s State) IsZero() bool { return s == State{} }

// SeqMax and TermMax bound a state's positions and term, so that no fold
// can wrap them (NextSeq + records, term + 1): a sealed state beyond them
// is as broken as one with FirstSeq > NextSeq, and a fold that would pass
// them is refused. 2^62 positions at a million records a second last
// 146,000 years. Frozen: they are part of the wire and disk contract.
const (
	SeqMax  Seq    = 1 << 62
	TermMax uint64 = 1 << 62
)

func (s State) check() error {
	switch {
	case s.NextSeq > SeqMax:
		return fmt.Errorf("%w: next_seq %d above %d", ErrBadState, s.NextSeq, SeqMax)
	case s.term > TermMax:
		return fmt.Errorf("%w: term %d above %d", ErrBadState, s.term, TermMax)
	case s.FirstSeq < FirstSeq:
		return fmt.Errorf("%w: first_seq %d < 1", ErrBadState, s.FirstSeq)
	case s.FirstSeq > s.NextSeq:
		return fmt.Errorf("%w: first_seq %d > next_seq %d", ErrBadState, s.FirstSeq, s.NextSeq)
	case s.Leader.IsSet() != (s.term > 0):
		return fmt.Errorf("%w: leader %s with term %d", ErrBadState, s.Leader, s.term)
	}
	return nil
}

// View is the client's view of a state: everything but the term.
type View struct {
	Leader   LeaderUUID
	NextSeq  Seq
	FirstSeq Seq
}

// View returns the client-visible part of s.
func (s State) View() View { return View{Leader: s.Leader, NextSeq: s.NextSeq, FirstSeq: s.FirstSeq} }

func (s State) String() string {
	return fmt.Sprintf("{leader %s term %d next %d first %d}", s.Leader, s.term, s.NextSeq, s.FirstSeq)
}

// OutcomeKind names the verdict one slot folded to.
type OutcomeKind uint8

const (
	OutcomeInvalid OutcomeKind = iota
	// Accepted: the write's records occupy [Seq, Seq+Count).
	Accepted
	// Duplicate: a retry of exactly the write accepted at Seq.
	Duplicate
	// Refused: a write not accepted; View names the leader in force and NextSeq.
	Refused
	// BelowFloor: a write below FirstSeq; the client must read the tail.
	BelowFloor
	// LeaderSet: a SetLeader won; View is the state after it.
	LeaderSet
	// LeaderRefused: a SetLeader lost its compare-and-set.
	LeaderRefused
	// Trimmed: a Truncate was accepted; View.FirstSeq is the new floor.
	Trimmed
	// TruncateRefused: a Truncate from a caller that is not the writer in force.
	TruncateRefused
	// WrongMode: a call that does not fit the journal's writer mode.
	WrongMode
	// NoopDone: a Noop (gap filler).
	NoopDone
	// Unheld: a retry whose earlier write lies in a prefix this node no
	// longer holds (it jumped to a trim point, or re-folds after a restart
	// from a sealed base). The node cannot tell Duplicate from Refused; both
	// move nothing, so the state is unaffected, and the call is answered as
	// ambiguous. See docs/design/divergences.md.
	Unheld
)

var outcomeNames = [...]string{"invalid", "accepted", "duplicate", "refused", "below-floor",
	"leader-set", "leader-refused", "trimmed", "truncate-refused", "wrong-mode", "noop", "unheld"}

func (k OutcomeKind) String() string {
	if int(k) < len(outcomeNames) {
		return outcomeNames[k]
	}
	return fmt.Sprintf("outcome(%d)", uint8(k))
}

// Outcome is the verdict of one slot. Seq and Count are set for Accepted and
// Duplicate; View is the state the slot was judged against (for refusals) or
// left (for wins).
type Outcome struct {
	Kind  OutcomeKind
	Seq   Seq
	Count uint64
	View  View
}

func (o Outcome) String() string {
	switch o.Kind {
	case Accepted, Duplicate:
		return fmt.Sprintf("%s[%d,+%d)", o.Kind, o.Seq, o.Count)
	}
	return o.Kind.String()
}

// Held is the answer of a position lookup.
type Held uint8

const (
	// Absent: no accepted write starts at that position.
	Absent Held = iota
	// Found: the entry returned is the write accepted at that position.
	Found
	// NotHeld: the position lies in a prefix this node no longer holds.
	NotHeld
)

// Positions answers which accepted write starts at a position. The learner
// keeps it (its positions index) so Apply never holds the log.
type Positions interface {
	EntryAt(seq Seq) (Entry, Held)
}

// Apply folds one decided command into s and returns the new state and the
// slot's outcome. It is pure: the same (state, mode, command, positions)
// always give the same answer. Refusals, duplicates and Noops move nothing.
//
// Single-writer rules:
//   - Write: unset uuid → WrongMode; seq < FirstSeq → BelowFloor; seq <
//     NextSeq → Duplicate iff the identical write starts at seq, else
//     Refused; otherwise Accepted iff the uuid is the leader in force, seq ==
//     NextSeq and there is at least one record, else Refused.
//   - SetLeader: wins iff Old is the leader in force and not Sealed, New is
//     set and differs.
//   - Truncate: unset uuid → WrongMode; refused unless the uuid leads and is
//     not Sealed; else FirstSeq = max(FirstSeq, min(UpTo, NextSeq)).
//
// Invariant: once Sealed is the leader in force it stays so, and no Write
// is accepted after it (the seal: see Sealed). A Write carrying Sealed is
// Refused.
//
// Multi-writer rules: a Write with an unset uuid and records is accepted at
// NextSeq whatever seq it names; an unset-uuid Truncate is open to anyone;
// any uuid-bearing call and every SetLeader is WrongMode.
//
// In both modes a write whose records would carry NextSeq past SeqMax is
// Refused and a SetLeader at TermMax is LeaderRefused: the bounds make
// every scalar's arithmetic exact.
func Apply(s State, mode WriterMode, c Command, pos Positions) (State, Outcome) {
	next, out := apply(s, mode, c, pos)
	assertTransition(s, next, c, out)
	return next, out
}

func apply(s State, mode WriterMode, c Command, pos Positions) (State, Outcome) {
	switch c.Kind {
	case KindNoop:
		return s, Outcome{Kind: NoopDone, View: s.View()}
	case KindWrite:
		return applyWrite(s, mode, c.Entry, pos)
	case KindSetLeader:
		if mode != ModeSingle {
			return s, Outcome{Kind: WrongMode, View: s.View()}
		}
		if c.Old != s.Leader || c.Old == Sealed || !c.New.IsSet() || c.New == s.Leader || s.term >= TermMax {
			return s, Outcome{Kind: LeaderRefused, View: s.View()}
		}
		s.Leader = c.New
		s.term++
		return s, Outcome{Kind: LeaderSet, View: s.View()}
	case KindTruncate:
		// A mode that is neither single nor multi fits no call, as for Write
		// and SetLeader; without the first test an unfenced Truncate would
		// trim a journal of unset mode.
		if (mode != ModeSingle && mode != ModeMulti) || (mode == ModeSingle) != c.Leader.IsSet() {
			return s, Outcome{Kind: WrongMode, View: s.View()}
		}
		if mode == ModeSingle && (c.Leader != s.Leader || c.Leader == Sealed) {
			return s, Outcome{Kind: TruncateRefused, View: s.View()}
		}
		s.FirstSeq = max(s.FirstSeq, min(c.UpTo, s.NextSeq))
		return s, Outcome{Kind: Trimmed, View: s.View()}
	}
	// An invalid command is never proposed (decoders refuse it) but a fold
	// must still be total: it takes its slot and moves nothing.
	return s, Outcome{Kind: WrongMode, View: s.View()}
}

func applyWrite(s State, mode WriterMode, e Entry, pos Positions) (State, Outcome) {
	n := uint64(len(e.Records))
	if mode != ModeSingle {
		if e.Leader.IsSet() || mode != ModeMulti {
			return s, Outcome{Kind: WrongMode, View: s.View()}
		}
		if n == 0 || n > uint64(SeqMax-s.NextSeq) {
			return s, Outcome{Kind: Refused, View: s.View()}
		}
		at := s.NextSeq
		s.NextSeq += Seq(n)
		return s, Outcome{Kind: Accepted, Seq: at, Count: n, View: s.View()}
	}
	if !e.Leader.IsSet() {
		return s, Outcome{Kind: WrongMode, View: s.View()}
	}
	if e.Seq < s.FirstSeq {
		return s, Outcome{Kind: BelowFloor, View: s.View()}
	}
	if e.Seq < s.NextSeq {
		held, how := Entry{}, Absent
		if pos != nil {
			held, how = pos.EntryAt(e.Seq)
		}
		switch how {
		case Found:
			if held.Equal(e) {
				return s, Outcome{Kind: Duplicate, Seq: e.Seq, Count: n, View: s.View()}
			}
		case NotHeld:
			return s, Outcome{Kind: Unheld, View: s.View()}
		}
		return s, Outcome{Kind: Refused, View: s.View()}
	}
	if e.Leader != s.Leader || e.Leader == Sealed || e.Seq != s.NextSeq || n == 0 || n > uint64(SeqMax-s.NextSeq) {
		return s, Outcome{Kind: Refused, View: s.View()}
	}
	s.NextSeq += Seq(n)
	return s, Outcome{Kind: Accepted, Seq: e.Seq, Count: n, View: s.View()}
}

// assertTransition checks the state machine's invariants on every fold; a
// failure is a programmer error in Apply, never an operating condition.
func assertTransition(before, after State, c Command, out Outcome) {
	if err := after.check(); err != nil {
		panic(fmt.Sprintf("journal: %v after %s folded %s", err, before, c))
	}
	if after.NextSeq < before.NextSeq || after.FirstSeq < before.FirstSeq || after.term < before.term {
		panic(fmt.Sprintf("journal: a scalar moved back: %s -> %s on %s", before, after, c))
	}
	if (after.Leader != before.Leader) != (after.term != before.term) {
		panic(fmt.Sprintf("journal: leader changed without term: %s -> %s", before, after))
	}
	if before.Leader == Sealed && after != before {
		panic(fmt.Sprintf("journal: a sealed journal moved: %s -> %s on %s", before, after, c))
	}
	moved := after != before
	switch out.Kind {
	case Accepted:
		if out.Seq != before.NextSeq || after.NextSeq != before.NextSeq+Seq(out.Count) || out.Count == 0 {
			panic(fmt.Sprintf("journal: accepted %s does not take the next positions of %s", out, before))
		}
	case LeaderSet:
		if after.term != before.term+1 {
			panic("journal: a won SetLeader must raise the term by one")
		}
	case Trimmed:
		if after.NextSeq != before.NextSeq || after.Leader != before.Leader {
			panic("journal: a truncate moved more than first_seq")
		}
	default:
		if moved {
			panic(fmt.Sprintf("journal: outcome %s moved the state %s -> %s", out.Kind, before, after))
		}
	}
}
