package server_test

// This file checks what a machine's gRPC server enforces with bearer tokens
// (docs/guide/security.md, the rule table in rules.go), over the TLS test
// cell of security_test.go: no credential is Unauthenticated on every
// service; a read-only token reads its journal only and cannot write,
// truncate or set the leader; a tenant token covers that tenant's journals
// only; a WriteStream carrying one write out of scope ends PermissionDenied
// before that message reaches the backend; an expired token (at issue or
// once cached) is Unauthenticated and says so; and Inspect lists only the
// journals a token covers and answers for a journal only within scope.

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/server"
	"github.com/parosdb/paros/wire"
)

func TestNoCredentialIsUnauthenticated(t *testing.T) {
	// Arrange.
	cell := newTestCell(t)
	b := servedBackend()
	conn := cell.clientConn(t, serveAll(t, server.Security{Node: cell.node(t, serverID)}, b))
	ctx := context.Background()

	// Act.
	errs := journalCalls(ctx, pb.NewJournalClient(conn), jidPB)
	errs["write-stream"] = writeStreamErr(ctx, pb.NewJournalClient(conn), jidPB)
	_, errs["inspect"] = pb.NewAdminClient(conn).Inspect(ctx, &pb.InspectRequest{Journal: jidPB})
	_, errs["inspect node"] = pb.NewAdminClient(conn).Inspect(ctx, &pb.InspectRequest{NodeOnly: true})
	_, errs["reconfigure"] = pb.NewAdminClient(conn).Reconfigure(ctx, &pb.ReconfigureRequest{Journal: jidPB})
	_, errs["handoff"] = pb.NewAdminClient(conn).Handoff(ctx, &pb.HandoffRequest{Journal: jidPB})
	_, errs["identify"] = pb.NewMachineClient(conn).Identify(ctx, &pb.IdentifyRequest{})
	_, errs["cell-init"] = pb.NewMachineClient(conn).CellInit(ctx, &pb.CellInitRequest{})
	ps, err := pb.NewPeerClient(conn).Stream(ctx)
	if err == nil {
		_ = ps.Send(wire.DeliverToPB(memberID, []host.Envelope{heartbeat(memberID, serverID)}))
		_, err = ps.Recv()
	}
	errs["peer"] = err

	// Check.
	for call, err := range errs {
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s without a credential: %v, want Unauthenticated", call, err)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.calls) != 0 || len(b.delivered) != 0 {
		t.Errorf("the backend got %d calls and %d envelopes from nobody", len(b.calls), len(b.delivered))
	}
}

func TestReadOnlyTokenReadsItsJournalOnly(t *testing.T) {
	// Arrange.
	cell := newTestCell(t)
	b := servedBackend()
	c := pb.NewJournalClient(cell.clientConn(t, serveAll(t, server.Security{Node: cell.node(t, serverID)}, b)))
	ctx := as(cell.token(t, "reader", readJid))

	// Act.
	own := journalCalls(ctx, c, jidPB)
	other := journalCalls(ctx, c, siblingPB)
	streamErr := writeStreamErr(ctx, c, jidPB)

	// Check: the read of its journal reached the backend, nothing else.
	if own["read"] != nil {
		t.Errorf("read of its journal: %v", own["read"])
	}
	for _, call := range []string{"write", "truncate", "set-leader"} {
		if status.Code(own[call]) != codes.PermissionDenied {
			t.Errorf("%s with a read-only token: %v, want PermissionDenied", call, own[call])
		}
	}
	for call, err := range other {
		if status.Code(err) != codes.PermissionDenied {
			t.Errorf("%s of another journal: %v, want PermissionDenied", call, err)
		}
	}
	if status.Code(streamErr) != codes.PermissionDenied {
		t.Errorf("write stream with a read-only token: %v, want PermissionDenied", streamErr)
	}
	if n := b.callCount(); n != 1 || b.lastCall(t).Kind != host.CallRead {
		t.Errorf("the backend got %d calls, want the one read", n)
	}
}

