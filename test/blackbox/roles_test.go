package blackbox

// TestACertificateIsNotARole replays the forgeries a certificate of the
// cell's CA made possible: on a secure cell of three nodes, a replica and a
// proxy, each holder of a real credential sends every node an Accept of a
// write under the real writer's uuid at its next position, for the slot
// after the chosen index, at the leader's own ballot, then a Commit of that
// slot, each speaking as itself:
//
//   - the replica's certificate: the Peer stream is ended PermissionDenied
//     ("never sends Accept"): a replica sends no Phase 2;
//   - the proxy's certificate, naming no leader and naming a member that
//     does not lead: let in by the edge (a proxy does send Accepts), dropped
//     by the core (a proxy speaks only for the ballot's leader); its
//     Prepare is ended PermissionDenied;
//   - a member that does not lead: let in by the edge, dropped by the core
//     (only the ballot's owner, or the successor it named, speaks at it);
//   - a certificate of the CA for a machine the cell never admitted: ended
//     PermissionDenied ("no machine of this cell").
//
// Afterwards the writer's next write lands where it expected, every node
// and the replica read back exactly the real records, the leader is the one
// before, and every process still runs.

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/wire"
)

func TestACertificateIsNotARole(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cell of five processes")
	}
	// Arrange: three nodes, a replica and a proxy, formed with both named;
	// a stranger's credentials issued by the same CA; a claimed writer.
	c, nodes, replica, proxy := newCellWithReplicaAndProxy(t)
	base := filepath.Dir(filepath.Dir(c.caDir))
	stranger := &proc{addr: freeAddr(t)}
	c.issue(stranger, filepath.Join(base, "pki", "stranger")) // never started, never admitted
	id := mustID(t, c.initArgs("--members", joinAddrs(nodes), "--replicas", replica.public(), "--proxies", proxy.public()))
	jpb := wire.JournalIDToPB(id)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admin := c.dial(ctx, nodes)
	w, want := claimWithRecords(t, ctx, admin.Journal(id), 3)
	defer w.Close()
	r := reconnoitre(t, ctx, admin, id)
	lst := inspect(ctx, admin, id)[r.leader]
	ballot := paxos.Ballot{Round: lst.Promised.Round, Node: paxos.NodeID(lst.Promised.Node)}
	if ballot.Node != paxos.NodeID(c.node(nodes[r.leader]).NodeID) {
		t.Fatalf("the leader, machine %d, has promised %s, not a ballot of its own", r.leader+1, ballot)
	}
	insider := nodes[(r.leader+1)%len(nodes)]
	other := c.node(nodes[(r.leader+2)%len(nodes)]).NodeID // a member that does not lead
	t.Logf("machine %d leads at %s, chosen index %d, writer %v at position %d", r.leader+1, ballot, r.chosen, r.uuid, r.next)

	// Act: every attack on every node, at once (an attack the edge lets in
	// holds its stream open until peerAttackTimeout).
	type attack struct {
		name     string
		as       *proc
		delivers func(to uint64) []*pb.Deliver
		// want is how the stream must end; says, what the refusal names.
		want codes.Code
		says string
	}
	idOf := func(p *proc) uint64 { return c.node(p).NodeID }
	attacks := []attack{
		{"the replica's certificate", replica, func(to uint64) []*pb.Deliver {
			return roleForgery(jpb, idOf(replica), to, ballot, 0, r)
		}, codes.PermissionDenied, "never sends Accept"},
		{"the proxy's certificate, naming no leader", proxy, func(to uint64) []*pb.Deliver {
			return roleForgery(jpb, idOf(proxy), to, ballot, 0, r)
		}, codes.DeadlineExceeded, ""},
		{"the proxy's certificate, naming a member that does not lead", proxy, func(to uint64) []*pb.Deliver {
			return roleForgery(jpb, idOf(proxy), to, ballot, paxos.NodeID(other), r)
		}, codes.DeadlineExceeded, ""},
		{"the proxy's certificate, a Prepare", proxy, func(to uint64) []*pb.Deliver {
			m := paxos.Message{Type: paxos.MsgPrepare, From: paxos.NodeID(idOf(proxy)), To: paxos.NodeID(to),
				Ballot: paxos.Ballot{Round: ballot.Round + 1, Node: paxos.NodeID(idOf(proxy))}, Slot: paxos.Slot(r.chosen + 1)}
			return []*pb.Deliver{{From: idOf(proxy), Envelopes: []*pb.Envelope{{Journal: jpb, Msg: wire.MessageToPB(m)}}}}
		}, codes.PermissionDenied, "never sends Prepare"},
		{"a member that does not lead", insider, func(to uint64) []*pb.Deliver {
			return roleForgery(jpb, idOf(insider), to, ballot, 0, r)
		}, codes.DeadlineExceeded, ""},
		{"a certificate the cell never admitted", stranger, func(to uint64) []*pb.Deliver {
			return roleForgery(jpb, idOf(stranger), to, ballot, 0, r)
		}, codes.PermissionDenied, "no machine of this cell"},
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, target := range nodes {
		for _, a := range attacks {
			if a.as == target {
				continue
			}
			conn := c.peerConn(target, a.as)
			wg.Go(func() {
				err := sendPeer(ctx, conn, "", a.delivers(idOf(target)))
				if status.Code(err) != a.want || !strings.Contains(err.Error(), a.says) {
					mu.Lock()
					defer mu.Unlock()
					t.Errorf("machine %d, %s: the forgery was answered %v; want %v saying %q", i+1, a.name, err, a.want, a.says)
				}
			})
		}
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// Check: the writer's next write lands where it expected, the leader
	// did not move, and every node and the replica read back exactly the
	// real records.
	seq, err := w.Append(ctx, []byte("after"))
	if err != nil || seq != r.next {
		t.Fatalf("the writer's write after the attack: position %d, %v; want position %d", seq, err, r.next)
	}
	want = append(want, []byte("after"))
	if now := reconnoitre(t, ctx, admin, id); now.leader != r.leader {
		t.Fatalf("the leader moved from machine %d to machine %d", r.leader+1, now.leader+1)
	}
	for _, p := range append(slices.Clone(nodes), replica) {
		got := readBack(t, ctx, c, p, id, w.NextSeq())
		if slices.ContainsFunc(got, func(rec []byte) bool { return bytes.Equal(rec, forgedRecord) }) {
			t.Fatalf("%s holds the forged record", p.addr)
		}
		if !slices.EqualFunc(got, want, bytes.Equal) {
			t.Fatalf("%s reads back %q, want %q", p.addr, got, want)
		}
	}
	checkRunning(t, c)
}

// roleForgery is the attack on machine to by machine from, speaking as
// itself: an Accept of a write of forgedRecord under the real writer's uuid
// at its next position, for the slot after the chosen index at ballot b
// (naming leader, as a proxy's fan-out does, when set), then a Commit of
// that slot (a proxy's names the value's fingerprint).
func roleForgery(jid *pb.JournalId, from, to uint64, b paxos.Ballot, leader paxos.NodeID, r recon) []*pb.Deliver {
	slot := paxos.Slot(r.chosen + 1)
	write := journal.Write(journal.Entry{Leader: r.uuid, Seq: r.next, Records: [][]byte{forgedRecord}})
	accept := paxos.Message{Type: paxos.MsgAccept, From: paxos.NodeID(from), To: paxos.NodeID(to), Ballot: b, Leader: leader,
		Commit: paxos.Slot(r.chosen), Entries: []paxos.SlotCommand{{Slot: slot, Ballot: b, Command: write}}}
	commit := paxos.Message{Type: paxos.MsgCommit, From: paxos.NodeID(from), To: paxos.NodeID(to), Ballot: b, Commit: slot}
	if leader != 0 {
		commit = paxos.Message{Type: paxos.MsgCommit, From: paxos.NodeID(from), To: paxos.NodeID(to), Ballot: b, Leader: leader,
			Votes: []paxos.SlotVote{{Slot: slot, VHash: write.Fingerprint()}}}
	}
	var out []*pb.Deliver
	for _, m := range []paxos.Message{accept, commit} {
		out = append(out, &pb.Deliver{From: from, Envelopes: []*pb.Envelope{{Journal: jid, Msg: wire.MessageToPB(m)}}})
	}
	return out
}

// newCellWithReplicaAndProxy starts a secure cell of three nodes, a replica
// and a proxy (not yet formed) and returns it with its nodes and the two.
func newCellWithReplicaAndProxy(t *testing.T) (c *cell, nodes []*proc, replica, proxy *proc) {
	t.Helper()
	c = newCell(t)
	nodes = slices.Clone(c.procs)
	base := filepath.Dir(filepath.Dir(c.caDir))
	replica = &proc{addr: freeAddr(t), data: filepath.Join(base, "r1"), args: []string{"--role", "replica"}}
	proxy = &proc{addr: freeAddr(t), data: filepath.Join(base, "x1"), args: []string{"--role", "proxy"}}
	for _, p := range []*proc{replica, proxy} {
		c.issue(p, filepath.Join(base, "pki", filepath.Base(p.data)))
		c.start(p)
		c.procs = append(c.procs, p) // stopped by the cell's cleanup
	}
	return c, nodes, replica, proxy
}

// claimWithRecords claims j with a new Writer and appends n records
// ("before-0", …), returning the Writer (the caller closes it) and them.
func claimWithRecords(t *testing.T, ctx context.Context, j *client.Journal, n int) (*client.Writer, [][]byte) {
	t.Helper()
	w := j.NewWriter()
	if err := w.Claim(ctx); err != nil {
		w.Close()
		t.Fatalf("claim: %v", err)
	}
	var recs [][]byte
	for i := range n {
		rec := fmt.Appendf(nil, "before-%d", i)
		if _, err := w.Append(ctx, rec); err != nil {
			w.Close()
			t.Fatalf("append %d: %v", i, err)
		}
		recs = append(recs, rec)
	}
	return w, recs
}
