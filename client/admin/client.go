package admin

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/internal/link"
)

// Client makes the operator's calls on the cell of a *client.Client. It
// wraps the client.Client and owns nothing of its own: it shares its
// connections, options and token, and closing the client.Client ends it.
// A Client is safe for concurrent use.
type Client struct {
	c *client.Client
	l link.Link
}

// New returns the operator's Client over c. It is cheap: make one where
// needed, or keep one beside c.
func New(c *client.Client) *Client {
	return &Client{c: c, l: link.Of(c)}
}

// Bounds and pace of the operator's calls: every retry loop has a bound.
const (
	// callTimeout bounds one call to one machine.
	callTimeout = 10 * time.Second
	// inspectTimeout bounds one Inspect of one machine.
	inspectTimeout = 12 * time.Second
	// lookTimeout bounds one survey of the cell (look): a machine that
	// does not answer holds no poll up.
	lookTimeout = 2 * time.Second
)

// The roles a machine names in IdentifyReply.role and
// InspectReply.machine_role ("" for a node machine).
const (
	roleReplica = "replica"
	roleProxy   = "proxy"
)

// identify asks the machine at addr who it is.
func (a *Client) identify(ctx context.Context, addr string) (*pb.IdentifyReply, error) {
	cc, err := a.l.Conn(addr)
	if err != nil {
		return nil, err
	}
	actx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var p peer.Peer
	r, err := pb.NewMachineClient(cc).Identify(actx, &pb.IdentifyRequest{}, grpc.Peer(&p))
	if err != nil {
		return nil, a.l.CallError(addr, "identify", err, &p)
	}
	if r.GetNodeId() == 0 {
		return nil, fmt.Errorf("paros/admin: %s answered Identify without a node id", addr)
	}
	return r, nil
}

// callMachine makes one Machine call at addr and returns its refusal
// ("" when it was granted).
func (a *Client) callMachine(ctx context.Context, addr, call string,
	do func(context.Context, pb.MachineClient, ...grpc.CallOption) (string, error)) (string, error) {
	cc, err := a.l.Conn(addr)
	if err != nil {
		return "", err
	}
	actx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var p peer.Peer
	refusal, err := do(actx, pb.NewMachineClient(cc), grpc.Peer(&p))
	if err != nil {
		return "", a.l.CallError(addr, call, err, &p)
	}
	return refusal, nil
}

// adminAt makes one Admin call at addr, bounded by callTimeout when
// bounded, and classifies its failure (link.Link.CallError).
func adminAt[R any](ctx context.Context, a *Client, addr, call string, bounded bool,
	do func(context.Context, pb.AdminClient, ...grpc.CallOption) (R, error)) (R, error) {
	var zero R
	cc, err := a.l.Conn(addr)
	if err != nil {
		return zero, fmt.Errorf("%w: %s %s: %w", client.ErrNoServer, call, addr, err) // nothing was sent
	}
	if bounded {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, callTimeout)
		defer cancel()
	}
	var p peer.Peer
	r, err := do(ctx, pb.NewAdminClient(cc), grpc.Peer(&p))
	if err != nil {
		return zero, a.l.CallError(addr, call, err, &p)
	}
	return r, nil
}
