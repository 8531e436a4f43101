package server

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/security"
	"github.com/parosdb/paros/wire"
)

// gate authenticates, authorizes and bounds every call of one server.
type gate struct {
	node        *security.Node // nil: --insecure
	controlPeer func(PeerCall) bool
	now         func() time.Time
	tokens      *tokenCache
	calls       *inflight
}

func newGate(sec Security) *gate {
	g := &gate{node: sec.Node, controlPeer: sec.ControlPeer, now: sec.Now, tokens: newTokenCache(), calls: newInflight(sec.PrincipalCallsMax)}
	if g.now == nil {
		g.now = time.Now
	}
	return g
}

// unary is the unary interceptor: authenticate, refuse undecodable bytes,
// authorize on the decoded request, bound the principal's calls.
func (g *gate) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	p, err := g.authenticate(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkDecoded(req); err != nil {
		return nil, err
	}
	if err := g.authorize(p, info.FullMethod, req); err != nil {
		return nil, err
	}
	release, err := g.calls.acquire(p)
	if err != nil {
		return nil, err
	}
	defer release()
	return handler(withPrincipal(ctx, p), req)
}

// stream is the stream interceptor: authenticate and authorize the
// opening, bound the principal's calls (the stream counts as one until it
// ends), and check every message received (gatedStream).
func (g *gate) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx := ss.Context()
	p, err := g.authenticate(ctx)
	if err != nil {
		return err
	}
	if err := g.authorize(p, info.FullMethod, nil); err != nil {
		return err
	}
	release, err := g.calls.acquire(p)
	if err != nil {
		return err
	}
	defer release()
	return handler(srv, &gatedStream{ServerStream: ss, ctx: withPrincipal(ctx, p), p: p, rule: ruleOf[info.FullMethod]})
}

// gatedStream checks every message a stream handler receives before the
// handler sees it.
type gatedStream struct {
	grpc.ServerStream
	ctx  context.Context
	p    principal
	rule rule
}

func (s *gatedStream) Context() context.Context { return s.ctx }

// RecvMsg refuses a message that did not decode (InvalidArgument) and, on
// a needJournalOp stream, one carrying a write for a journal out of the
// token's scope (PermissionDenied): the handler then ends the stream with
// that error, and no write of the message reaches it.
func (s *gatedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if err := checkDecoded(m); err != nil {
		return err
	}
	if !s.p.secured || s.rule.need != needJournalOp {
		return nil
	}
	req, ok := m.(*pb.WriteStreamRequest)
	if !ok {
		return status.Errorf(codes.PermissionDenied, "paros/server: %s: no rule for a %T", s.rule.method, m)
	}
	for _, w := range req.GetWrites() {
		if !s.rule.allows(s.p, w.GetWrite()) {
			return denied(s.p, s.rule, w.GetWrite())
		}
	}
	return nil
}

// authenticate establishes who the call comes from. With credentials, a
// verified peer certificate naming a node and a valid bearer token are
// both taken; an invalid or expired token is Unauthenticated even beside a
// certificate (a caller presenting a bad credential is refused, not
// downgraded). Without credentials, only the remote host is known.
func (g *gate) authenticate(ctx context.Context) (principal, error) {
	var p principal
	pr, ok := peer.FromContext(ctx)
	if ok && pr.Addr != nil {
		p.addr = pr.Addr.String()
		if host, _, err := net.SplitHostPort(p.addr); err == nil {
			p.addr = host
		}
	}
	if g.node == nil {
		return p, nil
	}
	p.secured = true
	if ok {
		if ti, isTLS := pr.AuthInfo.(credentials.TLSInfo); isTLS {
			if id, err := security.PeerNodeID(ti.State); err == nil {
				p.node, p.controlPeer = id, g.controlPeer
			}
		}
	}
	tok, present, err := bearerToken(ctx)
	if err != nil {
		return principal{}, err
	}
	if present {
		c, err := g.tokens.verify(g.node.CA, tok, g.now())
		switch {
		case errors.Is(err, security.ErrExpiredToken):
			return principal{}, status.Errorf(codes.Unauthenticated, "paros/server: the token expired: %v", err)
		case err != nil:
			return principal{}, status.Error(codes.Unauthenticated, "paros/server: invalid token (not signed by this cell's CA, or malformed)")
		}
		p.claims = &c
	}
	return p, nil
}

// bearerToken reads "authorization: Bearer <token>" from the call's
// metadata; present is false when there is no authorization header.
func bearerToken(ctx context.Context) (tok string, present bool, err error) {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get("authorization")
	switch len(vals) {
	case 0:
		return "", false, nil
	case 1:
	default:
		return "", false, status.Error(codes.Unauthenticated, "paros/server: more than one authorization header")
	}
	const scheme = "bearer "
	v := vals[0]
	if len(v) <= len(scheme) || !strings.EqualFold(v[:len(scheme)], scheme) {
		return "", false, status.Error(codes.Unauthenticated, `paros/server: the authorization header must be "Bearer <token>"`)
	}
	return strings.TrimSpace(v[len(scheme):]), true, nil
}

// authorize applies the method's rule; req nil at a stream's opening.
func (g *gate) authorize(p principal, method string, req any) error {
	if !p.secured {
		return nil
	}
	if !p.authenticated() {
		return status.Error(codes.Unauthenticated,
			"paros/server: no credential: present a bearer token (authorization: Bearer <token>) or a peer certificate of this cell")
	}
	r, ok := ruleOf[method]
	if !ok {
		return status.Errorf(codes.PermissionDenied, "paros/server: %s: no rule lets anyone call it", method)
	}
	if !r.allows(p, req) {
		return denied(p, r, req)
	}
	return nil
}

// denied words a refusal: it names the caller, the method and the journal
// the caller itself named, never anything the server knows of it.
func denied(p principal, r rule, req any) error {
	if j, ok := req.(interface{ GetJournal() *pb.JournalId }); ok && r.need == needJournalOp {
		id := wire.JournalIDFromPB(j.GetJournal())
		return status.Errorf(codes.PermissionDenied, "paros/server: %s is not granted %s on journal %d/%d",
			p, r.op, id.Tenant, id.Journal)
	}
	return status.Errorf(codes.PermissionDenied, "paros/server: %s may not call %s", p, r.method)
}
