package machine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/internal/testcell"
)

// The cell's founders are replaced, as an operator replaces machines: new
// machines join the pool, the matchmakers are handed over to them, the
// registry and the election journal are reconfigured onto them, the
// founders are drained and then stopped for good. The control plane lives
// on: a new machine is elected coordinator, a journal is created by name
// on the new machines and written, and a journal is deleted. A journal
// created by name on the founders moves with them: it is reconfigured onto
// the new machines one founder at a time, keeps its records, takes writes
// once the founders are gone, and its deletion removes its stores from the
// machines it moved to.
func TestControlPlaneOutlivesItsFounders(t *testing.T) {
	c, root := startControlCell(t, 3, true)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm := admin.New(root)
	reg, err := adm.Registry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	moved, err := adm.CreateJournal(ctx, "on-the-founders")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := appendOne(ctx, t, root, "on-the-founders", "before the move"); err != nil {
		t.Fatalf("write the founders' journal: %v", err)
	}
	var founders []admin.NodeID
	for i := range 3 {
		founders = append(founders, admin.NodeID(c.Machine(i).Record().NodeID))
	}
	var fresh []admin.NodeID
	var addrs []string
	for range 3 {
		n, err := c.AddIdle()
		if err != nil {
			t.Fatal(err)
		}
		id, err := adm.AddMachine(ctx, n.Addr, "")
		if err != nil {
			t.Fatalf("add machine %s: %v", n.Addr, err)
		}
		fresh, addrs = append(fresh, id), append(addrs, n.Addr)
	}
	hex := func(ids ...admin.NodeID) []string {
		var out []string
		for _, id := range ids {
			out = append(out, id.String())
		}
		return out
	}
	start := time.Now()
	step := func(what string) { t.Logf("%6.1fs %s", time.Since(start).Seconds(), what) }
	step("three machines added")
	if _, err := adm.SetMatchmakers(ctx, hex(fresh...)); err != nil {
		t.Fatalf("hand the matchmakers over: %v", err)
	}
	step("matchmakers handed over")
	// One founder at a time, each control-plane journal.
	for i := range fresh {
		members := append(append([]admin.NodeID{}, fresh[:i+1]...), founders[i+1:]...)
		for _, id := range []journal.ID{reg.Control, reg.Election, moved.ID} {
			if err := adm.Reconfigure(ctx, id, admin.Configuration{Members: hex(members...)}); err != nil {
				t.Fatalf("reconfigure %s onto %v: %v", id, hex(members...), err)
			}
			step(fmt.Sprintf("%s reconfigured onto %v", id, hex(members...)))
		}
	}
	for _, f := range founders {
		if err := adm.DrainMachine(ctx, f); err != nil {
			t.Fatalf("drain founder %016x: %v", f, err)
		}
		step(fmt.Sprintf("founder %016x drained", f))
	}
	for i := range founders {
		if err := c.Stop(i); err != nil {
			t.Fatal(err)
		}
	}

	// The new machines alone: a coordinator among them answers.
	cl, err := client.Dial(ctx, addrs, c.ClientOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	step("founders stopped")
	info, err := admin.New(cl).CreateJournal(ctx, "after-the-founders")
	if err != nil {
		t.Fatalf("create a journal once the founders are gone: %v", err)
	}
	for _, m := range info.Members {
		if !containsID(fresh, m) {
			t.Errorf("the journal was placed on %016x, not a machine of the pool that is up", m)
		}
	}
	step("created after the founders")
	if _, err := appendOne(ctx, t, cl, "after-the-founders", "still here"); err != nil {
		t.Fatalf("write the new journal: %v", err)
	}
	if err := admin.New(cl).DeleteJournal(ctx, "after-the-founders"); err != nil {
		t.Fatalf("delete it: %v", err)
	}

	// The journal that moved: its record is there, it takes a write, and
	// its deletion removes it from every machine it moved to.
	j, err := cl.JournalNamed(ctx, "on-the-founders")
	if err != nil {
		t.Fatal(err)
	}
	if got := testcell.ReadAll(t, ctx, j, client.FirstSeq, client.FirstSeq+1); len(got) != 1 || string(got[0]) != "before the move" {
		t.Fatalf("the moved journal holds %q, want the record written before the move", got)
	}
	if _, err := appendOne(ctx, t, cl, "on-the-founders", "after the move"); err != nil {
		t.Fatalf("write the moved journal: %v", err)
	}
	if err := admin.New(cl).DeleteJournal(ctx, "on-the-founders"); err != nil {
		t.Fatalf("delete the moved journal: %v", err)
	}
	step("the moved journal deleted")
	for i := 3; i < 6; i++ {
		for {
			if _, served := c.Machine(i).Runtime().Spec(moved.ID); !served {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("machine %d still serves the deleted journal it joined by reconfiguration", i+1)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func containsID(ids []admin.NodeID, id admin.NodeID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
