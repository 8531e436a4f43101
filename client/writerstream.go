package client

import (
	"context"
	"fmt"
	"sync"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/wire"
)

// streamTransport carries a Writer's writes over its Client's WriteStream
// to the server believed to lead the journal (writeMux): every Writer of a
// Client shares one stream per server. The writes of one Writer leave in
// the order its sender sends them, on one stream, so with many out at once
// none overtakes an earlier one on its way to consensus. After a reply
// NotLeader or UnknownJournal the Client knows better who leads (or that
// it does not), and the next write goes there.
type streamTransport struct {
	w *Writer
}

// write sends req and waits for its reply. left is called once the request
// was handed to a stream (or nothing was sent). An error means nothing was
// received (no stream could be opened); a stream that breaks answers the
// writes it held with Lost (ambiguous).
func (t *streamTransport) write(req journal.WriteRequest, left func()) (journal.Reply, error) {
	j := t.w.j
	i := j.whereToWrite(t.w.ctx)
	m, err := j.c.writeMux(t.w.ctx, i)
	if err != nil {
		j.c.forgetLeader(j.id, i) // the next write asks who leads
		left()
		return journal.Reply{}, err
	}
	req.Journal = j.check(req.Journal)
	id, ch := m.send(req)
	left()
	select {
	case r := <-ch:
		return r, nil
	case <-t.w.ctx.Done():
		m.abandon(id)
		return journal.Reply{NoVerdict: journal.Lost}, nil
	}
}

// writeMux is a Client's one WriteStream with one server, shared by every
// Writer of the Client whose journal that server leads. One stream per
// Writer made a Client writing 1,000 journals hold 1,000 streams (each
// with its goroutines and flow-control windows on both ends), ran into the
// server's bound on one credential's streams, and sent each journal's
// writes in a message of its own; now the writes of every journal the
// server leads ride one message and reach its loop in one turn. Each write
// is still its own request, answer and verdict, named by its id.
//
// A stream that breaks answers every write it held Lost (ambiguous: each
// Writer resends its own identically) and leaves the Client; the next
// write opens another.
type writeMux struct {
	c      *Client
	server int
	stream pb.Journal_WriteStreamClient
	cancel context.CancelFunc
	wake   chan struct{}

	mu     sync.Mutex
	nextID uint64
	queue  []*pb.StreamWrite
	// waiting holds the writes sent and not answered, by id. Invariant:
	// empty once broken is set.
	waiting map[uint64]muxWait
	broken  bool
}

type muxWait struct {
	j  journal.ID
	ch chan journal.Reply // buffered: the receiver never blocks on it
}

// writeMux returns the Client's stream with server i, opening it if none
// is open. Opens are single-flight per server: a Writer that finds an open
// in progress waits for it (or for ctx) and shares its stream, so a burst
// of Writers at once opens one stream per server, not one per Writer.
func (c *Client) writeMux(ctx context.Context, i int) (*writeMux, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, fmt.Errorf("paros/client: open write stream to %s: the Client is closed", c.list()[i].addr)
		}
		if m := c.muxes[i]; m != nil {
			c.mu.Unlock()
			return m, nil
		}
		wait, busy := c.opening[i]
		if !busy {
			done := make(chan struct{})
			c.opening[i] = done
			c.mu.Unlock()
			m, err := c.openMux(i)
			c.mu.Lock()
			delete(c.opening, i)
			c.mu.Unlock()
			close(done)
			return m, err
		}
		c.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, fmt.Errorf("paros/client: open write stream to %s: %w", c.list()[i].addr, ctx.Err())
		}
	}
}

// openMux opens the stream with server i and installs it. Its caller is
// the one open in progress for i.
func (c *Client) openMux(i int) (*writeMux, error) {
	// The stream outlives any one Writer: it ends when it breaks or the
	// Client closes, never with a Writer's context.
	ctx, cancel := context.WithCancel(context.Background())
	st, err := c.list()[i].journal.WriteStream(ctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("paros/client: open write stream to %s: %w", c.list()[i].addr, err)
	}
	m := &writeMux{c: c, server: i, stream: st, cancel: cancel, wake: make(chan struct{}, 1), waiting: map[uint64]muxWait{}}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		cancel()
		return nil, fmt.Errorf("paros/client: open write stream to %s: the Client is closed", c.list()[i].addr)
	}
	c.muxes[i] = m
	c.mu.Unlock()
	go m.sender(ctx)
	go m.receiver()
	return m, nil
}

