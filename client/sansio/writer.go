package sansio

import (
	"fmt"

	"github.com/parosdb/paros/core/journal"
)

// WritesInFlightMax bounds the writes one Writer keeps waiting for a
// verdict. Next refuses a write past it with ErrInFlightFull.
const WritesInFlightMax = 256

// claimDrawsMax bounds how many uuids Claim draws looking for a fresh one
// (set, and neither the believed leader nor the writer's last fence).
const claimDrawsMax = 16

// Writer is the owner of one journal. On a single-writer journal (NewWriter)
// it claims the journal with SetLeader(fresh uuid, believed leader), fences
// every write with the uuid it won, places each write at the next position
// and keeps it until a verdict settles it. Several writes may be in flight:
// Next advances the next position by the batch's length.
//
// On a multi-writer journal (NewMultiWriter) it builds unfenced writes that
// the journal appends at its tail. They are at-least-once: an ambiguous
// unfenced write that is resent may land twice.
//
// Ambiguous outcomes, each named by a result kind (see the package doc):
// ResultRetry (ErrAmbiguous) — no answer, a lost proposal, an unavailable server,
// a node that no longer holds the prefix: resend the identical request, the
// log answers Duplicate if the earlier attempt landed; ResultBelowFloor
// (ErrBelowFloor) — the position is below the floor and the log can no
// longer tell; an ambiguous claim — resend the identical SetLeader.
//
// A Writer stops when a verdict names another leader (ResultSuperseded) or shows
// the journal has the other writer mode (ResultWrongMode): every later Next and
// Truncate returns the error until the caller calls Claim again or makes a
// new Writer. A stopped writer still absorbs replies to the writes it had in
// flight, so a write that landed before the stop is still reported ResultWritten.
//
// A Writer is not safe for concurrent use.
type Writer struct {
	id      journal.ID
	mode    journal.WriterMode
	newUUID func() journal.LeaderUUID

	// fence is the uuid this writer last won a claim with (unset: never).
	// Invariant: holding implies fence.IsSet() and believed == fence.
	fence   journal.LeaderUUID
	holding bool
	// believed is the leader in force as last seen; a claim names it as
	// Old (unset: a fresh journal).
	believed journal.LeaderUUID
	// claim is the SetLeader in flight while claiming is true.
	claim    journal.SetLeaderRequest
	claiming bool
	// next is the position the next write takes.
	// Invariant: every pending write ends at or before next.
	next journal.Seq
	// pending holds the writes waiting for a verdict, by position.
	// Invariant: positions strictly increase; len(pending) <= WritesInFlightMax;
	// every pending write is fenced by fence.
	pending []journal.WriteRequest
	// stopErr is ErrSuperseded or ErrWrongMode once the writer stopped.
	stopErr error
}

// NewWriter returns a writer for the single-writer journal id. newUUID
// draws the fresh uuid of each claim; the caller owns the randomness
// (SeededUUIDs gives a deterministic source for tests and the simulator, a
// production caller wraps crypto/rand). The writer holds nothing until a
// claim wins.
func NewWriter(id journal.ID, newUUID func() journal.LeaderUUID) *Writer {
	if newUUID == nil {
		panic("client: NewWriter needs a uuid source")
	}
	return &Writer{id: id, mode: journal.ModeSingle, newUUID: newUUID, next: journal.FirstSeq}
}

// NewMultiWriter returns a writer for the multi-writer journal id. Its
// writes are unfenced and at-least-once: a resent ambiguous write may be
// appended twice. It never claims.
func NewMultiWriter(id journal.ID) *Writer {
	return &Writer{id: id, mode: journal.ModeMulti}
}

// Journal names the journal the writer writes.
func (w *Writer) Journal() journal.ID { return w.id }

// Mode is ModeSingle for NewWriter, ModeMulti for NewMultiWriter.
func (w *Writer) Mode() journal.WriterMode { return w.mode }

// Fence is the uuid the writer holds, or the unset uuid when it holds none.
func (w *Writer) Fence() journal.LeaderUUID {
	if !w.holding {
		return journal.LeaderUUID{}
	}
	return w.fence
}

