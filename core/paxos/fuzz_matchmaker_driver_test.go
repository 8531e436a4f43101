package paxos_test

// This file holds FuzzStepMatchmakers' driver (fuzz_matchmaker_test.go): it
// decodes the input into messages of every type from nodes, matchmakers and
// strangers, ticks, proposals, reconfigurations, quorum reads, step-downs,
// retire questions, restarts and Ready/Advance rounds persisted and synced
// to the store, and after every step checks that the node's monotone
// scalars never fall within a boot, that every message it sends is well
// formed and well addressed, and that one ballot of the node's is bound to
// one configuration.

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/storage/memstore"
)

// mmStepDriver plays one input against node 1 of a deployment with
// matchmakers. It reuses FuzzStep's driver for the store, the boots, the
// decoders of slots, entries, commands and states, and the monotone checks.
type mmStepDriver struct {
	*fuzzDriver
	// seen is the incarnation the checks below last saw; belief is the
	// ballot of its configuration (monotone within a boot).
	seen   *paxos.Node
	belief paxos.Ballot
	// bound is the configuration each of the node's ballots was sent with
	// (Match, Prepare, Heartbeat) or led under; ballots are never reused
	// across boots (the promise is durable before a Match leaves).
	bound map[paxos.Ballot]quorum.System
	// totals sums the counters of every incarnation (the seed test).
	totals paxos.Counters
}

// ballot draws a ballot near the node's own state.
func (d *mmStepDriver) ballot(from paxos.NodeID) paxos.Ballot {
	b := d.in.next()
	n := d.node
	p := n.Promised()
	switch b % 8 {
	case 0:
		if b >= 224 {
			rounds := [...]uint64{paxos.BallotRoundMax - 1, paxos.BallotRoundMax, paxos.BallotRoundMax + 1, math.MaxUint64}
			return paxos.Ballot{Round: rounds[(b-224)/8], Node: from}
		}
		return paxos.Ballot{}
	case 1:
		return paxos.Ballot{Round: uint64(b / 8 % 4), Node: from}
	case 2:
		return p
	case 3:
		return paxos.Ballot{Round: p.Round + 1, Node: from}
	case 4:
		return n.LeaderBallot()
	case 5:
		return paxos.Ballot{Round: uint64(b / 8 % 4), Node: paxos.NodeID(1 + b/32%5)}
	case 6:
		return n.Configuration().Ballot
	}
	return paxos.Ballot{Round: max(p.Round, 1) - 1, Node: from}
}

func (d *mmStepDriver) system() (quorum.System, int) {
	i := int(d.in.next()) % len(fuzzMMSystems)
	return fuzzMMSystems[i], i
}

func (d *mmStepDriver) registration(reconf bool) paxos.Registration {
	r := paxos.Registration{Ballot: d.ballot(paxos.NodeID(1 + d.in.next()%5)), Reconfiguration: reconf}
	r.Acceptors, _ = d.system()
	return r
}

// refusal draws a matchmaker's verdict: mostly OK, and each refusal
// (the generation refusals carry no successor here).
func (d *mmStepDriver) refusal() paxos.MatchRefusal {
	b := d.in.next()
	switch b % 8 {
	case 4:
		return paxos.MatchStale
	case 5:
		return paxos.MatchBelowWatermark
	case 6:
		return paxos.MatchClosed
	case 7:
		return paxos.MatchRefusal(4 + b/8%4)
	}
	return paxos.MatchOK
}

