package paxos_test

// This file fuzzes a node of a deployment with matchmakers (Matchmaker
// Paxos §3 and §4, and the spec's "Matchmakers and reconfiguration" and
// "The GC watermark and retirement" sections), the part of Step that
// FuzzStep, which runs a plain deployment, never reaches. FuzzStepMatchmakers
// boots node 1 of {1,2,3} under a majority with matchmakers {11,12,13}, or
// (by the input's first byte) node 1 as a joiner formatted for {1,4,5}, over
// a memstore, and decodes the rest of the input into a script: messages of
// every type from nodes, matchmakers and strangers (MatchReply with
// histories, effective configurations, watermarks and refusals of every
// kind; GarbageCollectAck; Prepare and Heartbeat naming valid systems, the
// zero one, and ones without the node; PreReadAck naming a configuration),
// with ballots drawn near the node's own state and at the edges of
// BallotRoundMax, mixed with ticks, proposals, reconfigurations (to valid and
// invalid systems), quorum reads, step-downs, retire questions, restarts and
// Ready/Advance rounds persisted and synced to the store. It reuses
// FuzzStep's byte reader, slot, entry, command and state decoders and its
// per-step oracles (bad_input_test.go).
//
// Nothing may panic: not Step, Tick, the calls, Ready or Advance, and not
// the node's own assertInvariants, which runs inside each. After every
// step the promise, chosen index, floor, first_seq and the ballot of the
// configuration the node believes in force never fall within a boot; every
// message the node sends is well formed, addressed to someone else, a
// matchmaker request only to a matchmaker, and a Prepare or Heartbeat names
// its configuration; and one ballot of the node's is bound to one
// configuration, in its Match, its Prepares, its Heartbeats and the belief
// it leads under. Seeds are the scripts in fuzzStepMatchmakersSeeds (a test
// below checks they reach matchmaking, Phase 1, leading, a StaleConfiguration
// adoption, a GC ack quorum, a probe, a reconfiguration and a joiner's vote)
// and the files in testdata/fuzz/FuzzStepMatchmakers.

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

var fuzzMatchmakers = []paxos.NodeID{11, 12, 13}

// fuzzMMSenders: the node's peers, the matchmakers, the joiner's peers,
// the unset id, the node itself and a stranger.
var fuzzMMSenders = [...]paxos.NodeID{2, 3, 11, 12, 13, 4, 5, 0, 1, 9}

func fuzzSystem(s quorum.System, err error) quorum.System {
	if err != nil {
		panic(err)
	}
	return s
}

// fuzzMMSystems: the zero system; majorities with the node ({1,2,3}, the
// joiner's {1,4,5}, {1,2,4}, the node alone) and without it ({2,3,4},
// {4,5,6}); a flexible and a grid system over {1,2,3,4}; and {1,2,3} with
// q1 = 1, which Reconfigure must refuse (validateSystem).
var fuzzMMSystems = [...]quorum.System{
	{},
	majorityOf(1, 2, 3),
	majorityOf(1, 4, 5),
	majorityOf(1, 2, 4),
	majorityOf(2, 3, 4),
	fuzzSystem(quorum.NewFlexible([]quorum.ID{1, 2, 3, 4}, 3, 2)),
	fuzzSystem(quorum.NewGrid([]quorum.ID{1, 2, 3, 4}, 2, 2)),
	majorityOf(1),
	majorityOf(4, 5, 6),
	fuzzSystem(quorum.NewFlexible([]quorum.ID{1, 2, 3}, 1, 3)),
}

// fuzzMMSystemValid says which of fuzzMMSystems Reconfigure accepts.
var fuzzMMSystemValid = [...]bool{false, true, true, true, true, true, true, true, true, false}

var fuzzMMMsgTypes = [...]paxos.MsgType{paxos.MsgPrepare, paxos.MsgPromise, paxos.MsgAccept, paxos.MsgAccepted,
	paxos.MsgNack, paxos.MsgCommit, paxos.MsgCatchUpRequest, paxos.MsgCatchUpResponse, paxos.MsgHeartbeat,
	paxos.MsgHeartbeatAck, paxos.MsgPreRead, paxos.MsgPreReadAck, paxos.MsgTrimmedTo,
	paxos.MsgMatchReply, paxos.MsgMatchReply, paxos.MsgMatchReply, paxos.MsgGarbageCollectAck,
	paxos.MsgMatch, paxos.MsgProbe, paxos.MsgGarbageCollect, paxos.MsgType(99)}