// Holding reports whether the writer holds the fence and may write.
func (w *Writer) Holding() bool { return w.holding }

// Believed is the leader in force as this writer last saw it.
func (w *Writer) Believed() journal.LeaderUUID { return w.believed }

// NextSeq is the position the next fenced write takes (0 on a multi-writer
// journal, which has no positions to name).
func (w *Writer) NextSeq() journal.Seq { return w.next }

// Stopped is nil while the writer may write, else ErrSuperseded or
// ErrWrongMode.
func (w *Writer) Stopped() error { return w.stopErr }

// Pending returns the fenced writes waiting for a verdict, oldest first. A
// caller that lost its connection resends each one identically. The records
// are shared with the writer: do not modify them.
func (w *Writer) Pending() []journal.WriteRequest {
	return append([]journal.WriteRequest(nil), w.pending...)
}

// Claiming returns the SetLeader in flight, if any: the request to resend
// identically after an ambiguous claim.
func (w *Writer) Claiming() (journal.SetLeaderRequest, bool) { return w.claim, w.claiming }

// Claim builds a SetLeader(fresh uuid, believed leader). It is also how a
// stopped writer resumes: the caller decides to contend again. Claim
// abandons every write in flight (their replies come back ResultStale; Resolve
// tells whether each one landed) and any earlier claim, and the writer holds
// nothing until AbsorbClaim reports ResultWon. After an ambiguous claim, resend
// the identical request (Claiming) instead of calling Claim again.
//
// Claim panics on a multi-writer journal, which refuses every SetLeader.
func (w *Writer) Claim() journal.SetLeaderRequest {
	if w.mode != journal.ModeSingle {
		panic("client: Claim on a multi-writer journal")
	}
	w.claim = journal.SetLeaderRequest{Journal: w.id, New: w.drawUUID(), Old: w.believed}
	w.claiming = true
	w.holding = false
	w.pending = nil
	w.stopErr = nil
	return w.claim
}

// drawUUID draws a uuid that is set and differs from the believed leader and
// the last fence. A claim for the leader in force would be refused naming
// its own New, which AbsorbClaim must be able to read as "an earlier attempt
// of this claim won".
func (w *Writer) drawUUID() journal.LeaderUUID {
	for range claimDrawsMax {
		u := w.newUUID()
		if journal.UsableUUID(u) && u != w.believed && u != w.fence {
			return u
		}
	}
	panic(fmt.Sprintf("client: the uuid source gave no fresh uuid in %d draws", claimDrawsMax))
}

// AbsorbClaim judges the reply r to the claim req. Pass the zero Reply when
// the call got no answer.
//
// ResultWon: the writer holds the fence; its next position is the View's
// NextSeq. A LeaderRefused reply whose View names req.New is also ResultWon
// (Earlier is true): an earlier, ambiguous attempt of this very claim won.
// ResultRefused: another leader holds the journal; the writer believes it and
// holds nothing (Claim again to take over). ResultRetry (ErrAmbiguous): the claim
// may have won; resend the identical req — never a new Claim, which would
// contend with a claim of its own that may have won.
func (w *Writer) AbsorbClaim(req journal.SetLeaderRequest, r journal.Reply) ClaimResult {
	if !w.claiming || req != w.claim {
		return ClaimResult{Kind: ResultStale}
	}
	if r.Ambiguous() {
		return ClaimResult{Kind: ResultRetry}
	}
	out := r.Outcome
	if out.Kind == journal.OutcomeInvalid {
		k := noVerdictKind(r)
		if k == ResultTooLarge {
			k = ResultRetry // a SetLeader carries no batch: an answer that does not fit
		}
		if k == ResultDeleted {
			w.claiming = false
			w.stopErr = ErrJournalDeleted
		}
		return ClaimResult{Kind: k, Hint: r.LeaderHint}
	}
	switch out.Kind {
	case journal.LeaderSet:
		if out.View.Leader != req.New {
			return ClaimResult{Kind: ResultRetry} // a verdict that does not fit the call
		}
		w.win(req.New, out.View)
		return ClaimResult{Kind: ResultWon, Leader: req.New, View: out.View}
	case journal.LeaderRefused:
		if out.View.Leader == req.New {
			w.win(req.New, out.View)
			return ClaimResult{Kind: ResultWon, Leader: req.New, Earlier: true, View: out.View}
		}
		w.claiming = false
		if out.View.Leader == journal.Sealed {
			w.seal()
			return ClaimResult{Kind: ResultDeleted, View: out.View}
		}
		w.believed = out.View.Leader
		return ClaimResult{Kind: ResultRefused, Leader: out.View.Leader, View: out.View}
	case journal.WrongMode:
		w.claiming = false
		w.stopErr = ErrWrongMode
		return ClaimResult{Kind: ResultWrongMode, View: out.View}
	}
	return ClaimResult{Kind: ResultRetry}
}

