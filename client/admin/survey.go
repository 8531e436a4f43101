package admin

import (
	"context"
	"fmt"
	"sync"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/internal/link"
	"github.com/parosdb/paros/core/journal"
)

// survey is one look at every machine of the cell the Client can reach.
type survey struct {
	cellID uint64
	// machines maps every acceptor machine the cell lists (any answer's
	// Machines) to its address; replicas its replica machines and proxies
	// its proxy machines, which are told of a newcomer (Admit) and never
	// made members.
	machines map[NodeID]string
	replicas map[NodeID]string
	proxies  map[NodeID]string
	// answers are the machines that answered, by node id (a refusal such
	// as unknown_journal is an answer).
	answers map[NodeID]MemberStatus
	// lastErr is the error of a machine that did not answer.
	lastErr error
}

// look inspects journal id on every server the client.Client was given,
// then on every machine of the cell those answers list and that is not
// among them.
func (a *Client) look(ctx context.Context, id journal.ID) survey {
	sv := survey{machines: map[NodeID]string{}, replicas: map[NodeID]string{}, proxies: map[NodeID]string{},
		answers: map[NodeID]MemberStatus{}}
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
	ictx, cancel := context.WithTimeout(ctx, lookTimeout) // a machine that does not answer holds no poll up
	defer cancel()
	servers := a.c.Servers()
	first := make([]MemberStatus, len(servers))
	var wg sync.WaitGroup
	for i, addr := range servers {
		wg.Go(func() { first[i] = a.inspectAddr(ictx, addr, id, lookTimeout) })
	}
	wg.Wait()
	for _, st := range first {
		add(st)
	}
	var rest []string
	for _, known := range []map[NodeID]string{sv.machines, sv.replicas, sv.proxies} {
		for node, addr := range known {
			if _, ok := sv.answers[node]; !ok {
				rest = append(rest, addr)
			}
		}
	}
	out := make([]MemberStatus, len(rest))
	for i, addr := range rest {
		wg.Go(func() { out[i] = a.inspectAddr(ictx, addr, id, lookTimeout) })
	}
	wg.Wait()
	for _, st := range out {
		add(st)
	}
	return sv
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
		if !found || best.Promised.Less(st.Promised) {
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
func (sv survey) serves(node NodeID) bool {
	st, ok := sv.answers[node]
	return ok && st.Err == nil && st.Role != ""
}

// settled checks the survey's answers before anything is changed: some
// machine answered (else client.ErrNoServer, or client.ErrDenied), one
// serves the journal (else client.ErrUnknownJournal), and it has
// matchmakers (else ErrNoMatchmakers).
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

// reached checks that some machine answered the survey (else
// client.ErrNoServer, or client.ErrDenied) and that one serves journal id
// (else client.ErrUnknownJournal).
func (sv survey) reached(id journal.ID) error {
	if len(sv.answers) == 0 {
		if link.Denied(sv.lastErr) {
			return fmt.Errorf("%w: %w", client.ErrDenied, sv.lastErr)
		}
		return fmt.Errorf("%w (last error: %v)", client.ErrNoServer, sv.lastErr)
	}
	for _, st := range sv.answers {
		if link.Denied(st.Err) {
			return fmt.Errorf("%w: %s: %w", client.ErrDenied, st.Addr, st.Err)
		}
	}
	for _, st := range sv.answers {
		if st.Err == nil && st.Role != "" && st.Role != "quarantined" {
			return nil
		}
	}
	return fmt.Errorf("%w: %s: no machine of the cell serves it", client.ErrUnknownJournal, id)
}

// surveyed checks a survey of the cell: some machine of a cell answered
// (else client.ErrNoServer, or client.ErrDenied).
func (sv survey) surveyed() error {
	for _, st := range sv.answers {
		if link.Denied(st.Err) {
			return fmt.Errorf("%w: %s: %w", client.ErrDenied, st.Addr, st.Err)
		}
	}
	switch {
	case len(sv.answers) == 0 && link.Denied(sv.lastErr):
		return fmt.Errorf("%w: %w", client.ErrDenied, sv.lastErr)
	case len(sv.answers) == 0:
		return fmt.Errorf("%w (last error: %v)", client.ErrNoServer, sv.lastErr)
	case sv.cellID == 0:
		return fmt.Errorf("%w: no machine answered as a machine of a cell", client.ErrNoServer)
	}
	return nil
}
