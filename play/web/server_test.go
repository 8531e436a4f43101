package web

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/parosdb/paros/play"
)

// do sends one request to a fresh handler and returns the recorded answer.
func do(t *testing.T, method, target string, body []byte) *httptest.ResponseRecorder {
	t.Helper()
	var r *http.Request
	if body == nil {
		r = httptest.NewRequest(method, target, nil)
	} else {
		r = httptest.NewRequest(method, target, bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	Handler().ServeHTTP(w, r)
	return w
}

// postPlay POSTs a play request and decodes a 200 answer into a View.
func postPlay(t *testing.T, req PlayRequest, want int) (play.View, *httptest.ResponseRecorder) {
	t.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	w := do(t, http.MethodPost, "/api/play", body)
	if w.Code != want {
		t.Fatalf("POST /api/play %+v: status %d, want %d; body %s", req, w.Code, want, w.Body)
	}
	var v play.View
	if want == http.StatusOK {
		if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
			t.Fatalf("decode view: %v", err)
		}
	}
	return v, w
}

// wantError checks an error answer's status and JSON shape.
func wantError(t *testing.T, w *httptest.ResponseRecorder, status int) {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status %d, want %d; body %s", w.Code, status, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var e struct{ Error string }
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error == "" {
		t.Errorf("body %s: want {\"error\": ...} (%v)", w.Body, err)
	}
}

func firstLevel(t *testing.T) string {
	t.Helper()
	ls := play.Levels()
	if len(ls) == 0 {
		t.Fatal("no levels")
	}
	return ls[0].ID
}

func TestPageAndAssets(t *testing.T) {
	for _, tc := range []struct {
		path, ctype, contains string
	}{
		{"/", "text/html", `id="world"`},
		{"/static/app.js", "javascript", "/api/play"},
		{"/static/style.css", "text/css", "@media"},
	} {
		w := do(t, http.MethodGet, tc.path, nil)
		if w.Code != http.StatusOK {
			t.Errorf("GET %s: status %d", tc.path, w.Code)
			continue
		}
		if ct := w.Header().Get("Content-Type"); !strings.Contains(ct, tc.ctype) {
			t.Errorf("GET %s: Content-Type %q, want %s", tc.path, ct, tc.ctype)
		}
		if !strings.Contains(w.Body.String(), tc.contains) {
			t.Errorf("GET %s: body lacks %q", tc.path, tc.contains)
		}
		if got := w.Header().Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s: X-Content-Type-Options %q", tc.path, got)
		}
		if got := w.Header().Get("Content-Security-Policy"); !strings.Contains(got, "default-src 'self'") ||
			strings.Contains(got, "unsafe-inline") {
			t.Errorf("GET %s: Content-Security-Policy %q", tc.path, got)
		}
	}
	for _, path := range []string{"/static/nope.js", "/static/", "/nope", "/api/nope"} {
		if w := do(t, http.MethodGet, path, nil); w.Code != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", path, w.Code)
		}
	}
}

// TestPageContract checks the page keeps to what the CSP allows (no inline
// script or style) and carries the element ids the browser test relies on.
func TestPageContract(t *testing.T) {
	page := do(t, http.MethodGet, "/", nil).Body.String()
	for _, id := range []string{"world", "moves", "timeline", "prompt", "rejected", "levels", "status"} {
		if !strings.Contains(page, `id="`+id+`"`) {
			t.Errorf("index.html lacks id=%q", id)
		}
	}
	if !strings.Contains(page, `data-status="open"`) {
		t.Error(`index.html: #status lacks data-status`)
	}
	for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(page, -1) {
		if !strings.Contains(tag, "src=") {
			t.Errorf("inline script %s: the CSP forbids it", tag)
		}
	}
	if regexp.MustCompile(`(?i)<style|\sstyle=|\son[a-z]+=`).MatchString(page) {
		t.Error("index.html has inline style or an inline event handler: the CSP forbids them")
	}
	for _, ref := range regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllStringSubmatch(page, -1) {
		if u := ref[1]; strings.HasPrefix(u, "http:") || strings.HasPrefix(u, "https:") || strings.HasPrefix(u, "//") {
			t.Errorf("index.html loads %s from another origin", u)
		}
	}
}

