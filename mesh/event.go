package mesh

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Event is one signed record of a stream. On the wire and in the JSONL file
// it is one JSON object:
//
//	field    type    meaning
//	v        int     eventVersion (1)
//	stream   string  the writer's stream id
//	seq      uint64  dense per stream, from 1
//	lamport  uint64  the writer's max seen + 1
//	at       int64   writer wall clock, Unix seconds; informational, nothing decides on it
//	repo     string  repository id
//	pk       string  writer public key, hex
//	body     object  tagged by "kind"; kept raw, so unknown kinds relay byte for byte
//	sig      string  Ed25519 over domainEvent + canonical JSON of the other eight fields
//
// The identity of an event is (stream, seq); the causal key (lamport, stream,
// seq) is the one total order the fold uses.
type Event struct {
	V       int             `json:"v"`
	Stream  StreamID        `json:"stream"`
	Seq     uint64          `json:"seq"`
	Lamport uint64          `json:"lamport"`
	At      int64           `json:"at"`
	Repo    string          `json:"repo"`
	PK      string          `json:"pk"`
	Body    json.RawMessage `json:"body"`
	Sig     string          `json:"sig"`
}

const (
	// eventVersion is the only event version this code writes and reads.
	eventVersion = 1
	// eventBytesMax bounds one serialized event.
	eventBytesMax = 48 << 10
)

// signedBytes returns the canonical JSON of the event without its signature.
func (e *Event) signedBytes() ([]byte, error) {
	unsigned := *e
	unsigned.Sig = ""
	raw, err := json.Marshal(struct {
		V       int             `json:"v"`
		Stream  StreamID        `json:"stream"`
		Seq     uint64          `json:"seq"`
		Lamport uint64          `json:"lamport"`
		At      int64           `json:"at"`
		Repo    string          `json:"repo"`
		PK      string          `json:"pk"`
		Body    json.RawMessage `json:"body"`
	}{e.V, e.Stream, e.Seq, e.Lamport, e.At, e.Repo, e.PK, e.Body})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotCanonicalizable, err)
	}
	return Canonical(raw)
}

// Kind is the wire word of an event body.
type Kind string

// The eight kinds this code understands. Any other non-empty kind is kept,
// counted as opaque by the fold and relayed unchanged.
const (
	KindSessionOpened     Kind = "session_opened"
	KindSessionClosed     Kind = "session_closed"
	KindClaimAcquired     Kind = "claim_acquired"
	KindClaimReleased     Kind = "claim_released"
	KindHandoverPublished Kind = "handover_published"
	KindHandoverConsumed  Kind = "handover_consumed"
	KindReviewRequested   Kind = "review_requested"
	KindReviewAnswered    Kind = "review_answered"
)

// Body bounds, so one event holds a bounded amount of a runtime's memory.
const (
	identBytesMax        = 64
	pathsMax             = 64
	pathBytesMax         = 256
	handoverBodyBytesMax = 32 << 10
	supersedesMax        = 64
)

// ClaimMode says whether a claim excludes others.
type ClaimMode string

// Claim modes. An empty mode on the wire means exclusive.
const (
	ModeExclusive ClaimMode = "exclusive"
	ModeAdvisory  ClaimMode = "advisory"
)

// Verdict is a review answer.
type Verdict string

// The three verdicts.
const (
	VerdictApproved         Verdict = "approved"
	VerdictChangesRequested Verdict = "changes_requested"
	VerdictCommented        Verdict = "commented"
)

// SessionInfo describes a session. Session and Client are required.
type SessionInfo struct {
	Session   string `json:"session"`
	Client    string `json:"client"`
	Worker    string `json:"worker,omitempty"`
	Intent    string `json:"intent,omitempty"`
	Task      string `json:"task,omitempty"`
	Issue     string `json:"issue,omitempty"`
	Milestone string `json:"milestone,omitempty"`
	Checkout  string `json:"checkout,omitempty"`
	Branch    string `json:"branch,omitempty"`
	Head      string `json:"head,omitempty"`
	Context   string `json:"context,omitempty"`
	Dirty     *bool  `json:"dirty,omitempty"`
}

