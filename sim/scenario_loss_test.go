package sim

// A scripted correlated outage on the shape of seed 700058 (four nodes on a
// 2x2 grid, two replicas, two proxies, handoffs), run on the shipped code
// through the simulator's World. Seeds drift as the code changes: by the
// parent of the injector's fix, 700058 itself crashed every node at 321 ms
// instead of 697 ms and passed with or without the fix, so a list of seeds
// could not keep this argument tested.
// Here the outage is no random draw. The run steps one instant at a time
// and crashes every node at the first instant the disks are in the state
// under test:
//
//   - every acceptor's disk holds an intact copy of the newest chosen slot
//     of the first journal: the injector must damage every copy, and the
//     journal must halt there, name the slot, and never accept it again;
//   - some acceptor's disk already truncated past that slot (a decided
//     truncation folded it into the state that disk sealed) while one other
//     alone still holds it: destroying that copy loses no chosen value, so
//     the injector must refuse to call it a loss beyond the budget, and
//     with that copy destroyed by hand the journal must go on and every
//     history stay linearizable.
//
// The world is built and finished with run()'s own phases (newWorld,
// recoverThenTail, conclude) but without its random fault schedule
// (chaos), so a test can decide when the outage happens.
// The other attrition of the shape (replicas, proxies, handoffs) keeps its
// random schedule, as in the seed.

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/host"
)

const gateLossNamed = "ctrl: a loss beyond the budget halts the journal and names the slot"

// lossShape is seed 700058's world as drawn, written out so that a change
// to drawShape does not move it. Its random faults are off (Crashes,
// Partitions, Rot...): the one fault under test is the scripted outage.
// RotOutage and RotBeyond make that outage the injector's loss beyond the
// budget. Its catch-up window is one page, as every world had when it was
// drawn.
func lossShape() Shape {
	return Shape{
		Nodes:    nodeIDs(4),
		Quorum:   quorum.Spec{Kind: quorum.KindGrid, Rows: 2, Cols: 2},
		Replicas: []paxos.NodeID{ReplicaIDBase, ReplicaIDBase + 1},
		Proxies:  []paxos.NodeID{ProxyIDBase, ProxyIDBase + 1},
		Journals: []JournalShape{
			{ID: journal.ID{Tenant: 0x7e0, Journal: 0x100}, Mode: journal.ModeSingle, Readers: 1},
			{ID: journal.ID{Tenant: 0x7e1, Journal: 0x101}, Mode: journal.ModeMulti, Readers: 1},
			{ID: journal.ID{Tenant: 0x7e0, Journal: 0x102}, Mode: journal.ModeMulti, Readers: 2},
		},
		Tun: host.Tunables{TickMs: 10, ElectionTicks: 5, HeartbeatTicks: 1, ReadRecordsMax: 1, WaitMsMax: 194,
			LaneMessagesMax: 453, DeliveryBatch: 23, FlushDeliversMax: 4, QuarantineTicks: 39, ReadRetryTicks: 5,
			CallTimeoutTicks: 84, PipelineWindow: 18, ProposeQueueMax: 434, PromiseBatch: 1, CatchUpBatch: 7, CatchUpPages: 1,
			HotSlotsMax: 2, HotBytesMax: 4501, ScrubPageSlots: 20, ScrubIntervalTicks: 2, ScrubPassTicks: 179},
		LatencyMin: 390 * us, LatencyMax: 486 * us, DupPct: 2,
		DiskMin: 334 * us, DiskMax: 489 * us,
		RotPick: RotUniform, RotBudget: 1, RotOutage: true, RotBeyond: true,
		Handoffs: true, CallBatchUs: 1422,
	}
}

// newScripted builds and starts a world as run() does, but for the shape
// given and without the chaos schedule (the test scripts the fault).
func newScripted(seed uint64, s Shape, o Options) *World {
	o = o.withDefaults()
	s.ChaosMs, s.TailMs = o.ChaosMs, o.TailMs
	w := newWorld(seed, o, func(*World) Shape { return s })
	w.replicaChaos()
	w.handoffChaos()
	w.proxyChaos()
	w.forgeryChaos()
	return w
}

// runWhen fires events one instant at a time until cond holds after an
// instant (true) or the clock passes end (false).
func (w *World) runWhen(end int64, cond func() bool) bool {
	for w.sched.q.Len() > 0 && w.sched.q[0].at <= end {
		w.sched.runUntil(w.sched.q[0].at)
		if cond() {
			return true
		}
	}
	w.sched.runUntil(end)
	return false
}

