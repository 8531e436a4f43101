package runtime

// This file checks the fair queue in front of the event loop (fairq.go)
// and the inbox it keeps client work out of: a submitter's backlog does
// not delay another submitter's call past the first turn; while another
// is active, one submitter's slot-taking calls in the host stop at
// submitterSlotCallsMax until the host answers some, and another's still
// go; a lone submitter's stream batches go whole, and again once the
// other was quiet for activeLinger; a
// submitter past
// submitterQueuedCallsMax waits for room (and only it); and a Runtime
// whose clients submitted more calls than the inbox holds still takes a
// peer's Deliver in (checked on a Runtime built by hand, with no goroutine
// started). A submission cut by the bounds is answered under its own
// indices.

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/parosdb/paros/host"
)

// writes returns n write calls.
func writes(n int) []host.Call { return callsOf(host.CallWrite, n) }

// callsOf returns n calls of kind k.
func callsOf(k host.CallKind, n int) []host.Call {
	cs := make([]host.Call, n)
	for i := range cs {
		cs[i] = host.Call{ID: host.CallID(i + 1), Kind: k}
	}
	return cs
}

func pushOrFail(t *testing.T, q *fairQueue, who string, calls []host.Call) *submission {
	t.Helper()
	s := newSubmission(WithSubmitter(context.Background(), who), calls, func(int, host.Response) {})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := q.push(ctx, nil, s); err != nil {
		t.Fatalf("push for %s: %v", who, err)
	}
	return s
}

func TestFairQueueTakesAnotherSubmitterInTheFirstTurn(t *testing.T) {
	// Arrange: a flooder with a backlog of 16 batches of 256 reads (calls
	// that take no slot, so only the round robin bounds them), then one
	// honest read.
	q := newFairQueue()
	for range 16 {
		pushOrFail(t, q, "flood", callsOf(host.CallRead, submitQuantumCalls))
	}
	honest := pushOrFail(t, q, "honest", callsOf(host.CallRead, 1))

	// Act: the loop's first turn.
	turn := q.take()

	// Check: the honest read is in it, behind one quantum of the flood at
	// most, and the turn holds at most turnCallsMax calls.
	pos, n := -1, 0
	for i, s := range turn {
		if s == honest {
			pos = i
		}
		n += len(s.calls)
	}
	if pos < 0 || pos > 1 {
		t.Fatalf("the honest read is at %d of a first turn of %d submissions; want it first or second", pos, len(turn))
	}
	if n > turnCallsMax {
		t.Fatalf("the first turn holds %d calls, at most %d", n, turnCallsMax)
	}
}

// activeOther makes submitter who active with one write taken into the
// host and not answered.
func activeOther(t *testing.T, q *fairQueue, who string) {
	t.Helper()
	pushOrFail(t, q, who, writes(1))
	if turn := q.take(); len(turn) != 1 || turn[0].key != who {
		t.Fatalf("the loop took %d submissions, want %s's write", len(turn), who)
	}
}

// takeAll takes turns until nothing more can be taken and returns the
// calls taken.
func takeAll(q *fairQueue) int {
	taken := 0
	for turn := q.take(); len(turn) > 0; turn = q.take() {
		for _, s := range turn {
			taken += len(s.calls)
		}
	}
	return taken
}

func TestFairQueueBoundsASubmittersSlotsInTheHost(t *testing.T) {
	// Arrange: an honest writer with a write in the host, and a flooder
	// with 8 stream batches queued.
	q := newFairQueue()
	activeOther(t, q, "honest")
	for range 8 {
		pushOrFail(t, q, "flood", writes(submitQuantumCalls))
	}

	// Act: turns until nothing more can be taken, then an honest write.
	taken := takeAll(q)
	honest := pushOrFail(t, q, "honest", writes(1))
	next := q.take()

	// Check: the flooder's slot calls in the host stop at the bound; the
	// honest write still goes; the flooder's next batch goes once the host
	// answered enough of its calls.
	if taken != submitterSlotCallsMax {
		t.Fatalf("the loop took %d of one submitter's writes with none answered and another active, want %d", taken, submitterSlotCallsMax)
	}
	if len(next) != 1 || next[0] != honest {
		t.Fatalf("with the flooder at its bound the loop took %d submissions, want the honest write alone", len(next))
	}
	for range taken {
		q.answered("flood")
	}
	if turn := q.take(); len(turn) != 1 || turn[0].key != "flood" || len(turn[0].calls) != taken {
		t.Fatalf("after the flooder's %d writes were answered the loop took %d submissions, want %d more of its writes", taken, len(turn), taken)
	}
}

