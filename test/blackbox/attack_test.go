package blackbox

// These tests play the hostile-input probe's attacks against a real secure
// cell (three `paros serve` processes with TLS, see cell_test.go) and then
// check the cell is intact: every machine still runs, the real writer's
// next write lands at the position it expected, and the journal reads back
// with exactly the records written.
//
//   - TestForgedAcceptIsRefused: an attacker learns the journal's chosen
//     index, next position and writer uuid (Admin.Inspect, with an admin
//     token: the reconnaissance is not the point) and sends every machine an
//     Accept at a ballot far above every promise, for the next slot,
//     carrying a write under the real writer's uuid at its next position,
//     then a Commit of that slot, claiming to be another member. Over TLS
//     without a client certificate the Peer stream is refused
//     (Unauthenticated without a token, PermissionDenied with an admin
//     token); with a real member's certificate claiming another member in
//     Deliver.from, or only in the messages' from, it is refused
//     PermissionDenied. Afterwards no machine promised a ballot that high and
//     no machine holds the forged record.
//   - TestDataCallsNeedACredential: Write, Truncate, SetLeader, WriteStream
//     and Read without a credential answer Unauthenticated, through the
//     client library (client.ErrDenied) and through raw gRPC stubs; a
//     read-only token is PermissionDenied on every mutating call and reads;
//     a token of another journal is PermissionDenied on this one, reads
//     included. Afterwards the writer's fence and next position are
//     unchanged.
//   - TestCellServesThroughIdleAndSlowConnections: with 500 idle TCP
//     connections held open to the leader (plain TCP, no handshake; the
//     server drops each after its handshake timeout and the test dials it
//     again), a slowloris client trickling a TLS ClientHello one byte every
//     500 ms and another trickling the HTTP/2 preface the same way after a
//     completed TLS handshake, 200 appends through the client library all
//     complete, each in under 2 s; the p50 and p99 latencies are logged.
//     Every slowloris connection, and every idle one, is closed by the
//     server within 10 s of being opened.

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/security"
	"github.com/parosdb/paros/wire"
)

// forgedRecord is the record the forged Accept carries.
var forgedRecord = []byte("forged")

// forgedRoundLead is how far above every promise the forged ballot is: far
// enough that no honest campaign during the test reaches it, so a promise
// at or above it can only come from the forgery.
const forgedRoundLead = 1000

// peerAttackTimeout bounds one forged Peer stream: a refused one ends at
// once; one still open after this was taken in.
const peerAttackTimeout = 5 * time.Second

