package paxos

import "github.com/parosdb/paros/core/journal"

// requestCatchUp asks `to` for the chosen values above this node's chosen
// prefix. One request is in flight at a time; Tick re-sends it.
func (n *Node) requestCatchUp(to NodeID) {
	if to == 0 || to == n.cfg.ID {
		return
	}
	if n.catchUpOpen && n.catchUpTarget == to {
		return
	}
	n.catchUpOpen = true
	n.catchUpTarget = to
	n.catchUpElapsed = 0
	n.counters.CatchUps++
	n.send(Message{Type: MsgCatchUpRequest, To: to, Slot: n.lrn.chosenIndex + 1})
}

// handleCatchUpRequest replays chosen values from the requested slot, in
// a window of up to CatchUpPages pages, each bounded by CatchUpBatch
// entries and MessageBytesMax. A window, not one page per request: a
// requester far behind would otherwise move one page per round trip and
// never overtake a busy writer (the same reason a Raft leader keeps
// several appends in flight). Every page but the window's last names the
// slot the next page starts at (Next); the last one says Next 0, and only
// it makes the requester ask again. Below this node's floor the values are
// gone: it answers with where its retained log starts instead (the
// trim-point jump), never with a pretend replay.
func (n *Node) handleCatchUpRequest(m Message) {
	if m.Slot == 0 {
		return
	}
	if m.Slot < n.lrn.floor {
		n.send(Message{Type: MsgTrimmedTo, To: m.From, Slot: n.lrn.floor, State: n.sealed})
		return
	}
	s := m.Slot
	for page := 1; ; page++ {
		entries, next, full, ok := n.catchUpPage(s)
		if !ok {
			return // a failed cold read: StorageFault is raised, the requester retries
		}
		// A page short of its bounds stopped at the chosen index or at a
		// faulty record: nothing more to send in this window.
		if page == n.opts.CatchUpPages || !full || next > n.lrn.chosenIndex {
			n.send(Message{Type: MsgCatchUpResponse, To: m.From, Entries: entries})
			return
		}
		n.send(Message{Type: MsgCatchUpResponse, To: m.From, Entries: entries, Next: next})
		s = next
	}
}

// catchUpPage is one page of chosen values from s: evicted slots first,
// read back in chunks (cold.go), then the hot window, stopping at the
// chosen index, a faulty record, CatchUpBatch entries or MessageBytesMax.
// next is the first slot the page does not hold; full says it reached its
// bounds (catchUpFull); ok is false when a cold read failed.
func (n *Node) catchUpPage(s Slot) (entries []SlotCommand, next Slot, full, ok bool) {
	bytes := 0
	isFull := func() bool { return n.pageFull(len(entries), bytes) }
	for s < n.acc.log.base && s <= n.lrn.chosenIndex && !isFull() {
		to := min(n.acc.log.base, n.lrn.chosenIndex+1, s+Slot(min(coldChunkSlots, n.opts.CatchUpBatch-len(entries))))
		recs, ok := n.cold.read(ColdCatchUp, s, to)
		if !ok {
			return nil, 0, false, false
		}
		for _, r := range recs {
			if isFull() {
				return entries, r.Slot, true, true
			}
			bytes += commandBytes(r.Command)
			entries = append(entries, r)
		}
		s = to
	}
	for ; s <= n.lrn.chosenIndex && !isFull(); s++ {
		b, cmd, ok := n.acc.Record(s)
		if !ok {
			break // a faulty record: the repair path (CTRL) owns it
		}
		bytes += commandBytes(cmd)
		entries = append(entries, SlotCommand{Slot: s, Ballot: b, Command: cmd})
	}
	return entries, s, isFull(), true
}

// handleCatchUpResponse learns a page of chosen values, in slot order. The
// last page of a window (Next 0) closes the request; when it was full and
// the node is still behind, it asks for the next window at once. A page
// lost from the middle of a window leaves a gap the next pages cannot
// continue; the window's last page (or the retry tick) asks again from
// the chosen index.
func (n *Node) handleCatchUpResponse(m Message) {
	n.learnChosen(m.Entries)
	if m.Next != 0 {
		return
	}
	if m.From == n.catchUpTarget {
		n.catchUpOpen = false
	}
	if n.catchUpFull(m.Entries) && n.lrn.chosenIndex < max(n.knownCommit, m.Entries[len(m.Entries)-1].Slot+1) {
		n.requestCatchUp(m.From)
	}
}

