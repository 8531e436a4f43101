package host

import (
	"fmt"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
)

// Tunables are every knob of a process, with documented floors. The zero
// value of a field means the production default.
type Tunables struct {
	// TickMs is the wall time of one tick (floor 1; production 50: a
	// follower campaigns after 0.5–1 s of silence, so failover stays under
	// a second, measured by the bench harness).
	TickMs int
	// ElectionTicks is the base election timeout; a follower of election
	// rank r in its journal draws base + r·base/2 + [0, base/4) (journal.go,
	// jitter; floor 3; production 10).
	ElectionTicks int
	// HeartbeatTicks is the leader's beat period (floor 1, below ElectionTicks).
	HeartbeatTicks int
	// BatchRecordsMax and BatchBytesMax bound one Write (refused TooLarge,
	// in no slot). Floors 1.
	BatchRecordsMax int
	BatchBytesMax   int
	// ReadRecordsMax and ReadBytesMax bound one read page (a page carries at
	// least one record when one is readable). Floors 1.
	ReadRecordsMax int
	ReadBytesMax   int
	// WaitMsMax clamps a read's long-poll (floor 0). Unlike the other knobs,
	// zero is taken literally — no long-poll — so it is not defaulted;
	// Production sets 1000.
	WaitMsMax int
	// LaneMessagesMax bounds one journal's lane in one peer mailbox; a full
	// lane evicts its own oldest message of the same kind, else its own
	// oldest (floor 16).
	LaneMessagesMax int
	// DeliveryBatch bounds the messages in one Deliver (floor 8).
	DeliveryBatch int
	// FlushDeliversMax bounds the Delivers sent to one peer per event
	// (floor 1; production 1,024, the runtime's queue per peer: each event
	// empties the mailboxes, and the transport's bounded queue drops what
	// a slow or dead peer cannot take); the rest wait in the mailbox.
	FlushDeliversMax int
	// CampaignsMax bounds the campaigns this process's nodes run at once
	// (campaigns.go; floor 1; production 256).
	CampaignsMax int
	// QuarantineTicks is how long a faulted journal stays down before it is
	// reopened from its store (floor 1; production 80).
	QuarantineTicks int
	// ReadRetryTicks is how long a quorum read may wait for its quorum
	// before the client is answered unserved (floor 1; production 20).
	ReadRetryTicks int
	// CallTimeoutTicks is how long a parked Write/Truncate/SetLeader waits
	// for its slot before it is answered ambiguous (floor 2).
	CallTimeoutTicks int
	// PipelineWindow, ProposeQueueMax, PromiseBatch, CatchUpBatch and
	// CatchUpPages pass to the core (paxos.Options).
	PipelineWindow  int
	ProposeQueueMax int
	PromiseBatch    int
	CatchUpBatch    int
	CatchUpPages    int
	// HotSlotsMax and HotBytesMax bound the applied records a journal keeps
	// in memory; older ones are read back from the store (paxos.Options;
	// floors 1; production 1,024 slots and 1 MiB).
	HotSlotsMax int
	HotBytesMax int
	// The scrubber's pace (paxos.Options): slots per page (1..4,096;
	// production 256), the rate limit in ticks between pages (floor 1;
	// production 2) and the full-pass bound in ticks (floor 100;
	// production 72,000 — an hour at 50 ms a tick).
	ScrubPageSlots     int
	ScrubIntervalTicks int
	ScrubPassTicks     int
	// The recovery budgets (0: the core's defaults). ProxyTakeBackBeats
	// is how many re-delegations a round a proxy leader holds may go
	// undecided before the leader runs it itself (paxos.Options; default
	// 20); ProxyEvictAfter is how many unanswered re-fan-outs a proxy
	// leader keeps a round through (paxos.ProxyOptions; default 40);
	// HandoffFenceElections is how many election timeouts an inherited
	// leadership waits for its fence before it resigns (paxos.Options;
	// default 3). Floors 1.
	ProxyTakeBackBeats    int
	ProxyEvictAfter       int
	HandoffFenceElections int
	// HandoverPhaseElections is how many election timeouts a phase of a
	// matchmaker-set handover may go without progress before it is
	// abandoned (whoever meets the set stopped next finishes it; default
	// 5). Floor 1.
	HandoverPhaseElections int
	// StayAwake keeps every journal beating and ticked even when it has
	// nothing to do (quiescence off; host/quiet.go). The default lets a
	// settled journal fall quiet, with one machine beat per peer every
	// HeartbeatTicks standing in for every quiet journal's.
	StayAwake bool
}