func (d *mmStepDriver) message(typ paxos.MsgType) paxos.Message {
	in := d.in
	from := fuzzMMSenders[int(in.next())%len(fuzzMMSenders)]
	m := paxos.Message{Type: typ, From: from, To: 1}
	if typ == paxos.MsgMatchReply || typ == paxos.MsgGarbageCollectAck {
		// The node's matchmakers are the founding set: their answers name
		// generation 1 (drawing it would move every seed's bytes).
		m.Generation = 1
	}
	if b := in.next(); b%8 == 0 {
		m.To = [...]paxos.NodeID{0, 2, 11, 1}[b/8%4]
	}
	switch typ {
	case paxos.MsgPrepare:
		m.Ballot, m.Slot = d.ballot(from), d.slot()
		m.Config, _ = d.system()
		m.Since = d.ballot(from)
	case paxos.MsgPromise:
		m.Ballot, m.Slot, m.Next = d.ballot(from), d.slot(), d.slot()
		m.Entries = d.entries(m.Ballot, from)
		for range in.next() % 2 {
			m.Faulty = append(m.Faulty, paxos.SlotBallot{Slot: d.slot(), Ballot: d.ballot(from)})
		}
	case paxos.MsgAccept:
		m.Ballot = d.ballot(from)
		m.Entries = d.entries(m.Ballot, from)
		m.Commit = d.slot()
	case paxos.MsgAccepted:
		m.Ballot = d.ballot(from)
		for range in.next() % 3 {
			v := paxos.SlotVote{Slot: d.slot()}
			b := in.next()
			if c, ok := d.proposed[v.Slot]; ok && b%4 != 0 {
				v.VHash = c.Fingerprint()
			} else {
				v.VHash = d.canonical(v.Slot).Fingerprint() + uint64(b%2)
			}
			m.Votes = append(m.Votes, v)
		}
	case paxos.MsgNack:
		m.Ballot, m.Refused, m.Slot = d.ballot(from), d.ballot(from), d.slot()
	case paxos.MsgCommit:
		m.Ballot, m.Commit = d.ballot(from), d.slot()
	case paxos.MsgHeartbeat:
		m.Ballot, m.Commit = d.ballot(from), d.slot()
		m.Config, _ = d.system()
		m.Since = d.ballot(from)
	case paxos.MsgHeartbeatAck:
		m.Ballot, m.Commit, m.Watermark = d.ballot(from), d.slot(), d.slot()
	case paxos.MsgCatchUpRequest:
		m.Slot = d.slot()
	case paxos.MsgCatchUpResponse:
		m.Entries = d.entries(d.ballot(from), from)
	case paxos.MsgPreRead:
		m.Ctx = uint64(in.next() % 4)
	case paxos.MsgPreReadAck:
		m.Ctx, m.Watermark = uint64(in.next()%4), d.slot()
		m.Since = d.ballot(from)
	case paxos.MsgTrimmedTo:
		m.Slot, m.State = d.slot(), d.state()
	case paxos.MsgMatchReply:
		m.Ballot, m.Refusal, m.Refused, m.GC = d.ballot(from), d.refusal(), d.ballot(from), d.ballot(from)
		for range in.next() % 4 {
			m.History = append(m.History, d.registration(in.next()%2 == 1))
		}
		switch in.next() % 3 {
		case 1:
			m.Effective = d.registration(true)
		case 2:
			m.Effective = d.registration(false)
		}
	case paxos.MsgGarbageCollectAck:
		m.GC = d.ballot(from)
	default:
		m.Ballot = d.ballot(from)
		m.Config, _ = d.system()
	}
	return m
}

// checkSent holds one outgoing message to the addressing and binding rules.
func (d *mmStepDriver) checkSent(m paxos.Message) {
	n := d.node
	switch {
	case m.From != 1 || m.To == 1 || m.To == 0:
		d.t.Fatalf("message %s is misaddressed\n%s", m, d.history())
	case m.Validate() != nil:
		d.t.Fatalf("message %s is malformed: %v\n%s", m, m.Validate(), d.history())
	case m.Type.IsMatchmakerRequest() && !slices.Contains(fuzzMatchmakers, m.To):
		d.t.Fatalf("matchmaker request %s to a non-matchmaker\n%s", m, d.history())
	case (m.Type == paxos.MsgPrepare || m.Type == paxos.MsgHeartbeat) && m.Config.IsZero():
		d.t.Fatalf("%s names no configuration on a deployment with matchmakers\n%s", m, d.history())
	case m.Type == paxos.MsgMatch && (m.Ballot.Node != 1 || m.Config.IsZero() || n.Promised().Less(m.Ballot)):
		d.t.Fatalf("%s: not the node's promised ballot with a configuration (promise %s)\n%s", m, n.Promised(), d.history())
	case m.Type == paxos.MsgGarbageCollect && m.GC.Node != 1:
		d.t.Fatalf("%s collects at another node's ballot\n%s", m, d.history())
	}
	if m.Type == paxos.MsgMatch || m.Type == paxos.MsgPrepare || m.Type == paxos.MsgHeartbeat {
		d.bind(m.Ballot, m.Config, m.String())
	}
}

