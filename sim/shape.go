package sim

import (
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/host"
)

// Shape is one seed's world, drawn before anything runs (swarm testing).
type Shape struct {
	Nodes  []paxos.NodeID
	Quorum quorum.Spec
	// Matchmakers is the matchmaker process group (empty: the plain
	// deployment, whose membership never changes). Spares are machines
	// that serve no journal until a reconfiguration adds them. With
	// matchmakers the operator reconfigures and retires during the chaos
	// window (reconfig.go).
	Matchmakers []paxos.NodeID
	Spares      []paxos.NodeID
	// Handovers: the operator replaces the matchmaker set during the
	// chaos (handover.go); MatchmakerSpares are the fresh matchmaker
	// machines (ids MatchmakerSpareIDBase+rank) a handover may name.
	Handovers        bool
	MatchmakerSpares []paxos.NodeID
	// Replicas is the replica tier (replica.go): 0–2 replica processes
	// (ids ReplicaIDBase+rank) that learn every journal and serve reads,
	// with their own attrition and disks outside the rot budget.
	Replicas []paxos.NodeID
	// Proxies are the proxy leaders (proxy.go): 0–3 proxy processes (ids
	// ProxyIDBase+rank) every journal delegates its settled rounds to.
	Proxies  []paxos.NodeID
	Journals []JournalShape
	Tun      host.Tunables
	// Network: latency range, drop and duplicate percent.
	LatencyMin, LatencyMax int64
	DropPct, DupPct        int
	// SlowPct of Delivers are held back 20–400 ms: a deposed leader's
	// Accepts and old Promises arrive long after the world moved on.
	SlowPct int
	// Disk latency range.
	DiskMin, DiskMax int64
	// Faults enabled for this seed.
	Crashes, Partitions, Pauses, Rot, Wipe, EditConfig, DiskFaults, LongOutage bool
	// Rot families (rot.go): which record rots, how many copies within
	// the budget (2: a double fault), rot under a running machine, a
	// correlated outage with planned losses, and a loss beyond the budget
	// (every copy of one chosen value; plain seeds only).
	RotPick                          RotPick
	RotBudget                        int
	RotRunning, RotOutage, RotBeyond bool
	// StaleLeader: a paused leader wakes before it hears of its successor.
	StaleLeader bool
	// Handoffs: the operator restarts the leader's machine gracefully (it
	// hands its journals on first), and old Relinquish messages are
	// replayed (handoff.go).
	Handoffs bool
	// Forgeries: impostors with real credentials (a replica, a proxy, a
	// member, a machine never admitted) send forged Accepts and Commits
	// at a live leader's ballot (forgery.go).
	Forgeries bool
	// CallBatchUs > 0: a server reads client calls like a WriteStream's
	// submitter, handing the host (OnCalls) every call that arrived within
	// that many microseconds of the first, in arrival order.
	CallBatchUs     int64
	ChaosMs, TailMs int64
	// Hold: for a window of the chaos (HoldAtMs, for HoldMs) the network
	// drops every envelope of one journal (Journals[HoldJournal]) to and
	// from every node, while its siblings keep committing (hold.go).
	Hold             bool
	HoldJournal      int
	HoldAtMs, HoldMs int64
	// LateReplicaAtMs > 0: the last of Replicas joins the running cell
	// from an empty disk at that time (replica_join.go).
	LateReplicaAtMs int64
	// Control: Journals[ControlJournal] is the cell's registry, written by
	// rival coordinators and folded by its readers (registry.go); Victim
	// (-1: none) is the data journal they register and then delete.
	Control        bool
	ControlJournal int
	Victim         int
}

// JournalShape is one journal and its clients.
type JournalShape struct {
	ID      journal.ID
	Mode    journal.WriterMode
	Readers int
	// Rival: a second owner contends for a single-writer journal's fence.
	Rival bool
	// Control: the cell's registry (Shape.Control).
	Control bool
	// CreatedAtMs > 0: the journal is created at run time, then (create.go).
	CreatedAtMs int64
	// Idle: no client ever writes or reads it. It is elected, falls quiet
	// (unless the seed stays awake), and must get a leader back on its
	// own when the chaos takes its leader away (audit.everyJournalLed).
	Idle bool
}