// learnChosen learns a page of chosen values (a catch-up page, or the
// values a leader pushed to a replica), in slot order from the chosen
// index: a page that does not continue it teaches nothing.
func (n *Node) learnChosen(entries []SlotCommand) {
	n.repairFromPeer(entries)
	for _, e := range entries {
		if e.Slot <= n.lrn.chosenIndex {
			continue
		}
		if e.Slot != n.lrn.chosenIndex+1 || e.Ballot.IsZero() || !e.Command.Valid() {
			break
		}
		if own := n.LeaderBallot(); !own.IsZero() && own.Less(e.Ballot) {
			// A value chosen at a higher ballot: this leadership was
			// deposed without knowing it. It steps down before it learns,
			// so its commit watermark never covers a slot where its own
			// proposal at its ballot lost (a follower holding that losing
			// proposal would fold it).
			n.stepDown()
		}
		if n.acc.Learn(e.Slot, e.Ballot, e.Command) {
			n.counters.RepairedFromPeer++
		}
		n.lrn.markChosen(e.Slot, e.Command)
	}
}

// handleTrimmedTo installs a peer's trim point: everything below it is
// chosen (a trim is decided and only drops chosen slots), so the node
// persists the jump, drops its prefix, sets floor and chosen index, seals
// the state it was handed, and asks again from the point. A point at or
// below what it already folded teaches nothing. The promise is never
// touched: a trim point says where the log starts, not what anyone swore.
func (n *Node) handleTrimmedTo(m Message) {
	point := m.Slot
	if point <= n.lrn.floor || point <= n.lrn.applied+1 {
		return
	}
	st := m.State
	if _, err := journal.Restore(st.Leader, st.Term(), st.NextSeq, st.FirstSeq); err != nil {
		return // a malformed state: ignore, the peer's resend repairs
	}
	if st.NextSeq < n.lrn.state.NextSeq || st.FirstSeq < n.lrn.state.FirstSeq || st.Term() < n.lrn.state.Term() {
		return // a state behind this node's own fold cannot seal a later point
	}
	promised := n.acc.Promised()
	n.counters.TrimJumps++
	// Below a trim point every slot is chosen at unknown ballots: a leader
	// cannot vouch for its own proposals there, so it steps down first.
	n.stepDown()
	n.cur.writes = append(n.cur.writes, WriteOp{Kind: OpTrimmedTo, Slot: point, State: st})
	n.acc.truncate(point)
	n.lrn.trimTo(point, st)
	n.sealed = st
	n.knownCommit = max(n.knownCommit, point-1)
	if n.acc.Promised() != promised {
		panic("paxos: a trim-point jump touched the promise")
	}
	n.catchUpOpen = false
	n.requestCatchUp(m.From)
}

// cut persists a decided truncation reached by the apply walk: the floor
// moves to the slot holding the first retained record, the sealed state
// is written in the same op, and every role drops the prefix.
func (n *Node) cut(floor Slot, sealed journal.State) {
	n.counters.Truncations++
	n.cur.writes = append(n.cur.writes, WriteOp{Kind: OpTruncate, Slot: floor, State: sealed})
	n.acc.truncate(floor)
	n.lrn.dropBelow(floor)
	n.sealed = sealed
}

// catchUpFull says whether a page reached its bounds: CatchUpBatch entries
// or MessageBytesMax bytes. A full page says more may follow it.
func (n *Node) catchUpFull(entries []SlotCommand) bool {
	bytes := 0
	for _, e := range entries {
		bytes += commandBytes(e.Command)
	}
	return n.pageFull(len(entries), bytes)
}

// pageFull is the bound of one catch-up page: CatchUpBatch entries, or
// MessageBytesMax of records after at least one entry.
func (n *Node) pageFull(entries, bytes int) bool {
	return entries >= n.opts.CatchUpBatch || entries > 0 && bytes >= MessageBytesMax
}