// bind records that ballot b (one of the node's) runs configuration sys,
// and fails if it was bound to another.
func (d *mmStepDriver) bind(b paxos.Ballot, sys quorum.System, what string) {
	if b.Node != 1 {
		return
	}
	if prev, ok := d.bound[b]; ok && !paxos.SameSystem(prev, sys) {
		d.t.Fatalf("a ballot is bound to one configuration: %s ran %s %v, now %s %v (%s)\n%s",
			b, prev, prev.Members(), sys, sys.Members(), what, d.history())
	}
	d.bound[b] = sys
}

// drain hands out every batch, checks it, and persists it synced.
func (d *mmStepDriver) drain() {
	if d.rebootOnContractFault() {
		return
	}
	for i := 0; d.node.HasReady(); i++ {
		if i == mmReadiesMax {
			d.t.Fatalf("Ready did not run dry in %d batches\n%s", mmReadiesMax, d.history())
		}
		n := d.node
		rd := n.Ready()
		needs := false
		for _, op := range rd.Writes {
			needs = needs || op.NeedsSync()
		}
		if rd.MustSync != needs {
			d.t.Fatalf("MustSync %v for writes %v\n%s", rd.MustSync, rd.Writes, d.history())
		}
		for _, m := range rd.Messages {
			d.checkSent(m)
		}
		d.store.Append(rd.Writes)
		d.store.Sync()
		d.durablePromise = d.store.InitialState().Promised
		n.Advance()
		if n.WantsElectionTimeout() {
			n.SetElectionTimeout(d.opts.ElectionTicks + int(d.in.next()%3))
		}
	}
}

// check runs FuzzStep's monotone checks and the matchmaker ones.
func (d *mmStepDriver) check() {
	d.fuzzDriver.check()
	n := d.node
	if n != d.seen {
		// A new incarnation (a restart, or a reboot on a contract fault):
		// it starts from the bootstrap belief.
		d.addTotals(d.seen)
		d.seen, d.belief = n, paxos.Ballot{}
	}
	cfg := n.Configuration()
	if cfg.Ballot.Less(d.belief) {
		d.t.Fatalf("the configuration's ballot fell from %s to %s\n%s", d.belief, cfg.Ballot, d.history())
	}
	d.belief = cfg.Ballot
	if n.IsLeader() {
		b := n.LeaderBallot()
		if !cfg.Acceptors.Contains(1) {
			d.t.Fatalf("node 1 leads at %s under %s, which it is not a member of\n%s", b, cfg, d.history())
		}
		d.bind(b, cfg.Acceptors, "leading under "+cfg.String())
	}
	if w, retirable, ok := n.Collected(); ok {
		if !n.IsLeader() || w != n.LeaderBallot() {
			d.t.Fatalf("Collected at %s by a node leading at %s\n%s", w, n.LeaderBallot(), d.history())
		}
		for _, id := range retirable {
			if cfg.Acceptors.Contains(id) {
				d.t.Fatalf("Collected retires %d, a member of %s\n%s", id, cfg, d.history())
			}
		}
	}
}

func (d *mmStepDriver) addTotals(n *paxos.Node) {
	if n == nil {
		return
	}
	c, t := n.Counters(), &d.totals
	t.Probes += c.Probes
	t.Elections += c.Elections
	t.Decided += c.Decided
	t.MatchRefusals += c.MatchRefusals
	t.StaleConfigurations += c.StaleConfigurations
	t.Reconfigurations += c.Reconfigurations
	t.ReconfiguredElections += c.ReconfiguredElections
	t.ResignedRemoved += c.ResignedRemoved
	t.RemovedPromises += c.RemovedPromises
	t.JoinerVotes += c.JoinerVotes
	t.Collections += c.Collections
	t.ReadsAbandoned += c.ReadsAbandoned
	t.Malformed += c.Malformed
}