func TestForgedAcceptIsRefused(t *testing.T) {
	// Arrange: a formed cell, a claimed writer with three records, and the
	// attacker's reconnaissance.
	c := newCell(t)
	id := mustID(t, c.initCell())
	jpb := wire.JournalIDToPB(id)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	conn := c.dial(ctx, c.procs)
	w, want := claimWithRecords(t, ctx, conn.Journal(id), 3)
	defer w.Close()
	r := reconnoitre(t, ctx, conn, id)
	if r.uuid != w.Fence() || r.next != w.NextSeq() {
		t.Fatalf("Inspect shows writer %v at position %d; the writer is %v at %d", r.uuid, r.next, w.Fence(), w.NextSeq())
	}
	ids := make([]uint64, len(c.procs))
	for i, p := range c.procs {
		ids[i] = c.node(p).NodeID
	}
	ballot := paxos.Ballot{Round: r.promisedRound + forgedRoundLead}
	t.Logf("reconnaissance: machine %d leads, chosen index %d, highest promised round %d, writer %v at position %d; forging round %d",
		r.leader+1, r.chosen, r.promisedRound, r.uuid, r.next, ballot.Round)

	// Act: every machine is sent the forged Accept and Commit, in the name
	// of the leader (of another member when it is the leader), four ways.
	for i, target := range c.procs {
		claimed := r.leader
		if i == r.leader {
			claimed = (i + 1) % len(c.procs)
		}
		insider := 0 + 1 + 2 - i - claimed // of machines 0, 1, 2: neither the target nor the one claimed
		ballot.Node = paxos.NodeID(ids[claimed])
		forge := func(deliverFrom, msgFrom int) []*pb.Deliver {
			return forgedDelivers(t, jpb, ids[deliverFrom], ids[msgFrom], ids[i], ballot, r)
		}
		stranger := strangerConn(t, c, target)
		attacks := []struct {
			name     string
			conn     *grpc.ClientConn
			token    string
			delivers []*pb.Deliver
			want     codes.Code
			says     string
		}{
			{"TLS without a certificate or a token", stranger, "", forge(claimed, claimed),
				codes.Unauthenticated, "no credential"},
			{"TLS without a certificate, with an admin token", stranger, c.token, forge(claimed, claimed),
				codes.PermissionDenied, "may not call"},
			{fmt.Sprintf("machine %d's certificate, Deliver and messages from machine %d", insider+1, claimed+1),
				c.peerConn(target, c.procs[insider]), "", forge(claimed, claimed),
				codes.PermissionDenied, "sent a Deliver from"},
			{fmt.Sprintf("machine %d's certificate, messages from machine %d", insider+1, claimed+1),
				c.peerConn(target, c.procs[insider]), "", forge(insider, claimed),
				codes.PermissionDenied, "sent a message from"},
		}
		for _, a := range attacks {
			err := sendPeer(ctx, a.conn, a.token, a.delivers)
			if status.Code(err) != a.want || !strings.Contains(err.Error(), a.says) {
				t.Errorf("machine %d, %s: the forged Accept was answered %v; want %v saying %q",
					i+1, a.name, err, a.want, a.says)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// Check: the writer's next write lands where it expected, no machine
	// promised the forged ballot's round, every machine reads back exactly
	// the real records, and every machine still runs.
	seq, err := w.Append(ctx, []byte("after"))
	if err != nil || seq != r.next {
		t.Fatalf("the writer's write after the attack: position %d, %v; want position %d", seq, err, r.next)
	}
	want = append(want, []byte("after"))
	for i, st := range inspect(ctx, conn, id) {
		if st.Err != nil {
			t.Fatalf("inspect machine %d: %v", i+1, st.Err)
		}
		if st.Promised.Round >= ballot.Round {
			t.Fatalf("machine %d promised round %d (node %x): the forged round %d reached it", i+1, st.Promised.Round, st.Promised.Node, ballot.Round)
		}
	}
	for i, p := range c.procs {
		got := readBack(t, ctx, c, p, id, w.NextSeq())
		for k, rec := range got {
			if bytes.Equal(rec, forgedRecord) {
				t.Fatalf("machine %d holds the forged record at position %d", i+1, journal.FirstSeq+journal.Seq(k))
			}
		}
		if !slices.EqualFunc(got, want, bytes.Equal) {
			t.Fatalf("machine %d reads back %q, want %q", i+1, got, want)
		}
	}
	checkRunning(t, c)
}

// recon is what an attacker learns of a journal with Admin.Inspect.
type recon struct {
	leader        int // index of the leading machine
	chosen        uint64
	promisedRound uint64 // the highest any machine promised
	uuid          journal.LeaderUUID
	next          journal.Seq
}

// reconnoitre inspects journal id until its leader has applied every slot
// it chose, and returns what it learned.
func reconnoitre(t *testing.T, ctx context.Context, admin *client.Client, id journal.ID) recon {
	t.Helper()
	for {
		leader := waitRole(t, ctx, admin, id, "leader")
		sts := inspect(ctx, admin, id)
		if l := sts[leader]; l.Err == nil && l.Role == "leader" && l.Applied == l.ChosenIndex {
			r := recon{leader: leader, chosen: l.ChosenIndex, uuid: l.View.Leader, next: l.View.NextSeq}
			for _, st := range sts {
				r.promisedRound = max(r.promisedRound, st.Promised.Round)
			}
			return r
		}
		if ctx.Err() != nil {
			t.Fatalf("inspect %s: no settled leader", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// forgedDelivers returns the attack on machine to: one Deliver from
// deliverFrom holding an Accept, from msgFrom, of a write of forgedRecord
// under the real writer's uuid at its next position, for the slot after
// the chosen index at ballot b; then one holding a Commit of that slot.
// Both are well-formed (they decode), so a refusal is about who sent them.
func forgedDelivers(t *testing.T, jid *pb.JournalId, deliverFrom, msgFrom, to uint64, b paxos.Ballot, r recon) []*pb.Deliver {
	t.Helper()
	slot := r.chosen + 1
	write := journal.Write(journal.Entry{Leader: r.uuid, Seq: r.next, Records: [][]byte{forgedRecord}})
	msgs := []paxos.Message{
		{Type: paxos.MsgAccept, From: paxos.NodeID(msgFrom), To: paxos.NodeID(to), Ballot: b, Commit: r.chosen,
			Entries: []paxos.SlotCommand{{Slot: slot, Ballot: b, Command: write}}},
		{Type: paxos.MsgCommit, From: paxos.NodeID(msgFrom), To: paxos.NodeID(to), Ballot: b, Commit: slot},
	}
	var out []*pb.Deliver
	for _, m := range msgs {
		d := &pb.Deliver{From: deliverFrom, Envelopes: []*pb.Envelope{{Journal: jid, Msg: wire.MessageToPB(m)}}}
		if deliverFrom == msgFrom {
			if _, _, err := wire.DeliverFromPB(d); err != nil {
				t.Fatalf("the forged %s does not decode: %v", m.Type, err)
			}
		}
		out = append(out, d)
	}
	return out
}

// sendPeer opens a Peer stream on cc, presenting token when set, sends
// delivers and returns how the server ended the stream. A Peer server
// never answers a Deliver, so a stream it let in ends only at
// peerAttackTimeout (DeadlineExceeded).
func sendPeer(ctx context.Context, cc *grpc.ClientConn, token string, delivers []*pb.Deliver) error {
	ctx, cancel := context.WithTimeout(ctx, peerAttackTimeout)
	defer cancel()
	if token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	stream, err := pb.NewPeerClient(cc).Stream(ctx)
	if err != nil {
		return err
	}
	for _, d := range delivers {
		if stream.Send(d) != nil {
			break // the server ended the stream: Recv says how
		}
	}
	_, err = stream.Recv()
	if err == nil {
		err = errors.New("the server acknowledged the forged Deliver")
	}
	return err
}

// strangerConn dials p over TLS trusting the cell's CA and presenting no
// certificate: a client's transport, or an attacker's.
func strangerConn(t *testing.T, c *cell, p *proc) *grpc.ClientConn {
	t.Helper()
	cfg, err := security.ClientConfigFile(c.caFile)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(p.addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// readBack reads journal id from machine p alone, positions FirstSeq up to
// end, waiting while p is not caught up enough to serve them.
func readBack(t *testing.T, ctx context.Context, c *cell, p *proc, id journal.ID, end journal.Seq) [][]byte {
	t.Helper()
	r := c.dial(ctx, []*proc{p}).Journal(id).NewReader(journal.FirstSeq, client.WithTailWait(0))
	var got [][]byte
	for r.Cursor() < end {
		at := r.Cursor()
		recs, err := r.Next(ctx)
		if errors.Is(err, client.ErrUnavailable) && ctx.Err() == nil {
			continue // not caught up yet: the cursor did not move
		}
		if err != nil {
			t.Fatalf("read %s at %d from %s: %v", id, at, p.addr, err)
		}
		for _, rec := range recs {
			got = append(got, rec.Data)
		}
	}
	return got
}

// checkRunning fails the test if a machine of c exited.
func checkRunning(t *testing.T, c *cell) {
	t.Helper()
	for i, p := range c.procs {
		select {
		case err := <-p.done:
			t.Fatalf("machine %d exited: %v\n%s", i+1, err, p.stderr)
		default:
		}
	}
}

func TestDataCallsNeedACredential(t *testing.T) {
	// Arrange: a formed cell with a claimed writer and one record, a
	// read-only token of the journal and a read-write token of another.
	c := newCell(t)
	ref := c.initCell()
	id := mustID(t, ref)
	jpb := wire.JournalIDToPB(id)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	admin := c.dial(ctx, c.procs)
	w := admin.Journal(id).NewWriter()
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatalf("claim: %v", err)
	}
	if _, err := w.Append(ctx, []byte("real")); err != nil {
		t.Fatalf("append: %v", err)
	}
	fence, next := w.Fence(), w.NextSeq()
	other := journal.ID{Tenant: id.Tenant, Journal: id.Journal + 1}
	if other.Journal == 0 {
		other.Journal = 1
	}
	readOnly := c.paros("cert", "token", "--ca", c.caDir, "--subject", "read-only", "--journal", ref, "--ops", "read", "--ttl", "1h")
	elsewhere := c.paros("cert", "token", "--ca", c.caDir, "--subject", "elsewhere", "--journal", other.String(), "--ops", "read,write", "--ttl", "1h")
	var addrs []string
	for _, p := range c.procs {
		addrs = append(addrs, p.public())
	}

	// Act and check: a Client dialled with no token is refused at Dial
	// (Dial asks every server Admin.Inspect, which needs a principal).
	if _, err := client.Dial(ctx, addrs, client.WithCAFile(c.caFile)); !errors.Is(err, client.ErrDenied) || status.Code(err) != codes.Unauthenticated {
		t.Fatalf("Dial without a token: %v; want ErrDenied, Unauthenticated", err)
	}
	callers := []struct {
		name string
		// opts dial the library's Client. Without a credential, the admin
		// token rides on Admin.Inspect alone (Dial and NotLeader hints
		// need it), so the journal calls carry none.
		opts []client.Option
		// token is what the raw stubs present ("": none).
		token string
		// mutate is the answer to Write, Truncate, SetLeader and
		// WriteStream; read the answer to Read (codes.OK: served).
		mutate, read codes.Code
	}{
		{"no credential", []client.Option{client.WithCAFile(c.caFile),
			client.WithDialOptions(grpc.WithChainUnaryInterceptor(tokenOnInspectOnly(c.token)))},
			"", codes.Unauthenticated, codes.Unauthenticated},
		{"a read-only token", []client.Option{client.WithCAFile(c.caFile), client.WithToken(readOnly)},
			readOnly, codes.PermissionDenied, codes.OK},
		{"a token of another journal", []client.Option{client.WithCAFile(c.caFile), client.WithToken(elsewhere)},
			elsewhere, codes.PermissionDenied, codes.PermissionDenied},
	}
	intruder := journal.LeaderUUID{Hi: 0xbad, Lo: 1}
	for _, cred := range callers {
		t.Run(strings.ReplaceAll(cred.name, " ", "_"), func(t *testing.T) {
			// The client library.
			cl, err := client.Dial(ctx, addrs, cred.opts...)
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer cl.Close()
			j := cl.Journal(id)
			_, err = j.Write(ctx, journal.WriteRequest{Leader: fence, Seq: next, Records: [][]byte{[]byte("intruder")}})
			wantDenied(t, "library Write", err, cred.mutate)
			_, err = j.Truncate(ctx, journal.TruncateRequest{Leader: fence, UpTo: next})
			wantDenied(t, "library Truncate", err, cred.mutate)
			_, err = j.SetLeader(ctx, journal.SetLeaderRequest{New: intruder, Old: fence})
			wantDenied(t, "library SetLeader", err, cred.mutate)
			claimer := j.NewWriter()
			wantDenied(t, "library Writer.Claim", claimer.Claim(ctx), cred.mutate)
			claimer.Close()
			rr, err := j.Read(ctx, journal.ReadRequest{FromSeq: journal.FirstSeq})
			if cred.read == codes.OK {
				if err != nil || !rr.Served || len(rr.Records) != 1 || string(rr.Records[0]) != "real" {
					t.Errorf("library Read: %+v, %v; want the record \"real\"", rr, err)
				}
			} else {
				wantDenied(t, "library Read", err, cred.read)
			}

			// Raw stubs, at every machine.
			for i, p := range c.procs {
				rctx := ctx
				if cred.token != "" {
					rctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+cred.token)
				}
				stub := pb.NewJournalClient(strangerConn(t, c, p))
				wr := &pb.WriteRequest{Journal: jpb, Leader: wire.UUIDToPB(fence), Seq: uint64(next), Records: [][]byte{[]byte("intruder")}}
				_, err := stub.Write(rctx, wr)
				wantCode(t, fmt.Sprintf("machine %d: raw Write", i+1), err, cred.mutate)
				_, err = stub.Truncate(rctx, &pb.TruncateRequest{Journal: jpb, Leader: wire.UUIDToPB(fence), UpTo: uint64(next)})
				wantCode(t, fmt.Sprintf("machine %d: raw Truncate", i+1), err, cred.mutate)
				_, err = stub.SetLeader(rctx, &pb.SetLeaderRequest{Journal: jpb, NewLeader: wire.UUIDToPB(intruder), OldLeader: wire.UUIDToPB(fence)})
				wantCode(t, fmt.Sprintf("machine %d: raw SetLeader", i+1), err, cred.mutate)
				wantCode(t, fmt.Sprintf("machine %d: raw WriteStream", i+1), rawWriteStream(rctx, stub, wr), cred.mutate)
				_, err = stub.Read(rctx, &pb.ReadRequest{Journal: jpb, FromSeq: uint64(journal.FirstSeq)})
				wantCode(t, fmt.Sprintf("machine %d: raw Read", i+1), err, cred.read)
			}
		})
	}

	// Check: nothing moved. The writer still holds the journal and its
	// next write lands at the next position; the journal holds only its
	// records.
	seq, err := w.Append(ctx, []byte("after"))
	if err != nil || seq != next {
		t.Fatalf("the writer's write after the refused calls: position %d, %v; want position %d", seq, err, next)
	}
	want := [][]byte{[]byte("real"), []byte("after")}
	if got := readBack(t, ctx, c, c.procs[0], id, w.NextSeq()); !slices.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("the journal reads back %q, want %q", got, want)
	}
	checkRunning(t, c)
}

// tokenOnInspectOnly presents token on Admin.Inspect calls only.
func tokenOnInspectOnly(token string) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if method == pb.Admin_Inspect_FullMethodName {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
}

// rawWriteStream sends wr on a new WriteStream and returns how the server
// ended it (nil if it answered).
func rawWriteStream(ctx context.Context, stub pb.JournalClient, wr *pb.WriteRequest) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	stream, err := stub.WriteStream(ctx)
	if err != nil {
		return err
	}
	if stream.Send(&pb.WriteStreamRequest{Writes: []*pb.StreamWrite{{Id: 1, Write: wr}}}) == nil {
		_ = stream.CloseSend()
	}
	_, err = stream.Recv()
	return err
}

// wantDenied checks that a library call was refused as ErrDenied with code.
func wantDenied(t *testing.T, what string, err error, code codes.Code) {
	t.Helper()
	if !errors.Is(err, client.ErrDenied) || status.Code(err) != code {
		t.Errorf("%s: %v; want ErrDenied, %v", what, err, code)
	}
}

// wantCode checks a raw call's status code (codes.OK: no error).
func wantCode(t *testing.T, what string, err error, code codes.Code) {
	t.Helper()
	if status.Code(err) != code {
		t.Errorf("%s: %v; want %v", what, err, code)
	}
}

// Bounds of TestCellServesThroughIdleAndSlowConnections.
const (
	// idleConnsWanted is how many idle TCP connections the test holds open
	// to the leader, if the file descriptor limits allow.
	idleConnsWanted = 500
	// fdsSpare is the file descriptors left free beside the idle
	// connections, in the test process and in the machine.
	fdsSpare = 256
	// appendsUnderLoad is how many appends run while the connections are
	// held, one every appendPace at most; each must take under
	// appendLatencyMax. The pace spreads them over the server's handshake
	// timeout, so that they also run while it drops every idle connection
	// at once and the test dials them all again.
	appendsUnderLoad = 200
	appendPace       = 30 * time.Millisecond
	appendLatencyMax = 2 * time.Second
	// slowByteEvery is a slowloris client's pace: one byte per tick.
	slowByteEvery = 500 * time.Millisecond
	// slowCloseMax is how soon the server must drop a connection that does
	// not finish its handshake: its handshake timeout (5 s) and slack.
	slowCloseMax = 10 * time.Second
	// slowReadMax is when a slowloris client stops waiting for the server
	// to close its connection (a connection it gives up on counts as
	// kept open).
	slowReadMax = 2 * slowCloseMax
)

func TestCellServesThroughIdleAndSlowConnections(t *testing.T) {
	// Arrange: a formed cell, a claimed writer, the leader, and how many
	// idle connections fit in both processes' file descriptor limits.
	c := newCell(t)
	id := mustID(t, c.initCell())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn := c.dial(ctx, c.procs)
	w := conn.Journal(id).NewWriter()
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatalf("claim: %v", err)
	}
	leader := waitRole(t, ctx, conn, id, "leader")
	target := c.procs[leader]
	pid := target.cmd.Process.Pid
	n := idleConnsFitting(t, pid)
	tlsCfg, err := security.ClientConfigFile(c.caFile)
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ := net.SplitHostPort(target.addr)
	tlsCfg.ServerName, tlsCfg.NextProtos = host, []string{"h2"}
	hello := clientHello(t, tlsCfg)

	// Act: hold n idle connections to the leader and run both slowloris
	// clients at it; once the n are open, append one record at a time,
	// through the moment the server drops the first idle connections.
	attackCtx, stopAttack := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopAttack(); wg.Wait() }()
	idle := &connStats{}
	for range n {
		wg.Go(func() { holdIdle(attackCtx, target.addr, idle) })
	}
	slowHello := &connStats{}
	wg.Go(func() {
		for attackCtx.Err() == nil {
			slowloris(attackCtx, target.addr, nil, hello, slowHello)
		}
	})
	slowPreface := &connStats{}
	wg.Go(func() {
		for attackCtx.Err() == nil {
			slowloris(attackCtx, target.addr, tlsCfg, []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), slowPreface)
		}
	})
	for idle.open.Load() < int64(n) {
		if ctx.Err() != nil {
			t.Fatalf("only %d of %d idle connections opened (%d dials failed)", idle.open.Load(), n, idle.dialErrs.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		t.Logf("%d idle connections open to machine %d; it holds %d file descriptors", n, leader+1, len(fds))
	}
	first, appendsFrom := w.NextSeq(), time.Now()
	latencies := make([]time.Duration, 0, appendsUnderLoad)
	fewestOpen := int64(n)
	for i := range appendsUnderLoad {
		start := time.Now()
		if _, err := w.Append(ctx, fmt.Appendf(nil, "load-%d", i)); err != nil {
			t.Fatalf("append %d of %d while the connections are held: %v", i+1, appendsUnderLoad, err)
		}
		latencies = append(latencies, time.Since(start))
		fewestOpen = min(fewestOpen, idle.open.Load())
		time.Sleep(time.Until(start.Add(appendPace)))
	}
	appendsTook := time.Since(appendsFrom)
	// Every kind of connection is seen closed at least once.
	for slowHello.closedCount() == 0 || slowPreface.closedCount() == 0 || idle.closedCount() == 0 {
		if ctx.Err() != nil {
			t.Fatalf("the server closed %d slow ClientHellos, %d slow prefaces and %d idle connections before the deadline",
				slowHello.closedCount(), slowPreface.closedCount(), idle.closedCount())
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopAttack()
	wg.Wait()

	// Check: no append failed or took appendLatencyMax, every connection
	// that did not complete its handshake was closed by the server within
	// slowCloseMax, every append reads back, and every machine runs.
	slices.Sort(latencies)
	quantile := func(q float64) time.Duration {
		return latencies[int(math.Ceil(q*float64(len(latencies))))-1]
	}
	t.Logf("%d appends over %v while %d to %d idle connections were open: p50 %v, p99 %v, max %v",
		len(latencies), appendsTook.Round(time.Millisecond), fewestOpen, n, quantile(0.5), quantile(0.99), latencies[len(latencies)-1])
	if worst := latencies[len(latencies)-1]; worst >= appendLatencyMax {
		t.Errorf("an append took %v, want under %v", worst, appendLatencyMax)
	}
	for _, k := range []struct {
		name string
		s    *connStats
	}{{"idle connection", idle}, {"slow ClientHello", slowHello}, {"slow HTTP/2 preface", slowPreface}} {
		closed, kept, longest, failed := k.s.summary()
		t.Logf("%s: %d closed by the server (the longest after %v), %d kept open past %v, %d failed otherwise",
			k.name, closed, longest.Round(time.Millisecond), kept, slowReadMax, failed)
		if kept > 0 || longest > slowCloseMax || failed > 0 {
			t.Errorf("%s: %d kept open, the longest closed after %v, %d failed otherwise; want every one closed by the server within %v",
				k.name, kept, longest, failed, slowCloseMax)
		}
	}
	r := conn.Journal(id).NewReader(first, client.WithTailWait(0))
	for k := 0; k < appendsUnderLoad; {
		recs, err := r.Next(ctx)
		if err != nil {
			t.Fatalf("read at %d: %v", r.Cursor(), err)
		}
		for _, rec := range recs {
			if want := fmt.Sprintf("load-%d", k); string(rec.Data) != want {
				t.Fatalf("position %d reads back %q, want %q", rec.Seq, rec.Data, want)
			}
			k++
		}
	}
	checkRunning(t, c)
}

// connStats counts one kind of hostile connection.
type connStats struct {
	open     atomic.Int64 // connections open now
	dialErrs atomic.Int64

	mu sync.Mutex
	// closedAfter is how long each connection the server closed lived
	// (from the dial); kept counts those still open after slowReadMax;
	// failed those that ended another way (a failed TLS handshake).
	closedAfter  []time.Duration
	kept, failed int
}

func (s *connStats) closedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.closedAfter)
}

func (s *connStats) summary() (closed, kept int, longest time.Duration, failed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.closedAfter {
		longest = max(longest, d)
	}
	return len(s.closedAfter), s.kept, longest, s.failed
}

// ended records how a connection dialled at start ended: err is what its
// read returned, or nil when the test closed it.
func (s *connStats) ended(start time.Time, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil:
	case errors.Is(err, os.ErrDeadlineExceeded):
		s.kept++
	default:
		s.closedAfter = append(s.closedAfter, time.Since(start))
	}
}

// holdIdle keeps one plain TCP connection open to addr, sending nothing,
// until ctx ends; when the server closes it, it dials again.
func holdIdle(ctx context.Context, addr string, s *connStats) {
	var d net.Dialer
	buf := make([]byte, 64)
	for ctx.Err() == nil {
		start := time.Now()
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			if ctx.Err() == nil {
				s.dialErrs.Add(1)
				time.Sleep(50 * time.Millisecond)
			}
			continue
		}
		s.open.Add(1)
		stop := context.AfterFunc(ctx, func() { conn.Close() })
		_ = conn.SetReadDeadline(start.Add(slowReadMax))
		_, err = conn.Read(buf)
		s.open.Add(-1)
		if !stop() {
			err = nil // the test closed it
		}
		conn.Close()
		s.ended(start, err)
	}
}

// slowloris dials addr, completes a TLS handshake over it when cfg is set,
// then sends payload one byte every slowByteEvery, and records when the
// server closes the connection. It returns when the server closed it,
// after slowReadMax, or when ctx ends.
func slowloris(ctx context.Context, addr string, cfg *tls.Config, payload []byte, s *connStats) {
	start := time.Now()
	raw, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, "tcp", addr)
	if err != nil {
		if ctx.Err() == nil {
			s.dialErrs.Add(1)
			time.Sleep(50 * time.Millisecond)
		}
		return
	}
	defer raw.Close()
	var conn net.Conn = raw
	if cfg != nil {
		tc := tls.Client(raw, cfg)
		hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				s.mu.Lock()
				s.failed++
				s.mu.Unlock()
			}
			return
		}
		conn = tc
	}
	_ = raw.SetReadDeadline(start.Add(slowReadMax))
	closed := make(chan error, 1)
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := conn.Read(buf); err != nil {
				closed <- err
				return
			}
		}
	}()
	tick := time.NewTicker(slowByteEvery)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case err := <-closed:
			s.ended(start, err)
			return
		case <-ctx.Done():
			raw.Close()
			<-closed
			return
		case <-tick.C:
			if i < len(payload) {
				// An error here is the server's close; the read reports it.
				_, _ = conn.Write(payload[i : i+1])
			}
		}
	}
}

