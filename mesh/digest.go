package mesh

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"strconv"
)

// digestOf hashes the canonical JSON of st with an empty digest. The state
// types are written by hand, fields in byte order of their JSON names, so
// the fold does not pay for reflection; TestTheDigestEncoderMatchesCanonical
// holds it equal to canonicalMarshal, and so to Canonical(json.Marshal(st)).
func digestOf(st State) string {
	st.Digest = ""
	h := sha256.New()
	w := &hashWriter{h: h}
	w.state(&st)
	w.flush()
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// stateCanonical returns what digestOf hashes.
func stateCanonical(st State) []byte {
	var out bytes.Buffer
	w := &hashWriter{out: &out}
	w.state(&st)
	w.flush()
	return out.Bytes()
}

// hashWriter buffers canonical JSON and feeds it to a hash (or a buffer,
// for tests) in chunks.
type hashWriter struct {
	buf bytes.Buffer
	h   hash.Hash
	out *bytes.Buffer
}

const hashChunkBytes = 64 << 10

func (w *hashWriter) flush() {
	if w.h != nil {
		w.h.Write(w.buf.Bytes())
	} else {
		w.out.Write(w.buf.Bytes())
	}
	w.buf.Reset()
}

func (w *hashWriter) maybeFlush() {
	if w.buf.Len() >= hashChunkBytes {
		w.flush()
	}
}

func (w *hashWriter) raw(s string) { w.buf.WriteString(s) }

// key writes a member name; first says whether it opens the object.
func (w *hashWriter) key(name string, first bool) {
	if !first {
		w.buf.WriteByte(',')
	}
	w.buf.WriteByte('"')
	w.buf.WriteString(name) // member names are plain ASCII
	w.buf.WriteString(`":`)
}

func (w *hashWriter) str(s string) { writeCanonicalString(&w.buf, s) }
func (w *hashWriter) u64(v uint64) { w.buf.WriteString(strconv.FormatUint(v, 10)) }
func (w *hashWriter) open()        { w.buf.WriteByte('{') }
func (w *hashWriter) close()       { w.buf.WriteByte('}') }
func (w *hashWriter) sep(i int) {
	if i > 0 {
		w.buf.WriteByte(',')
	}
}
func (w *hashWriter) strs(v []string) {
	if v == nil {
		w.raw("null")
		return
	}
	w.buf.WriteByte('[')
	for i, s := range v {
		w.sep(i)
		w.str(s)
	}
	w.buf.WriteByte(']')
}

// optStr writes an omitempty string member; it returns whether the object
// is still empty.
func (w *hashWriter) optStr(name, v string, first bool) bool {
	if v == "" {
		return first
	}
	w.key(name, first)
	w.str(v)
	return false
}

func (w *hashWriter) state(st *State) {
	w.open()
	w.key("claims", true)
	if st.Claims == nil {
		w.raw("null")
	} else {
		w.raw("[")
		for i := range st.Claims {
			w.sep(i)
			w.claim(&st.Claims[i])
			w.maybeFlush()
		}
		w.raw("]")
	}
	w.key("digest", false)
	w.str(st.Digest)
	w.key("handovers", false)
	if st.Handovers == nil {
		w.raw("null")
	} else {
		w.raw("[")
		for i := range st.Handovers {
			w.sep(i)
			w.handover(&st.Handovers[i])
			w.maybeFlush()
		}
		w.raw("]")
	}
	w.key("opaque_events", false)
	w.u64(st.OpaqueEvents)
	w.key("overlaps", false)
	if st.Overlaps == nil {
		w.raw("null")
	} else {
		w.raw("[")
		for i := range st.Overlaps {
			w.sep(i)
			w.overlap(&st.Overlaps[i])
			w.maybeFlush()
		}
		w.raw("]")
	}
	w.key("reviews", false)
	if st.Reviews == nil {
		w.raw("null")
	} else {
		w.raw("[")
		for i := range st.Reviews {
			w.sep(i)
			w.review(&st.Reviews[i])
			w.maybeFlush()
		}
		w.raw("]")
	}
	w.key("sessions", false)
	if st.Sessions == nil {
		w.raw("null")
	} else {
		w.raw("[")
		for i := range st.Sessions {
			w.sep(i)
			w.session(&st.Sessions[i])
			w.maybeFlush()
		}
		w.raw("]")
	}
	w.close()
}

func (w *hashWriter) claim(c *ClaimView) {
	w.open()
	w.key("acquired_lamport", true)
	w.u64(c.AcquiredLamport)
	w.key("acquired_seq", false)
	w.u64(c.AcquiredSeq)
	w.optStr("intent", c.Intent, false)
	w.optStr("issue", c.Issue, false)
	w.key("key", false)
	w.str(c.Key)
	w.key("mode", false)
	w.str(string(c.Mode))
	w.key("scope", false)
	w.strs(c.Scope)
	w.key("session", false)
	w.str(c.Session)
	w.key("status", false)
	w.open()
	first := w.optStr("detail", c.Status.Detail, true)
	w.key("state", first)
	w.str(c.Status.State)
	w.close()
	w.key("stream", false)
	w.str(string(c.Stream))
	if len(c.Supersedes) > 0 {
		w.key("supersedes", false)
		w.strs(c.Supersedes)
	}
	w.close()
}

func (w *hashWriter) handover(h *HandoverView) {
	w.open()
	w.key("consumed_by", true)
	w.strs(h.ConsumedBy)
	w.key("id", false)
	w.str(h.ID)
	w.key("info", false)
	i := &h.Info
	w.open()
	w.key("body", true)
	w.str(i.Body)
	w.optStr("branch", i.Branch, false)
	w.optStr("created_at", i.CreatedAt, false)
	w.optStr("head", i.Head, false)
	w.key("id", false)
	w.str(i.ID)
	w.optStr("issue", i.Issue, false)
	w.optStr("milestone", i.Milestone, false)
	w.optStr("name", i.Name, false)
	w.optStr("task", i.Task, false)
	w.close()
	w.key("published_lamport", false)
	w.u64(h.PublishedLamport)
	w.key("stream", false)
	w.str(string(h.Stream))
	w.close()
}

func (w *hashWriter) overlap(o *Overlap) {
	w.open()
	w.key("first", true)
	w.str(o.First)
	w.key("paths", false)
	if o.Paths == nil {
		w.raw("null")
	} else {
		w.raw("[")
		for i, p := range o.Paths {
			w.sep(i)
			w.strs(p[:])
		}
		w.raw("]")
	}
	w.key("second", false)
	w.str(o.Second)
	w.close()
}

func (w *hashWriter) review(r *ReviewView) {
	w.open()
	w.key("answers", true)
	if r.Answers == nil {
		w.raw("null")
	} else {
		w.raw("[")
		for i := range r.Answers {
			a := &r.Answers[i]
			w.sep(i)
			w.open()
			first := w.optStr("note", a.Note, true)
			w.key("session", first)
			w.str(a.Session)
			w.key("verdict", false)
			w.str(string(a.Verdict))
			w.close()
		}
		w.raw("]")
	}
	w.optStr("issue", r.Issue, false)
	w.key("key", false)
	w.str(r.Key)
	w.key("requested_lamport", false)
	w.u64(r.RequestedLamport)
	w.optStr("reviewer", r.Reviewer, false)
	if len(r.Scope) > 0 {
		w.key("scope", false)
		w.strs(r.Scope)
	}
	w.key("session", false)
	w.str(r.Session)
	w.key("state", false)
	w.str(r.State)
	w.key("stream", false)
	w.str(string(r.Stream))
	w.key("subject", false)
	w.str(r.Subject)
	w.close()
}

func (w *hashWriter) session(s *SessionView) {
	w.open()
	w.key("info", true)
	i := &s.Info
	w.open()
	first := w.optStr("branch", i.Branch, true)
	first = w.optStr("checkout", i.Checkout, first)
	w.key("client", first)
	w.str(i.Client)
	w.optStr("context", i.Context, false)
	if i.Dirty != nil {
		w.key("dirty", false)
		w.raw(strconv.FormatBool(*i.Dirty))
	}
	w.optStr("head", i.Head, false)
	w.optStr("intent", i.Intent, false)
	w.optStr("issue", i.Issue, false)
	w.optStr("milestone", i.Milestone, false)
	w.key("session", false)
	w.str(i.Session)
	w.optStr("task", i.Task, false)
	w.optStr("worker", i.Worker, false)
	w.close()
	w.key("key", false)
	w.str(s.Key)
	w.key("state", false)
	w.str(s.State)
	w.key("stream", false)
	w.str(string(s.Stream))
	w.key("updated_lamport", false)
	w.u64(s.UpdatedLamport)
	w.close()
}
