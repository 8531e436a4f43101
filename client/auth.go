package client

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc"

	"github.com/parosdb/paros/client/internal/link"
)

// ErrDenied: a server refused the Client's credentials before the call
// reached consensus, so nothing was proposed: no token, or a bad or expired
// one (codes.Unauthenticated), or a token whose scopes do not grant the
// operation on the journal (codes.PermissionDenied). Calling again does not
// help; fix the credentials. The error also wraps the server's gRPC status
// (status.Code tells which).
var ErrDenied = errors.New("paros/client: the server refused the credentials")

// ErrNoTransport: Dial was given no transport security. A cell served
// with TLS (the default of `paros serve`) wants WithCAFile (and a token,
// WithToken); one served with --insecure wants WithInsecure. FromEnv
// makes the choice from the environment.
var ErrNoTransport = errors.New("paros/client: Dial needs a transport: WithCAFile for a cell served with TLS, WithInsecure for one served with --insecure")

// bearer is the per-call credential WithToken adds.
type bearer struct {
	header     string // "Bearer <token>"
	requireTLS bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": b.header}, nil
}

func (b bearer) RequireTransportSecurity() bool { return b.requireTLS }

// authDialOptions checks the options' security and returns the dial
// options the token needs (none without one).
func (o *options) authDialOptions() ([]grpc.DialOption, error) {
	if o.err != nil {
		return nil, o.err
	}
	if !o.credsSet {
		return nil, ErrNoTransport
	}
	if o.token == "" {
		return nil, nil
	}
	plaintext := o.creds.Info().SecurityProtocol == "insecure"
	return []grpc.DialOption{grpc.WithPerRPCCredentials(bearer{header: "Bearer " + o.token, requireTLS: !plaintext})}, nil
}

// denied reports whether err is a server's refusal of the credentials.
func denied(err error) bool { return link.Denied(err) }

// deniedError wraps a refusal of the credentials in ErrDenied, keeping its
// gRPC status.
func deniedError(addr string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrDenied, addr, err)
}