// clientHello returns the first TLS record a client dialling with cfg
// sends: its ClientHello.
func clientHello(t *testing.T, cfg *tls.Config) []byte {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() { _ = tls.Client(a, cfg).Handshake() }()
	_ = b.SetReadDeadline(time.Now().Add(5 * time.Second))
	hdr := make([]byte, 5)
	if _, err := io.ReadFull(b, hdr); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, int(hdr[3])<<8|int(hdr[4]))
	if _, err := io.ReadFull(b, body); err != nil {
		t.Fatal(err)
	}
	if hdr[0] != 22 || len(body) == 0 || body[0] != 1 { // handshake record, client_hello
		t.Fatalf("the first TLS record is not a ClientHello: % x", hdr)
	}
	return append(hdr, body...)
}

// idleConnsFitting returns how many idle connections (idleConnsWanted at
// most) fit, with fdsSpare to spare, in the file descriptor limits of this
// process and of the machine pid, as /proc shows them; where /proc cannot
// be read the limit is not checked, and the log says so.
func idleConnsFitting(t *testing.T, pid int) int {
	t.Helper()
	n := idleConnsWanted
	for _, who := range []string{"self", strconv.Itoa(pid)} {
		limit, open, err := fdUse(who)
		if err != nil {
			t.Logf("the file descriptor limit of process %s was not checked: %v", who, err)
			continue
		}
		t.Logf("process %s: %d file descriptors open, at most %d", who, open, limit)
		if fit := limit - open - fdsSpare; fit < n {
			n = fit
		}
	}
	if n < 1 {
		t.Fatalf("no idle connection fits in the file descriptor limits")
	}
	if n < idleConnsWanted {
		t.Logf("only %d idle connections fit in the file descriptor limits, not %d", n, idleConnsWanted)
	}
	return n
}

// fdUse reads process who's soft limit on open files and how many it has
// open, from /proc (Linux).
func fdUse(who string) (limit, open int, err error) {
	raw, err := os.ReadFile("/proc/" + who + "/limits")
	if err != nil {
		return 0, 0, err
	}
	limit = -1
	for line := range strings.Lines(string(raw)) {
		rest, ok := strings.CutPrefix(line, "Max open files")
		if f := strings.Fields(rest); ok && len(f) > 0 {
			if f[0] == "unlimited" {
				limit = math.MaxInt32
			} else if limit, err = strconv.Atoi(f[0]); err != nil {
				return 0, 0, err
			}
		}
	}
	if limit < 0 {
		return 0, 0, fmt.Errorf("no \"Max open files\" in /proc/%s/limits", who)
	}
	fds, err := os.ReadDir("/proc/" + who + "/fd")
	if err != nil {
		return 0, 0, err
	}
	return limit, len(fds), nil
}
