package host

import (
	"slices"

	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
)

// The process's part in matchmaker-set handovers (core/matchmaker's
// handover.go and reconfigurer.go). The matchmaker role answers handover
// requests through its Ready like any other, so its answers leave only
// once durable. The reconfigurer role drives at most one handover from
// this process: the operator's (CallMatchmakers, answered when it ends) or
// a finisher, started when one of this process's nodes met its set
// stopped with no successor. A chosen set this process learns is handed to
// every one of its nodes (they follow the chain) and reported to the
// environment, which keeps it for the next boot.

// recRT is the reconfigurer role.
type recRT struct {
	r *matchmaker.Reconfigurer
	// call is the operator's call to answer when the handover ends; a
	// finisher has none.
	call    CallID
	hasCall bool
	// want are the operator's members; tries counts the handovers run
	// for the call (handoverTriesMax).
	want  []paxos.NodeID
	tries int
}

// handoverTriesMax bounds the handovers one operator's call runs: a
// machine that had not yet learned the set in force first finishes or
// learns the handover that made it, then moves on from there.
const handoverTriesMax = 3

// MatchmakerSetEnv is an Env that keeps the newest chosen matchmaker set
// this process learned, for its next boot (a restarted node that believed
// only the founding set would have to find the chain through founders
// that may be gone). Optional: without it the set is followed again after
// a restart, from the founders.
type MatchmakerSetEnv interface {
	KeepMatchmakerSet(s paxos.MatchmakerSet)
}

// MatchmakerSet is the newest matchmaker set this process knows: the one
// its nodes follow, or its matchmaker role's (a machine that retired from
// every journal still runs one). Zero on a plain deployment.
func (h *Host) MatchmakerSet() paxos.MatchmakerSet {
	out := h.mmsLearned
	if h.mm != nil {
		if s := h.mm.mm.Generation().Newest(); out.Generation < s.Generation {
			out = s
		}
	}
	for _, j := range h.journals {
		if j.node == nil {
			continue
		}
		if s := j.node.MatchmakerSet(); out.Generation < s.Generation {
			out = s
		}
	}
	return out
}

// Handover reports the reconfigurer this process runs (nil: none), for
// audits and Inspect.
func (h *Host) Handover() *matchmaker.Reconfigurer {
	if h.rec == nil {
		return nil
	}
	return h.rec.r
}

// startHandover opens the operator's handover to c.Matchmakers.Members.
func (h *Host) startHandover(c Call) {
	from := h.MatchmakerSet()
	members := slices.Clone(c.Matchmakers.Members)
	slices.Sort(members)
	next := paxos.MatchmakerSet{Generation: from.Generation + 1, Members: slices.Compact(members)}
	switch {
	case h.stopped:
		h.reply(c.ID, unavailable(c))
		return
	case from.IsZero():
		h.reply(c.ID, Response{Kind: c.Kind, Admin: AdminReply{Refusal: "no_matchmakers", Detail: "this deployment has no matchmakers"}})
		return
	case len(members) == 0 || next.Validate() != nil:
		h.reply(c.ID, Response{Kind: c.Kind, Admin: AdminReply{Refusal: "invalid_configuration", Detail: "a matchmaker set of 1 to 16 distinct nonzero ids"}})
		return
	case h.rec != nil:
		h.reply(c.ID, Response{Kind: c.Kind, Admin: AdminReply{Refusal: "busy", Detail: "a handover driven from this machine is under way"}})
		return
	}
	h.counters.Handovers++
	h.rec = &recRT{r: matchmaker.NewReconfigurer(h.id, from, next.Members, h.handoverOptions()), call: c.ID, hasCall: true,
		want: next.Members, tries: 1}
	h.pumpHandover()
	h.flush()
}

func (h *Host) handoverOptions() matchmaker.ReconfigurerOptions {
	return matchmaker.ReconfigurerOptions{ResendTicks: h.tun.HeartbeatTicks,
		PhaseBudget: h.tun.HandoverPhaseElections * h.tun.ElectionTicks}
}

// stepHandover routes one handover message from node from: a request to
// the matchmaker role, an answer to the reconfigurer. A published outcome
// is also handed to this process's nodes.
func (h *Host) stepHandover(from paxos.NodeID, hv matchmaker.Handover) {
	if hv.From != from || hv.To != h.id {
		h.counters.Dropped++
		return
	}
	switch hv.Kind {
	case matchmaker.HStop, matchmaker.HBootstrap, matchmaker.HPrepare, matchmaker.HAccept, matchmaker.HChosen:
		if hv.Kind == matchmaker.HChosen && hv.Validate() == nil {
			h.learnMatchmakers(hv.Set)
		}
		if h.mm == nil {
			return
		}
		h.mm.mm.StepHandover(hv)
		h.drainMatchmaker()
	default:
		if h.rec != nil {
			h.rec.r.StepHandover(hv)
			h.pumpHandover()
		}
	}
}

