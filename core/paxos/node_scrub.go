package paxos

import (
	"fmt"
	"math"
	"slices"

	"github.com/parosdb/paros/core/journal"
)

// scrubber is one node's share of background scrubbing (scrub.go). As the
// journal's leader it paces passes over the retained chosen slots and
// compares the copies its configuration's acceptors read from their disks;
// as an acceptor it reads its own page and repairs what it can before it
// answers. Nothing here is durable except the cursor (OpScrubCursor), which
// every acceptor records as pages are asked, so a new leader resumes the
// pass about where the last one stopped.
type scrubber struct {
	// log is the port; nil turns scrubbing off (hand-built storage).
	log ScrubLog
	// cursor is the next page's first slot in the pass under way (0: no
	// pass under way).
	cursor Slot
	// sincePass counts ticks since the pass under way began (or, between
	// passes, since the last one began). started: this node began a pass;
	// paced: this node paces the pass under way (else its cursor came from
	// elsewhere, and its completion is not counted as a pass).
	sincePass int
	started   bool
	paced     bool
	// idle counts ticks since the last page was asked.
	idle int
	// end is the last slot of the pass under way, fixed when the pass
	// starts or resumes here: under steady writes the chosen index runs
	// ahead of the cursor and a pass bounded by it would never end.
	end  Slot
	page *scrubPage
	// mismatches found (bounded): copies that disagree at one ballot.
	mismatches []ScrubMismatch
}

// scrubPage is the page the leader is waiting on.
type scrubPage struct {
	ballot   Ballot
	from, to Slot
	answers  map[NodeID][]ScrubEntry
	elapsed  int
}

// ScrubMismatch is two copies of one slot under one ballot with different
// value hashes. Paxos accepts one value per slot per ballot, so it is a
// bug, never rot: the simulator fails the seed, production counts and logs
// it loudly.
type ScrubMismatch struct {
	Slot   Slot
	Ballot Ballot
	// Hashes names each answerer's hash.
	Hashes map[NodeID]uint32
}

func (m ScrubMismatch) String() string {
	return fmt.Sprintf("slot %d ballot %s hashes %v", m.Slot, m.Ballot, m.Hashes)
}

// scrubMismatchesMax bounds the mismatches a node remembers.
const scrubMismatchesMax = 16

// ScrubMismatches returns the mismatches this node's scrubber found.
func (n *Node) ScrubMismatches() []ScrubMismatch { return slices.Clone(n.scrub.mismatches) }

// ScrubCursor is the next slot the scrubber will ask about (0: no pass
// under way).
func (n *Node) ScrubCursor() Slot { return n.scrub.cursor }

// tickScrub paces the leader's scrubber: one page at a time, a page at
// least every ScrubIntervalTicks apart and spread over the full-pass
// bound, a pass at most once per bound.
func (n *Node) tickScrub(l *leading) { n.scrubAdvance(l, 1, false) }

// scrubAdvance moves the leader's scrubber on by ticks and reports whether
// a page left. granted: the host grants this page from its machine-wide
// budget (a quiet leader, ScrubTurn), in place of the journal's own rate
// limit; the rest rule between passes holds either way.
func (n *Node) scrubAdvance(l *leading, ticks int, granted bool) bool {
	sc := &n.scrub
	if sc.log == nil || l.ctrl != nil {
		return false
	}
	ticks = max(ticks, 0)
	sc.sincePass = satAdd(sc.sincePass, ticks)
	sc.idle = satAdd(sc.idle, ticks)
	if p := sc.page; p != nil {
		if p.ballot != l.ballot {
			sc.page = nil
		} else {
			// A member that does not answer within an election timeout is
			// left out of this page's comparison (it is down or cut off).
			if p.elapsed = satAdd(p.elapsed, ticks); p.elapsed >= n.electionTimeout {
				n.closeScrubPage(l)
			}
			return false
		}
	}
	chosen := n.lrn.chosenIndex
	floor := n.acc.Floor()
	if sc.cursor != 0 && sc.end != 0 && sc.cursor > sc.end {
		// The pass reached its end: it is complete (when this
		// node paced it; a cursor handed in from elsewhere just ends).
		if sc.paced {
			n.counters.ScrubPasses++
			n.counters.ScrubLastPassTicks = uint64(sc.sincePass)
			if sc.sincePass > n.opts.ScrubPassTicks {
				n.counters.ScrubOverruns++
			}
		}
		sc.cursor = 0
	}
	if sc.cursor == 0 {
		if sc.started && sc.sincePass < n.opts.ScrubPassTicks {
			return false // rest: a pass starts at most once per bound
		}
		if chosen < floor {
			return false // nothing chosen and retained yet
		}
		sc.cursor, sc.sincePass, sc.started, sc.paced, sc.end = floor, 0, true, true, chosen
		sc.idle = math.MaxInt // the first page of a pass goes at once
	}
	if !sc.paced {
		// Resuming a pass another leader (or an earlier boot) began.
		n.counters.ScrubResumed++
		sc.paced, sc.started, sc.end = true, true, chosen
	}
	sc.cursor = max(sc.cursor, floor)
	chosen = min(chosen, sc.end)
	if sc.cursor > chosen {
		// A trim point ahead of the chosen index (nothing retained yet), or
		// past the pass's end (the pass completes at the next tick).
		return false
	}
	// The pages left are spread over what is left of the bound, never
	// faster than the rate limit (which wins when they conflict: the pass
	// then overruns, and says so when it completes).
	left := int((chosen-sc.cursor)/Slot(n.opts.ScrubPageSlots)) + 1
	interval := max(n.opts.ScrubIntervalTicks, (n.opts.ScrubPassTicks-sc.sincePass)/left)
	if !granted && sc.idle < interval {
		return false
	}
	from := sc.cursor
	to := min(from+Slot(n.opts.ScrubPageSlots), chosen+1)
	sc.idle = 0
	sc.page = &scrubPage{ballot: l.ballot, from: from, to: to, answers: map[NodeID][]ScrubEntry{}}
	for _, id := range n.sys.Members() {
		if id != n.cfg.ID {
			n.send(Message{Type: MsgScrub, To: id, Ballot: l.ballot, Slot: from, Next: to})
		}
	}
	if n.sys.Contains(n.cfg.ID) {
		own, ok := n.scrubRead(from, to, 0)
		if !ok {
			sc.page = nil
			return false
		}
		sc.page.answers[n.cfg.ID] = own
	}
	n.maybeCloseScrubPage(l)
	return true
}

