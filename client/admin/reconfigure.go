package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/wire"
)

// Reconfigure moves a journal to another acceptor configuration
// (Matchmaker Paxos), adding machines to the cell as it goes; Retire
// (retire.go) then lets a machine the reconfiguration removed delete its
// copy.

// Configuration is a journal's acceptor configuration as Reconfigure takes
// it. Each member is a node id in hex (as NodeID and parosctl print it)
// of a machine of the cell, or the host:port of a machine to add to the
// cell (an idle `paros serve` on an empty data dir, or a machine of the
// cell). Quorum is the quorum system over the members (the zero Quorum:
// majority).
type Configuration struct {
	Members []string
	Quorum  Quorum
}

// Pace of Reconfigure: every retry loop has a bound.
const (
	// reconfigurePoll is the pause between two looks at the cell while a
	// reconfiguration takes; reconfigurePollsMax bounds the looks (about
	// a minute), beyond the caller's context.
	reconfigurePoll     = 50 * time.Millisecond
	reconfigurePollsMax = 1200
	// reconfigureResend is how long a started round change may show no
	// trace (no node following a newer configuration) before the request
	// is sent again, to whichever node leads then: the node that took it
	// may have crashed or lost its leadership at once.
	reconfigureResend = 5 * time.Second
)

// target is a Configuration resolved to node ids.
type target struct {
	ids []NodeID // sorted
	q   Quorum
	// newcomers are members that are not (yet) machines of the cell, by
	// node id, with the address they were named by.
	newcomers map[NodeID]string
}

// Reconfigure moves journal id to the acceptor configuration to and waits
// until the journal's leader runs it. It needs a cell with matchmakers
// (else ErrNoMatchmakers) and a token with admin over every journal.
//
// The steps, each idempotent, so a Reconfigure interrupted anywhere is
// resumed by calling it again with the same configuration:
//
//  1. Each member named by address is identified (Machine.Identify). A
//     machine not yet in the cell is admitted: every machine of the cell
//     that answers records it as a peer (Machine.Admit), then it joins the
//     cell (Machine.JoinCell). A machine that does not answer is not told:
//     it refuses the newcomer's messages until a later Reconfigure admits
//     the newcomer to it too.
//  2. Every member that does not serve the journal yet formats its store
//     as a joiner of the configuration (Machine.JoinJournal).
//  3. The journal's leader starts the round change (Admin.Reconfigure). If
//     no node shows a newer configuration within a few seconds, the
//     request goes again to whichever node leads then.
//  4. It waits until the leader reports the configuration asked for,
//     introduced by a reconfiguration newer than the one in force at the
//     start.
//
// Writes stall for the change's matchmaking round trip and Phase 1, and
// continue. When the leader already runs the configuration, Reconfigure
// returns nil at step 3 and starts no round change. Afterwards the leader
// collects the old configurations by itself; members left out may then be
// retired (Inspect's Retirable, then Retire).
//
// Errors: ErrInvalidConfiguration and ErrUnknownMachine (nothing was
// reconfigured; machines may have been admitted to the cell),
// ErrNoMatchmakers, client.ErrUnknownJournal, client.ErrDenied,
// client.ErrNoServer (no machine answered, or the leader found a member
// that did not answer: machine_unreachable, nothing was reconfigured), and
// client.ErrAmbiguous when ctx ended after a round change was started but
// before the leader reported it: the change may still complete (Inspect,
// or call Reconfigure again).
func (a *Client) Reconfigure(ctx context.Context, id journal.ID, to Configuration) error {
	if !id.IsSet() {
		return fmt.Errorf("paros/admin: Reconfigure: journal %s is unset", id)
	}
	sv := a.look(ctx, id)
	if err := sv.settled(id); err != nil {
		return err
	}
	tg, err := a.resolve(ctx, sv, to)
	if err != nil {
		return err
	}
	if len(tg.newcomers) > 0 {
		if err := a.admit(ctx, sv, tg.newcomers); err != nil {
			return err
		}
		sv = a.look(ctx, id)
	}
	l, _ := sv.leader()
	for _, node := range tg.ids {
		_, answered := sv.answers[node]
		if !sv.serves(node) && (answered || !slices.Contains(l.Members, node)) {
			if err := a.joinJournal(ctx, sv, id, node, tg); err != nil {
				return err
			}
		}
	}
	return a.changeRound(ctx, id, tg, sv)
}

