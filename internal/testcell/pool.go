package testcell

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/parosdb/paros/core/journal"
)

// PoolJournals is how many journals each cell of a Pool has: one for each
// test or example of a package that shares a cell; when they run out (go
// test -count=N) the pool starts another cell.
const PoolJournals = 20

// Pool hands out journals of shared cells, so that the tests and examples
// of a package share one cell and each still meets a journal nobody else
// touched. Each cell has Options (zero: three plaintext machines) with
// PoolJournals journals, in a temporary directory that Close removes. The
// zero Pool is ready; it is safe for concurrent use.
type Pool struct {
	Options Options

	mu    sync.Mutex
	dir   string
	cells []*Cell
	next  int // the next unused journal of the last cell
}

// Journal returns a shared cell and a journal of it no other caller of
// the pool got, once that journal has a leader.
func (p *Pool) Journal() (*Cell, journal.ID, error) {
	p.mu.Lock()
	if len(p.cells) == 0 || p.next == PoolJournals {
		if p.dir == "" {
			dir, err := os.MkdirTemp("", "paros-testcell-")
			if err != nil {
				p.mu.Unlock()
				return nil, journal.ID{}, err
			}
			p.dir = dir
		}
		opts := p.Options
		opts.Journals = PoolJournals
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		c, err := Start(ctx, filepath.Join(p.dir, fmt.Sprint(len(p.cells))), opts)
		cancel()
		if err != nil {
			p.mu.Unlock()
			return nil, journal.ID{}, err
		}
		p.cells, p.next = append(p.cells, c), 0
	}
	c := p.cells[len(p.cells)-1]
	id := c.Journals[p.next]
	p.next++
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.WaitLeader(ctx, id); err != nil {
		return nil, journal.ID{}, err
	}
	return c, id, nil
}

// Close closes every cell of the pool and removes their directory (a
// TestMain calls it after m.Run).
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for _, c := range p.cells {
		errs = append(errs, c.Close())
	}
	if p.dir != "" {
		errs = append(errs, os.RemoveAll(p.dir))
	}
	p.cells, p.dir, p.next = nil, "", 0
	return errors.Join(errs...)
}
