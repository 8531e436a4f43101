// This file forms a cell with many journals out of real `paros serve`
// processes, writes to a share of them, kills -9 a member, and reads every
// acknowledged write back from the survivors. Most of the journals stay
// idle the whole time: they fall quiet, and the ones the dead machine led
// must come back on their own. PAROS_MANY_JOURNALS sets the cell's journals
// (default 2,000, so the suite stays within its time) and PAROS_MANY_WRITTEN
// how many get writes (default 200). The scale run is
// PAROS_MANY_JOURNALS=10000 PAROS_MANY_WRITTEN=1000 (about a minute).
package blackbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
)

func envCount(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// written is one acknowledged append of the test.
type written struct {
	j   journal.ID
	seq journal.Seq
	rec []byte
}

func TestManyJournalsSurviveAKilledMember(t *testing.T) {
	// Arrange: a cell of three with many journals.
	n, w := envCount("PAROS_MANY_JOURNALS", 2_000), envCount("PAROS_MANY_WRITTEN", 200)
	w = min(w, n)
	c := newCell(t)
	start := time.Now()
	out := c.form("--members", c.servers(), "--journals", strconv.Itoa(n))
	_, list, _ := strings.Cut(strings.TrimSpace(out), "journals=")
	refs := strings.Split(list, ",")
	if len(refs) != n {
		t.Fatalf("init made %d journals, want %d", len(refs), n)
	}
	t.Logf("formed a cell of %d journals in %s", n, time.Since(start).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn := c.dial(ctx, c.procs)

	// Act: one append to each of the first w journals, 64 at a time;
	// kill -9 machine 1; one more append to each; read everything back.
	appendAll := func(conn *client.Client, round string) []written {
		t.Helper()
		var mu sync.Mutex
		var acks []written
		var failed []string
		var wg sync.WaitGroup
		work := make(chan string)
		for range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ref := range work {
					id := mustID(t, ref)
					rec := []byte(fmt.Sprintf("%s-%s", round, ref))
					wr := conn.Journal(id).NewWriter()
					actx, acancel := context.WithTimeout(ctx, 60*time.Second)
					err := wr.Claim(actx) // the cell plan's journals are single-writer
					var seq journal.Seq
					if err == nil {
						seq, err = wr.Append(actx, rec)
					}
					acancel()
					wr.Close()
					mu.Lock()
					if err != nil {
						failed = append(failed, fmt.Sprintf("%s: %v", ref, err))
					} else {
						acks = append(acks, written{j: id, seq: seq, rec: rec})
					}
					mu.Unlock()
				}
			}()
		}
		for _, ref := range refs[:w] {
			work <- ref
		}
		close(work)
		wg.Wait()
		if len(failed) > 0 {
			t.Fatalf("%s: %d of %d appends failed, first: %s", round, len(failed), w, failed[0])
		}
		return acks
	}
	t0 := time.Now()
	before := appendAll(conn, "before")
	t.Logf("appended once to %d journals in %s", w, time.Since(t0).Round(time.Millisecond))
	time.Sleep(2 * time.Second) // most journals fall quiet
	kill(c.procs[0])
	t0 = time.Now()
	survivors := c.procs[1:]
	sc := c.dial(ctx, survivors)
	after := appendAll(sc, "after")
	t.Logf("after the kill, every one of %d journals accepted an append within %s", w, time.Since(t0).Round(time.Millisecond))

	// Check: every acknowledged append reads back from the survivors.
	for _, a := range append(before, after...) {
		got := readAll(ctx, sc.Journal(a.j), &recorder{t0: time.Now()}, a.seq+1)
		if !bytes.Equal(got[a.seq], a.rec) {
			t.Fatalf("%s: acknowledged append at %d reads back %q, want %q", a.j, a.seq, got[a.seq], a.rec)
		}
	}
}
