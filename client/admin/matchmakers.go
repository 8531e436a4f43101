package admin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/grpc"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client"
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
	Members    []NodeID
	// Activated are the members that answered they serve the set. A
	// member missing here serves it once a later handover's publication
	// reaches it; until then the others are a majority.
	Activated []NodeID
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
// ErrUnknownMachine, client.ErrDenied, client.ErrNoServer (no node
// machine answered), client.ErrAmbiguous (the machines asked ran out of
// time or abandoned the handover: it may complete later; call
// SetMatchmakers again, and a finished or adopted handover is reported).
func (a *Client) SetMatchmakers(ctx context.Context, members []string) (MatchmakerSet, error) {
	if len(members) == 0 || len(members) > paxos.MatchmakersMax {
		return MatchmakerSet{}, fmt.Errorf("%w: %d matchmakers, want 1 to %d", ErrInvalidConfiguration, len(members), paxos.MatchmakersMax)
	}
	sv := a.look(ctx, journal.ID{})
	if err := sv.surveyed(); err != nil {
		return MatchmakerSet{}, err
	}
	ids, newcomers, err := a.resolveMatchmakers(ctx, sv, members)
	if err != nil {
		return MatchmakerSet{}, err
	}
	if len(newcomers) > 0 {
		if err := a.admit(ctx, sv, newcomers); err != nil {
			return MatchmakerSet{}, err
		}
	}
	req := &pb.ReconfigureMatchmakersRequest{Members: wireIDs(ids)}
	var last error
	asked, plain := 0, 0
	for _, node := range slices.Sorted(maps.Keys(sv.machines)) {
		if _, ok := sv.answers[node]; !ok || asked == matchmakerAsksMax {
			continue
		}
		asked++
		r, err := a.matchmakersAt(ctx, sv.machines[node], req)
		switch {
		case errors.Is(err, client.ErrDenied):
			return MatchmakerSet{}, err
		case err != nil && !errors.Is(err, client.ErrNoServer):
			// The call left and got no answer (its deadline, or the
			// caller's): the handover may be running. Asking another
			// machine would start a second one; the caller calls again,
			// and a finished or adopted handover is reported.
			return MatchmakerSet{}, fmt.Errorf("%w: %w", client.ErrAmbiguous, err)
		case err != nil:
			last = err
			continue
		case r.GetAccepted():
			return MatchmakerSet{Generation: r.GetGeneration(), Members: nodeIDs(r.GetMembers()), Activated: nodeIDs(r.GetActivated())}, nil
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
			return MatchmakerSet{}, fmt.Errorf("%w: the handover made no progress in its budget (%s); call SetMatchmakers again", client.ErrAmbiguous, refusal)
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
	return MatchmakerSet{}, fmt.Errorf("%w: no machine ran the handover: %w", client.ErrNoServer, last)
}

// resolveMatchmakers maps members to node ids: node machines of the cell,
// and idle machines to admit (newcomers, by address).
func (a *Client) resolveMatchmakers(ctx context.Context, sv survey, members []string) ([]NodeID, map[NodeID]string, error) {
	var ids []NodeID
	newcomers := map[NodeID]string{}
	for _, m := range members {
		m = strings.TrimSpace(m)
		if !strings.Contains(m, ":") {
			node, err := ParseNodeID(m)
			if err != nil {
				return nil, nil, fmt.Errorf("%w: matchmaker %q: want a node id in hex or a host:port", ErrInvalidConfiguration, m)
			}
			if _, ok := sv.machines[node]; !ok {
				return nil, nil, fmt.Errorf("%w: %s is no node machine of cell %016x", ErrUnknownMachine, node, sv.cellID)
			}
			ids = append(ids, node)
			continue
		}
		r, err := a.identify(ctx, m)
		if err != nil {
			return nil, nil, err
		}
		node := NodeID(r.GetNodeId())
		switch _, known := sv.machines[node]; {
		case r.GetRole() == roleReplica || r.GetRole() == roleProxy:
			return nil, nil, fmt.Errorf("%w: %s is a %s machine, never a matchmaker", ErrInvalidConfiguration, m, r.GetRole())
		case r.GetCellId() != 0 && r.GetCellId() != sv.cellID:
			return nil, nil, fmt.Errorf("%w: %s is machine %s of cell %016x, not of cell %016x",
				ErrUnknownMachine, m, node, r.GetCellId(), sv.cellID)
		case !known || r.GetCellId() == 0:
			newcomers[node] = m
		}
		ids = append(ids, node)
	}
	slices.Sort(ids)
	if len(slices.Compact(slices.Clone(ids))) != len(ids) {
		return nil, nil, fmt.Errorf("%w: a machine named twice in %v", ErrInvalidConfiguration, members)
	}
	return ids, newcomers, nil
}

// matchmakersAt asks the machine at addr to run the handover; it waits for
// its end (the server bounds it).
func (a *Client) matchmakersAt(ctx context.Context, addr string, req *pb.ReconfigureMatchmakersRequest) (*pb.ReconfigureMatchmakersReply, error) {
	return adminAt(ctx, a, addr, "matchmakers", false, func(ctx context.Context, ac pb.AdminClient, o ...grpc.CallOption) (*pb.ReconfigureMatchmakersReply, error) {
		return ac.ReconfigureMatchmakers(ctx, req, o...)
	})
}
