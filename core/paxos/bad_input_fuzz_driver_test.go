package paxos_test

// This file holds FuzzStep's driver: it decodes arbitrary bytes into a
// script of messages (from a five-id alphabet around a three-node majority,
// with ballots and slots drawn near the node's own state and at the edges of
// BallotRoundMax, SlotMax and the journal's SeqMax/TermMax) mixed with
// ticks, proposals, reads, step-downs, restarts and Ready/Advance rounds. A
// peer that breaks the Paxos contract raises ContractFault and the driver
// reboots the node, as the host does. The node's monotone scalars and the
// addressing of its messages are checked after every step.

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage/memstore"
)

// fuzzIn reads a fuzz input one byte per decision; past the end it reads
// 0, or, when recording a seed, appends and reads 1.
type fuzzIn struct {
	data   []byte
	pos    int
	record bool
}

func (in *fuzzIn) next() byte {
	if in.pos >= len(in.data) {
		if !in.record {
			return 0
		}
		in.data = append(in.data, 1)
	}
	b := in.data[in.pos]
	in.pos++
	return b
}

// fuzzDriver plays a fuzz input against node 1 of a three-node majority.
type fuzzDriver struct {
	t        testing.TB
	in       *fuzzIn
	decoded  int // input position after the last step's op and fields
	cfg      paxos.Config
	opts     paxos.Options
	store    *memstore.Store
	node     *paxos.Node
	proposed map[paxos.Slot]journal.Command
	trace    []string
	// monotone within a boot
	promise paxos.Ballot
	chosen  paxos.Slot
	floor   paxos.Slot
	first   journal.Seq
	// monotone across boots
	durablePromise paxos.Ballot
}

var fuzzUUIDs = [...]journal.LeaderUUID{{}, {Hi: 1, Lo: 0xa}, {Hi: 2, Lo: 0xb}}

var fuzzMsgTypes = [...]paxos.MsgType{paxos.MsgPrepare, paxos.MsgPromise, paxos.MsgAccept, paxos.MsgAccepted,
	paxos.MsgNack, paxos.MsgCommit, paxos.MsgCatchUpRequest, paxos.MsgCatchUpResponse, paxos.MsgHeartbeat,
	paxos.MsgHeartbeatAck, paxos.MsgPreRead, paxos.MsgPreReadAck, paxos.MsgTrimmedTo, paxos.MsgType(99)}

// Fuzz ops after the message types.
const (
	fuzzOpTick = iota + len(fuzzMsgTypes)
	fuzzOpPropose
	fuzzOpProposeControl
	fuzzOpRead
	fuzzOpStepDown
	fuzzOpRestart
	fuzzOpDrain
	fuzzOpCount
	fuzzStepsMax = 200
)

func (d *fuzzDriver) boot() {
	n, err := paxos.NewNode(d.cfg, d.opts, d.store)
	if err != nil {
		d.t.Fatalf("boot: %v\n%s", err, d.history())
	}
	d.node = n
	d.promise, d.chosen, d.floor, d.first = n.Promised(), n.ChosenIndex(), n.Floor(), n.State().FirstSeq
	if n.Promised().Less(d.durablePromise) {
		d.t.Fatalf("durable promise fell from %s to %s across a restart\n%s", d.durablePromise, n.Promised(), d.history())
	}
}

// rebootOnContractFault does what the host does when a peer broke the
// Paxos contract: the faulted batch is never persisted or sent, and the
// journal reboots from what its store made durable. It reports whether
// it rebooted.
func (d *fuzzDriver) rebootOnContractFault() bool {
	err := d.node.ContractFault()
	if err == nil {
		return false
	}
	d.trace = append(d.trace, "contract fault, reboot: "+err.Error())
	d.store.Crash()
	d.boot()
	return true
}

func (d *fuzzDriver) history() string {
	if len(d.trace) > 40 {
		return strings.Join(d.trace[len(d.trace)-40:], "\n")
	}
	return strings.Join(d.trace, "\n")
}

