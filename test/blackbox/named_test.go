// This file runs journals by name through their whole life on real `paros
// serve` processes: a cell of four creates journals by name, writes to
// each, deletes half, admits a fifth machine with `parosctl cell
// add-machine` and creates more journals that land on it, restarts every
// machine, and finds every surviving journal intact and every deleted one
// gone. PAROS_NAMED_JOURNALS sets how many journals are created first
// (default 1,000).
package blackbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
	"github.com/parosdb/paros/core/journal"
)

// forEach runs f on every item, inFlight at a time, and fails the test
// with the first error.
func forEach[T any](t *testing.T, items []T, inFlight int, f func(T) error) {
	t.Helper()
	var mu sync.Mutex
	var failed []error
	var wg sync.WaitGroup
	work := make(chan T)
	for range inFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range work {
				if err := f(it); err != nil {
					mu.Lock()
					failed = append(failed, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, it := range items {
		work <- it
	}
	close(work)
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("%d of %d failed, first: %v", len(failed), len(items), failed[0])
	}
}

// appendNamed claims the journal named name and appends rec; it returns
// the record's position.
func appendNamed(ctx context.Context, conn *client.Client, name, rec string) (journal.Seq, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	j, err := conn.JournalNamed(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	w := j.NewWriter()
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		return 0, fmt.Errorf("%s: claim: %w", name, err)
	}
	seq, err := w.Append(ctx, []byte(rec))
	if err != nil {
		return 0, fmt.Errorf("%s: append: %w", name, err)
	}
	return seq, nil
}

func TestJournalsByNameLiveAndDieAcrossRestarts(t *testing.T) {
	// Arrange: a secure cell of four machines with its control plane and
	// no journal yet.
	n := envCount("PAROS_NAMED_JOURNALS", 1_000)
	c := newCellOf(t, 4, nil)
	c.form("--members", c.servers())
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	conn := c.dial(ctx, c.procs)
	if _, err := admin.New(conn).CreateTenant(ctx, "shop"); err != nil {
		t.Fatal(err)
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("shop/orders-%04d", i)
	}

	// Act 1: create every journal by name, 16 in flight, and write one
	// record to each.
	t0 := time.Now()
	forEach(t, names, 16, func(name string) error {
		_, err := admin.New(conn).CreateJournal(ctx, name)
		return err
	})
	t.Logf("created %d journals by name in %s (%.0f/s)", n, time.Since(t0).Round(time.Millisecond),
		float64(n)/time.Since(t0).Seconds())
	forEach(t, names, 32, func(name string) error {
		seq, err := appendNamed(ctx, conn, name, "first-"+name)
		if err == nil && seq != journal.FirstSeq {
			err = fmt.Errorf("%s: first append at %d", name, seq)
		}
		return err
	})

	// Act 2: delete every other journal.
	var kept, deleted []string
	for i, name := range names {
		if i%2 == 0 {
			deleted = append(deleted, name)
		} else {
			kept = append(kept, name)
		}
	}
	ids := map[string]journal.ID{}
	var idsMu sync.Mutex
	js, err := admin.New(conn).Journals(ctx, "shop")
	if err != nil || len(js) != n {
		t.Fatalf("shop lists %d journals (%v), want %d", len(js), err, n)
	}
	for _, j := range js {
		ids["shop/"+j.Name] = j.ID
	}
	t0 = time.Now()
	forEach(t, deleted, 16, func(name string) error { return admin.New(conn).DeleteJournal(ctx, name) })
	t.Logf("deleted %d journals by name in %s", len(deleted), time.Since(t0).Round(time.Millisecond))

	// Act 3: admit a fifth machine from an empty data dir and create
	// journals that land on it.
	fifth := c.spare("m5")
	var admitted string
	var code int
	for range 50 { // the machine may still be binding its port
		if admitted, code = c.ctl("cell", "add-machine", fifth.public()); code == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code != 0 {
		t.Fatalf("cell add-machine: exit %d: %s", code, admitted)
	}
	c.procs = append(c.procs, fifth)
	reg, err := admin.New(conn).Registry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var fifthID admin.NodeID
	for _, m := range reg.Machines {
		if m.Addr == fifth.public() {
			fifthID = m.ID
		}
	}
	if fifthID == 0 {
		t.Fatalf("the registry does not list the fifth machine: %+v", reg.Machines)
	}
	var more []string
	for i := range 20 {
		more = append(more, fmt.Sprintf("shop/later-%02d", i))
	}
	forEach(t, more, 8, func(name string) error {
		info, err := admin.New(conn).CreateJournal(ctx, name)
		if err != nil {
			return err
		}
		if !slices.Contains(info.Members, fifthID) {
			return fmt.Errorf("%s placed on %v, not on the new, least loaded machine %016x", name, info.Members, fifthID)
		}
		idsMu.Lock()
		ids[name] = info.ID
		idsMu.Unlock()
		_, err = appendNamed(ctx, conn, name, "first-"+name)
		return err
	})
	kept = append(kept, more...)

	// Act 4: restart every machine.
	for _, p := range c.procs {
		kill(p)
	}
	for _, p := range c.procs {
		c.start(p)
	}
	conn = c.dial(ctx, c.procs)

	// Check: every surviving journal holds its record and takes another
	// append; every deleted one resolves no more and is answered deleted.
	forEach(t, kept, 32, func(name string) error {
		seq, err := appendNamed(ctx, conn, name, "second-"+name)
		if err != nil {
			return err
		}
		if seq != journal.FirstSeq+1 {
			return fmt.Errorf("%s: the append after the restarts landed at %d, want %d", name, seq, journal.FirstSeq+1)
		}
		rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
		defer rcancel()
		r, err := conn.Journal(ids[name]).Read(rctx, journal.ReadRequest{Journal: ids[name], FromSeq: journal.FirstSeq})
		if err != nil || len(r.Records) != 2 || string(r.Records[0]) != "first-"+name {
			return fmt.Errorf("%s reads back %q (%v)", name, r.Records, err)
		}
		return nil
	})
	forEach(t, deleted, 32, func(name string) error {
		rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
		defer rcancel()
		if _, err := conn.Resolve(rctx, name); !errors.Is(err, client.ErrUnknownJournal) {
			return fmt.Errorf("%s resolves after its deletion: %v", name, err)
		}
		_, err := conn.Journal(ids[name]).NewReader(journal.FirstSeq).Next(rctx)
		if !errors.Is(err, client.ErrJournalDeleted) {
			return fmt.Errorf("%s (%s) read after its deletion: %v, want ErrJournalDeleted", name, ids[name], err)
		}
		return nil
	})
	js, err = admin.New(conn).Journals(ctx, "shop")
	if err != nil || len(js) != len(kept) {
		t.Fatalf("shop lists %d journals (%v), want %d", len(js), err, len(kept))
	}
	if out, code := c.ctl("journal", "list", "--tenant", "shop"); code != 0 || !strings.Contains(out, "later-00") {
		t.Fatalf("parosctl journal list: exit %d: %s", code, out)
	}
	want := fmt.Sprintf(" journals=%d\n", len(kept))
	if out, code := c.ctl("tenant", "show", "shop"); code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "shop/later-00 ") {
		t.Fatalf("parosctl tenant show shop: exit %d: %s, want %s and shop/later-00", code, out, want)
	}
	if out, code := c.ctl("tenant", "show", "nobody"); code != 3 {
		t.Fatalf("parosctl tenant show of an unknown tenant: exit %d: %s, want 3", code, out)
	}
}
