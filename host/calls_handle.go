package host

import (
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
)

// OnCall takes one client call. Write, Truncate and SetLeader are proposed
// and parked until their slot applies (or redirected when this node does
// not lead); Read opens a quorum read; Inspect answers at once.
func (h *Host) OnCall(c Call) {
	if j := h.takeCall(c); j != nil {
		h.drain(j)
		h.flush()
	}
}

// OnCalls takes several calls in one turn, in order (a pipelined stream's
// writes): each is handled as OnCall handles it, and each journal touched
// is drained once after all of them, so their slots share a Ready — one
// persist, one Accept per peer — instead of one each.
func (h *Host) OnCalls(cs []Call) {
	var touched []*journalRT
	for _, c := range cs {
		if j := h.takeCall(c); j != nil && !slices.Contains(touched, j) {
			touched = append(touched, j)
		}
	}
	for _, j := range touched {
		h.drain(j)
	}
	h.flush()
}

// takeCall answers c at once or parks it; it returns the journal to drain
// (nil when c was answered without touching one).
func (h *Host) takeCall(c Call) *journalRT {
	if h.stopped {
		h.reply(c.ID, unavailable(c))
		return nil
	}
	if c.Kind == CallMatchmakers {
		h.startHandover(c)
		return nil
	}
	j := h.journal(c.Journal())
	if j == nil || !c.Journal().IsSet() {
		h.reply(c.ID, unknownJournal(c))
		return nil
	}
	if c.Kind == CallInspect {
		h.reply(c.ID, Response{Kind: CallInspect, Inspect: h.inspect(j)})
		return nil
	}
	if j.status != Live {
		h.reply(c.ID, unavailable(c))
		return nil
	}
	if adminCall(c.Kind) {
		// The reply leaves now; what the call changed (a Relinquish, a
		// round change) leaves through the Ready path when the caller
		// drains j: persisted before sent, like every other message.
		h.reply(c.ID, Response{Kind: c.Kind, Admin: h.admin(j, c)})
		return j
	}
	switch c.Kind {
	case CallWrite:
		w := c.Write
		bytes := 0
		for _, r := range w.Records {
			bytes += len(r)
		}
		if len(w.Records) > h.tun.BatchRecordsMax || bytes > h.tun.BatchBytesMax {
			h.reply(c.ID, Response{Kind: CallWrite, Reply: journal.Reply{NoVerdict: journal.TooLarge}})
			return nil
		}
		h.proposeWrite(j, c, journal.Write(journal.Entry{Leader: w.Leader, Seq: w.Seq, Records: w.Records}))
	case CallTruncate:
		h.propose(j, c, journal.Truncate(c.Truncate.Leader, c.Truncate.UpTo))
	case CallSetLeader:
		h.propose(j, c, journal.SetLeader(c.SetLeader.New, c.SetLeader.Old))
	case CallRead:
		h.openRead(j, &parkedRead{id: c.ID, req: c.Read, waitTill: h.now + h.waitTicks(c.Read.WaitMs)})
	}
	return j
}

func unavailable(c Call) Response {
	if adminCall(c.Kind) {
		return Response{Kind: c.Kind, Admin: AdminReply{Refusal: "unavailable"}}
	}
	if c.Kind == CallRead {
		return Response{Kind: CallRead, Read: journal.ReadReply{FromSeq: c.Read.FromSeq}}
	}
	return Response{Kind: c.Kind, Reply: journal.Reply{NoVerdict: journal.Unavailable}}
}

func unknownJournal(c Call) Response {
	switch c.Kind {
	case CallRead:
		return Response{Kind: CallRead, Read: journal.ReadReply{UnknownJournal: true, FromSeq: c.Read.FromSeq}}
	case CallInspect:
		return Response{Kind: CallInspect, Inspect: InspectReply{UnknownJournal: true}}
	case CallReconfigure, CallRetire, CallHandoff:
		return Response{Kind: c.Kind, Admin: AdminReply{Refusal: "unknown_journal"}}
	}
	return Response{Kind: c.Kind, Reply: journal.Reply{NoVerdict: journal.UnknownJournal}}
}

func (h *Host) waitTicks(ms uint32) uint64 {
	w := max(0, min(int(ms), h.tun.WaitMsMax))
	return uint64((w + h.tun.TickMs - 1) / h.tun.TickMs)
}