// satAdd is a + b, saturating at math.MaxInt.
func satAdd(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// ScrubTurn grants a quiet leader one scrub page from its host's
// machine-wide budget: a quiet journal is not ticked, so its scrubber
// moves only on these turns, ticks being the ticks since its last tick or
// turn. It reports whether a page left; the journal is then not quiescent
// until the page closes (its answers, or an election timeout of ticks).
func (n *Node) ScrubTurn(ticks int) bool {
	l, ok := n.phase.(*leading)
	if !ok || !l.quiet || n.scrub.page != nil || n.contract.fault != nil {
		return false
	}
	sent := n.scrubAdvance(l, ticks, true)
	n.afterEvent()
	n.assertInvariants()
	return sent
}

// handleScrub answers a leader's page with this acceptor's own copy,
// repaired where it can be.
func (n *Node) handleScrub(m Message) {
	if n.scrub.log == nil || m.Ballot.IsZero() || m.Ballot.Less(n.acc.Promised()) {
		return
	}
	entries, ok := n.scrubRead(m.Slot, m.Next, m.From)
	if !ok {
		return
	}
	n.counters.ScrubAnswered++
	// The leader's progress, for whichever node leads next.
	n.scrub.cursor, n.scrub.paced, n.scrub.end = m.Slot, false, 0
	n.cur.writes = append(n.cur.writes, WriteOp{Kind: OpScrubCursor, Slot: m.Slot})
	n.send(Message{Type: MsgScrubReply, To: m.From, Ballot: m.Ballot, Slot: m.Slot, Next: m.Next, Scrub: entries})
}

// handleScrubReply folds one acceptor's page.
func (n *Node) handleScrubReply(m Message) {
	l, ok := n.phase.(*leading)
	p := n.scrub.page
	if !ok || p == nil || m.Ballot != l.ballot || m.Slot != p.from || m.Next != p.to || !n.sys.Contains(m.From) {
		return
	}
	p.answers[m.From] = m.Scrub
	n.maybeCloseScrubPage(l)
}

func (n *Node) maybeCloseScrubPage(l *leading) {
	if p := n.scrub.page; p != nil && len(p.answers) >= len(n.sys.Members()) {
		n.closeScrubPage(l)
	}
}

// closeScrubPage compares the copies of a page and moves the cursor on.
func (n *Node) closeScrubPage(l *leading) {
	sc := &n.scrub
	p := sc.page
	sc.page = nil
	n.counters.ScrubPages++
	if len(p.answers) < len(n.sys.Members()) {
		n.counters.ScrubPartial++
	}
	type key struct {
		s Slot
		b Ballot
	}
	hashes := map[key]map[NodeID]uint32{}
	for id, es := range p.answers {
		for _, e := range es {
			if e.Damaged {
				continue
			}
			k := key{e.Slot, e.Ballot}
			if hashes[k] == nil {
				hashes[k] = map[NodeID]uint32{}
			}
			hashes[k][id] = e.Hash
		}
	}
	keys := make([]key, 0, len(hashes))
	for k := range hashes {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y key) int {
		if x.s != y.s {
			return int(x.s - y.s)
		}
		return x.b.Compare(y.b)
	})
	for _, k := range keys {
		var first uint32
		seen := false
		for _, h := range hashes[k] {
			if !seen {
				first, seen = h, true
			} else if h != first {
				n.counters.ScrubMismatches++
				if len(sc.mismatches) < scrubMismatchesMax {
					sc.mismatches = append(sc.mismatches, ScrubMismatch{Slot: k.s, Ballot: k.b, Hashes: hashes[k]})
				}
				break
			}
		}
	}
	sc.cursor = p.to
	n.cur.writes = append(n.cur.writes, WriteOp{Kind: OpScrubCursor, Slot: p.to})
}

