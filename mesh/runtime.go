package mesh

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"
)

// Transport carries link messages to the runtime at an endpoint and
// returns its answer. A refusal by the peer comes back as a *LinkError;
// anything else is a transport failure. HTTPTransport and MemTransport
// implement it.
type Transport interface {
	Hello(ctx context.Context, endpoint string, msg []byte) ([]byte, error)
	Sync(ctx context.Context, endpoint string, msg []byte) ([]byte, error)
}

// Config configures a Runtime.
type Config struct {
	Key       *Key
	Runtime   string // 16 hex: RuntimeOf(checkout id)
	Repo      string // 32 hex repository id
	Name      string // shown to peers, at most 64 bytes
	Version   string // shown to peers, at most 32 bytes
	Heartbeat time.Duration
	Expiry    time.Duration // at least 3 heartbeats
	// Retention and HandoverRetention default to PeerRetention and
	// HandoverRetention; tests shrink them.
	Retention         time.Duration
	HandoverRetention time.Duration
	Trust             *Trust
	Endpoints         []string // advertised in the card; informational
	Seeds             []string // endpoints always dialed
	Clock             Clock
	Rand              io.Reader
	Transport         Transport
	Store             Store // optional
}

// compactEveryTicks is the supervisor's compaction cadence: once every this
// many heartbeats, the first after that many.
const compactEveryTicks = 60

// Runtime is one run of one runtime: its journal, its links and the
// admission of its own writes. All methods are safe for concurrent use; none
// holds the lock across a Transport call.
type Runtime struct {
	cfg    Config
	stream StreamID
	card   Card

	mu sync.Mutex
	j  *Journal
	// Invariant: len(inbound) <= linksMax; byRuntime maps each inbound
	// link's runtime key to its token.
	inbound   map[string]*inLink
	byRuntime map[RuntimeKey]string
	dials     map[string]*dial
	// Invariant: len(nonces) == len(nonceOrder) <= replayNoncesMax.
	nonces        map[string]bool
	nonceOrder    []string
	refusals      []RefusalRecord
	refusalCounts map[LinkRefusal]uint64
	ticks         uint64
	stopped       bool
}

// inLink is a link a peer dialed to us.
type inLink struct {
	token    string
	card     Card
	counter  uint64 // last request counter; requests must rise
	lastSeen time.Duration
	marks    Marks // from the last request
}

// dial is a link we dial.
type dial struct {
	endpoint string
	token    string
	card     *Card
	counter  uint64
	remote   Marks
	failures int
	nextAt   time.Duration
	lastOK   time.Duration
	everOK   bool
	lastErr  string
	busy     bool       // scheduled by DueTargets, cleared when SyncWith returns
	round    sync.Mutex // one round at a time per target; taken outside Runtime.mu
}

// RefusalRecord is one refusal, kept in a short list for status.
type RefusalRecord struct {
	Reason    LinkRefusal `json:"reason"`
	Detail    string      `json:"detail,omitempty"`
	Direction string      `json:"direction"` // "in": we refused; "out": a peer refused us, or its answer failed our checks
	AgoMs     int64       `json:"ago_ms"`    // filled by Status
	atMono    time.Duration
}

// New starts a runtime: it draws a fresh instance, so a new stream.
func New(cfg Config) (*Runtime, error) {
	if cfg.Key == nil || cfg.Clock == nil || cfg.Rand == nil || cfg.Trust == nil {
		return nil, errors.New("paros/mesh: Config needs Key, Clock, Rand and Trust")
	}
	if !isLowerHex(cfg.Runtime, runtimeHexLen) || !isLowerHex(cfg.Repo, repoHexLen) {
		return nil, fmt.Errorf("%w: runtime or repository id", ErrIdentity)
	}
	if cfg.Heartbeat <= 0 || cfg.Expiry < 3*cfg.Heartbeat {
		return nil, fmt.Errorf("paros/mesh: expiry %v must be at least 3 heartbeats of %v", cfg.Expiry, cfg.Heartbeat)
	}
	if cfg.Retention == 0 {
		cfg.Retention = PeerRetention
	}
	if cfg.HandoverRetention == 0 {
		cfg.HandoverRetention = HandoverRetention
	}
	instance, err := NewInstance(cfg.Rand)
	if err != nil {
		return nil, err
	}
	stream := NewStreamID(cfg.Key.Node, cfg.Runtime, instance)
	card := Card{
		PK: cfg.Key.PK, Runtime: cfg.Runtime, Instance: instance, Repo: cfg.Repo,
		Name: cfg.Name, Version: cfg.Version,
		Features:  []string{FeatureSessions, FeatureClaims, FeatureHandovers, FeatureReviews},
		Endpoints: slices.Clone(cfg.Endpoints),
	}
	if err := card.validate(); err != nil {
		return nil, fmt.Errorf("paros/mesh: own card: %w", err)
	}
	r := &Runtime{
		cfg: cfg, stream: stream, card: card,
		j: NewJournal(JournalConfig{Key: cfg.Key, Stream: stream, Repo: cfg.Repo, Expiry: cfg.Expiry,
			Clock: cfg.Clock, Store: cfg.Store}),
		inbound: map[string]*inLink{}, byRuntime: map[RuntimeKey]string{}, dials: map[string]*dial{},
		nonces: map[string]bool{}, refusalCounts: map[LinkRefusal]uint64{},
	}
	for _, s := range cfg.Seeds {
		r.dialFor(normalizeEndpoint(s))
	}
	return r, nil
}