// resolve maps to's members to node ids and checks the configuration.
func (a *Client) resolve(ctx context.Context, sv survey, to Configuration) (target, error) {
	tg := target{newcomers: map[NodeID]string{}}
	if len(to.Members) == 0 || len(to.Members) > quorum.MembersMax {
		return tg, fmt.Errorf("%w: %d members, want 1 to %d", ErrInvalidConfiguration, len(to.Members), quorum.MembersMax)
	}
	for _, m := range to.Members {
		m = strings.TrimSpace(m)
		if !strings.Contains(m, ":") {
			node, err := ParseNodeID(m)
			if err != nil {
				return tg, fmt.Errorf("%w: member %q: want a node id in hex or a host:port", ErrInvalidConfiguration, m)
			}
			if _, ok := sv.replicas[node]; ok {
				return tg, fmt.Errorf("%w: %s is a replica machine, never a member", ErrInvalidConfiguration, node)
			}
			if _, ok := sv.proxies[node]; ok {
				return tg, fmt.Errorf("%w: %s is a proxy machine, never a member", ErrInvalidConfiguration, node)
			}
			if _, ok := sv.machines[node]; !ok {
				return tg, fmt.Errorf("%w: %s is no machine of cell %016x", ErrUnknownMachine, node, sv.cellID)
			}
			tg.ids = append(tg.ids, node)
			continue
		}
		r, err := a.identify(ctx, m)
		if err != nil {
			return tg, err
		}
		node := NodeID(r.GetNodeId())
		_, replica := sv.replicas[node]
		switch _, known := sv.machines[node]; {
		case replica || r.GetRole() == roleReplica:
			return tg, fmt.Errorf("%w: %s is a replica machine, never a member", ErrInvalidConfiguration, m)
		case r.GetRole() == roleProxy:
			return tg, fmt.Errorf("%w: %s is a proxy machine, never a member", ErrInvalidConfiguration, m)
		case r.GetCellId() != 0 && r.GetCellId() != sv.cellID:
			return tg, fmt.Errorf("%w: %s is machine %s of cell %016x, not of cell %016x",
				ErrUnknownMachine, m, node, r.GetCellId(), sv.cellID)
		case !known || r.GetCellId() == 0:
			tg.newcomers[node] = m
		}
		tg.ids = append(tg.ids, node)
	}
	ids := make([]quorum.ID, len(tg.ids))
	for i, x := range tg.ids {
		ids[i] = quorum.ID(x)
	}
	sys, err := quorum.New(ids, to.Quorum.spec)
	if err != nil {
		return tg, fmt.Errorf("%w: %w", ErrInvalidConfiguration, err)
	}
	// The node refuses a configuration in which one member alone is a
	// Phase-1 quorum of several (paxos.validateSystem); refuse it before
	// any machine is admitted or joins.
	if sys.Size() > 1 {
		for _, m := range sys.Members() {
			if sys.Phase1(sys.SetOf(m), 0) == quorum.Won {
				return tg, fmt.Errorf("%w: member %s alone is a Phase-1 quorum of %s", ErrInvalidConfiguration, NodeID(m), sys)
			}
		}
	}
	slices.Sort(tg.ids)
	tg.q = quorumOf(sys.Spec())
	return tg, nil
}

// joinJournal formats journal id's store on member node as a joiner of
// tg. A member that did not answer but belongs to the configuration the
// leader runs is not asked: it serves the journal.
func (a *Client) joinJournal(ctx context.Context, sv survey, id journal.ID, node NodeID, tg target) error {
	addr, ok := sv.machines[node]
	if !ok {
		addr, ok = tg.newcomers[node]
	}
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownMachine, node)
	}
	req := &pb.JoinJournalRequest{Journal: wire.JournalIDToPB(id), Members: wireIDs(tg.ids)}
	req.QuorumSystem, req.Phase1Quorum, req.Phase2Quorum, req.Rows, req.Cols = tg.q.wire()
	r, err := a.callMachine(ctx, addr, "join journal", func(ctx context.Context, m pb.MachineClient, o ...grpc.CallOption) (string, error) {
		r, err := m.JoinJournal(ctx, req, o...)
		return r.GetRefusal(), err
	})
	switch {
	case err != nil:
		return err
	case r == "":
		return nil
	case strings.HasPrefix(r, "invalid_configuration"):
		return fmt.Errorf("%w: %s", ErrInvalidConfiguration, r)
	case strings.HasPrefix(r, "plain"):
		return fmt.Errorf("%w: %s", ErrNoMatchmakers, r)
	}
	return fmt.Errorf("paros/admin: machine %s (%s) refused to join journal %s: %s", node, addr, id, r)
}

