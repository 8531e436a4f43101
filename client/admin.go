package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/wire"
)

// The operator's calls: Reconfigure moves a journal to another acceptor
// configuration (Matchmaker Paxos), adding machines to the cell as it
// goes; Retire lets a machine a reconfiguration removed delete its copy.
// They reach every machine of the cell, not only the addresses given to
// Dial: each Inspect answer lists the cell's machines with their
// addresses, and the Client dials those with its own options (TLS,
// token). They need a token with admin over every journal.

// Errors of the operator's calls. Test them with errors.Is; each wraps the
// cell's refusal text.
var (
	// ErrNoMatchmakers: the cell is plain (formed without matchmakers): its
	// journals keep their founding members. Nothing was changed.
	ErrNoMatchmakers = errors.New("paros/client: the cell has no matchmakers: its journals' membership is fixed")
	// ErrInvalidConfiguration: no node may run the configuration asked for
	// (a member twice, a quorum rule that does not fit the members, a
	// member alone a Phase-1 quorum). Nothing was reconfigured.
	ErrInvalidConfiguration = errors.New("paros/client: invalid configuration")
	// ErrUnknownMachine: a node id that is no machine of the cell, or an
	// address whose machine belongs to another cell or does not prove the
	// node id named (a machine refuses it unknown_machine). Nothing was
	// reconfigured.
	ErrUnknownMachine = errors.New("paros/client: unknown machine")
)

// Configuration is a journal's acceptor configuration as Reconfigure takes
// it. Each member is a node id in hex (as parosctl inspect prints it) of a
// machine of the cell, or the host:port of a machine to add to the cell
// (an idle `paros serve` on an empty data dir, or a machine of the cell).
// Quorum is the quorum system over the members (the zero Spec: majority).
type Configuration struct {
	Members []string
	Quorum  quorum.Spec
}

// Bounds and pace of the operator's calls: every retry loop has a bound.
const (
	// extraConnsMax bounds the connections a Client keeps to machines it
	// was not given (Client.extra).
	extraConnsMax = 2 * quorum.MembersMax
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
	// adminCallTimeout bounds one call to one machine.
	adminCallTimeout = 10 * time.Second
)

