// Package journal is the per-journal state machine every node runs over its
// chosen log, and the plain request and reply types of the four data-plane
// calls (Write, Read, Truncate, SetLeader).
//
// A decided slot holds a Command. The acceptors and replication never tell
// the variants apart; only the learner's contiguous walk interprets a slot,
// by calling Apply in slot order. Apply is pure and total: every node that
// folds the same log from the same sealed base gives every slot the same
// Outcome, which is what lets any node answer any call.
//
// Positions are not slots. A Write that is accepted occupies the positions
// [seq, seq+count); a Noop, a control command or a refused write takes a slot
// and no position, so readers never see holes.
package journal

import (
	"bytes"
	"fmt"
)

// LeaderUUID is the 128-bit writer fence. The zero value is "unset": it never
// leads, and on a single-writer journal an unset uuid on a Write or Truncate
// is a WrongMode call.
type LeaderUUID struct{ Hi, Lo uint64 }

// IsSet reports whether u names a writer.
func (u LeaderUUID) IsSet() bool { return u.Hi != 0 || u.Lo != 0 }

// Sealed is the seal: the fence of a single-writer journal that is being
// deleted. Once a SetLeader installs it, nothing moves it again (a
// SetLeader whose Old is Sealed is refused) and it writes and truncates
// nothing (a Write or Truncate carrying it is refused), so the journal's
// own log orders its deletion after every write it ever accepted, whichever
// server answers and whatever that server knows of the deletion. Its value
// is public: what keeps a writer from sealing a journal is the service's
// authorization (only the cell's control plane may), not secrecy. A writer
// never draws it (UsableUUID).
var Sealed = LeaderUUID{Hi: ^uint64(0), Lo: ^uint64(0)}

// UsableUUID reports whether a writer may take u as its fence: set, and not
// the seal.
func UsableUUID(u LeaderUUID) bool { return u.IsSet() && u != Sealed }

func (u LeaderUUID) String() string {
	if !u.IsSet() {
		return "unset"
	}
	if u == Sealed {
		return "sealed"
	}
	return fmt.Sprintf("%016x%016x", u.Hi, u.Lo)
}

// Seq is a journal position: it counts records, starting at 1 on a fresh
// journal (0 is never a record's position).
type Seq uint64

// FirstSeq is the position of the first record of a fresh journal.
const FirstSeq Seq = 1

// Entry is a writer's batch of opaque records, fenced by its leader uuid and
// checked against the position it expects to land at.
type Entry struct {
	Leader  LeaderUUID
	Seq     Seq
	Records [][]byte
}

// Equal reports whether e and o are the identical write: same uuid, same
// position and byte-identical records. It is the Duplicate test.
func (e Entry) Equal(o Entry) bool {
	if e.Leader != o.Leader || e.Seq != o.Seq || len(e.Records) != len(o.Records) {
		return false
	}
	for i := range e.Records {
		if !bytes.Equal(e.Records[i], o.Records[i]) {
			return false
		}
	}
	return true
}

// Bytes is the total size of the entry's records.
func (e Entry) Bytes() int {
	n := 0
	for _, r := range e.Records {
		n += len(r)
	}
	return n
}

// Kind tags a Command variant. The zero value is invalid: nothing defaults.
type Kind uint8

const (
	KindInvalid Kind = iota
	KindWrite
	KindTruncate
	KindSetLeader
	KindNoop
)

func (k Kind) String() string {
	switch k {
	case KindWrite:
		return "write"
	case KindTruncate:
		return "truncate"
	case KindSetLeader:
		return "set-leader"
	case KindNoop:
		return "noop"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Command is the value decided into one slot: Write(Entry) or one of paros's
// own controls (Truncate, SetLeader, Noop). It is a tagged struct rather than
// an interface so that logs of commands cost no boxing.
//
// Fields by kind:
//
//	Write:     Entry
//	Truncate:  Leader (the caller's fence), UpTo (first position still needed)
//	SetLeader: New, Old (compare-and-set: Old must be the leader in force)
//	Noop:      nothing
type Command struct {
	Kind   Kind
	Entry  Entry
	Leader LeaderUUID
	UpTo   Seq
	New    LeaderUUID
	Old    LeaderUUID
}

// Write wraps an entry as a command.
func Write(e Entry) Command { return Command{Kind: KindWrite, Entry: e} }

// Truncate asks to drop every position below upTo, fenced by leader.
func Truncate(leader LeaderUUID, upTo Seq) Command {
	return Command{Kind: KindTruncate, Leader: leader, UpTo: upTo}
}

// SetLeader moves the writer fence from old to new (compare-and-set).
func SetLeader(newLeader, old LeaderUUID) Command {
	return Command{Kind: KindSetLeader, New: newLeader, Old: old}
}

// Noop fills a slot with nothing.
func Noop() Command { return Command{Kind: KindNoop} }

// Valid reports whether c is a well-formed variant (a decoder's check).
func (c Command) Valid() bool {
	return c.Kind >= KindWrite && c.Kind <= KindNoop
}

// Equal reports whether two commands are the same value.
func (c Command) Equal(o Command) bool {
	if c.Kind != o.Kind {
		return false
	}
	switch c.Kind {
	case KindWrite:
		return c.Entry.Equal(o.Entry)
	case KindTruncate:
		return c.Leader == o.Leader && c.UpTo == o.UpTo
	case KindSetLeader:
		return c.New == o.New && c.Old == o.Old
	}
	return true
}

func (c Command) String() string {
	switch c.Kind {
	case KindWrite:
		return fmt.Sprintf("write(%s@%d×%d)", c.Entry.Leader, c.Entry.Seq, len(c.Entry.Records))
	case KindTruncate:
		return fmt.Sprintf("truncate(%s,<%d)", c.Leader, c.UpTo)
	case KindSetLeader:
		return fmt.Sprintf("set-leader(%s←%s)", c.New, c.Old)
	case KindNoop:
		return "noop"
	}
	return c.Kind.String()
}

// WriterMode is fixed when a journal is created and recorded in its store's
// format marker. The zero value is unset and refused by configuration checks.
type WriterMode uint8

const (
	ModeUnset WriterMode = iota
	// ModeSingle: one fenced writer at a time (SetLeader moves the fence),
	// position-checked writes, exactly-once retries through the log.
	ModeSingle
	// ModeMulti: unfenced writers; every write with records is appended at
	// the tail, at least once (no dedup).
	ModeMulti
)

func (m WriterMode) String() string {
	switch m {
	case ModeSingle:
		return "single"
	case ModeMulti:
		return "multi"
	}
	return "unset"
}
