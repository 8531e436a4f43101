package paxos

import (
	"fmt"

	"github.com/parosdb/paros/core/journal"
)

// record is one accepted value. ok=false means no record at the slot.
type record struct {
	ballot Ballot
	cmd    journal.Command
	ok     bool
	// batch is the Ready that carries the record's write (0: read at boot,
	// durable already). It may leave memory once that batch is durable.
	batch uint64
}

// Acceptor is the durable voting role (Paxos Made Simple §2.2): it promises
// ballots and accepts values, and it emits every op that needs a sync.
// Persist-before-send is an acceptor property: nothing it decides may be
// told to anyone before the op that records it is durable.
type Acceptor struct {
	// Invariant: promised never decreases (within a boot and across boots).
	promised Ballot
	// Invariant: floor >= 1; records below floor are chosen and dropped.
	floor Slot
	// log holds the hot window [log.base, last]. Invariant: floor <=
	// log.base; a slot in [floor, log.base) was evicted and is on disk,
	// holding its chosen value (cold.go).
	log slotLog[record]
	// hotBytes is the record bytes held in log.
	hotBytes int
	cold     *coldReader
	// batch is the number of the Ready the next emitted op rides in.
	batch uint64
	// Invariant: last == 0, or a record is held at last (in log, or on
	// disk below log.base); no record above last.
	last Slot
	// voteWatermark is the highest slot this acceptor ever voted in. It is
	// raised on a vote, never on a learned chosen value, and answers PreRead.
	voteWatermark Slot
	// faulty holds records whose value was lost and identity survived.
	faulty map[Slot]Ballot
	out    *[]WriteOp
	// votes lists the records among out that are votes (Ready.Votes): a
	// learned chosen value is written as the same OpAccept, so only the
	// acceptor can say which of its records it voted for.
	votes *[]SlotCommand
	// learner: the records are a replica node's chosen log, never votes;
	// they persist as OpLearned (which no audit counts as a vote).
	learner bool
	// contract receives a peer's contract violation (contract.go).
	contract *contract
}

func newAcceptor(st Storage, out *[]WriteOp, votes *[]SlotCommand, cold *coldReader, coldThrough Slot) (*Acceptor, error) {
	hs := st.InitialState()
	a := &Acceptor{promised: hs.Promised, floor: max(st.FirstSlot(), 1), out: out, votes: votes, cold: cold, batch: 1, contract: &contract{}}
	// The boot's cold prefix [floor, coldThrough] stays on disk: it starts
	// out evicted (cold.go), its records chosen values at or below the
	// durable chosen index.
	a.log = newSlotLog[record](max(a.floor, coldThrough+1))
	if coldThrough >= a.floor {
		a.last = coldThrough
	}
	for s := a.log.base; s <= st.LastSlot(); s++ {
		if b, c, ok := st.Accepted(s); ok {
			if !b.InRange() {
				return nil, fmt.Errorf("%w: record at slot %d with ballot %s", ErrStorage, s, b)
			}
			*a.log.ensure(s) = record{ballot: b, cmd: c, ok: true}
			a.hotBytes += commandBytes(c)
			a.last = s
		}
	}
	for _, f := range st.FaultyEntries() {
		if f.Slot >= a.floor {
			a.markFaulty(f.Slot, f.Ballot)
			a.last = max(a.last, f.Slot)
		}
	}
	// After a restart the watermark is the highest record held: learned
	// values count too, which only makes reads wait longer (never staler).
	a.voteWatermark = max(a.last, a.floor-1)
	return a, nil
}

// Promised is the highest ballot promised.
func (a *Acceptor) Promised() Ballot { return a.promised }

// Floor is the first retained slot.
func (a *Acceptor) Floor() Slot { return a.floor }

// LastSlot is the highest slot holding a record (0 if none).
func (a *Acceptor) LastSlot() Slot { return a.last }

// VoteWatermark is the highest slot this acceptor voted in.
func (a *Acceptor) VoteWatermark() Slot { return a.voteWatermark }

// Record returns the record at slot, if held: from memory in the hot
// window, read back from the ColdLog below it. A failed cold read reports
// false and raises the node's StorageFault.
func (a *Acceptor) Record(s Slot) (Ballot, journal.Command, bool) {
	if _, damaged := a.faulty[s]; damaged {
		return Ballot{}, journal.Command{}, false
	}
	if a.isCold(s) {
		sc, ok := a.cold.one(ColdLookup, s)
		return sc.Ballot, sc.Command, ok
	}
	r := a.log.at(s)
	if r == nil || !r.ok {
		return Ballot{}, journal.Command{}, false
	}
	return r.ballot, r.cmd, true
}

// isCold reports whether s was evicted from the hot window.
func (a *Acceptor) isCold(s Slot) bool { return s >= a.floor && s < a.log.base }

