package server

import (
	"context"
	"fmt"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/security"
)

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
