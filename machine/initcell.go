package machine

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/wire"
)

// Access is how an operator's tool reaches a machine: the TLS it dials with
// (security.ClientConfig over the cell's ca.crt) and the bearer token it
// presents. The zero Access is plaintext without a token: the explicit
// insecure mode.
type Access struct {
	// TLS is the client TLS configuration; nil dials plaintext.
	TLS *tls.Config
	// Token is an operator's token with the admin operation over every
	// journal (CellInit needs it), sent as "authorization: Bearer <token>";
	// "" sends none. A token is never sent over plaintext.
	Token string
}

// errTokenPlaintext: an Access with a token but no TLS.
var errTokenPlaintext = errors.New("paros/machine: a token is never sent over plaintext: set Access.TLS too")

// dialOption is the transport security of an Access.
func (a Access) dialOption() grpc.DialOption {
	if a.TLS == nil {
		return grpc.WithTransportCredentials(insecure.NewCredentials())
	}
	return grpc.WithTransportCredentials(credentials.NewTLS(a.TLS))
}

// outgoing adds the Access's token to ctx's outgoing metadata.
func (a Access) outgoing(ctx context.Context) context.Context {
	if a.Token == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+a.Token)
}

// InitCell is the operator's side of cell init (what `parosctl cell init`,
// `paros dev`, the test cell and the bench harness do): it asks the machine
// at via to run the decree over members with the given number of journals,
// naming replicas (machines started as replicas; none: nil) as the cell's
// replica machines, and retries while a machine is not up yet or another
// proposer contends, until ctx ends. It returns the chosen plan once every
// replica joined. access is how the machine is reached: on a secure cell,
// TLS with the cell's CA and an admin token.
func InitCell(ctx context.Context, via string, members, replicas []string, journals uint32, access Access) (*pb.CellPlan, error) {
	return InitCellWith(ctx, via, &pb.CellInitRequest{Members: members, Replicas: replicas, Journals: journals}, access)
}

// InitCellWith is InitCell with the whole request: its proxies (machines
// started as proxies, proxy.go) and whether the cell is plain, besides the
// members, replicas and journals.
func InitCellWith(ctx context.Context, via string, req *pb.CellInitRequest, access Access) (*pb.CellPlan, error) {
	if access.Token != "" && access.TLS == nil {
		return nil, errTokenPlaintext
	}
	conn, err := grpc.NewClient(via, access.dialOption())
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	last := "no answer"
	for {
		// An attempt outlives the server's own bound on the call, so a
		// slow formation answers instead of being retried while it runs
		// (which is refused "contended").
		cctx, cancel := context.WithTimeout(access.outgoing(ctx), wire.CellInitTimeout(req.GetJournals())+5*time.Second)
		r, err := pb.NewMachineClient(conn).CellInit(cctx, req)
		cancel()
		if err == nil && r.GetInitialized() {
			return r.GetPlan(), nil
		}
		if err != nil {
			last = err.Error()
		} else {
			last = r.GetRefusal()
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("paros/machine: cell init: %w (last answer: %s)", ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
