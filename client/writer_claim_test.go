// This file checks when a Writer takes the fence by itself: its first
// append claims the journal, appends racing to be first share that one
// claim, and a Writer superseded after it won never claims again unless
// its owner calls Claim, so two Writers do not take a journal from each
// other back and forth.
package client_test

import (
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/parosdb/paros/client"
)

func TestTheFirstAppendsClaimOnceAndShareTheFence(t *testing.T) {
	// Arrange: a fresh Writer that never called Claim.
	c, id := cellJournal(t)
	ctx := testCtx(t)
	w := dial(t, c.Addrs()...).Journal(id).NewWriter()
	defer w.Close()
	if w.Fence() != (client.Fence{}) {
		t.Fatalf("a new Writer holds fence %v, want none", w.Fence())
	}

	// Act: sixteen appends race to be the first.
	const n = 16
	seqs := make([]client.Seq, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seqs[i], errs[i] = w.Append(ctx, []byte{byte(i)})
		}()
	}
	wg.Wait()

	// Assert: every append landed at its own position in 1..n under one
	// fence, and the journal's fence is the Writer's.
	for i, err := range errs {
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	slices.Sort(seqs)
	for i, s := range seqs {
		if s != client.FirstSeq+client.Seq(i) {
			t.Fatalf("positions %v, want 1..%d each once", seqs, n)
		}
	}
	if w.Fence() == (client.Fence{}) {
		t.Fatal("the Writer appended without holding a fence")
	}
}

func TestASupersededWriterDoesNotClaimBack(t *testing.T) {
	// Arrange: the first Writer appended (so it claimed); a second one
	// takes the journal by appending.
	c, id := cellJournal(t)
	ctx := testCtx(t)
	j := dial(t, c.Addrs()...).Journal(id)
	first := j.NewWriter()
	defer first.Close()
	if _, err := first.Append(ctx, []byte("first")); err != nil {
		t.Fatal(err)
	}
	second := j.NewWriter()
	defer second.Close()
	if _, err := second.Append(ctx, []byte("second")); err != nil {
		t.Fatal(err)
	}

	// Act: the first Writer appends again.
	_, err := first.Append(ctx, []byte("stale"))

	// Assert: refused as superseded, and the second Writer still holds the
	// journal: its next append lands.
	if !errors.Is(err, client.ErrSuperseded) {
		t.Fatalf("the superseded Writer's append: %v, want ErrSuperseded", err)
	}
	if _, err := second.Append(ctx, []byte("still mine")); err != nil {
		t.Fatalf("the second Writer lost the journal: %v", err)
	}
	// An explicit Claim is how the first Writer takes it back.
	if err := first.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Append(ctx, []byte("taken back")); err != nil {
		t.Fatal(err)
	}
}