// Production is the production profile ("reasoned, not measured").
func Production() Tunables { return Tunables{WaitMsMax: journal.WaitMsMax}.withDefaults() }

func (t Tunables) withDefaults() Tunables {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&t.TickMs, 50)
	def(&t.ElectionTicks, 10)
	def(&t.HeartbeatTicks, 2)
	def(&t.BatchRecordsMax, journal.WriteRecordsMax)
	def(&t.BatchBytesMax, journal.WriteBytesMax)
	def(&t.ReadRecordsMax, journal.ReadRecordsMax)
	def(&t.ReadBytesMax, journal.ReadBytesMax)
	def(&t.LaneMessagesMax, 4096)
	def(&t.DeliveryBatch, 64)
	// Eight Delivers per peer per event (the default until 10,000
	// journals woke at once) held back a tick's beats of thousands of awake
	// journals: the mailbox to every peer grew by thousands of messages a
	// tick, to gigabytes toward a dead peer, and the beats to a live one
	// came late enough to start elections.
	def(&t.FlushDeliversMax, 1024)
	def(&t.CampaignsMax, 256)
	def(&t.QuarantineTicks, 80)
	def(&t.ReadRetryTicks, 20)
	def(&t.CallTimeoutTicks, 100)
	def(&t.PipelineWindow, 1024)
	def(&t.ProposeQueueMax, 4096)
	def(&t.PromiseBatch, 64)
	def(&t.CatchUpBatch, 256)
	def(&t.CatchUpPages, 8)
	def(&t.HotSlotsMax, 1024)
	def(&t.HotBytesMax, 1<<20)
	def(&t.HandoverPhaseElections, 5)
	// The core's scrub rate limit, which the machine-wide budget of quiet
	// journals (quiet.go) paces by too.
	def(&t.ScrubIntervalTicks, 2)
	return t
}

// Validate refuses a knob below its floor.
func (t Tunables) Validate() error {
	t = t.withDefaults()
	floors := []struct {
		name     string
		v, floor int
	}{
		{"tick_ms", t.TickMs, 1}, {"election_ticks", t.ElectionTicks, 3}, {"heartbeat_ticks", t.HeartbeatTicks, 1},
		{"batch_records_max", t.BatchRecordsMax, 1}, {"batch_bytes_max", t.BatchBytesMax, 1},
		{"read_records_max", t.ReadRecordsMax, 1}, {"read_bytes_max", t.ReadBytesMax, 1},
		{"wait_ms_max", t.WaitMsMax, 0}, {"lane_messages_max", t.LaneMessagesMax, 16},
		{"delivery_batch", t.DeliveryBatch, 8}, {"flush_delivers_max", t.FlushDeliversMax, 1}, {"campaigns_max", t.CampaignsMax, 1},
		{"quarantine_ticks", t.QuarantineTicks, 1}, {"read_retry_ticks", t.ReadRetryTicks, 1},
		{"call_timeout_ticks", t.CallTimeoutTicks, 2}, {"proxy_evict_after", t.ProxyEvictAfter, 0},
		{"handover_phase_elections", t.HandoverPhaseElections, 1},
	}
	for _, f := range floors {
		if f.v < f.floor {
			return fmt.Errorf("paros/host: tunable %s = %d is below its floor %d", f.name, f.v, f.floor)
		}
	}
	if t.HeartbeatTicks >= t.ElectionTicks {
		return fmt.Errorf("paros/host: heartbeat_ticks %d must be below election_ticks %d", t.HeartbeatTicks, t.ElectionTicks)
	}
	return t.coreOptions().Validate()
}

func (t Tunables) coreOptions() paxos.Options {
	return paxos.Options{ElectionTicks: t.ElectionTicks, HeartbeatTicks: t.HeartbeatTicks,
		PipelineWindow: t.PipelineWindow, ProposeQueueMax: t.ProposeQueueMax,
		PromiseBatch: t.PromiseBatch, CatchUpBatch: t.CatchUpBatch, CatchUpPages: t.CatchUpPages, ReadTTLTicks: t.ReadRetryTicks,
		HotSlotsMax: t.HotSlotsMax, HotBytesMax: t.HotBytesMax,
		ScrubPageSlots: t.ScrubPageSlots, ScrubIntervalTicks: t.ScrubIntervalTicks, ScrubPassTicks: t.ScrubPassTicks,
		ProxyTakeBackBeats: t.ProxyTakeBackBeats, HandoffFenceElections: t.HandoffFenceElections,
		Quiesce: !t.StayAwake}
}
