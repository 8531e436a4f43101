package host

import "github.com/parosdb/paros/core/paxos"

// A quiet journal (paxos.Node.Quiescent: settled, every member caught up
// and told so) costs its host nothing: it is not ticked, and its leader
// sends no beat. What keeps its followers from campaigning is not the
// journal's beat but the leader's machine's: every process beats each peer
// once per HeartbeatTicks with one MachineBeat envelope, for all of its
// journals at once, and any envelope from a peer counts as hearing it. A
// peer heard from within ElectionTicks is alive. When a peer goes silent
// for longer, every quiet journal whose leader is that peer is woken
// (paxos.Node.Wake): its follower restarts its election timer and
// campaigns if the leader stays silent, exactly as if it had never been
// quiet. A peer that comes back reboots its journals awake (the core's
// quiet state is volatile), and its nodes' traffic wakes the others.
//
// Safety never depends on this: Paxos holds with any timer stopped. It is
// liveness that needs each way to lose a leader to wake its journal, and
// the simulator's gates and tail oracles prove that it does.

// liveness is the machine beat's state. Invariant: heardAt holds every
// peer (set to the tick this process started at first, a grace period);
// dead names the peers silent for longer than ElectionTicks.
type liveness struct {
	heardAt map[paxos.NodeID]uint64
	dead    map[paxos.NodeID]bool
	// sentAt is the tick this process last sent each peer anything: any
	// envelope is a beat, so a peer sent traffic within the period gets
	// no separate one.
	sentAt      map[paxos.NodeID]uint64
	beatElapsed int
	// scrubElapsed counts ticks since the last scrub turn; scrubCursor is
	// the journal index the next turn looks from.
	scrubElapsed int
	scrubCursor  int
}

// scrubVisitsMax bounds the journals one scrub turn looks at for one due
// a page: the turn costs the same with 10 journals or 100,000.
const scrubVisitsMax = 64

// scrubTurns is the machine's scrub budget for its quiet journals: one
// page every ScrubIntervalTicks for the whole process, handed round-robin
// to the quiet journals it leads (paxos.Node.ScrubTurn), instead of a
// timer per journal. An awake journal paces its own pages; a pass of a
// quiet one is bounded by its size times the machine's quiet journals,
// never by a per-journal clock.
func (h *Host) scrubTurns() {
	if h.tun.StayAwake || len(h.journals) == 0 {
		return
	}
	if h.live.scrubElapsed++; h.live.scrubElapsed < h.tun.ScrubIntervalTicks {
		return
	}
	h.live.scrubElapsed = 0
	for range min(len(h.journals), scrubVisitsMax) {
		h.live.scrubCursor = (h.live.scrubCursor + 1) % len(h.journals)
		j := h.journals[h.live.scrubCursor]
		if j.status != Live || !h.resting(j) || !j.node.IsLeader() {
			continue
		}
		ticks := h.now - j.tickedAt
		j.tickedAt = h.now
		if j.node.ScrubTurn(int(min(ticks, 1<<30))) {
			h.counters.ScrubTurns++
			h.drain(j)
			return
		}
	}
}

// sent notes a Send to peer p.
func (h *Host) sent(p paxos.NodeID) {
	if h.live.sentAt == nil {
		h.live.sentAt = map[paxos.NodeID]uint64{}
	}
	h.live.sentAt[p] = h.now
}

// heard notes an envelope from peer from; a peer found dead that speaks
// again is alive (its journals reboot awake, or its traffic wakes ours).
func (h *Host) heard(from paxos.NodeID) {
	if h.live.heardAt == nil {
		h.live.heardAt, h.live.dead = map[paxos.NodeID]uint64{}, map[paxos.NodeID]bool{}
	}
	h.live.heardAt[from] = h.now
	delete(h.live.dead, from)
}

// tickLiveness runs once per tick: a machine beat to every peer every
// HeartbeatTicks (only with quiescence on), and a peer silent for longer
// than ElectionTicks found dead, waking the quiet journals it leads.
func (h *Host) tickLiveness() {
	if h.tun.StayAwake || len(h.peers) == 0 {
		return
	}
	if h.live.heardAt == nil {
		h.live.heardAt, h.live.dead = map[paxos.NodeID]uint64{}, map[paxos.NodeID]bool{}
	}
	h.live.beatElapsed++
	if h.live.beatElapsed >= h.tun.HeartbeatTicks {
		h.live.beatElapsed = 0
		for _, p := range h.peers {
			if at, ok := h.live.sentAt[p]; ok && h.now-at < uint64(h.tun.HeartbeatTicks) {
				continue // it heard this machine within the period
			}
			h.env.Send(p, []Envelope{{MachineBeat: true}})
			h.sent(p)
			h.counters.MachineBeats++
		}
	}
	for _, p := range h.peers {
		at, ok := h.live.heardAt[p]
		if !ok {
			h.live.heardAt[p] = h.now // grace from the first tick it is known
			continue
		}
		if h.live.dead[p] || h.now-at <= uint64(h.tun.ElectionTicks) {
			continue
		}
		h.live.dead[p] = true
		h.counters.PeersSilent++
		h.wakeLedBy(p)
	}
}

// wakeLedBy wakes every quiet journal whose leader, as its node knows it,
// is peer p.
func (h *Host) wakeLedBy(p paxos.NodeID) {
	for _, j := range h.journals {
		if j.status == Live && j.node.Quiescent() && j.node.LeaderHint() == p {
			j.node.Wake()
			h.counters.WokenByMachine++
			h.drain(j)
		}
	}
}

// resting reports whether live journal j may skip this tick: its node is
// quiet and the host holds no call or read of it that a tick would expire.
func (h *Host) resting(j *journalRT) bool {
	return !h.tun.StayAwake && len(j.calls) == 0 && len(j.reads) == 0 && len(j.order.held) == 0 && j.node.Quiescent()
}
