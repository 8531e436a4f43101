package host

import (
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
)

// openRead opens a quorum read for r under a fresh random context (unique
// across restarts, so a late PreReadAck of an earlier incarnation never
// matches). No basis: the client is answered unserved at once.
func (h *Host) openRead(j *journalRT, r *parkedRead) {
	ctx := h.env.Rand() | 1
	if !j.node.QuorumRead(ctx) {
		h.counters.ReadsUnserved++
		h.answerRead(r, journal.ReadReply{FromSeq: r.req.FromSeq})
		return
	}
	r.ctx = ctx
	if !containsRead(j.reads, r) {
		j.reads = append(j.reads, r)
	}
}

func containsRead(rs []*parkedRead, r *parkedRead) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

// settleRead serves a read whose quorum confirmed it, or answers it
// unserved when no quorum answered in time.
func (h *Host) settleRead(j *journalRT, rs paxos.ReadState) {
	var r *parkedRead
	for _, x := range j.reads {
		if x.ctx == rs.Ctx {
			r = x
			break
		}
	}
	if r == nil {
		return
	}
	if !rs.OK {
		h.counters.ReadsUnserved++
		h.answerRead(r, journal.ReadReply{FromSeq: r.req.FromSeq})
		h.forgetRead(j, r)
		return
	}
	h.serveRead(j, r)
}

// serveRead answers from the released fold: a page, truncated, or unserved
// when this node does not hold the range. An empty page at the tail parks
// the read until records land or the wait ends.
//
// Only the released prefix is served (journalRT.released): positions at or
// past its NextSeq are cut from the page, and the view is the released
// state. A node whose live fold truncated past the released floor answers
// unserved for the gap rather than reveal the undurable truncation.
func (h *Host) serveRead(j *journalRT, r *parkedRead) {
	limit := int(r.req.Limit)
	if limit <= 0 || limit > h.tun.ReadRecordsMax {
		limit = h.tun.ReadRecordsMax
	}
	rs := j.released
	view := rs.View()
	from := r.req.FromSeq
	if from < rs.FirstSeq {
		h.counters.ReadsTruncated++
		h.answerRead(r, journal.ReadReply{Served: true, BelowFloor: true, FromSeq: from, View: view})
		h.forgetRead(j, r)
		return
	}
	if from >= rs.NextSeq {
		if h.now < r.waitTill {
			r.ctx = 0 // waiting at the tail
			return
		}
		h.counters.ReadsServed++
		h.answerRead(r, journal.ReadReply{Served: true, FromSeq: from, View: view})
		h.forgetRead(j, r)
		return
	}
	lr := j.node.ReadLog(from, limit, h.tun.ReadBytesMax)
	if lr.Kind != paxos.ReadPage {
		h.counters.ReadsUnserved++
		h.answerRead(r, journal.ReadReply{FromSeq: from, View: view})
		h.forgetRead(j, r)
		return
	}
	recs := lr.Records
	if keep := int(rs.NextSeq - from); len(recs) > keep {
		recs = recs[:keep]
	}
	h.counters.ReadsServed++
	h.answerRead(r, journal.ReadReply{Served: true, FromSeq: from, Records: recs, View: view})
	h.forgetRead(j, r)
}

// wakeWaitingReads re-confirms a long-poll once records landed past its
// position (or the floor moved past it): a fresh quorum read, so the page
// it serves is linearizable at its own moment. (Serving the later released
// prefix without one looked safe on paper; porcupine found a history it
// made non-linearizable — sweep seed 20475 — so the re-confirmation stays.)
func (h *Host) wakeWaitingReads(j *journalRT) {
	st := j.released
	for _, r := range j.reads {
		if r.ctx == 0 && !r.answered && (st.NextSeq > r.req.FromSeq || st.FirstSeq > r.req.FromSeq) {
			h.openRead(j, r)
		}
	}
}

func (h *Host) answerRead(r *parkedRead, rr journal.ReadReply) {
	if r.answered {
		return
	}
	r.answered = true
	h.reply(r.id, Response{Kind: CallRead, Read: rr})
}

func (h *Host) forgetRead(j *journalRT, r *parkedRead) {
	for i, x := range j.reads {
		if x == r {
			j.reads = append(j.reads[:i], j.reads[i+1:]...)
			return
		}
	}
}
