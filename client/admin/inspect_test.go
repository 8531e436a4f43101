// This file checks Client.Inspect against the shared in-process cell
// (cell_test.go): one typed MemberStatus per server, in Servers order,
// each answered, with exactly one "leader" (the one the cell names) and
// the same members, quorum and journal view everywhere; a machine's facts
// (no journal named) list every journal it serves; and an unknown journal
// is client.ErrUnknownJournal on every server.
package admin_test

import (
	"errors"
	"testing"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/internal/testcell"
)

func TestInspectReturnsOneMemberStatusPerServerWithExactlyOneLeader(t *testing.T) {
	// Arrange: a journal with a leader, and the cell's servers in reverse
	// order.
	c, id := cellJournal(t)
	ctx := testCtx(t)
	leader, err := c.WaitLeader(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	addrs := c.Addrs()
	for i, k := 0, len(addrs)-1; i < k; i, k = i+1, k-1 {
		addrs[i], addrs[k] = addrs[k], addrs[i]
	}
	cl, adm := dial(t, addrs...)

	// Act: the journal's facts, the machines' facts, and an unknown
	// journal's.
	members := adm.Inspect(ctx, id)
	machines := adm.Inspect(ctx, journal.ID{})
	unknown := adm.Inspect(ctx, journal.ID{Tenant: 0xdead, Journal: 0xbeef})

	// Check: one status per server in Servers order, each answered, with
	// exactly one leader — the one the cell names — and the same members,
	// quorum and journal view everywhere.
	if len(members) != len(addrs) || len(machines) != len(addrs) || len(unknown) != len(addrs) {
		t.Fatalf("%d, %d, %d statuses for %d servers", len(members), len(machines), len(unknown), len(addrs))
	}
	leaders, nodes := 0, map[admin.NodeID]bool{}
	for i, m := range members {
		if m.Addr != cl.Servers()[i] || m.Err != nil || m.NodeID == 0 || m.CellID == 0 || m.Quarantined {
			t.Fatalf("status %d: %+v", i, m)
		}
		if len(m.Members) != 3 || m.Quorum != admin.Majority() || m.Promised.Round == 0 || m.View.NextSeq < journal.FirstSeq {
			t.Fatalf("status %d: members %v, quorum %s, promised %s, view %+v", i, m.Members, m.Quorum, m.Promised, m.View)
		}
		nodes[m.NodeID] = true
		if m.Role == "leader" {
			leaders++
			if m.Addr != c.Nodes[leader].Addr {
				t.Fatalf("%s says it leads; the cell says %s does", m.Addr, c.Nodes[leader].Addr)
			}
		}
	}
	if leaders != 1 || len(nodes) != len(addrs) {
		t.Fatalf("%d leaders among %d distinct nodes: %+v", leaders, len(nodes), members)
	}
	// Each machine serves the plan's journals and the cell's two
	// control-plane journals (the registry and the election journal).
	for i, m := range machines {
		if m.Err != nil || m.NodeID != members[i].NodeID || len(m.Journals) != testcell.PoolJournals+2 || m.Role != "" {
			t.Fatalf("machine status %d: %+v", i, m)
		}
	}
	for i, m := range unknown {
		if !errors.Is(m.Err, client.ErrUnknownJournal) || m.Role != "" {
			t.Fatalf("unknown journal, status %d: %+v; want ErrUnknownJournal", i, m)
		}
	}
}
