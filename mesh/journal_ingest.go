package mesh

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Refusal names why ingest rejected an event. The words are frozen: they
// appear in sync answers and in status output.
type Refusal string

// The ingest refusals, in the order they are checked; the first that applies
// wins. An envelope that does not decode at all is "version" when its "v" is
// not 1 and "identity" otherwise.
const (
	RefusedOversized  Refusal = "oversized"
	RefusedVersion    Refusal = "version"
	RefusedIdentity   Refusal = "identity"
	RefusedSignature  Refusal = "signature"
	RefusedRepository Refusal = "repository"
	RefusedBounds     Refusal = "bounds"
	RefusedUntrusted  Refusal = "untrusted"
	RefusedCapacity   Refusal = "capacity"
)

// Refusals lists every ingest refusal.
var Refusals = []Refusal{RefusedOversized, RefusedVersion, RefusedIdentity, RefusedSignature,
	RefusedRepository, RefusedBounds, RefusedUntrusted, RefusedCapacity}

// Rejection is one refused event of an Ingest call.
type Rejection struct {
	Index  int     `json:"index"`
	Reason Refusal `json:"reason"`
	Detail string  `json:"detail,omitempty"`
}

// IngestReport says where each event handed to Ingest landed: every event is
// counted in exactly one of Accepted, Duplicate, Pending or Rejected.
type IngestReport struct {
	Accepted  int         `json:"accepted"`
	Duplicate int         `json:"duplicate"`
	Pending   int         `json:"pending"`
	Rejected  []Rejection `json:"rejected,omitempty"`
}

// Total is the number of events the report accounts for.
func (r IngestReport) Total() int { return r.Accepted + r.Duplicate + r.Pending + len(r.Rejected) }

// decodeEvent runs the stateless ingest checks in order: oversized, version,
// identity, signature, repository, bounds.
func (j *Journal) decodeEvent(raw []byte) (*stored, Refusal, string) {
	if len(raw) > eventBytesMax {
		return nil, RefusedOversized, fmt.Sprintf("%d bytes", len(raw))
	}
	var ev Event
	if err := json.Unmarshal(raw, &ev); err != nil {
		var head struct {
			V int `json:"v"`
		}
		if json.Unmarshal(raw, &head) != nil || head.V != eventVersion {
			return nil, RefusedVersion, "not an event of version 1"
		}
		return nil, RefusedIdentity, "envelope does not decode"
	}
	if ev.V != eventVersion {
		return nil, RefusedVersion, fmt.Sprintf("v=%d", ev.V)
	}
	if _, err := ParseStreamID(string(ev.Stream)); err != nil {
		return nil, RefusedIdentity, "stream id"
	}
	pk, err := ParsePublicKey(ev.PK)
	if err != nil {
		return nil, RefusedIdentity, "public key"
	}
	if NodeOf(pk) != ev.Stream.Node() {
		return nil, RefusedIdentity, "key is not the stream's node"
	}
	if ev.Seq == 0 || ev.Lamport == 0 {
		return nil, RefusedIdentity, "seq and lamport start at 1"
	}
	signed, err := ev.signedBytes()
	if err != nil || !verifySig(pk, domainEvent, signed, ev.Sig) {
		return nil, RefusedSignature, fmt.Sprintf("%s/%d", ev.Stream, ev.Seq)
	}
	if ev.Repo != j.cfg.Repo {
		return nil, RefusedRepository, fmt.Sprintf("repo %.40q", ev.Repo)
	}
	b, err := parseBody(ev.Body)
	if err != nil {
		return nil, RefusedBounds, err.Error()
	}
	return &stored{ev: ev, body: b, line: marshalWire(ev)}, "", ""
}

