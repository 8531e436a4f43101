// This file checks the tunables' floors (host.Tunables) and the election
// jitter drawn at boot, from outside package host. Helpers are in
// host_test.go.
package host_test

import (
	"strings"
	"testing"

	"github.com/parosdb/paros/host"
)

// ---------------------------------------------------------------------------
// 8. Tunables (host.Tunables: "Each has a documented floor and Validate
// refuses values below it").

func TestTunables_ValidateRefusesEveryKnobBelowItsFloor(t *testing.T) {
	// Zero means the production default, so "below the floor" of a floor-1
	// knob is negative.
	cases := []struct {
		knob        string
		set         func(*host.Tunables, int)
		floor       int
		belowFloorV int
	}{
		{"tick_ms", func(t *host.Tunables, v int) { t.TickMs = v }, 1, -1},
		{"election_ticks", func(t *host.Tunables, v int) { t.ElectionTicks = v; t.HeartbeatTicks = 1 }, 3, 2},
		{"heartbeat_ticks", func(t *host.Tunables, v int) { t.HeartbeatTicks = v }, 1, -1},
		{"batch_records_max", func(t *host.Tunables, v int) { t.BatchRecordsMax = v }, 1, -1},
		{"batch_bytes_max", func(t *host.Tunables, v int) { t.BatchBytesMax = v }, 1, -1},
		{"read_records_max", func(t *host.Tunables, v int) { t.ReadRecordsMax = v }, 1, -1},
		{"read_bytes_max", func(t *host.Tunables, v int) { t.ReadBytesMax = v }, 1, -1},
		{"wait_ms_max", func(t *host.Tunables, v int) { t.WaitMsMax = v }, 0, -1},
		{"lane_messages_max", func(t *host.Tunables, v int) { t.LaneMessagesMax = v }, 16, 15},
		{"delivery_batch", func(t *host.Tunables, v int) { t.DeliveryBatch = v }, 8, 7},
		{"flush_delivers_max", func(t *host.Tunables, v int) { t.FlushDeliversMax = v }, 1, -1},
		{"quarantine_ticks", func(t *host.Tunables, v int) { t.QuarantineTicks = v }, 1, -1},
		{"read_retry_ticks", func(t *host.Tunables, v int) { t.ReadRetryTicks = v }, 1, -1},
		{"call_timeout_ticks", func(t *host.Tunables, v int) { t.CallTimeoutTicks = v }, 2, 1},
	}
	for _, tc := range cases {
		t.Run(tc.knob, func(t *testing.T) {
			var below, at host.Tunables
			tc.set(&below, tc.belowFloorV)
			tc.set(&at, tc.floor)

			errBelow, errAt := below.Validate(), at.Validate()

			if errBelow == nil || !strings.Contains(errBelow.Error(), tc.knob) {
				t.Fatalf("Validate(%s = %d) = %v, want a refusal naming %s", tc.knob, tc.belowFloorV, errBelow, tc.knob)
			}
			if errAt != nil {
				t.Fatalf("Validate(%s = %d, its floor) = %v, want nil", tc.knob, tc.floor, errAt)
			}
		})
	}
}

func TestTunables_HeartbeatMustBeBelowElection(t *testing.T) {
	for _, hb := range []int{5, 6} {
		if err := (host.Tunables{ElectionTicks: 5, HeartbeatTicks: hb}).Validate(); err == nil || !strings.Contains(err.Error(), "heartbeat") {
			t.Errorf("heartbeat %d, election 5: Validate = %v, want a refusal", hb, err)
		}
	}
	if err := (host.Tunables{ElectionTicks: 5, HeartbeatTicks: 4}).Validate(); err != nil {
		t.Errorf("heartbeat 4, election 5: %v", err)
	}
	// The core's own bounds pass through: a pipeline wider than its queue.
	if err := (host.Tunables{PipelineWindow: 8, ProposeQueueMax: 4}).Validate(); err == nil {
		t.Errorf("pipeline 8 > queue 4 accepted")
	}
	if err := (host.Tunables{}).Validate(); err != nil {
		t.Errorf("zero tunables (production defaults): %v", err)
	}
}

// host.Tunables.ElectionTicks: "a follower of election rank r in its
// journal draws base + r·base/2 + [0, base/4)", and paxos.Node.SetElectionTimeout: "The caller should hand a
// fresh value whenever WantsElectionTimeout reports true." A node is born
// wanting one; the host must draw it at boot (and at every reboot after a
// quarantine), not only after the node's first Ready.
func TestElectionJitter_DrawnAtBoot(t *testing.T) {
	// Regression test: this was a bug, found by this test and fixed.

	// Arrange and act: three hosts booted together.
	c := newCluster(t, testTunables(), spec(jA, multi, first))

	// Check: each was handed a drawn timeout at boot.
	for _, id := range members {
		if c.hosts[id].Node(jA).WantsElectionTimeout() {
			t.Errorf("node %d booted without a drawn election timeout", id)
		}
	}
	// And so they do not all campaign on one tick.
	tun := testTunables()
	for range tun.ElectionTicks {
		for _, id := range members {
			c.hosts[id].OnTick()
		}
	}
	candidates := 0
	for _, id := range members {
		if c.hosts[id].Node(jA).Role() == "candidate" {
			candidates++
		}
	}
	if candidates == len(members) {
		t.Errorf("all %d nodes campaigned on tick %d", candidates, tun.ElectionTicks)
	}
}

// host.Tunables.WaitMsMax: "clamps a read's long-poll (floor 0)". Zero is a
// legal value, so a process configured with WaitMsMax 0 never long-polls:
// a read at the tail is answered with an empty page as soon as its quorum
// answers.
func TestTunables_WaitMsMaxZeroDisablesLongPoll(t *testing.T) {
	// Regression test: this was a bug, found by this test and fixed.

	// Arrange.
	tun := testTunables()
	tun.WaitMsMax = 0
	c := newCluster(t, tun, spec(jA, multi, first))
	c.elect(1, jA)

	// Act: a tail read asking for a long wait.
	c.call(2, read(1, jA, 1, 0, 500))
	c.settle()

	// Check.
	r, ok := c.envs[2].reply(1)
	if !ok || !r.Read.Served || len(r.Read.Records) != 0 {
		t.Fatalf("tail read with WaitMsMax 0 = %+v (answered %v), want an empty served page at once", r.Read, ok)
	}
}