// conn returns a connection to the machine at addr: a server's own when
// addr is one the Client was given, else one dialled with the Client's
// options and kept until Close.
func (c *Client) conn(addr string) (*grpc.ClientConn, error) {
	for _, s := range c.list() {
		if s.addr == addr {
			return s.cc, nil
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cc, ok := c.extra[addr]; ok {
		return cc, nil
	}
	if len(c.extra) >= extraConnsMax {
		return nil, fmt.Errorf("paros/client: %d machines beyond the servers dialled, at most %d", len(c.extra)+1, extraConnsMax)
	}
	cc, err := grpc.NewClient(addr, c.dopts...)
	if err != nil {
		return nil, fmt.Errorf("paros/client: dial %s: %w", addr, err)
	}
	c.extra[addr] = cc
	return cc, nil
}

// target is a Configuration resolved to node ids.
type target struct {
	ids []uint64 // sorted
	q   quorum.Spec
	// newcomers are members that are not (yet) machines of the cell, by
	// node id, with the address they were named by.
	newcomers map[uint64]string
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
// reconfigured; machines may have been admitted to the cell), ErrNoMatchmakers,
// ErrUnknownJournal, ErrDenied, ErrNoServer (no machine answered, or the
// leader found a member that did not answer: machine_unreachable, nothing
// was reconfigured), and
// ErrAmbiguous when ctx ended after a round change was started but before
// the leader reported it: the change may still complete (Inspect, or call
// Reconfigure again).
func (c *Client) Reconfigure(ctx context.Context, id journal.ID, to Configuration) error {
	if !id.IsSet() {
		return fmt.Errorf("paros/client: Reconfigure: journal %s is unset", id)
	}
	sv := c.look(ctx, id)
	if err := sv.settled(id); err != nil {
		return err
	}
	tg, err := c.resolve(ctx, sv, to)
	if err != nil {
		return err
	}
	if len(tg.newcomers) > 0 {
		if err := c.admit(ctx, sv, tg.newcomers); err != nil {
			return err
		}
		sv = c.look(ctx, id)
	}
	l, _ := sv.leader()
	for _, node := range tg.ids {
		_, answered := sv.answers[node]
		if !sv.serves(node) && (answered || !slices.Contains(l.Members, node)) {
			if err := c.joinJournal(ctx, sv, id, node, tg); err != nil {
				return err
			}
		}
	}
	return c.changeRound(ctx, id, tg, sv)
}

// resolve maps to's members to node ids and checks the configuration.
func (c *Client) resolve(ctx context.Context, sv survey, to Configuration) (target, error) {
	tg := target{newcomers: map[uint64]string{}}
	if len(to.Members) == 0 || len(to.Members) > quorum.MembersMax {
		return tg, fmt.Errorf("%w: %d members, want 1 to %d", ErrInvalidConfiguration, len(to.Members), quorum.MembersMax)
	}
	for _, m := range to.Members {
		m = strings.TrimSpace(m)
		if !strings.Contains(m, ":") {
			node, err := strconv.ParseUint(strings.TrimPrefix(m, "0x"), 16, 64)
			if err != nil || node == 0 {
				return tg, fmt.Errorf("%w: member %q: want a node id in hex or a host:port", ErrInvalidConfiguration, m)
			}
			if _, ok := sv.replicas[node]; ok {
				return tg, fmt.Errorf("%w: %016x is a replica machine, never a member", ErrInvalidConfiguration, node)
			}
			if _, ok := sv.proxies[node]; ok {
				return tg, fmt.Errorf("%w: %016x is a proxy machine, never a member", ErrInvalidConfiguration, node)
			}
			if _, ok := sv.machines[node]; !ok {
				return tg, fmt.Errorf("%w: %016x is no machine of cell %016x", ErrUnknownMachine, node, sv.cellID)
			}
			tg.ids = append(tg.ids, node)
			continue
		}
		r, err := c.identify(ctx, m)
		if err != nil {
			return tg, err
		}
		_, replica := sv.replicas[r.GetNodeId()]
		switch _, known := sv.machines[r.GetNodeId()]; {
		case replica || r.GetRole() == roleReplica:
			return tg, fmt.Errorf("%w: %s is a replica machine, never a member", ErrInvalidConfiguration, m)
		case r.GetRole() == roleProxy:
			return tg, fmt.Errorf("%w: %s is a proxy machine, never a member", ErrInvalidConfiguration, m)
		case r.GetCellId() != 0 && r.GetCellId() != sv.cellID:
			return tg, fmt.Errorf("%w: %s is machine %016x of cell %016x, not of cell %016x",
				ErrUnknownMachine, m, r.GetNodeId(), r.GetCellId(), sv.cellID)
		case !known || r.GetCellId() == 0:
			tg.newcomers[r.GetNodeId()] = m
		}
		tg.ids = append(tg.ids, r.GetNodeId())
	}
	ids := make([]quorum.ID, len(tg.ids))
	for i, x := range tg.ids {
		ids[i] = quorum.ID(x)
	}
	sys, err := quorum.New(ids, to.Quorum)
	if err != nil {
		return tg, fmt.Errorf("%w: %w", ErrInvalidConfiguration, err)
	}
	// The node refuses a configuration in which one member alone is a
	// Phase-1 quorum of several (paxos.validateSystem); refuse it before
	// any machine is admitted or joins.
	if sys.Size() > 1 {
		for _, m := range sys.Members() {
			if sys.Phase1(sys.SetOf(m), 0) == quorum.Won {
				return tg, fmt.Errorf("%w: member %016x alone is a Phase-1 quorum of %s", ErrInvalidConfiguration, uint64(m), sys)
			}
		}
	}
	slices.Sort(tg.ids)
	tg.q = sys.Spec()
	return tg, nil
}

// identify asks the machine at addr who it is.
func (c *Client) identify(ctx context.Context, addr string) (*pb.IdentifyReply, error) {
	cc, err := c.conn(addr)
	if err != nil {
		return nil, err
	}
	actx, cancel := context.WithTimeout(ctx, adminCallTimeout)
	defer cancel()
	var p peer.Peer
	r, err := pb.NewMachineClient(cc).Identify(actx, &pb.IdentifyRequest{}, grpc.Peer(&p))
	if err != nil {
		return nil, machineError(addr, "identify", err, &p)
	}
	if r.GetNodeId() == 0 {
		return nil, fmt.Errorf("paros/client: %s answered Identify without a node id", addr)
	}
	return r, nil
}

// machineError is the error of a failed call to the machine at addr: a
// refusal of the credentials (ErrDenied), a call that never left
// (ErrNoServer), or the call's error.
func machineError(addr, call string, err error, p *peer.Peer) error {
	switch {
	case denied(err):
		return deniedError(addr, err)
	case !sent(p):
		return fmt.Errorf("%w: %s %s: %w", ErrNoServer, call, addr, err)
	}
	return fmt.Errorf("paros/client: %s %s: %w", call, addr, err)
}

// admit makes the newcomers machines of the cell: every machine of the
// cell that answered the survey records them (Admit), then each joins
// (JoinCell) with the plan a machine of the cell reports.
func (c *Client) admit(ctx context.Context, sv survey, newcomers map[uint64]string) error {
	plan, admitted, err := c.cellPlan(ctx, sv, newcomers)
	if err != nil {
		return err
	}
	for node, addr := range newcomers {
		if _, listed := sv.machines[node]; !listed {
			admitted = append(admitted, &pb.Member{NodeId: node, Addr: addr})
		}
	}
	for node, addr := range newcomers {
		for _, st := range sv.answers {
			if _, isNew := newcomers[st.NodeID]; isNew || st.CellID == 0 {
				continue
			}
			r, err := callMachine(ctx, c, st.Addr, "admit", func(ctx context.Context, m pb.MachineClient, o ...grpc.CallOption) (refusal string, err error) {
				r, err := m.Admit(ctx, &pb.AdmitRequest{CellId: sv.cellID, Member: &pb.Member{NodeId: node, Addr: addr}}, o...)
				return r.GetRefusal(), err
			})
			switch {
			case err != nil:
				return err
			case strings.HasPrefix(r, "unknown_machine"):
				return fmt.Errorf("%w: %s refused to admit machine %016x (%s): %s", ErrUnknownMachine, st.Addr, node, addr, r)
			case strings.HasPrefix(r, "machine_unreachable"):
				return fmt.Errorf("%w: %s could not reach machine %016x (%s) to admit it: %s", ErrNoServer, st.Addr, node, addr, r)
			case r != "":
				return fmt.Errorf("paros/client: %s refused to admit machine %016x (%s): %s", st.Addr, node, addr, r)
			}
		}
		if err := c.joinCell(ctx, node, addr, plan, admitted, ""); err != nil {
			return err
		}
	}
	return nil
}

// cellPlan asks a machine of the survey's cell (never a newcomer) for the
// cell's plan, and lists the cell's machines beyond its founders (those a
// joining machine must know as admitted).
func (c *Client) cellPlan(ctx context.Context, sv survey, newcomers map[uint64]string) (*pb.CellPlan, []*pb.Member, error) {
	var plan *pb.CellPlan
	for node, st := range sv.answers {
		if _, isNew := newcomers[node]; isNew || st.CellID == 0 || st.CellID != sv.cellID {
			continue
		}
		cc, err := c.conn(st.Addr)
		if err != nil {
			return nil, nil, err
		}
		actx, cancel := context.WithTimeout(ctx, adminCallTimeout)
		r, err := pb.NewMachineClient(cc).Identify(actx, &pb.IdentifyRequest{Plan: true})
		cancel()
		if err == nil && r.GetPlan() != nil {
			plan = r.GetPlan()
			break
		}
		if denied(err) {
			return nil, nil, deniedError(st.Addr, err)
		}
	}
	if plan == nil {
		return nil, nil, fmt.Errorf("%w: no machine of the cell reported its plan", ErrNoServer)
	}
	founders := map[uint64]bool{}
	for _, m := range plan.GetMembers() {
		founders[m.GetNodeId()] = true
	}
	var admitted []*pb.Member
	for node, addr := range sv.machines {
		if !founders[node] {
			admitted = append(admitted, &pb.Member{NodeId: node, Addr: addr})
		}
	}
	return plan, admitted, nil
}

// joinCell asks the idle machine node at addr to join the cell of plan
// (as a replica when what says so, for the error's words).
func (c *Client) joinCell(ctx context.Context, node uint64, addr string, plan *pb.CellPlan, admitted []*pb.Member, what string) error {
	r, err := callMachine(ctx, c, addr, "join cell", func(ctx context.Context, m pb.MachineClient, o ...grpc.CallOption) (string, error) {
		r, err := m.JoinCell(ctx, &pb.JoinCellRequest{Plan: plan, Admitted: admitted}, o...)
		return r.GetRefusal(), err
	})
	if err != nil {
		return err
	}
	if r != "" {
		return fmt.Errorf("paros/client: machine %016x (%s) refused to join cell %016x%s: %s", node, addr, plan.GetCellId(), what, r)
	}
	return nil
}

// callMachine makes one Machine call at addr and returns its refusal
// ("" when it was granted).
func callMachine(ctx context.Context, c *Client, addr, call string,
	do func(context.Context, pb.MachineClient, ...grpc.CallOption) (string, error)) (string, error) {
	cc, err := c.conn(addr)
	if err != nil {
		return "", err
	}
	actx, cancel := context.WithTimeout(ctx, adminCallTimeout)
	defer cancel()
	var p peer.Peer
	refusal, err := do(actx, pb.NewMachineClient(cc), grpc.Peer(&p))
	if err != nil {
		return "", machineError(addr, call, err, &p)
	}
	return refusal, nil
}

// joinJournal formats journal id's store on member node as a joiner of
// tg. A member that did not answer but belongs to the configuration the
// leader runs is not asked: it serves the journal.
func (c *Client) joinJournal(ctx context.Context, sv survey, id journal.ID, node uint64, tg target) error {
	addr, ok := sv.machines[node]
	if !ok {
		addr, ok = tg.newcomers[node]
	}
	if !ok {
		return fmt.Errorf("%w: %016x", ErrUnknownMachine, node)
	}
	req := &pb.JoinJournalRequest{Journal: wire.JournalIDToPB(id), Members: tg.ids, QuorumSystem: pb.QuorumSystem(tg.q.Kind),
		Phase1Quorum: uint32(tg.q.Q1), Phase2Quorum: uint32(tg.q.Q2), Rows: uint32(tg.q.Rows), Cols: uint32(tg.q.Cols)}
	r, err := callMachine(ctx, c, addr, "join journal", func(ctx context.Context, m pb.MachineClient, o ...grpc.CallOption) (string, error) {
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
	return fmt.Errorf("paros/client: machine %016x (%s) refused to join journal %s: %s", node, addr, id, r)
}

// runs reports whether st is the leader's answer showing tg in force.
func (tg target) runs(st MemberStatus) bool {
	return st.QuorumSpec == tg.q && slices.Equal(slices.Sorted(slices.Values(st.Members)), tg.ids)
}

// changeRound asks the leader to start the round change and waits for it
// (steps 3 and 4 of Reconfigure).
func (c *Client) changeRound(ctx context.Context, id journal.ID, tg target, sv survey) error {
	if l, ok := sv.leader(); ok && tg.runs(l) {
		return nil // in force already: nothing to change
	}
	before := sv.newestSince()
	var sentAt time.Time
	var last string
	req := &pb.ReconfigureRequest{Journal: wire.JournalIDToPB(id), Members: tg.ids, QuorumSystem: pb.QuorumSystem(tg.q.Kind),
		Phase1Quorum: uint32(tg.q.Q1), Phase2Quorum: uint32(tg.q.Q2), Rows: uint32(tg.q.Rows), Cols: uint32(tg.q.Cols)}
	for range reconfigurePollsMax {
		l, leads := sv.leader()
		if leads && tg.runs(l) && before.Less(l.ConfigSince) {
			return nil
		}
		moved := before.Less(sv.newestSince())
		if leads && (sentAt.IsZero() || !moved && time.Since(sentAt) > reconfigureResend) {
			refusal, err := c.reconfigureAt(ctx, l.Addr, req)
			switch {
			case errors.Is(err, ErrDenied):
				return err
			case errors.Is(err, ErrNoServer):
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
				return fmt.Errorf("%w: %s refused the configuration: %s", ErrNoServer, l.Addr, refusal)
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
			return c.reconfigureUnfinished(id, sentAt, ctx.Err(), last)
		case <-t.C:
		}
		sv = c.look(ctx, id)
		if !leads {
			last = "no node leads the journal"
		}
	}
	return c.reconfigureUnfinished(id, sentAt, errors.New("the leader did not report the configuration in time"), last)
}

// reconfigureUnfinished is the error of a Reconfigure that ran out of time
// in changeRound: ambiguous once a round change was started.
func (c *Client) reconfigureUnfinished(id journal.ID, sentAt time.Time, why error, last string) error {
	if !sentAt.IsZero() {
		return fmt.Errorf("%w: reconfigure %s: the round change started but the leader has not reported it: %w (last: %s)",
			ErrAmbiguous, id, why, last)
	}
	if last == "" {
		last = "no node leads the journal"
	}
	return fmt.Errorf("paros/client: reconfigure %s: no round change started: %w (last: %s)", id, why, last)
}

// reconfigureAt sends the Reconfigure to the machine at addr and returns
// its refusal ("" when the round change started).
func (c *Client) reconfigureAt(ctx context.Context, addr string, req *pb.ReconfigureRequest) (string, error) {
	cc, err := c.conn(addr)
	if err != nil {
		return "", err
	}
	actx, cancel := context.WithTimeout(ctx, adminCallTimeout)
	defer cancel()
	var p peer.Peer
	r, err := pb.NewAdminClient(cc).Reconfigure(actx, req, grpc.Peer(&p))
	if err != nil {
		return "", machineError(addr, "reconfigure", err, &p)
	}
	if r.GetAccepted() {
		return "", nil
	}
	return r.GetRefusal(), nil
}
