package mesh

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Admission errors. Each is tested with errors.Is.
var (
	// ErrConflict: an exclusive claim meets a live exclusive claim of another
	// session. The error is a *ConflictError naming the holders.
	ErrConflict = errors.New("paros/mesh: claim conflict")
	// ErrNotOwn: the record is not on this runtime's current stream.
	ErrNotOwn = errors.New("paros/mesh: not this runtime's")
	// ErrNotFound: no such session, claim, handover, review or reviewer.
	ErrNotFound = errors.New("paros/mesh: not found")
	// ErrSelfAnswer: the session that asked for a review cannot answer it.
	ErrSelfAnswer = errors.New("paros/mesh: a session cannot answer its own review")
	// ErrFeatureUnsupported: the named reviewer's card does not carry reviews.
	ErrFeatureUnsupported = errors.New("paros/mesh: feature unsupported")
)

// ConflictError is a refused exclusive claim with the live exclusive claims
// it met, in key order.
type ConflictError struct {
	Conflicts []ClaimView
}

func (e *ConflictError) Error() string {
	var b strings.Builder
	b.WriteString("paros/mesh: claim conflicts with ")
	for i, c := range e.Conflicts {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (session %s, scope %s)", c.Key, c.Session, strings.Join(c.Scope, " "))
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrConflict) hold.
func (e *ConflictError) Unwrap() error { return ErrConflict }

// defaultClient names the client of a session opened implicitly.
const defaultClient = "paros"

// OpenSession writes session_opened; opening an open session again replaces
// its description.
func (r *Runtime) OpenSession(info SessionInfo) (SessionView, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if info.Client == "" {
		info.Client = defaultClient
	}
	if _, err := r.j.Append(Body{Kind: KindSessionOpened, Info: &info}); err != nil {
		return SessionView{}, err
	}
	return findSession(r.j.Fold(), RecordKey(r.stream, info.Session))
}

func findSession(st State, key string) (SessionView, error) {
	for _, s := range st.Sessions {
		if s.Key == key {
			return s, nil
		}
	}
	return SessionView{}, fmt.Errorf("%w: session %s", ErrNotFound, key)
}

// CloseSession writes session_closed for a session of this run; its claims end.
func (r *Runtime) CloseSession(session string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := findSession(r.j.Fold(), RecordKey(r.stream, session)); err != nil {
		return err
	}
	_, err := r.j.Append(Body{Kind: KindSessionClosed, Session: session})
	return err
}

// ClaimRequest asks for a claim on Scope for Session of this run.
type ClaimRequest struct {
	Session string    `json:"session"`
	Scope   []string  `json:"scope"`
	Mode    ClaimMode `json:"mode,omitempty"` // exclusive unless advisory
	Intent  string    `json:"intent,omitempty"`
	Issue   string    `json:"issue,omitempty"`
}

// Claim admits a claim. An exclusive claim meeting a live exclusive claim
// of another session is refused with a *ConflictError and nothing is
// written; advisory claims are never refused (their overlaps are reported).
// The session is opened first if it is not active. An exclusive claim lists
// in supersedes the expired exclusive claims of other sessions it meets, so
// that if their holder comes back they lose to this one.
func (r *Runtime) Claim(req ClaimRequest) (ClaimView, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if req.Mode == "" {
		req.Mode = ModeExclusive
	}
	probe := Body{Kind: KindClaimAcquired, Claim: "c-000000000000", Session: req.Session, Scope: req.Scope,
		Mode: req.Mode, Intent: req.Intent, Issue: req.Issue}
	if err := probe.Validate(); err != nil {
		return ClaimView{}, err
	}
	st := r.j.Fold()
	session := RecordKey(r.stream, req.Session)
	exclusive := req.Mode == ModeExclusive
	var conflicts []ClaimView
	var supersedes []string
	for _, c := range st.Claims {
		if !exclusive || !c.Exclusive() || c.Session == session || !scopesMeet(c.Scope, req.Scope) {
			continue
		}
		switch {
		case c.Live():
			conflicts = append(conflicts, c)
		case c.Status.State == ClaimExpired && len(supersedes) < supersedesMax:
			supersedes = append(supersedes, c.Key)
		}
	}
	if len(conflicts) > 0 {
		r.j.countRefusedClaim()
		return ClaimView{}, &ConflictError{Conflicts: conflicts}
	}
	if s, err := findSession(st, session); err != nil || s.State != SessionActive {
		info := SessionInfo{Session: req.Session, Client: defaultClient}
		if err == nil {
			info = s.Info
		}
		if _, err := r.j.Append(Body{Kind: KindSessionOpened, Info: &info}); err != nil {
			return ClaimView{}, err
		}
	}
	probe.Claim = "c-" + r.randomHex(12)
	probe.Supersedes = supersedes
	if _, err := r.j.Append(probe); err != nil {
		return ClaimView{}, err
	}
	key := RecordKey(r.stream, probe.Claim)
	for _, c := range r.j.Fold().Claims {
		if c.Key == key {
			return c, nil
		}
	}
	panic("paros/mesh: admitted claim missing from the fold")
}

// scopesMeet reports whether any path of a meets any path of b.
func scopesMeet(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if pathsMeet(x, y) {
				return true
			}
		}
	}
	return false
}

