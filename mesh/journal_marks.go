package mesh

import (
	"encoding/json"
	"maps"
	"slices"
	"time"
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
