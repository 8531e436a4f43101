package sim

import (
	"slices"

	"github.com/parosdb/paros/core/paxos"
)

// This file turns a run's counters into gates: collect adds a node's core
// counters to the run's counts, gateCounts fires the gates counts prove,
// and GateNames lists every gate a sweep requires.

// collect adds a live node's core counters to the run's counts before the
// node goes away (crash) or at the end.
func (w *World) collect(p *proc) {
	if p.h == nil || !p.up {
		return
	}
	for _, j := range w.shape.Journals {
		if n := p.h.Node(j.ID); n != nil {
			c := n.Counters()
			w.counts.Elections += c.Elections
			w.counts.Quiesced += c.Quiesced
			w.counts.Woken += c.Woken
			w.counts.GapFills += c.GapFills
			w.counts.TrimJumps += c.TrimJumps
			w.counts.Truncations += c.Truncations
			w.counts.CatchUps += c.CatchUps
			w.counts.Blocked += c.CtrlWaits
			w.counts.CheckQuorum += c.CheckQuorumDowns
			w.counts.Evicted += c.Evicted
			for i, v := range c.ColdReads {
				w.counts.ColdReads[i] += v
			}
			w.counts.Probes += c.Probes
			w.counts.StaleConfigurations += c.StaleConfigurations
			w.counts.MatchRefusals += c.MatchRefusals
			w.counts.ReconfiguredElections += c.ReconfiguredElections
			w.counts.ResignedRemoved += c.ResignedRemoved
			w.counts.RemovedPromises += c.RemovedPromises
			w.counts.JoinerVotes += c.JoinerVotes
			w.counts.Collections += c.Collections
			w.counts.ReadsAbandoned += c.ReadsAbandoned
			w.counts.ReadsWidened += c.ReadsWidened
			w.counts.Reasked += c.Reasked
			w.counts.OwnMatchmaker += c.OwnMatchmaker
			w.counts.SetsAdopted += c.MatchmakerSetsAdopted
			w.counts.SetsStopped += c.MatchmakersStopped
			w.counts.CtrlReproposed += c.CtrlReproposed
			w.counts.CtrlNoops += c.CtrlNoops
			w.counts.CtrlResigned += c.CtrlResigned
			w.counts.CtrlUnrecoverable += c.CtrlUnrecoverable
			w.counts.RepairedFromMemory += c.RepairedFromMemory
			w.counts.RepairedFromPeer += c.RepairedFromPeer
			w.counts.ScrubPages += c.ScrubPages
			w.counts.ScrubPasses += c.ScrubPasses
			w.counts.ScrubResumed += c.ScrubResumed
			w.counts.Relinquished += c.Relinquished
			w.counts.Inherited += c.Inherited
			w.counts.RelinquishRefused += c.RelinquishRefused
			w.counts.InheritedDecided += c.InheritedDecided
			w.counts.HandoffResigned += c.HandoffResigned
			w.counts.Reelections += c.Reelections
			w.counts.ProxyDelegated += c.ProxyDelegated
			w.counts.ProxyDecided += c.ProxyDecided
			w.counts.ProxyTakenBack += c.ProxyTakenBack
			w.counts.ProxyLearned += c.ProxyLearned
			w.counts.ProxyBypassed += c.ProxyBypassed
			w.counts.ProxyRecovered += c.ProxyRecovered
			w.counts.RoleRefused += c.RoleRefused
			w.counts.NotLeading += c.NotLeading
			w.counts.HandoffNotices += c.HandoffNotices
			w.counts.SuccessorsAssumed += c.SuccessorsAssumed
			w.counts.NoticesAnswered += c.NoticesAnswered
			if p.replica() {
				w.counts.ReplicaTrimJumps += c.TrimJumps
				w.counts.ReplicaCatchUps += c.CatchUps
				w.counts.ReplicaPushes += c.ReplicaPushes
				w.counts.ReplicaReads += c.ReadsServed
			}
			if c.ScrubMismatches > 0 {
				w.audit.violation("scrub: two copies of one slot under one ballot never differ", "n%d %s: %v", p.id, short(j.ID), n.ScrubMismatches())
			}
		}
	}
	w.counts.Quarantines += p.h.Counters().Quarantines
	w.counts.WokenByMachine += p.h.Counters().WokenByMachine
	w.counts.CampaignsHeld += p.h.Counters().CampaignsHeld
	w.counts.Joined += p.h.Counters().Joined
	w.counts.Retired += p.h.Counters().Retired
	w.counts.HandedOnAgain += p.h.Counters().HandedOnAgain
	if mm := p.h.Matchmaker(); mm != nil {
		w.counts.Retracted += mm.Counters().Retracted
		w.counts.HandoverStops += mm.Counters().Stops
		w.counts.Activations += mm.Counters().Activations
		w.counts.HandoverLinks += mm.Counters().Links
	}
	w.counts.Finishers += p.h.Counters().Finishers
	w.counts.HandoversChosen += p.h.Counters().HandoversChosen
	if n := p.h.Counters().MatchmakerFaults; n > 0 {
		w.counts.Quarantines += n
	}
	if n := p.h.Counters().ColdReadFaults; n > 0 && !w.rotRunningPlanted(p) {
		// The simulated disk only damages the records of a crashed node,
		// which the boot scan then classifies: a live node's cold read
		// fails only if it evicted a record that was not durable.
		w.audit.violation("storage: an evicted record is always on disk", "node %d: %d cold reads failed", p.id, n)
	}
	if n := p.h.Counters().ContractFaults; n > 0 {
		// Simulated peers are honest: two values at one (slot, ballot) or a
		// chosen value contradicting a higher-ballot record is a bug.
		w.audit.violation("paxos: one proposer proposes one value per slot and ballot", "node %d: %d contract faults", p.id, n)
	}
}

