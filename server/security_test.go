package server_test

// This file holds the helpers of the tests of what a machine's gRPC server
// enforces with credentials (docs/guide/security.md, the rule table in
// rules.go), which live in security_*_test.go. Each test mints a cell CA,
// machine certificates and tokens in a temporary directory (security.NewCA,
// IssueNode, IssueToken), serves Journal, Peer, Admin and a fake Machine
// service with server.ServerOptions over a real loopback TLS listener
// against the fake Backend, and calls it as a client with a bearer token or
// as a peer machine with its certificate.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/security"
	"github.com/parosdb/paros/server"
	"github.com/parosdb/paros/wire"
)

// Node ids of the test cell: the server, a member peer, a machine
// certificate of the CA that is no machine of the cell, a replica machine
// and a proxy machine.
const (
	serverID   = 0xa1
	memberID   = 0xb2
	strangerID = 0xc3
	replicaID  = 0xd4
	proxyID    = 0xe5
)

var (
	sibling   = journal.ID{Tenant: jid.Tenant, Journal: 0x23} // jid's tenant
	foreign   = journal.ID{Tenant: 0x33, Journal: 0x44}       // another tenant
	siblingPB = wire.JournalIDToPB(sibling)
	foreignPB = wire.JournalIDToPB(foreign)
)

// testCell is a cell's PKI in a temporary directory.
type testCell struct {
	ca  *security.CA
	dir string
}

func newTestCell(t *testing.T) *testCell {
	t.Helper()
	ca, err := security.NewCA("test")
	if err != nil {
		t.Fatal(err)
	}
	return &testCell{ca: ca, dir: t.TempDir()}
}

// node issues machine id's certificate into its own directory and loads it
// as the machine would.
func (c *testCell) node(t *testing.T, id uint64) *security.Node {
	t.Helper()
	dir := filepath.Join(c.dir, fmt.Sprintf("node-%016x", id))
	if err := (&security.CA{Cert: c.ca.Cert}).WriteCA(dir); err != nil {
		t.Fatal(err)
	}
	crt, key, err := c.ca.IssueNode(id, []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, security.NodeCertFile), crt, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, security.NodeKeyFile), key, 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := security.LoadNode(dir)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// token issues a token for subject, valid for an hour.
func (c *testCell) token(t *testing.T, subject string, scopes ...security.Scope) string {
	t.Helper()
	now := time.Now()
	return c.tokenAt(t, subject, now.Add(-time.Minute), now.Add(time.Hour), scopes...)
}

func (c *testCell) tokenAt(t *testing.T, subject string, issued, expires time.Time, scopes ...security.Scope) string {
	t.Helper()
	tok, err := c.ca.IssueToken(security.Claims{Subject: subject, Scopes: scopes, IssuedAt: issued.Unix(), Expires: expires.Unix()})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// Scopes used below.
var (
	readJid  = security.Scope{Tenant: jid.Tenant, Journal: jid.Journal, Ops: security.OpRead}
	writeJid = security.Scope{Tenant: jid.Tenant, Journal: jid.Journal, Ops: security.OpRead | security.OpWrite}
	tenantRW = security.Scope{Tenant: jid.Tenant, Ops: security.OpRead | security.OpWrite}
	adminAll = security.Scope{Ops: security.OpRead | security.OpWrite | security.OpAdmin}
	adminTnt = security.Scope{Tenant: jid.Tenant, Ops: security.OpAdmin}
	allJour  = []journal.ID{jid, sibling, foreign}
	// cellRoles: the server and memberID are acceptors, replicaID a
	// replica machine, proxyID a proxy; every other node is no machine of
	// the cell.
	cellRoles = func(node uint64) paxos.Role {
		switch node {
		case serverID, memberID:
			return paxos.RoleAcceptor
		case replicaID:
			return paxos.RoleReplica
		case proxyID:
			return paxos.RoleProxy
		}
		return paxos.RoleNone
	}
)

// fakeMachine answers every Machine call with a success.
type fakeMachine struct {
	pb.UnimplementedMachineServer
}

func (fakeMachine) Identify(context.Context, *pb.IdentifyRequest) (*pb.IdentifyReply, error) {
	return &pb.IdentifyReply{NodeId: serverID}, nil
}

func (fakeMachine) PrepareCell(context.Context, *pb.PrepareCellRequest) (*pb.PrepareCellReply, error) {
	return &pb.PrepareCellReply{NodeId: serverID, Promised: true}, nil
}

func (fakeMachine) FormCell(context.Context, *pb.FormCellRequest) (*pb.FormCellReply, error) {
	return &pb.FormCellReply{Formed: true}, nil
}

func (fakeMachine) CellInit(context.Context, *pb.CellInitRequest) (*pb.CellInitReply, error) {
	return &pb.CellInitReply{Initialized: true}, nil
}

// serveAll serves every service of a machine with ServerOptions(sec) on a
// loopback TCP listener and returns its address.
func serveAll(t *testing.T, sec server.Security, b server.Backend) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(server.ServerOptions(sec)...)
	info := func() server.AdminInfo {
		return server.AdminInfo{NodeID: serverID, CellID: 9, Journals: allJour}
	}
	pb.RegisterJournalServer(gs, &server.Journal{B: b})
	pb.RegisterPeerServer(gs, &server.Peer{B: b, RoleOf: cellRoles})
	pb.RegisterAdminServer(gs, &server.Admin{B: b, Info: info})
	pb.RegisterMachineServer(gs, fakeMachine{})
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return lis.Addr().String()
}

