package client

import (
	"context"
	"fmt"
	"sync"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/wire"
)

// survey is one look at every machine of the cell the Client can reach.
type survey struct {
	cellID uint64
	// machines maps every acceptor machine the cell lists (any answer's
	// Machines) to its address; replicas its replica machines and proxies
	// its proxy machines, which are told of a newcomer (Admit) and never
	// made members.
	machines map[uint64]string
	replicas map[uint64]string
	proxies  map[uint64]string
	// answers are the machines that answered, by node id (a refusal such
	// as unknown_journal is an answer).
	answers map[uint64]MemberStatus
	// lastErr is the error of a machine that did not answer.
	lastErr error
}

// look inspects journal id on every server the Client was given, then on
// every machine of the cell those answers list and that is not among them.
func (c *Client) look(ctx context.Context, id journal.ID) survey {
	sv := survey{machines: map[uint64]string{}, replicas: map[uint64]string{}, proxies: map[uint64]string{},
		answers: map[uint64]MemberStatus{}}
	add := func(st MemberStatus) {
		if st.NodeID == 0 {
			if st.Err != nil {
				sv.lastErr = fmt.Errorf("%s: %w", st.Addr, st.Err)
			}
			return
		}
		if st.CellID != 0 {
			sv.cellID = st.CellID
		}
		sv.answers[st.NodeID] = st
		for _, m := range st.Machines {
			switch {
			case m.Replica:
				sv.replicas[m.NodeID] = m.Addr
			case m.Proxy:
				sv.proxies[m.NodeID] = m.Addr
			default:
				sv.machines[m.NodeID] = m.Addr
			}
		}
	}
	ictx, cancel := context.WithTimeout(ctx, learnTimeout) // a machine that does not answer holds no poll up
	defer cancel()
	for _, st := range c.Inspect(ictx, id) {
		add(st)
	}
	var rest []string
	for _, known := range []map[uint64]string{sv.machines, sv.replicas, sv.proxies} {
		for node, addr := range known {
			if _, ok := sv.answers[node]; !ok {
				rest = append(rest, addr)
			}
		}
	}
	out := make([]MemberStatus, len(rest))
	var wg sync.WaitGroup
	for i, addr := range rest {
		wg.Go(func() { out[i] = c.inspectAddr(ictx, addr, id) })
	}
	wg.Wait()
	for _, st := range out {
		add(st)
	}
	return sv
}

// inspectAddr asks the machine at addr for its facts about journal id.
func (c *Client) inspectAddr(ctx context.Context, addr string, id journal.ID) MemberStatus {
	cc, err := c.conn(addr)
	if err != nil {
		return MemberStatus{Addr: addr, Err: err}
	}
	actx, cancel := context.WithTimeout(ctx, learnTimeout)
	defer cancel()
	req := &pb.InspectRequest{NodeOnly: id == journal.ID{}}
	if id != (journal.ID{}) {
		req.Journal = wire.JournalIDToPB(id)
	}
	r, err := pb.NewAdminClient(cc).Inspect(actx, req)
	return statusOf(addr, id, r, err)
}

// leader is the answer of the node that says it leads (the highest
// promise, if stale answers name two), or false.
func (sv survey) leader() (MemberStatus, bool) {
	var best MemberStatus
	found := false
	for _, st := range sv.answers {
		if st.Err != nil || st.Role != "leader" {
			continue
		}
		b := Ballot{Round: st.PromisedRound, Node: st.PromisedNode}
		if !found || (Ballot{Round: best.PromisedRound, Node: best.PromisedNode}).Less(b) {
			best, found = st, true
		}
	}
	return best, found
}

// newestSince is the newest ConfigSince any answer follows.
func (sv survey) newestSince() Ballot {
	var out Ballot
	for _, st := range sv.answers {
		if st.Err == nil && out.Less(st.ConfigSince) {
			out = st.ConfigSince
		}
	}
	return out
}

// serves reports whether node answered that it serves the journal.
func (sv survey) serves(node uint64) bool {
	st, ok := sv.answers[node]
	return ok && st.Err == nil && st.Role != ""
}

// settled checks the survey's answers before anything is changed: some
// machine answered (else ErrNoServer, or ErrDenied), one serves the
// journal (else ErrUnknownJournal), and it has matchmakers (else
// ErrNoMatchmakers).
func (sv survey) settled(id journal.ID) error {
	if err := sv.reached(id); err != nil {
		return err
	}
	for _, st := range sv.answers {
		if st.Err == nil && st.Role != "" && st.Role != "quarantined" {
			if len(st.Matchmakers) == 0 {
				return fmt.Errorf("%w: journal %s", ErrNoMatchmakers, id)
			}
			return nil
		}
	}
	return nil
}

// reached checks that some machine answered the survey (else ErrNoServer,
// or ErrDenied) and that one serves journal id (else ErrUnknownJournal).
func (sv survey) reached(id journal.ID) error {
	if len(sv.answers) == 0 {
		if denied(sv.lastErr) {
			return fmt.Errorf("%w: %w", ErrDenied, sv.lastErr)
		}
		return fmt.Errorf("%w (last error: %v)", ErrNoServer, sv.lastErr)
	}
	for _, st := range sv.answers {
		if denied(st.Err) {
			return fmt.Errorf("%w: %s: %w", ErrDenied, st.Addr, st.Err)
		}
	}
	for _, st := range sv.answers {
		if st.Err == nil && st.Role != "" && st.Role != "quarantined" {
			return nil
		}
	}
	return fmt.Errorf("%w: %s: no machine of the cell serves it", ErrUnknownJournal, id)
}
