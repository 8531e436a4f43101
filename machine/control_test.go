package machine_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/internal/testcell"
)

// startControlCell forms a cell of n machines with a control plane and
// returns it with a client holding the admin token.
func startControlCell(t *testing.T, n int, secure bool) (*testcell.Cell, *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	opts := testcell.Options{Nodes: n, Secure: secure}
	if testing.Verbose() {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	c, err := testcell.Start(ctx, t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cl, err := client.Dial(ctx, c.Addrs(), c.ClientOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return c, cl
}

// appendOne claims the journal named ref and appends one record.
func appendOne(ctx context.Context, t *testing.T, cl *client.Client, ref string, rec string) (journal.Seq, error) {
	t.Helper()
	j, err := cl.JournalNamed(ctx, ref)
	if err != nil {
		return 0, err
	}
	w := j.NewWriter()
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		return 0, err
	}
	return w.Append(ctx, []byte(rec))
}

// A journal is created, written, listed and deleted by name; each bad
// request gets its typed answer and changes nothing.
func TestJournalsByName(t *testing.T) {
	_, cl := startControlCell(t, 3, true)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := admin.New(cl)

	if _, err := adm.CreateTenant(ctx, "shop"); err != nil {
		t.Fatalf("create tenant: %v", err)
	}
	if _, err := adm.CreateTenant(ctx, "shop"); !errors.Is(err, admin.ErrNameTaken) {
		t.Fatalf("second create tenant: %v, want ErrNameTaken", err)
	}
	info, err := adm.CreateJournal(ctx, "shop/orders")
	if err != nil {
		t.Fatalf("create journal: %v", err)
	}
	if len(info.Members) != 3 || info.Multi {
		t.Fatalf("placement %+v: want 3 members, single-writer", info)
	}
	if seq, err := appendOne(ctx, t, cl, "shop/orders", "hello"); err != nil || seq != 1 {
		t.Fatalf("append by name: seq %d, %v", seq, err)
	}
	for _, tc := range []struct {
		name string
		want error
	}{
		{"shop/orders", admin.ErrNameTaken},
		{"nowhere/orders", admin.ErrUnknownTenant},
		{"shop/", client.ErrBadName},
		{"shop/0123456789abcdef", client.ErrBadName},
		{"shop/\x01", client.ErrBadName},
	} {
		if _, err := adm.CreateJournal(ctx, tc.name); !errors.Is(err, tc.want) {
			t.Errorf("create %q: %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := adm.CreateJournal(ctx, "shop/big", admin.WithMembers(5)); !errors.Is(err, admin.ErrBadPlacement) {
		t.Errorf("five members on three machines: %v, want ErrBadPlacement", err)
	}
	js, err := adm.Journals(ctx, "shop")
	if err != nil || len(js) != 1 || js[0].Name != "orders" || js[0].ID != info.ID {
		t.Fatalf("list: %+v, %v", js, err)
	}
	if err := adm.DeleteTenant(ctx, "shop"); !errors.Is(err, admin.ErrTenantNotEmpty) {
		t.Fatalf("delete a tenant with a journal: %v, want ErrTenantNotEmpty", err)
	}

	// Delete: the old writer is fenced, the name resolves no more, and a
	// journal created under the same name is another journal.
	j := cl.Journal(info.ID)
	w := j.NewWriter()
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := adm.DeleteJournal(ctx, "shop/orders"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	t.Logf("delete took %v", time.Since(start))
	// The writer is fenced: its append is refused, superseded by the
	// deletion's fence or answered "deleted" by a member that dropped it.
	if _, err := w.Append(ctx, []byte("after the tombstone")); !errors.Is(err, client.ErrSuperseded) &&
		!errors.Is(err, client.ErrJournalDeleted) {
		t.Fatalf("an append after the journal's deletion: %v, want ErrSuperseded or ErrJournalDeleted", err)
	}
	// Once every member dropped it, a read is answered "deleted", at once.
	for {
		_, err := j.Read(ctx, journal.ReadRequest{Journal: info.ID, FromSeq: journal.FirstSeq})
		if err == nil {
			r, _ := j.Read(ctx, journal.ReadRequest{Journal: info.ID, FromSeq: journal.FirstSeq})
			if r.Deleted {
				break
			}
		}
		if ctx.Err() != nil {
			t.Fatal("no member answers the deleted journal's reads with \"deleted\"")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := j.NewReader(journal.FirstSeq).Next(ctx); !errors.Is(err, client.ErrJournalDeleted) {
		t.Fatalf("a reader of the deleted journal: %v, want ErrJournalDeleted", err)
	}
	if _, err := cl.Resolve(ctx, "shop/orders"); !errors.Is(err, client.ErrUnknownJournal) {
		t.Fatalf("resolve a deleted journal: %v, want ErrUnknownJournal", err)
	}
	if err := adm.DeleteJournal(ctx, "shop/orders"); !errors.Is(err, client.ErrUnknownJournal) {
		t.Fatalf("delete twice: %v, want ErrUnknownJournal", err)
	}
	again, err := adm.CreateJournal(ctx, "shop/orders")
	if err != nil || again.ID == info.ID {
		t.Fatalf("recreate: %+v, %v (want a new id)", again, err)
	}
	if err := adm.DeleteJournal(ctx, "shop/orders"); err != nil {
		t.Fatal(err)
	}
	if err := adm.DeleteTenant(ctx, "shop"); err != nil {
		t.Fatalf("delete an empty tenant: %v", err)
	}
}

// Journals created by name survive a restart of every machine, and the
// control plane elects a coordinator again afterwards.
func TestJournalsByNameSurviveRestarts(t *testing.T) {
	c, cl := startControlCell(t, 3, false)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm := admin.New(cl)
	for _, name := range []string{"a", "b", "c"} {
		if _, err := adm.CreateJournal(ctx, name); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		if _, err := appendOne(ctx, t, cl, name, "before"); err != nil {
			t.Fatalf("append %s: %v", name, err)
		}
	}
	if err := adm.DeleteJournal(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	for i := range c.Nodes {
		if err := c.Stop(i); err != nil {
			t.Fatalf("stop %d: %v", i, err)
		}
	}
	for i := range c.Nodes {
		if err := c.Restart(i); err != nil {
			t.Fatalf("restart %d: %v", i, err)
		}
	}
	for _, name := range []string{"a", "c"} {
		if seq, err := appendOne(ctx, t, cl, name, "after"); err != nil || seq != 2 {
			t.Fatalf("append %s after the restarts: seq %d, %v", name, seq, err)
		}
	}
	if _, err := cl.Resolve(ctx, "b"); !errors.Is(err, client.ErrUnknownJournal) {
		t.Fatalf("resolve the deleted b: %v", err)
	}
	if _, err := adm.CreateJournal(ctx, "d"); err != nil {
		t.Fatalf("create after the restarts: %v", err)
	}
}

// Deleting journals under load leaves the other journals of the same
// machines alone: a removed journal's store goes only after the batches
// it had queued, never failing a group commit that carries another
// journal's writes.
func TestDeletesUnderLoadSpareTheOtherJournals(t *testing.T) {
	c, cl := startControlCell(t, 3, false)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm := admin.New(cl)
	if _, err := adm.CreateJournal(ctx, "keep"); err != nil {
		t.Fatal(err)
	}
	var doomed []string
	for i := range 40 {
		doomed = append(doomed, fmt.Sprintf("doomed-%02d", i))
	}
	for _, name := range doomed {
		if _, err := adm.CreateJournal(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	keep, err := cl.JournalNamed(ctx, "keep")
	if err != nil {
		t.Fatal(err)
	}
	w := keep.NewWriter()
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	// Writers keep every doomed journal busy while it is deleted, and
	// one keeps the kept journal busy throughout.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, name := range doomed {
		wg.Go(func() {
			j, err := cl.JournalNamed(ctx, name)
			if err != nil {
				return
			}
			dw := j.NewWriter()
			defer dw.Close()
			if dw.Claim(ctx) != nil {
				return
			}
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := dw.Append(ctx, []byte("doomed")); err != nil {
					return // fenced or deleted
				}
			}
		})
	}
	var keptErr error
	var kept int
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := w.Append(ctx, []byte("kept")); err != nil {
				keptErr = err
				return
			}
			kept++
		}
	})
	for _, name := range doomed {
		if err := adm.DeleteJournal(ctx, name); err != nil {
			t.Fatalf("delete %s: %v", name, err)
		}
	}
	close(stop)
	wg.Wait()
	if keptErr != nil {
		t.Fatalf("the kept journal failed after %d appends while others were deleted: %v", kept, keptErr)
	}
	for i := range c.Nodes {
		r, err := c.Inspect(ctx, i, keep.ID())
		if err != nil || r.Quarantined {
			t.Fatalf("machine %d: the kept journal is quarantined (%v): %+v", i+1, err, r)
		}
	}
	t.Logf("%d appends to the kept journal while %d journals were deleted", kept, len(doomed))
}