// learnMatchmakers hands a chosen set to every node of this process (each
// adopts it if it is newer than its own) and to the environment.
func (h *Host) learnMatchmakers(s paxos.MatchmakerSet) {
	if s.IsZero() || s.Generation <= h.MatchmakerSet().Generation {
		return
	}
	h.mmsLearned = s.Clone()
	for _, j := range h.journals {
		if j.node != nil && j.status == Live {
			j.node.AdoptMatchmakers(s)
			h.drain(j)
		}
	}
	if e, ok := h.env.(MatchmakerSetEnv); ok {
		e.KeepMatchmakerSet(s.Clone())
	}
}

// tickHandover ticks the reconfigurer, republishes a chosen set to the
// members a node found lagging, and starts a finisher when a node met its
// set stopped with no successor. It looks only at the journals drain
// flagged (attend): both findings come from a matchmaker's answer, which
// a node only hears in a Step the host drains, so a walk over every
// journal per tick (a large share of an idle process's CPU with 10,000
// journals) would find nothing more.
func (h *Host) tickHandover() {
	if h.rec != nil {
		h.rec.r.Tick()
		h.pumpHandover()
	}
	if len(h.attention) == 0 {
		return
	}
	told := map[paxos.NodeID]bool{}
	keep := h.attention[:0]
	for _, j := range h.attention {
		if j.node == nil || j.status != Live {
			j.attending = false
			continue
		}
		ids, set := j.node.MatchmakersLagging()
		for _, id := range ids {
			if !told[id] {
				told[id] = true
				h.counters.Republished++
				h.hoOut = append(h.hoOut, matchmaker.Handover{Kind: matchmaker.HChosen, From: h.id, To: id, Generation: set.Generation, Set: set})
			}
		}
		if _, ok := j.node.MatchmakersStopped(); !ok {
			j.attending = false
			continue
		}
		// Stopped until the node adopts a successor set: looked at again
		// each tick, and a finisher starts once none runs.
		keep = append(keep, j)
		if h.rec == nil {
			h.counters.Finishers++
			h.rec = &recRT{r: matchmaker.NewFinisher(h.id, j.node.MatchmakerSet(), h.handoverOptions())}
			h.pumpHandover()
		}
	}
	clear(h.attention[len(keep):])
	h.attention = keep
}

// attend flags journal j for tickHandover when its node found a member
// lagging or its set stopped (called from drain).
func (h *Host) attend(j *journalRT) {
	if j.attending || j.status != Live || !j.node.MatchmakersNeedDriver() {
		return
	}
	j.attending = true
	h.attention = append(h.attention, j)
}

// pumpHandover queues what the reconfigurer sends and settles its
// outcome: a chosen set is learned here, the operator is answered.
func (h *Host) pumpHandover() {
	r := h.rec
	h.hoOut = append(h.hoOut, r.r.Messages()...)
	if s := r.r.Chosen(); !s.IsZero() {
		h.learnMatchmakers(s)
	}
	switch r.r.Step() {
	case matchmaker.RDone, matchmaker.RAbandoned:
	default:
		return
	}
	h.rec = nil
	if chosen := r.r.Chosen(); r.hasCall && !chosen.IsZero() && !slices.Equal(chosen.Members, r.want) && r.tries < handoverTriesMax {
		// The set this process knew was replaced already (it learned the
		// outcome of another handover, or finished it): move on from the
		// set now in force to the one asked for.
		h.counters.HandoversChosen++
		from := h.MatchmakerSet()
		h.counters.Handovers++
		h.rec = &recRT{r: matchmaker.NewReconfigurer(h.id, from, r.want, h.handoverOptions()), call: r.call, hasCall: true,
			want: r.want, tries: r.tries + 1}
		h.pumpHandover()
		return
	}
	if r.r.Chosen().IsZero() {
		h.counters.HandoversAbandoned++
	} else {
		h.counters.HandoversChosen++
	}
	if !r.hasCall {
		return
	}
	reply := AdminReply{Chosen: r.r.Chosen(), Activated: r.r.Activated()}
	if reply.Chosen.IsZero() {
		reply.Refusal, reply.Detail = "abandoned", "the handover made no progress within its budget; ask again"
	}
	h.reply(r.call, Response{Kind: CallMatchmakers, Admin: reply})
}

// flushHandovers sends the queued handover messages: to this process's
// own matchmaker role through the loopback (a reconfigurer on a machine
// that runs a member of the set), else to their peer.
func (h *Host) flushHandovers() {
	for round := 0; len(h.hoOut) > 0 && round < loopbackRoundsMax; round++ {
		out := h.hoOut
		h.hoOut = nil
		for i := range out {
			hv := out[i]
			if hv.To == h.id {
				h.stepHandover(h.id, hv)
				continue
			}
			h.env.Send(hv.To, []Envelope{{Handover: &hv}})
			h.sent(hv.To)
		}
	}
}
