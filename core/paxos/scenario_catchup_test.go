package paxos_test

// This file holds the scenario tests of flow and catch-up: the pipeline
// window, promise paging, catch-up pages and window, and a deposed leader
// announcing a slot it learned. They are scripts over the test network of
// harness_test.go with the helpers of scenario_test.go; the oracles of
// oracles_test.go run after every step as well.

import (
	"fmt"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
)

// The client entry. The leader keeps at most PipelineWindow Accepts in flight
// and holds the rest until decisions come back; beyond ProposeQueueMax open
// rounds it answers Busy; a follower answers NotLeader with the leader it
// last heard.
func TestScenarioPipelineWindow(t *testing.T) {
	opts := scenarioOpts()
	opts.PipelineWindow, opts.ProposeQueueMax = 2, 5
	net := newNetwork(t, majority(3), journal.ModeMulti, opts, 11)
	n1, n2 := net.node(1), net.node(2)
	net.electLeader(n1)

	// five proposals: slots 1–5, but only slots 1 and 2 leave.
	for i := range 5 {
		expectEq(t, "slot", propose(net, n1, unfenced(fmt.Sprint("w", i))), paxos.Slot(i+1))
	}
	for _, to := range []paxos.NodeID{2, 3} {
		expectEq(t, fmt.Sprint("slots in flight to ", to), fmt.Sprint(acceptSlots(inPool(net, match{typ: paxos.MsgAccept, to: to}))), "[1 2]")
	}

	// a sixth is refused Busy; a follower refuses NotLeader, naming node 1.
	res := n1.node.Propose(journal.Entry{Records: [][]byte{[]byte("w5")}})
	expectEq(t, "sixth proposal", res.Status, paxos.Busy)
	res = n2.node.Propose(journal.Entry{Records: [][]byte{[]byte("w5")}})
	expectEq(t, "follower's answer", res.Status, paxos.NotLeader)
	expectEq(t, "follower's hint", res.LeaderHint, paxos.NodeID(1))

	// votes for slots 1 and 2 come back: slots 3 and 4 leave, then 5.
	deliverOnly(net, match{typ: paxos.MsgAccept})
	syncAll(net)
	deliverOnly(net, match{typ: paxos.MsgAccepted})
	expectEq(t, "chosen", n1.node.ChosenIndex(), paxos.Slot(2))
	expectEq(t, "next in flight", fmt.Sprint(acceptSlots(inPool(net, match{typ: paxos.MsgAccept, to: 2}))), "[3 4]")
	deliverOnly(net, match{typ: paxos.MsgAccept})
	syncAll(net)
	deliverOnly(net, match{typ: paxos.MsgAccepted})
	expectEq(t, "last in flight", fmt.Sprint(acceptSlots(inPool(net, match{typ: paxos.MsgAccept, to: 2}))), "[5]")
	exchange(net)
	for _, tn := range net.nodes {
		expectEq(t, "applied", tn.node.Applied(), paxos.Slot(5))
	}
	expectEq(t, "proposal after the window drained", n1.node.Propose(journal.Entry{Records: [][]byte{[]byte("w5")}}).Status, paxos.Proposed)
	net.oracles.converged()
}

// Election: Promises are paged (PROMISE_BATCH) with a
// continuation cursor, and a sender counts toward the Phase-1 quorum only
// after its terminal page. Slots 1–5 were accepted by nodes 2 and 3 but
// their Commit was lost with node 1. Node 2 campaigns with PromiseBatch = 2:
// node 3 answers in three pages — [1 2] then [3 4] then [5] — and node 2
// leads only once the last one is in, re-proposing all five.
func TestScenarioPromisePaging(t *testing.T) {
	opts := scenarioOpts()
	opts.PromiseBatch = 2
	net := newNetwork(t, majority(3), journal.ModeMulti, opts, 12)
	n1, n2, n3 := net.node(1), net.node(2), net.node(3)

	// five writes reach nodes 2 and 3; node 1 crashes before announcing them.
	net.electLeader(n1)
	for i := range 5 {
		propose(net, n1, unfenced(fmt.Sprint("w", i)))
	}
	deliverOnly(net, match{typ: paxos.MsgAccept})
	net.sync(n2)
	net.sync(n3)
	take(net, match{})
	net.crash(n1)
	expectEq(t, "node 2 chosen", n2.node.ChosenIndex(), paxos.Slot(0))

	// node 2 campaigns from slot 1; node 3 pages its five records.
	campaign(net, n2)
	type page struct {
		from, next paxos.Slot
		slots      string
	}
	var pages []page
	for range 5 {
		deliverOnly(net, match{typ: paxos.MsgPrepare, from: 2, to: 3})
		net.sync(n3)
		ps := take(net, match{typ: paxos.MsgPromise, to: 2})
		if len(ps) != 1 {
			t.Fatalf("promise pages in flight: %v", ps)
		}
		p := ps[0]
		var slots []paxos.Slot
		for _, e := range p.Entries {
			slots = append(slots, e.Slot)
		}
		pages = append(pages, page{p.Slot, p.Next, fmt.Sprint(slots)})
		expectEq(t, "role before the terminal page", n2.node.Role(), "candidate")
		deliverMsgs(net, p)
		if p.Next == 0 {
			break
		}
	}
	expectEq(t, "pages", fmt.Sprint(pages), "[{1 3 [1 2]} {3 5 [3 4]} {5 0 [5]}]")
	expectEq(t, "role after the terminal page", n2.node.Role(), "leader")
	expectEq(t, "re-proposed", n2.node.Counters().Recovered, uint64(5))

	net.boot(n1)
	net.settle(10)
	for i := range 5 {
		expectFolded(t, net, paxos.Slot(i+1), unfenced(fmt.Sprint("w", i)))
	}
	net.oracles.converged()
}

