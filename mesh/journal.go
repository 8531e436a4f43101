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
