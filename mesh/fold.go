package mesh

import (
	"cmp"
	"maps"
	"slices"
	"strings"
)

// State is the fold of a set of events: what every surface shows.
type State struct {
	Sessions     []SessionView  `json:"sessions"`
	Claims       []ClaimView    `json:"claims"`
	Handovers    []HandoverView `json:"handovers"`
	Reviews      []ReviewView   `json:"reviews"`
	Overlaps     []Overlap      `json:"overlaps"`
	OpaqueEvents uint64         `json:"opaque_events"`
	// Digest is SHA-256[:16] (hex) of the canonical JSON of the state with
	// Digest empty. Two runtimes holding the same events with the same
	// liveness print the same digest.
	Digest string `json:"digest"`
}

// Session states.
const (
	SessionActive  = "active"
	SessionClosed  = "closed"
	SessionExpired = "expired"
)

// SessionView is one session, keyed <stream>/<session>.
type SessionView struct {
	Key            string      `json:"key"`
	Stream         StreamID    `json:"stream"`
	Info           SessionInfo `json:"info"`
	State          string      `json:"state"`
	UpdatedLamport uint64      `json:"updated_lamport"`
}

// Claim states.
const (
	ClaimHeld       = "held"
	ClaimReleased   = "released"
	ClaimExpired    = "expired"
	ClaimConflicted = "conflicted"
)

// Reasons a held claim expires.
const (
	ExpiredRuntimeStopped = "its runtime stopped beating"
	ExpiredSessionClosed  = "its session closed"
)

// ClaimStatus is a claim's state; Detail names the winner of a conflicted
// claim and the reason of an expired one.
type ClaimStatus struct {
	State  string `json:"state"`
	Detail string `json:"detail,omitempty"`
}

// ClaimView is one claim, keyed <stream>/<claim>.
type ClaimView struct {
	Key             string      `json:"key"`
	Stream          StreamID    `json:"stream"`
	Session         string      `json:"session"` // session key
	Scope           []string    `json:"scope"`
	Mode            ClaimMode   `json:"mode"`
	Intent          string      `json:"intent,omitempty"`
	Issue           string      `json:"issue,omitempty"`
	Supersedes      []string    `json:"supersedes,omitempty"`
	AcquiredLamport uint64      `json:"acquired_lamport"`
	AcquiredSeq     uint64      `json:"acquired_seq"`
	Status          ClaimStatus `json:"status"`
}

// Live reports Held or Conflicted.
func (c *ClaimView) Live() bool {
	return c.Status.State == ClaimHeld || c.Status.State == ClaimConflicted
}

// Exclusive reports the claim's mode.
func (c *ClaimView) Exclusive() bool { return c.Mode != ModeAdvisory }

// HandoverView is one handover: the first publication in causal order and
// every session that took it.
type HandoverView struct {
	ID               string       `json:"id"`
	Stream           StreamID     `json:"stream"`
	PublishedLamport uint64       `json:"published_lamport"`
	Info             HandoverInfo `json:"info"`
	ConsumedBy       []string     `json:"consumed_by"`
}

// Review states.
const (
	ReviewOpen     = "open"
	ReviewAnswered = "answered"
)

// Answer is one answer to a review.
type Answer struct {
	Session string  `json:"session"`
	Verdict Verdict `json:"verdict"`
	Note    string  `json:"note,omitempty"`
}

// ReviewView is one review, keyed <stream>/<review>.
type ReviewView struct {
	Key              string   `json:"key"`
	Stream           StreamID `json:"stream"`
	Session          string   `json:"session"`
	Subject          string   `json:"subject"`
	Scope            []string `json:"scope,omitempty"`
	Issue            string   `json:"issue,omitempty"`
	Reviewer         string   `json:"reviewer,omitempty"`
	RequestedLamport uint64   `json:"requested_lamport"`
	State            string   `json:"state"`
	Answers          []Answer `json:"answers"`
}

// Overlap is a pair of live claims of different sessions, not both
// exclusive, whose scopes meet. Overlaps are reported, never refused.
type Overlap struct {
	First  string      `json:"first"`
	Second string      `json:"second"`
	Paths  [][2]string `json:"paths"`
}

// Fold folds records into a State. It is pure and deterministic: the order
// of records and repeats among them do not matter. liveness says which
// streams are alive; compaction passes one that says none is.
func Fold(records []Record, liveness func(StreamID) Liveness) State {
	st := fold(records, liveness)
	st.Digest = digestOf(st)
	return st
}