func TestLevels(t *testing.T) {
	w := do(t, http.MethodGet, "/api/levels", nil)
	if w.Code != http.StatusOK {
		t.Fatalf("status %d", w.Code)
	}
	var got []play.LevelSummary
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if want := play.Levels(); !slices.Equal(got, want) {
		t.Fatalf("levels %+v, want %+v", got, want)
	}
}

func TestPlay(t *testing.T) {
	level := firstLevel(t)
	ref, err := play.Reference(level)
	if err != nil || len(ref) == 0 {
		t.Fatalf("Reference(%s): %v, %d moves", level, err, len(ref))
	}

	v, _ := postPlay(t, PlayRequest{Level: level}, http.StatusOK)
	if v.Level.ID != level || len(v.Log) != 0 || v.Status != play.Open || len(v.Machines) == 0 || len(v.Moves) == 0 {
		t.Fatalf("fresh level: %+v", v)
	}

	// An accepted try joins the log.
	v, _ = postPlay(t, PlayRequest{Level: level, Log: []string{}, Try: ref[0]}, http.StatusOK)
	if !slices.Equal(v.Log, ref[:1]) || v.Rejected != "" {
		t.Fatalf("try %q: log %q, rejected %q", ref[0], v.Log, v.Rejected)
	}

	// A rejected try is an answer, not an error: the log stays.
	v, _ = postPlay(t, PlayRequest{Level: level, Log: ref[:1], Try: "no such move"}, http.StatusOK)
	if v.Rejected == "" || !slices.Equal(v.Log, ref[:1]) {
		t.Fatalf("bad try: rejected %q, log %q", v.Rejected, v.Log)
	}

	// The reference wins.
	v, _ = postPlay(t, PlayRequest{Level: level, Log: ref}, http.StatusOK)
	if v.Status != play.Reached {
		t.Fatalf("reference of %s: status %s (%s)", level, v.Status, v.Verdict)
	}
}

func TestPlayErrors(t *testing.T) {
	level := firstLevel(t)
	_, w := postPlay(t, PlayRequest{Level: "no/such-level"}, http.StatusNotFound)
	wantError(t, w, http.StatusNotFound)
	_, w = postPlay(t, PlayRequest{Level: level, Log: []string{"no such move"}}, http.StatusBadRequest)
	wantError(t, w, http.StatusBadRequest)

	long := make([]string, MaxLog+1)
	for i := range long {
		long[i] = "x"
	}
	_, w = postPlay(t, PlayRequest{Level: level, Log: long}, http.StatusBadRequest)
	wantError(t, w, http.StatusBadRequest)

	for name, body := range map[string]string{
		"not json":      `{"level": `,
		"unknown field": `{"level": "` + level + `", "moves": []}`,
		"wrong type":    `{"level": 3}`,
	} {
		w := do(t, http.MethodPost, "/api/play", []byte(body))
		if w.Code != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", name, w.Code)
		}
		wantError(t, w, http.StatusBadRequest)
	}

	big := `{"level": "` + level + `", "try": "` + strings.Repeat("a", MaxBody) + `"}`
	wantError(t, do(t, http.MethodPost, "/api/play", []byte(big)), http.StatusRequestEntityTooLarge)

	if w := do(t, http.MethodGet, "/api/play", nil); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET /api/play: status %d, want 405", w.Code)
	}
}

func TestReference(t *testing.T) {
	level := firstLevel(t)
	w := do(t, http.MethodGet, "/api/reference?level="+level, nil)
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	var got struct{ Moves []string }
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want, _ := play.Reference(level)
	if !slices.Equal(got.Moves, want) {
		t.Fatalf("moves %q, want %q", got.Moves, want)
	}
	wantError(t, do(t, http.MethodGet, "/api/reference?level=no/such-level", nil), http.StatusNotFound)
}
