// This file checks the operator's handoff (Client.Handoff, Admin.Handoff)
// against a journal of the shared in-process cell (network_test.go): three
// real machines over gRPC. A follower asked directly refuses not_leader
// and names the leader. Client.Handoff moves the leadership to the
// follower named, and Inspect then shows it leading at the very ballot the
// old leader held (no election ran: an election would have raised it); a
// Writer that appended before goes on appending, and every record reads
// back. Asking for the node that leads changes nothing; a node id outside
// the cell is ErrUnknownMachine. A second hop works: the inherited
// leadership (one hop only) re-elects itself first, then hands on.
// DPaxos §4 (Relinquishment).
package client_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/wire"
)

// leaderOf is the one answer of sts that says it leads, or fails.
func leaderOf(t *testing.T, sts []client.MemberStatus) client.MemberStatus {
	t.Helper()
	var out []client.MemberStatus
	for _, st := range sts {
		if st.Err == nil && st.Role == "leader" {
			out = append(out, st)
		}
	}
	if len(out) != 1 {
		t.Fatalf("%d leaders in %+v, want one", len(out), sts)
	}
	return out[0]
}

func TestHandoffMovesTheLeaderToTheNamedNodeWithoutAnElection(t *testing.T) {
	// Arrange: a Writer with five records; the leader and a follower.
	cell, id := cellJournal(t)
	ctx := testCtx(t)
	c := dial(t, cell.Addrs()...)
	w := c.Journal(id).NewWriter(seeded(110))
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	appendN := func(n int) {
		t.Helper()
		for range n {
			r := []byte(fmt.Sprintf("h%d", len(want)+1))
			if _, err := w.Append(ctx, r); err != nil {
				t.Fatalf("append %s: %v", r, err)
			}
			want = append(want, r)
		}
	}
	appendN(5)
	old := leaderOf(t, c.Inspect(ctx, id))
	var follower client.MemberStatus
	for _, st := range c.Inspect(ctx, id) {
		if st.Err == nil && st.NodeID != old.NodeID {
			follower = st
			break
		}
	}
	oldBallot := client.Ballot{Round: old.PromisedRound, Node: old.PromisedNode}

	// Act: ask the follower directly, then hand on through the Client.
	cc, err := grpc.NewClient(follower.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	refused, err := pb.NewAdminClient(cc).Handoff(ctx, &pb.HandoffRequest{Journal: wire.JournalIDToPB(id), To: old.NodeID})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Handoff(ctx, id, paxos.NodeID(follower.NodeID))

	// Check: the follower refused and named the leader; the leadership
	// moved to it at the old ballot.
	if refused.GetHandedOff() || !strings.HasPrefix(refused.GetRefusal(), "not_leader") ||
		refused.GetLeaderHint() != old.NodeID {
		t.Errorf("a follower asked: %v; want not_leader naming %016x", refused, old.NodeID)
	}
	if err != nil || got != paxos.NodeID(follower.NodeID) {
		t.Fatalf("Handoff to %016x: %016x, %v", follower.NodeID, uint64(got), err)
	}
	now := leaderOf(t, c.Inspect(ctx, id))
	if now.NodeID != follower.NodeID || (client.Ballot{Round: now.PromisedRound, Node: now.PromisedNode}) != oldBallot {
		t.Fatalf("after the handoff %016x leads at %d.%d; want %016x at %s (no election)",
			now.NodeID, now.PromisedRound, now.PromisedNode, follower.NodeID, oldBallot)
	}

	// Act: the Writer goes on.
	appendN(5)

	// Check: every record reads back in order.
	back := readAll(t, ctx, c.Journal(id), 1, journal.Seq(len(want)+1))
	if fmt.Sprint(back) != fmt.Sprint(want) {
		t.Fatalf("read back %q, want %q", back, want)
	}

	// Act and check: the leader itself; a stranger.
	if got, err := c.Handoff(ctx, id, paxos.NodeID(follower.NodeID)); err != nil || got != paxos.NodeID(follower.NodeID) {
		t.Errorf("handoff to the leader itself: %016x, %v; want nothing changed", uint64(got), err)
	}
	if _, err := c.Handoff(ctx, id, 0xdead); !errors.Is(err, client.ErrUnknownMachine) {
		t.Errorf("handoff to a stranger: %v; want ErrUnknownMachine", err)
	}
	if st := leaderOf(t, c.Inspect(ctx, id)); st.NodeID != follower.NodeID {
		t.Errorf("after the refusals %016x leads, want %016x", st.NodeID, follower.NodeID)
	}

	// Act: a second hop. The inherited leadership re-elects itself first
	// (one hop only), then hands on.
	got, err = c.Handoff(ctx, id, paxos.NodeID(old.NodeID))

	// Check: the old leader leads again, at a ballot of the leader that
	// handed on (its own re-election), not an election of the old one's.
	if err != nil || got != paxos.NodeID(old.NodeID) {
		t.Fatalf("the second hop: %016x, %v; want %016x", uint64(got), err, old.NodeID)
	}
	again := leaderOf(t, c.Inspect(ctx, id))
	if again.PromisedNode != follower.NodeID || again.PromisedRound != oldBallot.Round+1 {
		t.Errorf("after the second hop %016x leads at %d.%016x; want the re-elected %016x's ballot %d",
			again.NodeID, again.PromisedRound, again.PromisedNode, follower.NodeID, oldBallot.Round+1)
	}
}

// ExampleClient_Handoff moves a journal's leadership off its leader before
// the leader's machine is restarted.
func ExampleClient_Handoff() {
	ctx := context.Background()
	c, err := client.Dial(ctx, []string{"10.0.0.1:7401", "10.0.0.2:7401", "10.0.0.3:7401"})
	if err != nil {
		return
	}
	defer c.Close()
	id := journal.ID{Tenant: 1, Journal: 2}
	leader, err := c.Handoff(ctx, id, 0) // 0: the acceptor the leader finds most caught up
	switch {
	case errors.Is(err, client.ErrCannotHandoff):
		// The leader refused (a handed-on leadership, a long open tail):
		// nothing changed.
	case err != nil:
	default:
		_ = leader // leads now, at the old ballot
	}
}