// runs reports whether st is the leader's answer showing tg in force.
func (tg target) runs(st MemberStatus) bool {
	return st.Quorum == tg.q && slices.Equal(slices.Sorted(slices.Values(st.Members)), tg.ids)
}

// changeRound asks the leader to start the round change and waits for it
// (steps 3 and 4 of Reconfigure).
func (a *Client) changeRound(ctx context.Context, id journal.ID, tg target, sv survey) error {
	if l, ok := sv.leader(); ok && tg.runs(l) {
		return nil // in force already: nothing to change
	}
	before := sv.newestSince()
	var sentAt time.Time
	var last string
	req := &pb.ReconfigureRequest{Journal: wire.JournalIDToPB(id), Members: wireIDs(tg.ids)}
	req.QuorumSystem, req.Phase1Quorum, req.Phase2Quorum, req.Rows, req.Cols = tg.q.wire()
	for range reconfigurePollsMax {
		l, leads := sv.leader()
		if leads && tg.runs(l) && before.Less(l.ConfigSince) {
			return nil
		}
		moved := before.Less(sv.newestSince())
		if leads && (sentAt.IsZero() || !moved && time.Since(sentAt) > reconfigureResend) {
			refusal, err := a.reconfigureAt(ctx, l.Addr, req)
			switch {
			case errors.Is(err, client.ErrDenied):
				return err
			case errors.Is(err, client.ErrNoServer):
				last = err.Error()
			case err != nil:
				// It may have been received and started: count it as sent
				// (a resend follows if nothing moves).
				sentAt, last = time.Now(), err.Error()
			case refusal == "":
				sentAt = time.Now()
			case strings.HasPrefix(refusal, "no_matchmakers"):
				return fmt.Errorf("%w: %s", ErrNoMatchmakers, refusal)
			case strings.HasPrefix(refusal, "invalid_configuration"):
				return fmt.Errorf("%w: %s", ErrInvalidConfiguration, refusal)
			case strings.HasPrefix(refusal, "unknown_machine"):
				return fmt.Errorf("%w: %s refused the configuration: %s", ErrUnknownMachine, l.Addr, refusal)
			case strings.HasPrefix(refusal, "machine_unreachable"):
				// The leader starts no round change whose members it cannot
				// reach now: the journal keeps its configuration.
				return fmt.Errorf("%w: %s refused the configuration: %s", client.ErrNoServer, l.Addr, refusal)
			case strings.HasPrefix(refusal, "unknown_journal"):
				last = l.Addr + " no longer serves the journal" // retired or removed: another node leads
			default:
				last = l.Addr + ": " + refusal // unavailable: ask again
			}
		}
		t := time.NewTimer(reconfigurePoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return reconfigureUnfinished(id, sentAt, ctx.Err(), last)
		case <-t.C:
		}
		sv = a.look(ctx, id)
		if !leads {
			last = "no node leads the journal"
		}
	}
	return reconfigureUnfinished(id, sentAt, errors.New("the leader did not report the configuration in time"), last)
}

// reconfigureUnfinished is the error of a Reconfigure that ran out of time
// in changeRound: ambiguous once a round change was started.
func reconfigureUnfinished(id journal.ID, sentAt time.Time, why error, last string) error {
	if !sentAt.IsZero() {
		return fmt.Errorf("%w: reconfigure %s: the round change started but the leader has not reported it: %w (last: %s)",
			client.ErrAmbiguous, id, why, last)
	}
	if last == "" {
		last = "no node leads the journal"
	}
	return fmt.Errorf("paros/admin: reconfigure %s: no round change started: %w (last: %s)", id, why, last)
}

// reconfigureAt sends the Reconfigure to the machine at addr and returns
// its refusal ("" when the round change started).
func (a *Client) reconfigureAt(ctx context.Context, addr string, req *pb.ReconfigureRequest) (string, error) {
	r, err := adminAt(ctx, a, addr, "reconfigure", true, func(ctx context.Context, ac pb.AdminClient, o ...grpc.CallOption) (*pb.ReconfigureReply, error) {
		return ac.Reconfigure(ctx, req, o...)
	})
	if err != nil {
		return "", err
	}
	if r.GetAccepted() {
		return "", nil
	}
	return r.GetRefusal(), nil
}
