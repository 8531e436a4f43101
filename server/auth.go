package server

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/security"
	"github.com/parosdb/paros/wire"
)

// need is what a rule asks of the caller.
type need uint8

const (
	// needJournalOp: a token whose claims grant the rule's op on the
	// request's journal; for a stream, on the journal of every write it
	// carries (a write out of scope ends the stream).
	needJournalOp need = iota + 1
	// needPeer: a peer machine's certificate of this cell. The Peer stream
	// then checks every sender it is handed against it (Peer.Stream).
	needPeer
	// needInspect: node_only: any authenticated principal; a journal (or
	// none): a token with any scope covering it. A token without admin
	// over everything sees only the journals it covers listed; a peer
	// machine sees them all (Admin.Inspect). The cell's machines are shown
	// only to a peer or a token covering every journal (seesCell).
	needInspect
	// needPeerOrAdmin: a peer machine's certificate, or a token granting
	// OpAdmin over every journal. The handler then admits a peer only
	// where its role needs the call (Machine.JoinCell: the formation's
	// proposer, named in the plan), taking it from CallerOf.
	needPeerOrAdmin
	// needAdmin: a token granting OpAdmin over every journal.
	needAdmin
	// needIdentify: any authenticated principal; asking for the cell plan
	// too (which lists every journal), a peer machine's certificate or a
	// token granting OpAdmin over every journal (Machine.Identify).
	needIdentify
	// needTenantAdmin: a token granting OpAdmin on some scope. The handler
	// then resolves the tenant the request names and admits the call only
	// if the token grants OpAdmin over that whole tenant
	// (Caller.AllowsTenant): a name means nothing before it is resolved.
	needTenantAdmin
	// needAnyone: any authenticated principal; the handler shows each only
	// what its scope covers (Caller.SeesTenant).
	needAnyone
)

// rule is what one RPC needs.
type rule struct {
	method string
	need   need
	op     security.Op // needJournalOp only
}