func (d *mmStepDriver) step() {
	in := d.in
	n := d.node
	op := int(in.next()) % mmOpCount
	switch {
	case op < len(fuzzMMMsgTypes):
		m := d.message(fuzzMMMsgTypes[op])
		d.trace = append(d.trace, fmt.Sprintf("step %s since=%s gc=%s config=%s refusal=%s", m, m.Since, m.GC, m.Config, m.Refusal))
		n.Step(m)
		d.rebootOnContractFault()
	case op == mmOpTick:
		k := 1 + int(in.next()%8)
		d.trace = append(d.trace, fmt.Sprintf("tick ×%d", k))
		for range k {
			n.Tick()
		}
	case op == mmOpPropose:
		st := n.State()
		e := journal.Entry{Leader: st.Leader, Seq: st.NextSeq, Records: [][]byte{{'p', in.next() % 3}}}
		res := n.Propose(e)
		d.trace = append(d.trace, fmt.Sprintf("propose write -> %d slot %d", res.Status, res.Slot))
		if res.Status == paxos.Proposed {
			d.proposed[res.Slot] = journal.Write(e)
		}
	case op == mmOpProposeControl:
		st := n.State()
		c := journal.Noop()
		switch in.next() % 3 {
		case 1:
			c = journal.Truncate(st.Leader, st.NextSeq)
		case 2:
			c = journal.SetLeader(fuzzUUIDs[1+int(st.Term()%2)], st.Leader)
		}
		res := n.ProposeControl(c)
		d.trace = append(d.trace, fmt.Sprintf("propose %s -> %d slot %d", c, res.Status, res.Slot))
		if res.Status == paxos.Proposed {
			d.proposed[res.Slot] = c
		}
	case op == mmOpReconfigure:
		sys, i := d.system()
		faulted := n.ContractFault() != nil
		err := n.Reconfigure(sys)
		d.trace = append(d.trace, fmt.Sprintf("reconfigure %s -> %v", sys, err))
		switch {
		case faulted && !errors.Is(err, paxos.ErrContract):
			d.t.Fatalf("Reconfigure on a faulted node: %v, want ErrContract\n%s", err, d.history())
		case !faulted && fuzzMMSystemValid[i] && err != nil:
			d.t.Fatalf("Reconfigure(%s): %v\n%s", sys, err, d.history())
		case !faulted && !fuzzMMSystemValid[i] && !errors.Is(err, paxos.ErrConfig):
			d.t.Fatalf("Reconfigure(%s): %v, want ErrConfig\n%s", sys, err, d.history())
		}
	case op == mmOpRead:
		ctx := uint64(in.next() % 4)
		d.trace = append(d.trace, fmt.Sprintf("read %d -> %v", ctx, n.QuorumRead(ctx)))
	case op == mmOpStepDown:
		d.trace = append(d.trace, "step down")
		n.StepDown()
	case op == mmOpRestart:
		d.trace = append(d.trace, "restart")
		d.store.Crash()
		d.boot()
	case op == mmOpDrain:
		d.trace = append(d.trace, "drain")
		d.drain()
	case op == mmOpRetire:
		w := d.ballot(2)
		r := n.MayRetire(w)
		d.trace = append(d.trace, fmt.Sprintf("may retire at %s -> %s", w, r))
		if r == paxos.RetireOK && (n.IsLeader() || n.Configuration().Acceptors.Contains(1) || n.Configuration().Ballot != w) {
			d.t.Fatalf("MayRetire(%s) = ok for a leader or a member of %s\n%s", w, n.Configuration(), d.history())
		}
	}
	d.decoded = in.pos
	if in.next()%4 != 0 {
		d.drain()
	}
	d.check()
}

// newMMStepDriver reads the deployment from the input's first byte (odd: a
// joiner formatted for {1,4,5}) and boots node 1 in single-writer mode with
// FuzzStep's small bounds.
func newMMStepDriver(tb testing.TB, in *fuzzIn) *mmStepDriver {
	cfg := paxos.Config{ID: 1, Acceptors: majorityOf(1, 2, 3), Mode: journal.ModeSingle, Matchmakers: fuzzMatchmakers}
	if in.next()%2 == 1 {
		cfg.Acceptors, cfg.Joiner = majorityOf(1, 4, 5), true
	}
	fd := &fuzzDriver{t: tb, in: in, store: memstore.New(), proposed: map[paxos.Slot]journal.Command{}, cfg: cfg,
		opts: paxos.Options{ElectionTicks: 3, HeartbeatTicks: 1, PipelineWindow: 2, ProposeQueueMax: 4, PromiseBatch: 2,
			CatchUpBatch: 2, CatchUpRetryTicks: 2, ReadTTLTicks: 3, ReadsMax: 3, ResendBatch: 2}}
	fd.boot()
	return &mmStepDriver{fuzzDriver: fd, seen: fd.node, bound: map[paxos.Ballot]quorum.System{}}
}