// Release writes claim_released for a claim of this run.
func (r *Runtime) Release(key string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	stream, local, err := splitRecordKey(key)
	if err != nil {
		return fmt.Errorf("%w: claim key %q", ErrNotFound, key)
	}
	if stream != r.stream {
		return fmt.Errorf("%w: claim %s", ErrNotOwn, key)
	}
	if !slices.ContainsFunc(r.j.Fold().Claims, func(c ClaimView) bool { return c.Key == key }) {
		return fmt.Errorf("%w: claim %s", ErrNotFound, key)
	}
	_, err = r.j.Append(Body{Kind: KindClaimReleased, Claim: local})
	return err
}

// PublishHandover writes handover_published; its id is the digest of the
// body, so publishing the same body again is the same handover.
func (r *Runtime) PublishHandover(info HandoverInfo) (HandoverView, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	info.ID = HandoverID(info.Body)
	if _, err := r.j.Append(Body{Kind: KindHandoverPublished, Handover: &info}); err != nil {
		return HandoverView{}, err
	}
	return findHandover(r.j.Fold(), info.ID)
}

func findHandover(st State, id string) (HandoverView, error) {
	for _, h := range st.Handovers {
		if h.ID == id {
			return h, nil
		}
	}
	return HandoverView{}, fmt.Errorf("%w: handover %s", ErrNotFound, id)
}

// ConsumeHandover writes handover_consumed for a handover the fold lists
// and returns its view. Taking a taken handover again is allowed.
func (r *Runtime) ConsumeHandover(id, session string) (HandoverView, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := findHandover(r.j.Fold(), id); err != nil {
		return HandoverView{}, err
	}
	if _, err := r.j.Append(Body{Kind: KindHandoverConsumed, HandoverID: id, Session: session}); err != nil {
		return HandoverView{}, err
	}
	return findHandover(r.j.Fold(), id)
}

// ReviewRequest asks for a review. Reviewer, if set, must be this runtime
// or a linked peer runtime whose card carries reviews.
type ReviewRequest struct {
	Session  string   `json:"session"`
	Subject  string   `json:"subject"`
	Scope    []string `json:"scope,omitempty"`
	Issue    string   `json:"issue,omitempty"`
	Reviewer string   `json:"reviewer,omitempty"`
}

// RequestReview writes review_requested and returns the review's view.
func (r *Runtime) RequestReview(req ReviewRequest) (ReviewView, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if req.Reviewer != "" {
		rk, err := ParseRuntimeKey(req.Reviewer)
		if err != nil {
			return ReviewView{}, err
		}
		if rk != r.RuntimeKey() {
			c := r.linkedCard(rk)
			if c == nil {
				return ReviewView{}, fmt.Errorf("%w: reviewer %s is not linked", ErrNotFound, rk)
			}
			if !c.HasFeature(FeatureReviews) {
				return ReviewView{}, fmt.Errorf("%w: reviewer %s does not take reviews", ErrFeatureUnsupported, rk)
			}
		}
	}
	id := "r-" + r.randomHex(12)
	if _, err := r.j.Append(Body{Kind: KindReviewRequested, Review: id, Session: req.Session, Subject: req.Subject,
		Scope: req.Scope, Issue: req.Issue, Reviewer: req.Reviewer}); err != nil {
		return ReviewView{}, err
	}
	return findReview(r.j.Fold(), RecordKey(r.stream, id))
}

func findReview(st State, key string) (ReviewView, error) {
	for _, rv := range st.Reviews {
		if rv.Key == key {
			return rv, nil
		}
	}
	return ReviewView{}, fmt.Errorf("%w: review %s", ErrNotFound, key)
}

// AnswerReview writes review_answered; the review must exist and the
// answering session must not be the one that asked.
func (r *Runtime) AnswerReview(key, session string, verdict Verdict, note string) (ReviewView, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rv, err := findReview(r.j.Fold(), key)
	if err != nil {
		return ReviewView{}, err
	}
	if RecordKey(r.stream, session) == rv.Session {
		return ReviewView{}, ErrSelfAnswer
	}
	if _, err := r.j.Append(Body{Kind: KindReviewAnswered, Request: key, Session: session, Verdict: verdict, Note: note}); err != nil {
		return ReviewView{}, err
	}
	return findReview(r.j.Fold(), key)
}
