// This file checks the operator's handoff (Client.Handoff, Admin.Handoff)
// against a journal of the shared in-process cell (cell_test.go): three
// real machines over gRPC. A follower asked directly refuses not_leader
// and names the leader. Client.Handoff moves the leadership to the
// follower named, and Inspect then shows it leading at the very ballot the
// old leader held (no election ran: an election would have raised it); a
// Writer that appended before goes on appending, and every record reads
// back. Asking for the node that leads changes nothing; a node id outside
// the cell is ErrUnknownMachine. A second hop works: the inherited
// leadership (one hop only) re-elects itself first, then hands on.
// DPaxos §4 (Relinquishment).
package admin_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client/admin"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/internal/testcell"
	"github.com/parosdb/paros/wire"
)

// leaderOf is the one answer of sts that says it leads, or fails.
func leaderOf(t *testing.T, sts []admin.MemberStatus) admin.MemberStatus {
	t.Helper()
	var out []admin.MemberStatus
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
	c, adm := dial(t, cell.Addrs()...)
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
	old := leaderOf(t, adm.Inspect(ctx, id))
	var follower admin.MemberStatus
	for _, st := range adm.Inspect(ctx, id) {
		if st.Err == nil && st.NodeID != old.NodeID {
			follower = st
			break
		}
	}
	oldBallot := old.Promised

	// Act: ask the follower directly, then hand on through the Client.
	cc, err := grpc.NewClient(follower.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	refused, err := pb.NewAdminClient(cc).Handoff(ctx, &pb.HandoffRequest{Journal: wire.JournalIDToPB(id), To: uint64(old.NodeID)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := adm.Handoff(ctx, id, follower.NodeID)

	// Check: the follower refused and named the leader; the leadership
	// moved to it at the old ballot.
	if refused.GetHandedOff() || !strings.HasPrefix(refused.GetRefusal(), "not_leader") ||
		admin.NodeID(refused.GetLeaderHint()) != old.NodeID {
		t.Errorf("a follower asked: %v; want not_leader naming %s", refused, old.NodeID)
	}
	if err != nil || got != follower.NodeID {
		t.Fatalf("Handoff to %s: %s, %v", follower.NodeID, got, err)
	}
	now := leaderOf(t, adm.Inspect(ctx, id))
	if now.NodeID != follower.NodeID || now.Promised != oldBallot {
		t.Fatalf("after the handoff %s leads at %s; want %s at %s (no election)",
			now.NodeID, now.Promised, follower.NodeID, oldBallot)
	}

	// Act: the Writer goes on.
	appendN(5)

	// Check: every record reads back in order.
	back := testcell.ReadAll(t, ctx, c.Journal(id), 1, journal.Seq(len(want)+1))
	if fmt.Sprint(back) != fmt.Sprint(want) {
		t.Fatalf("read back %q, want %q", back, want)
	}

	// Act and check: the leader itself; a stranger.
	if got, err := adm.Handoff(ctx, id, follower.NodeID); err != nil || got != follower.NodeID {
		t.Errorf("handoff to the leader itself: %s, %v; want nothing changed", got, err)
	}
	if _, err := adm.Handoff(ctx, id, 0xdead); !errors.Is(err, admin.ErrUnknownMachine) {
		t.Errorf("handoff to a stranger: %v; want ErrUnknownMachine", err)
	}
	if st := leaderOf(t, adm.Inspect(ctx, id)); st.NodeID != follower.NodeID {
		t.Errorf("after the refusals %s leads, want %s", st.NodeID, follower.NodeID)
	}

	// Act: a second hop. The inherited leadership re-elects itself first
	// (one hop only), then hands on.
	got, err = adm.Handoff(ctx, id, old.NodeID)

	// Check: the old leader leads again, at a ballot of the leader that
	// handed on (its own re-election), not an election of the old one's.
	if err != nil || got != old.NodeID {
		t.Fatalf("the second hop: %s, %v; want %s", got, err, old.NodeID)
	}
	again := leaderOf(t, adm.Inspect(ctx, id))
	if again.Promised.Node != follower.NodeID || again.Promised.Round != oldBallot.Round+1 {
		t.Errorf("after the second hop %s leads at %d.%s; want the re-elected %s's ballot %d",
			again.NodeID, again.Promised.Round, again.Promised.Node, follower.NodeID, oldBallot.Round+1)
	}
}