func TestFairQueueGivesALoneSubmitterWholeBatches(t *testing.T) {
	// Arrange: a lone pipelined stream with 8 batches queued, a clock.
	q := newFairQueue()
	now := time.Unix(1000, 0)
	q.now = func() time.Time { return now }
	for range 8 {
		pushOrFail(t, q, "stream", writes(submitQuantumCalls))
	}

	// Act: turns until nothing more can be taken.
	var parts []int
	for turn := q.take(); len(turn) > 0; turn = q.take() {
		for _, s := range turn {
			parts = append(parts, len(s.calls))
		}
	}

	// Check: its batches went whole, up to submitterSlotCallsAloneMax.
	if want := submitterSlotCallsAloneMax / submitQuantumCalls; len(parts) != want {
		t.Fatalf("a lone submitter's batches went in parts %v, want %d whole batches", parts, want)
	}
	for _, n := range parts {
		if n != submitQuantumCalls {
			t.Fatalf("a lone submitter's batches went in parts %v, want whole batches of %d", parts, submitQuantumCalls)
		}
	}

	// Act: another submitter writes once; then, its write answered,
	// activeLinger passes.
	for range submitterSlotCallsAloneMax {
		q.answered("stream")
	}
	pushOrFail(t, q, "honest", writes(1))
	whileOther := 0
	for turn := q.take(); len(turn) > 0; turn = q.take() {
		for _, s := range turn {
			if s.key == "stream" {
				whileOther += len(s.calls)
			}
		}
	}
	for range whileOther {
		q.answered("stream")
	}
	q.answered("honest")
	now = now.Add(activeLinger)
	afterLinger := takeAll(q)

	// Check: bounded while the other was active, the pipeline again after.
	if whileOther != submitterSlotCallsMax {
		t.Fatalf("within activeLinger of another's write the loop took %d of the stream's writes, want %d", whileOther, submitterSlotCallsMax)
	}
	if afterLinger != submitterSlotCallsAloneMax {
		t.Fatalf("once the other was quiet for activeLinger the loop took %d of the stream's writes, want %d", afterLinger, submitterSlotCallsAloneMax)
	}
}

func TestFairQueueHoldsOnlyTheSubmitterPastItsQueueBound(t *testing.T) {
	// Arrange: a flooder with submitterQueuedCallsMax calls queued.
	q := newFairQueue()
	for range submitterQueuedCallsMax / submitQuantumCalls {
		pushOrFail(t, q, "flood", writes(submitQuantumCalls))
	}

	// Act: one more flood batch waits; an honest write does not.
	pushed := make(chan error, 1)
	go func() {
		pushed <- q.push(context.Background(), nil, newSubmission(WithSubmitter(context.Background(), "flood"), writes(1), nil))
	}()
	pushOrFail(t, q, "honest", writes(1))
	select {
	case err := <-pushed:
		t.Fatalf("a push past the bound returned at once (%v); want it to wait", err)
	case <-time.After(50 * time.Millisecond):
	}
	q.take()

	// Check: the waiting push goes once the loop took some of the queue.
	select {
	case err := <-pushed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the push past the bound still waits after the loop took a turn")
	}
}

func TestClientCallsDoNotCrowdPeersOutOfTheInbox(t *testing.T) {
	// Arrange: a process whose clients (one submitter per call) submitted
	// as many writes as its inbox holds events.
	r := &Runtime{cfg: Config{NodeID: 1}, metrics: NewMetrics(nil), inbox: make(chan func(), inboxCapacity),
		fq: newFairQueue(), stopped: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := range inboxCapacity {
		cctx := WithSubmitter(ctx, "client-"+string(rune('a'+i%26)))
		if err := r.Submit(cctx, writes(1), func(int, host.Response) {}); err != nil {
			t.Fatalf("submit %d: %v", i, err)
		}
	}

	// Act: a peer's Deliver.
	r.Deliver(2, make([]host.Envelope, 3))

	// Check: it was taken in, none dropped.
	if got := counterValue(t, r.metrics.InboundDropped); got != 0 {
		t.Fatalf("%v Delivers dropped with the clients' calls waiting, want 0", got)
	}
	if got := counterValue(t, r.metrics.PeerMessagesReceived); got != 3 {
		t.Fatalf("%v peer messages taken in, want 3", got)
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var d dto.Metric
	if err := c.Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetCounter().GetValue()
}

func TestFairQueueCutsASubmissionAndKeepsItsIndices(t *testing.T) {
	// Arrange: one submission of 200 writes, another submitter active.
	q := newFairQueue()
	activeOther(t, q, "honest")
	first := pushOrFail(t, q, "flood", writes(200)).calls[0].ID

	// Act: take, answer what was taken, take again, until all went.
	var offs []int
	seen := 0
	for turn := q.take(); len(turn) > 0; turn = q.take() {
		for _, part := range turn {
			offs = append(offs, part.off)
			if part.calls[0].ID != first+host.CallID(seen) {
				t.Fatalf("a part starts at call %d, want %d", part.calls[0].ID, first+host.CallID(seen))
			}
			seen += len(part.calls)
			for range part.calls {
				q.answered("flood")
			}
		}
	}

	// Check: in parts of at most submitterSlotCallsMax, in order, each
	// under the index of its first call in the submission.
	if seen != 200 {
		t.Fatalf("%d of 200 writes taken", seen)
	}
	for i, off := range offs {
		if off != i*submitterSlotCallsMax {
			t.Fatalf("part %d at index %d, want %d (parts %v)", i, off, i*submitterSlotCallsMax, offs)
		}
	}
}
