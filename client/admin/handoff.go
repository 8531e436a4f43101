package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/wire"
)

// Bounds and pace of Handoff: every retry loop has a bound.
const (
	// handoffPoll is the pause between two looks at the cell while a
	// handoff takes; handoffPollsMax bounds the looks (about a minute),
	// beyond the caller's context.
	handoffPoll     = 20 * time.Millisecond
	handoffPollsMax = 3000
	// handoffRedirectsMax bounds the not_leader redirects one attempt
	// follows before the next look at the cell.
	handoffRedirectsMax = 4
	// handoffResend is how long a handoff the leader accepted may show no
	// successor leading before the request goes again to whichever node
	// leads then: a successor refuses a handoff silently, and an election
	// follows.
	handoffResend = 5 * time.Second
)

// handoff is what one Handoff has done so far.
type handoff struct {
	id journal.ID
	to NodeID
	// asked is the leader that handed on (or may have: its answer was
	// lost), 0 before; named the successor it named; sentAt when.
	asked, named NodeID
	sentAt       time.Time
	// last says why the latest attempt did not hand on.
	last string
}

// Handoff moves the leadership of journal id to acceptor to without an
// election (cooperative handoff: the leader hands its ballot and open tail
// on, and the successor goes on in Phase 2 at the same ballot), and waits
// until Inspect shows the successor leading. to 0 asks the leader to pick
// the acceptor it finds most caught up. It returns the node leading when
// it returns. It needs a token with admin over every journal.
//
// The leader is found as Reconfigure finds it (Inspect on every machine of
// the cell); a node that no longer leads when asked answers with the node
// it last heard leading, and Handoff asks that one within ctx. When to
// already leads, Handoff changes nothing and returns to. A leadership
// handed on once is handed on only once (one hop): asked again, it first
// re-elects itself (refusal reelecting), and Handoff asks again once it
// leads by its own Phase 1.
//
// A leader that hands on steps down at once; if the successor refuses the
// authority (it never says so), the cell elects a leader as after any
// leader's silence, and Handoff asks that leader again. With to 0, any
// node other than the leader that handed on counts as the successor.
//
// Errors: ErrCannotHandoff (the leader refused: nothing was changed),
// ErrUnknownMachine (to is no machine of the cell),
// client.ErrUnknownJournal, client.ErrDenied, client.ErrNoServer (no
// machine answered), client.ErrNotLeader (no leader handed on before ctx
// ended: nothing was changed), and client.ErrAmbiguous when ctx ended
// after a leader handed on (or may have) but before the successor was
// seen leading: it may still lead (Inspect tells).
func (a *Client) Handoff(ctx context.Context, id journal.ID, to NodeID) (NodeID, error) {
	if !id.IsSet() {
		return 0, fmt.Errorf("paros/admin: Handoff: journal %s is unset", id)
	}
	sv := a.look(ctx, id)
	if err := sv.reached(id); err != nil {
		return 0, err
	}
	if to != 0 {
		if _, ok := sv.replicas[to]; ok {
			return 0, fmt.Errorf("%w: %s is a replica machine: a replica never leads", ErrCannotHandoff, to)
		}
		if _, ok := sv.machines[to]; !ok {
			return 0, fmt.Errorf("%w: %s is no machine of cell %016x", ErrUnknownMachine, to, sv.cellID)
		}
	}
	h := &handoff{id: id, to: to}
	for range handoffPollsMax {
		l, leads := sv.leader()
		leader := l.NodeID
		switch {
		case !leads:
			h.last = "no node leads the journal"
		case h.done(leader):
			return leader, nil
		case h.shouldAsk(leader):
			if err := a.askHandoff(ctx, sv, l, h); err != nil {
				return 0, err
			}
		}
		t := time.NewTimer(handoffPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, h.unfinished(ctx.Err())
		case <-t.C:
		}
		sv = a.look(ctx, id)
	}
	return 0, h.unfinished(errors.New("the successor was not seen leading in time"))
}

