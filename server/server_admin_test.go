// This file checks the gRPC edge's Admin service against the fake Backend
// of server_test.go: it relays reconfigurations to the node and answers
// Inspect for a node, an unset or unknown journal and a served one; Handoff
// carries the successor to the node and relays its answer (handed off to
// whom, or the refusal with the leader it names). Unary handlers are called
// directly.
package server_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/runtime"
	"github.com/parosdb/paros/server"
)

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