// DrawShape draws the world of a seed from the world's PRNG.
func drawShape(g rng, o Options) Shape {
	var s Shape
	k := g.intn(10)
	if o.Nodes > 0 {
		k = 0 // a forced node count means a plain majority world
	}
	switch {
	case k < 5:
		n := 3 + g.intn(3)
		if o.Nodes > 0 {
			n = o.Nodes
		}
		s.Nodes = nodeIDs(n)
		s.Quorum = quorum.Spec{Kind: quorum.KindMajority}
	case k < 7:
		n := 4 + g.intn(2)
		q2 := 2 + g.intn(n-2) // q1 = n - q2 + 1 keeps q1 + q2 > n
		s.Nodes = nodeIDs(n)
		s.Quorum = quorum.Spec{Kind: quorum.KindFlexible, Q1: n - q2 + 1, Q2: q2}
	default:
		dims := [][2]int{{2, 2}, {2, 3}, {3, 2}}[g.intn(3)]
		s.Nodes = nodeIDs(dims[0] * dims[1])
		s.Quorum = quorum.Spec{Kind: quorum.KindGrid, Rows: dims[0], Cols: dims[1]}
	}
	if o.Nodes > 0 && s.Quorum.Kind == quorum.KindMajority {
		s.Nodes = nodeIDs(o.Nodes)
	}
	if o.Nodes == 0 && !o.Plain && g.pct(50) {
		next := paxos.NodeID(len(s.Nodes) + 1)
		for range 1 + g.intn(2) {
			s.Spares = append(s.Spares, next)
			next++
		}
		k := 3 + g.intn(3)
		if g.pct(50) && len(s.Nodes) >= 3 {
			// Colocated, as a cell deploys them: the first founding
			// machines run a matchmaker beside their journals, and a
			// candidate's Match to its own machine goes through the
			// host's loopback.
			s.Matchmakers = slices.Clone(s.Nodes[:min(k, len(s.Nodes))])
		} else {
			for range k {
				s.Matchmakers = append(s.Matchmakers, next)
				next++
			}
		}
	}
	nj := 1 + g.intn(3)
	for i := range nj {
		mode := journal.ModeSingle
		if i > 0 && g.pct(50) {
			mode = journal.ModeMulti
		}
		s.Journals = append(s.Journals, JournalShape{
			ID: journal.ID{Tenant: 0x7e0 + uint64(i%2), Journal: 0x100 + uint64(i)}, Mode: mode, Readers: 1 + g.intn(2),
			Rival: mode == journal.ModeSingle && g.pct(40)})
	}
	election := 5 + g.intn(10)
	s.Tun = host.Tunables{
		TickMs:           10,
		ElectionTicks:    election,
		HeartbeatTicks:   1 + g.intn(max(1, election/3)),
		LaneMessagesMax:  16 + g.intn(512),
		DeliveryBatch:    8 + g.intn(64),
		FlushDeliversMax: 1 + g.intn(4),
		QuarantineTicks:  1 + g.intn(40),
		ReadRetryTicks:   5 + g.intn(20),
		CallTimeoutTicks: 20 + g.intn(80),
		PipelineWindow:   1 + g.intn(64),
		ProposeQueueMax:  64 + g.intn(512),
		PromiseBatch:     1 + g.intn(8),
		CatchUpBatch:     1 + g.intn(32),
		ReadRecordsMax:   1 + g.intn(16),
		WaitMsMax:        g.intn(300),
	}
	// Most seeds keep a tiny hot window, so catch-up, Phase 1, reads and
	// duplicate checks read evicted records back from the store all the
	// time; the rest keep the production window.
	if g.pct(75) {
		s.Tun.HotSlotsMax = 1 + g.intn(48)
		s.Tun.HotBytesMax = 1 + g.intn(16<<10)
	}
	s.LatencyMin = int64(200+g.intn(800)) * us
	s.LatencyMax = s.LatencyMin + int64(g.intn(5000))*us
	s.DropPct = g.intn(4)
	s.DupPct = g.intn(3)
	if g.pct(50) {
		s.SlowPct = 1 + g.intn(5)
	}
	s.DiskMin = int64(100+g.intn(500)) * us
	s.DiskMax = s.DiskMin + int64(g.intn(3000))*us
	s.Crashes = g.pct(80)
	s.Partitions = g.pct(60)
	s.Pauses = g.pct(40)
	s.StaleLeader = s.Pauses && g.pct(60)
	_ = g.pct(25) // was the rot draw (kept: it keeps the later draws)
	// A wipe needs a majority of four or more to stay live on a plain
	// deployment; with matchmakers the operator replaces the wiped node
	// by reconfiguration, so any system may lose one.
	s.Wipe = g.pct(10) && s.Quorum.Kind == quorum.KindMajority && len(s.Nodes) >= 4
	if len(s.Matchmakers) > 0 {
		s.Wipe = g.pct(30)
	}
	s.EditConfig = g.pct(15)
	s.DiskFaults = g.pct(25)
	s.LongOutage = g.pct(40)
	if g.pct(50) {
		s.CallBatchUs = int64(1 + g.intn(2000))
	}
	s.ChaosMs = o.ChaosMs
	s.TailMs = o.TailMs
	// The scrubber runs fast enough for passes to finish inside a run.
	s.Tun.ScrubPageSlots = 1 + g.intn(64)
	s.Tun.ScrubIntervalTicks = 1 + g.intn(4)
	s.Tun.ScrubPassTicks = paxos.ScrubPassTicksMin + g.intn(200)
	s.Rot = g.pct(40)
	s.RotPick = RotPick(g.intn(3))
	s.RotBudget = 1 + g.intn(2)
	s.RotRunning = g.pct(60)
	s.RotOutage = g.pct(15)
	s.RotBeyond = s.RotOutage && len(s.Matchmakers) == 0 && g.pct(40)
	for i := range g.intn(3) {
		s.Replicas = append(s.Replicas, ReplicaIDBase+paxos.NodeID(i))
	}
	s.Handoffs = g.pct(50)
	for i := range g.intn(4) {
		s.Proxies = append(s.Proxies, ProxyIDBase+paxos.NodeID(i))
	}
	s.Forgeries = g.pct(50)
	// A catch-up window of one page is the slowest a lagging node can be
	// fed; drawn last, so the draws above keep their seeds.
	s.Tun.CatchUpPages = 1 + g.intn(8)
	// The recovery budgets are born buggified: a take-back, an eviction or
	// a handoff resignation after one beat or election must be as correct
	// as after the production budget, only slower or busier.
	s.Tun.ProxyTakeBackBeats = 1 + g.intn(30)
	s.Tun.ProxyEvictAfter = 1 + g.intn(60)
	s.Tun.HandoffFenceElections = 1 + g.intn(4)
	if len(s.Matchmakers) > 0 && g.pct(60) {
		s.Handovers = true
		for i := range 1 + g.intn(3) {
			s.MatchmakerSpares = append(s.MatchmakerSpares, MatchmakerSpareIDBase+paxos.NodeID(i))
		}
		s.Tun.HandoverPhaseElections = 1 + g.intn(6)
	}
	// Most seeds let settled journals fall quiet (the production default);
	// a quarter keep every journal awake, plain Multi-Paxos timers.
	s.Tun.StayAwake = g.pct(25)
	// Many seeds add idle journals beside the busy ones: a cell holds many
	// journals, most of them quiet.
	// About one in ten of those carries a few hundred: formation, the
	// election burst, the machine beat and the quiet-leader kill at the
	// scale where a walk over every journal per tick would show. Only
	// where they can fall quiet (no replica, no proxy, quiescence on), as
	// a cell of many journals runs: a few hundred journals awake for the
	// whole seed cost the sweep seconds of simulation each.
	if g.pct(40) {
		idle := 1 + g.intn(8)
		if g.pct(30) && !s.Tun.StayAwake && len(s.Replicas) == 0 && len(s.Proxies) == 0 {
			idle = 50 + g.intn(251)
		}
		for i := range idle {
			s.Journals = append(s.Journals, JournalShape{ID: journal.ID{Tenant: 0x7e2, Journal: 0x200 + uint64(i)},
				Mode: journal.ModeMulti, Idle: true})
		}
	}
	// A third of the seeds with two journals or more hold one of them on
	// every node for a while (hold.go). Drawn last, so the draws above
	// keep their seeds.
	if g.pct(33) && len(s.Journals) >= 2 && s.ChaosMs >= holdChaosMsMin {
		s.Hold = true
		s.HoldJournal = g.intn(len(s.Journals))
		s.HoldMs = g.between(holdMsMin, holdMsMax)
		s.HoldAtMs = g.between(holdLeadMs+100, s.ChaosMs-s.HoldMs-100)
	}
	// Seeds of many journals shrink the machine's campaign budget
	// (production 256) to 8–31, so that their formation and the journals
	// a killed machine led wait for it (host/campaigns.go). A budget far
	// below the journals that need a leader at once is not drawn: a held
	// campaign loses the stagger of the ranked timeouts, and one or two
	// slots per machine for nine journals let two members' campaigns for
	// one journal pre-empt each other for seconds (seed 539).
	if len(s.Journals) >= manyJournals && g.pct(50) {
		s.Tun.CampaignsMax = 8 + g.intn(24)
	}
	drawControl(g, &s)
	drawCreated(g, &s)
	drawLateReplica(g, &s)
	return s
}