// lagging is three nodes where node 1 leads and chose slots 1..chosen
// while node 3 was down; node 3 is back and has heard a heartbeat, so its
// first CatchUpRequest is in the pool.
func lagging(t *testing.T, opts paxos.Options, chosen int) (*network, *tnode) {
	t.Helper()
	net := newNetwork(t, majority(3), journal.ModeMulti, opts, 13)
	n1, n3 := net.node(1), net.node(3)
	net.electLeader(n1)
	net.crash(n3)
	for i := range chosen {
		propose(net, n1, unfenced(fmt.Sprint("w", i)))
	}
	exchange(net)
	expectEq(t, "leader chosen", n1.node.ChosenIndex(), paxos.Slot(chosen))
	net.boot(n3)
	for len(inPool(net, match{typ: paxos.MsgHeartbeat, to: 3})) == 0 {
		net.tick(n1)
		net.sync(n1)
	}
	deliverOnly(net, match{typ: paxos.MsgHeartbeat, to: 3})
	return net, n3
}

// catchUpRound delivers node 3's pending CatchUpRequests to node 1 and
// takes node 1's answers out of the pool: the slot asked from, and the
// pages (ok is false when node 3 asked nothing).
func catchUpRound(net *network) (paxos.Slot, []paxos.Message, bool) {
	reqs := take(net, match{typ: paxos.MsgCatchUpRequest, from: 3})
	if len(reqs) == 0 {
		return 0, nil, false
	}
	deliverMsgs(net, reqs...)
	net.sync(net.node(1))
	return reqs[0].Slot, take(net, match{typ: paxos.MsgCatchUpResponse, to: 3}), true
}

// Catch-up: a lagging node is replayed the chosen log in pages of at most
// CatchUpBatch entries, asking again from where each page ended. Node 3
// misses five chosen slots; with CatchUpBatch = 2 and a window of one page it
// asks from 1, 3 and 5 and receives 2, 2 and 1 entries.
func TestScenarioCatchUpPages(t *testing.T) {
	opts := scenarioOpts()
	opts.CatchUpBatch = 2
	opts.CatchUpPages = 1
	// slots 1–5 are chosen while node 3 is down; it returns and hears a
	// heartbeat.
	net, n3 := lagging(t, opts, 5)

	// each request is answered with one bounded page.
	var asked []paxos.Slot
	var sizes []int
	for range 10 {
		from, resp, ok := catchUpRound(net)
		if !ok {
			break
		}
		asked = append(asked, from)
		sizes = append(sizes, len(resp[0].Entries))
		deliverMsgs(net, resp...)
		net.sync(n3)
	}
	expectEq(t, "asked from", fmt.Sprint(asked), "[1 3 5]")
	expectEq(t, "page sizes", fmt.Sprint(sizes), "[2 2 1]")
	expectEq(t, "node 3 chosen", n3.node.ChosenIndex(), paxos.Slot(5))
	net.settle(5)
	net.oracles.converged()
}

// One request is answered with a window of up to CatchUpPages pages, so a
// node far behind moves a window per round trip, not a page. Every page
// but the window's last names where the next starts (Next); only the last
// (Next 0) makes the requester ask again. Node 3 misses seven chosen
// slots; with CatchUpBatch = 2 and a window of 2 pages it asks from 1 and
// 5, and is answered pages of 2, 2 (Next 3, then 0) and 2, 1 (Next 7,
// then 0). A page lost from the middle of a window costs one more request,
// from where the learned prefix ends.
func TestScenarioCatchUpWindow(t *testing.T) {
	opts := scenarioOpts()
	opts.CatchUpBatch = 2
	opts.CatchUpPages = 2
	for _, lose := range []bool{false, true} {
		net, n3 := lagging(t, opts, 7)

		var asked []paxos.Slot
		var pages []string
		for round := range 10 {
			from, resp, ok := catchUpRound(net)
			if !ok {
				break
			}
			asked = append(asked, from)
			for _, r := range resp {
				pages = append(pages, fmt.Sprintf("%d/%d", len(r.Entries), r.Next))
			}
			if lose && round == 0 {
				resp = resp[1:] // the window's first page is lost
			}
			deliverMsgs(net, resp...)
			net.sync(n3)
		}
		if lose {
			expectEq(t, "asked from (first page lost)", fmt.Sprint(asked), "[1 1 5]")
			expectEq(t, "pages (first page lost)", fmt.Sprint(pages), "[2/3 2/0 2/3 2/0 2/7 1/0]")
		} else {
			expectEq(t, "asked from", fmt.Sprint(asked), "[1 5]")
			expectEq(t, "pages", fmt.Sprint(pages), "[2/3 2/0 2/7 1/0]")
		}
		expectEq(t, "node 3 chosen", n3.node.ChosenIndex(), paxos.Slot(7))
		net.settle(5)
		net.oracles.converged()
	}
}

