package election

import (
	"context"
	"sync"
	"time"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
)

// memLog is a UNIT-TEST FAKE of a multi-writer journal: records appended
// at the tail, a floor raised by Truncate, long-polled reads that meet a
// gap below the floor. It implements port for each reader (memPort), so
// the driver is tested without a cell; the integration test runs it over
// a real one. failAppend, when set, may refuse an append (of the records
// it is shown) with an error, as the client would.
type memLog struct {
	mu         sync.Mutex
	recs       [][]byte // position p is recs[p-1], truncated or not
	floor      journal.Seq
	changed    chan struct{}
	failAppend func(rec []byte) error
	truncates  int
}

func newMemLog() *memLog {
	return &memLog{floor: journal.FirstSeq, changed: make(chan struct{})}
}

// port returns a reader's port, its cursor at the first position.
func (l *memLog) port() *memPort { return &memPort{l: l, cursor: journal.FirstSeq} }

// add appends records directly (another writer).
func (l *memLog) add(recs ...[]byte) journal.Seq {
	l.mu.Lock()
	defer l.mu.Unlock()
	at := journal.Seq(len(l.recs)) + 1
	l.recs = append(l.recs, recs...)
	close(l.changed)
	l.changed = make(chan struct{})
	return at
}

// snapshot returns the records from the floor on and the floor.
func (l *memLog) snapshot() ([][]byte, journal.Seq) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([][]byte(nil), l.recs[l.floor-1:]...), l.floor
}

type memPort struct {
	l      *memLog
	cursor journal.Seq
}

func (p *memPort) Append(ctx context.Context, rec []byte) (journal.Seq, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	p.l.mu.Lock()
	fail := p.l.failAppend
	p.l.mu.Unlock()
	if fail != nil {
		if err := fail(rec); err != nil {
			return 0, err
		}
	}
	return p.l.add(append([]byte(nil), rec...)), nil
}

func (p *memPort) Next(ctx context.Context, wait time.Duration) ([]client.Record, error) {
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		p.l.mu.Lock()
		if p.cursor < p.l.floor {
			gap := &client.GapError{From: p.cursor, To: p.l.floor}
			p.cursor = p.l.floor
			p.l.mu.Unlock()
			return nil, gap
		}
		if n := journal.Seq(len(p.l.recs)); p.cursor <= n {
			end := min(n, p.cursor+15)
			out := make([]client.Record, 0, end-p.cursor+1)
			for s := p.cursor; s <= end; s++ {
				out = append(out, client.Record{Seq: s, Data: p.l.recs[s-1]})
			}
			p.cursor = end + 1
			p.l.mu.Unlock()
			return out, nil
		}
		ch := p.l.changed
		p.l.mu.Unlock()
		select {
		case <-ch:
		case <-t.C:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (p *memPort) Truncate(ctx context.Context, upTo journal.Seq) (journal.Seq, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	p.l.mu.Lock()
	defer p.l.mu.Unlock()
	p.l.floor = max(p.l.floor, min(upTo, journal.Seq(len(p.l.recs))+1))
	p.l.truncates++
	return p.l.floor, nil
}
