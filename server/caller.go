package server

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/security"
)

// Caller is who a call comes from, as the gate established it, for a
// handler whose rule needs the request's content or the machine's state
// (the Machine service's cell calls: the gate let in any peer, the handler
// admits only the one whose role needs the call).
type Caller struct {
	// Secured: the server authenticates its callers. False in --insecure
	// mode, where every call is let in and Node is 0.
	Secured bool
	// Node is the node id the caller's verified peer certificate of this
	// cell names; 0 when it presented none.
	Node uint64
	// AdminAll: the caller's token grants OpAdmin over every journal.
	AdminAll bool
	p        principal
}

// CallerOf returns the caller of the call ctx belongs to, as the gate
// established it; false when no gate saw the call (an in-process call, or
// a server built without ServerOptions).
func CallerOf(ctx context.Context) (Caller, bool) {
	p, ok := principalFrom(ctx)
	if !ok {
		return Caller{}, false
	}
	return Caller{Secured: p.secured, Node: p.node, AdminAll: p.adminAll(), p: p}, true
}

// AllowsTenant reports whether the caller may make a call of op over the
// whole of tenant: anyone on a server that authenticates nobody, a token
// whose scope covers the tenant (or every journal) with op. A peer
// certificate grants no tenant.
func (c Caller) AllowsTenant(op security.Op, tenant uint64) bool {
	if !c.Secured {
		return true
	}
	if c.p.claims == nil || tenant == 0 {
		return false
	}
	for _, s := range c.p.claims.Scopes {
		if s.Ops&op == op && (s.Tenant == 0 && s.Journal == 0 || s.Tenant == tenant && s.Journal == 0) {
			return true
		}
	}
	return false
}

// SeesTenant reports whether the caller may see tenant and its journals
// listed: a peer machine, anyone on an insecure server, a token with any
// scope inside the tenant (a journal token sees its own tenant's name).
func (c Caller) SeesTenant(tenant uint64) bool {
	if !c.Secured || c.Node != 0 {
		return true
	}
	if c.p.claims == nil {
		return false
	}
	for _, s := range c.p.claims.Scopes {
		if s.Ops != 0 && (s.Tenant == 0 || s.Tenant == tenant) {
			return true
		}
	}
	return false
}

// SeesJournal reports whether the caller may see journal id listed.
func (c Caller) SeesJournal(id journal.ID) bool {
	return !c.Secured || c.Node != 0 || c.p.claims != nil && c.p.claims.AllowsAny(id)
}

// SeesCell reports whether the caller may see the cell's machines.
func (c Caller) SeesCell() bool { return c.p.seesCell() }

// Denied is the PermissionDenied a handler refuses the caller with, worded
// as the gate's own refusals (the caller and the method named) with why.
func (c Caller) Denied(method, why string) error {
	return status.Errorf(codes.PermissionDenied, "paros/server: %s may not call %s: %s", c.p, method, why)
}