// FuzzStepMatchmakers ops after the message types.
const (
	mmOpTick = iota + len(fuzzMMMsgTypes)
	mmOpPropose
	mmOpProposeControl
	mmOpReconfigure
	mmOpRead
	mmOpStepDown
	mmOpRestart
	mmOpDrain
	mmOpRetire
	mmOpCount
	// mmFuzzStepsMax bounds the steps of one input; mmReadiesMax bounds
	// the Readies of one drain (a node whose batches never run dry is a
	// livelock, not a slow input).
	mmFuzzStepsMax = 200
	mmReadiesMax   = 1000
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

func playFuzzStepMatchmakers(t *testing.T, data []byte) { runFuzzStepMatchmakers(t, data) }

// runFuzzStepMatchmakers plays one input to its end and returns the summed
// counters of the node's incarnations; any panic fails it.
func runFuzzStepMatchmakers(t *testing.T, data []byte) paxos.Counters {
	in := &fuzzIn{data: data}
	d := newMMStepDriver(t, in)
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("panic: %v\n%s", r, d.history())
		}
	}()
	for i := 0; i < mmFuzzStepsMax && in.pos < len(in.data); i++ {
		d.step()
	}
	d.addTotals(d.node)
	return d.totals
}

// recordMMSeed plays a script and returns the fuzz input that replays it,
// like recordSeed: the bytes read between steps (drain, jitter) are
// recorded as 1 (drain; timeout ElectionTicks+1).
func recordMMSeed(tb testing.TB, joiner byte, steps ...[]byte) []byte {
	tb.Helper()
	in := &fuzzIn{data: []byte{joiner}, record: true}
	d := newMMStepDriver(tb, in)
	for i, st := range steps {
		at := len(in.data)
		in.data = append(in.data, st...)
		d.step()
		if d.decoded != at+len(st) {
			tb.Fatalf("seed step %d (%v) decoded %d bytes, scripted %d\n%s", i, st, d.decoded-at, len(st), d.history())
		}
	}
	return in.data
}

// Seed script encoders for the decoders above. Ballots: mbZero, mbPromised
// (the node's promise: its matchmaking or campaign ballot), mbAbove (one
// round above it, at the sender), mbLeading (the node's leader ballot),
// mbAt(r, n) (round r < 4 at node n in 1-5). Senders by id. Slots as in
// FuzzStep (slotAbs, slotNext). Systems by index into fuzzMMSystems.
const (
	mbZero     = 0
	mbPromised = 2
	mbAbove    = 3
	mbLeading  = 4

	sysNone, sys123, sys145, sys124, sys234 = 0, 1, 2, 3, 4
)

func mbAt(round, node byte) byte { return 5 + 8*round + 32*(node-1) }

func mmMsg(typ paxos.MsgType, from paxos.NodeID, fields ...byte) []byte {
	op := byte(slices.Index(fuzzMMMsgTypes[:], typ))
	return append([]byte{op, byte(slices.Index(fuzzMMSenders[:], from)), 1}, fields...)
}

// sMatchOK: a matchmaker's OK answer to the node's registration (or, at
// mbZero, to its probe), with watermark gc, the history and the effective
// configuration (nil: none) given.
func sMatchOK(from paxos.NodeID, ballot, gc byte, effective []byte, history ...[]byte) []byte {
	f := []byte{ballot, 0, mbZero, gc, byte(len(history))}
	for _, h := range history {
		f = append(f, h...)
	}
	if effective == nil {
		f = append(f, 0)
	} else {
		f = append(append(f, 1), effective...)
	}
	return mmMsg(paxos.MsgMatchReply, from, f...)
}

// sReg encodes a registration: reconf flag (history only), ballot at
// node's round, system.
func sReg(reconf bool, round, node byte, sys byte) []byte {
	f := byte(0)
	if reconf {
		f = 1
	}
	return []byte{f, node - 1, mbAt(round, node), sys}
}

// sEff encodes an effective configuration (no flag: always a
// reconfiguration).
func sEff(round, node byte, sys byte) []byte { return sReg(false, round, node, sys)[1:] }

func sMTick(n byte) []byte          { return []byte{byte(mmOpTick), n - 1} }
func sMPropose(rec byte) []byte     { return []byte{byte(mmOpPropose), rec} }
func sMReconfigure(sys byte) []byte { return []byte{byte(mmOpReconfigure), sys} }
func sMRead(ctx byte) []byte        { return []byte{byte(mmOpRead), ctx} }
func sMRestart() []byte             { return []byte{byte(mmOpRestart)} }
func sMRetire(w byte) []byte        { return []byte{byte(mmOpRetire), w} }

