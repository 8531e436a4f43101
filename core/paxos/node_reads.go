package paxos

import (
	"slices"

	"github.com/parosdb/paros/core/quorum"
)

// quorumRead is one leaderless linearizable read:
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
	// widened: the read asked every member, after its first addressees
	// (one row of a grid) did not settle it in half its TTL.
	widened bool
	// since is the configuration the read opened against (Matchmaker
	// Paxos): an answer from a newer one abandons the read.
	since Ballot
}

// QuorumRead opens a read with the caller's ctx and reports whether it was
// opened. ctx must be unique for this node across restarts (draw it at
// random): a late PreReadAck from before a restart must not match a new
// read. The answer arrives as a ReadState. Not opened (false) means no
// read basis or too many reads open: answer the client unserved.
func (n *Node) QuorumRead(ctx uint64) bool {
	n.wake() // a quiet journal has work (node_quiet.go)
	if len(n.reads) >= n.opts.ReadsMax {
		return false
	}
	if n.matchmakers() && (!n.learned || n.belief.IsZero() || n.belief.Since.Less(n.ballotCfg.Since)) {
		// No read basis: rebooted, a joiner, or this node promised a
		// newer configuration than it believes in force (its own answer
		// would be the one to name it; found by the core's read test).
		return false
	}
	for _, r := range n.reads {
		if r.ctx == ctx {
			return false
		}
	}
	r := &quorumRead{ctx: ctx, wm: n.acc.VoteWatermark(), since: n.belief.Since}
	if n.me >= 0 {
		r.granted = r.granted.Add(n.me)
	}
	if l, ok := n.phase.(*leading); ok {
		r.fence = l.recoverEnd
	} else if n.matchmakers() {
		// A follower reads at or past the fence of the leadership that
		// taught it its configuration: a write chosen in an older
		// configuration is below that fence (the leadership's Phase 1
		// met a quorum of that configuration, which refused the older
		// ballot from then on), but the acceptors of the newer one may
		// not have voted for it yet. No basis (a belief from the
		// matchmakers, not from a leader) opens no read. Found by the
		// simulator: a joiner served a read that missed two writes the
		// old configuration chose.
		if n.basisBallot != n.belief.Ballot {
			return false
		}
		r.fence = n.basisFence
	}
	n.reads = append(n.reads, r)
	for _, id := range n.sys.PreReadAddressees(ctx, n.matchmakers()) {
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
//
// With matchmakers the answer names the newest configuration this node
// knows of (its belief, or a ballot it promised or followed); a node that
// rebooted to its bootstrap belief knows none and does not answer.
func (n *Node) handlePreRead(m Message) {
	var since Ballot
	if n.matchmakers() {
		if !n.learned {
			return
		}
		since = n.belief.Since
		if since.Less(n.ballotCfg.Since) {
			since = n.ballotCfg.Since
		}
	}
	n.send(Message{Type: MsgPreReadAck, To: m.From, Ctx: m.Ctx, Watermark: n.acc.VoteWatermark(), Since: since})
}

func (n *Node) handlePreReadAck(m Message, from int) {
	if l, ok := n.phase.(*leading); ok {
		l.fillTo = max(l.fillTo, m.Watermark)
	}
	if from < 0 {
		return
	}
	for i, r := range n.reads {
		if r.ctx == m.Ctx && !r.settled {
			if r.since.Less(m.Since) {
				// The answerer knows a newer configuration: this read's
				// quorum may miss writes chosen under it.
				n.counters.ReadsAbandoned++
				n.cur.reads = append(n.cur.reads, ReadState{Ctx: r.ctx, OK: false})
				n.reads = append(n.reads[:i], n.reads[i+1:]...)
				return
			}
			r.granted = r.granted.Add(from)
			r.wm = max(r.wm, m.Watermark)
			n.checkRead(r)
			return
		}
	}
}

// checkRead settles a read once its answers hold a Phase-1 quorum.
//
// With matchmakers the answers must also meet every Phase-1 quorum of the
// configuration (they "block" Phase 1): a reconfiguration that superseded
// it needed a Phase-1 quorum of it, whose members learned the new
// configuration with the Prepare, so one of them is among the answerers and
// names it. On a majority this asks nothing more; on a grid it asks one
// member of every row besides the full row. (A Phase-1 quorum alone is not
// enough: two rows of a grid do not meet, so that reading could miss
// a reconfiguration made through another row.)
func (n *Node) checkRead(r *quorumRead) {
	if n.sys.Phase1(r.granted, 0) != quorum.Won {
		return
	}
	if n.matchmakers() && n.sys.Phase1(0, r.granted) != quorum.Lost {
		return
	}
	r.settled = true
}

// widenRead asks the members a read's first addressees left out.
func (n *Node) widenRead(r *quorumRead) {
	r.widened = true
	first := n.sys.PreReadAddressees(r.ctx, n.matchmakers())
	if len(first) == n.sys.Size() {
		return
	}
	n.counters.ReadsWidened++
	for _, id := range n.sys.Members() {
		if id != n.cfg.ID && !slices.Contains(first, id) {
			n.send(Message{Type: MsgPreRead, To: id, Ctx: r.ctx})
		}
	}
}

// abandonReads answers every open read unserved: the configuration it
// opened against is no longer the one this node believes in force.
func (n *Node) abandonReads() {
	for _, r := range n.reads {
		n.counters.ReadsAbandoned++
		n.cur.reads = append(n.cur.reads, ReadState{Ctx: r.ctx, OK: false})
	}
	clear(n.reads)
	n.reads = n.reads[:0]
}

// settleReads answers every settled read the fold now covers, in the order
// they were opened.
func (n *Node) settleReads() {
	kept := n.reads[:0]
	for _, r := range n.reads {
		idx := max(r.wm, r.fence)
		if r.settled && n.lrn.Covers(idx) {
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
// unserved and asks another server. A read whose first addressees (one row
// of a grid) have not settled it in half its TTL asks every other member:
// a row with a slow or dead member must not cost the read.
func (n *Node) tickReads() {
	kept := n.reads[:0]
	for _, r := range n.reads {
		r.elapsed++
		if !r.settled && !r.widened && r.elapsed >= max(1, n.opts.ReadTTLTicks/2) {
			n.widenRead(r)
		}
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
