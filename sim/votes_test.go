package sim

// The vote ledger's rules (votes.go), one case each, on a world of three
// bare stores: no host runs, the test plays the host's part (it names the
// votes of a batch, writes the batch and syncs it as the disk would) and
// then asks the audit what it thinks of the disks.

import (
	"strings"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage/memstore"
)

type ledgerWorld struct {
	t *testing.T
	w *World
	j journal.ID
}

func newLedgerWorld(t *testing.T) *ledgerWorld {
	j := journal.ID{Tenant: 1, Journal: 1}
	w := &World{byID: map[paxos.NodeID]*proc{}}
	w.shape.Journals = []JournalShape{{ID: j}}
	w.rot = newRotLedger(1)
	w.audit = newAudit(w)
	for id := paxos.NodeID(1); id <= 3; id++ {
		p := &proc{w: w, id: id, stores: map[journal.ID]*memstore.Store{j: memstore.New()}}
		w.procs = append(w.procs, p)
		w.byID[id] = p
	}
	return &ledgerWorld{t: t, w: w, j: j}
}

// write hands node id's store one batch: votes names the votes among ops,
// as the host does before it persists.
func (l *ledgerWorld) write(id paxos.NodeID, ops []paxos.WriteOp, votes []paxos.SlotCommand) {
	if len(votes) > 0 {
		l.w.audit.Voted(id, l.j, votes)
	}
	l.w.proc(id).stores[l.j].Append(ops)
}

// sync makes node id's oldest batch durable and tells the audit.
func (l *ledgerWorld) sync(id paxos.NodeID) {
	p := l.w.proc(id)
	batch := p.stores[l.j].PendingFirst()
	p.stores[l.j].SyncFirst()
	l.w.audit.votesSynced(p, l.j, batch)
}

// vote is a vote at (s, b) for cmd, written and synced.
func (l *ledgerWorld) vote(id paxos.NodeID, s paxos.Slot, b paxos.Ballot, cmd journal.Command) {
	l.write(id, []paxos.WriteOp{{Kind: paxos.OpAccept, Slot: s, Ballot: b, Command: cmd}},
		[]paxos.SlotCommand{{Slot: s, Ballot: b, Command: cmd}})
	l.sync(id)
}

// record writes a record that is no vote (kind OpAccept for a learned
// value, OpRewrite for a scrub repair) and syncs it.
func (l *ledgerWorld) record(id paxos.NodeID, kind paxos.OpKind, s paxos.Slot, b paxos.Ballot, cmd journal.Command) {
	l.write(id, []paxos.WriteOp{{Kind: kind, Slot: s, Ballot: b, Command: cmd}}, nil)
	l.sync(id)
}

// expect checks the violations so far: none when claim is empty, else at
// least one, each of claim.
func (l *ledgerWorld) expect(claim string) {
	l.t.Helper()
	l.w.audit.checkEveryStore()
	got := l.w.audit.violations
	if claim == "" {
		if len(got) > 0 {
			l.t.Fatalf("violations: %v", got)
		}
		return
	}
	if len(got) == 0 {
		l.t.Fatalf("no violation, want %q", claim)
	}
	for _, v := range got {
		if !strings.HasPrefix(v, claim+":") {
			l.t.Fatalf("violation %q, want only %q", v, claim)
		}
	}
}

func ledgerCmd(rec string) journal.Command {
	return journal.Write(journal.Entry{Seq: 1, Records: [][]byte{[]byte(rec)}})
}

func TestVoteLedgerRules(t *testing.T) {
	b1, b2 := paxos.Ballot{Round: 1, Node: 1}, paxos.Ballot{Round: 2, Node: 2}
	x, y := ledgerCmd("x"), ledgerCmd("y")
	const claimRot = "acceptor: a damaged durable record is one the rot injector planted"

	t.Run("a vote that reached the disk survives a crash", func(t *testing.T) {
		l := newLedgerWorld(t)
		l.vote(1, 1, b1, x)
		l.w.proc(1).stores[l.j].Crash()
		l.w.audit.votesLost(l.w.proc(1), l.j)
		l.w.audit.checkStores(l.w.proc(1), "boot")
		l.expect("")
	})
	t.Run("a vote lost unsynced in a crash is no vote", func(t *testing.T) {
		l := newLedgerWorld(t)
		l.write(1, []paxos.WriteOp{{Kind: paxos.OpAccept, Slot: 1, Ballot: b1, Command: x}}, []paxos.SlotCommand{{Slot: 1, Ballot: b1, Command: x}})
		l.w.proc(1).stores[l.j].Crash()
		l.w.audit.votesLost(l.w.proc(1), l.j)
		l.record(1, paxos.OpAccept, 1, b1, x)
		l.expect(claimRecords)
	})
	t.Run("a learned copy of a vote another acceptor cast", func(t *testing.T) {
		l := newLedgerWorld(t)
		l.vote(2, 1, b1, x)
		l.vote(3, 1, b1, x)
		l.record(1, paxos.OpAccept, 1, b1, x)
		l.w.audit.chosen[jslot{l.j, 1}] = x
		l.expect("")
	})
	t.Run("a learned copy of a vote for a value not chosen", func(t *testing.T) {
		l := newLedgerWorld(t)
		l.vote(2, 1, b1, x)
		l.record(1, paxos.OpAccept, 1, b1, x)
		l.w.audit.chosen[jslot{l.j, 1}] = y
		l.expect(claimRecords)
	})
	t.Run("a repair written under a ballot nobody voted at", func(t *testing.T) {
		l := newLedgerWorld(t)
		l.vote(1, 1, b1, x)
		l.record(1, paxos.OpRewrite, 1, b2, x)
		l.expect(claimRecords)
	})
	t.Run("a repair written with another value at the voted ballot", func(t *testing.T) {
		l := newLedgerWorld(t)
		l.vote(1, 1, b1, x)
		l.record(1, paxos.OpRewrite, 1, b1, y)
		l.expect(claimRecords)
	})
	t.Run("a repair written as the vote was", func(t *testing.T) {
		l := newLedgerWorld(t)
		l.vote(1, 1, b1, x)
		l.w.plant(l.w.proc(1), l.j, 1, "test")
		l.record(1, paxos.OpRewrite, 1, b1, x)
		l.expect("")
	})
	t.Run("a damaged record the injector planted", func(t *testing.T) {
		l := newLedgerWorld(t)
		l.vote(1, 1, b1, x)
		l.w.plant(l.w.proc(1), l.j, 1, "test")
		l.expect("")
	})
	t.Run("a damaged record nobody planted", func(t *testing.T) {
		l := newLedgerWorld(t)
		l.vote(1, 1, b1, x)
		l.w.proc(1).stores[l.j].Rot(1)
		l.expect(claimRot)
	})
	t.Run("each bad record is reported once", func(t *testing.T) {
		l := newLedgerWorld(t)
		l.record(1, paxos.OpAccept, 1, b1, x)
		l.w.audit.checkStores(l.w.proc(1), "boot")
		l.expect(claimRecords)
		if n := len(l.w.audit.violations); n != 1 {
			t.Fatalf("%d reports of one record: %v", n, l.w.audit.violations)
		}
	})
}