// HandoverInfo is a published handover: its id is the digest of its body.
type HandoverInfo struct {
	ID        string `json:"id"`
	Body      string `json:"body"`
	Task      string `json:"task,omitempty"`
	Issue     string `json:"issue,omitempty"`
	Milestone string `json:"milestone,omitempty"`
	Branch    string `json:"branch,omitempty"`
	Head      string `json:"head,omitempty"`
	CreatedAt string `json:"created_at,omitempty"`
	Name      string `json:"name,omitempty"`
}

// Body is the decoded body of a known kind; exactly the fields of its kind
// are meaningful. Fields unknown to this code are ignored (and still signed
// and relayed, because the raw body is kept).
type Body struct {
	Kind Kind `json:"kind"`

	// session_opened
	Info *SessionInfo `json:"info,omitempty"`
	// session_closed, claim_acquired, handover_consumed, review_requested, review_answered
	Session string `json:"session,omitempty"`
	// claim_acquired, claim_released
	Claim      string    `json:"claim,omitempty"`
	Scope      []string  `json:"scope,omitempty"`
	Intent     string    `json:"intent,omitempty"`
	Mode       ClaimMode `json:"mode,omitempty"`
	Issue      string    `json:"issue,omitempty"`
	Supersedes []string  `json:"supersedes,omitempty"`
	// handover_published
	Handover *HandoverInfo `json:"-"`
	// handover_consumed: the id; handover_published: the object (see UnmarshalJSON)
	HandoverID string `json:"-"`
	// review_requested
	Review   string `json:"review,omitempty"`
	Subject  string `json:"subject,omitempty"`
	Reviewer string `json:"reviewer,omitempty"`
	// review_answered
	Request string  `json:"request,omitempty"`
	Verdict Verdict `json:"verdict,omitempty"`
	Note    string  `json:"note,omitempty"`
}

// MarshalJSON writes the body with "handover" as an object for a publication
// and as a string for a taking.
func (b Body) MarshalJSON() ([]byte, error) {
	type plain Body
	var handover any
	switch b.Kind {
	case KindHandoverPublished:
		handover = b.Handover
	case KindHandoverConsumed:
		handover = b.HandoverID
	}
	return json.Marshal(struct {
		plain
		Handover any `json:"handover,omitempty"`
	}{plain(b), handover})
}

// UnmarshalJSON reads "handover" by kind.
func (b *Body) UnmarshalJSON(data []byte) error {
	type plain Body
	var aux struct {
		plain
		Handover json.RawMessage `json:"handover"`
	}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	*b = Body(aux.plain)
	if len(aux.Handover) == 0 {
		return nil
	}
	switch b.Kind {
	case KindHandoverPublished:
		b.Handover = new(HandoverInfo)
		return json.Unmarshal(aux.Handover, b.Handover)
	case KindHandoverConsumed:
		return json.Unmarshal(aux.Handover, &b.HandoverID)
	}
	return nil
}

// Known reports whether this code understands the kind.
func (k Kind) Known() bool {
	switch k {
	case KindSessionOpened, KindSessionClosed, KindClaimAcquired, KindClaimReleased,
		KindHandoverPublished, KindHandoverConsumed, KindReviewRequested, KindReviewAnswered:
		return true
	}
	return false
}

// ErrBounds marks a body that breaks the bounds of its kind.
var ErrBounds = errors.New("paros/mesh: out of bounds")

func boundsErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBounds}, args...)...)
}

// checkIdent: 1..64 chars of [A-Za-z0-9._:#-].
func checkIdent(field, s string) error {
	if len(s) == 0 || len(s) > identBytesMax {
		return boundsErr("%s must be 1..%d chars", field, identBytesMax)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._:#-", c) >= 0) {
			return boundsErr("%s has a character outside [A-Za-z0-9._:#-]", field)
		}
	}
	return nil
}

