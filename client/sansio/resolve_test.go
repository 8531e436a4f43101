// This file checks Resolve, the read-back that settles a write whose answer
// was lost by reading the journal back at the write's position and deciding
// Written, NotWritten, BelowFloor or Unresolved. Each
// case builds the journal in the fake with the real state machine, reads it
// from the write's position the way a client would, and checks the
// resolution: the write's bytes at its position are Written; other bytes at
// any of its positions, or an open tail after the fence moved on, are
// NotWritten (final); a page below the floor is BelowFloor; an unserved page,
// a page cut short, an unfenced write and an open tail under the write's own
// fence are Unresolved, each with a reason.
package sansio

import (
	"testing"

	"github.com/parosdb/paros/core/journal"
)

func TestResolveDecidesALostWriteFromTheLogAtItsPosition(t *testing.T) {
	mine := journal.WriteRequest{Journal: testID, Leader: uA, Seq: 2, Records: recs("m1", "m2")}
	other := func(f *fakeJournal, rs ...string) {
		f.write(journal.WriteRequest{Journal: testID, Leader: f.st.Leader, Seq: f.st.NextSeq, Records: recs(rs...)})
	}
	for _, tc := range []struct {
		name    string
		arrange func(f *fakeJournal)
		req     journal.WriteRequest
		limit   uint32
		page    *journal.ReadReply // nil: read the fake
		want    ResolutionKind
		reason  string
	}{
		{name: "the write landed", arrange: func(f *fakeJournal) { f.write(mine) }, want: ResolvedWritten},
		{name: "it landed and more followed", arrange: func(f *fakeJournal) { f.write(mine); other(f, "z") }, want: ResolvedWritten},
		{name: "other bytes hold its first position", arrange: func(f *fakeJournal) { other(f, "o1", "o2") },
			want: ResolvedNotWritten, reason: "other bytes hold position 2"},
		{name: "other bytes hold its second position", arrange: func(f *fakeJournal) { other(f, "m1", "o2") },
			want: ResolvedNotWritten, reason: "other bytes hold position 3"},
		{name: "a shorter write with its first bytes ends the log inside it", arrange: func(f *fakeJournal) { other(f, "m1") },
			want: ResolvedNotWritten, reason: "inside the write's range"},
		{name: "the tail is open and the fence moved on", arrange: func(f *fakeJournal) { f.claimAs(uB) },
			want: ResolvedNotWritten, reason: "the fence moved on"},
		{name: "the tail is open under its own fence", want: Unresolved, reason: "may still land"},
		{name: "the page was cut short", arrange: func(f *fakeJournal) { f.write(mine) }, limit: 1,
			want: Unresolved, reason: "read on"},
		{name: "below the floor", arrange: func(f *fakeJournal) {
			f.write(mine)
			f.truncate(journal.TruncateRequest{Journal: testID, Leader: uA, UpTo: 4})
		}, want: ResolvedBelowFloor, reason: "below the floor"},
		{name: "unserved", page: &journal.ReadReply{FromSeq: 2}, want: Unresolved, reason: "not served"},
		{name: "unknown journal", page: &journal.ReadReply{Served: true, UnknownJournal: true}, want: Unresolved, reason: "not served"},
		{name: "a page for another position", page: &journal.ReadReply{Served: true, FromSeq: 3}, want: Unresolved, reason: "starts at 3"},
		{name: "a page past the tail", page: &journal.ReadReply{Served: true, FromSeq: 2, Records: recs("m1"), View: journal.View{Leader: uA, NextSeq: 2, FirstSeq: 1}},
			want: Unresolved, reason: "read on"},
		{name: "an unfenced write", req: journal.WriteRequest{Journal: testID, Records: recs("u")}, want: Unresolved, reason: "unfenced"},
		{name: "an empty write", req: journal.WriteRequest{Journal: testID, Leader: uA, Seq: 2}, want: Unresolved, reason: "empty"},
	} {
		f := newFakeJournal(journal.ModeSingle)
		f.claimAs(uA)
		other(f, "first")
		if tc.arrange != nil {
			tc.arrange(f)
		}
		req := tc.req
		if req.Records == nil && !req.Leader.IsSet() {
			req = mine
		}
		page := tc.page
		if page == nil {
			p := f.read(journal.ReadRequest{Journal: testID, FromSeq: req.Seq, Limit: tc.limit})
			page = &p
		}

		got := Resolve(req, *page)

		if got.Kind != tc.want {
			t.Fatalf("%s: %s (%s), want %s", tc.name, got.Kind, got.Reason, tc.want)
		}
		if tc.reason != "" {
			mustContain(t, got.Reason, tc.reason)
		}
	}
}

func TestResolutionKindsHaveNames(t *testing.T) {
	for k, want := range map[ResolutionKind]string{ResolveInvalid: "invalid", ResolvedWritten: "written",
		ResolvedNotWritten: "not-written", ResolvedBelowFloor: "below-floor", Unresolved: "unresolved", 9: "resolution(9)"} {
		if k.String() != want {
			t.Fatalf("%d prints %q, want %q", k, k, want)
		}
	}
}