// Paxos Made Simple §2.2, learning a chosen value — BUG. A Commit c from the
// leader of ballot b tells a follower that a record it holds at exactly
// ballot b is the chosen value (node_replication.go, learnCommit). That is
// true only if the leader's proposal at b is the chosen value for every slot
// <= c. A leader that was deposed without knowing it can learn a slot by
// catch-up — a value chosen at a higher ballot — and then announce it under
// its own ballot; a follower holding that leader's own losing proposal at
// that ballot folds the wrong value.
//
// Five nodes. Node 1 (1.1) chooses p at slot 1; its Commit to node 2 is
// delayed. Node 2 wins 2.2 with nodes 3 and 4, re-proposes p and proposes v
// at slot 2, which only node 3 accepts. Partitioned from {2,3}, node 5 wins
// 2.5 with nodes 1 and 4 and chooses w at slot 2. The delayed Commit makes
// node 2, still leading at 2.2, ask node 1 for catch-up; it learns w at slot
// 2 and sends Commit(2.2, 2) to node 3, which holds v at 2.2.
func TestScenarioDeposedLeaderAnnouncesLearnedSlot(t *testing.T) {
	net := newNetwork(t, majority(5), journal.ModeMulti, scenarioOpts(), 14)
	n1, n2, n3, n5 := net.node(1), net.node(2), net.node(3), net.node(5)
	// v and w differ in record count so that their String forms differ.
	p, v, w := unfenced("p"), unfenced("v"), unfenced("w", "w")

	// node 1 chooses p at slot 1; the Commit to node 2 is kept back.
	net.electLeader(n1)
	propose(net, n1, p)
	deliverOnly(net, match{typ: paxos.MsgAccept})
	syncAll(net)
	deliverOnly(net, match{typ: paxos.MsgAccepted, to: 1})
	net.sync(n1)
	stale := take(net, match{typ: paxos.MsgCommit, to: 2})
	expectEq(t, "delayed Commits", len(stale), 1)
	exchange(net)
	expectEq(t, "node 2 chosen", n2.node.ChosenIndex(), paxos.Slot(0))

	// node 2 wins 2.2 with nodes 3 and 4; then {2,3} are cut off, and v at
	// slot 2 reaches node 3 only.
	campaign(net, n2)
	deliverOnly(net, match{typ: paxos.MsgPrepare, to: 3})
	deliverOnly(net, match{typ: paxos.MsgPrepare, to: 4})
	take(net, match{typ: paxos.MsgPrepare})
	syncAll(net)
	deliverOnly(net, match{typ: paxos.MsgPromise, to: 2})
	expectEq(t, "node 2 ballot", n2.node.LeaderBallot(), paxos.Ballot{Round: 2, Node: 2})
	net.cut = map[paxos.NodeID]bool{2: true, 3: true}
	exchange(net)
	expectEq(t, "v's slot", propose(net, n2, v), paxos.Slot(2))
	exchange(net)
	if b, c, _ := n3.node.Acceptor().Record(2); !c.Equal(v) || b != n2.node.LeaderBallot() {
		t.Fatalf("node 3's slot 2: %s at %s", c, b)
	}

	// node 5 wins 2.5 with nodes 1 and 4 and chooses w at slot 2.
	net.electLeader(n5)
	expectEq(t, "w's slot", propose(net, n5, w), paxos.Slot(2))
	exchange(net)
	expectFolded(t, net, 2, w, n1, net.node(4), n5)

	// the delayed Commit reaches node 2, which asks node 1 for catch-up
	// across the partition and learns w at slot 2 while still leading.
	stepAcross(net, stale[0])
	for _, m := range take(net, match{typ: paxos.MsgCatchUpRequest, from: 2, to: 1}) {
		stepAcross(net, m)
	}
	net.sync(n1)
	for _, m := range take(net, match{typ: paxos.MsgCatchUpResponse, from: 1, to: 2}) {
		stepAcross(net, m)
	}
	expectFolded(t, net, 2, w, n2)

	// whatever node 2 now tells node 3, node 3 must never fold v at slot 2.
	exchange(net)
	if c, ok := n3.applied[2]; ok && !c.Command.Equal(w) {
		t.Fatalf("node 3 folded %s at slot 2; %s was chosen", c.Command, w)
	}
	net.cut = nil
	net.settle(20)
	expectFolded(t, net, 2, w)
	net.oracles.converged()
}