// sPromiseTerminal: a terminal Phase-1 page at the node's ballot from its
// chosen index + 1, with no entries.
func sPromiseTerminal(from paxos.NodeID) []byte {
	return mmMsg(paxos.MsgPromise, from, mbPromised, slotNext(0), slotAbs(0), 0, 0)
}

// fuzzStepMatchmakersSeeds are five scripted runs: a probe, matchmaking,
// Phase 1 and leading, a GC ack quorum, a write, and a reconfiguration to
// {1,4,5} whose Phase 1 needs the old configuration too; a StaleConfiguration
// adoption; a joiner that learns its configuration by a probe, promises and
// votes; refusals, a closed matchmaker and a reboot mid-matchmaking; and a
// leader reconfiguring itself out.
func fuzzStepMatchmakersSeeds(tb testing.TB) [][]byte {
	probe := func() [][]byte {
		return [][]byte{
			sMTick(3), // campaign: not learned since boot, so a probe
			sMatchOK(11, mbZero, mbZero, nil),
			sMatchOK(12, mbZero, mbZero, nil), // a quorum: learned
		}
	}
	elect := func(voter paxos.NodeID) [][]byte {
		return [][]byte{
			sMTick(4), // matchmaking at 1.1
			sMatchOK(11, mbPromised, mbZero, nil),
			sMatchOK(12, mbPromised, mbZero, nil), // Phase 1 over {1,2,3}
			sPromiseTerminal(voter),               // leads
		}
	}
	lead := recordMMSeed(tb, 0, slices.Concat(probe(), elect(2), [][]byte{
		mmMsg(paxos.MsgHeartbeatAck, 2, mbLeading, slotAbs(0), slotAbs(0)), // 2 reached the fence
		sMTick(1), // the beat collects: GarbageCollect to 11-13
		mmMsg(paxos.MsgGarbageCollectAck, 11, mbLeading),
		mmMsg(paxos.MsgGarbageCollectAck, 12, mbLeading), // a quorum: collected
		sMRetire(mbLeading),
		sMPropose(0),
		mmMsg(paxos.MsgAccepted, 2, mbLeading, 1, slotNext(0), 1),
		sMRead(1), mmMsg(paxos.MsgPreReadAck, 2, 1, slotAbs(1), mbZero),
		sMReconfigure(sys145), // matchmaking at 2.1 for {1,4,5}
		sMatchOK(11, mbPromised, mbZero, nil, sReg(false, 1, 1, sys123)),
		sMatchOK(12, mbPromised, mbZero, nil, sReg(false, 1, 1, sys123)), // Phase 1 over {1,4,5} and {1,2,3}
		sPromiseTerminal(4), // a quorum of {1,4,5}, not of {1,2,3}
		sPromiseTerminal(2), // and of {1,2,3}: leads
		mmMsg(paxos.MsgHeartbeatAck, 4, mbLeading, slotNext(0), slotAbs(0)),
		sMTick(1),
		mmMsg(paxos.MsgGarbageCollectAck, 13, mbLeading),
		mmMsg(paxos.MsgGarbageCollectAck, 12, mbLeading),
		sMRetire(mbLeading),
		sMTick(2),
	})...)
	stale := recordMMSeed(tb, 0, slices.Concat(probe(), [][]byte{
		sMTick(4), // matchmaking at 1.1 under {1,2,3}
		sMatchOK(11, mbPromised, mbZero, sEff(3, 2, sys124)),
		sMatchOK(12, mbPromised, mbZero, nil), // {1,2,4} was made effective at 3.2: adopt it, campaign again
		sMatchOK(12, mbPromised, mbZero, sEff(3, 2, sys124)),
		sMatchOK(13, mbPromised, mbZero, sEff(3, 2, sys124)), // Phase 1 over {1,2,4}
		sPromiseTerminal(4),
		mmMsg(paxos.MsgHeartbeat, 2, mbAbove, slotAbs(0), sys124, mbAt(3, 2)), // deposed by 2
		mmMsg(paxos.MsgPreRead, 4, 2),
		sMRead(3), mmMsg(paxos.MsgPreReadAck, 4, 3, slotAbs(0), mbAbove), // a newer configuration: abandoned
		sMRetire(mbAt(3, 2)),
	})...)
	joiner := recordMMSeed(tb, 1,
		sMTick(3), // a joiner probes
		sMatchOK(12, mbZero, mbZero, sEff(1, 2, sys145)),
		sMatchOK(13, mbZero, mbAt(1, 2), sEff(1, 2, sys145)), // learns {1,4,5}
		mmMsg(paxos.MsgPrepare, 4, mbAbove, slotNext(0), sys145, mbAt(1, 2)),
		mmMsg(paxos.MsgAccept, 4, mbPromised, 1, slotNext(0), 1, 1, slotAbs(0)), // votes
		mmMsg(paxos.MsgHeartbeat, 4, mbPromised, slotNext(0), sys145, mbAt(1, 2)),
		mmMsg(paxos.MsgPrepare, 2, mbAbove, slotNext(0), sys234, mbAt(1, 2)),    // a configuration without it
		mmMsg(paxos.MsgAccept, 2, mbPromised, 1, slotNext(1), 1, 1, slotAbs(0)), // not a member: no vote
		sMTick(8),
	)
	refused := recordMMSeed(tb, 0, slices.Concat(probe(), [][]byte{
		sMTick(4),
		mmMsg(paxos.MsgMatchReply, 11, mbPromised, 6, mbZero, mbZero, 0, 0),     // closed: no answer
		mmMsg(paxos.MsgMatchReply, 12, mbPromised, 4, mbAt(3, 3), mbZero, 0, 0), // stale: abandoned
		sMTick(4), // matchmaking above 3.3
		mmMsg(paxos.MsgMatchReply, 12, mbPromised, 5, mbZero, mbAt(3, 3), 0, 0), // below the watermark
		sMTick(4),
		sMRestart(), // rebooted mid-matchmaking: probe again
		sMTick(4),
		sMatchOK(13, mbZero, mbZero, sEff(2, 3, sys123)),
		sMatchOK(11, mbZero, mbZero, nil),
		mmMsg(paxos.MsgMatchReply, 12, mbZero, 7, mbZero, mbZero, 0, 0),    // a malformed verdict
		mmMsg(paxos.MsgMatchReply, 9, mbPromised, 0, mbZero, mbZero, 0, 0), // not a matchmaker
	})...)
	resign := recordMMSeed(tb, 0, slices.Concat(probe(), elect(3), [][]byte{
		sMReconfigure(sys234), // {2,3,4}: without the node
		sMatchOK(13, mbPromised, mbZero, nil, sReg(true, 0, 1, sys123)),
		sMatchOK(11, mbPromised, mbZero, nil, sReg(false, 1, 1, sys123)),
		sPromiseTerminal(3), sPromiseTerminal(2), // resigns
		sMReconfigure(sysNone), sMReconfigure(9),
		sMTick(8),
	})...)
	return [][]byte{lead, stale, joiner, refused, resign}
}