// fold is Fold without the digest, for compaction, which needs none.
func fold(records []Record, liveness func(StreamID) Liveness) State {
	// Sort by the causal key with each stream replaced by its rank among
	// the streams, which orders alike and compares as an integer.
	rank := map[StreamID]int{}
	for i := range records {
		rank[records[i].Stream] = 0
	}
	for i, s := range slices.Sorted(maps.Keys(rank)) {
		rank[s] = i
	}
	type keyed struct {
		lamport uint64
		stream  int
		seq     uint64
		r       *Record
	}
	keys := make([]keyed, len(records))
	for i := range records {
		r := &records[i]
		keys[i] = keyed{r.Lamport, rank[r.Stream], r.Seq, r}
	}
	keyCmp := func(a, b keyed) int {
		return cmp.Or(cmp.Compare(a.lamport, b.lamport), cmp.Compare(a.stream, b.stream), cmp.Compare(a.seq, b.seq))
	}
	slices.SortFunc(keys, keyCmp)
	keys = slices.CompactFunc(keys, func(a, b keyed) bool { return keyCmp(a, b) == 0 })

	f := folder{
		sessions:  map[string]*SessionView{},
		closedAt:  map[string]uint64{},
		claims:    map[string]*ClaimView{},
		handovers: map[string]*HandoverView{},
		reviews:   map[string]*ReviewView{},
	}
	for _, k := range keys {
		f.step(k.r)
	}

	alive := map[StreamID]bool{}
	isAlive := func(s StreamID) bool {
		a, ok := alive[s]
		if !ok {
			a = liveness(s).Alive()
			alive[s] = a
		}
		return a
	}
	for _, s := range f.sessions {
		if s.State == SessionActive && !isAlive(s.Stream) {
			s.State = SessionExpired
		}
	}
	for _, c := range f.claimOrder {
		if c.Status.State != ClaimHeld {
			continue
		}
		if !isAlive(c.Stream) {
			c.Status = ClaimStatus{State: ClaimExpired, Detail: ExpiredRuntimeStopped}
			continue
		}
		at, closed := f.closedAt[c.Session]
		sv := f.sessions[c.Session]
		if (closed && c.AcquiredLamport < at) || (sv != nil && sv.State != SessionActive) {
			c.Status = ClaimStatus{State: ClaimExpired, Detail: ExpiredSessionClosed}
		}
	}
	resolveExclusive(f.claimOrder)
	overlaps := findOverlaps(f.claimOrder)

	return State{
		Sessions:     derefSorted(f.sessions),
		Claims:       derefSorted(f.claims),
		Handovers:    derefSorted(f.handovers),
		Reviews:      derefSorted(f.reviews),
		Overlaps:     overlaps,
		OpaqueEvents: f.opaque,
	}
}

func derefSorted[V any](m map[string]*V) []V {
	out := make([]V, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, *m[k])
	}
	return out
}

// folder is the walk's working state.
type folder struct {
	sessions   map[string]*SessionView
	closedAt   map[string]uint64
	claims     map[string]*ClaimView
	claimOrder []*ClaimView // in causal order of acquisition
	handovers  map[string]*HandoverView
	reviews    map[string]*ReviewView
	opaque     uint64
}

