// Package web serves paros play: the page (index.html, app.js, style.css,
// embedded) and a small JSON API over package play. The server holds no
// state: a position is its move log, which the page keeps in its URL.
package web

import (
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"strings"

	"github.com/parosdb/paros/play"
)

//go:embed static
var static embed.FS

// Request limits: a body of at most MaxBody bytes, a log of at most MaxLog
// moves.
const (
	MaxBody = 1 << 20
	MaxLog  = 10000
)

// csp allows nothing but the page's own files: no inline script or style,
// no frames, no other origin.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// PlayRequest is the body of POST /api/play.
type PlayRequest struct {
	Level string   `json:"level"`
	Log   []string `json:"log"`
	Try   string   `json:"try"`
}

// Handler serves the page and the API.
func Handler() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embed holds static/ by construction
	}
	files := http.FileServerFS(sub)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, sub, "index.html")
	})
	mux.Handle("GET /static/", http.StripPrefix("/static", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r) // no listings
			return
		}
		files.ServeHTTP(w, r)
	})))
	mux.HandleFunc("GET /api/levels", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, play.Levels())
	})
	mux.HandleFunc("POST /api/play", servePlay)
	mux.HandleFunc("GET /api/reference", func(w http.ResponseWriter, r *http.Request) {
		moves, err := play.Reference(r.URL.Query().Get("level"))
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string][]string{"moves": moves})
	})
	return secure(mux)
}

func servePlay(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
	var req PlayRequest
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		status := http.StatusBadRequest
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			status = http.StatusRequestEntityTooLarge
		}
		writeJSON(w, status, errorBody{"bad request body: " + err.Error()})
		return
	}
	if len(req.Log) > MaxLog {
		writeJSON(w, http.StatusBadRequest, errorBody{"the log is longer than 10000 moves"})
		return
	}
	v, err := play.Play(req.Level, req.Log, req.Try)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// secure sets the headers every answer carries.
func secure(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Content-Security-Policy", csp)
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Cache-Control", "no-cache")
		h.ServeHTTP(w, r)
	})
}

type errorBody struct {
	Error string `json:"error"`
}

// writeError answers an engine error: 404 for an unknown level, 400 for a
// log that does not replay, 500 otherwise.
func writeError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, play.ErrUnknownLevel):
		status = http.StatusNotFound
	case errors.Is(err, play.ErrBadLog):
		status = http.StatusBadRequest
	}
	writeJSON(w, status, errorBody{err.Error()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body, _ = json.Marshal(errorBody{err.Error()})
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
