package client

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/wire"
)

// MemberStatus is one server's answer to Inspect: its machine's facts and,
// when a journal was named, its consensus facts about that journal.
type MemberStatus struct {
	// Addr is the server's address as given to Dial.
	Addr string
	// Err is why the server did not answer (the other fields are then
	// zero), or a refusal ("unknown_journal").
	Err error
	// NodeID is the machine's id; CellID its cell's (0: not yet in a cell);
	// Journals the journals it serves.
	NodeID, CellID uint64
	Journals       []journal.ID

	// Journal facts (a journal was named).
	// Role is "leader", "candidate" or "follower"; LeaderHint the node the
	// server last heard leading (0: unknown).
	Role       string
	LeaderHint uint64
	// PromisedRound and PromisedNode are the ballot the server promised.
	PromisedRound, PromisedNode uint64
	// ChosenIndex, Applied and FirstSlot are consensus slots (not
	// positions): everything <= ChosenIndex is chosen, <= Applied folded,
	// and slots from FirstSlot on are retained.
	ChosenIndex, Applied, FirstSlot uint64
	// View is the journal's public state as this server folded it.
	View journal.View
	// Members are the journal's acceptors; Quorum names their quorum
	// system ("majority", "flexible q1/q2", "grid RxC").
	Members []uint64
	Quorum  string
	// Quarantined: the journal is down on this server after a fault, and
	// will reboot from its store.
	Quarantined bool
}

// Inspect asks every server, in parallel, for its facts about journal id
// (only its machine's facts when id is the zero ID), in Servers order. It
// is an operator's view: each answer is one server's, as of when it
// answered. It needs no quorum and changes nothing.
func (c *Client) Inspect(ctx context.Context, id journal.ID) []MemberStatus {
	out := make([]MemberStatus, len(c.servers))
	var wg sync.WaitGroup
	for i, s := range c.servers {
		out[i].Addr = s.addr
		wg.Go(func() {
			actx, cancel := attemptCtx(ctx, 0)
			defer cancel()
			r, err := c.inspectAt(actx, i, id)
			st := &out[i]
			if err != nil {
				st.Err = err
				return
			}
			st.NodeID, st.CellID = r.GetNodeId(), r.GetCellId()
			for _, j := range r.GetJournals() {
				st.Journals = append(st.Journals, wire.JournalIDFromPB(j))
			}
			if ref := r.GetRefusal(); ref != "" {
				st.Err = refusalError(ref, id)
				return
			}
			if id == (journal.ID{}) {
				return
			}
			st.Role, st.LeaderHint = r.GetRole(), r.GetLeaderHint()
			st.PromisedRound, st.PromisedNode = r.GetPromised().GetRound(), r.GetPromised().GetNode()
			st.ChosenIndex, st.Applied, st.FirstSlot = r.GetChosenIndex(), r.GetApplied(), r.GetFirstSlot()
			st.View = wire.ViewFromPB(r.GetState())
			st.Members = r.GetMembers()
			st.Quorum = quorumName(r.GetQuorumSystem().String(), r.GetPhase1Quorum(), r.GetPhase2Quorum(), r.GetRows(), r.GetCols())
			st.Quarantined = r.GetQuarantined()
		})
	}
	wg.Wait()
	return out
}

func refusalError(ref string, id journal.ID) error {
	if ref == "unknown_journal" {
		return &refusal{err: ErrUnknownJournal, detail: id.String()}
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
	return "paros/client: inspect refused: " + r.detail
}

func (r *refusal) Unwrap() error { return r.err }

func quorumName(system string, q1, q2, rows, cols uint32) string {
	switch strings.TrimPrefix(system, "QUORUM_SYSTEM_") {
	case "FLEXIBLE":
		return "flexible " + strconv.Itoa(int(q1)) + "/" + strconv.Itoa(int(q2))
	case "GRID":
		return "grid " + strconv.Itoa(int(rows)) + "x" + strconv.Itoa(int(cols))
	}
	return "majority"
}
