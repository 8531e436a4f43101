// This file checks the client's public surface against the shared
// in-process cell (see network_test.go), one sentence of the package doc per
// test: Reader.Records iterating across a truncation yields a *GapError and
// then the records after it, never skipping the hole silently; an Appender
// on a single-writer journal gets ErrWrongMode and writes nothing; Dial
// against an address nothing listens on fails with
// ErrNoServer once its context ends; and a Writer with default options
// coalesces 1,000 concurrent AppendAsync calls into far fewer writes, every
// record reading back at the position its append was given.
//
// Not covered: an Appender on a multi-writer journal (increasing positions
// from concurrent Appends). internal/testcell forms cells through
// Machine.CellInit, whose plan makes every journal single-writer
// (machine.specs: journal.ModeSingle), so no test cell has a multi-writer
// journal to append to.
package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/internal/testcell"
)

func TestReaderRecordsYieldsTheGapThenTheRecordsAfterIt(t *testing.T) {
	// Arrange: ten records, then a truncation below position 7.
	c, id := cellJournal(t)
	ctx := testCtx(t)
	j := dial(t, c.Addrs()...).Journal(id)
	w := j.NewWriter(seeded(70))
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := w.Append(ctx, []byte(fmt.Sprintf("r%d", i+1))); err != nil {
			t.Fatal(err)
		}
	}
	if view, err := w.Truncate(ctx, 7); err != nil || view.FirstSeq != 7 {
		t.Fatalf("truncate: %+v, %v", view, err)
	}

	// Act: iterate from position 1 until the last record, noting each
	// step.
	type step struct {
		rec journal.Seq // 0 for a gap
		gap *client.GapError
	}
	var steps []step
	r := j.NewReader(1, client.WithTailWait(10*time.Millisecond), client.WithPageLimit(2))
	for rc, err := range r.Records(ctx) {
		var gap *client.GapError
		switch {
		case errors.As(err, &gap):
			steps = append(steps, step{gap: gap})
			continue
		case err != nil:
			t.Fatalf("after %d steps: %v", len(steps), err)
		}
		if want := fmt.Sprintf("r%d", rc.Seq); string(rc.Data) != want {
			t.Fatalf("position %d holds %q, want %q", rc.Seq, rc.Data, want)
		}
		steps = append(steps, step{rec: rc.Seq})
		if rc.Seq == 10 {
			break
		}
	}

	// Check: the gap [1,7) first, then 7, 8, 9, 10, and the cursor past
	// them.
	if len(steps) != 5 || steps[0].gap == nil || steps[0].gap.From != 1 || steps[0].gap.To != 7 {
		t.Fatalf("steps %+v; want the gap [1,7) first, then four records", steps)
	}
	for i, s := range steps[1:] {
		if s.gap != nil || s.rec != journal.Seq(7+i) {
			t.Fatalf("step %d: %+v; want the record at %d", i+1, s, 7+i)
		}
	}
	if r.Cursor() != 11 {
		t.Fatalf("cursor %d after the loop broke at 10, want 11", r.Cursor())
	}
}

func TestAnAppenderOnASingleWriterJournalIsWrongMode(t *testing.T) {
	// Arrange: a single-writer journal that a Writer holds, with one
	// record.
	c, id := cellJournal(t)
	ctx := testCtx(t)
	j := dial(t, c.Addrs()...).Journal(id)
	w := j.NewWriter(seeded(80))
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, []byte("owned")); err != nil {
		t.Fatal(err)
	}

	// Act: an empty batch; then an Appender appends, twice.
	_, emptyErr := j.NewAppender().Append(ctx)
	a := j.NewAppender()
	seq, err := a.Append(ctx, []byte("unfenced"))
	_, againErr := a.Append(ctx, []byte("unfenced again"))

	// Check: the empty batch is refused before anything is sent; the
	// appends get ErrWrongMode (the Appender stopped at the first) and
	// write nothing; the Writer goes on at position 2.
	if !errors.Is(emptyErr, client.ErrEmptyBatch) {
		t.Fatalf("empty append: %v, want ErrEmptyBatch", emptyErr)
	}
	if !errors.Is(err, client.ErrWrongMode) || seq != 0 || !errors.Is(againErr, client.ErrWrongMode) {
		t.Fatalf("appends to a single-writer journal: seq %d, %v, then %v; want ErrWrongMode", seq, err, againErr)
	}
	if seq, err := w.Append(ctx, []byte("still owned")); err != nil || seq != 2 {
		t.Fatalf("the owner's next append: seq %d, %v; want 2", seq, err)
	}
	if got := testcell.ReadAll(t, ctx, j, 1, 3); len(got) != 2 || string(got[0]) != "owned" || string(got[1]) != "still owned" {
		t.Fatalf("log %q; want only the owner's records", got)
	}
}

func TestDialFailsWithErrNoServerWhenNothingListens(t *testing.T) {
	// Arrange: an address that was listened on and closed, so nothing
	// listens there; a context that ends soon.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()

	// Act.
	c, err := client.Dial(ctx, []string{addr}, client.WithInsecure())

	// Check: ErrNoServer wrapping the context's error, once the context
	// ended and not long after.
	if c != nil || !errors.Is(err, client.ErrNoServer) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("dial nobody: %v, %v; want ErrNoServer and DeadlineExceeded", c, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Dial took %v to give up on a 300 ms context", d)
	}
}

func TestAWriterCoalescesConcurrentAppendsByDefault(t *testing.T) {
	// Arrange: a claimed Writer with the default options.
	c, id := cellJournal(t)
	ctx := testCtx(t)
	j := dial(t, c.Addrs()...).Journal(id)
	w := j.NewWriter(seeded(90))
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatal(err)
	}

	// Act: 1,000 goroutines append one record each, at once.
	const appenders = 1000
	ops := make([]*client.AppendOp, appenders)
	errs := make([]error, appenders)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range appenders {
		wg.Go(func() {
			<-start
			ops[i], errs[i] = w.AppendAsync(ctx, []byte(fmt.Sprintf("c%d", i)))
		})
	}
	close(start)
	wg.Wait()
	flushErr := w.Flush(ctx)

	// Check: every append was written, in far fewer writes than appends,
	// and each record reads back at the position its append was given.
	st := w.Stats()
	if flushErr != nil || st.Appends != appenders || st.Writes >= st.Appends/4 {
		t.Fatalf("flush %v, stats %+v; want %d appends in fewer than %d writes", flushErr, st, appenders, appenders/4)
	}
	got := testcell.ReadAll(t, ctx, j, journal.FirstSeq, w.NextSeq())
	if len(got) != appenders {
		t.Fatalf("read %d records, appended %d", len(got), appenders)
	}
	for i, op := range ops {
		if errs[i] != nil {
			t.Fatalf("append %d: %v", i, errs[i])
		}
		seq, err := op.Wait(ctx)
		if err != nil || seq < journal.FirstSeq || int(seq) > len(got) {
			t.Fatalf("append %d: seq %d, %v", i, seq, err)
		}
		if want := fmt.Sprintf("c%d", i); string(got[seq-1]) != want {
			t.Fatalf("append %d was given position %d, which holds %q", i, seq, got[seq-1])
		}
	}
	t.Logf("1,000 concurrent appends: %+v", st)
}
