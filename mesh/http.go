package mesh

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// HTTP surface of a serving runtime.
//
//	POST /api/v1/mesh/link/hello    link protocol, from any address
//	POST /api/v1/mesh/link/sync     link protocol, from any address
//	GET  /api/v1/mesh/status        Status           (local API: loopback callers only)
//	GET  /api/v1/mesh/peers         []PeerView
//	GET  /api/v1/mesh/state         State
//	POST /api/v1/mesh/verify        VerifyReport
//	POST /api/v1/mesh/sessions      SessionInfo -> SessionView
//	POST /api/v1/mesh/sessions/close  {"session"}
//	POST /api/v1/mesh/claims        ClaimRequest -> ClaimView; 422 claim_conflict
//	POST /api/v1/mesh/claims/release  {"claim"}
//	POST /api/v1/mesh/handovers     HandoverInfo -> HandoverView
//	POST /api/v1/mesh/handovers/consume  {"id","session"} -> HandoverView
//	POST /api/v1/mesh/reviews       ReviewRequest -> ReviewView
//	POST /api/v1/mesh/reviews/answer  {"review","session","verdict","note"} -> ReviewView
//
// A link refusal is answered with status 403 (413 when oversized) and the
// JSON of a LinkError; a local API error with an APIError.
const (
	apiPrefix       = "/api/v1/mesh"
	linkTimeout     = 5 * time.Second
	apiBodyBytesMax = 64 << 10
)

// APIError is a local API failure as the server sends it.
type APIError struct {
	Status    int         `json:"-"`
	Code      string      `json:"error"`
	Detail    string      `json:"detail"`
	Conflicts []ClaimView `json:"conflicts,omitempty"`
}

func (e *APIError) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Detail) }

// API error codes.
const (
	CodeClaimConflict      = "claim_conflict"
	CodeNotOwn             = "not_own"
	CodeNotFound           = "not_found"
	CodeSelfAnswer         = "self_answer"
	CodeFeatureUnsupported = "feature_unsupported"
	CodeBadRequest         = "bad_request"
	CodeInternal           = "internal"
)

func apiErrorOf(err error) *APIError {
	var ce *ConflictError
	switch {
	case errors.As(err, &ce):
		return &APIError{Status: http.StatusUnprocessableEntity, Code: CodeClaimConflict, Detail: err.Error(), Conflicts: ce.Conflicts}
	case errors.Is(err, ErrNotOwn):
		return &APIError{Status: http.StatusForbidden, Code: CodeNotOwn, Detail: err.Error()}
	case errors.Is(err, ErrNotFound):
		return &APIError{Status: http.StatusNotFound, Code: CodeNotFound, Detail: err.Error()}
	case errors.Is(err, ErrSelfAnswer):
		return &APIError{Status: http.StatusConflict, Code: CodeSelfAnswer, Detail: err.Error()}
	case errors.Is(err, ErrFeatureUnsupported):
		return &APIError{Status: http.StatusConflict, Code: CodeFeatureUnsupported, Detail: err.Error()}
	case errors.Is(err, ErrBounds), errors.Is(err, ErrIdentity), errors.Is(err, ErrEventTooLarge):
		return &APIError{Status: http.StatusBadRequest, Code: CodeBadRequest, Detail: err.Error()}
	}
	return &APIError{Status: http.StatusInternalServerError, Code: CodeInternal, Detail: err.Error()}
}

// Handler returns the HTTP handler of a runtime.
func Handler(r *Runtime) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+HelloPath, func(w http.ResponseWriter, req *http.Request) { serveLink(w, req, r.AcceptHello) })
	mux.HandleFunc("POST "+SyncPath, func(w http.ResponseWriter, req *http.Request) { serveLink(w, req, r.AcceptSync) })
	local := func(pattern string, fn func(body []byte) (any, error)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, req *http.Request) {
			if !fromLoopback(req) {
				writeJSON(w, http.StatusForbidden, &APIError{Code: CodeNotOwn, Detail: "the local API answers loopback callers only"})
				return
			}
			body, err := io.ReadAll(io.LimitReader(req.Body, apiBodyBytesMax+1))
			if err != nil || len(body) > apiBodyBytesMax {
				writeJSON(w, http.StatusRequestEntityTooLarge, &APIError{Code: CodeBadRequest, Detail: "request too large"})
				return
			}
			out, err := fn(body)
			if err != nil {
				ae := apiErrorOf(err)
				writeJSON(w, ae.Status, ae)
				return
			}
			writeJSON(w, http.StatusOK, out)
		})
	}
	decode := func(body []byte, v any) error {
		if err := strictDecode(body, v); err != nil {
			return fmt.Errorf("%w: %v", ErrBounds, err)
		}
		return nil
	}
	local("GET "+apiPrefix+"/status", func([]byte) (any, error) { return r.Status(), nil })
	local("GET "+apiPrefix+"/peers", func([]byte) (any, error) { return r.Peers(), nil })
	local("GET "+apiPrefix+"/state", func([]byte) (any, error) { return r.State(), nil })
	local("POST "+apiPrefix+"/verify", func([]byte) (any, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*linkTimeout)
		defer cancel()
		return r.Verify(ctx), nil
	})
	local("POST "+apiPrefix+"/sessions", func(b []byte) (any, error) {
		var info SessionInfo
		if err := decode(b, &info); err != nil {
			return nil, err
		}
		return r.OpenSession(info)
	})
	local("POST "+apiPrefix+"/sessions/close", func(b []byte) (any, error) {
		var q struct {
			Session string `json:"session"`
		}
		if err := decode(b, &q); err != nil {
			return nil, err
		}
		return struct{}{}, r.CloseSession(q.Session)
	})
	local("POST "+apiPrefix+"/claims", func(b []byte) (any, error) {
		var q ClaimRequest
		if err := decode(b, &q); err != nil {
			return nil, err
		}
		return r.Claim(q)
	})
	local("POST "+apiPrefix+"/claims/release", func(b []byte) (any, error) {
		var q struct {
			Claim string `json:"claim"`
		}
		if err := decode(b, &q); err != nil {
			return nil, err
		}
		return struct{}{}, r.Release(q.Claim)
	})
	local("POST "+apiPrefix+"/handovers", func(b []byte) (any, error) {
		var q HandoverInfo
		if err := decode(b, &q); err != nil {
			return nil, err
		}
		return r.PublishHandover(q)
	})
	local("POST "+apiPrefix+"/handovers/consume", func(b []byte) (any, error) {
		var q struct {
			ID      string `json:"id"`
			Session string `json:"session"`
		}
		if err := decode(b, &q); err != nil {
			return nil, err
		}
		return r.ConsumeHandover(q.ID, q.Session)
	})
	local("POST "+apiPrefix+"/reviews", func(b []byte) (any, error) {
		var q ReviewRequest
		if err := decode(b, &q); err != nil {
			return nil, err
		}
		return r.RequestReview(q)
	})
	local("POST "+apiPrefix+"/reviews/answer", func(b []byte) (any, error) {
		var q AnswerRequest
		if err := decode(b, &q); err != nil {
			return nil, err
		}
		return r.AnswerReview(q.Review, q.Session, q.Verdict, q.Note)
	})
	return mux
}

