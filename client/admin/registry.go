package admin

import (
	"context"
	"sort"

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
	ID            NodeID
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

// JournalInfo is a journal the registry names.
type JournalInfo struct {
	ID       journal.ID
	Tenant   string
	Name     string
	Members  []NodeID
	Quorum   Quorum
	Multi    bool // a multi-writer journal
	Deleting bool
}

// Registry asks the servers for their fold of the registry and returns
// the most advanced answer. It reads the client.Client's writes: the
// answer has folded at least every change made through it (a journal just
// created is listed), waiting for a server to catch up if it must, until
// ctx ends.
//
// Errors: client.ErrNoControlPlane, client.ErrDenied,
// client.ErrUnavailable (every machine was still folding the registry),
// client.ErrNoServer.
func (a *Client) Registry(ctx context.Context) (Registry, error) {
	r, err := a.l.Registry(ctx)
	if err != nil {
		return Registry{}, err
	}
	return registryOf(r), nil
}

// Journals lists the journals of a tenant ("" for every tenant the
// credentials see), as Registry does.
func (a *Client) Journals(ctx context.Context, tenant string) ([]JournalInfo, error) {
	reg, err := a.Registry(ctx)
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
		out.Machines = append(out.Machines, MachineInfo{ID: NodeID(m.GetNodeId()), Addr: m.GetAddr(), FailureDomain: m.GetFailureDomain(),
			Draining: m.GetState() == pb.MachineState_MACHINE_STATE_DRAINING, Journals: load[m.GetNodeId()]})
	}
	sort.Slice(out.Tenants, func(a, b int) bool { return out.Tenants[a].Name < out.Tenants[b].Name })
	sort.Slice(out.Journals, func(a, b int) bool {
		x, y := out.Journals[a], out.Journals[b]
		return x.Tenant < y.Tenant || x.Tenant == y.Tenant && x.Name < y.Name
	})
	return out
}

func infoOf(tenant, name string, id journal.ID, p *pb.JournalPlacement, deleting bool) JournalInfo {
	return JournalInfo{ID: id, Tenant: tenant, Name: name, Members: nodeIDs(p.GetMembers()),
		Quorum: quorumFromWire(p.GetQuorumSystem(), p.GetPhase1Quorum(), p.GetPhase2Quorum(), p.GetRows(), p.GetCols()),
		Multi:  p.GetWriterMode() == pb.WriterMode_WRITER_MODE_MULTI, Deleting: deleting}
}