func (f *folder) step(r *Record) {
	b := r.Body
	switch b.Kind {
	case KindSessionOpened:
		key := RecordKey(r.Stream, b.Info.Session)
		f.sessions[key] = &SessionView{Key: key, Stream: r.Stream, Info: *b.Info, State: SessionActive, UpdatedLamport: r.Lamport}
	case KindSessionClosed:
		key := RecordKey(r.Stream, b.Session)
		f.closedAt[key] = max(f.closedAt[key], r.Lamport)
		if s := f.sessions[key]; s != nil {
			s.State = SessionClosed
			s.UpdatedLamport = r.Lamport
		}
	case KindClaimAcquired:
		key := RecordKey(r.Stream, b.Claim)
		mode := b.Mode
		if mode == "" {
			mode = ModeExclusive
		}
		c := &ClaimView{
			Key: key, Stream: r.Stream, Session: RecordKey(r.Stream, b.Session),
			Scope: b.Scope, Mode: mode, Intent: b.Intent, Issue: b.Issue, Supersedes: b.Supersedes,
			AcquiredLamport: r.Lamport, AcquiredSeq: r.Seq,
			Status: ClaimStatus{State: ClaimHeld},
		}
		if old := f.claims[key]; old != nil {
			f.claimOrder = slices.DeleteFunc(f.claimOrder, func(x *ClaimView) bool { return x == old })
		}
		f.claims[key] = c
		f.claimOrder = append(f.claimOrder, c)
	case KindClaimReleased:
		if c := f.claims[RecordKey(r.Stream, b.Claim)]; c != nil {
			c.Status = ClaimStatus{State: ClaimReleased}
		}
	case KindHandoverPublished:
		id := b.Handover.ID
		if f.handovers[id] == nil {
			f.handovers[id] = &HandoverView{ID: id, Stream: r.Stream, PublishedLamport: r.Lamport, Info: *b.Handover, ConsumedBy: []string{}}
		}
	case KindHandoverConsumed:
		if h := f.handovers[b.HandoverID]; h != nil {
			taker := RecordKey(r.Stream, b.Session)
			if !slices.Contains(h.ConsumedBy, taker) {
				h.ConsumedBy = append(h.ConsumedBy, taker)
			}
		}
	case KindReviewRequested:
		key := RecordKey(r.Stream, b.Review)
		if f.reviews[key] == nil {
			f.reviews[key] = &ReviewView{
				Key: key, Stream: r.Stream, Session: RecordKey(r.Stream, b.Session),
				Subject: b.Subject, Scope: b.Scope, Issue: b.Issue, Reviewer: b.Reviewer,
				RequestedLamport: r.Lamport, State: ReviewOpen, Answers: []Answer{},
			}
		}
	case KindReviewAnswered:
		rv := f.reviews[b.Request]
		answerer := RecordKey(r.Stream, b.Session)
		if rv != nil && answerer != rv.Session {
			rv.State = ReviewAnswered
			rv.Answers = append(rv.Answers, Answer{Session: answerer, Verdict: b.Verdict, Note: b.Note})
		}
	default:
		f.opaque++
	}
}

// exclusiveOrder returns the live exclusive claims in the order exclusivity
// walks them: causal order of acquisition, except that a claim listed in a
// live exclusive claim's supersedes comes right after that claim.
func exclusiveOrder(order []*ClaimView) []*ClaimView {
	var live []*ClaimView
	byKey := map[string]*ClaimView{}
	for _, c := range order {
		if c.Live() && c.Exclusive() {
			live = append(live, c)
			byKey[c.Key] = c
		}
	}
	supersededBy := map[string]*ClaimView{}
	for _, c := range live {
		for _, k := range c.Supersedes {
			if k != c.Key && byKey[k] != nil && supersededBy[k] == nil {
				supersededBy[k] = c
			}
		}
	}
	if len(supersededBy) == 0 {
		return live
	}
	out := make([]*ClaimView, 0, len(live))
	emitted := map[string]bool{}
	var emit func(c *ClaimView)
	emit = func(c *ClaimView) {
		if emitted[c.Key] {
			return
		}
		emitted[c.Key] = true
		out = append(out, c)
		for _, k := range c.Supersedes {
			if d := byKey[k]; d != nil && supersededBy[k] == c {
				emit(d)
			}
		}
	}
	for _, c := range live {
		// A claim waits for its superseder, unless a cycle of supersedes
		// leads back to it; then it goes at its own place.
		if sup := supersededBy[c.Key]; sup != nil && !supersedeCycle(c, supersededBy) {
			continue
		}
		emit(c)
	}
	return out
}

// supersedeCycle reports whether following superseders from c returns to c.
func supersedeCycle(c *ClaimView, supersededBy map[string]*ClaimView) bool {
	seen := map[string]bool{}
	for x := supersededBy[c.Key]; x != nil; x = supersededBy[x.Key] {
		if x == c {
			return true
		}
		if seen[x.Key] {
			return false
		}
		seen[x.Key] = true
	}
	return false
}

// resolveExclusive walks the live exclusive claims in order with a list of
// winners: a claim meeting a winner of another session becomes Conflicted
// naming the earliest such winner; otherwise it is Held and a winner.
func resolveExclusive(order []*ClaimView) {
	idx := newPathIndex()
	var winners []*ClaimView
	for _, c := range exclusiveOrder(order) {
		w := idx.firstMeeting(c.Scope, func(i int) bool { return winners[i].Session != c.Session })
		if w >= 0 {
			c.Status = ClaimStatus{State: ClaimConflicted, Detail: winners[w].Key}
			continue
		}
		c.Status = ClaimStatus{State: ClaimHeld}
		for _, p := range c.Scope {
			idx.add(p, len(winners))
		}
		winners = append(winners, c)
	}
}

