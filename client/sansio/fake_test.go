// This file holds the test double every client test talks to: fakeJournal,
// one journal served by the real state machine (journal.Apply) with a log of
// records and a positions index, the way a learner keeps them. It answers
// the four calls with the same plain types a server answers with, so the
// Reader, the Writer and Resolve are checked against the rules of
// journal.Apply rather than against replies written by hand. Lost calls and
// lost answers are the tests' business: a test drops a reply by absorbing
// the zero journal.Reply instead.
package sansio

import (
	"github.com/parosdb/paros/core/journal"
)

var (
	testID = journal.ID{Tenant: 7, Journal: 9}
	uA     = journal.LeaderUUID{Hi: 0xa, Lo: 1}
	uB     = journal.LeaderUUID{Hi: 0xb, Lo: 2}
	uC     = journal.LeaderUUID{Hi: 0xc, Lo: 3}
)

type fakeJournal struct {
	mode   journal.WriterMode
	st     journal.State
	log    [][]byte // log[i] holds position i+1 (kept below the floor, never served)
	starts map[journal.Seq]journal.Entry
	// pageMax bounds a read page (0: journal.ReadRecordsMax).
	pageMax int
}

func newFakeJournal(mode journal.WriterMode) *fakeJournal {
	return &fakeJournal{mode: mode, st: journal.Initial(), starts: map[journal.Seq]journal.Entry{}}
}

func (f *fakeJournal) EntryAt(seq journal.Seq) (journal.Entry, journal.Held) {
	e, ok := f.starts[seq]
	if !ok {
		return journal.Entry{}, journal.Absent
	}
	return e, journal.Found
}

func (f *fakeJournal) apply(c journal.Command) journal.Reply {
	st, out := journal.Apply(f.st, f.mode, c, f)
	if out.Kind == journal.Accepted {
		e := c.Entry
		e.Seq = out.Seq
		f.starts[out.Seq] = e
		f.log = append(f.log, e.Records...)
	}
	f.st = st
	return journal.Reply{Outcome: out}
}

func (f *fakeJournal) write(req journal.WriteRequest) journal.Reply {
	return f.apply(journal.Write(journal.Entry{Leader: req.Leader, Seq: req.Seq, Records: req.Records}))
}

func (f *fakeJournal) setLeader(req journal.SetLeaderRequest) journal.Reply {
	return f.apply(journal.SetLeader(req.New, req.Old))
}

func (f *fakeJournal) truncate(req journal.TruncateRequest) journal.Reply {
	return f.apply(journal.Truncate(req.Leader, req.UpTo))
}

func (f *fakeJournal) read(req journal.ReadRequest) journal.ReadReply {
	v := f.st.View()
	if req.FromSeq < v.FirstSeq {
		return journal.ReadReply{Served: true, BelowFloor: true, FromSeq: req.FromSeq, View: v}
	}
	limit := int(req.Limit)
	if limit == 0 || limit > journal.ReadRecordsMax {
		limit = journal.ReadRecordsMax
	}
	if f.pageMax > 0 {
		limit = min(limit, f.pageMax)
	}
	var recs [][]byte
	for s := req.FromSeq; s < v.NextSeq && len(recs) < limit; s++ {
		recs = append(recs, f.log[s-1])
	}
	return journal.ReadReply{Served: true, FromSeq: req.FromSeq, Records: recs, View: v}
}

// claimAs makes uuid the leader in force, as another client would.
func (f *fakeJournal) claimAs(u journal.LeaderUUID) {
	if r := f.setLeader(journal.SetLeaderRequest{Journal: testID, New: u, Old: f.st.Leader}); r.Outcome.Kind != journal.LeaderSet {
		panic("fake: claim lost")
	}
}

// recs builds a batch of records from strings.
func recs(rs ...string) [][]byte {
	out := make([][]byte, len(rs))
	for i, r := range rs {
		out[i] = []byte(r)
	}
	return out
}

// fixedUUIDs is a uuid source that hands out us in turn.
func fixedUUIDs(us ...journal.LeaderUUID) func() journal.LeaderUUID {
	i := 0
	return func() journal.LeaderUUID {
		u := us[i%len(us)]
		i++
		return u
	}
}
