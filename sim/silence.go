package sim

import (
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
)

// silent checks, as a process hands a batch to the network, that no
// envelope of a journal its host holds quarantined (or down) leaves it: a
// quarantine ends the journal's incarnation and drops its queued messages,
// so nothing of it may be sent until it is reopened. What a node sent from
// memory it could not make durable would vouch for votes its disk may not
// hold.
//
// A machine that runs a matchmaker answers for every journal it matches,
// whatever its own node of the journal is doing: its MatchReply and
// GarbageCollectAck envelopes are the matchmaker's, not the journal's.
// Machine beats and handover envelopes name no journal.
func (a *audit) silent(p *proc, to paxos.NodeID, batch []host.Envelope) {
	h := p.h
	if h == nil {
		return // the host is still being built: it has no journal yet
	}
	for _, e := range batch {
		if e.Handover != nil || e.MachineBeat {
			continue
		}
		if h.Matchmaker() != nil && (e.Msg.Type == paxos.MsgMatchReply || e.Msg.Type == paxos.MsgGarbageCollectAck) {
			continue
		}
		switch st, err := h.Status(e.Journal); st {
		case host.Quarantined, host.Down:
			a.violation("host: a quarantined journal sends nothing", "n%d sent %s of %s to n%d while the journal is %v (%v)",
				p.id, e.Msg.Type, short(e.Journal), to, st, err)
		}
	}
}
