package paxos

import (
	"fmt"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/quorum"
)

// MsgType names a message kind. The numbers match the wire's oneof field
// numbers and are frozen: the wire carries them, so renumbering would break
// peers of another version.
type MsgType uint8

const (
	MsgInvalid         MsgType = 0
	MsgPrepare         MsgType = 1
	MsgPromise         MsgType = 2
	MsgAccept          MsgType = 3
	MsgAccepted        MsgType = 4
	MsgNack            MsgType = 5
	MsgCommit          MsgType = 6
	MsgCatchUpRequest  MsgType = 7
	MsgCatchUpResponse MsgType = 8
	MsgHeartbeat       MsgType = 11
	MsgHeartbeatAck    MsgType = 12
	MsgRelinquish      MsgType = 16
	MsgPreRead         MsgType = 17
	MsgPreReadAck      MsgType = 18
	MsgTrimmedTo       MsgType = 19
	// Matchmaker Paxos (never sent on a plain deployment).
	MsgMatch             MsgType = 20
	MsgMatchReply        MsgType = 21
	MsgGarbageCollect    MsgType = 22
	MsgGarbageCollectAck MsgType = 23
	MsgProbe             MsgType = 24
	// The scrubber (scrub.go).
	MsgScrub      MsgType = 25
	MsgScrubReply MsgType = 26
)

var msgNames = map[MsgType]string{
	MsgPrepare: "Prepare", MsgPromise: "Promise", MsgAccept: "Accept", MsgAccepted: "Accepted",
	MsgNack: "Nack", MsgCommit: "Commit", MsgCatchUpRequest: "CatchUpRequest",
	MsgCatchUpResponse: "CatchUpResponse", MsgHeartbeat: "Heartbeat", MsgHeartbeatAck: "HeartbeatAck",
	MsgPreRead: "PreRead", MsgPreReadAck: "PreReadAck", MsgTrimmedTo: "TrimmedTo",
	MsgMatch: "Match", MsgMatchReply: "MatchReply", MsgGarbageCollect: "GarbageCollect",
	MsgGarbageCollectAck: "GarbageCollectAck", MsgProbe: "Probe",
	MsgScrub: "Scrub", MsgScrubReply: "ScrubReply", MsgRelinquish: "Relinquish",
}

func (t MsgType) String() string {
	if s, ok := msgNames[t]; ok {
		return s
	}
	return fmt.Sprintf("Msg(%d)", uint8(t))
}