func (w *Writer) win(u journal.LeaderUUID, v journal.View) {
	if !u.IsSet() || len(w.pending) != 0 {
		panic(fmt.Sprintf("client: a won claim with uuid %s and %d writes in flight", u, len(w.pending)))
	}
	w.fence, w.believed, w.holding = u, u, true
	w.claiming = false
	w.next = max(v.NextSeq, journal.FirstSeq)
	w.assertInvariants()
}

// Next builds the write of records: fenced by the writer's uuid at its next
// position on a single-writer journal, unfenced on a multi-writer one. The
// records are copied, so a resend carries identical bytes whatever the
// caller does with its buffers. A fenced write stays in flight (Pending)
// until AbsorbWrite settles it; the next write is placed right after it.
//
// Errors: ErrSuperseded or ErrWrongMode once the writer stopped,
// ErrNotHolding before a claim won, ErrEmptyBatch, ErrTooLarge past
// journal.WriteRecordsMax or journal.WriteBytesMax, ErrInFlightFull past
// WritesInFlightMax.
func (w *Writer) Next(records [][]byte) (journal.WriteRequest, error) {
	return w.build(records, copyRecords)
}

// nextOwned is Next for records the caller hands over and never touches
// again (a Pipeline copied them when they were appended): no second copy.
func (w *Writer) nextOwned(records [][]byte) (journal.WriteRequest, error) {
	return w.build(records, func(r [][]byte) [][]byte { return r })
}

func (w *Writer) build(records [][]byte, own func([][]byte) [][]byte) (journal.WriteRequest, error) {
	if w.stopErr != nil {
		return journal.WriteRequest{}, w.stopErr
	}
	if w.mode == journal.ModeSingle && !w.holding {
		return journal.WriteRequest{}, ErrNotHolding
	}
	if err := checkBatch(records); err != nil {
		return journal.WriteRequest{}, err
	}
	if w.mode == journal.ModeMulti {
		return journal.WriteRequest{Journal: w.id, Records: own(records)}, nil
	}
	if len(w.pending) >= WritesInFlightMax {
		return journal.WriteRequest{}, ErrInFlightFull
	}
	req := journal.WriteRequest{Journal: w.id, Leader: w.fence, Seq: w.next, Records: own(records)}
	w.next += journal.Seq(len(records))
	w.pending = append(w.pending, req)
	w.assertInvariants()
	return req, nil
}

// assertInvariants checks the field invariants; a failure is a bug here.
func (w *Writer) assertInvariants() {
	if w.holding && (!w.fence.IsSet() || w.believed != w.fence) {
		panic(fmt.Sprintf("client: holding with fence %s, believed %s", w.fence, w.believed))
	}
	if len(w.pending) > WritesInFlightMax {
		panic(fmt.Sprintf("client: %d writes in flight", len(w.pending)))
	}
	prev := journal.Seq(0)
	for _, p := range w.pending {
		end := p.Seq + journal.Seq(len(p.Records))
		if p.Seq <= prev || end > w.next || p.Leader != w.fence {
			panic(fmt.Sprintf("client: write in flight at %d (fence %s) out of place: next %d, fence %s",
				p.Seq, p.Leader, w.next, w.fence))
		}
		prev = p.Seq
	}
}

