// This file checks the gRPC edge's validation and translation (the table in
// the package doc) against a fake Backend that records every call it gets
// and answers with a canned response or error: a call naming an unset
// journal is answered UNKNOWN_JOURNAL without reaching the backend; a
// write over 1,024 records or 1 MiB is refused with InvalidArgument naming
// both limits; read limits and long-polls are clamped; a backend error
// after the call (a timeout, a stopped process) becomes an ambiguous LOST
// verdict, never an error the client could read as "not done"; a busy
// runtime becomes BUSY and an idle machine UNKNOWN_JOURNAL, neither
// ambiguous; verdicts pass through intact; the Admin service relays
// reconfigurations to the node and answers Inspect for a node, an unset
// or unknown journal and a served one; Handoff carries the successor to
// the node and relays its answer (handed off to whom, or the refusal with
// the leader it names); and the Peer stream hands decoded
// batches to the backend and ends a stream that sends a malformed Deliver.
// Unary handlers are called directly; the Peer stream runs over a real
// gRPC server on an in-memory listener (bufconn).
package server_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
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

func TestAdminReconfigureAndRetireAreJudgedByTheJournalsNode(t *testing.T) {
	// Arrange: the node refuses with no_matchmakers (a plain deployment).
	fb := &fakeBackend{resp: host.Response{Admin: host.AdminReply{Refusal: "no_matchmakers", Detail: "plain"}}}
	s := &server.Admin{B: fb, Info: func() server.AdminInfo { return server.AdminInfo{NodeID: 1} }}
	ctx := context.Background()

	// Act.
	rc, err1 := s.Reconfigure(ctx, &pb.ReconfigureRequest{Journal: jidPB, Members: []uint64{1, 2, 4},
		QuorumSystem: pb.QuorumSystem(quorum.KindGrid), Rows: 1, Cols: 3})
	rt, err2 := s.Retire(ctx, &pb.RetireRequest{Journal: jidPB, GcWatermark: &pb.Ballot{Round: 7, Node: 2}})
	unsetRC, err3 := s.Reconfigure(ctx, &pb.ReconfigureRequest{Members: []uint64{1}})
	unsetRT, err4 := s.Retire(ctx, &pb.RetireRequest{Journal: jidPB})
	rm, err5 := s.ReconfigureMatchmakers(ctx, &pb.ReconfigureMatchmakersRequest{Members: []uint64{1}})

	// Check: the node's refusal is relayed; the calls carried the request.
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		t.Fatal(err)
	}
	if rc.GetAccepted() || rc.GetRefusal() != "no_matchmakers: plain" || rt.GetAccepted() || rt.GetRefusal() != "no_matchmakers: plain" {
		t.Errorf("reconfigure %v, retire %v: want the node's refusal", rc, rt)
	}
	if unsetRC.GetRefusal() != "unset" || !strings.HasPrefix(unsetRT.GetRefusal(), "stale") {
		t.Errorf("no journal: %v; no watermark: %v", unsetRC, unsetRT)
	}
	if rm.GetAccepted() || rm.GetRefusal() != "no_matchmakers: plain" {
		t.Errorf("matchmaker handover: %v; want the node's refusal", rm)
	}
	if len(fb.calls) != 3 || fb.calls[0].Kind != host.CallReconfigure || fb.calls[1].Kind != host.CallRetire ||
		fb.calls[2].Kind != host.CallMatchmakers || !slices.Equal(fb.calls[2].Matchmakers.Members, []paxos.NodeID{1}) {
		t.Fatalf("calls %+v", fb.calls)
	}
	rq := fb.calls[0].Reconfigure
	if rq.Journal != jid || !slices.Equal(rq.Members, []paxos.NodeID{1, 2, 4}) || rq.Quorum != (quorum.Spec{Kind: quorum.KindGrid, Rows: 1, Cols: 3}) {
		t.Errorf("reconfigure call %+v", rq)
	}
	if fb.calls[1].Retire.Watermark != (paxos.Ballot{Round: 7, Node: 2}) {
		t.Errorf("retire call %+v", fb.calls[1].Retire)
	}
}