// finishScripted runs the rest of the chaos window, the recovery and the
// tail as run() does, calling each after every instant, then run()'s
// end-of-seed oracles, and returns the result.
func (w *World) finishScripted(each func()) Result {
	step := func(end int64) { w.runWhen(end, func() bool { each(); return false }) }
	step(w.chaosEnd)
	w.recoverThenTail(step)
	return w.conclude()
}

// topChosen is the newest slot of j any node folded: the slot the
// injector's loss beyond the budget aims at.
func (w *World) topChosen(j journal.ID) paxos.Slot {
	var top paxos.Slot
	for k := range w.audit.chosen {
		if k.j == j {
			top = max(top, k.s)
		}
	}
	return top
}

// acceptorCopies sorts the acceptors by what their durable store keeps of
// slot s: truncated past it (folded into the sealed state), an intact
// record there, or neither. ok is false while some acceptor is down (the
// outage must crash every one of them).
func (w *World) acceptorCopies(j journal.ID, s paxos.Slot) (past, held []paxos.NodeID, ok bool) {
	for _, p := range w.procs {
		if !p.founding() {
			continue
		}
		if !p.up || p.wiped || p.stores[j] == nil {
			return nil, nil, false
		}
		st := p.stores[j]
		if st.FirstSlot() > s {
			past = append(past, p.id)
		} else if _, _, intact := st.Accepted(s); intact {
			held = append(held, p.id)
		}
	}
	return past, held, true
}

// scriptedSeeds are the worlds tried, in order; the first in which the
// disks reach the state under test during the chaos window is used. The
// state is a property of the disks, not of a seed, so a change to the
// workload's draws moves the instant, not the argument. Seed 7 reaches
// both states today; the others are a margin for when it stops.
var scriptedSeeds = []uint64{7, 2, 1, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16}

// outageAt runs seeds until one reaches the state want describes before
// the chaos window's last second (so the run has time to react), and
// returns that world paused at that instant with the slot aimed at.
func outageAt(t *testing.T, want func(w *World, top paxos.Slot, past, held []paxos.NodeID) bool) (*World, paxos.Slot) {
	t.Helper()
	for _, seed := range scriptedSeeds {
		w := newScripted(seed, lossShape(), Options{Trace: true})
		j := w.shape.Journals[0].ID
		var top paxos.Slot
		hit := w.runWhen(w.chaosEnd-1000*ms, func() bool {
			top = w.topChosen(j)
			if top == 0 {
				return false
			}
			past, held, ok := w.acceptorCopies(j, top)
			return ok && want(w, top, past, held)
		})
		if hit {
			past, held, _ := w.acceptorCopies(j, top)
			t.Logf("seed %d at %.3f ms: %s slot %d is the newest chosen; truncated past on %v, intact on %v",
				seed, float64(w.sched.now)/float64(ms), short(j), top, past, held)
			return w, top
		}
	}
	t.Fatalf("no world of %v reached the state under test: widen scriptedSeeds", scriptedSeeds)
	return nil, 0
}

// failWithTrace reports the run's violations and the end of its trace.
func failWithTrace(t *testing.T, w *World, res Result) {
	t.Helper()
	if res.OK() {
		return
	}
	lines := w.sched.lines
	tail := lines[max(0, len(lines)-60):]
	t.Errorf("seed %d failed:\n  %s\ntrace tail:\n%s", res.Seed, strings.Join(res.Violations, "\n  "), strings.Join(tail, "\n"))
}

func TestScriptedOutageLoss(t *testing.T) {
	var hashes [2]uint64
	t.Run("every disk retains the slot: the journal halts and names it", func(t *testing.T) {
		hashes[0] = lossRetained(t)
	})
	t.Run("a disk truncated past the slot: nothing is lost and the journal goes on", func(t *testing.T) {
		hashes[1] = lossTruncated(t)
	})
	if t.Failed() {
		return
	}
	t.Run("both replay bit for bit", func(t *testing.T) {
		// The scripted instant is found by reading the world's state, and
		// that must not depend on map order or anything else outside the
		// seed: a second run gives the same event trace.
		if h := lossRetained(t); h != hashes[0] {
			t.Errorf("retained: trace hash %x, then %x", hashes[0], h)
		}
		if h := lossTruncated(t); h != hashes[1] {
			t.Errorf("truncated: trace hash %x, then %x", hashes[1], h)
		}
	})
}

