// This file checks the gRPC edge's validation and translation (the table in
// the package doc) against a fake Backend that records every call it gets
// and answers with a canned response or error: a call naming an unset
// journal is answered UNKNOWN_JOURNAL without reaching the backend; a
// write over 1,024 records or 1 MiB is refused with InvalidArgument naming
// both limits; read limits and long-polls are clamped; a backend error
// after the call (a timeout, a stopped process) becomes an ambiguous LOST
// verdict, never an error the client could read as "not done"; a busy
// runtime becomes BUSY and an idle machine UNKNOWN_JOURNAL, neither
// ambiguous; and verdicts pass through intact. The Admin service is checked
// in server_admin_test.go and the Peer stream in server_peer_test.go.
// Unary handlers are called directly.
package server_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/runtime"
	"github.com/parosdb/paros/server"
	"github.com/parosdb/paros/wire"
)

var (
	jid   = journal.ID{Tenant: 0x11, Journal: 0x22}
	jidPB = wire.JournalIDToPB(jid)
	fence = &pb.LeaderUuid{Hi: 1, Lo: 2}
)

// fakeBackend records calls and deliveries and answers every call with
// resp and err.
type fakeBackend struct {
	mu        sync.Mutex
	calls     []host.Call
	delivered []host.Envelope
	from      []uint64
	resp      host.Response
	err       error
}

func (f *fakeBackend) Call(_ context.Context, c host.Call) (host.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
	r := f.resp
	r.Kind = c.Kind
	return r, f.err
}

func (f *fakeBackend) Submit(_ context.Context, calls []host.Call, reply func(int, host.Response)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	for i, c := range calls {
		f.calls = append(f.calls, c)
		r := f.resp
		r.Kind = c.Kind
		reply(i, r)
	}
	return nil
}

func (f *fakeBackend) Deliver(from uint64, batch []host.Envelope) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.from = append(f.from, from)
	f.delivered = append(f.delivered, batch...)
}

func (f *fakeBackend) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func (f *fakeBackend) lastCall(t *testing.T) host.Call {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) == 0 {
		t.Fatal("the backend got no call")
	}
	return f.calls[len(f.calls)-1]
}

// verdicts sends one call of each mutating kind for journal j and returns
// each verdict by name.
func verdicts(t *testing.T, s *server.Journal, j *pb.JournalId) map[string]*pb.Verdict {
	t.Helper()
	ctx := context.Background()
	out := map[string]*pb.Verdict{}
	w, err := s.Write(ctx, &pb.WriteRequest{Journal: j, Leader: fence, Seq: 1, Records: [][]byte{[]byte("r")}})
	if err != nil {
		t.Fatalf("write: %v", err)
	}
	out["write"] = w.GetVerdict()
	tr, err := s.Truncate(ctx, &pb.TruncateRequest{Journal: j, Leader: fence, UpTo: 1})
	if err != nil {
		t.Fatalf("truncate: %v", err)
	}
	out["truncate"] = tr.GetVerdict()
	sl, err := s.SetLeader(ctx, &pb.SetLeaderRequest{Journal: j, NewLeader: fence})
	if err != nil {
		t.Fatalf("set-leader: %v", err)
	}
	out["set-leader"] = sl.GetVerdict()
	return out
}

func TestUnsetJournalIsUnknownWithoutReachingTheBackend(t *testing.T) {
	for name, j := range map[string]*pb.JournalId{"absent": nil, "tenant unset": {Journal: 5}, "journal unset": {Tenant: 5}} {
		t.Run(name, func(t *testing.T) {
			// Arrange.
			b := &fakeBackend{}
			s := &server.Journal{B: b}

			// Act.
			vs := verdicts(t, s, j)
			rr, err := s.Read(context.Background(), &pb.ReadRequest{Journal: j, FromSeq: 4})

			// Check.
			for call, v := range vs {
				if v.GetRefusal() != pb.Refusal_REFUSAL_UNKNOWN_JOURNAL || v.GetAmbiguous() || v.GetOutcome() != pb.Outcome_OUTCOME_NONE {
					t.Errorf("%s: %v; want UNKNOWN_JOURNAL, not ambiguous", call, v)
				}
			}
			if err != nil || !rr.GetUnknownJournal() || rr.GetServed() || rr.GetFromSeq() != 4 {
				t.Errorf("read: %v, %v; want unknown_journal echoing from_seq", rr, err)
			}
			if n := b.callCount(); n != 0 {
				t.Errorf("the backend got %d calls for an unset journal", n)
			}
		})
	}
}