func TestTenantTokenCoversItsTenantOnly(t *testing.T) {
	// Arrange.
	cell := newTestCell(t)
	b := servedBackend()
	c := pb.NewJournalClient(cell.clientConn(t, serveAll(t, server.Security{Node: cell.node(t, serverID)}, b)))
	ctx := as(cell.token(t, "tenant", tenantRW))

	// Act.
	mine := journalCalls(ctx, c, jidPB)
	sib := journalCalls(ctx, c, siblingPB)
	theirs := journalCalls(ctx, c, foreignPB)
	unset := journalCalls(ctx, c, nil)

	// Check.
	for call := range mine {
		if mine[call] != nil || sib[call] != nil {
			t.Errorf("%s within the tenant: %v / %v", call, mine[call], sib[call])
		}
		if status.Code(theirs[call]) != codes.PermissionDenied || status.Code(unset[call]) != codes.PermissionDenied {
			t.Errorf("%s outside the tenant: %v, unset: %v; want PermissionDenied", call, theirs[call], unset[call])
		}
		if strings.Contains(status.Convert(theirs[call]).Message(), "unknown") {
			t.Errorf("%s: the refusal %q speaks of the journal's existence", call, status.Convert(theirs[call]).Message())
		}
	}
	if n := b.callCount(); n != 8 {
		t.Errorf("the backend got %d calls, want the tenant's 8", n)
	}
}

func TestWriteStreamEndsAtAWriteOutOfScope(t *testing.T) {
	// Arrange: a stream whose first message is in scope and answered.
	cell := newTestCell(t)
	b := servedBackend()
	c := pb.NewJournalClient(cell.clientConn(t, serveAll(t, server.Security{Node: cell.node(t, serverID)}, b)))
	st, err := c.WriteStream(as(cell.token(t, "writer", writeJid)))
	if err != nil {
		t.Fatal(err)
	}
	w := func(id uint64, j *pb.JournalId) *pb.StreamWrite {
		return &pb.StreamWrite{Id: id, Write: &pb.WriteRequest{Journal: j, Leader: fence, Seq: id, Records: [][]byte{[]byte("r")}}}
	}
	if err := st.Send(&pb.WriteStreamRequest{Writes: []*pb.StreamWrite{w(1, jidPB)}}); err != nil {
		t.Fatal(err)
	}
	if r, err := st.Recv(); err != nil || r.GetAnswers()[0].GetId() != 1 {
		t.Fatalf("the write in scope: %v, %v", r, err)
	}

	// Act: a message with one write in scope and one out of it.
	_ = st.Send(&pb.WriteStreamRequest{Writes: []*pb.StreamWrite{w(2, jidPB), w(3, siblingPB)}})
	_, err = st.Recv()

	// Check: the stream ended PermissionDenied, and no write of the second
	// message reached the backend.
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("stream ended with %v, want PermissionDenied", err)
	}
	if n := b.callCount(); n != 1 {
		t.Fatalf("the backend got %d writes, want the first one only", n)
	}
}

// clock is a settable clock for Security.Now.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time { return time.Unix(0, c.ns.Load()) }

func TestExpiredTokenIsUnauthenticated(t *testing.T) {
	// Arrange.
	cell := newTestCell(t)
	clk := &clock{}
	start := time.Now()
	clk.ns.Store(start.UnixNano())
	b := servedBackend()
	c := pb.NewJournalClient(cell.clientConn(t, serveAll(t, server.Security{Node: cell.node(t, serverID), Now: clk.now}, b)))
	expired := cell.tokenAt(t, "old", start.Add(-2*time.Hour), start.Add(-time.Hour), readJid)
	fresh := cell.tokenAt(t, "new", start.Add(-time.Minute), start.Add(time.Minute), readJid)
	read := func(tok string) error {
		_, err := c.Read(as(tok), &pb.ReadRequest{Journal: jidPB})
		return err
	}

	// Act: an expired token; a valid one, then the same once the clock
	// passed its expiry (it is cached by then).
	errExpired := read(expired)
	errFresh := read(fresh)
	clk.ns.Store(start.Add(2 * time.Minute).UnixNano())
	errLater := read(fresh)

	// Check.
	for name, err := range map[string]error{"expired at issue": errExpired, "expired once cached": errLater} {
		if status.Code(err) != codes.Unauthenticated || !strings.Contains(status.Convert(err).Message(), "expired") {
			t.Errorf("%s: %v, want Unauthenticated saying it expired", name, err)
		}
	}
	if errFresh != nil {
		t.Errorf("a valid token: %v", errFresh)
	}
	if status.Code(read("paros1.forged.sig")) != codes.Unauthenticated {
		t.Error("a forged token was not Unauthenticated")
	}
	if b.callCount() != 1 {
		t.Errorf("the backend got %d calls, want 1", b.callCount())
	}
}

