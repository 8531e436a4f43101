package registry

import (
	"slices"

	"github.com/parosdb/paros/core/journal"
)

// The coordinator's desk, as decisions: which requests of a batch become
// entries of one registry append, and how the others are answered; how a
// creation is built (its placement and its ids); which journals a deletion
// still has to seal and tombstone. The machine's desk goroutine carries
// these out over the network, and the simulator's coordinators over the
// simulated one, so both run the same decisions. What an entry decides is
// the fold's alone (State.Fold): the desk only avoids writing what is
// decided already, and answers each request with the fold's outcome.

// BatchMax bounds the requests (and so the entries) one registry append
// carries: 256 creations are a few tens of KiB, well inside one write.
const BatchMax = 256

// Pending counts the journals a batch has placed so far on each machine,
// so that the creations of one append spread as if each were folded.
type Pending map[uint64]int

// Request is one control call at the desk.
type Request struct {
	// ID is the request id: a repeat of a decided one is answered with
	// its recorded outcome, never written again.
	ID []byte
	// Allowed, when set, decides whether the caller may make this change,
	// against the desk's fold (the one fold that cannot be behind the
	// change it judges). It is asked first, before a repeated request id
	// is looked up, so a denied caller learns nothing of any outcome.
	Allowed func(*State) bool
	// Build makes the request's entry against the desk's fold and the
	// batch's pending placements, or refuses it (ok false: refusal says
	// why), which writes nothing.
	Build func(st *State, pending Pending) (e Entry, refusal string, ok bool)
}

// VerdictKind is how the desk answers one request of a batch.
type VerdictKind uint8

const (
	// VerdictWrite: the request's entry is in the append; answer it with
	// the outcome the fold gives it (State.Outcome once folded).
	VerdictWrite VerdictKind = iota
	// VerdictDenied: Allowed refused the caller.
	VerdictDenied
	// VerdictDecided: the request id was decided before; Outcome is its
	// recorded outcome.
	VerdictDecided
	// VerdictRefused: Build refused it; Refusal says why.
	VerdictRefused
)

// Verdict is the desk's answer to one request of a batch.
type Verdict struct {
	Kind    VerdictKind
	Outcome Outcome
	Refusal string
}

// Judge judges a batch of requests against the desk's fold st: the
// entries to write, in one append and in the order of their requests, and
// a verdict per request.
//
//	condition (tried in order)         verdict    entry
//	---------------------------------  ---------  -----
//	Allowed refuses the caller         Denied     none
//	the request id is decided          Decided    none
//	Build refuses                      Refused    none
//	otherwise                          Write      Build's
//
// Two requests of one batch with the same id are both written: the fold
// decides the first and reads the second back, so both get one outcome.
func Judge(st *State, batch []Request) ([]Entry, []Verdict) {
	pending := Pending{}
	var entries []Entry
	verdicts := make([]Verdict, len(batch))
	for i, r := range batch {
		if r.Allowed != nil && !r.Allowed(st) {
			verdicts[i] = Verdict{Kind: VerdictDenied}
			continue
		}
		if o, ok := st.Outcome(r.ID); ok {
			verdicts[i] = Verdict{Kind: VerdictDecided, Outcome: o}
			continue
		}
		e, refusal, ok := r.Build(st, pending)
		if !ok {
			verdicts[i] = Verdict{Kind: VerdictRefused, Refusal: refusal}
			continue
		}
		entries = append(entries, e)
		verdicts[i] = Verdict{Kind: VerdictWrite}
	}
	return entries, verdicts
}

// Creation is a journal creation as a caller asks for it. Placement holds
// the quorum system and the writer mode (an unspecified mode is single);
// its Members, when given, are the machines asked for, else Members
// (0: three, or as many as are up) are chosen by PlaceWith.
type Creation struct {
	Request   []byte
	Tenant    string
	Name      string
	Members   int
	Placement Placement
}

// BuildCreation builds a creation's entry: the tenant must exist, the
// members are the ones asked for or the least loaded up machines (counting
// pending), and the journal id is drawn (draw) until no journal of the
// tenant, live or tombstoned, has it. The fold judges the rest (the name,
// the placement asked for). Two creations of one batch that draw the same
// id are both written, and the fold answers the second id_taken: the
// machine's 64-bit draws make that as likely as a collision with the fold.
func BuildCreation(st *State, pending Pending, c Creation, draw func() uint64) (Entry, string, bool) {
	t, ok := st.Tenant(c.Tenant)
	if !ok {
		return Entry{}, OutcomeUnknownTenant, false
	}
	p := c.Placement.Clone()
	if p.WriterMode == WriterUnspecified {
		p.WriterMode = WriterSingle
	}
	if len(p.Members) == 0 {
		want := c.Members
		if want == 0 {
			want = min(3, st.UpMachines())
		}
		var err error
		if p.Members, err = st.PlaceWith(want, pending); err != nil {
			return Entry{}, OutcomeBadPlacement, false
		}
	}
	for _, id := range p.Members {
		pending[id]++
	}
	jid := draw()
	for jid == 0 || st.JournalIDUsed(t.ID, jid) {
		jid = draw()
	}
	return CreateJournal(c.Request, t.Name, c.Name, jid, p), "", true
}

// BuildTenant builds a tenant creation's entry, its id drawn (draw) until
// no tenant, live or tombstoned, has it.
func BuildTenant(st *State, request []byte, name string, draw func() uint64) Entry {
	id := draw()
	for id == 0 || st.TenantIDUsed(id) {
		id = draw()
	}
	return CreateTenant(request, name, id)
}

// NeedsSeal reports whether a deleted journal needs a seal before its
// tombstone: a single-writer journal is sealed first (a SetLeader
// installing journal.Sealed), so that its own log orders the deletion
// after every append it accepted. A multi-writer journal has no fence; it
// is tombstoned at once and stops when its members drop it.
func (j Journal) NeedsSeal() bool { return j.Placement.WriterMode == WriterSingle }

// Tombstones are the entries that finish the deletions of the journals
// ids, in batches of at most per entries (one append each; at least one).
func Tombstones(ids []journal.ID, per int) [][]Entry {
	var out [][]Entry
	for batch := range slices.Chunk(ids, max(per, 1)) {
		es := make([]Entry, len(batch))
		for i, id := range batch {
			es[i] = JournalGone(id)
		}
		out = append(out, es)
	}
	return out
}
