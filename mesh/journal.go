package mesh

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Journal limits, so no peer can make a runtime hold events or streams
// without bound. Each is asserted where it is used.
const (
	streamsMax           = 1024           // streams held, all nodes
	nodeStreamsMax       = 64             // streams held per node
	nodeEventsMax        = 20_000         // events held + pending per node
	streamPendingMax     = 256            // out-of-order events waiting per stream
	pendingMax           = 4096           // out-of-order events waiting in all
	tombstonesMax        = streamsMax * 4 // tombstones kept; the smallest id goes first
	journalEventsOver    = 20_000         // held events past which compaction is due for every node
	journalStreamsOver   = streamsMax * 3 / 4
	nodeCompactStreams   = nodeStreamsMax * 3 / 4 // a node holding this many streams is crowded
	ingestBatchEventsMax = 4096                   // events one Ingest call looks at
)

// Liveness is what a journal knows about a stream's origin, on its own clock.
type Liveness uint8

const (
	// Expired: not heard beating within the expiry, or never heard beating.
	Expired Liveness = iota
	// Live: a verified beat rose within the expiry.
	Live
	// Own: this journal's current stream.
	Own
)

// Alive reports Own or Live.
func (l Liveness) Alive() bool { return l != Expired }

func (l Liveness) String() string {
	switch l {
	case Own:
		return "own"
	case Live:
		return "live"
	}
	return "expired"
}

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

// Tallies are a journal's running counters.
type Tallies struct {
	Received      uint64             `json:"received"`
	Accepted      uint64             `json:"accepted"`
	Duplicate     uint64             `json:"duplicate"`
	Rejected      map[Refusal]uint64 `json:"rejected"`
	Compacted     uint64             `json:"compacted"`
	ClaimsRefused uint64             `json:"claims_refused"`
}

// Store persists held events. Append is called with events as they are
// applied (own and ingested); Rewrite replaces everything after compaction.
// A Store does I/O; the journal only calls it.
type Store interface {
	Append(lines [][]byte) error
	Rewrite(lines [][]byte) error
}

// stored is one held or pending event with its decoded body.
type stored struct {
	ev   Event
	body Body
	line []byte // compact JSON of ev, what is relayed and persisted
}

// streamLog is one held stream.
type streamLog struct {
	// Invariant: events[i].ev.Seq == i+1.
	events []*stored
	// Invariant: every key of pending is > len(events)+1; len(pending) <= streamPendingMax.
	pending map[uint64]*stored
	// beat is the highest verified beat; beatPK and beatSig are its proof.
	beat            uint64
	beatPK, beatSig string
	// heard says freshAt is meaningful: a beat of this stream rose here.
	heard     bool
	freshAt   time.Duration
	learnedAt time.Duration
}

func (l *streamLog) high() uint64 { return uint64(len(l.events)) }

// Tombstone is what a compacted stream leaves: the seq it reached, advertised
// so that peers do not send it again, and the beat it was last heard at.
type Tombstone struct {
	Seq  uint64 `json:"seq"`
	Beat uint64 `json:"beat"`
}

// JournalConfig configures a Journal.
type JournalConfig struct {
	Key    *Key
	Stream StreamID // this runtime's current stream; its node must be Key's
	Repo   string   // repository id, 32 hex
	Expiry time.Duration
	Clock  Clock
	Store  Store // optional
}

// Journal holds the streams this runtime knows, its own among them. It is
// sans-IO apart from calling its optional Store, and not safe for concurrent
// use: the Runtime serializes calls.
type Journal struct {
	cfg        JournalConfig
	streams    map[StreamID]*streamLog
	tombstones map[StreamID]Tombstone
	// Invariant: nodeStreams[n] == number of held streams of node n.
	nodeStreams map[NodeID]int
	// Invariant: nodeEvents[n] == held + pending events of node n's streams.
	nodeEvents map[NodeID]int
	// Invariant: pendingTotal == sum of len(pending) over streams, <= pendingMax.
	pendingTotal int
	eventsHeld   int
	maxSeen      uint64 // highest Lamport stamp applied
	rotation     int    // where MissingFor starts next
	tallies      Tallies
	storeErr     error
}

