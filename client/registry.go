package client

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/wire"
)

// Registry is one machine's fold of the cell's registry, as far as the
// caller's credentials see it (a tenant's token sees its tenant only, and
// no machine).
type Registry struct {
	// At is how far the machine folded the registry (its control
	// journal's next position): two answers with the same At agree.
	At          journal.Seq
	Coordinator string // the elected coordinator's address ("" if none)
	Machines    []MachineInfo
	Tenants     []TenantInfo
	Journals    []JournalInfo // sorted by tenant, then name
	// Control and Election are the control plane's own journals.
	Control, Election journal.ID
}

// MachineInfo is a machine of the pool.
type MachineInfo struct {
	ID            uint64
	Addr          string
	FailureDomain string
	Draining      bool
	Journals      int // the live and deleting journals placed on it
}

// TenantInfo is a tenant.
type TenantInfo struct {
	ID   uint64
	Name string
}

// registryCatchUpPause is the pause between two sweeps of Registry while
// no server has folded the registry as far as this Client's own changes.
const registryCatchUpPause = 20 * time.Millisecond

// Registry asks the servers for their fold of the registry and returns
// the most advanced answer. It reads this Client's writes: the answer has
// folded at least every change this Client saw decided (a journal it just
// created resolves), waiting for a server to catch up if it must, until
// ctx ends.
func (c *Client) Registry(ctx context.Context) (Registry, error) {
	for {
		r, err := c.registryOnce(ctx)
		switch {
		case errors.Is(err, ErrUnavailable):
			// Every machine is still folding the registry (the cell
			// just restarted): wait for one.
			if ctx.Err() != nil {
				return r, err
			}
		case err != nil || uint64(r.At) >= c.registryAt.Load():
			return r, err
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return r, err
			}
			return r, nil
		case <-time.After(registryCatchUpPause):
		}
	}
}

// registryOnce is one sweep of the servers: the most advanced answer.
func (c *Client) registryOnce(ctx context.Context) (Registry, error) {
	var best *pb.RegistryReply
	var last error
	for _, s := range c.list() {
		actx, cancel := context.WithTimeout(ctx, adminCallTimeout)
		var p peer.Peer
		r, err := pb.NewControlClient(s.cc).Registry(actx, &pb.RegistryRequest{}, grpc.Peer(&p))
		cancel()
		switch {
		case err != nil && denied(err):
			return Registry{}, deniedError(s.addr, err)
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
		return Registry{}, last
	}
	return registryOf(best), nil
}

func registryOf(r *pb.RegistryReply) Registry {
	out := Registry{At: journal.Seq(r.GetRegistryAt()), Coordinator: r.GetCoordinator(),
		Control: wire.JournalIDFromPB(r.GetControlJournal()), Election: wire.JournalIDFromPB(r.GetElectionJournal())}
	load := map[uint64]int{}
	for _, t := range r.GetState().GetTenants() {
		out.Tenants = append(out.Tenants, TenantInfo{ID: t.GetTenantId(), Name: t.GetName()})
		for _, j := range t.GetJournals() {
			id := journal.ID{Tenant: t.GetTenantId(), Journal: j.GetJournalId()}
			deleting := j.GetStanding() == pb.JournalStanding_JOURNAL_STANDING_DELETING
			out.Journals = append(out.Journals, infoOf(t.GetName(), j.GetName(), id, j.GetPlacement(), deleting))
			for _, m := range j.GetPlacement().GetMembers() {
				load[m]++
			}
		}
	}
	for _, m := range r.GetState().GetMachines() {
		out.Machines = append(out.Machines, MachineInfo{ID: m.GetNodeId(), Addr: m.GetAddr(), FailureDomain: m.GetFailureDomain(),
			Draining: m.GetState() == pb.MachineState_MACHINE_STATE_DRAINING, Journals: load[m.GetNodeId()]})
	}
	sort.Slice(out.Tenants, func(a, b int) bool { return out.Tenants[a].Name < out.Tenants[b].Name })
	sort.Slice(out.Journals, func(a, b int) bool {
		x, y := out.Journals[a], out.Journals[b]
		return x.Tenant < y.Tenant || x.Tenant == y.Tenant && x.Name < y.Name
	})
	return out
}

// Journals lists the journals of a tenant ("" for every tenant the
// credentials see).
func (c *Client) Journals(ctx context.Context, tenant string) ([]JournalInfo, error) {
	reg, err := c.Registry(ctx)
	if err != nil {
		return nil, err
	}
	var out []JournalInfo
	for _, j := range reg.Journals {
		if tenant == "" || j.Tenant == tenant {
			out = append(out, j)
		}
	}
	return out, nil
}

// Resolve maps a journal reference to its id: an id ("id:T/J", or two
// halves of 16 hex digits) is itself; a name ("TENANT/NAME", or "NAME" in
// the default tenant) is looked up in the registry (ErrUnknownJournal if
// no live journal has it).
func (c *Client) Resolve(ctx context.Context, ref string) (journal.ID, error) {
	id, isName, err := ParseRef(ref)
	if err != nil || !isName {
		return id, err
	}
	tenant, name := SplitName(ref)
	reg, err := c.Registry(ctx)
	if err != nil {
		return journal.ID{}, err
	}
	for _, j := range reg.Journals {
		if j.Tenant == tenant && j.Name == name && !j.Deleting {
			return j.ID, nil
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