// rules is who may call what, once for every RPC of every service a
// machine registers (a test checks the table against the service
// descriptors both ways). A method without a rule is refused.
//
//	method                         needs
//	-----------------------------  -------------------------------------------
//	Journal/Read                   token: read on the request's journal;
//	                               or a peer certificate the machine's
//	                               ControlPeer grants it (below)
//	Journal/Write                  token: write on the request's journal;
//	                               or a peer certificate, as Read
//	Journal/Truncate               token: write on the request's journal;
//	                               or a peer certificate, as Read
//	Journal/SetLeader              token: write on the request's journal;
//	                               or a peer certificate, as Read; one
//	                               that installs the seal: only a peer
//	                               certificate ControlPeer grants it
//	Journal/WriteStream            token: write on the journal of every
//	                               write; or a peer certificate, as Read
//	Control/CreateTenant           token: admin over every journal
//	Control/DeleteTenant           token: admin over every journal
//	Control/RegisterMachine        token: admin over every journal
//	Control/DrainMachine           token: admin over every journal
//	Control/CreateJournal          token: admin on some scope; the handler:
//	                               admin over the whole tenant named
//	Control/DeleteJournal          token: admin on some scope; the handler:
//	                               admin over the whole tenant named
//	Control/Registry               anyone authenticated; the handler shows
//	                               the tenants the caller's scope covers
//	Peer/Stream                    peer certificate; every from = its node id
//	Admin/Inspect                  node_only: anyone; else a token covering
//	                               the journal; list filtered to scope; the
//	                               cell's machines only to a peer or a token
//	                               covering every journal
//	Admin/Reconfigure              token: admin over every journal; the
//	                               members: live acceptor machines of the
//	                               cell (CellVetter)
//	Admin/ReconfigureMatchmakers   token: admin over every journal
//	Admin/Retire                   token: admin over every journal
//	Admin/Handoff                  token: admin over every journal; the
//	                               successor: a machine of the cell
//	                               (CellVetter)
//	Machine/Identify               anyone authenticated; with plan: peer
//	                               certificate, or admin over everything
//	Machine/PrepareCell            peer certificate; the handler: a founding
//	                               member named in the request (formed: a
//	                               founder of the cell), the ballot its own
//	                               node, the round at most promised+2^20
//	Machine/FormCell               peer certificate; the handler: a founding
//	                               member named in the plan (formed: a
//	                               founder of the cell), the ballot its own
//	                               node, the round at most promised+2^20
//	Machine/CellInit               token: admin over every journal
//	Machine/Admit                  token: admin over every journal
//	Machine/JoinCell               admin over everything; or a peer
//	                               certificate, the handler: the formation's
//	                               proposer (a founder named in the plan;
//	                               formed: a founder of the cell) joining a
//	                               replica or proxy machine
//	Machine/JoinJournal            token: admin over every journal
//	Machine/SetReplicas            token: admin over every journal
//	Machine/SetProxies             token: admin over every journal
//
// Why the peer journal calls are safe. A machine's certificate grants a
// journal call only where the machine's role needs it (ControlPeer): the
// cell's control-plane journals, read and written by the cell's acceptor
// machines (founders and admitted machines: the candidates of the cell
// coordinator's election, and the coordinator that fences the registry,
// which outlive the founders once these are replaced); and an acceptor
// machine may move the writer fence (SetLeader, which writes no record)
// of a user's journal the registry holds as being deleted, so that no
// writer's append is accepted after the deletion. A
// replica's or proxy's certificate, or one of a machine the cell never
// admitted, writes to no journal, and no certificate reads a user's
// journal or writes a record to it.
//
// Why each Machine rule is safe. Identify tells what a TLS handshake
// already shows (the node id), and the plan (every journal) only to a
// machine or an admin. PrepareCell and FormCell are the decree's two
// phases, sent by its proposer over its own certificate (the operator's
// token reaches only CellInit); a machine of the CA that names no member
// is refused, a ballot under another node cannot be forged, and a round
// cannot jump the promise far enough to exhaust the decree (celldecree.RoundLeadMax).
// JoinCell comes from parosctl (admin) or from
// CellInit's proposer joining the plan's replicas and proxies (peer): a
// peer may join only a replica or proxy machine, into a plan naming the
// peer as a founder (once the machine is in a cell, a founder of it), so a
// certificate outside the cell moves no machine of a formed cell and makes
// no acceptor (which joins only once an admin admitted it). Before a cell
// forms, a certificate of the CA is the only credential an idle machine
// can judge: one naming itself a founder can still draw idle machines into
// a plan of its own, as it could by running the decree itself. Admit, JoinJournal, SetReplicas and
// SetProxies come only from an operator's tool (client.Client, with an
// admin token): no machine role sends them, so no certificate may (one
// listed itself as a proxy, another emptied the replica list). Admin
// calls naming machines are checked against the cell before the host
// sees them (server.CellVetter).
//
// No credential answers Unauthenticated (as does an invalid or expired
// token); a credential that does not grant the call, PermissionDenied,
// decided from the request alone so that the answer never tells whether a
// journal exists.
var rules = []rule{
	{pb.Journal_Read_FullMethodName, needJournalOp, security.OpRead},
	{pb.Journal_Write_FullMethodName, needJournalOp, security.OpWrite},
	{pb.Journal_Truncate_FullMethodName, needJournalOp, security.OpWrite},
	{pb.Journal_SetLeader_FullMethodName, needJournalOp, security.OpWrite},
	{pb.Journal_WriteStream_FullMethodName, needJournalOp, security.OpWrite},
	{pb.Peer_Stream_FullMethodName, needPeer, 0},
	{pb.Admin_Inspect_FullMethodName, needInspect, 0},
	{pb.Admin_Reconfigure_FullMethodName, needAdmin, 0},
	{pb.Admin_ReconfigureMatchmakers_FullMethodName, needAdmin, 0},
	{pb.Admin_Retire_FullMethodName, needAdmin, 0},
	{pb.Admin_Handoff_FullMethodName, needAdmin, 0},
	{pb.Machine_Identify_FullMethodName, needIdentify, 0},
	{pb.Machine_PrepareCell_FullMethodName, needPeer, 0},
	{pb.Machine_FormCell_FullMethodName, needPeer, 0},
	{pb.Machine_CellInit_FullMethodName, needAdmin, 0},
	{pb.Machine_Admit_FullMethodName, needAdmin, 0},
	{pb.Machine_JoinCell_FullMethodName, needPeerOrAdmin, 0},
	{pb.Machine_JoinJournal_FullMethodName, needAdmin, 0},
	{pb.Machine_SetReplicas_FullMethodName, needAdmin, 0},
	{pb.Machine_SetProxies_FullMethodName, needAdmin, 0},
	{pb.Control_CreateTenant_FullMethodName, needAdmin, 0},
	{pb.Control_DeleteTenant_FullMethodName, needAdmin, 0},
	{pb.Control_RegisterMachine_FullMethodName, needAdmin, 0},
	{pb.Control_DrainMachine_FullMethodName, needAdmin, 0},
	{pb.Control_CreateJournal_FullMethodName, needTenantAdmin, 0},
	{pb.Control_DeleteJournal_FullMethodName, needTenantAdmin, 0},
	{pb.Control_Registry_FullMethodName, needAnyone, 0},
}

// ruleOf indexes rules by full method name.
var ruleOf = func() map[string]rule {
	m := make(map[string]rule, len(rules))
	for _, r := range rules {
		if _, dup := m[r.method]; dup {
			panic(fmt.Sprintf("paros/server: two rules for %s", r.method))
		}
		if r.need == needJournalOp && r.op == 0 {
			panic(fmt.Sprintf("paros/server: the rule for %s names no operation", r.method))
		}
		m[r.method] = r
	}
	return m
}()