// NewJournal creates a journal holding only its own, empty stream.
func NewJournal(cfg JournalConfig) *Journal {
	if cfg.Key == nil || cfg.Clock == nil || cfg.Expiry <= 0 {
		panic("paros/mesh: JournalConfig needs a Key, a Clock and an Expiry")
	}
	if cfg.Stream.Node() != cfg.Key.Node {
		panic("paros/mesh: own stream is not of this key's node")
	}
	if !isLowerHex(cfg.Repo, repoHexLen) {
		panic("paros/mesh: repository id must be 32 hex")
	}
	j := &Journal{
		cfg:         cfg,
		streams:     map[StreamID]*streamLog{},
		tombstones:  map[StreamID]Tombstone{},
		nodeStreams: map[NodeID]int{},
		nodeEvents:  map[NodeID]int{},
		tallies:     Tallies{Rejected: map[Refusal]uint64{}},
	}
	j.addStream(cfg.Stream)
	return j
}

func (j *Journal) now() time.Duration { return j.cfg.Clock.Mono() }

// OwnStream returns this runtime's current stream.
func (j *Journal) OwnStream() StreamID { return j.cfg.Stream }

func (j *Journal) addStream(s StreamID) *streamLog {
	l := &streamLog{pending: map[uint64]*stored{}, learnedAt: j.now()}
	j.streams[s] = l
	j.nodeStreams[s.Node()]++
	if len(j.streams) > streamsMax+1 { // +1: the own stream is never refused
		panic(fmt.Sprintf("paros/mesh: %d streams held, past streamsMax %d", len(j.streams), streamsMax))
	}
	return l
}

func (j *Journal) removeStream(s StreamID) (events int) {
	l := j.streams[s]
	n := s.Node()
	events = len(l.events)
	j.eventsHeld -= events
	j.nodeEvents[n] -= events + len(l.pending)
	j.pendingTotal -= len(l.pending)
	if j.nodeEvents[n] == 0 {
		delete(j.nodeEvents, n)
	}
	j.nodeStreams[n]--
	if j.nodeStreams[n] == 0 {
		delete(j.nodeStreams, n)
	}
	delete(j.streams, s)
	return events
}

// marshalWire encodes v as compact JSON without HTML escaping.
func marshalWire(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("paros/mesh: marshal %T: %v", v, err))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// ErrEventTooLarge is returned by Append for an event past eventBytesMax.
var ErrEventTooLarge = errors.New("paros/mesh: event too large")

// Append signs body as the next event of the own stream and holds it. The
// body's bounds are checked before signing; nothing is written on an error.
func (j *Journal) Append(body Body) (Event, error) {
	if !body.Kind.Known() {
		return Event{}, boundsErr("kind %q is not one this runtime writes", body.Kind)
	}
	if err := body.Validate(); err != nil {
		return Event{}, err
	}
	own := j.streams[j.cfg.Stream]
	ev := Event{
		V:       eventVersion,
		Stream:  j.cfg.Stream,
		Seq:     own.high() + 1,
		Lamport: j.maxSeen + 1,
		At:      j.cfg.Clock.Wall().Unix(),
		Repo:    j.cfg.Repo,
		PK:      j.cfg.Key.PK,
		Body:    marshalWire(body),
	}
	signed, err := ev.signedBytes()
	if err != nil {
		panic(fmt.Sprintf("paros/mesh: own event does not canonicalize: %v", err))
	}
	ev.Sig = j.cfg.Key.Sign(domainEvent, signed)
	line := marshalWire(ev)
	if len(line) > eventBytesMax {
		return Event{}, fmt.Errorf("%w: %d bytes, at most %d", ErrEventTooLarge, len(line), eventBytesMax)
	}
	// Decode the body as a peer will, so what we hold is what they hold.
	b, err := parseBody(ev.Body)
	if err != nil {
		return Event{}, err
	}
	st := &stored{ev: ev, body: b, line: line}
	j.apply(own, st)
	j.persist([][]byte{line})
	return ev, nil
}

// apply holds st as the next event of its stream.
func (j *Journal) apply(l *streamLog, st *stored) {
	if st.ev.Seq != l.high()+1 {
		panic(fmt.Sprintf("paros/mesh: apply %s/%d past high-water %d", st.ev.Stream, st.ev.Seq, l.high()))
	}
	l.events = append(l.events, st)
	j.eventsHeld++
	j.nodeEvents[st.ev.Stream.Node()]++
	j.maxSeen = max(j.maxSeen, st.ev.Lamport)
}