// AnswerRequest is the body of POST /reviews/answer.
type AnswerRequest struct {
	Review  string  `json:"review"`
	Session string  `json:"session"`
	Verdict Verdict `json:"verdict"`
	Note    string  `json:"note,omitempty"`
}

func fromLoopback(req *http.Request) bool {
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func serveLink(w http.ResponseWriter, req *http.Request, accept func([]byte) ([]byte, error)) {
	msg, err := io.ReadAll(io.LimitReader(req.Body, linkMessageBytesMax+1))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, refuse(LinkMalformed, "read: %v", err))
		return
	}
	out, err := accept(msg)
	if err != nil {
		le, ok := err.(*LinkError)
		if !ok {
			le = refuse(LinkMalformed, "%v", err)
		}
		status := http.StatusForbidden
		if le.Reason == LinkOversized {
			status = http.StatusRequestEntityTooLarge
		}
		writeJSON(w, status, le)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(marshalWire(v), '\n'))
}

// HTTPTransport is the Transport of a serving runtime: one POST per link
// message, answered within linkTimeout.
type HTTPTransport struct {
	Client *http.Client
}

// NewHTTPTransport returns a transport with the link timeout.
func NewHTTPTransport() *HTTPTransport {
	return &HTTPTransport{Client: &http.Client{Timeout: linkTimeout}}
}

// CloseIdleConnections closes the pooled connections no round is using.
func (t *HTTPTransport) CloseIdleConnections() { t.Client.CloseIdleConnections() }

// Hello posts a hello to endpoint.
func (t *HTTPTransport) Hello(ctx context.Context, endpoint string, msg []byte) ([]byte, error) {
	return t.post(ctx, endpoint+HelloPath, msg)
}

// Sync posts a sync request to endpoint.
func (t *HTTPTransport) Sync(ctx context.Context, endpoint string, msg []byte) ([]byte, error) {
	return t.post(ctx, endpoint+SyncPath, msg)
}

func (t *HTTPTransport) post(ctx context.Context, url string, msg []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(msg))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := t.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, linkMessageBytesMax+1))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusOK {
		return body, nil
	}
	var le LinkError
	if json.Unmarshal(body, &le) == nil && le.Reason != "" {
		return nil, &le
	}
	return nil, fmt.Errorf("paros/mesh: %s: HTTP %d", url, resp.StatusCode)
}

// APIClient calls a serving runtime's local API.
type APIClient struct {
	Endpoint string // http://host:port
	Client   *http.Client
}

// NewAPIClient returns a client of the runtime serving at endpoint.
func NewAPIClient(endpoint string) *APIClient {
	return &APIClient{Endpoint: normalizeEndpoint(endpoint), Client: &http.Client{Timeout: 30 * time.Second}}
}

// Do calls method path with body in (nil for none) and decodes the answer
// into out. A server-side failure is an *APIError; a refused claim is a
// *ConflictError.
func (c *APIClient) Do(ctx context.Context, method, path string, in, out any) error {
	var rd io.Reader
	if in != nil {
		rd = bytes.NewReader(marshalWire(in))
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Endpoint+apiPrefix+path, rd)
	if err != nil {
		return err
	}
	resp, err := c.Client.Do(req)
	if err != nil {
		return fmt.Errorf("paros/mesh: no runtime serving at %s (is `paros mesh serve` running?): %w", c.Endpoint, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		ae := &APIError{Status: resp.StatusCode}
		if json.Unmarshal(body, ae) != nil || ae.Code == "" {
			return fmt.Errorf("paros/mesh: %s %s: HTTP %d", method, path, resp.StatusCode)
		}
		if ae.Code == CodeClaimConflict {
			return &ConflictError{Conflicts: ae.Conflicts}
		}
		return ae
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(body, out)
}