// scrubRead reads [from, to) back from this node's disk and repairs each
// damaged record it can (docs/design/ctrl.md, "which path repairs which slot"):
//
//   - the acceptor holds the record's value in memory (the hot window) at
//     the damaged record's ballot: it writes that very record again
//     (OpRewrite). Safe: the slot, ballot and value are the ones it voted.
//   - it holds no copy (the slot was evicted, so it is chosen and
//     applied): the record is marked faulty — never "nothing accepted" —
//     and, the slot being chosen, a peer's copy of the chosen value is
//     asked for (catch-up) and written over it when it arrives. Safe: the
//     peer's copy is the chosen value at a ballot it was accepted at, and
//     every proposal at or above the chosen ballot carries that value.
//   - a newer record is in memory at another ballot: its write is in the
//     pipeline and replaces the damaged one; nothing to do.
//
// The answer reports what the disk held when read (a repaired record is
// still reported damaged). The reply waits for the repair to be durable
// like every message of its batch. peer is the scrubbing leader (0: this
// node leads), whom a missing chosen value is asked of.
func (n *Node) scrubRead(from, to Slot, peer NodeID) ([]ScrubEntry, bool) {
	if from == 0 || to <= from || to-from > ScrubPageSlotsMax {
		return nil, false
	}
	recs, err := n.scrub.log.Scrub(from, int(to-from))
	if err != nil {
		if n.cold.fault == nil {
			n.cold.fault = fmt.Errorf("%w: scrub of slots [%d, %d): %w", ErrColdRead, from, to, err)
		}
		return nil, false
	}
	out := make([]ScrubEntry, 0, len(recs))
	for _, e := range recs {
		if e.Slot < from || e.Slot >= to || e.Slot < n.acc.Floor() {
			continue
		}
		out = append(out, e)
		if e.Damaged {
			n.repairDamaged(e, peer)
		}
	}
	return out, true
}

// repairDamaged starts the repair of one damaged record found on disk.
func (n *Node) repairDamaged(e ScrubEntry, peer NodeID) {
	a := n.acc
	if !a.isCold(e.Slot) {
		r := a.log.at(e.Slot)
		switch {
		case r != nil && r.ok && r.ballot == e.Ballot:
			n.counters.RepairedFromMemory++
			a.emit(WriteOp{Kind: OpRewrite, Slot: e.Slot, Ballot: e.Ballot, Command: r.cmd})
			return
		case r != nil && r.ok:
			return // a newer record's write is in the pipeline
		}
	}
	a.markFaulty(e.Slot, e.Ballot)
	if e.Slot > n.lrn.chosenIndex {
		return // undecided: the CTRL table settles it at the next Phase 1
	}
	if n.repairs == nil {
		n.repairs = map[Slot]Ballot{}
	}
	if len(n.repairs) < repairsMax {
		n.repairs[e.Slot] = e.Ballot
	}
	if peer == 0 || peer == n.cfg.ID {
		for _, id := range n.sys.Members() {
			if id != n.cfg.ID {
				peer = id
				break
			}
		}
	}
	if peer != 0 && peer != n.cfg.ID {
		n.send(Message{Type: MsgCatchUpRequest, To: peer, Slot: e.Slot})
	}
}

// repairsMax bounds the chosen records waiting for a peer's copy (a scrub
// pass finds the rest again).
const repairsMax = 1024

// repairFromPeer writes a peer's copies of chosen values over the damaged
// records waiting for them (a catch-up page).
func (n *Node) repairFromPeer(entries []SlotCommand) {
	for _, e := range entries {
		if _, ok := n.repairs[e.Slot]; !ok || e.Slot > n.lrn.chosenIndex || e.Ballot.IsZero() || !e.Command.Valid() {
			continue
		}
		delete(n.repairs, e.Slot)
		if n.lrn.isCold(e.Slot) {
			// the local copy is the damaged record: nothing to compare
		} else if c, ok := n.lrn.Chosen(e.Slot); ok && !c.Equal(e.Command) {
			n.contract.raise("slot %d chosen as %s here, a peer's chosen copy is %s", e.Slot, c, e.Command)
			return
		}
		if n.acc.repairChosen(e.Slot, e.Ballot, e.Command) {
			n.counters.RepairedFromPeer++
		}
	}
}

// repairChosen writes a peer's copy of a chosen value over a damaged
// record (hot or evicted). It reports whether a damaged record was there.
func (a *Acceptor) repairChosen(s Slot, b Ballot, cmd journal.Command) bool {
	if _, ok := a.faulty[s]; !ok || s < a.floor {
		return false
	}
	delete(a.faulty, s)
	if !a.isCold(s) {
		a.put(a.log.ensure(s), b, cmd)
	}
	a.emit(WriteOp{Kind: a.chosenKind(), Slot: s, Ballot: b, Command: cmd})
	return true
}

// markFaulty records that the record at s lost its value.
func (a *Acceptor) markFaulty(s Slot, b Ballot) {
	if a.faulty == nil {
		a.faulty = make(map[Slot]Ballot)
	}
	a.faulty[s] = b
}