// Message is one protocol message, a tagged struct like etcd raft's
// raftpb.Message: Type says which fields mean something.
//
//	Type             fields used
//	---------------  ------------------------------------------------------------
//	Prepare          Ballot, Slot (from_slot: the candidate's chosen index + 1)
//	Promise          Ballot, Slot (from_slot), Entries (accepted, one page),
//	                 Faulty, Next (next_from_slot; 0 = terminal page)
//	Accept           Ballot, Entries (slots to vote on), Commit (watermark)
//	Accepted         Ballot, Votes (slot + fingerprint per vote)
//	Nack             Ballot (the refuser's promise), Refused (the ballot it
//	                 refused), Slot (its floor)
//	Commit           Ballot, Commit (every slot <= Commit is chosen); from
//	                 a proxy leader instead Votes (slots it saw a Phase-2
//	                 quorum accept at Ballot, with the value's fingerprint)
//	                 and Leader
//	Accept           from a leader to a proxy (a delegation): + Config, the
//	                 configuration whose quorums decide; from a proxy to an
//	                 acceptor: + Leader
//	CatchUpRequest   Slot (first slot wanted)
//	CatchUpResponse  Entries (chosen values, ascending, contiguous), Next
//	                 (the next page's first slot; 0 = the window's last page)
//	Heartbeat        Ballot, Commit (watermark)
//	HeartbeatAck     Ballot, Commit (the follower's chosen index)
//	PreRead          Ctx
//	PreReadAck       Ctx, Watermark (highest slot the acceptor ever voted in)
//	TrimmedTo        Slot (point: the sender's floor), State (sealed below it)
//	Relinquish       Ballot (the authority), To (the successor), Slot
//	                 (from_slot), Next (next_slot: the allocator frontier),
//	                 Decided (slots known chosen), Entries (slots whose
//	                 Phase 2 is open; with Decided they tile [Slot, Next)),
//	                 Watermark (the election fence), Config and Since on a
//	                 deployment with matchmakers
//	Scrub            Ballot (the scrubbing leader's), Slot (page start),
//	                 Next (page end, exclusive)
//	ScrubReply       Ballot (echo), Slot, Next (echo), Scrub (slot, ballot,
//	                 value hash and damage of each record of the page, as
//	                 read from the answerer's disk; never the bytes)
//
// On a deployment with matchmakers (never on a plain one):
//
//	Prepare          + Config (C_b, the ballot's configuration), Since
//	Heartbeat        + Config (C_b), Since
//	PreReadAck       + Since (the answerer's configuration)
//	Match            Ballot, Config, Reconf (node → matchmaker: register),
//	                 Prepared (the highest of the sender's own ballots it
//	                 may have sent a Prepare at: its belief registrations
//	                 above Prepared and below Ballot were abandoned before
//	                 Phase 1, and the matchmaker retracts them)
//	Probe            (node → matchmaker: the effective configuration only)
//	MatchReply       Ballot (echo), Refusal, Refused (stale: the highest
//	                 registered), GC (watermark), History (registrations in
//	                 [watermark, Ballot)), Effective
//	GarbageCollect   GC (raise the watermark to it)
//	GarbageCollectAck GC (the durable watermark, >= the request)
//
// The sender of an Accept, a Commit or a Heartbeat leads at Ballot but
// need not own it: a successor the owner handed its leadership to leads at
// the owner's ballot (node_handoff.go).
//
// A watermark Commit c from the leader of ballot b tells a follower that
// every slot <= c is chosen, and that a record it holds at exactly ballot b
// is the chosen value (one proposer per ballot proposes one value per slot).
type Message struct {
	Type     MsgType
	From, To NodeID
	// Leader is the leader an acceptor follows when the sender is a proxy
	// leader (proxy.go): the hint it adopts, while its Accepted goes to
	// the proxy. Zero otherwise (the sender is the leader).
	Leader    NodeID
	Ballot    Ballot
	Refused   Ballot
	Slot      Slot
	Next      Slot
	Commit    Slot
	Watermark Slot
	Ctx       uint64
	Entries   []SlotCommand
	Decided   []SlotCommand
	Votes     []SlotVote
	Faulty    []SlotBallot
	Scrub     []ScrubEntry
	State     journal.State

	// Matchmaker Paxos fields (zero on a plain deployment).
	Config    quorum.System
	Since     Ballot
	History   []Registration
	Effective Registration
	GC        Ballot
	Reconf    bool
	Prepared  Ballot
	Refusal   MatchRefusal
	// Generation is the matchmaker-set generation a matchmaking message's
	// sender believes in force (the fence every matchmaker checks; a
	// reply echoes it). Successor is the chosen set a refusal points at
	// (MatchStopped, MatchGeneration), and on a Heartbeat or its ack the
	// set the sender follows once a handover replaced the founding one.
	Generation uint64
	Successor  MatchmakerSet
	// Quiet: on a Heartbeat, the leader asks its members to fall quiet
	// (node_quiet.go); on a HeartbeatAck, the member fell quiet.
	Quiet bool
}

// MessageBytesMax is the soft bound on the record bytes one message carries
// (every queue and loop has a bound). Accept batches, Promise pages and
// catch-up pages stop adding entries once they reach it, after at least one
// entry, so a message is at most MessageBytesMax plus one write (1 MiB) —
// well inside a transport's frame limit even when writes are large.
const MessageBytesMax = 2 << 20