// checkText: at most n bytes of valid UTF-8, no control characters but '\n'.
func checkText(field, s string, n int) error {
	return checkChars(field, s, n, true)
}

// checkLine: at most n bytes of valid UTF-8, no control characters.
func checkLine(field, s string, n int) error {
	return checkChars(field, s, n, false)
}

func checkChars(field, s string, n int, newlines bool) error {
	if len(s) > n {
		return boundsErr("%s longer than %d bytes", field, n)
	}
	if !utf8.ValidString(s) {
		return boundsErr("%s is not UTF-8", field)
	}
	for _, r := range s {
		if r == '\n' && newlines {
			continue
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return boundsErr("%s has a control character", field)
		}
	}
	return nil
}

// checkPaths: at most 64 repository-relative paths, each 1..256 bytes, no
// leading '/', no ".." segment, no control characters. min is the least count.
func checkPaths(field string, paths []string, min int) error {
	if len(paths) < min || len(paths) > pathsMax {
		return boundsErr("%s must hold %d..%d paths", field, min, pathsMax)
	}
	for _, p := range paths {
		if p == "" {
			return boundsErr("%s has an empty path", field)
		}
		if err := checkLine(field, p, pathBytesMax); err != nil {
			return err
		}
		if strings.HasPrefix(p, "/") {
			return boundsErr("%s path %q is absolute", field, p)
		}
		for seg := range strings.SplitSeq(p, "/") {
			if seg == ".." {
				return boundsErr("%s path %q has a .. segment", field, p)
			}
		}
	}
	return nil
}

// Validate checks a known kind's fields against its bounds. It is called
// before signing and again at ingest.
func (b *Body) Validate() error {
	switch b.Kind {
	case KindSessionOpened:
		return b.Info.validate()
	case KindSessionClosed:
		return checkIdent("session", b.Session)
	case KindClaimAcquired:
		if err := checkIdent("claim", b.Claim); err != nil {
			return err
		}
		if err := checkIdent("session", b.Session); err != nil {
			return err
		}
		if err := checkPaths("scope", b.Scope, 1); err != nil {
			return err
		}
		if err := checkText("intent", b.Intent, 512); err != nil {
			return err
		}
		if b.Mode != "" && b.Mode != ModeExclusive && b.Mode != ModeAdvisory {
			return boundsErr("mode %q", b.Mode)
		}
		if err := checkText("issue", b.Issue, 64); err != nil {
			return err
		}
		if len(b.Supersedes) > supersedesMax {
			return boundsErr("supersedes holds more than %d keys", supersedesMax)
		}
		for _, k := range b.Supersedes {
			if _, _, err := splitRecordKey(k); err != nil {
				return boundsErr("supersedes key %.80q", k)
			}
		}
		return nil
	case KindClaimReleased:
		return checkIdent("claim", b.Claim)
	case KindHandoverPublished:
		return b.Handover.validate()
	case KindHandoverConsumed:
		if !isLowerHex(b.HandoverID, handoverHexLen) {
			return boundsErr("handover id")
		}
		return checkIdent("session", b.Session)
	case KindReviewRequested:
		if err := checkIdent("review", b.Review); err != nil {
			return err
		}
		if err := checkIdent("session", b.Session); err != nil {
			return err
		}
		if err := checkText("subject", b.Subject, 256); err != nil {
			return err
		}
		if len(b.Scope) > 0 {
			if err := checkPaths("scope", b.Scope, 0); err != nil {
				return err
			}
		}
		if err := checkText("issue", b.Issue, 64); err != nil {
			return err
		}
		if b.Reviewer != "" {
			if _, err := ParseRuntimeKey(b.Reviewer); err != nil {
				return boundsErr("reviewer is not a runtime key")
			}
		}
		return nil
	case KindReviewAnswered:
		if err := checkText("request", b.Request, 128); err != nil {
			return err
		}
		if _, _, err := splitRecordKey(b.Request); err != nil {
			return boundsErr("request is not <stream>/<review>")
		}
		if err := checkIdent("session", b.Session); err != nil {
			return err
		}
		switch b.Verdict {
		case VerdictApproved, VerdictChangesRequested, VerdictCommented:
		default:
			return boundsErr("verdict %q", b.Verdict)
		}
		return checkText("note", b.Note, 2048)
	case "":
		return boundsErr("empty kind")
	}
	return nil // an unknown kind is opaque
}

