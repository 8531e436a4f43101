package admin

import (
	"context"
	"sync"
	"time"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/wire"
)

// MemberStatus is one server's answer to Inspect: its machine's facts and,
// when a journal was named, its consensus facts about that journal.
type MemberStatus struct {
	// Addr is the server's address as given to Dial.
	Addr string
	// Err is why the server did not answer (the other fields are then
	// zero), or a refusal (unknown_journal: client.ErrUnknownJournal).
	Err error
	// NodeID is the machine's id; CellID its cell's (0: not yet in a
	// cell); Journals the journals it serves.
	NodeID   NodeID
	CellID   uint64
	Journals []journal.ID

	// Journal facts (a journal was named).
	// Role is "leader", "candidate" or "follower", or "replica" on a
	// replica machine; LeaderHint the node the server last heard leading
	// (0: unknown).
	Role       string
	LeaderHint NodeID
	// Promised is the ballot the server promised.
	Promised Ballot
	// ChosenIndex, Applied and FirstSlot are consensus slots (not
	// positions): everything <= ChosenIndex is chosen, <= Applied folded,
	// and slots from FirstSlot on are retained.
	ChosenIndex, Applied, FirstSlot uint64
	// View is the journal's public state as this server folded it.
	View journal.View
	// Members are the journal's acceptors in the configuration this server
	// follows (with matchmakers it moves by Reconfigure; a joiner that has
	// not learned one reports the one it joined for), and Quorum their
	// quorum system.
	Members []NodeID
	Quorum  Quorum
	// Quarantined: the journal is down on this server after a fault, and
	// will reboot from its store.
	Quarantined bool

	// Matchmaker Paxos facts (zero on a plain cell, which has no
	// matchmakers). ConfigBallot is the ballot of the configuration the
	// server follows and ConfigSince the ballot of the reconfiguration
	// that introduced its members (zero: the founding configuration).
	// Matchmakers are the cell's matchmakers, the set the server follows,
	// and MatchmakerGeneration its generation (1: the founding set; one
	// more per SetMatchmakers).
	ConfigBallot, ConfigSince Ballot
	Matchmakers               []NodeID
	MatchmakerGeneration      uint64
	// On the leader only, once a matchmaker quorum holds its garbage
	// collection durably (GCEffective): GCWatermark, the watermark a
	// Retire carries, and Retirable, the acceptors of older
	// configurations outside the current one, each of which may now be
	// retired (Client.Retire).
	GCEffective bool
	GCWatermark Ballot
	Retirable   []NodeID
	// Unrecoverable names slots the server found lost beyond the fault
	// budget: every copy of a chosen value damaged. The journal halts
	// there (no write is accepted past it) until an operator restores it.
	Unrecoverable []uint64

	// Machines are every machine of the cell with the address it is
	// reached at (founders and machines admitted since), on every answer,
	// a journal named or not.
	Machines []CellMachine
}

// CellMachine is one machine of a cell.
type CellMachine struct {
	NodeID NodeID
	Addr   string
	// Replica: a replica machine (reads only; never a member).
	Replica bool
	// Proxy: a proxy machine (a proxy leader of every journal; never a
	// member, and serves no client call).
	Proxy bool
}

func ballotOf(b *pb.Ballot) Ballot { return Ballot{Round: b.GetRound(), Node: NodeID(b.GetNode())} }

// Inspect asks every server of the client.Client, in parallel, for its
// facts about journal id (only its machine's facts when id is the zero
// ID), in client.Client.Servers order. It is an operator's view: each
// answer is one server's, as of when it answered. It needs no quorum and
// changes nothing.
func (a *Client) Inspect(ctx context.Context, id journal.ID) []MemberStatus {
	servers := a.c.Servers()
	out := make([]MemberStatus, len(servers))
	var wg sync.WaitGroup
	for i, addr := range servers {
		wg.Go(func() { out[i] = a.inspectAddr(ctx, addr, id, inspectTimeout) })
	}
	wg.Wait()
	return out
}

// inspectAddr asks the machine at addr for its facts about journal id,
// within timeout.
func (a *Client) inspectAddr(ctx context.Context, addr string, id journal.ID, timeout time.Duration) MemberStatus {
	cc, err := a.l.Conn(addr)
	if err != nil {
		return MemberStatus{Addr: addr, Err: err}
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req := &pb.InspectRequest{NodeOnly: id == journal.ID{}}
	if id != (journal.ID{}) {
		req.Journal = wire.JournalIDToPB(id)
	}
	r, err := pb.NewAdminClient(cc).Inspect(actx, req)
	return statusOf(addr, id, r, err)
}

// statusOf is the MemberStatus of the server at addr from its answer r
// (or err) to an Inspect of id.
func statusOf(addr string, id journal.ID, r *pb.InspectReply, err error) MemberStatus {
	st := MemberStatus{Addr: addr}
	if err != nil {
		st.Err = err
		return st
	}
	st.NodeID, st.CellID = NodeID(r.GetNodeId()), r.GetCellId()
	for _, j := range r.GetJournals() {
		st.Journals = append(st.Journals, wire.JournalIDFromPB(j))
	}
	for _, m := range r.GetMachines() {
		st.Machines = append(st.Machines, CellMachine{NodeID: NodeID(m.GetNodeId()), Addr: m.GetAddr(),
			Replica: m.GetRole() == roleReplica, Proxy: m.GetRole() == roleProxy})
	}
	if ref := r.GetRefusal(); ref != "" {
		st.Err = refusalError(ref, id)
		return st
	}
	if id == (journal.ID{}) {
		return st
	}
	st.Role, st.LeaderHint = r.GetRole(), NodeID(r.GetLeaderHint())
	st.Promised = ballotOf(r.GetPromised())
	st.ChosenIndex, st.Applied, st.FirstSlot = r.GetChosenIndex(), r.GetApplied(), r.GetFirstSlot()
	st.View = wire.ViewFromPB(r.GetState())
	st.Members = nodeIDs(r.GetMembers())
	st.Quorum = quorumFromWire(r.GetQuorumSystem(), r.GetPhase1Quorum(), r.GetPhase2Quorum(), r.GetRows(), r.GetCols())
	st.Quarantined = r.GetQuarantined()
	st.ConfigBallot, st.ConfigSince = ballotOf(r.GetConfigBallot()), ballotOf(r.GetConfigSince())
	st.Matchmakers, st.MatchmakerGeneration = nodeIDs(r.GetMatchmakers()), r.GetMatchmakerGeneration()
	st.GCEffective, st.GCWatermark, st.Retirable = r.GetGcEffective(), ballotOf(r.GetGcWatermark()), nodeIDs(r.GetRetirable())
	st.Unrecoverable = r.GetUnrecoverable()
	return st
}

func refusalError(ref string, id journal.ID) error {
	if ref == "unknown_journal" {
		return &refusal{err: client.ErrUnknownJournal, detail: id.String()}
	}
	return &refusal{detail: ref}
}

// refusal is a server's refusal of an Inspect.
type refusal struct {
	err    error
	detail string
}

func (r *refusal) Error() string {
	if r.err != nil {
		return r.err.Error() + ": " + r.detail
	}
	return "paros/admin: inspect refused: " + r.detail
}

func (r *refusal) Unwrap() error { return r.err }
