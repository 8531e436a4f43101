package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/parosdb/paros/security"
)

// ErrDenied: a server refused the Client's credentials before the call
// reached consensus, so nothing was proposed: no token, or a bad or expired
// one (codes.Unauthenticated), or a token whose scopes do not grant the
// operation on the journal (codes.PermissionDenied). Calling again does not
// help; fix the credentials. The error also wraps the server's gRPC status
// (status.Code tells which).
var ErrDenied = errors.New("paros/client: the server refused the credentials")

// WithTLS dials every server over TLS with cfg (security.ClientConfig
// builds one that trusts only the cell's CA). It replaces
// WithTransportCredentials.
func WithTLS(cfg *tls.Config) Option {
	return func(o *options) { o.creds, o.credsSet = credentials.NewTLS(cfg), true }
}

// WithCAFile dials every server over TLS 1.3 trusting only the CA
// certificate in the PEM file at path (the cell's ca.crt); server names
// are verified against the addresses dialled. A file that cannot be read
// or parsed makes Dial fail.
func WithCAFile(path string) Option {
	return func(o *options) {
		cfg, err := security.ClientConfigFile(path)
		if err != nil {
			o.err = errors.Join(o.err, fmt.Errorf("paros/client: CA file %s: %w", path, err))
			return
		}
		o.creds, o.credsSet = credentials.NewTLS(cfg), true
	}
}

// WithToken presents token (from `paros cert token`) on every call, as the
// gRPC metadata "authorization: Bearer <token>".
//
// A bearer token lets whoever reads it act as its holder, so it is sent
// only over transport security: with the default transport (plaintext,
// nothing chosen) Dial fails and asks for WithCAFile or WithTLS. A Client
// made explicitly plaintext with
// WithTransportCredentials(insecure.NewCredentials()) does send it in the
// clear, for the one case that needs it: a TLS-terminating proxy on the
// same host. An empty token, or one with white space, makes Dial fail.
func WithToken(token string) Option {
	return func(o *options) {
		if token == "" || strings.ContainsAny(token, " \t\r\n") {
			o.err = errors.Join(o.err, errors.New("paros/client: WithToken: an empty token, or one with white space"))
			return
		}
		o.token = token
	}
}

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
	if o.token == "" {
		return nil, nil
	}
	plaintext := o.creds.Info().SecurityProtocol == "insecure"
	if plaintext && !o.credsSet {
		return nil, errors.New("paros/client: WithToken needs transport security: add WithCAFile or WithTLS " +
			"(or choose plaintext explicitly with WithTransportCredentials(insecure.NewCredentials()))")
	}
	return []grpc.DialOption{grpc.WithPerRPCCredentials(bearer{header: "Bearer " + o.token, requireTLS: !plaintext})}, nil
}

// denied reports whether err is a server's refusal of the credentials.
func denied(err error) bool {
	switch status.Code(err) {
	case codes.Unauthenticated, codes.PermissionDenied:
		return true
	}
	return false
}

// deniedError wraps a refusal of the credentials in ErrDenied, keeping its
// gRPC status.
func deniedError(addr string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrDenied, addr, err)
}