// evictBelow drops the hot records below base (cold.go's rules are the
// caller's to check).
func (a *Acceptor) evictBelow(base Slot) {
	for s := a.log.base; s < base && s < a.log.end; s++ { // only what is held: a trim point may be far ahead
		if r := a.log.at(s); r != nil && r.ok {
			a.hotBytes -= commandBytes(r.cmd)
		}
	}
	a.log.dropBelow(base)
	if a.hotBytes < 0 {
		panic(fmt.Sprintf("paxos: acceptor hot bytes %d < 0", a.hotBytes))
	}
}

// Faulty reports whether the record at s lost its value.
func (a *Acceptor) Faulty(s Slot) (Ballot, bool) {
	b, ok := a.faulty[s]
	return b, ok
}

func (a *Acceptor) emit(op WriteOp) { *a.out = append(*a.out, op) }

// vote emits the record of a vote cast at (s, b) for cmd, and names it a
// vote in the batch (Ready.Votes).
func (a *Acceptor) vote(s Slot, b Ballot, cmd journal.Command) {
	a.emit(WriteOp{Kind: OpAccept, Slot: s, Ballot: b, Command: cmd})
	*a.votes = append(*a.votes, SlotCommand{Slot: s, Ballot: b, Command: cmd})
}

// raisePromise promises b if it is above the promise. It reports whether b
// is at or above the promise (the admission test for Prepare and Accept).
func (a *Acceptor) raisePromise(b Ballot) bool {
	admitted, raised := admit(&a.promised, b)
	if raised {
		a.emit(WriteOp{Kind: OpSetPromise, Ballot: b})
	}
	return admitted
}

// admit is the acceptor's admission rule (Paxos Made Simple §2.2): a
// Prepare or an Accept at b is admitted iff b is at or above the promise,
// and admitting it raises the promise to b. It reports whether b was
// admitted and whether the promise rose (a durable change). The journal's
// Acceptor and the decree's (decree.go) both promise through it.
//
// Invariant: *promised never decreases.
func admit(promised *Ballot, b Ballot) (admitted, raised bool) {
	if b.Less(*promised) {
		return false, false
	}
	if promised.Less(b) {
		*promised = b
		return true, true
	}
	return true, false
}

// promiseResult is an acceptor's answer to a Prepare.
type promiseResult struct {
	granted bool
	// On a grant: one page of records from the requested slot, the faulty
	// records in that page's range, and the next page's first slot (0 =
	// terminal).
	entries []SlotCommand
	faulty  []SlotBallot
	next    Slot
	// unanswerable: granted, but a cold read failed, so no page can be
	// told (the node's StorageFault is raised; send nothing).
	unanswerable bool
}

// Prepare answers Phase 1 for ballot b over the suffix from `from`. It grants
// iff b >= promised (an equal ballot re-asks for a page and changes
// nothing) and from >= floor: a Prepare below the floor is refused (Nack),
// never answered with an under-reporting Promise, because the dropped slots
// would read as "nothing accepted".
func (a *Acceptor) Prepare(b Ballot, from Slot, pageMax int) promiseResult {
	if b.IsZero() || from < a.floor || !a.raisePromise(b) {
		return promiseResult{}
	}
	res := promiseResult{granted: true}
	s := max(from, a.floor)
	bytes := 0
	// The cold part of the suffix first: evicted records are chosen values,
	// and every one must be reported (an omitted record reads as "nothing
	// accepted", which would let the candidate Noop a chosen slot).
	for s < a.log.base && s <= a.last {
		if n := len(res.entries); n >= pageMax || n > 0 && bytes >= MessageBytesMax {
			res.next = s
			return res
		}
		to := min(a.log.base, s+Slot(min(coldChunkSlots, pageMax-len(res.entries))))
		recs, ok := a.cold.read(ColdPromise, s, to)
		if !ok {
			return promiseResult{unanswerable: true}
		}
		for _, r := range recs {
			if n := len(res.entries); n >= pageMax || n > 0 && bytes >= MessageBytesMax {
				res.next = r.Slot
				return res
			}
			bytes += commandBytes(r.Command)
			res.entries = append(res.entries, r)
		}
		s = to
	}
	for ; s <= a.last; s++ {
		if n := len(res.entries) + len(res.faulty); n >= pageMax || n > 0 && bytes >= MessageBytesMax {
			res.next = s
			break
		}
		if r := a.log.at(s); r != nil && r.ok {
			bytes += commandBytes(r.cmd)
			res.entries = append(res.entries, SlotCommand{Slot: s, Ballot: r.ballot, Command: r.cmd})
		} else if fb, ok := a.faulty[s]; ok {
			res.faulty = append(res.faulty, SlotBallot{Slot: s, Ballot: fb})
		}
	}
	return res
}

// SlotsAheadMax bounds how far above its floor an acceptor keeps a record
// (every queue and loop has a bound): an Accept or a learned value further
// ahead is ignored, so a forged or corrupt slot number cannot make the log
// grow without bound. An honest acceptor that far behind catches up first.
const SlotsAheadMax = 1 << 24