func TestAdminHandoffRelaysTheNodesAnswer(t *testing.T) {
	// Arrange: one node refuses (it does not lead; node 2 does), another
	// hands on to node 3.
	refuses := &fakeBackend{resp: host.Response{Admin: host.AdminReply{Refusal: "not_leader", Detail: "node 1 does not lead", LeaderHint: 2}}}
	hands := &fakeBackend{resp: host.Response{Admin: host.AdminReply{Successor: 3}}}
	info := func() server.AdminInfo { return server.AdminInfo{NodeID: 1} }
	ctx := context.Background()

	// Act.
	rr, err1 := (&server.Admin{B: refuses, Info: info}).Handoff(ctx, &pb.HandoffRequest{Journal: jidPB, To: 3})
	rh, err2 := (&server.Admin{B: hands, Info: info}).Handoff(ctx, &pb.HandoffRequest{Journal: jidPB})
	unset, err3 := (&server.Admin{B: hands, Info: info}).Handoff(ctx, &pb.HandoffRequest{To: 3})

	// Check.
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	if rr.GetHandedOff() || !strings.HasPrefix(rr.GetRefusal(), "not_leader") || rr.GetLeaderHint() != 2 {
		t.Errorf("a follower's answer: %v; want not_leader naming node 2", rr)
	}
	if !rh.GetHandedOff() || rh.GetRefusal() != "" || rh.GetTo() != 3 {
		t.Errorf("a leader's answer: %v; want handed off to 3", rh)
	}
	if unset.GetRefusal() != "unset" || unset.GetHandedOff() {
		t.Errorf("no journal: %v; want unset", unset)
	}
	if len(refuses.calls) != 1 || refuses.calls[0].Kind != host.CallHandoff ||
		refuses.calls[0].Handoff != (host.HandoffRequest{Journal: jid, To: 3}) {
		t.Errorf("calls %+v; want one handoff of %s to 3", refuses.calls, jid)
	}
	if len(hands.calls) != 1 || hands.calls[0].Handoff.To != 0 {
		t.Errorf("calls %+v; want one handoff naming no successor (the unset one never reaches the node)", hands.calls)
	}
}

func TestAdminInspect(t *testing.T) {
	spec := host.JournalSpec{ID: jid, Members: []paxos.NodeID{1, 2, 3}, Quorum: quorum.Spec{Kind: quorum.KindMajority}}
	info := func() server.AdminInfo {
		return server.AdminInfo{NodeID: 7, CellID: 9, Journals: []journal.ID{jid},
			Spec: func(id journal.ID) (host.JournalSpec, bool) { return spec, id == jid }}
	}
	ctx := context.Background()

	t.Run("node only", func(t *testing.T) {
		// Arrange.
		b := &fakeBackend{}
		s := &server.Admin{B: b, Info: info}

		// Act.
		r, err := s.Inspect(ctx, &pb.InspectRequest{NodeOnly: true})

		// Check: node facts, no journal facts, no backend call.
		if err != nil || r.GetNodeId() != 7 || r.GetCellId() != 9 || len(r.GetJournals()) != 1 || r.GetRefusal() != "" ||
			r.GetRole() != "" || b.callCount() != 0 {
			t.Fatalf("node-only inspect: %v, %v (%d backend calls)", r, err, b.callCount())
		}
	})
	t.Run("unset journal", func(t *testing.T) {
		// Arrange.
		b := &fakeBackend{}
		s := &server.Admin{B: b, Info: info}

		// Act.
		r, err := s.Inspect(ctx, &pb.InspectRequest{Journal: &pb.JournalId{Tenant: 1}})

		// Check.
		if err != nil || r.GetRefusal() != "unset" || r.GetNodeId() != 7 || b.callCount() != 0 {
			t.Fatalf("inspect of an unset journal: %v, %v", r, err)
		}
	})
	t.Run("unknown journal", func(t *testing.T) {
		// Arrange.
		s := &server.Admin{B: &fakeBackend{resp: host.Response{Inspect: host.InspectReply{UnknownJournal: true}}}, Info: info}

		// Act.
		r, err := s.Inspect(ctx, &pb.InspectRequest{Journal: &pb.JournalId{Tenant: 1, Journal: 1}})

		// Check.
		if err != nil || r.GetRefusal() != "unknown_journal" {
			t.Fatalf("inspect of an unknown journal: %v, %v", r, err)
		}
	})
	t.Run("served journal", func(t *testing.T) {
		// Arrange.
		b := &fakeBackend{resp: host.Response{Inspect: host.InspectReply{Role: "leader", Leader: 7, ChosenIndex: 12, Applied: 11,
			Floor: 2, State: journal.View{NextSeq: 40, FirstSeq: 5}}}}
		s := &server.Admin{B: b, Info: info}

		// Act.
		r, err := s.Inspect(ctx, &pb.InspectRequest{Journal: jidPB})

		// Check.
		if err != nil || r.GetRole() != "leader" || r.GetLeaderHint() != 7 || r.GetChosenIndex() != 12 || r.GetApplied() != 11 ||
			r.GetFirstSlot() != 2 || r.GetState().GetNextSeq() != 40 || len(r.GetMembers()) != 3 ||
			r.GetQuorumSystem() != pb.QuorumSystem_QUORUM_SYSTEM_MAJORITY {
			t.Fatalf("inspect: %v, %v", r, err)
		}
		if c := b.lastCall(t); c.Kind != host.CallInspect || c.Inspect.Journal != jid {
			t.Fatalf("the backend got %+v", c)
		}
	})
	t.Run("backend error", func(t *testing.T) {
		// Arrange.
		s := &server.Admin{B: &fakeBackend{err: runtime.ErrStopped}, Info: info}

		// Act.
		_, err := s.Inspect(ctx, &pb.InspectRequest{Journal: jidPB})

		// Check.
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("inspect on a stopped runtime: %v; want Unavailable", err)
		}
	})
}