func checkBatch(records [][]byte) error {
	if len(records) == 0 {
		return ErrEmptyBatch
	}
	n := 0
	for _, r := range records {
		n += len(r)
	}
	if len(records) > journal.WriteRecordsMax || n > journal.WriteBytesMax {
		return fmt.Errorf("%w: %d records, %d bytes (limits %d, %d)", ErrTooLarge,
			len(records), n, journal.WriteRecordsMax, journal.WriteBytesMax)
	}
	return nil
}

// copyRecords copies a batch into one buffer.
func copyRecords(records [][]byte) [][]byte {
	n := 0
	for _, r := range records {
		n += len(r)
	}
	buf := make([]byte, 0, n)
	out := make([][]byte, len(records))
	for i, r := range records {
		start := len(buf)
		buf = append(buf, r...)
		out[i] = buf[start:len(buf):len(buf)]
	}
	return out
}

// AbsorbWrite judges the reply r to the write req. Pass the zero Reply
// when the call got no answer. See WriteResult for every kind; the
// ambiguous ones are ResultRetry (ErrAmbiguous: resend the identical req, at the
// same position, even to another server) and ResultBelowFloor (ErrBelowFloor: the
// position is below the floor, so whether it landed cannot be read back).
//
// A Refused verdict naming another leader is ResultSuperseded and stops the
// writer. A Refused verdict under the writer's own fence at a position the
// journal has already filled with other bytes means another client holds
// the same uuid (the journal keeps no uuid history): it is ResultSuperseded too.
// A Refused verdict at or past the journal's tail means an earlier write of
// this writer has not landed yet: the write stays in flight; resend it
// identically once the earlier ones settle.
func (w *Writer) AbsorbWrite(req journal.WriteRequest, r journal.Reply) WriteResult {
	if w.mode == journal.ModeMulti {
		return w.absorbUnfenced(req, r)
	}
	i := w.findPending(req)
	if i < 0 {
		return WriteResult{Kind: ResultStale}
	}
	if r.Ambiguous() {
		return WriteResult{Kind: ResultRetry}
	}
	out := r.Outcome
	if out.Kind == journal.OutcomeInvalid {
		return WriteResult{Kind: noVerdictKind(r), Hint: r.LeaderHint}
	}
	n := uint64(len(req.Records))
	switch out.Kind {
	case journal.Accepted, journal.Duplicate:
		if out.Seq != req.Seq || out.Count != n {
			return WriteResult{Kind: ResultRetry} // a verdict that does not fit the call
		}
		w.settle(i)
		k := ResultWritten
		if out.Kind == journal.Duplicate {
			k = ResultDuplicate
		}
		return WriteResult{Kind: k, Seq: out.Seq, Count: out.Count, View: out.View}
	case journal.Refused:
		if out.View.Leader == journal.Sealed {
			w.settle(i) // nothing lands on a sealed journal
			w.seal()
			return WriteResult{Kind: ResultDeleted, View: out.View}
		}
		if out.View.Leader != req.Leader {
			w.supersede(out.View.Leader)
			return WriteResult{Kind: ResultSuperseded, Leader: out.View.Leader, View: out.View}
		}
		if req.Seq < out.View.NextSeq {
			w.settle(i) // other bytes hold the position: it can never land
			w.supersede(out.View.Leader)
			return WriteResult{Kind: ResultSuperseded, Leader: out.View.Leader, View: out.View}
		}
		return WriteResult{Kind: ResultRefused, View: out.View}
	case journal.BelowFloor:
		w.settle(i)
		return WriteResult{Kind: ResultBelowFloor, View: out.View}
	case journal.WrongMode:
		w.stopErr = ErrWrongMode
		w.holding = false
		return WriteResult{Kind: ResultWrongMode, View: out.View}
	}
	return WriteResult{Kind: ResultRetry}
}

