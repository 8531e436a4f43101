package checkpoint

import (
	"context"
	"fmt"
	"sync"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
)

// Checkpointer is the owner's side of the checkpoint pattern (see the package
// doc): it holds the journal's writer, folds every entry it appends into
// the owner's state, and writes a checkpoint run at the next position
// followed by a fenced Truncate(up_to = that position). Because it holds the
// writer for the whole run, no entry can land inside a run.
//
// Ambiguous outcomes: Append and Checkpoint return the Writer's
// errors. An ErrAmbiguous from the run's writes leaves a run that may be
// incomplete (no End: every reader ignores it, and the next Checkpoint
// writes a fresh one); an ErrAmbiguous from the Truncate leaves a complete
// run mid-log, where every fold resets on it — both are safe, and calling
// Checkpoint again completes the job.
type Checkpointer[S Checkpointable] struct {
	mu       sync.Mutex
	w        *client.Writer
	state    S
	trigger  Trigger
	logBytes int
	ticks    uint64
}

// NewCheckpointer wraps a writer that already holds the journal (Claim won)
// and the state folded from the journal so far.
func NewCheckpointer[S Checkpointable](w *client.Writer, state S, trigger Trigger) *Checkpointer[S] {
	return &Checkpointer[S]{w: w, state: state, trigger: trigger}
}

// State is the owner's state (owned by the Checkpointer: read it, don't
// change it).
func (c *Checkpointer[S]) State() S { return c.state }

// Append writes owner entries and folds them into the state. Entries that
// would look like run records are refused (ErrLooksLikeRun) before anything
// is written.
func (c *Checkpointer[S]) Append(ctx context.Context, records ...[]byte) (journal.Seq, error) {
	if err := CheckEntries(records); err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	seq, err := c.w.Append(ctx, records...)
	if err != nil {
		return 0, err
	}
	for i, r := range records {
		if err := c.state.Apply(seq+journal.Seq(i), r); err != nil {
			return seq, fmt.Errorf("%w: %v", ErrApply, err)
		}
		c.logBytes += len(r)
	}
	return seq, nil
}

// Tick counts one tick toward the trigger's time bound.
func (c *Checkpointer[S]) Tick() {
	c.mu.Lock()
	c.ticks++
	c.mu.Unlock()
}

// MaybeCheckpoint checkpoints when the trigger says the log since the last
// checkpoint outgrew the state (or the tick bound passed). It reports
// whether it wrote one.
func (c *Checkpointer[S]) MaybeCheckpoint(ctx context.Context) (bool, error) {
	c.mu.Lock()
	due := c.trigger.Due(c.logBytes, len(c.state.Checkpoint()), c.ticks)
	c.mu.Unlock()
	if !due {
		return false, nil
	}
	_, err := c.Checkpoint(ctx)
	return err == nil, err
}

// Checkpoint writes the state as a run at the next position s (Begin,
// Chunks, End), then truncates with up_to = s, and returns s.
func (c *Checkpointer[S]) Checkpoint(ctx context.Context) (journal.Seq, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.w.Flush(ctx); err != nil {
		return 0, err
	}
	at := c.w.NextSeq()
	run := Plan(c.state.Checkpoint(), at, 0)
	for _, batch := range Batches(run) {
		if _, err := c.w.Append(ctx, batch...); err != nil {
			return 0, err
		}
	}
	if _, err := c.w.Truncate(ctx, at); err != nil {
		return 0, err
	}
	c.logBytes, c.ticks = 0, 0
	return at, nil
}