// Ingest takes events from a peer or the file. accept decides trust per
// public key (hex). Each event lands in exactly one of the report's buckets.
// At most ingestBatchEventsMax events are looked at; the rest are rejected
// for capacity.
func (j *Journal) Ingest(raws []json.RawMessage, accept func(pk string) bool) IngestReport {
	var rep IngestReport
	var applied [][]byte
	reject := func(i int, why Refusal, detail string) {
		rep.Rejected = append(rep.Rejected, Rejection{Index: i, Reason: why, Detail: detail})
		j.tallies.Rejected[why]++
	}
	for i, raw := range raws {
		j.tallies.Received++
		if i >= ingestBatchEventsMax {
			reject(i, RefusedCapacity, "batch too large")
			continue
		}
		st, why, detail := j.decodeEvent(raw)
		if st == nil {
			reject(i, why, detail)
			continue
		}
		ev := &st.ev
		if !accept(ev.PK) {
			reject(i, RefusedUntrusted, string(ev.Stream.Node()))
			continue
		}
		if ev.Stream == j.cfg.Stream {
			rep.Duplicate++
			continue
		}
		if t, ok := j.tombstones[ev.Stream]; ok {
			t.Seq = max(t.Seq, ev.Seq)
			j.tombstones[ev.Stream] = t
			rep.Duplicate++
			continue
		}
		node := ev.Stream.Node()
		l := j.streams[ev.Stream]
		if l == nil {
			if len(j.streams) >= streamsMax || j.nodeStreams[node] >= nodeStreamsMax {
				reject(i, RefusedCapacity, "stream quota")
				continue
			}
		}
		if l != nil && (ev.Seq <= l.high() || l.pending[ev.Seq] != nil) {
			rep.Duplicate++
			continue
		}
		if j.nodeEvents[node] >= nodeEventsMax {
			reject(i, RefusedCapacity, "node event quota")
			continue
		}
		high := uint64(0)
		if l != nil {
			high = l.high()
		}
		if ev.Seq > high+1 {
			if (l != nil && len(l.pending) >= streamPendingMax) || j.pendingTotal >= pendingMax {
				reject(i, RefusedCapacity, "pending quota")
				continue
			}
			if l == nil {
				l = j.addStream(ev.Stream)
			}
			l.pending[ev.Seq] = st
			j.pendingTotal++
			j.nodeEvents[node]++
			rep.Pending++
			continue
		}
		if l == nil {
			l = j.addStream(ev.Stream)
		}
		j.apply(l, st)
		applied = append(applied, st.line)
		rep.Accepted++
		for {
			next, ok := l.pending[l.high()+1]
			if !ok {
				break
			}
			delete(l.pending, next.ev.Seq)
			j.pendingTotal--
			j.nodeEvents[node]-- // apply counts it again
			j.apply(l, next)
			applied = append(applied, next.line)
		}
	}
	j.tallies.Accepted += uint64(rep.Accepted)
	j.tallies.Duplicate += uint64(rep.Duplicate)
	if rep.Total() != len(raws) {
		panic(fmt.Sprintf("paros/mesh: ingest accounted for %d of %d events", rep.Total(), len(raws)))
	}
	j.persist(applied)
	return rep
}

// Reload ingests lines read back from the Store: the same checks, except
// that every key is accepted. It restores no liveness: every stream counts
// as learned now, and none as heard beating. Tallies of received and
// duplicate events are reset.
func (j *Journal) Reload(lines [][]byte) IngestReport {
	store := j.cfg.Store
	j.cfg.Store = nil // the lines are already there
	raws := make([]json.RawMessage, 0, len(lines))
	for _, line := range lines {
		raws = append(raws, line)
	}
	var rep IngestReport
	for chunk := range slices.Chunk(raws, ingestBatchEventsMax) {
		r := j.Ingest(chunk, func(string) bool { return true })
		rep.Accepted += r.Accepted
		rep.Duplicate += r.Duplicate
		rep.Pending += r.Pending
		rep.Rejected = append(rep.Rejected, r.Rejected...)
	}
	j.cfg.Store = store
	j.tallies.Received, j.tallies.Duplicate = 0, 0
	return rep
}