func listed(r *pb.InspectReply) []journal.ID {
	var out []journal.ID
	for _, j := range r.GetJournals() {
		out = append(out, wire.JournalIDFromPB(j))
	}
	return out
}

func TestInspectIsFilteredToTheCallersScope(t *testing.T) {
	// Arrange.
	cell := newTestCell(t)
	b := servedBackend()
	addr := serveAll(t, server.Security{Node: cell.node(t, serverID)}, b)
	admin := pb.NewAdminClient(cell.clientConn(t, addr))
	asPeer := pb.NewAdminClient(peerConn(t, addr, cell.node(t, memberID)))
	reader := as(cell.token(t, "reader", readJid))
	tenantAdmin := as(cell.token(t, "tenant-admin", adminTnt))
	root := as(cell.token(t, "root", adminAll))
	ctx := context.Background()

	t.Run("node only", func(t *testing.T) {
		for name, tc := range map[string]struct {
			c    pb.AdminClient
			ctx  context.Context
			want []journal.ID
		}{
			"reader":       {admin, reader, []journal.ID{jid}},
			"tenant admin": {admin, tenantAdmin, []journal.ID{jid, sibling}},
			"root":         {admin, root, allJour},
			"peer":         {asPeer, ctx, allJour},
		} {
			// Act.
			r, err := tc.c.Inspect(tc.ctx, &pb.InspectRequest{NodeOnly: true})

			// Check.
			if err != nil || r.GetNodeId() != serverID || !slices.Equal(listed(r), tc.want) {
				t.Errorf("%s: %v, %v; want journals %v", name, r, err, tc.want)
			}
		}
	})
	t.Run("a journal", func(t *testing.T) {
		// Act.
		own, errOwn := admin.Inspect(reader, &pb.InspectRequest{Journal: jidPB})
		_, errOther := admin.Inspect(reader, &pb.InspectRequest{Journal: siblingPB})
		sib, errTenant := admin.Inspect(tenantAdmin, &pb.InspectRequest{Journal: siblingPB})
		_, errForeign := admin.Inspect(tenantAdmin, &pb.InspectRequest{Journal: foreignPB})
		_, errPeer := asPeer.Inspect(ctx, &pb.InspectRequest{Journal: jidPB})

		// Check: facts within scope (the role and leader hint a client
		// needs), PermissionDenied outside it, before the backend.
		if errOwn != nil || own.GetRole() != "leader" || own.GetLeaderHint() != serverID || !slices.Equal(listed(own), []journal.ID{jid}) {
			t.Errorf("a reader's own journal: %v, %v", own, errOwn)
		}
		if errTenant != nil || sib.GetRole() != "leader" {
			t.Errorf("a tenant admin's journal: %v, %v", sib, errTenant)
		}
		for name, err := range map[string]error{"reader, other journal": errOther, "tenant admin, other tenant": errForeign, "peer": errPeer} {
			if status.Code(err) != codes.PermissionDenied {
				t.Errorf("%s: %v, want PermissionDenied", name, err)
			}
		}
		if n := b.callCount(); n != 2 {
			t.Errorf("the backend got %d inspects, want 2", n)
		}
	})
	t.Run("other admin calls need admin over everything", func(t *testing.T) {
		// Act.
		_, errTenant := admin.Reconfigure(tenantAdmin, &pb.ReconfigureRequest{Journal: jidPB})
		_, errPeer := asPeer.Retire(ctx, &pb.RetireRequest{})
		_, errTenantHandoff := admin.Handoff(tenantAdmin, &pb.HandoffRequest{Journal: jidPB})
		_, errPeerHandoff := asPeer.Handoff(ctx, &pb.HandoffRequest{Journal: jidPB})
		rr, errRoot := admin.ReconfigureMatchmakers(root, &pb.ReconfigureMatchmakersRequest{})

		// Check.
		if status.Code(errTenant) != codes.PermissionDenied || status.Code(errPeer) != codes.PermissionDenied {
			t.Errorf("tenant admin: %v; peer: %v; want PermissionDenied", errTenant, errPeer)
		}
		if status.Code(errTenantHandoff) != codes.PermissionDenied || status.Code(errPeerHandoff) != codes.PermissionDenied {
			t.Errorf("handoff: tenant admin: %v; peer: %v; want PermissionDenied", errTenantHandoff, errPeerHandoff)
		}
		if errRoot != nil || !strings.HasPrefix(rr.GetRefusal(), "invalid_configuration") { // no members named
			t.Errorf("root: %v, %v", rr, errRoot)
		}
	})
}