// send queues one write and returns its id and the channel its reply
// arrives on (Lost if the stream broke before or after).
func (m *writeMux) send(req journal.WriteRequest) (uint64, <-chan journal.Reply) {
	in := &pb.StreamWrite{Write: &pb.WriteRequest{Journal: wire.JournalIDToPB(req.Journal),
		Leader: wire.UUIDToPB(req.Leader), Seq: uint64(req.Seq), Records: req.Records}}
	ch := make(chan journal.Reply, 1)
	m.mu.Lock()
	if m.broken {
		m.mu.Unlock()
		ch <- journal.Reply{NoVerdict: journal.Lost}
		return 0, ch
	}
	m.nextID++
	in.Id = m.nextID
	m.waiting[in.Id] = muxWait{j: req.Journal, ch: ch}
	m.queue = append(m.queue, in)
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
	return in.Id, ch
}

// abandon forgets a write whose Writer stopped waiting; its answer, if
// one comes, is dropped.
func (m *writeMux) abandon(id uint64) {
	m.mu.Lock()
	delete(m.waiting, id)
	m.mu.Unlock()
}

// sender sends what is queued, one message per wake-up (up to
// streamWritesPerMessageMax writes each), in order.
func (m *writeMux) sender(ctx context.Context) {
	for {
		select {
		case <-m.wake:
		case <-ctx.Done():
			m.fail()
			return
		}
		for {
			m.mu.Lock()
			n := min(len(m.queue), streamWritesPerMessageMax)
			batch := m.queue[:n:n]
			m.queue = m.queue[n:]
			m.mu.Unlock()
			if n == 0 {
				break
			}
			if err := m.stream.Send(&pb.WriteStreamRequest{Writes: batch}); err != nil {
				m.fail()
				return
			}
		}
	}
}

// receiver hands each answer to its write, and teaches the Client who
// leads each journal, until the stream ends.
func (m *writeMux) receiver() {
	for {
		reply, err := m.stream.Recv()
		if err != nil {
			m.fail()
			return
		}
		for _, a := range reply.GetAnswers() {
			m.mu.Lock()
			w, ok := m.waiting[a.GetId()]
			delete(m.waiting, a.GetId())
			m.mu.Unlock()
			if !ok {
				continue
			}
			r := wire.VerdictFromPB(a.GetReply().GetVerdict())
			m.c.learnFromVerdict(w.j, m.server, r)
			w.ch <- r
		}
	}
}

// fail ends the stream: it leaves the Client, and every write it held is
// answered Lost. Its server may be gone, so the next write of each of
// those journals asks who leads instead of trying it again.
func (m *writeMux) fail() {
	m.mu.Lock()
	if m.broken {
		m.mu.Unlock()
		return
	}
	m.broken = true
	waiting := m.waiting
	m.waiting = map[uint64]muxWait{}
	m.queue = nil
	m.mu.Unlock()
	m.cancel()
	m.c.mu.Lock()
	if m.c.muxes[m.server] == m {
		delete(m.c.muxes, m.server)
	}
	m.c.mu.Unlock()
	for _, w := range waiting {
		m.c.forgetLeader(w.j, m.server)
		w.ch <- journal.Reply{NoVerdict: journal.Lost}
	}
}

// learnFromVerdict updates what the Client knows of journal id's leader
// from a reply server i gave: a verdict means it leads; UnknownJournal
// that it serves the journal no more; NotLeader with a hint names the
// leader (or, when the hinted machine is one this Client does not dial
// yet, a reconfiguration added it: the next write dials it, whereToWrite).
func (c *Client) learnFromVerdict(id journal.ID, i int, r journal.Reply) {
	switch {
	case r.Outcome.Kind != journal.OutcomeInvalid:
		c.setLeader(id, i)
	case r.NoVerdict == journal.UnknownJournal:
		c.forgetLeader(id, i)
	case r.NoVerdict == journal.NotLeader && r.LeaderHint != 0:
		if h := c.knownNode(r.LeaderHint); h >= 0 {
			c.setLeader(id, h)
		} else {
			c.hint(id, i, r.LeaderHint)
		}
	}
}
