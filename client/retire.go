package client

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/wire"
)

// RetireRefusedError is a machine's refusal to retire from a journal.
// Reason is the node's word for it:
//
//	reason          meaning                                              what to do
//	--------------  ---------------------------------------------------  -------------------------------
//	plain           the cell has no matchmakers                          nothing: members never retire
//	leader          the machine leads the journal                        reconfigure it out first
//	member          it is a member of the configuration in force         reconfigure it out first
//	stale           its configuration is not the watermark's (it has     retry with the leader's current
//	                not heard from the current leader yet, or the        watermark (Inspect)
//	                watermark is old)
//	not_collected   the watermark does not cover every configuration     wait for the leader's GC
//	                naming it                                            (Inspect: GCEffective)
//	unknown_journal it does not serve the journal (retired already)      nothing
//
// Detail is the rest of the node's answer.
type RetireRefusedError struct {
	Reason, Detail string
}

func (e *RetireRefusedError) Error() string {
	if e.Detail == "" {
		return "paros/client: retire refused: " + e.Reason
	}
	return "paros/client: retire refused: " + e.Reason + ": " + e.Detail
}

// Unwrap is ErrUnknownJournal for the reason unknown_journal.
func (e *RetireRefusedError) Unwrap() error {
	if e.Reason == "unknown_journal" {
		return ErrUnknownJournal
	}
	return nil
}

// Retire asks machine node to retire from journal id: to delete its copy
// of the journal, which a reconfiguration left it out of. watermark is the
// leader's effective GC watermark (Inspect: GCWatermark once GCEffective,
// with node among Retirable). The machine judges the request itself and
// refuses it unless it is safe: a *RetireRefusedError says why. A retired
// machine never serves the journal again.
//
// Errors: *RetireRefusedError, ErrUnknownMachine (node is no machine of
// the cell), ErrNoServer (the machine could not be reached: nothing was
// sent), ErrDenied, ErrAmbiguous (the request may have been received, and
// honoured: Retire again, which a retired machine refuses as
// unknown_journal).
func (c *Client) Retire(ctx context.Context, id journal.ID, node uint64, watermark Ballot) error {
	if !id.IsSet() || node == 0 || watermark.IsZero() {
		return fmt.Errorf("paros/client: Retire needs a journal, a node and a watermark (journal %s, node %016x, watermark %s)", id, node, watermark)
	}
	sv := c.look(ctx, journal.ID{})
	if len(sv.answers) == 0 {
		if denied(sv.lastErr) {
			return fmt.Errorf("%w: %w", ErrDenied, sv.lastErr)
		}
		return fmt.Errorf("%w (last error: %v)", ErrNoServer, sv.lastErr)
	}
	addr, ok := sv.machines[node]
	if !ok {
		return fmt.Errorf("%w: %016x is no machine of cell %016x", ErrUnknownMachine, node, sv.cellID)
	}
	cc, err := c.conn(addr)
	if err != nil {
		return err
	}
	actx, cancel := context.WithTimeout(ctx, adminCallTimeout)
	defer cancel()
	var p peer.Peer
	r, err := pb.NewAdminClient(cc).Retire(actx, &pb.RetireRequest{Journal: wire.JournalIDToPB(id),
		GcWatermark: &pb.Ballot{Round: watermark.Round, Node: watermark.Node}}, grpc.Peer(&p))
	if err != nil {
		err = machineError(addr, "retire", err, &p)
		if errors.Is(err, ErrNoServer) || errors.Is(err, ErrDenied) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrAmbiguous, err)
	}
	if r.GetAccepted() {
		return nil
	}
	reason, detail, _ := strings.Cut(r.GetRefusal(), ": ")
	return &RetireRefusedError{Reason: reason, Detail: detail}
}
