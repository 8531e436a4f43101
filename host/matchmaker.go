package host

import (
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
)

// mmRT is the process's matchmaker role: one registry per journal of its
// set, in one store. Its batches follow the journals' rule: the replies of a
// Ready leave only once its writes, and every earlier Ready's, are durable.
type mmRT struct {
	mm      *matchmaker.Matchmaker
	batches []*mmPending
	tokens  map[Token]bool
}

type mmPending struct {
	token     Token
	durable   bool
	msgs      []matchmaker.Envelope
	handovers []matchmaker.Handover
}

// SetMatchmaker makes this process a matchmaker (boot only: the caller
// booted mm from the process's registry store).
func (h *Host) SetMatchmaker(mm *matchmaker.Matchmaker) {
	h.mm = &mmRT{mm: mm, tokens: map[Token]bool{}}
}

// Matchmaker exposes the matchmaker role for audits (read only; nil when
// this process runs none).
func (h *Host) Matchmaker() *matchmaker.Matchmaker {
	if h.mm == nil {
		return nil
	}
	return h.mm.mm
}

// stepMatchmaker hands a matchmaking request to the matchmaker role.
func (h *Host) stepMatchmaker(e Envelope) {
	if h.mm == nil {
		h.counters.Dropped++
		return
	}
	h.mm.mm.Step(e.Journal, e.Msg)
	h.drainMatchmaker()
}

func (h *Host) drainMatchmaker() {
	r := h.mm
	for r.mm.HasReady() {
		rd := r.mm.Ready()
		b := &mmPending{token: h.nextToken(), durable: len(rd.Writes) == 0, msgs: rd.Messages, handovers: rd.Handovers}
		r.batches = append(r.batches, b)
		if len(rd.Writes) > 0 {
			r.tokens[b.token] = true
			h.env.PersistRegistry(b.token, rd.Writes)
		}
		r.mm.Advance()
	}
	h.releaseMatchmaker()
}

// releaseMatchmaker sends the replies of every durable batch at the head of
// the queue.
func (h *Host) releaseMatchmaker() {
	r := h.mm
	for len(r.batches) > 0 && r.batches[0].durable {
		b := r.batches[0]
		r.batches[0] = nil
		r.batches = r.batches[1:]
		for _, e := range b.msgs {
			h.enqueueTo(e.Journal, e.Msg)
		}
		h.hoOut = append(h.hoOut, b.handovers...)
	}
}

// onRegistryPersisted: a failed write closes the whole matchmaker (its
// registries' durable state is unknown); its pending replies never leave.
func (h *Host) onRegistryPersisted(t Token, err error) {
	r := h.mm
	delete(r.tokens, t)
	if err != nil {
		h.counters.MatchmakerFaults++
		h.lastFault = fmt.Errorf("matchmaker: persist: %w", err)
		r.mm.Close(err)
		r.batches = nil
		r.tokens = map[Token]bool{}
		h.checkStopped()
		return
	}
	for _, b := range r.batches {
		if b.token == t {
			b.durable = true
			break
		}
	}
	h.releaseMatchmaker()
}

// enqueueTo queues a message of journal jid on its peer's mailbox, adding
// the peer to the flush order when it is new (a joiner, a matchmaker). A
// matchmaking message this process addresses to itself (a founding machine
// runs a node and a matchmaker: the candidate's Match to its own
// matchmaker, and the reply) goes on the loopback mailbox, h.mailboxes[h.id],
// which flush hands over (deliverLoopback); any other message to itself is
// dropped.
func (h *Host) enqueueTo(jid journal.ID, m paxos.Message) {
	if m.To == h.id {
		if !h.loops(m) {
			return
		}
		mb := h.mailboxes[h.id]
		if mb == nil {
			mb = &mailbox{}
			h.mailboxes[h.id] = mb // not in h.peers: flush never sends it
		}
		if mb.push(jid, m, h.tun.LaneMessagesMax) {
			h.counters.Evictions++
		}
		return
	}
	mb := h.mailboxes[m.To]
	if mb == nil {
		mb = &mailbox{}
		h.mailboxes[m.To] = mb
		if i, found := slices.BinarySearch(h.peers, m.To); !found {
			h.peers = slices.Insert(h.peers, i, m.To)
		}
	}
	if mb.push(jid, m, h.tun.LaneMessagesMax) {
		h.counters.Evictions++
	}
}

// loops reports whether m, addressed to this process, is handed back to it:
// matchmaking between the node and the matchmaker this process runs.
func (h *Host) loops(m paxos.Message) bool {
	return h.mm != nil && (m.Type.IsMatchmakerRequest() || m.Type == paxos.MsgMatchReply || m.Type == paxos.MsgGarbageCollectAck)
}

// loopbackRoundsMax bounds the rounds of one deliverLoopback: a request and
// its reply take two; what is left waits for the next event's flush.
const loopbackRoundsMax = 4

// deliverLoopback hands the loopback mailbox's messages to this process as
// a Deliver from itself would: at the end of an event (flush), never inside
// a drain, and only once they were released (a node's Match after its
// promise is durable, a matchmaker's reply after its registry write).
func (h *Host) deliverLoopback() {
	for range loopbackRoundsMax {
		mb := h.mailboxes[h.id]
		if h.stopped || mb == nil || mb.count == 0 {
			return
		}
		h.route(h.id, mb.take(h.tun.LaneMessagesMax))
	}
}