// findOverlaps lists pairs of live claims of different sessions, not both
// exclusive, whose scopes meet, in the order they are found: by the later
// claim's acquisition, then the earlier one's.
func findOverlaps(order []*ClaimView) []Overlap {
	idx := newPathIndex()
	type entry struct {
		claim, path int
	}
	var entries []entry
	var live []*ClaimView
	out := []Overlap{}
	for _, c := range order {
		if !c.Live() {
			continue
		}
		i := len(live)
		pairs := map[int][][2]string{}
		for bi, b := range c.Scope {
			idx.eachMeeting(b, func(e int) {
				j := entries[e].claim
				o := live[j]
				if o.Session == c.Session || (o.Exclusive() && c.Exclusive()) {
					return
				}
				pairs[j] = append(pairs[j], [2]string{o.Scope[entries[e].path], c.Scope[bi]})
			})
		}
		for _, j := range slices.Sorted(maps.Keys(pairs)) {
			ps := pairs[j]
			slices.SortStableFunc(ps, func(x, y [2]string) int {
				return cmp.Or(strings.Compare(x[0], y[0]), strings.Compare(x[1], y[1]))
			})
			out = append(out, Overlap{First: live[j].Key, Second: c.Key, Paths: slices.Compact(ps)})
		}
		live = append(live, c)
		for pi, p := range c.Scope {
			idx.add(p, len(entries))
			entries = append(entries, entry{i, pi})
		}
	}
	return out
}

// normPath trims a scope path as claimsMeet compares it.
func normPath(p string) string {
	return strings.TrimRight(strings.TrimSpace(p), "/")
}

// pathsMeet reports whether two scope paths meet: both non-empty after
// trimming, and equal or one a '/'-descendant of the other. "apps" meets
// "apps/x"; "app" does not meet "apps".
func pathsMeet(a, b string) bool {
	a, b = normPath(a), normPath(b)
	if a == "" || b == "" {
		return false
	}
	return a == b || strings.HasPrefix(b, a+"/") || strings.HasPrefix(a, b+"/")
}

// pathIndex finds, among the paths added, those meeting a given path. It
// is a trie of '/'-segments: a path meets the entries on its way down
// (ancestors and itself) and every entry below it (descendants).
type pathIndex struct{ root *pathNode }

type pathNode struct {
	children map[string]*pathNode
	here     []int // ids added at exactly this path
	below    int   // ids added at this node or under it
}

func newPathIndex() *pathIndex { return &pathIndex{root: &pathNode{}} }

func (x *pathIndex) add(p string, id int) {
	p = normPath(p)
	if p == "" {
		return
	}
	n := x.root
	n.below++
	for seg := range strings.SplitSeq(p, "/") {
		c := n.children[seg]
		if c == nil {
			if n.children == nil {
				n.children = map[string]*pathNode{}
			}
			c = &pathNode{}
			n.children[seg] = c
		}
		c.below++
		n = c
	}
	n.here = append(n.here, id)
}

// eachMeeting calls fn for every id whose path meets p (an id added under
// several meeting paths is reported once per path), in no set order.
func (x *pathIndex) eachMeeting(p string, fn func(id int)) {
	p = normPath(p)
	if p == "" {
		return
	}
	segs := strings.Split(p, "/")
	n := x.root
	for i, seg := range segs {
		n = n.children[seg]
		if n == nil || n.below == 0 {
			return
		}
		if i < len(segs)-1 { // an entry here is an ancestor of p
			for _, id := range n.here {
				fn(id)
			}
		}
	}
	n.walk(fn) // p itself and its descendants
}

func (n *pathNode) walk(fn func(id int)) {
	if n.below == 0 {
		return
	}
	for _, id := range n.here {
		fn(id)
	}
	for _, c := range n.children {
		c.walk(fn)
	}
}

// firstMeeting returns the least id meeting any of paths for which ok
// holds, or -1.
func (x *pathIndex) firstMeeting(paths []string, ok func(id int) bool) int {
	best := -1
	for _, p := range paths {
		x.eachMeeting(p, func(id int) {
			if (best < 0 || id < best) && ok(id) {
				best = id
			}
		})
	}
	return best
}