// lossRetained is the real loss beyond the budget: every acceptor durably
// holds the newest chosen slot when every node crashes, and every copy is
// damaged. It returns the run's trace hash.
func lossRetained(t *testing.T) uint64 {
	// After the journal has run a while, so truncations moved the floors
	// and the hot window evicted records.
	w, top := outageAt(t, func(w *World, top paxos.Slot, past, held []paxos.NodeID) bool {
		return w.sched.now >= 500*ms && len(past) == 0 && len(held) == len(w.shape.Nodes)
	})
	j := w.shape.Journals[0].ID
	w.outage()
	lost := jslot{j, top}
	if w.rot.lost == nil || *w.rot.lost != lost {
		t.Fatalf("the injector did not plant a loss beyond the budget at %s slot %d (ledger %v)", short(j), top, w.rot.lost)
	}
	if got := w.rot.copies[lost]; len(got) != len(w.shape.Nodes) {
		t.Fatalf("damaged copies of %s slot %d: %v, want every acceptor's", short(j), top, got)
	}
	outageAt := w.sched.now
	// The end-of-seed oracle looks at the disks once; here they are checked
	// after every instant of the rest of the run, so a record written and
	// then truncated away again would not slip by.
	again := ""
	res := w.finishScripted(func() {
		if again != "" {
			return
		}
		for _, p := range w.procs {
			st := p.stores[j]
			if !p.founding() || st == nil {
				continue
			}
			if _, _, ok := st.Accepted(top); ok || st.FirstSlot() > top {
				again = fmt.Sprintf("n%d holds %s slot %d again (or truncated past it) %.3f ms after the outage",
					p.id, short(j), top, float64(w.sched.now-outageAt)/float64(ms))
			}
		}
	})
	failWithTrace(t, w, res)
	if again != "" {
		t.Errorf("the lost slot came back: %s", again)
	}
	if res.Gates[gateLossNamed] == 0 {
		t.Errorf("gate did not fire: %s", gateLossNamed)
	}
	if res.Counts.CtrlUnrecoverable == 0 {
		t.Errorf("no leader declared %s slot %d unrecoverable", short(j), top)
	}
	// The journal halts at the slot: nothing past it is folded, since a node
	// folds slots in order and no node can fold this one again.
	if now := w.topChosen(j); now != top {
		t.Errorf("%s folded slot %d after losing slot %d", short(j), now, top)
	}
	return res.TraceHash
}

// lossTruncated is seed 700058's outage: a decided truncation already
// folded the newest chosen slot into the sealed state of some acceptors'
// disks, and one acceptor alone still holds a record there. It returns the
// run's trace hash.
func lossTruncated(t *testing.T) uint64 {
	w, top := outageAt(t, func(w *World, top paxos.Slot, past, held []paxos.NodeID) bool {
		return len(past) > 0 && len(held) == 1
	})
	j := w.shape.Journals[0].ID
	_, held, _ := w.acceptorCopies(j, top)
	w.outage()
	k := jslot{j, top}
	if w.rot.lost != nil || len(w.rot.copies[k]) > 0 {
		t.Errorf("the injector planted a loss beyond the budget at %s slot %d (damaged on %v), which a disk already truncated past",
			short(j), top, w.rot.copies[k])
	}
	// Destroy the copy left by hand, while every node is down, as the
	// injector used to. It is written in the ledger as a planned loss (so
	// the audits do not count the damaged record as on disk), but not as a
	// loss beyond the budget: the value survives in the sealed state of the
	// disks that truncated past it.
	for _, id := range held {
		p := w.proc(id)
		if p.up {
			t.Fatalf("n%d is up after the correlated outage", id)
		}
		if !slices.Contains(w.rot.copies[k], id) && p.stores[j].Rot(top) {
			w.rot.copies[k] = append(w.rot.copies[k], id)
			w.counts.Rots++
			w.sched.note("rot (by hand, truncated elsewhere) n%d %s slot %d", id, short(j), top)
		}
	}
	if len(w.rot.copies[k]) != len(held) {
		t.Fatalf("damaged copies of %s slot %d: %v, want %v", short(j), top, w.rot.copies[k], held)
	}
	res := w.finishScripted(func() {})
	failWithTrace(t, w, res)
	if now := w.topChosen(j); now <= top {
		t.Errorf("%s did not go on past slot %d (newest folded: %d)", short(j), top, now)
	}
	if res.Lincheck["Ok"] != len(w.shape.Journals) {
		t.Errorf("lincheck: %v, want every journal Ok", res.Lincheck)
	}
	if res.Gates[gateLossNamed] > 0 || res.Counts.CtrlUnrecoverable > 0 {
		t.Errorf("a slot was named unrecoverable though no chosen value was lost")
	}
	return res.TraceHash
}
