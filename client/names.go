package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/registry"
)

// Journals by name. A cell formed with a control plane keeps a registry
// of tenants and journal names; every machine folds it, and answers a
// query from its own fold. Resolve and JournalNamed map a name to a
// journal's id through it. Creating, listing and deleting journals and
// tenants are the operator's calls, in package client/admin.

// DefaultTenant is the tenant a journal name without one belongs to (the
// registry's, which the cell's first coordinator creates).
const DefaultTenant = registry.DefaultTenant

// ErrNoControlPlane: the cell was formed without a control plane, so it
// has no registry: its journals have ids, no names. Address them by id.
var ErrNoControlPlane = errors.New("paros/client: the cell has no control plane")

// ErrBadName: a name empty, longer than 128 bytes, not UTF-8, with a
// control character or '/', or 16 hex digits (the form of an id).
var ErrBadName = errors.New("paros/client: invalid name")

// SplitName reads a journal name "TENANT/NAME" or "NAME" (the default
// tenant).
func SplitName(name string) (tenant, journalName string) {
	if t, n, ok := strings.Cut(name, "/"); ok {
		return t, n
	}
	return DefaultTenant, name
}

// CheckName reports why a journal name ("TENANT/NAME" or "NAME") cannot
// name a journal, wrapping ErrBadName; nil if it can. The registry makes
// the same check; this one answers before any call.
func CheckName(ref string) error {
	tenant, name := SplitName(ref)
	if err := registry.ValidTenantName(tenant); err != nil {
		return fmt.Errorf("%w: tenant: %w", ErrBadName, err)
	}
	if err := registry.ValidName(name); err != nil {
		return fmt.Errorf("%w: %w", ErrBadName, err)
	}
	return nil
}

// ParseRef reads a journal reference: "id:TENANT/JOURNAL", or any
// "TENANT/JOURNAL" whose tenant half is 1 to 16 hex digits (an id, as
// Inspect prints it), is an id; anything else is a name (name false when
// it is an id). A name never has the form of an id: the registry refuses
// a tenant named with hex digits alone.
func ParseRef(ref string) (id journal.ID, name bool, err error) {
	if s, ok := strings.CutPrefix(ref, "id:"); ok {
		id, err := journal.ParseID(s)
		return id, false, err
	}
	if t, _, ok := strings.Cut(ref, "/"); ok && isHex(t) {
		// No tenant is named with hex digits alone: this is an id.
		id, err := journal.ParseID(ref)
		return id, false, err
	}
	return journal.ID{}, true, nil
}

// isHex reports whether s is 1 to 16 hex digits: the form of an id's half.
func isHex(s string) bool {
	if s == "" || len(s) > 16 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// Resolve maps a journal reference to its id: an id ("id:T/J", or two
// halves of 16 hex digits) is itself; a name ("TENANT/NAME", or "NAME" in
// the default tenant) is looked up in the registry (ErrUnknownJournal if
// no live journal has it). The lookup reads this Client's writes: a
// journal created through it (client/admin) resolves at once.
//
// Errors: ErrUnknownJournal, ErrNoControlPlane, ErrDenied, ErrUnavailable
// (every machine was still folding the registry), ErrNoServer.
func (c *Client) Resolve(ctx context.Context, ref string) (journal.ID, error) {
	id, isName, err := ParseRef(ref)
	if err != nil || !isName {
		return id, err
	}
	tenant, name := SplitName(ref)
	reg, err := c.registry(ctx)
	if err != nil {
		return journal.ID{}, err
	}
	for _, t := range reg.GetState().GetTenants() {
		if t.GetName() != tenant {
			continue
		}
		for _, j := range t.GetJournals() {
			if j.GetName() == name && j.GetStanding() != pb.JournalStanding_JOURNAL_STANDING_DELETING {
				return journal.ID{Tenant: t.GetTenantId(), Journal: j.GetJournalId()}, nil
			}
		}
	}
	return journal.ID{}, fmt.Errorf("%w: %s/%s", ErrUnknownJournal, tenant, name)
}

// JournalNamed resolves a journal reference (Resolve) and returns its
// handle.
func (c *Client) JournalNamed(ctx context.Context, ref string) (*Journal, error) {
	id, err := c.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	return c.Journal(id), nil
}

// Pace of the registry's reads.
const (
	// registryCatchUpPause is the pause between two sweeps of registry
	// while no server has folded the registry as far as this Client's own
	// changes.
	registryCatchUpPause = 20 * time.Millisecond
	// registryCallTimeout bounds one Registry call to one server.
	registryCallTimeout = 10 * time.Second
)

// registry asks the servers for their fold of the registry and returns
// the most advanced answer. It reads this Client's writes: the answer has
// folded at least every change this Client saw decided (sawRegistry),
// waiting for a server to catch up if it must, until ctx ends.
func (c *Client) registry(ctx context.Context) (*pb.RegistryReply, error) {
	for {
		r, err := c.registryOnce(ctx)
		switch {
		case errors.Is(err, ErrUnavailable):
			// Every machine is still folding the registry (the cell
			// just restarted): wait for one.
			if ctx.Err() != nil {
				return r, err
			}
		case err != nil || r.GetRegistryAt() >= c.registryAt.Load():
			return r, err
		}
		select {
		case <-ctx.Done():
			return r, err
		case <-time.After(registryCatchUpPause):
		}
	}
}

// registryOnce is one sweep of the servers: the most advanced answer.
func (c *Client) registryOnce(ctx context.Context) (*pb.RegistryReply, error) {
	var best *pb.RegistryReply
	var last error
	for _, s := range c.list() {
		actx, cancel := context.WithTimeout(ctx, registryCallTimeout)
		var p peer.Peer
		r, err := pb.NewControlClient(s.cc).Registry(actx, &pb.RegistryRequest{}, grpc.Peer(&p))
		cancel()
		switch {
		case err != nil && denied(err):
			return nil, deniedError(s.addr, err)
		case err != nil:
			last = machineError(s.addr, "registry", err, &p)
			continue
		case r.GetRefusal() == "no_control_plane":
			last = ErrNoControlPlane
			continue
		case r.GetRefusal() == "unavailable":
			// A machine still folding the registry since it started.
			last = fmt.Errorf("%w: %s is still reading the cell's registry", ErrUnavailable, s.addr)
			continue
		}
		if best == nil || r.GetRegistryAt() > best.GetRegistryAt() {
			best = r
		}
	}
	if best == nil {
		if last == nil {
			last = ErrNoServer
		}
		return nil, last
	}
	return best, nil
}

// sawRegistry raises the registry position this Client's reads of the
// registry must reach (registry) to at.
func (c *Client) sawRegistry(at uint64) {
	for {
		cur := c.registryAt.Load()
		if at <= cur || c.registryAt.CompareAndSwap(cur, at) {
			return
		}
	}
}