// ballot draws a ballot near the node's own state.
func (d *fuzzDriver) ballot(from paxos.NodeID) paxos.Ballot {
	b := d.in.next()
	p := d.node.Promised()
	switch b % 7 {
	case 0:
		if b >= 224 {
			// The edges of the round bound and past it: the probe's Commit
			// at round 2^64-1 once crashed every machine, and the old
			// alphabet (rounds near the node's own) never drew it.
			rounds := [...]uint64{paxos.BallotRoundMax, paxos.BallotRoundMax + 1, math.MaxUint64, math.MaxUint64, paxos.BallotRoundMax - 1}
			return paxos.Ballot{Round: rounds[(b-224)/7], Node: from}
		}
		return paxos.Ballot{}
	case 1:
		return paxos.Ballot{Round: uint64(b / 7 % 4), Node: from}
	case 2:
		return p
	case 3:
		return paxos.Ballot{Round: p.Round + 1, Node: from}
	case 4:
		return d.node.LeaderBallot()
	case 5:
		return paxos.Ballot{Round: uint64(b / 7 % 4), Node: paxos.NodeID(b / 28 % 5)}
	default:
		return paxos.Ballot{Round: max(p.Round, 1) - 1, Node: from}
	}
}

// slot draws a slot near the node's floor, chosen index or last record.
func (d *fuzzDriver) slot() paxos.Slot {
	b := d.in.next()
	k := paxos.Slot(b / 5 % 4)
	switch b % 5 {
	case 0:
		return paxos.Slot(b / 5 % 10)
	case 1:
		return d.node.ChosenIndex() + 1 + k
	case 2:
		return d.node.Floor() - 1 + k
	case 3:
		return d.node.Acceptor().LastSlot() + k
	default:
		if b >= 240 {
			// The edges of the slot bound: 244, 249, 254.
			return [...]paxos.Slot{paxos.SlotMax, paxos.SlotMax + 1, math.MaxUint64}[(b-244)/5]
		}
		return d.node.ChosenIndex() + 1 + paxos.Slot(b/5%16)
	}
}

// canonical is the value an honest cluster would propose at s: mostly one
// value per slot, so most inputs keep the Paxos contract.
func (d *fuzzDriver) canonical(s paxos.Slot) journal.Command {
	if d.cfg.Mode == journal.ModeMulti {
		if s%5 == 4 {
			return journal.Truncate(journal.LeaderUUID{}, journal.Seq(s))
		}
		return journal.Write(journal.Entry{Records: [][]byte{{'a' + byte(s%3)}}})
	}
	switch s % 4 {
	case 1:
		return journal.SetLeader(fuzzUUIDs[1], journal.LeaderUUID{})
	case 3:
		return journal.Truncate(fuzzUUIDs[1], journal.Seq(s/2))
	}
	return journal.Write(journal.Entry{Leader: fuzzUUIDs[1], Seq: journal.Seq(s / 2), Records: [][]byte{{'a'}}})
}

// command draws the value of an entry at slot s.
func (d *fuzzDriver) command(s paxos.Slot) journal.Command {
	b := d.in.next()
	if b%4 != 0 {
		return d.canonical(s)
	}
	st := d.node.State()
	u := fuzzUUIDs[b/4%3]
	switch b / 12 % 6 {
	case 0:
		return journal.Noop()
	case 1:
		return journal.Write(journal.Entry{Records: [][]byte{{'m'}}})
	case 2:
		return journal.Write(journal.Entry{Leader: u, Seq: st.NextSeq, Records: [][]byte{{'s'}, {'t'}}})
	case 3:
		return journal.Truncate(u, st.NextSeq-journal.Seq(b/72%2))
	case 4:
		return journal.SetLeader(u, st.Leader)
	}
	return journal.Command{Kind: journal.Kind(b / 72 % 2 * 9)} // invalid: kind 0 or 9
}