// The seeds alone reach matchmaking, Phase 1 and leading, a
// StaleConfiguration adoption, a GC ack quorum, a probe, a reconfigured
// election, a decision, a resignation, a joiner's vote and an abandoned
// read, so that `go test` covers those paths without fuzzing.
func TestFuzzStepMatchmakersSeedsReach(t *testing.T) {
	var c paxos.Counters
	for _, seed := range fuzzStepMatchmakersSeeds(t) {
		got := runFuzzStepMatchmakers(t, seed)
		c.Probes += got.Probes
		c.Elections += got.Elections
		c.Decided += got.Decided
		c.StaleConfigurations += got.StaleConfigurations
		c.Collections += got.Collections
		c.MatchRefusals += got.MatchRefusals
		c.ReconfiguredElections += got.ReconfiguredElections
		c.ResignedRemoved += got.ResignedRemoved
		c.JoinerVotes += got.JoinerVotes
		c.ReadsAbandoned += got.ReadsAbandoned
		c.RemovedPromises += got.RemovedPromises
	}

	for name, n := range map[string]uint64{
		"probes": c.Probes, "elections": c.Elections, "decisions": c.Decided, "stale configurations": c.StaleConfigurations,
		"collections": c.Collections, "match refusals": c.MatchRefusals,
		"reconfigured elections": c.ReconfiguredElections, "resignations": c.ResignedRemoved,
		"joiner votes": c.JoinerVotes, "abandoned reads": c.ReadsAbandoned, "removed promises": c.RemovedPromises,
	} {
		if n == 0 {
			t.Errorf("no seed reaches %s (counters %+v)", name, c)
		}
	}
}

func FuzzStepMatchmakers(f *testing.F) {
	for _, seed := range fuzzStepMatchmakersSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(playFuzzStepMatchmakers)
}
