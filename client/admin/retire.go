package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/internal/link"
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
		return "paros/admin: retire refused: " + e.Reason
	}
	return "paros/admin: retire refused: " + e.Reason + ": " + e.Detail
}

// Unwrap is client.ErrUnknownJournal for the reason unknown_journal.
func (e *RetireRefusedError) Unwrap() error {
	if e.Reason == "unknown_journal" {
		return client.ErrUnknownJournal
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
// the cell), client.ErrNoServer (the machine could not be reached:
// nothing was sent), client.ErrDenied, client.ErrAmbiguous (the request
// may have been received, and honoured: Retire again, which a retired
// machine refuses as unknown_journal).
func (a *Client) Retire(ctx context.Context, id journal.ID, node NodeID, watermark Ballot) error {
	if !id.IsSet() || node == 0 || watermark.IsZero() {
		return fmt.Errorf("paros/admin: Retire needs a journal, a node and a watermark (journal %s, node %s, watermark %s)", id, node, watermark)
	}
	sv := a.look(ctx, journal.ID{})
	if len(sv.answers) == 0 {
		if link.Denied(sv.lastErr) {
			return fmt.Errorf("%w: %w", client.ErrDenied, sv.lastErr)
		}
		return fmt.Errorf("%w (last error: %v)", client.ErrNoServer, sv.lastErr)
	}
	addr, ok := sv.machines[node]
	if !ok {
		return fmt.Errorf("%w: %s is no machine of cell %016x", ErrUnknownMachine, node, sv.cellID)
	}
	req := &pb.RetireRequest{Journal: wire.JournalIDToPB(id), GcWatermark: &pb.Ballot{Round: watermark.Round, Node: uint64(watermark.Node)}}
	r, err := adminAt(ctx, a, addr, "retire", true, func(ctx context.Context, ac pb.AdminClient, o ...grpc.CallOption) (*pb.RetireReply, error) {
		return ac.Retire(ctx, req, o...)
	})
	if err != nil {
		if errors.Is(err, client.ErrNoServer) || errors.Is(err, client.ErrDenied) {
			return err
		}
		return fmt.Errorf("%w: %w", client.ErrAmbiguous, err)
	}
	if r.GetAccepted() {
		return nil
	}
	reason, detail, _ := strings.Cut(r.GetRefusal(), ": ")
	return &RetireRefusedError{Reason: reason, Detail: detail}
}
