// This file checks Client.Reconfigure and Client.Retire
// against a real cell of its own: three machines started in this process by
// internal/testcell (a matchmaker on each, TLS and an admin token), plus a
// fourth started idle on an empty dir. A Client dialled to the three
// founders only replaces a follower by the idle machine, named by its
// address, while a Writer appends; the leader then runs exactly the
// configuration asked for, introduced by a reconfiguration newer than the
// founding one, and every record reads back. Asking again for the
// configuration in force changes nothing. Once the leader's garbage
// collection is effective, the replaced machine is retirable: it retires
// with the leader's watermark, and the leader and a member refuse (leader,
// member). A configuration no node may run and a node id outside the cell
// are refused before anything changes (ErrInvalidConfiguration,
// ErrUnknownMachine). A configuration that leaves the leader out moves the
// journal to another leader, and a Writer's next append lands there.
// Matchmaker Paxos §3–§5 (reconfiguration, garbage collection,
// retirement).
package admin_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/internal/testcell"
)

func TestReconfigureReplacesAFollowerAndRetiresIt(t *testing.T) {
	// Arrange: a secure cell, an idle fourth machine, a Writer with ten
	// records.
	if testing.Short() {
		t.Skip("starts a four-machine cell")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cell, err := testcell.Start(ctx, t.TempDir(), testcell.Options{Secure: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cell.Close()
	idle, err := cell.AddIdle()
	if err != nil {
		t.Fatal(err)
	}
	id := cell.Journals[0]
	leader, err := cell.WaitLeader(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(ctx, cell.Addrs()[:3], cell.ClientOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	adm := admin.New(c)
	w := c.Journal(id).NewWriter(seeded(90))
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	appendN := func(n int) {
		t.Helper()
		for range n {
			r := []byte(fmt.Sprintf("r%d", len(want)+1))
			if _, err := w.Append(ctx, r); err != nil {
				t.Fatalf("append %s: %v", r, err)
			}
			want = append(want, r)
		}
	}
	appendN(10)
	sts := adm.Inspect(ctx, id)
	founding := sts[leader]
	if len(founding.Matchmakers) != 3 || founding.ConfigBallot.IsZero() || len(founding.Machines) != 3 {
		t.Fatalf("founding leader: matchmakers %v, config %s, machines %v; want 3 matchmakers, a ballot, 3 machines",
			founding.Matchmakers, founding.ConfigBallot, founding.Machines)
	}
	keep, gone := sts[(leader+1)%3].NodeID, sts[(leader+2)%3].NodeID
	to := admin.Configuration{Members: []string{hex(founding.NodeID), hex(keep), idle.Addr}}

	// Act: replace the follower gone by the idle machine, named by address.
	start := time.Now()
	if err := adm.Reconfigure(ctx, id, to); err != nil {
		t.Fatalf("reconfigure: %v", err)
	}
	took := time.Since(start)
	appendN(10)

	// Check: the leader runs the new configuration, since a newer ballot;
	// every record reads back.
	l := leaderStatus(t, ctx, adm, id)
	newID := nodeAt(t, l, idle.Addr)
	wantMembers := slices.Sorted(slices.Values([]admin.NodeID{founding.NodeID, keep, newID}))
	if !slices.Equal(l.Members, wantMembers) || l.Quorum != admin.Majority() || !founding.ConfigSince.Less(l.ConfigSince) {
		t.Fatalf("after reconfigure: members %v quorum %s since %s; want %v majority since above %s",
			l.Members, l.Quorum, l.ConfigSince, wantMembers, founding.ConfigSince)
	}
	t.Logf("reconfigured in %v", took)
	if got := testcell.ReadAll(t, ctx, c.Journal(id), 1, journal.Seq(len(want)+1)); !slices.EqualFunc(got, want, func(a, b []byte) bool { return string(a) == string(b) }) {
		t.Fatalf("read back %q, want %q", got, want)
	}

	// Act and check: the same configuration again changes nothing.
	if err := adm.Reconfigure(ctx, id, to); err != nil {
		t.Fatalf("reconfigure to the configuration in force: %v", err)
	}
	if again := leaderStatus(t, ctx, adm, id); again.ConfigSince != l.ConfigSince {
		t.Fatalf("a no-op reconfigure moved since %s to %s", l.ConfigSince, again.ConfigSince)
	}

	// Act and check: once GC is effective, gone retires; the leader and a
	// member refuse.
	l = waitRetirable(t, ctx, adm, id, gone)
	var refused *admin.RetireRefusedError
	if err := adm.Retire(ctx, id, l.NodeID, l.GCWatermark); !errors.As(err, &refused) || refused.Reason != "leader" {
		t.Fatalf("retire the leader: %v, want refused: leader", err)
	}
	if err := adm.Retire(ctx, id, keep, l.GCWatermark); !errors.As(err, &refused) || refused.Reason != "member" {
		t.Fatalf("retire a member: %v, want refused: member", err)
	}
	retireEventually(t, ctx, adm, id, gone, l.GCWatermark)
	if err := adm.Retire(ctx, id, gone, l.GCWatermark); !errors.Is(err, client.ErrUnknownJournal) {
		t.Fatalf("retire again: %v, want unknown_journal", err)
	}
	appendN(5)

	// Act and check: refused before anything changes.
	grid := admin.Configuration{Members: to.Members, Quorum: admin.Grid(2, 2)}
	if err := adm.Reconfigure(ctx, id, grid); !errors.Is(err, admin.ErrInvalidConfiguration) {
		t.Fatalf("a 2x2 grid of three: %v, want ErrInvalidConfiguration", err)
	}
	stranger := admin.Configuration{Members: []string{to.Members[0], to.Members[1], "00000000000000ff"}}
	if err := adm.Reconfigure(ctx, id, stranger); !errors.Is(err, admin.ErrUnknownMachine) {
		t.Fatalf("a node id outside the cell: %v, want ErrUnknownMachine", err)
	}
}

// leaderStatus is the answer of the node that leads journal id, among the
// servers c was dialled to, waiting for one.
func leaderStatus(t *testing.T, ctx context.Context, adm *admin.Client, id journal.ID) admin.MemberStatus {
	t.Helper()
	for {
		for _, st := range adm.Inspect(ctx, id) {
			if st.Err == nil && st.Role == "leader" {
				return st
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("no leader of %s", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// nodeAt is the node id of the machine at addr, as st lists the cell.
func nodeAt(t *testing.T, st admin.MemberStatus, addr string) admin.NodeID {
	t.Helper()
	for _, m := range st.Machines {
		if m.Addr == addr {
			return m.NodeID
		}
	}
	t.Fatalf("no machine at %s in %v", addr, st.Machines)
	return 0
}

// waitRetirable waits until the leader's GC is effective with node among
// the retirable, and returns the leader's answer.
func waitRetirable(t *testing.T, ctx context.Context, adm *admin.Client, id journal.ID, node admin.NodeID) admin.MemberStatus {
	t.Helper()
	for {
		l := leaderStatus(t, ctx, adm, id)
		if l.GCEffective && slices.Contains(l.Retirable, node) {
			return l
		}
		if ctx.Err() != nil {
			t.Fatalf("GC of %s: effective %v, retirable %v; want %s retirable", id, l.GCEffective, l.Retirable, node)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// retireEventually retires node from journal id, retrying while it refuses
// as stale (it has not yet heard the configuration that removed it).
func retireEventually(t *testing.T, ctx context.Context, adm *admin.Client, id journal.ID, node admin.NodeID, w admin.Ballot) {
	t.Helper()
	for {
		err := adm.Retire(ctx, id, node, w)
		var refused *admin.RetireRefusedError
		if err == nil {
			return
		}
		if !errors.As(err, &refused) || refused.Reason != "stale" || ctx.Err() != nil {
			t.Fatalf("retire %s at %s: %v", node, w, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestReconfigureMovesTheJournalOffItsLeader(t *testing.T) {
	// Arrange: the journal has a leader and five records.
	m := moveOffItsLeader(t, 92, 5)
	ctx, adm, id, old := m.ctx, m.adm, m.id, m.old

	// Act: the new configuration leaves the leader out.
	if err := adm.Reconfigure(ctx, id, m.to); err != nil {
		t.Fatalf("reconfigure: %v", err)
	}

	// Check: another node leads it, the old leader is no member, and the
	// Writer goes on (its next append finds the new leader).
	l := leaderStatus(t, ctx, adm, id)
	if l.NodeID == old || slices.Contains(l.Members, old) || len(l.Members) != 3 {
		t.Fatalf("after reconfigure: leader %s, members %v; want the old leader %s out", l.NodeID, l.Members, old)
	}
	if seq, err := m.w.Append(ctx, []byte("after")); err != nil || seq != 6 {
		t.Fatalf("append after the move: %d, %v", seq, err)
	}
}

// A server that retired from the journal answers UnknownJournal for good:
// a Writer whose stream it held must leave it and ask who leads (before
// the fix it resent there until its deadline).
func TestAWriterLeavesAServerThatRetiredFromItsJournal(t *testing.T) {
	// Arrange: the Writer's stream goes to the leader; a reconfiguration
	// removes the leader and the leader retires, while the Writer is idle.
	m := moveOffItsLeader(t, 93, 1)
	ctx, adm, id := m.ctx, m.adm, m.id
	if err := adm.Reconfigure(ctx, id, m.to); err != nil {
		t.Fatalf("reconfigure: %v", err)
	}
	l := waitRetirable(t, ctx, adm, id, m.old)
	retireEventually(t, ctx, adm, id, m.old, l.GCWatermark)

	// Act: append again; the stream still points at the retired machine.
	actx, acancel := context.WithTimeout(ctx, 10*time.Second)
	defer acancel()
	seq, err := m.w.Append(actx, []byte("after"))

	// Check: it lands at the next position, through the new leader.
	if err != nil || seq != 2 {
		t.Fatalf("append after the leader retired: %d, %v", seq, err)
	}
}

// offItsLeader is a plaintext cell of three with an idle fourth machine,
// a Writer that claimed the journal and appended records appends (its
// stream at the leader), and the configuration that replaces the leader
// by the idle machine; old is the leader's node id.
type offItsLeader struct {
	ctx context.Context
	adm *admin.Client
	w   *client.Writer
	id  journal.ID
	old admin.NodeID
	to  admin.Configuration
}

func moveOffItsLeader(t *testing.T, seed uint64, appends int) offItsLeader {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a four-machine cell")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	cell, err := testcell.Start(ctx, t.TempDir(), testcell.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cell.Close() })
	idle, err := cell.AddIdle()
	if err != nil {
		t.Fatal(err)
	}
	id := cell.Journals[0]
	leader, err := cell.WaitLeader(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	c, adm := dial(t, cell.Addrs()...)
	w := c.Journal(id).NewWriter(seeded(seed))
	t.Cleanup(func() { w.Close() })
	if err := w.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range appends {
		if _, err := w.Append(ctx, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	sts := adm.Inspect(ctx, id)
	m := offItsLeader{ctx: ctx, adm: adm, w: w, id: id, old: sts[leader].NodeID}
	for i := range 3 {
		if i != leader {
			m.to.Members = append(m.to.Members, hex(sts[i].NodeID))
		}
	}
	m.to.Members = append(m.to.Members, idle.Addr)
	return m
}