// drawCreated adds, on a third of the seeds, a journal created at run time
// during the chaos (create.go). Drawn last, so the draws above keep their
// seeds.
func drawCreated(g rng, s *Shape) {
	if !g.pct(33) || s.ChaosMs < 1000 {
		return
	}
	mode := journal.ModeSingle
	if g.pct(30) {
		mode = journal.ModeMulti
	}
	s.Journals = append(s.Journals, JournalShape{ID: journal.ID{Tenant: 0x7e4, Journal: 0x400}, Mode: mode, Readers: 1 + g.intn(2),
		Rival: mode == journal.ModeSingle && g.pct(30), CreatedAtMs: g.between(s.ChaosMs/10, s.ChaosMs*6/10)})
}

// drawControl draws the control plane (registry.go) on a third of the
// seeds: a registry journal, and the data journal it deletes. Drawn last,
// so the draws above keep their seeds; on a seed that holds a journal,
// half the time the registry is the one held, and the tenant's journals
// must keep committing.
func drawControl(g rng, s *Shape) {
	s.Victim = -1
	if !g.pct(35) {
		return
	}
	s.Control = true
	s.ControlJournal = len(s.Journals)
	s.Journals = append(s.Journals, JournalShape{ID: journal.ID{Tenant: 0x7e3, Journal: 0x300}, Mode: journal.ModeSingle,
		Readers: 2 + g.intn(2), Rival: true, Control: true})
	if g.pct(70) {
		s.Victim = 0 // always single-writer and busy
	}
	if s.Hold && g.pct(50) {
		s.HoldJournal = s.ControlJournal
	}
}