// state draws a journal state for a TrimmedTo: valid or not, ahead or behind.
func (d *fuzzDriver) state() journal.State {
	b := d.in.next()
	cur := d.node.State()
	k := min(journal.Seq(b/6%4), journal.SeqMax-cur.NextSeq) // a state at the bounds stays within them
	switch b % 6 {
	case 0:
		return journal.State{}
	case 1:
		return journal.Initial()
	case 2:
		return cur
	case 3:
		st, err := journal.Restore(cur.Leader, cur.Term(), cur.NextSeq+k, min(cur.FirstSeq+k/2, cur.NextSeq+k))
		if err != nil {
			d.t.Fatalf("restore: %v", err)
		}
		return st
	case 4:
		st, err := journal.Restore(fuzzUUIDs[2], min(cur.Term()+1, journal.TermMax), cur.NextSeq+k, cur.FirstSeq)
		if err != nil {
			d.t.Fatalf("restore: %v", err)
		}
		return st
	}
	if b >= 240 {
		// A state at the bounds: the next SetLeader or write must be
		// refused, not wrap the term or the positions.
		st, err := journal.Restore(fuzzUUIDs[1], journal.TermMax, journal.SeqMax, journal.SeqMax)
		if err != nil {
			d.t.Fatalf("restore: %v", err)
		}
		return st
	}
	return journal.State{NextSeq: 1, FirstSeq: 3}
}

func (d *fuzzDriver) entries(b paxos.Ballot, from paxos.NodeID) []paxos.SlotCommand {
	var out []paxos.SlotCommand
	for range d.in.next() % 4 {
		e := paxos.SlotCommand{Slot: d.slot(), Ballot: b}
		if d.in.next()%4 == 0 {
			e.Ballot = d.ballot(from)
		}
		e.Command = d.command(e.Slot)
		out = append(out, e)
	}
	return out
}

func (d *fuzzDriver) message(typ paxos.MsgType) paxos.Message {
	in := d.in
	from := paxos.NodeID(in.next() % 5) // 0 and 4 are not members
	m := paxos.Message{Type: typ, From: from, To: 1}
	if b := in.next(); b%8 == 0 {
		m.To = paxos.NodeID(b / 8 % 5)
	}
	switch typ {
	case paxos.MsgPrepare:
		m.Ballot, m.Slot = d.ballot(from), d.slot()
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
	case paxos.MsgCommit, paxos.MsgHeartbeat:
		m.Ballot, m.Commit = d.ballot(from), d.slot()
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
	case paxos.MsgTrimmedTo:
		m.Slot, m.State = d.slot(), d.state()
	default:
		m.Ballot = d.ballot(from)
	}
	return m
}

// drain hands out every batch, checks its addressing and sync flag, and
// persists it (synced or not, as the input says).
func (d *fuzzDriver) drain() {
	if d.rebootOnContractFault() {
		return
	}
	for d.node.HasReady() {
		rd := d.node.Ready()
		needs := false
		for _, op := range rd.Writes {
			needs = needs || op.NeedsSync()
		}
		if rd.MustSync != needs {
			d.t.Fatalf("MustSync %v for writes %v\n%s", rd.MustSync, rd.Writes, d.history())
		}
		for _, m := range rd.Messages {
			if m.From != 1 || m.To == 1 || !d.cfg.Acceptors.Contains(m.To) {
				d.t.Fatalf("message %s is misaddressed\n%s", m, d.history())
			}
		}
		d.store.Append(rd.Writes)
		if d.in.next()%4 != 0 {
			d.store.Sync()
			d.durablePromise = d.store.InitialState().Promised
		}
		d.node.Advance()
		if d.node.WantsElectionTimeout() {
			d.node.SetElectionTimeout(d.opts.ElectionTicks + int(d.in.next()%3))
		}
	}
}

// check runs the oracles a single node can be held to after every step.
func (d *fuzzDriver) check() {
	n := d.node
	switch {
	case n.Promised().Less(d.promise):
		d.t.Fatalf("promise fell from %s to %s\n%s", d.promise, n.Promised(), d.history())
	case n.ChosenIndex() < d.chosen:
		d.t.Fatalf("chosen index fell from %d to %d\n%s", d.chosen, n.ChosenIndex(), d.history())
	case n.Floor() < d.floor:
		d.t.Fatalf("floor fell from %d to %d\n%s", d.floor, n.Floor(), d.history())
	case n.State().FirstSeq < d.first:
		d.t.Fatalf("first_seq fell from %d to %d\n%s", d.first, n.State().FirstSeq, d.history())
	case n.Applied() != n.ChosenIndex() || n.Floor() > n.Applied()+1:
		d.t.Fatalf("floor %d applied %d chosen %d\n%s", n.Floor(), n.Applied(), n.ChosenIndex(), d.history())
	}
	d.promise, d.chosen, d.floor, d.first = n.Promised(), n.ChosenIndex(), n.Floor(), n.State().FirstSeq
}

