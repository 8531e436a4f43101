// Package server is paros's gRPC edge: it validates every request before
// consensus, translates protobuf to the plain host.Call types, and answers
// with the verdict the host gave — marking every reply without a verdict as
// ambiguous.
//
// Validation, answered in-band with a typed refusal
// and never proposed:
//
//	check                                   answer
//	--------------------------------------  ----------------------------------
//	journal unset or not served             refusal UNKNOWN_JOURNAL / unknown_journal
//	> 1,024 records or > 1 MiB in a Write   refusal TOO_LARGE (names both limits)
//	a unary Write with no record            InvalidArgument "no records"
//	bytes that do not decode                InvalidArgument (not Internal)
//	read limit 0 or > 256                   clamped to 256 records (64 KiB page)
//	wait_ms > 1,000                         clamped to 1,000
//
// Security (docs/guide/security.md): ServerOptions installs TLS and a gate that
// authenticates every call (a peer machine's certificate, or a bearer
// token signed by the cell's CA), authorizes it by the rule table in
// rules.go, and bounds each principal's calls in flight. The Peer stream
// checks that every Deliver and every message in it comes from the node
// its certificate names, and that the node is a member of the cell,
// before a byte reaches the host.
//
// One file per service: journal.go and stream.go (Journal, its unary calls
// and its WriteStream), peer.go (Peer), admin.go (Admin). This file holds
// what they share: the Backend they call. ServerOptions (security.go)
// installs TLS, the codec (codec.go) and the gate (auth.go), which works
// with the principal (principal.go), the rule table (rules.go), the
// verified-token cache (tokencache.go) and the per-principal limits
// (fair.go); CallerOf (caller.go) tells a handler who called.
package server

import (
	"context"
	"time"

	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/runtime"
)

// Backend is what the services need of a running process.
type Backend interface {
	Call(ctx context.Context, c host.Call) (host.Response, error)
	// Submit hands calls over in one turn, in order, and answers each
	// through reply without blocking (runtime.Runtime.Submit).
	Submit(ctx context.Context, calls []host.Call, reply func(i int, resp host.Response)) error
	Deliver(from uint64, batch []host.Envelope)
}

// RuntimeBackend adapts a *runtime.Runtime.
type RuntimeBackend struct{ R *runtime.Runtime }

func (b RuntimeBackend) Call(ctx context.Context, c host.Call) (host.Response, error) {
	return b.R.Call(ctx, c)
}

func (b RuntimeBackend) Submit(ctx context.Context, calls []host.Call, reply func(int, host.Response)) error {
	return b.R.Submit(ctx, calls, reply)
}

func (b RuntimeBackend) Deliver(from uint64, batch []host.Envelope) {
	b.R.Deliver(host.NodeIDOf(from), batch)
}

// callTimeout bounds how long a handler waits for the host beyond the
// read's own wait: the reply is then ambiguous.
const callTimeout = 10 * time.Second
