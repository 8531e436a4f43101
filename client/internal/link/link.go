// Package link is the one door between package client and package
// client/admin. The operator's calls in client/admin build on a few pieces
// of a *client.Client that an application has no use for: a connection to
// any machine of the cell with the Client's dial options, the
// classification of a failed call, and the registry's read-your-writes
// mark. Package client implements Link and sets Of in its init; package
// admin calls Of once per admin.New. Nothing here is exported outside the
// client tree, so client's godoc stays the application's.
package link

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
)

// Link is what package admin needs of a *client.Client.
type Link interface {
	// Conn returns a connection to the machine at addr: the Client's own
	// when addr is one of its servers, else one dialled with the Client's
	// options (transport security, token) and kept until the Client
	// closes. The number of such connections is bounded.
	Conn(addr string) (*grpc.ClientConn, error)
	// CallError is the error of a failed call named call to the machine at
	// addr, p the call's peer: a refusal of the credentials (wrapping
	// client.ErrDenied), a call that never left (client.ErrNoServer), or
	// the call's error with its context.
	CallError(addr, call string, err error, p *peer.Peer) error
	// Registry asks the Client's servers for their fold of the cell's
	// registry and returns the most advanced answer, once one has folded
	// every control change this Client saw decided (SawRegistry), waiting
	// until ctx ends. Errors: client.ErrNoControlPlane, client.ErrDenied,
	// client.ErrUnavailable, client.ErrNoServer.
	Registry(ctx context.Context) (*pb.RegistryReply, error)
	// SawRegistry raises the registry position the Client's reads of the
	// registry must reach to at: a control change decided at at.
	SawRegistry(at uint64)
}

// Of returns the Link of c, a *client.Client. Package client sets it.
var Of func(c any) Link

// Denied reports whether err is a server's refusal of the credentials
// (codes.Unauthenticated or codes.PermissionDenied).
func Denied(err error) bool {
	switch status.Code(err) {
	case codes.Unauthenticated, codes.PermissionDenied:
		return true
	}
	return false
}
