package journal

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ID names a journal: the pair (tenant, journal), both random. A zero half is
// "unset" and every call naming it is refused as an unknown journal.
type ID struct {
	Tenant  uint64
	Journal uint64
}

// IsSet reports whether both halves are set.
func (id ID) IsSet() bool { return id.Tenant != 0 && id.Journal != 0 }

func (id ID) String() string { return fmt.Sprintf("%016x/%016x", id.Tenant, id.Journal) }

// Compare orders journal ids by tenant, then journal: -1, 0 or +1 (the
// order every sorted list of journals uses).
func (id ID) Compare(o ID) int {
	switch {
	case id.Tenant != o.Tenant:
		if id.Tenant < o.Tenant {
			return -1
		}
		return 1
	case id.Journal < o.Journal:
		return -1
	case id.Journal > o.Journal:
		return 1
	}
	return 0
}

// ErrBadID reports text that does not name a journal.
var ErrBadID = errors.New("paros/journal: not a journal id (want TENANT/JOURNAL in hex, both set)")

// ParseID reads the form String writes: TENANT/JOURNAL in hex, both set.
func ParseID(s string) (ID, error) {
	t, j, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return ID{}, fmt.Errorf("%w: %q", ErrBadID, s)
	}
	tv, err1 := strconv.ParseUint(t, 16, 64)
	jv, err2 := strconv.ParseUint(j, 16, 64)
	id := ID{Tenant: tv, Journal: jv}
	if err1 != nil || err2 != nil || !id.IsSet() {
		return ID{}, fmt.Errorf("%w: %q", ErrBadID, s)
	}
	return id, nil
}

// Limits of the data-plane API, so that no one call can make a node hold or
// send an unbounded amount. They are per-node values: a retry elsewhere may
// be judged under another node's limits.
const (
	// WriteRecordsMax bounds the records in one Write.
	WriteRecordsMax = 1024
	// WriteBytesMax bounds the record bytes in one Write.
	WriteBytesMax = 1 << 20
	// ReadRecordsMax bounds one read page (a page always carries at least
	// one record when one is readable).
	ReadRecordsMax = 256
	// ReadBytesMax bounds the record bytes of one read page.
	ReadBytesMax = 64 << 10
	// WaitMsMax clamps a Read's long-poll.
	WaitMsMax = 1000
)

// WriteRequest appends a batch. Single-writer: Leader set and Seq the
// expected first position. Multi-writer: Leader unset; Seq is ignored.
type WriteRequest struct {
	Journal ID
	Leader  LeaderUUID
	Seq     Seq
	Records [][]byte
}

// TruncateRequest drops every position below UpTo (the first the caller
// still needs), fenced by Leader on single-writer journals.
type TruncateRequest struct {
	Journal ID
	Leader  LeaderUUID
	UpTo    Seq
}

// SetLeaderRequest moves the writer fence from Old to New (compare-and-set).
type SetLeaderRequest struct {
	Journal ID
	New     LeaderUUID
	Old     LeaderUUID
}

// ReadRequest reads from FromSeq: at most Limit records (0 = the server's
// page size), long-polling the tail up to WaitMs.
type ReadRequest struct {
	Journal ID
	FromSeq Seq
	Limit   uint32
	WaitMs  uint32
}

// Verdict-less replies are ambiguous: the call may still take effect.
// Reply is the answer to Write, Truncate and SetLeader: the outcome the
// deciding slot folded to, or no verdict (Outcome.Kind == OutcomeInvalid)
// with a reason and perhaps a hint at the consensus leader.
type Reply struct {
	Outcome Outcome
	// NoVerdict explains a reply without an outcome; the call is ambiguous
	// unless NoVerdict is NotLeader, UnknownJournal, TooLarge, Busy or
	// Deleted (nothing was proposed).
	NoVerdict NoVerdict
	// LeaderHint names the node believed to lead consensus (0 = unknown).
	LeaderHint uint64
}

// Ambiguous reports whether the call may or may not have taken effect.
func (r Reply) Ambiguous() bool {
	return r.Outcome.Kind == OutcomeInvalid && r.NoVerdict != NotLeader && r.NoVerdict != UnknownJournal &&
		r.NoVerdict != TooLarge && r.NoVerdict != Busy && r.NoVerdict != Deleted ||
		r.Outcome.Kind == Unheld
}

// NoVerdict is why a reply carries no outcome.
type NoVerdict uint8

const (
	VerdictGiven NoVerdict = iota
	// NotLeader: this node does not lead consensus; nothing was proposed.
	NotLeader
	// UnknownJournal: this process does not serve the journal.
	UnknownJournal
	// TooLarge: the batch breaks WriteRecordsMax or WriteBytesMax; in no slot.
	TooLarge
	// Lost: the proposal's slot was decided for another command or the
	// leader lost office before it applied; the call may still take effect.
	Lost
	// Unavailable: the journal is quarantined or the process is stopping;
	// a call parked before the fault may still take effect (ambiguous).
	Unavailable
	// Busy: the leader's proposal queue is full; nothing was proposed.
	Busy
	// Deleted: the journal was deleted (the cell's registry holds its
	// tombstone); nothing was proposed and nothing ever will be.
	Deleted
)

// ReadReply answers a Read. Served=false means this server could not confirm
// a linearizable read (no quorum answered, or it does not hold the range):
// ask another server. BelowFloor means FromSeq < View.FirstSeq.
type ReadReply struct {
	Served         bool
	UnknownJournal bool
	// Deleted: the journal was deleted; no server will ever serve it.
	Deleted    bool
	BelowFloor bool
	FromSeq    Seq
	Records    [][]byte
	View       View
}