func (j *Journal) persist(lines [][]byte) {
	if j.cfg.Store == nil || len(lines) == 0 {
		return
	}
	if err := j.cfg.Store.Append(lines); err != nil && j.storeErr == nil {
		j.storeErr = err
	}
}

// StoreErr returns the first error the Store reported, if any.
func (j *Journal) StoreErr() error { return j.storeErr }

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

// Liveness returns what this journal knows of stream s now.
func (j *Journal) Liveness(s StreamID) Liveness {
	if s == j.cfg.Stream {
		return Own
	}
	l := j.streams[s]
	if l == nil || !l.heard || j.now()-l.freshAt > j.cfg.Expiry {
		return Expired
	}
	return Live
}

// silentFor is how long stream l has not been heard beating; for a stream
// never heard, how long this journal has held it.
func (j *Journal) silentFor(l *streamLog) time.Duration {
	if l.heard {
		return j.now() - l.freshAt
	}
	return j.now() - l.learnedAt
}

// BeatOwn raises this runtime's own beat and signs it. Call it once per heartbeat.
func (j *Journal) BeatOwn() uint64 {
	own := j.streams[j.cfg.Stream]
	own.beat++
	own.beatPK = j.cfg.Key.PK
	own.beatSig = j.cfg.Key.Sign(domainBeat, beatBytes(j.cfg.Stream, own.beat))
	own.heard = true
	own.freshAt = j.now()
	return own.beat
}

// Mark is one stream's entry in a Marks exchange: the contiguous seq held,
// and the origin's latest beat with its signature, forwarded verbatim by
// relays, plus how long ago (on the sender's clock) that beat rose.
// A tombstone is advertised as a Mark with only Seq.
type Mark struct {
	Seq   uint64  `json:"seq"`
	Beat  uint64  `json:"beat,omitempty"`
	AgeMs *uint64 `json:"age_ms,omitempty"`
	PK    string  `json:"pk,omitempty"`
	Sig   string  `json:"sig,omitempty"`
}

// Marks maps stream to mark.
type Marks map[StreamID]Mark

func (j *Journal) markOf(l *streamLog) Mark {
	m := Mark{Seq: l.high()}
	if l.beat > 0 {
		m.Beat, m.PK, m.Sig = l.beat, l.beatPK, l.beatSig
		age := uint64(max(0, j.now()-l.freshAt) / time.Millisecond)
		m.AgeMs = &age
	}
	return m
}

// Marks covers every held stream and every tombstone.
func (j *Journal) Marks() Marks {
	ms := make(Marks, len(j.streams)+len(j.tombstones))
	for s, l := range j.streams {
		ms[s] = j.markOf(l)
	}
	for s, t := range j.tombstones {
		ms[s] = Mark{Seq: t.Seq}
	}
	return ms
}

// MarksFor is Marks without the tombstones peer does not name, so that
// tombstones do not weigh down every message.
func (j *Journal) MarksFor(peer Marks) Marks {
	ms := make(Marks, len(j.streams))
	for s, l := range j.streams {
		ms[s] = j.markOf(l)
	}
	for s, t := range j.tombstones {
		if _, ok := peer[s]; ok {
			ms[s] = Mark{Seq: t.Seq}
		}
	}
	return ms
}

// MissingFor returns the held events peer lacks according to its marks, in
// stream-then-seq order starting from a stream that rotates every call, so
// that a stream a peer keeps refusing cannot starve the others. It stops
// before the lines (each counted with one separator byte) would pass budget,
// but returns at least one event if any is missing.
func (j *Journal) MissingFor(peer Marks, budget int) []json.RawMessage {
	ids := slices.Sorted(maps.Keys(j.streams))
	if len(ids) == 0 {
		return nil
	}
	start := j.rotation % len(ids)
	j.rotation++
	var out []json.RawMessage
	used := 0
	for k := range ids {
		s := ids[(start+k)%len(ids)]
		l := j.streams[s]
		from := peer[s].Seq
		for _, st := range l.events[min(from, l.high()):] {
			size := len(st.line) + 1
			if len(out) > 0 && used+size > budget {
				return out
			}
			out = append(out, st.line)
			used += size
		}
	}
	return out
}

