package blackbox

// Large writes through the whole stack: an in-process cell (the code paros
// serve runs) takes writes of 1 MiB, the API's limit, while one machine is
// down; the machine comes back and catches up through byte-bounded catch-up
// pages and peer frames, and every record reads back whole from it.

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/internal/testcell"
)

func TestLargeWritesReplicateAndCatchUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cell, err := testcell.Start(ctx, t.TempDir(), testcell.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cell.Close()
	id := cell.Journals[0]
	leader, err := cell.WaitLeader(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	lag := (leader + 1) % 3
	if err := cell.Stop(lag); err != nil {
		t.Fatal(err)
	}
	conn, err := client.Dial(ctx, cell.Addrs(), cell.ClientOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	w := conn.Journal(id).NewWriter()
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 12
	var recs [][]byte
	for i := range n {
		rec := bytes.Repeat([]byte{byte('a' + i)}, journal.WriteBytesMax)
		recs = append(recs, rec)
		if _, err := w.Append(ctx, rec); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	if err := cell.Restart(lag); err != nil {
		t.Fatal(err)
	}
	// Read back from the restarted machine alone, once it caught up.
	only, err := client.Dial(ctx, []string{cell.Addrs()[lag]}, cell.ClientOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer only.Close()
	r := only.Journal(id).NewReader(1, client.WithTailWait(200*time.Millisecond))
	var got [][]byte
	for len(got) < n {
		out, err := r.Next(ctx)
		if errors.Is(err, client.ErrUnavailable) && ctx.Err() == nil {
			continue // not caught up enough to serve yet: the cursor did not move
		}
		if err != nil {
			t.Fatalf("reading from the restarted machine: %v (got %d of %d)", err, len(got), n)
		}
		for _, rec := range out {
			got = append(got, rec.Data)
		}
	}
	for i := range n {
		if !bytes.Equal(got[i], recs[i]) {
			t.Fatalf("record %d differs after catch-up", i+1)
		}
	}
}