// Stream returns this run's stream id.
func (r *Runtime) Stream() StreamID { return r.stream }

// RuntimeKey returns this runtime's key across runs.
func (r *Runtime) RuntimeKey() RuntimeKey { return r.stream.Runtime() }

// Card returns this runtime's card.
func (r *Runtime) Card() Card { return r.card }

// Reload re-ingests persisted lines (see Journal.Reload).
func (r *Runtime) Reload(lines [][]byte) IngestReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.j.Reload(lines)
}

// Stop makes the runtime refuse link messages with not_active.
func (r *Runtime) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
}

// WithJournal runs fn on the journal under the runtime's lock. Tests and
// the benchmark use it to look inside.
func (r *Runtime) WithJournal(fn func(j *Journal)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn(r.j)
}

// Beat raises the own beat; call it once per heartbeat.
func (r *Runtime) Beat() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.j.BeatOwn()
}

// State folds every held event with this runtime's liveness.
func (r *Runtime) State() State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.j.Fold()
}

// Compact compacts the journal now (the supervisor does it on its own cadence).
func (r *Runtime) Compact(p CompactParams) CompactResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.j.Compact(p)
}

// Tick runs one heartbeat synchronously: beat, a round with every due
// target in turn, then Housekeep. The serve loop does the same with one
// goroutine per target.
func (r *Runtime) Tick(ctx context.Context) {
	r.Beat()
	for _, t := range r.DueTargets() {
		_ = r.SyncWith(ctx, t)
	}
	r.Housekeep()
}

// Housekeep drops links silent past the expiry and, once every
// compactEveryTicks calls, compacts with the configured retentions.
func (r *Runtime) Housekeep() {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.j.now()
	for tok, l := range r.inbound {
		if now-l.lastSeen > r.cfg.Expiry {
			delete(r.inbound, tok)
			delete(r.byRuntime, l.card.RuntimeKey())
		}
	}
	for _, d := range r.dials {
		if d.token != "" && now-d.lastOK > r.cfg.Expiry {
			d.token = ""
		}
	}
	if r.ticks%compactEveryTicks == compactEveryTicks-1 {
		r.j.Compact(CompactParams{Expiry: r.cfg.Expiry, Retention: r.cfg.Retention, Handovers: r.cfg.HandoverRetention})
	}
	r.ticks++
}

func (r *Runtime) dialFor(endpoint string) *dial {
	d := r.dials[endpoint]
	if d == nil {
		d = &dial{endpoint: endpoint}
		r.dials[endpoint] = d
	}
	return d
}

// AddSeed makes endpoint a dial target.
func (r *Runtime) AddSeed(endpoint string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dialFor(normalizeEndpoint(endpoint))
}

// DueTargets returns the dial targets due for a round now and marks them
// busy until their SyncWith returns: the caller must call SyncWith on each.
func (r *Runtime) DueTargets() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.j.now()
	var out []string
	for _, e := range slices.Sorted(maps.Keys(r.dials)) {
		d := r.dials[e]
		if !d.busy && now >= d.nextAt {
			d.busy = true
			out = append(out, e)
		}
	}
	return out
}

func (r *Runtime) randomHex(n int) string {
	b := make([]byte, n/2)
	if _, err := io.ReadFull(r.cfg.Rand, b); err != nil {
		panic(fmt.Sprintf("paros/mesh: random source failed: %v", err))
	}
	return hex.EncodeToString(b)
}

func (r *Runtime) noteRefusal(le *LinkError, direction string) {
	r.refusalCounts[le.Reason]++
	r.refusals = append(r.refusals, RefusalRecord{Reason: le.Reason, Detail: le.Detail, Direction: direction, atMono: r.j.now()})
	if len(r.refusals) > refusalsListedMax {
		r.refusals = slices.Delete(r.refusals, 0, len(r.refusals)-refusalsListedMax)
	}
}

// Status is what `paros mesh status` shows.
type Status struct {
	Node             NodeID                 `json:"node"`
	PK               string                 `json:"pk"`
	RuntimeKey       RuntimeKey             `json:"runtime"`
	Instance         string                 `json:"instance"`
	Stream           StreamID               `json:"stream"`
	Repo             string                 `json:"repo"`
	Name             string                 `json:"name,omitempty"`
	HeartbeatSeconds float64                `json:"heartbeat_seconds"`
	ExpirySeconds    float64                `json:"expiry_seconds"`
	Trust            TrustPolicy            `json:"trust"`
	Beat             uint64                 `json:"beat"`
	Streams          int                    `json:"streams"`
	LiveStreams      int                    `json:"live_streams"`
	Tombstones       int                    `json:"tombstones"`
	Events           int                    `json:"events"`
	Pending          int                    `json:"pending"`
	Links            int                    `json:"links"`
	Tallies          Tallies                `json:"tallies"`
	LinkRefusals     map[LinkRefusal]uint64 `json:"link_refusals"`
	RecentRefusals   []RefusalRecord        `json:"recent_refusals"`
	UntrustedSeen    []string               `json:"untrusted_keys_seen,omitempty"`
	Digest           string                 `json:"digest"`
	StoreError       string                 `json:"store_error,omitempty"`
}

