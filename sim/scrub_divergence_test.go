package sim

// The scrubber's mismatch detector, made to fire. Two copies of one slot
// under one ballot with different values is a bug, never rot (Paxos accepts
// one value per slot and ballot), so no honest run ever shows one and the
// sweeps cannot prove that the detector works. Here the divergence is
// planted by hand: a quiet three-node world runs the shipped hosts until
// every acceptor durably holds the newest chosen slot at one ballot, then
// one follower's disk gets another value under that same ballot, with an
// intact checksum (a store bug, not rot), while the follower runs and its
// memory keeps the real value. The leader's next scrub pass must read the
// follower's page from its disk, compare the hashes and count a mismatch
// naming that slot and ballot, and the run must fail with the scrubber's
// claim. A control run, the same world without the plant, scrubs the same
// slot and finds nothing.

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/storage"
)

const claimScrubMismatch = "scrub: two copies of one slot under one ballot never differ"

// divergenceShape is a plain, quiet world: three nodes, one journal, no
// random faults, and a scrubber that starts a pass every second.
func divergenceShape() Shape {
	return Shape{
		Nodes:    nodeIDs(3),
		Quorum:   quorum.Spec{Kind: quorum.KindMajority},
		Journals: []JournalShape{{ID: journal.ID{Tenant: 0x7e0, Journal: 0x100}, Mode: journal.ModeSingle, Readers: 1}},
		Tun: host.Tunables{TickMs: 10, ElectionTicks: 5, HeartbeatTicks: 1, ReadRecordsMax: 1, WaitMsMax: 194,
			LaneMessagesMax: 453, DeliveryBatch: 23, FlushDeliversMax: 4, QuarantineTicks: 39, ReadRetryTicks: 5,
			CallTimeoutTicks: 84, PipelineWindow: 18, ProposeQueueMax: 434, PromiseBatch: 1, CatchUpBatch: 7,
			HotSlotsMax: 64, HotBytesMax: 1 << 16, ScrubPageSlots: 8, ScrubIntervalTicks: 1, ScrubPassTicks: paxos.ScrubPassTicksMin},
		LatencyMin: 390 * us, LatencyMax: 486 * us,
		DiskMin: 334 * us, DiskMax: 489 * us,
	}
}

// divergence is the slot planted on and what the run saw.
type divergence struct {
	w      *World
	slot   paxos.Slot
	ballot paxos.Ballot
	victim *proc
	// mismatch is the first mismatch a scrubber reported at the slot, if
	// any, and by whom.
	mismatch *paxos.ScrubMismatch
	finder   paxos.NodeID
}

// runDivergence runs the quiet world until every acceptor durably holds the
// newest chosen slot at one ballot, with one value (a write), while a
// follower has no batch in flight; then, if plant, writes another value at
// that slot and ballot on the follower's disk; then runs until a scrubber
// reports a mismatch there or two scrub passes later.
func runDivergence(t *testing.T, plant bool) *divergence {
	t.Helper()
	w := newScripted(1, divergenceShape(), Options{Trace: true})
	j := w.shape.Journals[0].ID
	d := &divergence{w: w}
	var held journal.Command
	ready := w.runWhen(w.chaosEnd-2000*ms, func() bool {
		lead := w.leaderNode()
		top := w.topChosen(j)
		if w.sched.now < 300*ms || lead == 0 || top == 0 {
			return false
		}
		d.victim = nil
		for i, p := range w.procs {
			b, cmd, ok := p.stores[j].Accepted(top)
			if !p.up || !ok || cmd.Kind != journal.KindWrite || i > 0 && (b != d.ballot || !cmd.Equal(held)) {
				return false
			}
			d.slot, d.ballot, held = top, b, cmd
			if p.id != lead && p.stores[j].Pending() == 0 && d.victim == nil {
				d.victim = p
			}
		}
		return d.victim != nil
	})
	if !ready {
		t.Fatalf("the acceptors never held the newest chosen slot alike with a follower idle")
	}
	// No truncation may drop the slot before a pass reads it: the clients
	// stop here (the scrubber goes on over what is retained).
	w.clients.stopped = true
	if plant {
		other := journal.Write(journal.Entry{Leader: held.Entry.Leader, Seq: held.Entry.Seq, Records: [][]byte{[]byte("planted")}})
		st := d.victim.stores[j]
		st.Append([]paxos.WriteOp{{Kind: paxos.OpAccept, Slot: d.slot, Ballot: d.ballot, Command: other}})
		st.SyncFirst()
		if b, cmd, _ := st.Accepted(d.slot); b != d.ballot || !cmd.Equal(other) {
			t.Fatalf("the plant did not take: n%d holds %s at %s", d.victim.id, cmd, b)
		}
		w.sched.note("plant: n%d %s slot %d holds %s at %s (the others hold %s)", d.victim.id, short(j), d.slot, other, d.ballot, held)
	}
	passes := func() uint64 {
		var n uint64
		for _, p := range w.procs {
			if p.up && p.h != nil {
				n += p.h.Node(j).Counters().ScrubPasses
			}
		}
		return n
	}
	start := passes()
	w.runWhen(w.chaosEnd, func() bool {
		for _, p := range w.procs {
			if !p.up || p.h == nil {
				continue
			}
			for _, m := range p.h.Node(j).ScrubMismatches() {
				if m.Slot == d.slot {
					d.mismatch, d.finder = &m, p.id
					return true
				}
			}
		}
		return passes() >= start+2
	})
	if passes() == start && d.mismatch == nil {
		t.Fatalf("no scrub pass completed after the plant")
	}
	return d
}

