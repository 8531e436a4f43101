package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
)

// Replacing the cell's matchmaker set (parosctl matchmakers set). The set
// is itself a chosen value with a generation: a handover freezes the set in
// force, carries its registrations over to the new members, decides the
// new set by a single-decree Paxos among the old members, and activates it.
// A node machine of the cell drives it; every machine of a cell with
// matchmakers runs a matchmaker role, fresh until a handover names it.

// MatchmakerSet is one generation of the cell's matchmaker set, as a
// handover chose it.
type MatchmakerSet struct {
	Generation uint64
	Members    []uint64
	// Activated are the members that answered they serve the set. A
	// member missing here serves it once a later handover's publication
	// reaches it; until then the others are a majority.
	Activated []uint64
}

// matchmakerAsksMax bounds the machines SetMatchmakers asks before it
// gives up: each either answers or is unreachable.
const matchmakerAsksMax = 4

// SetMatchmakers replaces the cell's matchmaker set by members, each a
// node id in hex (a node machine of the cell) or the host:port of an idle
// `paros serve` on an empty data dir (same CA as the cell), which is
// admitted to the cell first. It returns once the handover ended, with the
// set chosen: normally members, but a handover that raced it may have been
// chosen instead (call it again to move on from there). It needs a token
// with admin over every journal.
//
// Errors: ErrNoMatchmakers (a plain cell), ErrInvalidConfiguration,
// ErrUnknownMachine, ErrDenied, ErrNoServer (no node machine answered),
// ErrAmbiguous (the machines asked ran out of time or abandoned the
// handover: it may complete later; call SetMatchmakers again, and a
// finished or adopted handover is reported).
func (c *Client) SetMatchmakers(ctx context.Context, members []string) (MatchmakerSet, error) {
	if len(members) == 0 || len(members) > paxos.MatchmakersMax {
		return MatchmakerSet{}, fmt.Errorf("%w: %d matchmakers, want 1 to %d", ErrInvalidConfiguration, len(members), paxos.MatchmakersMax)
	}
	sv := c.look(ctx, journal.ID{})
	if err := sv.surveyed(); err != nil {
		return MatchmakerSet{}, err
	}
	ids, newcomers, err := c.resolveMatchmakers(ctx, sv, members)
	if err != nil {
		return MatchmakerSet{}, err
	}
	if len(newcomers) > 0 {
		if err := c.admit(ctx, sv, newcomers); err != nil {
			return MatchmakerSet{}, err
		}
	}
	req := &pb.ReconfigureMatchmakersRequest{Members: ids}
	var last error
	asked, plain := 0, 0
	for _, node := range slices.Sorted(maps.Keys(sv.machines)) {
		if _, ok := sv.answers[node]; !ok || asked == matchmakerAsksMax {
			continue
		}
		asked++
		r, err := c.matchmakersAt(ctx, sv.machines[node], req)
		switch {
		case errors.Is(err, ErrDenied):
			return MatchmakerSet{}, err
		case err != nil && !errors.Is(err, ErrNoServer):
			// The call left and got no answer (its deadline, or the
			// caller's): the handover may be running. Asking another
			// machine would start a second one; the caller calls again,
			// and a finished or adopted handover is reported.
			return MatchmakerSet{}, fmt.Errorf("%w: %w", ErrAmbiguous, err)
		case err != nil:
			last = err
			continue
		case r.GetAccepted():
			return MatchmakerSet{Generation: r.GetGeneration(), Members: r.GetMembers(), Activated: r.GetActivated()}, nil
		}
		switch refusal := r.GetRefusal(); {
		case strings.HasPrefix(refusal, "no_matchmakers"):
			// A plain cell, or a machine that knows no set (one that
			// retired from every journal and runs no matchmaker): ask
			// another; every one saying so is a plain cell.
			plain++
			last = fmt.Errorf("%w: %s: %s", ErrNoMatchmakers, sv.machines[node], refusal)
		case strings.HasPrefix(refusal, "invalid_configuration"):
			return MatchmakerSet{}, fmt.Errorf("%w: %s", ErrInvalidConfiguration, refusal)
		case strings.HasPrefix(refusal, "unknown_machine"), strings.HasPrefix(refusal, "machine_unreachable"):
			return MatchmakerSet{}, fmt.Errorf("%w: %s", ErrUnknownMachine, refusal)
		case strings.HasPrefix(refusal, "abandoned"):
			return MatchmakerSet{}, fmt.Errorf("%w: the handover made no progress in its budget (%s); call SetMatchmakers again", ErrAmbiguous, refusal)
		default:
			last = fmt.Errorf("%s: %s", sv.machines[node], refusal) // busy, unavailable: ask another
		}
	}
	if last == nil {
		last = errors.New("no node machine of the cell answered the survey")
	}
	if plain > 0 && plain == asked {
		return MatchmakerSet{}, last
	}
	return MatchmakerSet{}, fmt.Errorf("%w: no machine ran the handover: %w", ErrNoServer, last)
}

// resolveMatchmakers maps members to node ids: node machines of the cell,
// and idle machines to admit (newcomers, by address).
func (c *Client) resolveMatchmakers(ctx context.Context, sv survey, members []string) ([]uint64, map[uint64]string, error) {
	var ids []uint64
	newcomers := map[uint64]string{}
	for _, m := range members {
		m = strings.TrimSpace(m)
		if !strings.Contains(m, ":") {
			node, err := strconv.ParseUint(strings.TrimPrefix(m, "0x"), 16, 64)
			if err != nil || node == 0 {
				return nil, nil, fmt.Errorf("%w: matchmaker %q: want a node id in hex or a host:port", ErrInvalidConfiguration, m)
			}
			if _, ok := sv.machines[node]; !ok {
				return nil, nil, fmt.Errorf("%w: %016x is no node machine of cell %016x", ErrUnknownMachine, node, sv.cellID)
			}
			ids = append(ids, node)
			continue
		}
		r, err := c.identify(ctx, m)
		if err != nil {
			return nil, nil, err
		}
		switch _, known := sv.machines[r.GetNodeId()]; {
		case r.GetRole() == roleReplica || r.GetRole() == roleProxy:
			return nil, nil, fmt.Errorf("%w: %s is a %s machine, never a matchmaker", ErrInvalidConfiguration, m, r.GetRole())
		case r.GetCellId() != 0 && r.GetCellId() != sv.cellID:
			return nil, nil, fmt.Errorf("%w: %s is machine %016x of cell %016x, not of cell %016x",
				ErrUnknownMachine, m, r.GetNodeId(), r.GetCellId(), sv.cellID)
		case !known || r.GetCellId() == 0:
			newcomers[r.GetNodeId()] = m
		}
		ids = append(ids, r.GetNodeId())
	}
	slices.Sort(ids)
	if len(slices.Compact(slices.Clone(ids))) != len(ids) {
		return nil, nil, fmt.Errorf("%w: a machine named twice in %v", ErrInvalidConfiguration, members)
	}
	return ids, newcomers, nil
}

// matchmakersAt asks the machine at addr to run the handover; it waits for
// its end (the server bounds it).
func (c *Client) matchmakersAt(ctx context.Context, addr string, req *pb.ReconfigureMatchmakersRequest) (*pb.ReconfigureMatchmakersReply, error) {
	cc, err := c.conn(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: matchmakers %s: %w", ErrNoServer, addr, err)
	}
	var p peer.Peer
	r, err := pb.NewAdminClient(cc).ReconfigureMatchmakers(ctx, req, grpc.Peer(&p))
	if err != nil {
		return nil, machineError(addr, "matchmakers", err, &p)
	}
	return r, nil
}
