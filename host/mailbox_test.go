// This file checks the peer mailbox (mailbox.go) white-box, against its
// contract in docs/design/host.md "Peer mailboxes": bounded, lossy and
// keep-newest, one lane per journal, lanes drained round-robin, a full lane
// evicting its own oldest message of the same kind or else its own oldest
// message, so a busy journal evicts only its own messages. Each test pushes
// hand-made messages (their Ctx numbers them) and reads back what take
// returns; a naive model (a per-lane FIFO) checks the counts and the order on
// a long pseudo-random script.
package host

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
)

var (
	laneA = journal.ID{Tenant: 1, Journal: 1}
	laneB = journal.ID{Tenant: 1, Journal: 2}
	laneC = journal.ID{Tenant: 2, Journal: 1}
)

func msg(t paxos.MsgType, n uint64) paxos.Message { return paxos.Message{Type: t, To: 2, Ctx: n} }

// ids lists the Ctx numbers of envelopes, in order.
func ids(es []Envelope) []uint64 {
	out := make([]uint64, len(es))
	for i, e := range es {
		out[i] = e.Msg.Ctx
	}
	return out
}

// laneIDs lists the Ctx numbers queued on j's lane.
func laneIDs(mb *mailbox, j journal.ID) []uint64 {
	var out []uint64
	for _, m := range mb.lane(j).msgs {
		out = append(out, m.Ctx)
	}
	return out
}

// docs/design/host.md: "A full lane evicts its own oldest message of the same
// kind (a newer heartbeat supersedes an older one), or else its own oldest
// message."
func TestMailbox_FullLaneKeepsNewestPerKind(t *testing.T) {
	// Arrange: a lane of three: Heartbeat 1, Accept 2, Heartbeat 3.
	mb := &mailbox{}
	for _, m := range []paxos.Message{msg(paxos.MsgHeartbeat, 1), msg(paxos.MsgAccept, 2), msg(paxos.MsgHeartbeat, 3)} {
		if mb.push(laneA, m, 3) {
			t.Fatalf("evicted below the bound")
		}
	}

	// Act: a fourth heartbeat.
	evicted := mb.push(laneA, msg(paxos.MsgHeartbeat, 4), 3)

	// Check: the oldest heartbeat went, the Accept stayed.
	if !evicted || !slices.Equal(laneIDs(mb, laneA), []uint64{2, 3, 4}) {
		t.Fatalf("evicted %v lane %v, want true [2 3 4]", evicted, laneIDs(mb, laneA))
	}

	// Act: a Commit, a kind the lane does not hold.
	evicted = mb.push(laneA, msg(paxos.MsgCommit, 5), 3)

	// Check: the lane's oldest message went.
	if !evicted || !slices.Equal(laneIDs(mb, laneA), []uint64{3, 4, 5}) || mb.count != 3 {
		t.Fatalf("evicted %v lane %v count %d, want true [3 4 5] 3", evicted, laneIDs(mb, laneA), mb.count)
	}
}

// docs/design/host.md: "Lanes are drained round-robin into Deliver batches of
// at most DeliveryBatch messages."
func TestMailbox_LanesDrainRoundRobin(t *testing.T) {
	// Arrange: three messages on A, three on B, one on C; pushed lane by
	// lane, C first (a lane takes its turn from its first message).
	mb := &mailbox{}
	mb.push(laneC, msg(paxos.MsgAccept, 31), 16)
	for i := range uint64(3) {
		mb.push(laneA, msg(paxos.MsgAccept, 11+i), 16)
	}
	for i := range uint64(3) {
		mb.push(laneB, msg(paxos.MsgAccept, 21+i), 16)
	}

	// Act.
	first := mb.take(4)
	rest := mb.take(100)

	// Check: one message per lane per turn, each lane in FIFO order, and the
	// second take resumes where the first stopped.
	if !slices.Equal(ids(first), []uint64{31, 11, 21, 12}) {
		t.Fatalf("first take = %v, want [31 11 21 12]", ids(first))
	}
	if !slices.Equal(ids(rest), []uint64{22, 13, 23}) {
		t.Fatalf("second take = %v, want [22 13 23]", ids(rest))
	}
	for _, e := range append(first, rest...) {
		if want := map[uint64]journal.ID{1: laneA, 2: laneB, 3: laneC}[e.Msg.Ctx/10]; e.Journal != want {
			t.Fatalf("message %d carried journal %v, want %v", e.Msg.Ctx, e.Journal, want)
		}
	}
	if mb.count != 0 || mb.take(8) != nil {
		t.Fatalf("mailbox not empty after draining: count %d", mb.count)
	}
}

// mailbox.take: a lane that gets messages joins the turn order at its
// back, whatever its journal id; the lanes already waiting keep their turns.
func TestMailbox_NewLaneJoinsAtTheBack(t *testing.T) {
	// Arrange: B and C queued, B taken: the turn is C's.
	mb := &mailbox{}
	mb.push(laneB, msg(paxos.MsgAccept, 21), 16)
	mb.push(laneB, msg(paxos.MsgAccept, 22), 16)
	mb.push(laneC, msg(paxos.MsgAccept, 31), 16)
	if got := ids(mb.take(1)); !slices.Equal(got, []uint64{21}) {
		t.Fatalf("take = %v", got)
	}

	// Act: a lane A, sorted before both, appears.
	mb.push(laneA, msg(paxos.MsgAccept, 11), 16)

	// Check: C still goes next, then B (back after its turn), then A.
	if got := ids(mb.take(3)); !slices.Equal(got, []uint64{31, 22, 11}) {
		t.Fatalf("take = %v, want [31 22 11]", got)
	}
}

