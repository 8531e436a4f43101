package paxos

import "slices"

// Matchmaker-set generations, the node's side. The matchmaker set is a
// chosen value with a generation (core/matchmaker's handover replaces it),
// and every matchmaking message this node sends names the generation it
// believes in force. A matchmaker that does not serve that generation
// refuses, with what it knows:
//
//	refusal           successor              the node
//	----------------  ---------------------  ------------------------------
//	MatchStopped      a newer chosen set     adopts it; matchmaking restarts
//	MatchStopped      none (undecided)       abandons; MatchmakersStopped
//	MatchGeneration   a newer chosen set     adopts it; matchmaking restarts
//	MatchGeneration   not newer              ignores it (a stale pointer)
//	MatchInactive     -                      counts no answer; a member of a
//	                                         replaced set is reported lagging
//	                                         (MatchmakersLagging)
//
// A matchmaker names only a set that was chosen: its own active set (it
// was activated by the decree's outcome, or founded the cell) or the
// successor it learned chosen. Adopting one is therefore following the
// chain, never a guess, and the generation only rises.
func (n *Node) handleGenerationRefusal(m Message) {
	switch {
	case m.Refusal != MatchInactive && !m.Successor.IsZero() && n.mms.Generation < m.Successor.Generation:
		n.adoptMatchmakers(m.Successor)
	case m.Refusal == MatchInactive && n.mms.Generation >= 2:
		// A member of the set this node follows that does not serve it
		// missed the set's publication (it holds the bootstrap but never
		// heard the outcome). The driver tells it (MatchmakersLagging):
		// a set with a member short may have no quorum without it.
		if n.mmsLagging == nil {
			n.mmsLagging = map[NodeID]bool{}
		}
		n.mmsLagging[m.From] = true
	case m.Refusal == MatchStopped && m.Successor.IsZero():
		// A handover of this generation is undecided. The matchmaking in
		// flight cannot reach a quorum (a stop quorum refuses it), so it
		// is abandoned; whoever meets this finishes the handover.
		if n.mmsStopped != n.mms.Generation {
			n.mmsStopped = n.mms.Generation
			n.counters.MatchmakersStopped++
		}
		if mk, ok := n.phase.(*matchmaking); ok && m.Ballot == mk.ballot {
			n.stepDown()
		}
	}
}

// adoptMatchmakers follows the chain to the chosen set s. What was
// counted against the old generation counts nothing in the new one: a
// matchmaking in flight is abandoned (the election timer campaigns again,
// with s), a probe is asked again of s, an incomplete garbage collection
// starts over (an effective one stays effective: the handover carried its
// watermark), and a retraction is asked of every member of s.
func (n *Node) adoptMatchmakers(s MatchmakerSet) {
	n.mms, n.mmsStopped, n.mmsLagging = s.Clone(), 0, nil
	n.counters.MatchmakerSetsAdopted++
	n.retractedBy = nil
	switch p := n.phase.(type) {
	case *matchmaking:
		n.stepDown()
	case *leading:
		if !p.gc.effective {
			p.gc.acks = nil
		}
	}
	if n.probe != nil {
		n.startProbe()
	}
}

// MatchmakersLagging hands out the members of the node's set that
// answered they do not serve it since the last call, in id order, with
// the set: the driver publishes the set to them (a matchmaker activates
// only a set whose bootstrap it holds whole, so telling it is safe).
func (n *Node) MatchmakersLagging() ([]NodeID, MatchmakerSet) {
	if len(n.mmsLagging) == 0 {
		return nil, MatchmakerSet{}
	}
	out := make([]NodeID, 0, len(n.mmsLagging))
	for id := range n.mmsLagging {
		out = append(out, id)
	}
	slices.Sort(out)
	n.mmsLagging = nil
	return out, n.mms.Clone()
}

// MatchmakersNeedDriver reports whether the driver has something to do
// for this node's matchmaker set: members to tell (MatchmakersLagging) or
// a stopped generation to finish (MatchmakersStopped). It changes nothing.
func (n *Node) MatchmakersNeedDriver() bool {
	return len(n.mmsLagging) > 0 || n.mmsStopped != 0
}

// MatchmakersStopped reports the generation a matchmaker answered stopped
// with no successor since this node adopted its set: a handover of it is
// undecided, and the driver should finish it (core/matchmaker's
// Reconfigurer). ok is false when none did.
func (n *Node) MatchmakersStopped() (generation uint64, ok bool) {
	return n.mmsStopped, n.mmsStopped != 0
}

// AdoptMatchmakers follows the chain to s, a set the driver learned
// chosen (a handover it drove or was told the outcome of). A set not
// newer than the node's, or malformed, changes nothing.
func (n *Node) AdoptMatchmakers(s MatchmakerSet) {
	n.wake() // a quiet journal has work (node_quiet.go)
	if n.matchmakers() && s.Validate() == nil && n.mms.Generation < s.Generation && len(s.Members) > 0 {
		n.adoptMatchmakers(s)
	}
	n.afterEvent()
	n.assertInvariants()
}

// tellMatchmakers puts the set this node follows on a beat or its ack once
// a handover replaced the founding set: the members of a journal pass the
// chain to each other, so a node that was not matchmaking when the set
// changed (a follower, a leader that was not collecting) still follows it,
// and the founders may all be gone by the time it next campaigns.
func (n *Node) tellMatchmakers(m *Message) {
	if n.mms.Generation > 1 {
		m.Generation, m.Successor = n.mms.Generation, n.mms.Clone()
	}
}

// followMatchmakers adopts the newer set a beat or its ack names.
func (n *Node) followMatchmakers(m Message) {
	if n.matchmakers() && !m.Successor.IsZero() && n.mms.Generation < m.Successor.Generation {
		n.adoptMatchmakers(m.Successor)
	}
}