func TestTooLargeWriteIsInvalidArgumentNamingBothLimits(t *testing.T) {
	cases := map[string][][]byte{
		"1,025 records":      make([][]byte, journal.WriteRecordsMax+1),
		"1 MiB and one byte": {make([]byte, journal.WriteBytesMax+1)},
		"1 MiB over records": {make([]byte, journal.WriteBytesMax/2), make([]byte, journal.WriteBytesMax/2+1)},
	}
	for name, records := range cases {
		t.Run(name, func(t *testing.T) {
			// Arrange.
			b := &fakeBackend{}
			s := &server.Journal{B: b}

			// Act.
			_, err := s.Write(context.Background(), &pb.WriteRequest{Journal: jidPB, Leader: fence, Seq: 1, Records: records})

			// Check.
			st := status.Convert(err)
			if st.Code() != codes.InvalidArgument {
				t.Fatalf("code %s, want InvalidArgument (%v)", st.Code(), err)
			}
			for _, want := range []string{"TOO_LARGE", "1024", "1048576"} {
				if !strings.Contains(st.Message(), want) {
					t.Errorf("message %q does not name %s", st.Message(), want)
				}
			}
			if b.callCount() != 0 {
				t.Error("a too-large write reached the backend")
			}
		})
	}
}

func TestWriteAtTheLimitsReachesTheBackend(t *testing.T) {
	for name, records := range map[string][][]byte{
		"1,024 records": make([][]byte, journal.WriteRecordsMax),
		"exactly 1 MiB": {make([]byte, journal.WriteBytesMax)},
	} {
		t.Run(name, func(t *testing.T) {
			// Arrange.
			b := &fakeBackend{}
			s := &server.Journal{B: b}

			// Act.
			_, err := s.Write(context.Background(), &pb.WriteRequest{Journal: jidPB, Leader: fence, Seq: 1, Records: records})

			// Check.
			if err != nil || b.callCount() != 1 || len(b.lastCall(t).Write.Records) != len(records) {
				t.Fatalf("a write at the limits: %v, %d backend calls", err, b.callCount())
			}
		})
	}
}

func TestReadLimitAndWaitAreClamped(t *testing.T) {
	cases := []struct {
		limit, wait         uint32
		wantLimit, wantWait uint32
	}{
		{0, 0, 256, 0},
		{300, 5000, 256, 1000},
		{10, 200, 10, 200},
		{256, 1000, 256, 1000},
	}
	for _, tc := range cases {
		// Arrange.
		b := &fakeBackend{resp: host.Response{Read: journal.ReadReply{Served: true, FromSeq: 3}}}
		s := &server.Journal{B: b}

		// Act.
		_, err := s.Read(context.Background(), &pb.ReadRequest{Journal: jidPB, FromSeq: 3, Limit: tc.limit, WaitMs: tc.wait})

		// Check.
		c := b.lastCall(t)
		if err != nil || c.Kind != host.CallRead || c.Read.Limit != tc.wantLimit || c.Read.WaitMs != tc.wantWait || c.Read.FromSeq != 3 {
			t.Errorf("limit %d wait %d: the backend got %+v (%v); want limit %d wait %d",
				tc.limit, tc.wait, c.Read, err, tc.wantLimit, tc.wantWait)
		}
	}
}

