// This file holds the shared helpers of package host's outside tests, one
// rule per test (the Ready contract in docs/design/core.md and
// docs/design/host.md), which live in host_*_test.go: persist before send,
// parked calls and their verdicts, quorum reads and long-polls, the boot
// decision table, quarantine and reopen, routing of Delivers, and the
// tunables' floors. Every test drives hosts by hand through fakeEnv
// (fakeenv_test.go): either one host fed messages crafted as its peers would
// send them, or a three-host cluster whose Sends the test delivers and whose
// persists it completes, one step at a time. Nothing sleeps and nothing runs
// in the background: arrange, act and check are three visible blocks.
package host_test

import (
	"errors"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/storage"
)

const (
	multi    = journal.ModeMulti
	single   = journal.ModeSingle
	first    = storage.ClaimFirstBoot
	existing = storage.ClaimExistingMember
)

var errDisk = errors.New("test: disk on fire")

// env1 wraps messages of one journal as envelopes.
func env1(j journal.ID, ms ...paxos.Message) []host.Envelope {
	out := make([]host.Envelope, len(ms))
	for i, m := range ms {
		out[i] = host.Envelope{Journal: j, Msg: m}
	}
	return out
}

// soloLeader boots node 1 alone (members 1, 2, 3) and makes it lead jA with
// a Promise crafted from node 2; node 3 never answers. Every persist is
// complete and every Send consumed when it returns.
func soloLeader(t *testing.T, tun host.Tunables, mode journal.WriterMode) (*host.Host, *fakeEnv, paxos.Ballot) {
	t.Helper()
	h, env := newHost(t, 1, tun, spec(jA, mode, first))
	for range 3 * tun.ElectionTicks {
		if h.Node(jA).Role() == "candidate" {
			break
		}
		h.OnTick()
	}
	env.completeAll()
	prepares := envelopes(env.takeSent())
	if len(prepares) != 2 || prepares[0].Msg.Type != paxos.MsgPrepare {
		t.Fatalf("campaign sent %v, want two Prepares", msgTypes(prepares))
	}
	b := prepares[0].Msg.Ballot
	h.OnDeliver(2, env1(jA, paxos.Message{Type: paxos.MsgPromise, From: 2, To: 1, Ballot: b, Slot: 1}))
	env.completeAll()
	env.takeSent()
	if !h.Node(jA).IsLeader() {
		t.Fatalf("node 1 did not win with a crafted promise")
	}
	return h, env, b
}

// acceptedFor is the Accepted node from would answer to an Accept.
func acceptedFor(a paxos.Message, from paxos.NodeID) paxos.Message {
	m := paxos.Message{Type: paxos.MsgAccepted, From: from, To: a.From, Ballot: a.Ballot}
	for _, e := range a.Entries {
		m.Votes = append(m.Votes, paxos.SlotVote{Slot: e.Slot, VHash: e.Command.Fingerprint()})
	}
	return m
}

// firstOf returns the first envelope of type t sent to peer to.
func firstOf(t *testing.T, ds []sentDeliver, to paxos.NodeID, typ paxos.MsgType) paxos.Message {
	t.Helper()
	for _, d := range ds {
		for _, e := range d.Batch {
			if d.To == to && e.Msg.Type == typ {
				return e.Msg
			}
		}
	}
	t.Fatalf("no %s sent to %d in %v", typ, to, msgTypes(envelopes(ds)))
	return paxos.Message{}
}