// MergeMarks adopts the verified, trusted beats among marks. A beat counts
// only if it is above zero, not of the own stream, signed by the stream's
// node key over domainBeat, and trusted. It creates a stream not held only
// if the mark is fresh (age present and at most the expiry), above the
// tombstone's beat if there is one, and within the stream quotas; creating a
// tombstoned stream lifts the tombstone with an empty log, so peers send the
// stream again from its first event. A held stream adopts only a rising
// beat, fresh as of now minus min(age, expiry+1s). Marks never move seqs.
// It returns the streams whose tombstone was lifted.
func (j *Journal) MergeMarks(marks Marks, trusted func(pk string) bool) (lifted []StreamID) {
	now := j.now()
	for _, s := range slices.Sorted(maps.Keys(marks)) {
		m := marks[s]
		if m.Beat == 0 || s == j.cfg.Stream {
			continue
		}
		if _, err := ParseStreamID(string(s)); err != nil {
			continue
		}
		l := j.streams[s]
		if l != nil && m.Beat <= l.beat {
			continue
		}
		tomb, tombstoned := j.tombstones[s]
		if l == nil {
			if m.AgeMs == nil || time.Duration(*m.AgeMs)*time.Millisecond > j.cfg.Expiry {
				continue
			}
			if tombstoned && m.Beat <= tomb.Beat {
				continue
			}
			if len(j.streams) >= streamsMax || j.nodeStreams[s.Node()] >= nodeStreamsMax {
				continue
			}
		}
		pk, err := ParsePublicKey(m.PK)
		if err != nil || NodeOf(pk) != s.Node() || !verifySig(pk, domainBeat, beatBytes(s, m.Beat), m.Sig) || !trusted(m.PK) {
			continue
		}
		if l == nil {
			if tombstoned {
				delete(j.tombstones, s)
				lifted = append(lifted, s)
			}
			l = j.addStream(s)
		}
		age := j.cfg.Expiry + time.Second
		if m.AgeMs != nil {
			age = min(age, time.Duration(*m.AgeMs)*time.Millisecond)
		}
		l.beat, l.beatPK, l.beatSig = m.Beat, m.PK, m.Sig
		l.heard = true
		l.freshAt = now - age
	}
	return lifted
}

// Record is one held event as the fold reads it.
type Record struct {
	Stream  StreamID
	Seq     uint64
	Lamport uint64
	Body    *Body
}

// Records returns every held event (not pending ones), in no set order.
func (j *Journal) Records() []Record {
	out := make([]Record, 0, j.eventsHeld)
	for _, l := range j.streams {
		for _, st := range l.events {
			out = append(out, Record{Stream: st.ev.Stream, Seq: st.ev.Seq, Lamport: st.ev.Lamport, Body: &st.body})
		}
	}
	return out
}

// Fold folds every held event with this journal's liveness.
func (j *Journal) Fold() State {
	return Fold(j.Records(), j.Liveness)
}

// StreamEvents returns the held events of stream s, in seq order.
func (j *Journal) StreamEvents(s StreamID) []Event {
	l := j.streams[s]
	if l == nil {
		return nil
	}
	out := make([]Event, len(l.events))
	for i, st := range l.events {
		out[i] = st.ev
	}
	return out
}

// Streams returns the held stream ids, sorted.
func (j *Journal) Streams() []StreamID { return slices.Sorted(maps.Keys(j.streams)) }

// Tombstones returns a copy of the tombstones.
func (j *Journal) Tombstones() map[StreamID]Tombstone { return maps.Clone(j.tombstones) }

// EventsHeld is the number of held events, all streams.
func (j *Journal) EventsHeld() int { return j.eventsHeld }

// PendingHeld is the number of out-of-order events waiting.
func (j *Journal) PendingHeld() int { return j.pendingTotal }

// Tallies returns a copy of the counters.
func (j *Journal) Tallies() Tallies {
	t := j.tallies
	t.Rejected = maps.Clone(t.Rejected)
	return t
}

// countRefusedClaim records a claim refused at admission.
func (j *Journal) countRefusedClaim() { j.tallies.ClaimsRefused++ }

// Lines returns every held event's line, stream by stream in seq order.
func (j *Journal) Lines() [][]byte {
	var out [][]byte
	for _, s := range j.Streams() {
		for _, st := range j.streams[s].events {
			out = append(out, st.line)
		}
	}
	return out
}
