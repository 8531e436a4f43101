package paxos

import "fmt"

// Options are the core's tunables. The zero value of a field means "use the
// default"; Validate names the floors.
type Options struct {
	// ElectionTicks is the base election timeout. A follower that hears no
	// leader for its (jittered) timeout campaigns; a leader that hears no
	// ack quorum for one timeout steps down (CheckQuorum). Floor: 3.
	ElectionTicks int
	// HeartbeatTicks is the leader's beat period. Must be < ElectionTicks.
	HeartbeatTicks int
	// PipelineWindow bounds the Accepts in flight (open rounds sent).
	PipelineWindow int
	// ProposeQueueMax bounds open rounds (sent or held); Propose answers
	// Busy beyond it.
	ProposeQueueMax int
	// PromiseBatch bounds the records of one Promise page (ceiling 64).
	PromiseBatch int
	// CatchUpBatch bounds the entries of one CatchUpResponse page.
	CatchUpBatch int
	// CatchUpPages bounds the pages one CatchUpRequest is answered with
	// (the catch-up window): a node far behind moves up to
	// CatchUpPages*CatchUpBatch slots per round trip.
	CatchUpPages int
	// CatchUpRetryTicks is how long a catch-up request may go unanswered
	// before it is sent again.
	CatchUpRetryTicks int
	// ReadTTLTicks is how long a quorum read may wait for its quorum.
	ReadTTLTicks int
	// ReadsMax bounds the quorum reads open at once.
	ReadsMax int
	// ResendBatch bounds the Accepts re-sent on one beat.
	ResendBatch int
	// HotSlotsMax and HotBytesMax bound the applied slots (and their record
	// bytes) a node keeps in memory when its Storage hands it a ColdLog;
	// older ones are read back from the store (cold.go). Floors 1.
	HotSlotsMax int
	HotBytesMax int
	// The scrubber's pace (scrub.go), when the Storage hands a ScrubLog.
	// ScrubPageSlots is the slots one page asks about (at most
	// ScrubPageSlotsMax). ScrubIntervalTicks is the rate limit: at least
	// that many ticks pass between two pages (floor 1). ScrubPassTicks is
	// the full-pass bound: the pages of a pass are spread over it, and a
	// pass starts at most once per bound (floor ScrubPassTicksMin). When
	// the rate limit cannot meet the bound the pass overruns, and says so
	// (Counters.ScrubOverruns): the rate limit protects the disk.
	ScrubPageSlots     int
	ScrubIntervalTicks int
	ScrubPassTicks     int
	// HandoffFenceElections is how many election timeouts an inherited
	// leadership may wait for its chosen index to reach the fence it
	// inherited before it resigns (node_handoff.go).
	HandoffFenceElections int
	// ProxyTakeBackBeats is how many re-delegations a round delegated to
	// a proxy leader may go undecided before the leader takes it back and
	// runs it itself (node_proxy.go).
	ProxyTakeBackBeats int
	// Quiesce lets a settled journal fall quiet (node_quiet.go): no beat,
	// no timer until something wakes it. Off in the core's zero value, so
	// a node driven tick by tick behaves as plain Multi-Paxos; the host
	// turns it on by default, with the machine beat that makes it live.
	Quiesce bool
}

// Defaults for Options.
const (
	defaultElectionTicks     = 10
	defaultHeartbeatTicks    = 2
	defaultPipelineWindow    = 1024
	defaultProposeQueueMax   = 4096
	promiseBatchCeiling      = 64
	defaultCatchUpBatch      = 256
	defaultCatchUpPages      = 8
	defaultCatchUpRetryTicks = 4
	defaultReadTTLTicks      = 10
	defaultReadsMax          = 4096
	defaultResendBatch       = 64
	// A follower a moment behind, a reader near the tail and a retry of a
	// recent write are served from memory; older ones from the store's
	// caches. 1 MiB per journal keeps 64 journals under 64 MiB of records.
	defaultHotSlotsMax = 1024
	defaultHotBytesMax = 1 << 20
	// At 50 ms a tick: at most ten pages (2,560 records) a second per
	// journal, and one full pass an hour.
	defaultScrubPageSlots        = 256
	defaultScrubIntervalTicks    = 2
	defaultScrubPassTicks        = 72_000
	defaultHandoffFenceElections = 3
	defaultProxyTakeBackBeats    = 20
)