// inPages calls send with consecutive pages of entries, each stopping once
// it holds MessageBytesMax of records (after at least one entry), so one
// message carries many slots and stays within the transport's frame.
func inPages(entries []SlotCommand, send func(page []SlotCommand)) {
	for len(entries) > 0 {
		k, bytes := 0, 0
		for k < len(entries) && (k == 0 || bytes < MessageBytesMax) {
			bytes += commandBytes(entries[k].Command)
			k++
		}
		send(entries[:k:k])
		entries = entries[k:]
	}
}

// commandBytes is the record bytes a command carries.
func commandBytes(c journal.Command) int { return c.Entry.Bytes() }

// EarlyOK reports whether the message may leave before its batch is
// durable: it promises nothing and announces no decision, so a crash before
// the sync leaves no peer relying on state the sender forgot. Prepare is not
// on the list even though it promises nothing itself: a candidate's own
// promise of its new ballot rides in the same batch, and a Prepare sent
// before that promise is durable lets a crashed candidate reuse the ballot
// for a different value after reboot. See docs/design/divergences.md.
func (m Message) EarlyOK() bool {
	switch m.Type {
	case MsgAccept:
		// An inherited leadership's Accept waits for its own record of the
		// round (the durable frontier, node_handoff.go): a successor that
		// crashed with the Accept out and the record lost could take the
		// same authority again from a replayed Relinquish and run another
		// value at the same (slot, ballot).
		return m.Ballot.Node == m.From
	case MsgPreRead, MsgCatchUpRequest:
		return true
	}
	return false
}

func (m Message) String() string {
	s := fmt.Sprintf("%s %016x→%016x b=%s", m.Type, uint64(m.From), uint64(m.To), m.Ballot)
	switch m.Type {
	case MsgPrepare, MsgCatchUpRequest:
		s += fmt.Sprintf(" from=%d", m.Slot)
	case MsgPromise:
		s += fmt.Sprintf(" from=%d n=%d faulty=%d next=%d", m.Slot, len(m.Entries), len(m.Faulty), m.Next)
	case MsgAccept:
		s += fmt.Sprintf(" n=%d commit=%d", len(m.Entries), m.Commit)
		if len(m.Entries) > 0 {
			s += fmt.Sprintf(" slots=%d..%d", m.Entries[0].Slot, m.Entries[len(m.Entries)-1].Slot)
		}
	case MsgAccepted:
		s += fmt.Sprintf(" votes=%d", len(m.Votes))
	case MsgNack:
		s += fmt.Sprintf(" floor=%d", m.Slot)
	case MsgCommit, MsgHeartbeat, MsgHeartbeatAck:
		s += fmt.Sprintf(" commit=%d", m.Commit)
	case MsgCatchUpResponse:
		s += fmt.Sprintf(" n=%d next=%d", len(m.Entries), m.Next)
	case MsgPreRead:
		s += fmt.Sprintf(" ctx=%d", m.Ctx)
	case MsgPreReadAck:
		s += fmt.Sprintf(" ctx=%d wm=%d", m.Ctx, m.Watermark)
	case MsgTrimmedTo:
		s += fmt.Sprintf(" point=%d state=%s", m.Slot, m.State)
	case MsgRelinquish:
		s += fmt.Sprintf(" from=%d next=%d decided=%d pending=%d fence=%d", m.Slot, m.Next, len(m.Decided), len(m.Entries), m.Watermark)
	case MsgMatch:
		s += fmt.Sprintf(" config=%s reconf=%v prepared=%s", m.Config, m.Reconf, m.Prepared)
	case MsgMatchReply:
		s += fmt.Sprintf(" %s gc=%s history=%d effective=%s", m.Refusal, m.GC, len(m.History), m.Effective.Ballot)
	case MsgGarbageCollect, MsgGarbageCollectAck:
		s += fmt.Sprintf(" gc=%s", m.GC)
	}
	return s
}
