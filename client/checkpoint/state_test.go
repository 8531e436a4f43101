// This file holds the test doubles of the checkpoint tests. kv is a small
// Checkpointable application state: each entry "k=v" sets a key, and its
// checkpoint is the sorted pairs with the count of entries applied, so two
// folds of the same log give the same bytes. memLog is one journal's
// records with a floor, answering sansio.Reader requests the way a server
// does (a read below the floor is truncated), so the folders in these tests
// are fed through a real Reader rather than by hand.
package checkpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/parosdb/paros/client/sansio"
	"github.com/parosdb/paros/core/journal"
)

var testID = journal.ID{Tenant: 3, Journal: 4}

type kv struct {
	m       map[string]string
	applied uint64
	// failOn makes Apply refuse that entry; failRestore makes Restore fail.
	failOn      string
	failRestore bool
}

func newKV() *kv { return &kv{m: map[string]string{}} }

func (s *kv) Apply(_ journal.Seq, rec []byte) error {
	if string(rec) == s.failOn {
		return errors.New("kv: refused on purpose")
	}
	k, v, ok := strings.Cut(string(rec), "=")
	if !ok {
		return fmt.Errorf("kv: %q is not k=v", rec)
	}
	s.m[k] = v
	s.applied++
	return nil
}

func (s *kv) Checkpoint() []byte {
	b := binary.LittleEndian.AppendUint64(nil, s.applied)
	for _, k := range slices.Sorted(maps.Keys(s.m)) {
		b = append(b, k+"="+s.m[k]+"\n"...)
	}
	return b
}

func (s *kv) Restore(_ journal.Seq, b []byte) error {
	if s.failRestore || len(b) < 8 {
		return errors.New("kv: cannot restore")
	}
	m := map[string]string{}
	for line := range strings.SplitSeq(string(b[8:]), "\n") {
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return fmt.Errorf("kv: bad line %q", line)
		}
		m[k] = v
	}
	s.m, s.applied = m, binary.LittleEndian.Uint64(b)
	return nil
}

func (s *kv) String() string { return string(s.Checkpoint()[8:]) }

// memLog is one journal: records at positions 1.., readable from first.
type memLog struct {
	recs  [][]byte
	first journal.Seq
}

func newLog() *memLog { return &memLog{first: journal.FirstSeq} }

func (l *memLog) next() journal.Seq { return journal.Seq(len(l.recs)) + 1 }

func (l *memLog) append(rs ...[]byte) journal.Seq {
	at := l.next()
	l.recs = append(l.recs, rs...)
	return at
}

func (l *memLog) entries(from, to int) {
	for i := from; i < to; i++ {
		l.append(fmt.Appendf(nil, "k%d=v%d", i%7, i))
	}
}

func (l *memLog) truncate(upTo journal.Seq) { l.first = max(l.first, min(upTo, l.next())) }

func (l *memLog) clone() *memLog {
	return &memLog{recs: slices.Clone(l.recs), first: l.first}
}

func (l *memLog) read(req journal.ReadRequest) journal.ReadReply {
	v := journal.View{NextSeq: l.next(), FirstSeq: l.first}
	if req.FromSeq < l.first {
		return journal.ReadReply{Served: true, BelowFloor: true, FromSeq: req.FromSeq, View: v}
	}
	var page [][]byte
	for s := req.FromSeq; s < l.next() && len(page) < int(max(req.Limit, 1)); s++ {
		page = append(page, l.recs[s-1])
	}
	return journal.ReadReply{Served: true, FromSeq: req.FromSeq, Records: page, View: v}
}

// readAll reads l to its tail with a Reader in pages of three, feeding every
// outcome to the folder, and returns everything the folder reported.
func readAll[S Checkpointable](l *memLog, r *sansio.Reader, f *Folder[S]) []Folded {
	var out []Folded
	for r.Cursor() < l.next() {
		req := r.Request(3, 0)
		out = append(out, f.FoldRead(r.Absorb(req, l.read(req)))...)
	}
	return out
}

// kinds counts the folded kinds.
func kinds(fs []Folded) map[FoldedKind]int {
	m := map[FoldedKind]int{}
	for _, f := range fs {
		m[f.Kind]++
	}
	return m
}

// checkpoints returns the FoldedCheckpoint results.
func checkpoints(fs []Folded) []Folded {
	var out []Folded
	for _, f := range fs {
		if f.Kind == FoldedCheckpoint {
			out = append(out, f)
		}
	}
	return out
}

// foldAll folds the whole of l from 1 into a fresh kv, ignoring the floor:
// the state a client that read everything has.
func foldAll(l *memLog) *kv {
	s := newKV()
	for i, r := range l.recs {
		if !IsRunRecord(r) {
			if err := s.Apply(journal.Seq(i+1), r); err != nil {
				panic(err)
			}
		}
	}
	return s
}