func (w *World) gateCounts(r *Result) {
	c := r.Counts
	set := func(name string, v uint64) {
		if v > 0 {
			r.Gates[name] += int(v)
		}
	}
	set("a leader is elected", c.Elections)
	set("quiescence: a settled leadership falls quiet", c.Quiesced)
	set("quiescence: a quiet node is woken", c.Woken)
	set("quiescence: a silent leader machine wakes its quiet journals", c.WokenByMachine)
	set("elections: a due campaign waits for the machine's campaign budget", c.CampaignsHeld)
	set("elections: an eager first campaign asks a silent member again", c.Reasked)
	if c.Elections >= 2 && r.Gates["every node converges at the end of the tail"] > 0 {
		r.Gates["leadership turns over and the cluster recovers"]++
	}
	set("a new leader gap-fills a hole", c.GapFills)
	set("a below-floor node recovers by jumping to a peer's trim point", c.TrimJumps)
	set("a decided truncation drops a prefix", c.Truncations)
	set("a lagging node catches up", c.CatchUps)
	set("a crash loses unsynced writes", c.CrashesUnsynced)
	set("a process dies after sync, before send", c.CrashesAfterSync)
	set("a storage fault quarantines a journal", c.Quarantines)
	set("a leader without an ack quorum steps down (CheckQuorum)", c.CheckQuorum)
	set("applied records leave memory (the hot window)", c.Evicted)
	set("a lagging peer catches up from evicted records", c.ColdReads[paxos.ColdCatchUp])
	set("a Promise page reports evicted records", c.ColdReads[paxos.ColdPromise])
	set("a read page is served from evicted records", c.ColdReads[paxos.ColdPage])
	set("calls read together are handed to the host in one turn (OnCalls)", c.CallsBatched)
	set("a boot folds its log back from the store in pages (cold prefix)", c.ColdReads[paxos.ColdBoot])
	set("a retry of an evicted write is judged from the store", c.ColdReads[paxos.ColdDedup])
	set("an Accept for an evicted slot is voted from the store", c.ColdReads[paxos.ColdVote])
	set("matchmaking: a rebooted node probes for its configuration", c.Probes)
	set("reconfiguration: an ordinary campaign adopts a newer effective configuration (StaleConfiguration)", c.StaleConfigurations)
	set("reconfiguration: a leader is elected under a reconfigured acceptor set", c.ReconfiguredElections)
	set("reconfiguration: a joiner votes", c.JoinerVotes)
	set("reconfiguration: a removed node answers Phase 1", c.RemovedPromises)
	set("gc: a leader's watermark becomes effective at a matchmaker quorum", c.Collections)
	set("reconfiguration: a quorum read is abandoned on a newer configuration", c.ReadsAbandoned)
	set("quorum read: a grid read its row did not settle asks every member", c.ReadsWidened)
	set("reconfiguration: a wiped node is reconfigured away", c.ReplacedDead)
	set("matchmaking: a candidate hears the matchmaker of its own machine", c.OwnMatchmaker)
	set("matchmaking: a matchmaker retracts an abandoned registration", c.Retracted)
	set("matchmakers: the operator's handover chose the next generation", c.HandoversDone)
	set("matchmakers: a stop froze a generation", c.HandoverStops)
	set("matchmakers: a member activated its bootstrap", c.Activations)
	set("matchmakers: a replaced member records the chain link", c.HandoverLinks)
	set("matchmakers: a node followed the chain to a chosen set", c.SetsAdopted)
	set("matchmakers: a node met its set stopped with no successor", c.SetsStopped)
	set("matchmakers: a process finished a handover it met stopped", c.Finishers)
	set("ctrl: a leader re-proposes a value over a damaged record (case 1)", c.CtrlReproposed)
	set("ctrl: a leader decides a Noop over a damaged record (case 2)", c.CtrlNoops)
	set("ctrl: a leader waits for more answers about a damaged record (case 3)", c.Blocked)
	set("ctrl: a leader waiting on a damaged record resigns after its budget", c.CtrlResigned)
	set("handoff: an inherited leadership short of its fence resigns after its budget", c.HandoffResigned)
	set("ctrl: a damaged chosen record is repaired from a peer's copy", c.RepairedFromPeer)
	set("scrub: a damaged record is rewritten from the value in memory", c.RepairedFromMemory)
	set("scrub: a pass over the retained log completes", c.ScrubPasses)
	set("scrub: a new scrubber resumes from the durable cursor", c.ScrubResumed)
	set("replica: a replica below the floor jumps to the trim point", c.ReplicaTrimJumps)
	set("replica: a replica heals a gap by catch-up", c.ReplicaCatchUps)
	set("replica: a replica learns the values a leader pushed", c.ReplicaPushes)
	set("replica: the operator changes the replica list at run time", c.ReplicaChanges)
	set("handoff: a leader hands its leadership on", c.Relinquished)
	set("handoff: a successor installs a handed-on authority", c.Inherited)
	set("handoff: a successor continues Phase 2 without a Phase 1", c.InheritedDecided)
	set("handoff: a replayed or stale Relinquish is refused", c.RelinquishRefused)
	set("handoff: a graceful restart hands the leader's journals on", c.GracefulHandoffs)
	set("handoff: the operator moves a journal's leader (Admin.Handoff)", c.OperatorHandoffs)
	set("handoff: a successor re-elects itself and hands on again", c.HandedOnAgain)
	set("proxy: a leader delegates a round to a proxy", c.ProxyDelegated)
	set("proxy: a leader decides a round from a proxy's Commit", c.ProxyDecided)
	set("proxy: a leader takes a delegated round back", c.ProxyTakenBack)
	set("proxy: a proxy evicts a round nobody answers", c.ProxyEvicted)
	set("proxy: an acceptor learns a slot from a proxy's Commit", c.ProxyLearned)
	set("proxy: a proxy crashes and reboots empty", c.ProxyCrashes)
	set("proxy: a suspect proxy's round runs on the leader", c.ProxyBypassed)
	set("proxy: a suspect proxy answers a probe", c.ProxyRecovered)
	set("proxy: the operator changes the proxy list at run time", c.ProxyChanges)
	set("roles: a message its sender's role never sends is dropped", c.RoleRefused)
	set("roles: an Accept, Commit or Heartbeat at a ballot its sender does not lead is dropped", c.NotLeading)
	set("handoff: an acceptor hears the successor once the owner's notice named it", c.HandoffNotices)
	set("handoff: a rebooted owner binds the first successor it hears", c.SuccessorsAssumed)
	set("handoff: an owner answers an acceptor's question with its notice", c.NoticesAnswered)
}