// docs/design/host.md: "A busy journal can therefore evict only its own
// messages."
func TestMailbox_BusyJournalFillsOnlyItsOwnLane(t *testing.T) {
	// Arrange: B holds two messages.
	const laneMax = 16
	mb := &mailbox{}
	mb.push(laneB, msg(paxos.MsgHeartbeat, 1), laneMax)
	mb.push(laneB, msg(paxos.MsgAccept, 2), laneMax)

	// Act: A pushes far more than its lane holds, of every kind B holds.
	evictions := 0
	for i := range uint64(200) {
		typ := paxos.MsgHeartbeat
		if i%2 == 1 {
			typ = paxos.MsgAccept
		}
		if mb.push(laneA, msg(typ, 100+i), laneMax) {
			evictions++
		}
	}

	// Check: A is at its bound and kept its newest; B lost nothing.
	if len(mb.lane(laneA).msgs) != laneMax || evictions != 200-laneMax {
		t.Fatalf("lane A holds %d (evictions %d), want %d", len(mb.lane(laneA).msgs), evictions, laneMax)
	}
	if got := laneIDs(mb, laneA); got[0] != 300-laneMax || got[laneMax-1] != 299 {
		t.Fatalf("lane A kept %v, want the newest %d", got, laneMax)
	}
	if !slices.Equal(laneIDs(mb, laneB), []uint64{1, 2}) || mb.count != laneMax+2 {
		t.Fatalf("lane B = %v count %d, want [1 2] and %d", laneIDs(mb, laneB), mb.count, laneMax+2)
	}
}

// docs/design/host.md, quarantine: "its queued messages are dropped"
// (mailbox.drop).
func TestMailbox_DropForgetsOneJournal(t *testing.T) {
	// Arrange.
	mb := &mailbox{}
	for i := range uint64(5) {
		mb.push(laneA, msg(paxos.MsgAccept, 10+i), 16)
	}
	mb.push(laneB, msg(paxos.MsgAccept, 20), 16)

	// Act.
	mb.drop(laneA)
	mb.drop(laneC) // a journal with no lane: nothing happens

	// Check.
	if mb.count != 1 {
		t.Fatalf("count = %d, want 1", mb.count)
	}
	if got := mb.take(8); !slices.Equal(ids(got), []uint64{20}) || got[0].Journal != laneB {
		t.Fatalf("take after drop = %v, want only B's message", ids(got))
	}

	// Check: the lane is usable again.
	mb.push(laneA, msg(paxos.MsgAccept, 99), 16)
	if got := ids(mb.take(8)); !slices.Equal(got, []uint64{99}) {
		t.Fatalf("take = %v, want [99]", got)
	}
}

// Tunables.DeliveryBatch: "bounds the messages in one Deliver" (take(n)).
func TestMailbox_TakeBoundsABatch(t *testing.T) {
	// Arrange.
	mb := &mailbox{}
	for i := range uint64(20) {
		mb.push(laneA, msg(paxos.MsgAccept, i), 64)
	}

	// Act and check.
	if mb.take(0) != nil || mb.take(-1) != nil {
		t.Fatalf("take of a non-positive bound returned messages")
	}
	if got := mb.take(8); len(got) != 8 || got[0].Msg.Ctx != 0 || got[7].Msg.Ctx != 7 {
		t.Fatalf("take(8) = %v", ids(got))
	}
	if got := mb.take(8); len(got) != 8 || got[0].Msg.Ctx != 8 {
		t.Fatalf("second take(8) = %v", ids(got))
	}
	if got := mb.take(8); len(got) != 4 || mb.count != 0 {
		t.Fatalf("third take(8) = %v, count %d", ids(got), mb.count)
	}
	if (&mailbox{}).take(8) != nil {
		t.Fatalf("an empty mailbox returned messages")
	}
}

// A property against a naive model: with no lane ever full,
// the mailbox is a FIFO per lane; every message pushed comes out once, in
// its lane's order, and count matches what is queued.
func TestMailbox_MatchesPerLaneFIFOModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	lanes := []journal.ID{laneA, laneB, laneC}
	mb := &mailbox{}
	model := map[journal.ID][]uint64{}
	var next uint64
	for step := range 5000 {
		if rng.IntN(3) > 0 {
			j := lanes[rng.IntN(len(lanes))]
			next++
			if mb.push(j, msg(paxos.MsgAccept, next), 1<<20) {
				t.Fatalf("step %d: eviction below the bound", step)
			}
			model[j] = append(model[j], next)
		} else {
			for _, e := range mb.take(1 + rng.IntN(8)) {
				q := model[e.Journal]
				if len(q) == 0 || q[0] != e.Msg.Ctx {
					t.Fatalf("step %d: took %d from %v, model lane %v", step, e.Msg.Ctx, e.Journal, q)
				}
				model[e.Journal] = q[1:]
			}
		}
		queued := 0
		for _, q := range model {
			queued += len(q)
		}
		if mb.count != queued {
			t.Fatalf("step %d: count %d, model %d", step, mb.count, queued)
		}
	}
}
