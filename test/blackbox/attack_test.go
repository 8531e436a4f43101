package blackbox

// This file holds the forged-Accept test and the helpers shared by the
// attack tests.
//
// The tests in attack_*_test.go play the hostile-input probe's attacks
// against a real secure cell (three `paros serve` processes with TLS, see
// cell_test.go) and then check the cell is intact: every machine still
// runs, the real writer's next write lands at the position it expected, and
// the journal reads back with exactly the records written.
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

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
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