// GateNames lists the gates a sweep requires, in a stable order.
func GateNames() []string {
	g := []string{
		"a leader is elected",
		// Quiescence (core/paxos/node_quiet.go, host/quiet.go).
		"liveness: an idle journal has a leader at the end of the tail",
		"many journals: every journal of a cell of a few hundred has a leader at the end of the tail",
		"elections: a due campaign waits for the machine's campaign budget",
		"quiescence: the quiet journals of a killed leader machine are led again",
		"quiescence: a settled leadership falls quiet",
		"quiescence: a quiet node is woken",
		"quiescence: a silent leader machine wakes its quiet journals",
		"leadership turns over and the cluster recovers",
		"a new leader gap-fills a hole",
		"a retried write is acked from the log",
		"a superseded writer's write is refused",
		"a below-floor node recovers by jumping to a peer's trim point",
		"journal read: a read below the trim point is refused",
		"journal: a journal keeps committing while a sibling on its nodes is held",
		"journal: a tenant's journals keep committing while its control journal is held",
		// Journals created at run time (create.go).
		"control plane: a member formats a journal created at run time",
		"elections: an eager first campaign asks a silent member again",
		// The control plane (registry.go, registry_oracle.go).
		"registry: a coordinator checkpoints the registry",
		"registry: a folder verifies a checkpoint against its own fold",
		"registry: a folder restores the registry from a checkpoint",
		"registry: a machine joining from an empty disk folds the registry from a checkpoint",
		"registry: two folds of the registry agree",
		"registry: a request is written again, as a retry after an ambiguous answer",
		"registry: a repeated request reads back its outcome",
		"registry: a deleted journal is sealed",
		"registry: a deleted journal is tombstoned",
		"a writer learns its journal was sealed",
		"journal: a claim on a sealed journal is refused",
		"every node converges at the end of the tail",
		"a SetLeader wins",
		"a write is accepted",
		"a decided truncation drops a prefix",
		"a crash loses unsynced writes",
		"a process dies after sync, before send",
		"a storage fault quarantines a journal",
		"a restart under an edited configuration is refused",
		"a wiped node's boot is refused as amnesia",
		"a write of other bytes at a taken position is refused",
		"applied records leave memory (the hot window)",
		"a lagging peer catches up from evicted records",
		"a read page is served from evicted records",
		"a retry of an evicted write is judged from the store",
		"calls read together are handed to the host in one turn (OnCalls)",
		"a boot folds its log back from the store in pages (cold prefix)",
		// The shipped client library's recovery paths (pipe.go, workload.go).
		"the client pipeline resends a write identically",
		"the client pipeline resends the writes of a broken stream",
		"the client pipeline coalesces appends into one write",
		"the client pipeline holds a write refused while earlier ones are out",
		"a client Reader reports a gap and reads on after it",
		"an ambiguous claim is found to have won",
		// Matchmaker Paxos: reconfiguration, GC and retirement (reconfig.go,
		// matchmakers.go, audit_config.go).
		"matchmaking: a rebooted node probes for its configuration",
		"reconfiguration: an ordinary campaign adopts a newer effective configuration (StaleConfiguration)",
		"reconfiguration: a leader is elected under a reconfigured acceptor set",
		"reconfiguration: a joiner votes",
		"reconfiguration: a removed node answers Phase 1",
		"reconfiguration: a quorum read is abandoned on a newer configuration",
		"quorum read: a grid read its row did not settle asks every member",
		"handoff: an inherited leadership short of its fence resigns after its budget",
		"reconfiguration: a wiped node is reconfigured away",
		"gc: a leader's watermark becomes effective at a matchmaker quorum",
		"gc: a retire or reconfiguration without its evidence is refused",
		"gc: a retired node's journal store is deleted",
		"a wiped matchmaker's boot is refused as amnesia",
		"matchmaking: a candidate hears the matchmaker of its own machine",
		"matchmaking: a campaign retracts the registrations its candidate abandoned",
		"matchmaking: a node that will not campaign retracts the registrations it abandoned",
		"matchmaking: a matchmaker retracts an abandoned registration",
		"a matchmaker restarted under an edited configuration is refused",
		// Matchmaker-set generations (handover.go).
		"matchmakers: the operator's handover chose the next generation",
		"matchmakers: a stop froze a generation",
		"matchmakers: a member activated its bootstrap",
		"matchmakers: a replaced member records the chain link",
		"matchmakers: a node followed the chain to a chosen set",
		"matchmakers: a node met its set stopped with no successor",
		"matchmakers: a process finished a handover it met stopped",
		// CTRL and the scrubber (rot.go).
		"ctrl: a leader re-proposes a value over a damaged record (case 1)",
		"ctrl: a leader decides a Noop over a damaged record (case 2)",
		"ctrl: a leader waits for more answers about a damaged record (case 3)",
		"ctrl: a damaged chosen record is repaired from a peer's copy",
		"ctrl: a loss beyond the budget halts the journal and names the slot",
		"scrub: a damaged record is rewritten from the value in memory",
		"scrub: the scrubber repaired a record no client read",
		"scrub: a pass over the retained log completes",
		"scrub: a new scrubber resumes from the durable cursor",
		// The replica tier (replica.go).
		"replica: a replica below the floor jumps to the trim point",
		"replica: a replica heals a gap by catch-up",
		"replica: a replica learns the values a leader pushed",
		"replica: a replica served a quorum read",
		"replica: a replica served a journal read",
		"replica: the reply owner of an acknowledged slot applied it",
		"replica: the operator changes the replica list at run time",
		"replica: a replica the operator added back catches up",
		"replica: a replica machine joins a running cell from an empty disk",
		"replica: a replica that joined from an empty disk catches up",
		"replica: every listed replica hears its journal's leader at the end of the tail",
		// Cooperative handoff (handoff.go).
		"handoff: a leader hands its leadership on",
		"handoff: a successor installs a handed-on authority",
		"handoff: a successor continues Phase 2 without a Phase 1",
		"handoff: a replayed or stale Relinquish is refused",
		"handoff: a graceful restart hands the leader's journals on",
		"handoff: the operator moves a journal's leader (Admin.Handoff)",
		"handoff: a successor re-elects itself and hands on again",
		// Proxy leaders (proxy.go).
		"proxy: a leader delegates a round to a proxy",
		"proxy: a leader decides a round from a proxy's Commit",
		"proxy: a leader takes a delegated round back",
		"proxy: a proxy evicts a round nobody answers",
		"proxy: an acceptor learns a slot from a proxy's Commit",
		"proxy: a proxy crashes and reboots empty",
		"proxy: a proxy announces a slot a durable quorum accepted",
		"proxy: a suspect proxy's round runs on the leader",
		"proxy: a suspect proxy answers a probe",
		"proxy: the operator changes the proxy list at run time",
		// Roles (forgery.go).
		"roles: a message its sender's role never sends is dropped",
		"roles: an Accept, Commit or Heartbeat at a ballot its sender does not lead is dropped",
		"handoff: an acceptor hears the successor once the owner's notice named it",
		"handoff: a rebooted owner binds the first successor it hears",
		"handoff: an owner answers an acceptor's question with its notice",
	}
	g = append(g, formationGates...)
	slices.Sort(g)
	return g
}