// peerClient serves a Peer over an in-memory listener.
func peerClient(t *testing.T, b server.Backend) pb.PeerClient {
	return pb.NewPeerClient(bufconnServe(t, func(gs *grpc.Server) { pb.RegisterPeerServer(gs, &server.Peer{B: b}) }))
}

// bufconnServe starts a gRPC server with what register adds, on an
// in-memory listener, and returns a client connection to it.
func bufconnServe(t *testing.T, register func(*grpc.Server)) *grpc.ClientConn {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	register(gs)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(context.Context, string) (net.Conn, error) { return lis.Dial() }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func heartbeat(from, to paxos.NodeID) host.Envelope {
	return host.Envelope{Journal: jid, Msg: paxos.Message{Type: paxos.MsgHeartbeat, From: from, To: to}}
}

func TestPeerStreamDeliversDecodedBatches(t *testing.T) {
	// Arrange.
	b := &fakeBackend{}
	c := peerClient(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := c.Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// Act: two Delivers from node 7.
	for range 2 {
		if err := s.Send(wire.DeliverToPB(7, []host.Envelope{heartbeat(7, 8)})); err != nil {
			t.Fatal(err)
		}
	}

	// Check: both reach the backend, decoded.
	for deadline := time.Now().Add(5 * time.Second); ; {
		b.mu.Lock()
		n := len(b.delivered)
		b.mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d envelopes delivered, want 2", n)
		}
		time.Sleep(time.Millisecond)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.from[0] != 7 || b.delivered[0].Journal != jid || b.delivered[0].Msg.Type != paxos.MsgHeartbeat || b.delivered[0].Msg.To != 8 {
		t.Fatalf("delivered %+v from %v", b.delivered[0], b.from)
	}
}

func tooMany() []*pb.Envelope {
	out := make([]*pb.Envelope, wire.EnvelopesMax+1)
	for i := range out {
		out[i] = &pb.Envelope{}
	}
	return out
}

func TestPeerStreamRefusesMalformedDelivers(t *testing.T) {
	good := wire.DeliverToPB(7, []host.Envelope{heartbeat(7, 8)})
	cases := map[string]*pb.Deliver{
		"from node 0":         {From: 0, Envelopes: good.Envelopes},
		"another sender":      wire.DeliverToPB(5, []host.Envelope{heartbeat(7, 8)}),
		"unset journal":       {From: 7, Envelopes: []*pb.Envelope{{Msg: good.Envelopes[0].Msg}}},
		"unknown message":     {From: 7, Envelopes: []*pb.Envelope{{Journal: jidPB, Msg: &pb.ConsensusMessage{Type: 99, From: 7, To: 8}}}},
		"unset addressee":     {From: 7, Envelopes: []*pb.Envelope{{Journal: jidPB, Msg: &pb.ConsensusMessage{Type: pb.MsgType_MSG_TYPE_HEARTBEAT, From: 7}}}},
		"command no variant":  {From: 7, Envelopes: []*pb.Envelope{{Journal: jidPB, Msg: &pb.ConsensusMessage{Type: pb.MsgType_MSG_TYPE_ACCEPT, From: 7, To: 8, Entries: []*pb.SlotCommand{{Slot: 1, Command: &pb.Command{}}}}}}},
		"too many envelopes":  {From: 7, Envelopes: tooMany()},
		"bad sealed state":    {From: 7, Envelopes: []*pb.Envelope{{Journal: jidPB, Msg: &pb.ConsensusMessage{Type: pb.MsgType_MSG_TYPE_TRIMMED_TO, From: 7, To: 8, State: &pb.SealedState{NextSeq: 1, FirstSeq: 5}}}}},
		"message from a peer": {From: 7, Envelopes: []*pb.Envelope{{Journal: jidPB, Msg: &pb.ConsensusMessage{Type: pb.MsgType_MSG_TYPE_HEARTBEAT, From: 6, To: 8}}}},
	}
	for name, d := range cases {
		t.Run(name, func(t *testing.T) {
			// Arrange.
			b := &fakeBackend{}
			c := peerClient(t, b)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			s, err := c.Stream(ctx)
			if err != nil {
				t.Fatal(err)
			}

			// Act.
			_ = s.Send(d)
			_, err = s.Recv()

			// Check: the stream ends InvalidArgument and nothing is delivered.
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "malformed") {
				t.Fatalf("stream ended with %v; want InvalidArgument naming the malformed message", err)
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			if len(b.delivered) != 0 {
				t.Fatalf("a malformed deliver reached the backend: %+v", b.delivered)
			}
		})
	}
}
