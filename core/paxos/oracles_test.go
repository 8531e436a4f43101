package paxos_test

// This file holds the oracles the randomized checker and the scenario tests
// run after every step. Their messages are the simulator's claim strings
// (docs/design/simulation.md, "Oracles"), so a failure names the safety rule it
// broke. The journal oracle folds the chosen log through a
// naive model written independently of journal.Apply.

import (
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

type oracles struct {
	net *network
	// chosen is the command every node folded at each slot.
	chosen map[paxos.Slot]journal.Command
	// judged is the naive model's verdict per slot, filled in slot order.
	judged    map[paxos.Slot]journal.Outcome
	model     *naiveJournal
	modelNext paxos.Slot
	// acked is the highest slot some node folded in a batch now durable: a
	// host could have acknowledged it to a client.
	acked      paxos.Slot
	pendingAck map[paxos.NodeID]paxos.Slot
	// readOpenAcked: the acked slot when each read opened.
	readOpenAcked map[uint64]paxos.Slot
	failed        bool
}

func newOracles(net *network) *oracles {
	return &oracles{net: net, chosen: map[paxos.Slot]journal.Command{}, judged: map[paxos.Slot]journal.Outcome{},
		model: newNaiveJournal(net.mode), modelNext: 1, pendingAck: map[paxos.NodeID]paxos.Slot{},
		readOpenAcked: map[uint64]paxos.Slot{}}
}

func (o *oracles) fail(format string, args ...any) {
	if o.failed {
		return
	}
	o.failed = true
	o.net.t.Helper()
	o.net.t.Fatalf("%s\ntrace tail: %s", fmt.Sprintf(format, args...), o.net.dumpLog())
}

// folded checks one applied slot against every other node's fold of it.
func (o *oracles) folded(tn *tnode, c paxos.Applied) {
	if prev, ok := o.chosen[c.Slot]; ok {
		if !prev.Equal(c.Command) {
			o.fail("at most one value is ever chosen for a slot: slot %d folded as %s on node %d, %s elsewhere", c.Slot, c.Command, tn.id, prev)
		}
	} else {
		o.chosen[c.Slot] = c.Command
	}
	o.pendingAck[tn.id] = max(o.pendingAck[tn.id], c.Slot)
	o.advanceModel()
	if want, ok := o.judged[c.Slot]; ok {
		o.checkVerdict(tn, c, want)
	}
}

// advanceModel folds the naive model over every contiguous chosen slot.
func (o *oracles) advanceModel() {
	for {
		cmd, ok := o.chosen[o.modelNext]
		if !ok {
			return
		}
		o.judged[o.modelNext] = o.model.apply(cmd)
		o.modelNext++
	}
}

func (o *oracles) checkVerdict(tn *tnode, c paxos.Applied, want journal.Outcome) {
	got := c.Outcome
	if got.Kind == journal.Unheld {
		if want.Kind != journal.Duplicate && want.Kind != journal.Refused {
			o.fail("journal: every node judges a slot to the same outcome: node %d slot %d unheld, model %s", tn.id, c.Slot, want)
		}
		return
	}
	if got.Kind != want.Kind || got.Seq != want.Seq || got.Count != want.Count || got.View != want.View {
		o.fail("journal: every node judges a slot to the same outcome: node %d slot %d %s %+v, model %s %+v (cmd %s)",
			tn.id, c.Slot, got, got.View, want, want.View, c.Command)
	}
}

func (o *oracles) synced(tn *tnode) {
	o.acked = max(o.acked, o.pendingAck[tn.id])
	o.pendingAck[tn.id] = 0
	p := tn.store.InitialState().Promised
	if p.Less(tn.durablePromise) {
		o.fail("a node's promised ballot never decreases: node %d durable promise %s after %s", tn.id, p, tn.durablePromise)
	}
	tn.durablePromise = p
}

func (o *oracles) readOpened(ctx uint64) { o.readOpenAcked[ctx] = o.acked }

func (o *oracles) readSettled(tn *tnode, r paxos.ReadState) {
	if !r.OK {
		return
	}
	if want := o.readOpenAcked[r.Ctx]; tn.node.Applied() < want {
		o.fail("journal read: a read sees every write acknowledged before it: node %d applied %d, acked %d when read %d opened",
			tn.id, tn.node.Applied(), want, r.Ctx)
	}
}

// afterBatch checks one node's monotone scalars within its boot.
func (o *oracles) afterBatch(tn *tnode) {
	n := tn.node
	if n.Promised().Less(tn.promiseSeen) {
		o.fail("a node's promised ballot never decreases: node %d %s after %s", tn.id, n.Promised(), tn.promiseSeen)
	}
	tn.promiseSeen = n.Promised()
	if fs := n.State().FirstSeq; fs < tn.firstSeen {
		o.fail("journal: first_seq never moves backwards: node %d %d after %d", tn.id, fs, tn.firstSeen)
	} else {
		tn.firstSeen = fs
	}
}

// durableQuorums checks every store: at most one command per (slot,
// ballot), and a Phase-2 quorum of durable accepts at one ballot decides only
// the value the nodes folded.
func (o *oracles) durableQuorums() {
	type key struct {
		slot   paxos.Slot
		ballot paxos.Ballot
	}
	votes := map[key][]int{}
	vals := map[key]journal.Command{}
	for i, tn := range o.net.nodes {
		for _, r := range tn.store.Records() {
			k := key{r.Slot, r.Ballot}
			if v, ok := vals[k]; ok && !v.Equal(r.Command) {
				o.fail("at most one command is ever accepted for one (slot, ballot): slot %d ballot %s: %s and %s", r.Slot, r.Ballot, v, r.Command)
			}
			vals[k] = r.Command
			if slices.Contains(o.net.replicas, tn.id) {
				continue // a replica's Learned record is not a vote
			}
			votes[k] = append(votes[k], i)
		}
	}
	sys := o.net.cfg
	for k, idx := range votes {
		var set = sys.SetOf()
		for _, i := range idx {
			set = set.Add(i)
		}
		if sys.Phase2(k.slot, set, 0) != quorum.Won {
			continue
		}
		if c, ok := o.chosen[k.slot]; ok && !c.Equal(vals[k]) {
			o.fail("a durable accept quorum never decides two values for a slot: slot %d quorum at %s holds %s, folded %s", k.slot, k.ballot, vals[k], c)
		}
	}
}

// converged checks that every node reached the same chosen prefix.
func (o *oracles) converged() {
	var top paxos.Slot
	for _, tn := range o.net.nodes {
		top = max(top, tn.node.Applied())
	}
	for _, tn := range o.net.nodes {
		if tn.node.Applied() != top || tn.node.ChosenIndex() != top {
			o.fail("every node converges to the cluster's chosen prefix at the end of the settle tail: node %d applied %d chosen %d, top %d (%s)",
				tn.id, tn.node.Applied(), tn.node.ChosenIndex(), top, tn.node.Role())
		}
	}
	var ref *tnode
	for _, tn := range o.net.nodes {
		if ref == nil {
			ref = tn
			continue
		}
		if a, b := ref.node.State().View(), tn.node.State().View(); a != b {
			o.fail("journal: every node folds the log to the same state: node %d %+v, node %d %+v", ref.id, a, tn.id, b)
		}
	}
}

// naiveJournal is the sequential journal model of journal.Apply's rules,
// written as plainly as possible and independently of journal.Apply.
type naiveJournal struct {
	mode   journal.WriterMode
	leader journal.LeaderUUID
	next   journal.Seq
	first  journal.Seq
	starts map[journal.Seq]journal.Entry
}

func newNaiveJournal(mode journal.WriterMode) *naiveJournal {
	return &naiveJournal{mode: mode, next: 1, first: 1, starts: map[journal.Seq]journal.Entry{}}
}

func (m *naiveJournal) view() journal.View {
	return journal.View{Leader: m.leader, NextSeq: m.next, FirstSeq: m.first}
}

func (m *naiveJournal) out(k journal.OutcomeKind) journal.Outcome {
	return journal.Outcome{Kind: k, View: m.view()}
}

func (m *naiveJournal) apply(c journal.Command) journal.Outcome {
	single := m.mode == journal.ModeSingle
	switch c.Kind {
	case journal.KindNoop:
		return m.out(journal.NoopDone)
	case journal.KindSetLeader:
		if !single {
			return m.out(journal.WrongMode)
		}
		if c.Old == m.leader && c.New.IsSet() && c.New != m.leader {
			m.leader = c.New
			return m.out(journal.LeaderSet)
		}
		return m.out(journal.LeaderRefused)
	case journal.KindTruncate:
		if single && !c.Leader.IsSet() || !single && c.Leader.IsSet() {
			return m.out(journal.WrongMode)
		}
		if single && c.Leader != m.leader {
			return m.out(journal.TruncateRefused)
		}
		to := c.UpTo
		if to > m.next {
			to = m.next
		}
		if to > m.first {
			m.first = to
		}
		return m.out(journal.Trimmed)
	case journal.KindWrite:
		e := c.Entry
		n := uint64(len(e.Records))
		if !single {
			if e.Leader.IsSet() {
				return m.out(journal.WrongMode)
			}
			if n == 0 {
				return m.out(journal.Refused)
			}
			at := m.next
			m.next += journal.Seq(n)
			return journal.Outcome{Kind: journal.Accepted, Seq: at, Count: n, View: m.view()}
		}
		if !e.Leader.IsSet() {
			return m.out(journal.WrongMode)
		}
		if e.Seq < m.first {
			return m.out(journal.BelowFloor)
		}
		if e.Seq < m.next {
			if prev, ok := m.starts[e.Seq]; ok && prev.Equal(e) {
				return journal.Outcome{Kind: journal.Duplicate, Seq: e.Seq, Count: n, View: m.view()}
			}
			return m.out(journal.Refused)
		}
		if e.Leader == m.leader && e.Seq == m.next && n > 0 {
			m.starts[e.Seq] = e
			m.next += journal.Seq(n)
			return journal.Outcome{Kind: journal.Accepted, Seq: e.Seq, Count: n, View: m.view()}
		}
		return m.out(journal.Refused)
	}
	return m.out(journal.WrongMode)
}
