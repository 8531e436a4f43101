package paxos

import "github.com/parosdb/paros/core/quorum"

// quorumRead is one leaderless linearizable read (reference design §3.5):
// ask a Phase-1 quorum for vote watermarks, take the max, and serve once the
// fold covers max(watermark, fence). An acknowledged write was voted by a
// Phase-2 quorum, which meets every Phase-1 quorum, so the max watermark is
// at or above its slot.
type quorumRead struct {
	ctx     uint64
	granted quorum.Set
	wm      Slot
	fence   Slot
	elapsed int
	settled bool
}

// QuorumRead opens a read with the caller's ctx and reports whether it was
// opened. ctx must be unique for this node across restarts (draw it at
// random): a late PreReadAck from before a restart must not match a new
// read. The answer arrives as a ReadState. Not opened (false) means no
// read basis or too many reads open: answer the client unserved.
func (n *Node) QuorumRead(ctx uint64) bool {
	if len(n.reads) >= n.opts.ReadsMax {
		return false
	}
	for _, r := range n.reads {
		if r.ctx == ctx {
			return false
		}
	}
	r := &quorumRead{ctx: ctx, wm: n.acc.VoteWatermark()}
	r.granted = r.granted.Add(n.me)
	if l, ok := n.phase.(*leading); ok {
		r.fence = l.recoverEnd
	}
	n.reads = append(n.reads, r)
	for _, id := range n.sys.PreReadAddressees() {
		if id != n.cfg.ID {
			n.send(Message{Type: MsgPreRead, To: id, Ctx: ctx})
		}
	}
	n.checkRead(r)
	n.afterEvent()
	n.assertInvariants()
	return true
}

// handlePreRead answers with this acceptor's vote watermark. The answer
// waits for the batch to be durable, like every vote it reports.
func (n *Node) handlePreRead(m Message) {
	n.send(Message{Type: MsgPreReadAck, To: m.From, Ctx: m.Ctx, Watermark: n.acc.VoteWatermark()})
}

func (n *Node) handlePreReadAck(m Message, from int) {
	if l, ok := n.phase.(*leading); ok {
		l.fillTo = max(l.fillTo, m.Watermark)
	}
	for _, r := range n.reads {
		if r.ctx == m.Ctx && !r.settled {
			r.granted = r.granted.Add(from)
			r.wm = max(r.wm, m.Watermark)
			n.checkRead(r)
			return
		}
	}
}

func (n *Node) checkRead(r *quorumRead) {
	if n.sys.Phase1(r.granted, 0) == quorum.Won {
		r.settled = true
	}
}

// settleReads answers every settled read the fold now covers, in the order
// they were opened.
func (n *Node) settleReads() {
	kept := n.reads[:0]
	for _, r := range n.reads {
		idx := max(r.wm, r.fence)
		if r.settled && n.rep.Covers(idx) {
			n.counters.ReadsServed++
			n.cur.reads = append(n.cur.reads, ReadState{Ctx: r.ctx, Index: idx, OK: true})
			continue
		}
		kept = append(kept, r)
	}
	clear(n.reads[len(kept):])
	n.reads = kept
}

// tickReads expires reads older than ReadTTLTicks: the client is answered
// unserved and asks another server.
func (n *Node) tickReads() {
	kept := n.reads[:0]
	for _, r := range n.reads {
		r.elapsed++
		if r.elapsed >= n.opts.ReadTTLTicks {
			n.counters.ReadsExpired++
			n.cur.reads = append(n.cur.reads, ReadState{Ctx: r.ctx, OK: false})
			continue
		}
		kept = append(kept, r)
	}
	clear(n.reads[len(kept):])
	n.reads = kept
}