// Status reports this runtime's counters.
func (r *Runtime) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := Status{
		Node: r.cfg.Key.Node, PK: r.cfg.Key.PK, RuntimeKey: r.RuntimeKey(), Instance: r.card.Instance,
		Stream: r.stream, Repo: r.cfg.Repo, Name: r.cfg.Name,
		HeartbeatSeconds: r.cfg.Heartbeat.Seconds(), ExpirySeconds: r.cfg.Expiry.Seconds(),
		Trust: r.cfg.Trust.Policy(), Beat: r.j.streams[r.stream].beat,
		Streams: len(r.j.streams), Tombstones: len(r.j.tombstones), Events: r.j.eventsHeld,
		Pending: r.j.pendingTotal, Tallies: r.j.Tallies(), LinkRefusals: maps.Clone(r.refusalCounts),
		UntrustedSeen: r.cfg.Trust.Observed(),
		Digest:        r.j.Fold().Digest,
	}
	st.RecentRefusals = slices.Clone(r.refusals)
	for i := range st.RecentRefusals {
		st.RecentRefusals[i].AgoMs = int64((r.j.now() - st.RecentRefusals[i].atMono) / time.Millisecond)
	}
	for s := range r.j.streams {
		if r.j.Liveness(s).Alive() {
			st.LiveStreams++
		}
	}
	for _, d := range r.dials {
		if d.token != "" {
			st.Links++
		}
	}
	st.Links += len(r.inbound)
	if err := r.j.StoreErr(); err != nil {
		st.StoreError = err.Error()
	}
	return st
}

// Link states, by the age of the last exchange.
const (
	LinkConnecting  = "connecting"
	LinkConnected   = "connected"
	LinkDegraded    = "degraded"
	LinkUnreachable = "unreachable"
	LinkExpired     = "expired"
)

// PeerView is one link as `paros mesh peers` shows it.
type PeerView struct {
	Direction string     `json:"direction"` // "dialed" or "accepted"
	Endpoint  string     `json:"endpoint,omitempty"`
	Runtime   RuntimeKey `json:"runtime,omitempty"`
	Stream    StreamID   `json:"stream,omitempty"`
	Name      string     `json:"name,omitempty"`
	State     string     `json:"state"`
	HeardAgoS *float64   `json:"heard_ago_seconds,omitempty"`
	Liveness  string     `json:"liveness,omitempty"`
	LastError string     `json:"last_error,omitempty"`
}

func (r *Runtime) linkState(ok bool, last time.Duration) string {
	if !ok {
		return LinkConnecting
	}
	age := r.j.now() - last
	switch {
	case age <= 2*r.cfg.Heartbeat+time.Second:
		return LinkConnected
	case age <= r.cfg.Expiry/2:
		return LinkDegraded
	case age <= r.cfg.Expiry:
		return LinkUnreachable
	}
	return LinkExpired
}

// Peers lists the dialed and accepted links.
func (r *Runtime) Peers() []PeerView {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.j.now()
	var out []PeerView
	for _, e := range slices.Sorted(maps.Keys(r.dials)) {
		d := r.dials[e]
		p := PeerView{Direction: "dialed", Endpoint: e, State: r.linkState(d.everOK, d.lastOK), LastError: d.lastErr}
		if d.card != nil {
			p.Runtime, p.Stream, p.Name = d.card.RuntimeKey(), d.card.Stream(), d.card.Name
			p.Liveness = r.j.Liveness(p.Stream).String()
		}
		if d.everOK {
			ago := (now - d.lastOK).Seconds()
			p.HeardAgoS = &ago
		}
		out = append(out, p)
	}
	for _, rk := range slices.Sorted(maps.Keys(r.byRuntime)) {
		l := r.inbound[r.byRuntime[rk]]
		ago := (now - l.lastSeen).Seconds()
		s := l.card.Stream()
		out = append(out, PeerView{Direction: "accepted", Runtime: rk, Stream: s, Name: l.card.Name,
			State: r.linkState(true, l.lastSeen), HeardAgoS: &ago, Liveness: r.j.Liveness(s).String()})
	}
	return out
}

// linkedCard returns the card of a linked peer runtime, if any.
func (r *Runtime) linkedCard(rk RuntimeKey) *Card {
	if tok, ok := r.byRuntime[rk]; ok {
		c := r.inbound[tok].card
		return &c
	}
	for _, d := range r.dials {
		if d.card != nil && d.token != "" && d.card.RuntimeKey() == rk {
			return d.card
		}
	}
	return nil
}
