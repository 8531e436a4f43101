package paxos_test

// This file holds the helpers of the unit tests of the core's small pieces
// (unit_*_test.go), each citing the paper section or design rule it checks.
// A solo node — node 1 of a three-node majority, driven by hand with the
// test playing its peers — carries most of them.

import (
	"strings"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage/memstore"
)

// solo drives node 1 of a three-node majority by hand: the test plays nodes
// 2 and 3, feeds it messages and reads what it sends. Every batch is
// persisted and synced at once unless the test takes Ready itself.
type solo struct {
	t     *testing.T
	node  *paxos.Node
	store *memstore.Store
	cfg   paxos.Config
	opts  paxos.Options
}

func soloOpts() paxos.Options { return paxos.Options{ElectionTicks: 5, HeartbeatTicks: 2} }

func newSolo(t *testing.T, mode journal.WriterMode, opts paxos.Options, st *memstore.Store) *solo {
	t.Helper()
	if st == nil {
		st = memstore.New()
	}
	s := &solo{t: t, store: st, cfg: paxos.Config{ID: 1, Acceptors: majority(3), Mode: mode}, opts: opts}
	s.restart()
	return s
}

// restart boots the node again from its store's durable state.
func (s *solo) restart() {
	s.t.Helper()
	s.store.Crash()
	n, err := paxos.NewNode(s.cfg, s.opts, s.store)
	if err != nil {
		s.t.Fatalf("boot: %v", err)
	}
	s.node = n
}

// flush takes every pending batch, persists and syncs it, and returns the
// union of the batches (copied: the node reuses its buffers).
func (s *solo) flush() paxos.Ready {
	var out paxos.Ready
	for s.node.HasReady() {
		rd := s.node.Ready()
		s.store.Append(rd.Writes)
		s.store.Sync()
		out.Writes = append(out.Writes, rd.Writes...)
		out.MustSync = out.MustSync || rd.MustSync
		out.Messages = append(out.Messages, rd.Messages...)
		out.Applied = append(out.Applied, rd.Applied...)
		out.ReadStates = append(out.ReadStates, rd.ReadStates...)
		out.Votes = append(out.Votes, rd.Votes...)
		s.node.Advance()
		if s.node.WantsElectionTimeout() {
			s.node.SetElectionTimeout(0) // no jitter: the floor, ElectionTicks
		}
	}
	return out
}

func (s *solo) step(m paxos.Message) paxos.Ready {
	s.node.Step(m)
	return s.flush()
}

func (s *solo) tick(n int) paxos.Ready {
	var out paxos.Ready
	for range n {
		s.node.Tick()
		rd := s.flush()
		out.Writes = append(out.Writes, rd.Writes...)
		out.Messages = append(out.Messages, rd.Messages...)
		out.Applied = append(out.Applied, rd.Applied...)
		out.ReadStates = append(out.ReadStates, rd.ReadStates...)
	}
	return out
}

// campaign ticks the node until it campaigns and returns its ballot and the
// Prepares it sent.
func (s *solo) campaign() (paxos.Ballot, []paxos.Message) {
	s.t.Helper()
	var sent []paxos.Message
	for range 100 {
		sent = append(sent, s.tick(1).Messages...)
		if s.node.Role() == "candidate" {
			return s.node.Promised(), ofType(sent, paxos.MsgPrepare)
		}
	}
	s.t.Fatalf("node never campaigned")
	return paxos.Ballot{}, nil
}

// lead wins an election with node 2's (empty) promise.
func (s *solo) lead() paxos.Ballot {
	s.t.Helper()
	b, prepares := s.campaign()
	s.step(paxos.Message{Type: paxos.MsgPromise, From: 2, To: 1, Ballot: b, Slot: prepares[0].Slot})
	if !s.node.IsLeader() {
		s.t.Fatalf("node did not win with node 2's promise")
	}
	return b
}

func ofType(msgs []paxos.Message, typ paxos.MsgType) []paxos.Message {
	var out []paxos.Message
	for _, m := range msgs {
		if m.Type == typ {
			out = append(out, m)
		}
	}
	return out
}

func opKinds(ops []paxos.WriteOp) string {
	var out []string
	for _, op := range ops {
		out = append(out, op.Kind.String())
	}
	return strings.Join(out, " ")
}

func cmdOf(rec string) journal.Command { return unfenced(rec) }

func bal(round uint64, node paxos.NodeID) paxos.Ballot { return paxos.Ballot{Round: round, Node: node} }

// truncatedStore is a store whose log was cut below floor with the journal
// state sealed at next/first (multi-writer: no leader).
func truncatedStore(t *testing.T, floor paxos.Slot, next, first journal.Seq) *memstore.Store {
	t.Helper()
	st, err := journal.Restore(journal.LeaderUUID{}, 0, next, first)
	if err != nil {
		t.Fatal(err)
	}
	s := memstore.New()
	s.Append([]paxos.WriteOp{{Kind: paxos.OpTruncate, Slot: floor, State: st}})
	s.Sync()
	return s
}
