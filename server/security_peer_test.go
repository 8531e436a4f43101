package server_test

// This file checks what a machine's gRPC server enforces for peers and
// machines (docs/guide/security.md, the rule table in rules.go), over the
// TLS test cell of security_test.go: the Peer stream needs a member's
// certificate and refuses a Deliver or a message claiming another node,
// delivering nothing; the Machine calls follow their rules; the
// per-principal bound answers ResourceExhausted, a stream counting as one
// call; and without credentials (--insecure) everything stays open.

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/server"
	"github.com/parosdb/paros/wire"
)

// waitDelivered waits until b holds n envelopes.
func waitDelivered(t *testing.T, b *fakeBackend, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		b.mu.Lock()
		got := len(b.delivered)
		b.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d envelopes delivered, want %d", got, n)
		}
	}
}

// peerStreamErr opens a Peer stream on conn, sends d and returns how the
// stream ended (nil if it is still open after a Deliver of the sender's own
// that was delivered).
func peerStreamErr(t *testing.T, conn *grpc.ClientConn, ctx context.Context, d *pb.Deliver) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := pb.NewPeerClient(conn).Stream(ctx)
	if err != nil {
		return err
	}
	_ = s.Send(d)
	_, err = s.Recv()
	return err
}

func TestPeerStreamNeedsAMemberSpeakingForItself(t *testing.T) {
	cell := newTestCell(t)
	srv := cell.node(t, serverID)
	member := cell.node(t, memberID)
	stranger := cell.node(t, strangerID)
	own := wire.DeliverToPB(memberID, []host.Envelope{heartbeat(memberID, serverID)})

	cases := []struct {
		name string
		conn func(addr string) *grpc.ClientConn
		ctx  context.Context
		d    *pb.Deliver
		want codes.Code
	}{
		{"no certificate, no token", func(a string) *grpc.ClientConn { return cell.clientConn(t, a) }, context.Background(), own, codes.Unauthenticated},
		{"a token, no certificate", func(a string) *grpc.ClientConn { return cell.clientConn(t, a) },
			as(cell.token(t, "admin", adminAll)), own, codes.PermissionDenied},
		{"a machine not a member", func(a string) *grpc.ClientConn { return peerConn(t, a, stranger) }, context.Background(),
			wire.DeliverToPB(strangerID, []host.Envelope{heartbeat(strangerID, serverID)}), codes.PermissionDenied},
		{"a member claiming another node", func(a string) *grpc.ClientConn { return peerConn(t, a, member) }, context.Background(),
			wire.DeliverToPB(serverID, []host.Envelope{heartbeat(serverID, memberID)}), codes.PermissionDenied},
		{"a member relaying another node's message", func(a string) *grpc.ClientConn { return peerConn(t, a, member) }, context.Background(),
			&pb.Deliver{From: memberID, Envelopes: wire.DeliverToPB(serverID, []host.Envelope{heartbeat(serverID, memberID)}).GetEnvelopes()},
			codes.PermissionDenied},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Arrange.
			b := &fakeBackend{}
			conn := tc.conn(serveAll(t, server.Security{Node: srv}, b))

			// Act.
			err := peerStreamErr(t, conn, tc.ctx, tc.d)

			// Check.
			if status.Code(err) != tc.want {
				t.Fatalf("stream ended with %v, want %s", err, tc.want)
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			if len(b.delivered) != 0 {
				t.Fatalf("delivered %+v", b.delivered)
			}
		})
	}

	t.Run("a member speaking for itself", func(t *testing.T) {
		// Arrange.
		b := &fakeBackend{}
		conn := peerConn(t, serveAll(t, server.Security{Node: srv}, b), member)
		s, err := pb.NewPeerClient(conn).Stream(context.Background())
		if err != nil {
			t.Fatal(err)
		}

		// Act.
		if err := s.Send(own); err != nil {
			t.Fatal(err)
		}

		// Check.
		waitDelivered(t, b, 1)
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.from[0] != memberID || b.delivered[0].Msg.From != memberID {
			t.Fatalf("delivered %+v from %v", b.delivered, b.from)
		}
	})
}