func TestScrubFindsSameBallotDivergence(t *testing.T) {
	t.Run("planted", func(t *testing.T) {
		d := runDivergence(t, true)
		m := d.mismatch
		if m == nil {
			t.Fatalf("no scrubber reported a mismatch at slot %d (ballot %s, planted on n%d)", d.slot, d.ballot, d.victim.id)
		}
		t.Logf("n%d reports %s", d.finder, m)
		if m.Ballot != d.ballot {
			t.Errorf("mismatch at ballot %s, planted at %s", m.Ballot, d.ballot)
		}
		// The victim's hash is its disk's: the planted value, not the one
		// its memory holds.
		j := d.w.shape.Journals[0].ID
		_, planted, _ := d.victim.stores[j].Accepted(d.slot)
		want := storage.CRC32C(storage.AppendCommand(nil, planted))
		if got, ok := m.Hashes[d.victim.id]; !ok || got != want {
			t.Errorf("n%d's hash in the mismatch %x (present %v), its disk's copy hashes %x", d.victim.id, got, ok, want)
		}
		for id, h := range m.Hashes {
			if id != d.victim.id && h == want {
				t.Errorf("n%d's copy hashes like the planted one", id)
			}
		}
		if c := d.w.proc(d.finder).h.Node(j).Counters().ScrubMismatches; c == 0 {
			t.Errorf("n%d lists a mismatch and counts none", d.finder)
		}
		// The run fails with the scrubber's claim, and the vote ledger's
		// (the planted record is no vote and no chosen value); the copies'
		// disagreement at one ballot is the durable-state oracle's too.
		res := d.w.finishScripted(func() {})
		for _, c := range []string{claimScrubMismatch, claimRecords, "at most one command is ever accepted for one (slot, ballot)"} {
			if !slices.ContainsFunc(res.Violations, func(v string) bool { return strings.HasPrefix(v, c+": ") }) {
				t.Errorf("the run does not fail with %q; violations: %v", c, res.Violations)
			}
		}
		at := fmt.Sprintf("%s: n%d %s slot %d holds", claimRecords, d.victim.id, short(j), d.slot)
		if !slices.ContainsFunc(res.Violations, func(v string) bool { return strings.HasPrefix(v, at) }) {
			t.Errorf("the vote ledger does not name the planted record; violations: %v", res.Violations)
		}
	})
	t.Run("control: no plant, no mismatch", func(t *testing.T) {
		d := runDivergence(t, false)
		if d.mismatch != nil {
			t.Fatalf("n%d reports %s with nothing planted", d.finder, d.mismatch)
		}
		res := d.w.finishScripted(func() {})
		failWithTrace(t, d.w, res)
	})
}
