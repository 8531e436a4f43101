package testcell

import (
	"context"
	"fmt"
	"testing"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/sansio"
)

// AppendN claims j with a fresh Writer (claim uuids drawn from a fixed
// seed, so runs repeat) and appends n records "r1".."rn", each
// acknowledged before the next.
func AppendN(t testing.TB, ctx context.Context, j *client.Journal, n int) {
	t.Helper()
	w := j.NewWriter(client.WithUUIDs(sansio.SeededUUIDs(90)))
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatalf("claim: %v", err)
	}
	for i := range n {
		if _, err := w.Append(ctx, []byte(fmt.Sprintf("r%d", i+1))); err != nil {
			t.Fatalf("append %d: %v", i+1, err)
		}
	}
}

// CheckRecords reads [1, n] with a Reader and fails unless it holds
// "r1".."rn", as AppendN wrote them.
func CheckRecords(t testing.TB, ctx context.Context, j *client.Journal, n int) {
	t.Helper()
	got := ReadAll(t, ctx, j, client.FirstSeq, client.Seq(n)+1)
	for i, b := range got {
		if want := fmt.Sprintf("r%d", i+1); string(b) != want {
			t.Fatalf("position %d holds %q, want %q", i+1, b, want)
		}
	}
}

// ReadAll reads [from, to) with a Reader that does not wait at the tail,
// and fails on anything but records at the positions expected.
func ReadAll(t testing.TB, ctx context.Context, j *client.Journal, from, to client.Seq) [][]byte {
	t.Helper()
	r := j.NewReader(from, client.WithTailWait(0))
	var out [][]byte
	for r.Cursor() < to {
		at := r.Cursor()
		page, err := r.Next(ctx)
		if err != nil {
			t.Fatalf("read at %d: %v", at, err)
		}
		for i, rc := range page {
			if rc.Seq != at+client.Seq(i) {
				t.Fatalf("read at %d: record %d says position %d", at, i, rc.Seq)
			}
			out = append(out, rc.Data)
		}
	}
	return out
}