func (d *fuzzDriver) step() {
	op := int(d.in.next()) % fuzzOpCount
	switch {
	case op < len(fuzzMsgTypes):
		m := d.message(fuzzMsgTypes[op])
		d.trace = append(d.trace, "step "+m.String())
		d.node.Step(m)
		d.rebootOnContractFault()
	case op == fuzzOpTick:
		k := 1 + int(d.in.next()%8)
		d.trace = append(d.trace, fmt.Sprintf("tick ×%d", k))
		for range k {
			d.node.Tick()
		}
	case op == fuzzOpPropose:
		st := d.node.State()
		e := journal.Entry{Records: [][]byte{{'p', d.in.next() % 3}}}
		if d.cfg.Mode == journal.ModeSingle {
			e.Leader, e.Seq = st.Leader, st.NextSeq
		}
		res := d.node.Propose(e)
		d.trace = append(d.trace, fmt.Sprintf("propose write -> %d slot %d", res.Status, res.Slot))
		if res.Status == paxos.Proposed {
			d.proposed[res.Slot] = journal.Write(e)
		}
	case op == fuzzOpProposeControl:
		st := d.node.State()
		var c journal.Command
		switch d.in.next() % 3 {
		case 0:
			c = journal.Noop()
		case 1:
			u := st.Leader
			if d.cfg.Mode == journal.ModeMulti {
				u = journal.LeaderUUID{}
			}
			c = journal.Truncate(u, st.NextSeq)
		default:
			c = journal.SetLeader(fuzzUUIDs[1+int(st.Term()%2)], st.Leader)
		}
		res := d.node.ProposeControl(c)
		d.trace = append(d.trace, fmt.Sprintf("propose %s -> %d slot %d", c, res.Status, res.Slot))
		if res.Status == paxos.Proposed {
			d.proposed[res.Slot] = c
		}
	case op == fuzzOpRead:
		ctx := uint64(d.in.next() % 4)
		d.trace = append(d.trace, fmt.Sprintf("read %d -> %v", ctx, d.node.QuorumRead(ctx)))
	case op == fuzzOpStepDown:
		d.trace = append(d.trace, "step down")
		d.node.StepDown()
	case op == fuzzOpRestart:
		d.trace = append(d.trace, "restart")
		d.store.Crash()
		d.boot()
	case op == fuzzOpDrain:
		d.trace = append(d.trace, "drain")
		d.drain()
	}
	d.decoded = d.in.pos
	if d.in.next()%4 != 0 {
		d.drain()
	}
	d.check()
}

// newFuzzDriver reads the writer mode from the input's first byte and boots
// node 1 of a three-node majority with small bounds, so that paging,
// windows, catch-up pages and read expiry are reached in a few steps.
func newFuzzDriver(tb testing.TB, in *fuzzIn) *fuzzDriver {
	mode := journal.ModeMulti
	if in.next()%2 == 1 {
		mode = journal.ModeSingle
	}
	d := &fuzzDriver{t: tb, in: in, store: memstore.New(), proposed: map[paxos.Slot]journal.Command{},
		cfg: paxos.Config{ID: 1, Acceptors: majority(3), Mode: mode},
		opts: paxos.Options{ElectionTicks: 3, HeartbeatTicks: 1, PipelineWindow: 2, ProposeQueueMax: 4, PromiseBatch: 2,
			CatchUpBatch: 2, CatchUpRetryTicks: 2, ReadTTLTicks: 3, ReadsMax: 3, ResendBatch: 2}}
	d.boot()
	return d
}

// playFuzzStep runs one input to its end; any panic fails it.
func playFuzzStep(t *testing.T, data []byte) {
	in := &fuzzIn{data: data}
	d := newFuzzDriver(t, in)
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("panic: %v\n%s", r, d.history())
		}
	}()
	for i := 0; i < fuzzStepsMax && in.pos < len(in.data); i++ {
		d.step()
	}
}