func TestBackendErrorAfterTheCallIsAmbiguous(t *testing.T) {
	for _, backendErr := range []error{context.DeadlineExceeded, context.Canceled, runtime.ErrStopped, errors.New("anything else")} {
		t.Run(backendErr.Error(), func(t *testing.T) {
			// Arrange.
			s := &server.Journal{B: &fakeBackend{err: backendErr}}

			// Act.
			vs := verdicts(t, s, jidPB)
			rr, rerr := s.Read(context.Background(), &pb.ReadRequest{Journal: jidPB, FromSeq: 9})

			// Check: every mutation is an ambiguous LOST verdict, and a read
			// is answered unserved (a read is never ambiguous).
			for call, v := range vs {
				if !v.GetAmbiguous() || v.GetRefusal() != pb.Refusal_REFUSAL_LOST || v.GetOutcome() != pb.Outcome_OUTCOME_NONE {
					t.Errorf("%s: %v; want ambiguous LOST", call, v)
				}
				if r := wire.VerdictFromPB(v); !r.Ambiguous() {
					t.Errorf("%s: the client decodes %+v as not ambiguous", call, r)
				}
			}
			if rerr != nil || rr.GetServed() || rr.GetUnknownJournal() || rr.GetFromSeq() != 9 {
				t.Errorf("read: %v, %v; want unserved at 9", rr, rerr)
			}
		})
	}
}

func TestBusyRuntimeIsBusyAndNotAmbiguous(t *testing.T) {
	// Arrange.
	s := &server.Journal{B: &fakeBackend{err: runtime.ErrBusy}}

	// Act.
	vs := verdicts(t, s, jidPB)
	rr, rerr := s.Read(context.Background(), &pb.ReadRequest{Journal: jidPB, FromSeq: 2})

	// Check.
	for call, v := range vs {
		if v.GetRefusal() != pb.Refusal_REFUSAL_BUSY || v.GetAmbiguous() {
			t.Errorf("%s: %v; want BUSY, not ambiguous", call, v)
		}
	}
	if rerr != nil || rr.GetServed() {
		t.Errorf("read on a busy runtime: %v, %v; want unserved", rr, rerr)
	}
}

func TestIdleMachineAnswersUnknownJournal(t *testing.T) {
	// Arrange: the machine is not in a cell yet.
	s := &server.Journal{B: &fakeBackend{err: server.ErrNotServing}}

	// Act.
	vs := verdicts(t, s, jidPB)
	rr, rerr := s.Read(context.Background(), &pb.ReadRequest{Journal: jidPB, FromSeq: 6})

	// Check.
	for call, v := range vs {
		if v.GetRefusal() != pb.Refusal_REFUSAL_UNKNOWN_JOURNAL || v.GetAmbiguous() {
			t.Errorf("%s: %v; want UNKNOWN_JOURNAL, not ambiguous", call, v)
		}
	}
	if rerr != nil || !rr.GetUnknownJournal() || rr.GetFromSeq() != 6 {
		t.Errorf("read: %v, %v; want unknown_journal at 6", rr, rerr)
	}
}

func TestVerdictPassesThrough(t *testing.T) {
	// Arrange: the host accepted a write at [5, 7) and names node 3.
	view := journal.View{Leader: journal.LeaderUUID{Hi: 1, Lo: 2}, NextSeq: 7, FirstSeq: 1}
	b := &fakeBackend{resp: host.Response{Reply: journal.Reply{
		Outcome: journal.Outcome{Kind: journal.Accepted, Seq: 5, Count: 2, View: view}, LeaderHint: 3}}}
	s := &server.Journal{B: b}

	// Act.
	r, err := s.Write(context.Background(), &pb.WriteRequest{Journal: jidPB, Leader: fence, Seq: 5,
		Records: [][]byte{[]byte("a"), []byte("b")}})

	// Check: the request reached the host intact and the verdict came back.
	if err != nil {
		t.Fatal(err)
	}
	c := b.lastCall(t)
	if c.Kind != host.CallWrite || c.Write.Journal != jid || c.Write.Seq != 5 || c.Write.Leader != wire.UUIDFromPB(fence) ||
		len(c.Write.Records) != 2 {
		t.Errorf("the host got %+v", c.Write)
	}
	got := wire.VerdictFromPB(r.GetVerdict())
	if got.Outcome.Kind != journal.Accepted || got.Outcome.Seq != 5 || got.Outcome.Count != 2 || got.Outcome.View != view ||
		got.LeaderHint != 3 || r.GetVerdict().GetAmbiguous() {
		t.Errorf("verdict %+v", got)
	}
}