// done reports whether leader is the leadership the handoff asked for:
// to itself, or (to 0) any node other than the one that handed on.
func (h *handoff) done(leader NodeID) bool {
	if h.to != 0 {
		return leader == h.to
	}
	return h.asked != 0 && leader != h.asked
}

// shouldAsk reports whether leader is to be asked now: nothing was handed
// on yet, or the handoff was lost (the node that handed on leads again
// after handoffResend, or an election put a third node in).
func (h *handoff) shouldAsk(leader NodeID) bool {
	switch {
	case h.asked == 0:
		return true
	case leader == h.asked:
		return time.Since(h.sentAt) > handoffResend
	}
	return leader != h.named
}

// askHandoff sends the Handoff to the leader l of survey sv, following
// not_leader redirects to nodes of the cell. It returns only a final
// error; a transient refusal is noted in h.last.
func (a *Client) askHandoff(ctx context.Context, sv survey, l MemberStatus, h *handoff) error {
	node, addr := l.NodeID, l.Addr
	req := &pb.HandoffRequest{Journal: wire.JournalIDToPB(h.id), To: uint64(h.to)}
	for range handoffRedirectsMax {
		r, err := a.handoffAt(ctx, addr, req)
		switch {
		case errors.Is(err, client.ErrDenied):
			return err
		case errors.Is(err, client.ErrNoServer):
			h.last = err.Error()
			return nil
		case err != nil:
			// It may have been received and honoured: count it as handed
			// on (a resend follows if the node leads again).
			h.asked, h.named, h.sentAt, h.last = node, h.to, time.Now(), err.Error()
			return nil
		case r.GetHandedOff():
			h.asked, h.named, h.sentAt = node, NodeID(r.GetTo()), time.Now()
			return nil
		}
		refusal := r.GetRefusal()
		switch {
		case strings.HasPrefix(refusal, "cannot_relinquish"):
			return fmt.Errorf("%w: %s: %s", ErrCannotHandoff, addr, refusal)
		case strings.HasPrefix(refusal, "unknown_machine"):
			return fmt.Errorf("%w: %s: %s", ErrUnknownMachine, addr, refusal)
		case strings.HasPrefix(refusal, "not_leader"):
			hint := NodeID(r.GetLeaderHint())
			next, known := sv.machines[hint]
			if hint == 0 || hint == node || hint == h.to || !known {
				// Unknown, a loop, or the successor asked for leading
				// already: the next look at the cell tells.
				h.last = addr + ": " + refusal
				return nil
			}
			node, addr = hint, next
			continue
		case strings.HasPrefix(refusal, "unknown_journal"):
			h.last = addr + " no longer serves the journal"
		default:
			h.last = addr + ": " + refusal // unavailable: ask again
		}
		return nil
	}
	h.last = fmt.Sprintf("%d not_leader redirects in a row (last %s)", handoffRedirectsMax, addr)
	return nil
}

// handoffAt sends the Handoff to the machine at addr.
func (a *Client) handoffAt(ctx context.Context, addr string, req *pb.HandoffRequest) (*pb.HandoffReply, error) {
	return adminAt(ctx, a, addr, "handoff", true, func(ctx context.Context, ac pb.AdminClient, o ...grpc.CallOption) (*pb.HandoffReply, error) {
		return ac.Handoff(ctx, req, o...)
	})
}

// unfinished is the error of a Handoff that ran out of time: ambiguous
// once a leader handed on (or may have).
func (h *handoff) unfinished(why error) error {
	last := h.last
	if last == "" {
		last = "no node leads the journal"
	}
	if h.asked != 0 {
		return fmt.Errorf("%w: handoff %s: node %s handed its leadership on but the successor was not seen leading: %w (last: %s)",
			client.ErrAmbiguous, h.id, h.asked, why, last)
	}
	return fmt.Errorf("%w: handoff %s: no leader handed on: %w (last: %s)", client.ErrNotLeader, h.id, why, last)
}