// propose hands a command to the node and parks the call on its slot.
func (h *Host) propose(j *journalRT, c Call, cmd journal.Command) {
	var res paxos.ProposeResult
	if cmd.Kind == journal.KindWrite {
		res = j.node.Propose(cmd.Entry)
	} else {
		res = j.node.ProposeControl(cmd)
	}
	switch res.Status {
	case paxos.Proposed:
		if old, ok := j.calls[res.Slot]; ok {
			// A slot is allocated once per leadership; a second call on it
			// means an earlier leadership's parked call lost its slot.
			h.lose(old)
		}
		j.calls[res.Slot] = &parkedCall{id: c.ID, kind: c.Kind, cmd: cmd, slot: res.Slot,
			ballot: j.node.LeaderBallot(), deadline: h.now + uint64(h.tun.CallTimeoutTicks)}
	case paxos.NotLeader:
		h.counters.Redirects++
		h.reply(c.ID, Response{Kind: c.Kind, Reply: journal.Reply{NoVerdict: journal.NotLeader, LeaderHint: uint64(res.LeaderHint)}})
	default: // Busy: nothing was proposed
		h.reply(c.ID, Response{Kind: c.Kind, Reply: journal.Reply{NoVerdict: journal.Busy, LeaderHint: uint64(res.LeaderHint)}})
	}
}

// answerApplied answers the call parked on a released slot with the
// verdict the slot folded to — or as lost (ambiguous: a redirect, never a
// false commit) when the slot was decided for another command, or when the
// node no longer leads at the ballot it proposed at: then the slot may hold
// another leadership's proposal of the same bytes (a client's identical
// resend, its first attempt decided before the resend was made), and that
// proposal's verdict is not this call's. While the node leads at that ballot
// every slot of its rounds is decided for its own proposal (the core steps
// down before it learns a value chosen at a higher ballot).
func (h *Host) answerApplied(j *journalRT, c paxos.Applied) {
	p, ok := j.calls[c.Slot]
	if !ok {
		return
	}
	delete(j.calls, c.Slot)
	if !c.Command.Equal(p.cmd) || j.node.LeaderBallot() != p.ballot {
		h.lose(p)
		return
	}
	h.reply(p.id, Response{Kind: p.kind, Reply: journal.Reply{Outcome: c.Outcome, LeaderHint: uint64(j.node.LeaderHint())}})
}

func (h *Host) lose(p *parkedCall) {
	h.counters.CallsLost++
	h.reply(p.id, Response{Kind: p.kind, Reply: journal.Reply{NoVerdict: journal.Lost}})
}

// abandonJumped answers calls whose slot this node folded past without a
// verdict: only a trim-point jump skips slots (every other applied slot is
// released with its Applied), so it scans only after a jump.
func (h *Host) abandonJumped(j *journalRT) {
	if len(j.calls) == 0 {
		return
	}
	jumps := j.node.Counters().TrimJumps
	if jumps == j.jumpsSeen {
		return
	}
	if len(j.batches) > 0 {
		return // verdicts for these may still be in a held batch
	}
	j.jumpsSeen = jumps
	applied := j.node.Applied()
	for _, s := range sortedSlots(j.calls) {
		if s > applied {
			break
		}
		h.lose(j.calls[s])
		delete(j.calls, s)
	}
}

// expireCalls answers calls parked longer than CallTimeoutTicks: ambiguous.
func (h *Host) expireCalls(j *journalRT) {
	h.expireHeld(j)
	for _, s := range sortedSlots(j.calls) {
		if p := j.calls[s]; h.now >= p.deadline {
			h.lose(p)
			delete(j.calls, s)
		}
	}
	kept := j.reads[:0]
	for _, r := range j.reads {
		if r.ctx == 0 && h.now >= r.waitTill {
			// The long-poll ends with an empty, served page: the read was
			// confirmed when it parked, and nothing landed since.
			h.counters.ReadsServed++
			h.answerRead(r, journal.ReadReply{Served: true, FromSeq: r.req.FromSeq, View: j.released.View()})
			continue
		}
		kept = append(kept, r)
	}
	clear(j.reads[len(kept):])
	j.reads = kept
}

func (h *Host) inspect(j *journalRT) InspectReply {
	r := InspectReply{Node: h.id, Quarantined: j.status == Quarantined}
	if j.status != Live {
		r.Role = j.status.String()
		return r
	}
	n := j.node
	r.Role, r.Leader, r.Promised = n.Role(), n.LeaderHint(), n.Promised()
	r.ChosenIndex, r.Applied, r.Floor, r.State = n.ChosenIndex(), n.Applied(), n.Floor(), n.State().View()
	r.Config, r.Matchmakers, r.MatchmakerGeneration = n.Configuration(), n.Matchmakers(), n.MatchmakerSet().Generation
	r.GCWatermark, r.Retirable, r.GCEffective = n.Collected()
	r.Unrecoverable = n.Unrecoverable()
	return r
}