// ReplicaIDBase is the first replica process id: the replica of rank r is
// node 1000+r, well above every member's id.
const ReplicaIDBase paxos.NodeID = 1000

// Servers are the machines that may serve a journal: the founding nodes
// and the spares.
func (s Shape) Servers() []paxos.NodeID { return append(slices.Clone(s.Nodes), s.Spares...) }

// Procs is every process of the world, in id order (a colocated
// matchmaker is its machine's process).
func (s Shape) Procs() []paxos.NodeID {
	out := s.Servers()
	for _, id := range s.Matchmakers {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	out = append(out, s.MatchmakerSpares...)
	return append(out, s.Replicas...)
}

func nodeIDs(n int) []paxos.NodeID {
	out := make([]paxos.NodeID, n)
	for i := range out {
		out[i] = paxos.NodeID(i + 1)
	}
	return out
}

func (s Shape) String() string {
	q := s.Quorum.Kind.String()
	switch s.Quorum.Kind {
	case quorum.KindFlexible:
		q = fmt.Sprintf("flexible(%d,%d)", s.Quorum.Q1, s.Quorum.Q2)
	case quorum.KindGrid:
		q = fmt.Sprintf("grid(%dx%d)", s.Quorum.Rows, s.Quorum.Cols)
	}
	modes, idle := "", 0
	for _, j := range s.Journals {
		if j.Idle {
			idle++
			continue
		}
		modes += j.Mode.String()[:1]
	}
	if idle > 0 {
		modes += fmt.Sprintf("+%d idle", idle)
	}
	mm := ""
	if len(s.Matchmakers) > 0 {
		mm = fmt.Sprintf(" mm=%d spares=%d", len(s.Matchmakers), len(s.Spares))
		if s.Handovers {
			mm += fmt.Sprintf(" handovers(mm spares=%d)", len(s.MatchmakerSpares))
		}
		if slices.Contains(s.Nodes, s.Matchmakers[0]) {
			mm += " colocated"
		}
	}
	if len(s.Replicas) > 0 {
		mm += fmt.Sprintf(" replicas=%d", len(s.Replicas))
	}
	if s.LateReplicaAtMs > 0 {
		mm += fmt.Sprintf(" late-replica@%dms", s.LateReplicaAtMs)
	}
	if len(s.Proxies) > 0 {
		mm += fmt.Sprintf(" proxies=%d", len(s.Proxies))
	}
	if s.Handoffs {
		mm += " handoffs"
	}
	if s.Forgeries {
		mm += " forgeries"
	}
	if s.Tun.StayAwake {
		mm += " awake"
	}
	if s.Hold {
		mm += fmt.Sprintf(" hold(%s@%dms+%dms)", short(s.Journals[s.HoldJournal].ID), s.HoldAtMs, s.HoldMs)
	}
	for _, j := range s.Journals {
		if j.CreatedAtMs > 0 {
			mm += fmt.Sprintf(" created(%s@%dms)", short(j.ID), j.CreatedAtMs)
		}
	}
	if s.Control {
		mm += " control"
		if s.Victim >= 0 {
			mm += " delete"
		}
	}
	return fmt.Sprintf("n=%d %s%s journals=%s election=%d drop=%d%% dup=%d%%", len(s.Nodes), q, mm, modes, s.Tun.ElectionTicks, s.DropPct, s.DupPct)
}
