package paxos

// Counters are observation only: how often each path fired.
type Counters struct {
	// Quiesced counts leaderships that fell quiet; Woken quiet nodes woken
	// (node_quiet.go).
	Quiesced, Woken uint64
	Campaigns       uint64
	// Reasked counts Prepares an eager campaign sent again to a silent
	// member (CampaignSoon).
	Reasked          uint64
	Elections        uint64
	StepDowns        uint64
	CheckQuorumDowns uint64
	// CampaignsHeld counts ticks a due campaign waited for its host's
	// campaign budget (HoldCampaign).
	CampaignsHeld uint64
	GapFills      uint64
	Recovered     uint64
	Decided       uint64
	CatchUps      uint64
	TrimJumps     uint64
	Truncations   uint64
	ReadsServed   uint64
	ReadsExpired  uint64
	// Malformed counts messages dropped by Message.Validate; Exhausted
	// counts campaigns not opened because the next round would pass
	// BallotRoundMax.
	Malformed uint64
	Exhausted uint64
	// Evicted counts slots moved out of the hot window; ColdReads counts
	// reads of evicted records back from the store, by purpose (cold.go).
	Evicted   uint64
	ColdReads ColdReads
	// Matchmaker Paxos paths.
	Probes, MatchRefusals, StaleConfigurations, Reconfigurations uint64
	ReconfiguredElections, ResignedRemoved, RemovedPromises      uint64
	JoinerVotes, Collections, ReadsAbandoned                     uint64
	// ReadsWidened counts quorum reads that asked every member after
	// their first addressees (one row of a grid) did not answer in time.
	ReadsWidened uint64
	// Retractions counts the requests a node that will not campaign sent
	// to retract its abandoned registrations (node_matchmaking.go).
	Retractions uint64
	// MatchmakerSetsAdopted counts the chosen matchmaker sets a node
	// followed the chain to; MatchmakersStopped the generations it met
	// frozen by an undecided handover (node_generations.go).
	MatchmakerSetsAdopted, MatchmakersStopped uint64
	// ReplicaPushes counts Commits a replica node learned pushed values
	// from (node_replica.go); its other paths count as a node's do.
	ReplicaPushes uint64
	// OwnMatchmaker counts answers of the matchmaker this node's own
	// process runs (a founding machine's), which the host loops back.
	OwnMatchmaker uint64
	// CTRL (ctrl.go): slots a leadership settled over a damaged record by
	// re-proposing (case 1) or with a Noop (case 2); recoveries that
	// waited for more answers (case 3); leaderships that resigned waiting;
	// slots found beyond the fault budget.
	CtrlReproposed, CtrlNoops, CtrlWaits, CtrlResigned, CtrlUnrecoverable uint64
	// Repair of damaged records (node_scrub.go): rewritten from the value
	// held in memory, or from a peer's copy of the chosen value.
	RepairedFromMemory, RepairedFromPeer uint64
	// The scrubber: pages asked (as the scrubbing leader), pages answered
	// (as an acceptor), pages closed with an answer missing, passes
	// completed, passes that overran the full-pass bound, the ticks the last
	// pass took, and mismatches (two copies of one slot at one ballot with
	// different hashes: a bug, never rot).
	ScrubPages, ScrubAnswered, ScrubPartial, ScrubPasses, ScrubOverruns uint64
	// ScrubResumed counts passes a leader took up from a cursor it did not
	// pace itself (its disk's, or one it heard as a follower).
	ScrubResumed                        uint64
	ScrubLastPassTicks, ScrubMismatches uint64
	// Cooperative handoff (node_handoff.go): leaderships handed on,
	// authorities installed, Relinquish messages refused, inherited
	// leaderships that resigned with their fence uncovered, and slots an
	// inherited leadership decided (Phase 2 with no Phase 1 of its own).
	Relinquished, Inherited, RelinquishRefused, HandoffResigned, InheritedDecided uint64
	// Reelections counts inherited leaderships that ran their own Phase 1
	// to be handed on again (Reelect).
	Reelections uint64
	// Proxy leaders (node_proxy.go): rounds delegated to a proxy, rounds
	// the leader decided from a proxy's Commit, rounds taken back, and
	// slots an acceptor learned chosen from a proxy's Commit.
	ProxyDelegated, ProxyDecided, ProxyTakenBack, ProxyLearned uint64
	// ProxyBypassed counts rounds the leader ran itself because their
	// proxy was suspect; ProxyRecovered, suspicions a proxy's Commit
	// cleared.
	ProxyBypassed, ProxyRecovered uint64
	// ColumnFills counts the Noops ProposeIn opened to reach its column.
	ColumnFills uint64
	// RoleRefused counts messages dropped because their sender's role
	// never sends their type (roles.go); NotLeading, Accepts, Commits and
	// Heartbeats dropped because their sender (or the leader a proxy
	// named) does not lead their ballot as far as this node knows;
	// HandoffNotices, owners' notices naming their successor.
	RoleRefused, NotLeading, HandoffNotices uint64
	// SuccessorsAssumed counts ballots of its own a rebooted owner bound to
	// the first acceptor it heard leading them (roles.go, mayLead).
	SuccessorsAssumed uint64
	// NoticesAsked counts owners asked whom they handed a ballot to;
	// NoticesAnswered, such questions an owner answered with its notice.
	NoticesAsked, NoticesAnswered uint64
}