// absorbUnfenced judges a multi-writer write: no positions to check, no
// duplicates to detect.
func (w *Writer) absorbUnfenced(req journal.WriteRequest, r journal.Reply) WriteResult {
	if r.Ambiguous() {
		return WriteResult{Kind: ResultRetry}
	}
	out := r.Outcome
	switch out.Kind {
	case journal.OutcomeInvalid:
		return WriteResult{Kind: noVerdictKind(r), Hint: r.LeaderHint}
	case journal.Accepted:
		if out.Count != uint64(len(req.Records)) {
			return WriteResult{Kind: ResultRetry}
		}
		return WriteResult{Kind: ResultWritten, Seq: out.Seq, Count: out.Count, View: out.View}
	case journal.WrongMode:
		w.stopErr = ErrWrongMode
		return WriteResult{Kind: ResultWrongMode, View: out.View}
	}
	return WriteResult{Kind: ResultRetry}
}

// findPending returns the index of the in-flight write identical to req,
// or -1.
func (w *Writer) findPending(req journal.WriteRequest) int {
	want := journal.Entry{Leader: req.Leader, Seq: req.Seq, Records: req.Records}
	for i, p := range w.pending {
		if req.Journal == p.Journal && want.Equal(journal.Entry{Leader: p.Leader, Seq: p.Seq, Records: p.Records}) {
			return i
		}
	}
	return -1
}

// settle drops the in-flight write at index i.
func (w *Writer) settle(i int) {
	w.pending = append(w.pending[:i], w.pending[i+1:]...)
	w.assertInvariants()
}

// seal stops the writer for good: the journal's fence is the seal
// (journal.Sealed), installed by its deletion, and nothing moves it.
func (w *Writer) seal() {
	w.believed = journal.Sealed
	w.holding = false
	w.stopErr = ErrJournalDeleted
}

func (w *Writer) supersede(leader journal.LeaderUUID) {
	w.believed = leader
	w.holding = false
	w.stopErr = ErrSuperseded
}

// Truncate builds a Truncate(upTo): every position below upTo is dropped
// (the journal clamps upTo to its next_seq). On a single-writer journal it
// is fenced by the writer's uuid; the checkpoint pattern calls it with the
// position of a run whose End is written. Errors as for Next.
func (w *Writer) Truncate(upTo journal.Seq) (journal.TruncateRequest, error) {
	if w.stopErr != nil {
		return journal.TruncateRequest{}, w.stopErr
	}
	if w.mode == journal.ModeMulti {
		return journal.TruncateRequest{Journal: w.id, UpTo: upTo}, nil
	}
	if !w.holding {
		return journal.TruncateRequest{}, ErrNotHolding
	}
	return journal.TruncateRequest{Journal: w.id, Leader: w.fence, UpTo: upTo}, nil
}

// AbsorbTruncate judges the reply r to the truncation req. Pass the zero
// Reply when the call got no answer: it is ResultRetry (ErrAmbiguous), and since
// a truncation only ever raises the floor, resending it is always safe. A
// refusal naming another leader is ResultSuperseded and stops the writer.
func (w *Writer) AbsorbTruncate(req journal.TruncateRequest, r journal.Reply) TruncateResult {
	if req.Journal != w.id || req.Leader != w.fence || (w.mode == journal.ModeSingle && !w.fence.IsSet()) {
		return TruncateResult{Kind: ResultStale}
	}
	if r.Ambiguous() {
		return TruncateResult{Kind: ResultRetry}
	}
	out := r.Outcome
	if out.Kind == journal.OutcomeInvalid {
		k := noVerdictKind(r)
		if k == ResultTooLarge {
			k = ResultRetry
		}
		return TruncateResult{Kind: k, Hint: r.LeaderHint}
	}
	switch out.Kind {
	case journal.Trimmed:
		return TruncateResult{Kind: ResultTrimmed, View: out.View}
	case journal.TruncateRefused:
		if out.View.Leader == journal.Sealed {
			w.seal()
			return TruncateResult{Kind: ResultDeleted, View: out.View}
		}
		if out.View.Leader != req.Leader {
			w.supersede(out.View.Leader)
			return TruncateResult{Kind: ResultSuperseded, Leader: out.View.Leader, View: out.View}
		}
	case journal.WrongMode:
		w.stopErr = ErrWrongMode
		w.holding = false
		return TruncateResult{Kind: ResultWrongMode, View: out.View}
	}
	return TruncateResult{Kind: ResultRetry}
}