// dial connects to addr with the TLS configuration cfg (nil: plaintext).
func dial(t *testing.T, addr string, cfg *tls.Config) *grpc.ClientConn {
	t.Helper()
	creds := insecure.NewCredentials()
	if cfg != nil {
		creds = credentials.NewTLS(cfg)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// clientConn dials as a client: the CA as root, no certificate.
func (c *testCell) clientConn(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	cfg, err := security.ClientConfig(c.ca.CertPEM())
	if err != nil {
		t.Fatal(err)
	}
	return dial(t, addr, cfg)
}

// peerConn dials as machine n, presenting its certificate.
func peerConn(t *testing.T, addr string, n *security.Node) *grpc.ClientConn {
	t.Helper()
	return dial(t, addr, n.PeerConfig(serverID))
}

// as returns a context carrying tok as a bearer token ("" carries none).
func as(tok string) context.Context {
	ctx := context.Background()
	if tok == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
}

// journalCalls makes each unary Journal call on journal j and returns
// each error by name.
func journalCalls(ctx context.Context, c pb.JournalClient, j *pb.JournalId) map[string]error {
	out := map[string]error{}
	_, out["write"] = c.Write(ctx, &pb.WriteRequest{Journal: j, Leader: fence, Seq: 1, Records: [][]byte{[]byte("r")}})
	_, out["read"] = c.Read(ctx, &pb.ReadRequest{Journal: j, FromSeq: 1})
	_, out["truncate"] = c.Truncate(ctx, &pb.TruncateRequest{Journal: j, Leader: fence, UpTo: 1})
	_, out["set-leader"] = c.SetLeader(ctx, &pb.SetLeaderRequest{Journal: j, NewLeader: fence})
	return out
}

// writeStreamErr opens a WriteStream, sends one message carrying writes
// for journals js, and returns how the stream's first reply went.
func writeStreamErr(ctx context.Context, c pb.JournalClient, js ...*pb.JournalId) error {
	st, err := c.WriteStream(ctx)
	if err != nil {
		return err
	}
	var ws []*pb.StreamWrite
	for i, j := range js {
		ws = append(ws, &pb.StreamWrite{Id: uint64(i + 1), Write: &pb.WriteRequest{Journal: j, Leader: fence, Seq: 1, Records: [][]byte{[]byte("r")}}})
	}
	if err := st.Send(&pb.WriteStreamRequest{Writes: ws}); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	_, err = st.Recv()
	return err
}

func servedBackend() *fakeBackend {
	return &fakeBackend{resp: host.Response{Read: journal.ReadReply{Served: true, FromSeq: 1},
		Inspect: host.InspectReply{Role: "leader", Leader: serverID}}}
}
