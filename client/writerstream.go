package client

import (
	"errors"
	"sync"

	"github.com/parosdb/paros/core/journal"
)

// streamTransport carries a Writer's writes over one WriteStream: the
// writes leave in the order the sender sends
// them, so with many out at once none overtakes an earlier one on its way
// to consensus. The stream opens on first use and again after it broke,
// answered NotLeader (the Client learned the hinted leader from that reply)
// or answered UnknownJournal (its server no longer serves the journal).
type streamTransport struct {
	w *Writer

	mu      sync.Mutex
	ws      *WriteStream
	waiting map[uint64]chan journal.Reply
}

// write sends req and waits for its reply. left is called once the request
// was handed to the stream (or nothing was sent). An error means nothing
// was received (the stream could not be opened, or this Send failed); a
// broken stream answers the Writes it held with Lost (ambiguous).
func (t *streamTransport) write(req journal.WriteRequest, left func()) (journal.Reply, error) {
	ch := make(chan journal.Reply, 1)
	t.mu.Lock()
	if t.ws == nil {
		ws, err := t.w.j.OpenWriteStream(t.w.ctx)
		if err != nil {
			t.mu.Unlock()
			left()
			return journal.Reply{}, err
		}
		t.ws, t.waiting = ws, map[uint64]chan journal.Reply{}
		t.w.wg.Add(1)
		go t.recv(ws)
	}
	ws := t.ws
	id, err := ws.Send(req)
	if err == nil {
		t.waiting[id] = ch
	} else {
		t.dropLocked(ws)
	}
	t.mu.Unlock()
	left()
	if err != nil {
		return journal.Reply{}, err
	}
	select {
	case r := <-ch:
		return r, nil
	case <-t.w.ctx.Done():
		return journal.Reply{NoVerdict: journal.Lost}, nil
	}
}

// recv hands each reply to its Write until the stream ends.
func (t *streamTransport) recv(ws *WriteStream) {
	defer t.w.wg.Done()
	for {
		id, r, err := ws.Recv()
		t.mu.Lock()
		if err != nil {
			if t.ws == ws && !errors.Is(err, ErrStreamDone) {
				// The stream broke: its server may be gone. The next stream
				// asks who leads instead of trying it again.
				t.w.j.c.forgetLeader(t.w.j.id, ws.server)
			}
			t.dropLocked(ws)
			t.mu.Unlock()
			return
		}
		if t.ws == ws {
			if ch, ok := t.waiting[id]; ok {
				delete(t.waiting, id)
				ch <- r
			}
			switch r.NoVerdict {
			case journal.NotLeader:
				t.dropLocked(ws) // the next Write opens a stream to the hinted leader
			case journal.UnknownJournal:
				// The server no longer serves the journal (it retired from
				// it, or was removed and restarted): resending to it would
				// be answered the same forever. The next Write asks who
				// leads (ws.Recv forgot it as the leader).
				t.dropLocked(ws)
			}
		}
		t.mu.Unlock()
	}
}

// dropLocked forgets ws if it is the current stream: every Write it held
// is answered Lost (ambiguous: the Writer resends it identically).
func (t *streamTransport) dropLocked(ws *WriteStream) {
	if t.ws != ws {
		return
	}
	ws.Close()
	for id, ch := range t.waiting {
		ch <- journal.Reply{NoVerdict: journal.Lost}
		delete(t.waiting, id)
	}
	t.ws = nil
}