func (s *SessionInfo) validate() error {
	if s == nil {
		return boundsErr("session_opened without info")
	}
	if err := checkIdent("session", s.Session); err != nil {
		return err
	}
	if s.Client == "" {
		return boundsErr("client is required")
	}
	checks := []struct {
		field string
		v     string
		n     int
		text  bool
	}{
		{"client", s.Client, 64, true},
		{"worker", s.Worker, 128, false},
		{"intent", s.Intent, 512, false},
		{"task", s.Task, 64, false},
		{"issue", s.Issue, 64, false},
		{"milestone", s.Milestone, 64, false},
		{"checkout", s.Checkout, 64, false},
		{"branch", s.Branch, 256, false},
		{"head", s.Head, 64, false},
		{"context", s.Context, 128, false},
	}
	for _, c := range checks {
		if err := checkChars(c.field, c.v, c.n, c.text); err != nil {
			return err
		}
	}
	return nil
}

func (h *HandoverInfo) validate() error {
	if h == nil {
		return boundsErr("handover_published without handover")
	}
	if len(h.Body) > handoverBodyBytesMax {
		return boundsErr("handover body longer than %d bytes", handoverBodyBytesMax)
	}
	if !utf8.ValidString(h.Body) {
		return boundsErr("handover body is not UTF-8")
	}
	if h.ID != HandoverID(h.Body) {
		return boundsErr("handover id is not the digest of its body")
	}
	checks := []struct {
		field string
		v     string
		n     int
	}{
		{"task", h.Task, 64}, {"issue", h.Issue, 64}, {"milestone", h.Milestone, 64},
		{"branch", h.Branch, 256}, {"head", h.Head, 64}, {"created_at", h.CreatedAt, 64}, {"name", h.Name, 256},
	}
	for _, c := range checks {
		if err := checkLine(c.field, c.v, c.n); err != nil {
			return err
		}
	}
	return nil
}

// parseBody decodes a raw body. A known kind that does not decode or
// validate is ErrBounds; an unknown kind decodes to a Body with only Kind.
func parseBody(raw []byte) (Body, error) {
	var head struct {
		Kind *string `json:"kind"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return Body{}, boundsErr("body is not an object: %v", err)
	}
	if head.Kind == nil || *head.Kind == "" {
		return Body{}, boundsErr("empty kind")
	}
	kind := Kind(*head.Kind)
	if !kind.Known() {
		if err := checkLine("kind", string(kind), identBytesMax); err != nil {
			return Body{}, err
		}
		return Body{Kind: kind}, nil
	}
	var b Body
	if err := json.Unmarshal(raw, &b); err != nil {
		return Body{}, boundsErr("%s: %v", kind, err)
	}
	if err := b.Validate(); err != nil {
		return Body{}, err
	}
	return b, nil
}

// RecordKey names a session, claim or review: <stream>/<local id>.
func RecordKey(stream StreamID, local string) string { return string(stream) + "/" + local }

// splitRecordKey parses <stream>/<ident>.
func splitRecordKey(key string) (StreamID, string, error) {
	s, local, ok := strings.Cut(key, "/")
	if !ok {
		return "", "", fmt.Errorf("%w: record key %.80q", ErrIdentity, key)
	}
	stream, err := ParseStreamID(s)
	if err != nil {
		return "", "", err
	}
	if checkIdent("key", local) != nil {
		return "", "", fmt.Errorf("%w: record key %.80q", ErrIdentity, key)
	}
	return stream, local, nil
}