func (o Options) withDefaults() Options {
	set := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	set(&o.ElectionTicks, defaultElectionTicks)
	set(&o.HeartbeatTicks, defaultHeartbeatTicks)
	set(&o.PipelineWindow, defaultPipelineWindow)
	set(&o.ProposeQueueMax, defaultProposeQueueMax)
	set(&o.PromiseBatch, promiseBatchCeiling)
	set(&o.CatchUpBatch, defaultCatchUpBatch)
	set(&o.CatchUpPages, defaultCatchUpPages)
	set(&o.CatchUpRetryTicks, defaultCatchUpRetryTicks)
	set(&o.ReadTTLTicks, defaultReadTTLTicks)
	set(&o.ReadsMax, defaultReadsMax)
	set(&o.ResendBatch, defaultResendBatch)
	set(&o.HotSlotsMax, defaultHotSlotsMax)
	set(&o.HotBytesMax, defaultHotBytesMax)
	set(&o.ScrubPageSlots, defaultScrubPageSlots)
	set(&o.ScrubIntervalTicks, defaultScrubIntervalTicks)
	set(&o.ScrubPassTicks, defaultScrubPassTicks)
	set(&o.HandoffFenceElections, defaultHandoffFenceElections)
	set(&o.ProxyTakeBackBeats, defaultProxyTakeBackBeats)
	return o
}

// Validate refuses tunables below their floors.
func (o Options) Validate() error {
	o = o.withDefaults()
	switch {
	case o.ElectionTicks < 3:
		return fmt.Errorf("%w: election ticks %d < 3", ErrConfig, o.ElectionTicks)
	case o.HeartbeatTicks < 1 || o.HeartbeatTicks >= o.ElectionTicks:
		return fmt.Errorf("%w: heartbeat ticks %d not in [1, election ticks)", ErrConfig, o.HeartbeatTicks)
	case o.PipelineWindow < 1 || o.ProposeQueueMax < o.PipelineWindow:
		return fmt.Errorf("%w: pipeline window %d / queue %d", ErrConfig, o.PipelineWindow, o.ProposeQueueMax)
	case o.PromiseBatch < 1 || o.PromiseBatch > promiseBatchCeiling:
		return fmt.Errorf("%w: promise batch %d not in [1, %d]", ErrConfig, o.PromiseBatch, promiseBatchCeiling)
	case o.CatchUpBatch < 1 || o.CatchUpPages < 1 || o.CatchUpRetryTicks < 1 || o.ReadTTLTicks < 1 || o.ReadsMax < 1 || o.ResendBatch < 1 ||
		o.HotSlotsMax < 1 || o.HotBytesMax < 1 || o.HandoffFenceElections < 1 || o.ProxyTakeBackBeats < 1:
		return fmt.Errorf("%w: a bound is below 1", ErrConfig)
	case o.ScrubPageSlots < 1 || o.ScrubPageSlots > ScrubPageSlotsMax:
		return fmt.Errorf("%w: scrub page slots %d not in [1, %d]", ErrConfig, o.ScrubPageSlots, ScrubPageSlotsMax)
	case o.ScrubIntervalTicks < 1:
		return fmt.Errorf("%w: scrub interval ticks %d < 1", ErrConfig, o.ScrubIntervalTicks)
	case o.ScrubPassTicks < ScrubPassTicksMin:
		return fmt.Errorf("%w: scrub pass ticks %d < %d", ErrConfig, o.ScrubPassTicks, ScrubPassTicksMin)
	}
	return nil
}