// Admit votes for cmd at (s, b) iff b >= promised and s >= floor; it raises
// the promise to b and the vote watermark to s. It reports whether it voted.
func (a *Acceptor) Admit(b Ballot, s Slot, cmd journal.Command) bool {
	if b.IsZero() || s < a.floor || s == 0 || s-a.floor >= SlotsAheadMax || !a.raisePromise(b) {
		return false
	}
	if a.isCold(s) {
		return a.admitCold(b, s, cmd)
	}
	r := a.log.ensure(s)
	if r.ok && r.ballot == b {
		if !r.cmd.Equal(cmd) {
			a.contract.raise("acceptor asked to accept two values at slot %d ballot %s: %s then %s", s, b, r.cmd, cmd)
			return false
		}
		// A re-sent Accept: the vote is already on record.
		a.voteWatermark = max(a.voteWatermark, s)
		return true
	}
	if r.ok && b.Less(r.ballot) {
		// A chosen value learned at a higher ballot sits here (learning does
		// not promise). A proposer at b is stale; voting would need a
		// durable record at b, which would overwrite the chosen one. No vote.
		return false
	}
	a.put(r, b, cmd)
	delete(a.faulty, s)
	a.last = max(a.last, s)
	a.voteWatermark = max(a.voteWatermark, s)
	a.vote(s, b, cmd)
	return true
}

// put overwrites a hot record, keeping hotBytes.
func (a *Acceptor) put(r *record, b Ballot, cmd journal.Command) {
	if r.ok {
		a.hotBytes -= commandBytes(r.cmd)
	}
	*r = record{ballot: b, cmd: cmd, ok: true, batch: a.batch}
	a.hotBytes += commandBytes(cmd)
}

// admitCold is Admit for an evicted slot: the same rules against the
// record read back from disk. The slot is chosen and its record holds the
// chosen value, so a proposer at a higher ballot carries that value (P2b);
// the vote is written to disk and not brought back into memory. A failed
// read is no vote.
func (a *Acceptor) admitCold(b Ballot, s Slot, cmd journal.Command) bool {
	old, ok := a.cold.one(ColdVote, s)
	if !ok {
		return false
	}
	switch {
	case old.Ballot == b:
		if !old.Command.Equal(cmd) {
			a.contract.raise("acceptor asked to accept two values at slot %d ballot %s: %s then %s", s, b, old.Command, cmd)
			return false
		}
	case b.Less(old.Ballot):
		return false
	default:
		if !old.Command.Equal(cmd) {
			a.contract.raise("slot %d chosen as %s, proposed as %s at higher ballot %s", s, old.Command, cmd, b)
			return false
		}
		a.vote(s, b, cmd)
	}
	a.voteWatermark = max(a.voteWatermark, s)
	return true
}

// Learn records a chosen value learned from a peer (catch-up). It upserts:
// a stale lower-ballot accept is overwritten so a restart never reports it;
// a record at or above the chosen ballot must already hold the chosen value
// (P2b: every proposal above a chosen ballot carries the chosen value). It
// is not a vote: the watermark does not move. Over a damaged record it is
// the repair of a chosen slot from a peer's copy (CTRL), and it reports so.
func (a *Acceptor) Learn(s Slot, b Ballot, cmd journal.Command) (repaired bool) {
	if s < a.floor || s-a.floor >= SlotsAheadMax {
		return false
	}
	if a.isCold(s) {
		// An evicted record already holds the chosen value (cold.go),
		// unless a scrub found it damaged.
		return a.repairChosen(s, b, cmd)
	}
	r := a.log.ensure(s)
	if r.ok && !r.ballot.Less(b) {
		if !r.cmd.Equal(cmd) {
			a.contract.raise("slot %d chosen as %s at %s but accepted %s at higher ballot %s", s, cmd, b, r.cmd, r.ballot)
		}
		return false
	}
	_, repaired = a.faulty[s]
	a.put(r, b, cmd)
	delete(a.faulty, s)
	a.last = max(a.last, s)
	a.emit(WriteOp{Kind: a.chosenKind(), Slot: s, Ballot: b, Command: cmd})
	return repaired
}

// chosenKind is the op that records a chosen value learned from a peer: an
// upserted accept on an acceptor (a learned chosen value overwrites a stale
// lower-ballot vote), a Learned record on a replica node.
func (a *Acceptor) chosenKind() OpKind {
	if a.learner {
		return OpLearned
	}
	return OpAccept
}

// truncate drops every record below floor. The caller emits the durable
// OpTruncate (it carries the sealed journal state the acceptor never sees).
func (a *Acceptor) truncate(floor Slot) {
	if floor <= a.floor {
		return
	}
	a.floor = floor
	if floor > a.log.base {
		a.evictBelow(floor)
	}
	for s := range a.faulty {
		if s < floor {
			delete(a.faulty, s)
		}
	}
	if a.last < floor {
		a.last = 0
	}
	a.voteWatermark = max(a.voteWatermark, floor-1)
}