// principal is who a call comes from, as the gate established it.
type principal struct {
	// secured: the server runs with credentials; false in --insecure
	// mode, where only addr is set.
	secured bool
	// node is the node id a verified peer-machine certificate of this cell
	// names; 0 when the connection presented none.
	node uint64
	// claims are the verified bearer token's; nil when none was presented.
	claims *security.Claims
	// addr is the remote host (without port): the --insecure mode's key.
	addr string
	// controlPeer is Security.ControlPeer, set when node is: the journal
	// calls a peer machine may make (the control plane's journals).
	controlPeer func(PeerCall) bool
}

// peerMay reports whether p's peer certificate grants op on journal id
// (seal: the call is a SetLeader installing journal.Sealed).
func (p principal) peerMay(op security.Op, id journal.ID, seal bool) bool {
	return p.node != 0 && p.controlPeer != nil && p.controlPeer(PeerCall{Node: p.node, Journal: id, Op: op, Seal: seal})
}

func (p principal) authenticated() bool { return p.node != 0 || p.claims != nil }

// adminAll reports whether the token grants OpAdmin over every journal.
func (p principal) adminAll() bool {
	return p.claims != nil && p.claims.Allows(security.OpAdmin, journal.ID{})
}

// key names the principal for the per-principal bound: the token's
// subject, else the peer's node id, else the remote host.
func (p principal) key() string {
	switch {
	case p.claims != nil:
		return "token:" + p.claims.Subject
	case p.node != 0:
		return fmt.Sprintf("node:%016x", p.node)
	}
	return "addr:" + p.addr
}

func (p principal) String() string {
	switch {
	case p.claims != nil:
		return fmt.Sprintf("token %q", p.claims.Subject)
	case p.node != 0:
		return fmt.Sprintf("node %016x", p.node)
	}
	return "host " + p.addr
}

type principalKey struct{}

func withPrincipal(ctx context.Context, p principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// principalFrom returns the principal the gate put in ctx, if any.
func principalFrom(ctx context.Context) (principal, bool) {
	p, ok := ctx.Value(principalKey{}).(principal)
	return p, ok
}

// seesCell reports whether p may see the cell's node facts (every
// machine's id, address and role: Inspect's machines): a peer machine, a
// token whose scopes cover every journal (--all: the operator's), or
// anyone on a server that authenticates nobody (--insecure). A token of a
// tenant or a journal learns of the machine it called only.
func (p principal) seesCell() bool {
	return !p.secured || p.node != 0 || (p.claims != nil && p.claims.AllowsAny(journal.ID{}))
}

// allows reports whether p may make a call under r carrying req; req nil
// asks at a stream's opening, before any message (a needJournalOp stream
// then needs a token granting the op somewhere; each message is checked
// as it arrives).
func (r rule) allows(p principal, req any) bool {
	switch r.need {
	case needPeer:
		return p.node != 0
	case needAdmin:
		return p.adminAll()
	case needPeerOrAdmin:
		return p.node != 0 || p.adminAll()
	case needJournalOp:
		if req == nil {
			// A stream's opening: each message is checked as it comes.
			return p.claims != nil && grantsOp(*p.claims, r.op) || p.node != 0 && p.controlPeer != nil
		}
		j, ok := req.(interface{ GetJournal() *pb.JournalId })
		if !ok {
			return false
		}
		id := wire.JournalIDFromPB(j.GetJournal())
		sl, _ := req.(*pb.SetLeaderRequest)
		if seal := sl != nil && wire.UUIDFromPB(sl.GetNewLeader()) == journal.Sealed; seal {
			// Only the control plane seals a journal, and only one it is
			// deleting: a token's write right does not reach it.
			return p.peerMay(r.op, id, true)
		}
		return p.claims != nil && p.claims.Allows(r.op, id) || p.peerMay(r.op, id, false)
	case needTenantAdmin:
		return p.claims != nil && grantsOp(*p.claims, security.OpAdmin)
	case needAnyone:
		return p.authenticated()
	case needIdentify:
		in, ok := req.(*pb.IdentifyRequest)
		return ok && (!in.GetPlan() || p.node != 0 || p.adminAll())
	case needInspect:
		in, ok := req.(*pb.InspectRequest)
		if !ok {
			return false
		}
		return in.GetNodeOnly() || (p.claims != nil && p.claims.AllowsAny(wire.JournalIDFromPB(in.GetJournal())))
	}
	return false
}

func grantsOp(c security.Claims, op security.Op) bool {
	for _, s := range c.Scopes {
		if s.Ops&op == op {
			return true
		}
	}
	return false
}

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