func TestMachineCallsFollowTheirRules(t *testing.T) {
	// Arrange.
	cell := newTestCell(t)
	addr := serveAll(t, server.Security{Node: cell.node(t, serverID)}, servedBackend())
	client := pb.NewMachineClient(cell.clientConn(t, addr))
	asPeer := pb.NewMachineClient(peerConn(t, addr, cell.node(t, memberID)))
	reader := as(cell.token(t, "reader", readJid))
	tenantAdmin := as(cell.token(t, "tenant-admin", adminTnt))
	root := as(cell.token(t, "root", adminAll))
	bg := context.Background()
	type caller struct {
		c   pb.MachineClient
		ctx context.Context
	}
	callers := map[string]caller{"reader": {client, reader}, "tenant admin": {client, tenantAdmin}, "root": {client, root}, "peer": {asPeer, bg}}
	calls := map[string]func(caller) error{
		"identify": func(c caller) error { _, err := c.c.Identify(c.ctx, &pb.IdentifyRequest{}); return err },
		"identify-plan": func(c caller) error {
			_, err := c.c.Identify(c.ctx, &pb.IdentifyRequest{Plan: true}) // lists every journal
			return err
		},
		"prepare-cell": func(c caller) error { _, err := c.c.PrepareCell(c.ctx, &pb.PrepareCellRequest{}); return err },
		"form-cell":    func(c caller) error { _, err := c.c.FormCell(c.ctx, &pb.FormCellRequest{}); return err },
		"cell-init":    func(c caller) error { _, err := c.c.CellInit(c.ctx, &pb.CellInitRequest{}); return err },
		"admit":        func(c caller) error { _, err := c.c.Admit(c.ctx, &pb.AdmitRequest{}); return err },
		"join-cell":    func(c caller) error { _, err := c.c.JoinCell(c.ctx, &pb.JoinCellRequest{}); return err },
		"join-journal": func(c caller) error { _, err := c.c.JoinJournal(c.ctx, &pb.JoinJournalRequest{}); return err },
		"set-replicas": func(c caller) error { _, err := c.c.SetReplicas(c.ctx, &pb.SetReplicasRequest{}); return err },
		"set-proxies":  func(c caller) error { _, err := c.c.SetProxies(c.ctx, &pb.SetProxiesRequest{}); return err },
	}
	// PrepareCell and FormCell: a peer only (the decree's proposer; the
	// handler checks it is a founder the request names, machine/cell_acceptor.go);
	// JoinCell: a peer (the handler admits only the formation's proposer)
	// or an admin; the rest of the cell's changes come only from an
	// operator's tool, with an admin token.
	allowed := map[string][]string{
		"identify":      {"reader", "tenant admin", "root", "peer"},
		"identify-plan": {"root", "peer"},
		"prepare-cell":  {"peer"},
		"form-cell":     {"peer"},
		"cell-init":     {"root"},
		"admit":         {"root"},
		"join-cell":     {"root", "peer"},
		"join-journal":  {"root"},
		"set-replicas":  {"root"},
		"set-proxies":   {"root"},
	}

	for call, do := range calls {
		for who, c := range callers {
			// Act.
			err := do(c)

			// Check.
			want := codes.PermissionDenied
			if slices.Contains(allowed[call], who) {
				want = codes.OK
			}
			if status.Code(err) != want {
				t.Errorf("%s by %s: %v, want %s", call, who, err, want)
			}
		}
	}
}

// blockingBackend holds every Read until release is closed.
type blockingBackend struct {
	fakeBackend
	started atomic.Int32
	release chan struct{}
}

func (b *blockingBackend) Call(ctx context.Context, c host.Call) (host.Response, error) {
	if c.Kind == host.CallRead {
		b.started.Add(1)
		select {
		case <-b.release:
		case <-ctx.Done():
		}
	}
	return b.fakeBackend.Call(ctx, c)
}

func TestPrincipalCallsInFlightAreBounded(t *testing.T) {
	// Arrange: a bound of 2; the writer holds a WriteStream open (one call)
	// and one Read blocked in the backend.
	cell := newTestCell(t)
	b := &blockingBackend{release: make(chan struct{})}
	b.resp = host.Response{Read: journal.ReadReply{Served: true}}
	addr := serveAll(t, server.Security{Node: cell.node(t, serverID), PrincipalCallsMax: 2}, b)
	c := pb.NewJournalClient(cell.clientConn(t, addr))
	writer := as(cell.token(t, "writer", writeJid))
	other := as(cell.token(t, "other", writeJid))
	st, err := c.WriteStream(writer)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&pb.WriteStreamRequest{Writes: []*pb.StreamWrite{{Id: 1, Write: &pb.WriteRequest{Journal: jidPB, Leader: fence, Seq: 1, Records: [][]byte{[]byte("r")}}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = c.Read(writer, &pb.ReadRequest{Journal: jidPB})
	}()
	for deadline := time.Now().Add(5 * time.Second); b.started.Load() < 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the read never reached the backend")
		}
	}

	// Act.
	_, errThird := c.Write(writer, &pb.WriteRequest{Journal: jidPB, Leader: fence, Seq: 2, Records: [][]byte{[]byte("r")}})
	_, errOther := c.Write(other, &pb.WriteRequest{Journal: jidPB, Leader: fence, Seq: 2, Records: [][]byte{[]byte("r")}})
	close(b.release)
	wg.Wait()
	_, errAfter := c.Write(writer, &pb.WriteRequest{Journal: jidPB, Leader: fence, Seq: 2, Records: [][]byte{[]byte("r")}})

	// Check.
	if status.Code(errThird) != codes.ResourceExhausted {
		t.Errorf("a third call in flight: %v, want ResourceExhausted", errThird)
	}
	if errOther != nil {
		t.Errorf("another principal: %v", errOther)
	}
	if errAfter != nil {
		t.Errorf("once the read ended: %v", errAfter)
	}
	_ = st.CloseSend()
}

func TestInsecureModeStaysOpen(t *testing.T) {
	// Arrange: no credentials, plaintext, no token.
	b := servedBackend()
	conn := dial(t, serveAll(t, server.Security{}, b), nil)
	ctx := context.Background()

	// Act.
	errs := journalCalls(ctx, pb.NewJournalClient(conn), jidPB)
	errs["write-stream"] = writeStreamErr(ctx, pb.NewJournalClient(conn), jidPB)
	ir, err := pb.NewAdminClient(conn).Inspect(ctx, &pb.InspectRequest{NodeOnly: true})
	errs["inspect"] = err
	_, errs["cell-init"] = pb.NewMachineClient(conn).CellInit(ctx, &pb.CellInitRequest{})
	s, err := pb.NewPeerClient(conn).Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(wire.DeliverToPB(memberID, []host.Envelope{heartbeat(memberID, serverID)})); err != nil {
		t.Fatal(err)
	}

	// Check.
	for call, err := range errs {
		if err != nil {
			t.Errorf("%s in --insecure mode: %v", call, err)
		}
	}
	if !slices.Equal(listed(ir), allJour) {
		t.Errorf("inspect lists %v, want every journal", listed(ir))
	}
	waitDelivered(t, b, 1)
}
