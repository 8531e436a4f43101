package client

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/core/registry"
	"github.com/parosdb/paros/wire"
)

// The control plane: tenants, journals by name, the machine pool. Every
// change carries a request id drawn once per call, so the retries this
// file makes (after a coordinator change, an unavailable answer, a call
// whose answer was lost) have exactly one effect; queries are answered by
// any machine from its own fold of the cell's registry.

// DefaultTenant is the tenant a journal name without one belongs to (the
// registry's, which the cell's first coordinator creates).
const DefaultTenant = registry.DefaultTenant

// Errors of the control plane. Each wraps the server's refusal.
var (
	// ErrNoControlPlane: the cell was formed without a control plane.
	ErrNoControlPlane = errors.New("paros/client: the cell has no control plane")
	// ErrNameTaken: a live journal or tenant already has the name.
	ErrNameTaken = errors.New("paros/client: name taken")
	// ErrNameDeleting: a journal of that name is being deleted; retry
	// once it is gone.
	ErrNameDeleting = errors.New("paros/client: a journal of that name is being deleted")
	// ErrUnknownTenant: no tenant has the name.
	ErrUnknownTenant = errors.New("paros/client: unknown tenant")
	// ErrTenantNotEmpty: a tenant that still holds journals.
	ErrTenantNotEmpty = errors.New("paros/client: the tenant still holds journals")
	// ErrBadName: a name empty, longer than 128 bytes, not UTF-8, with a
	// control character or '/', or 16 hex digits (the form of an id).
	ErrBadName = errors.New("paros/client: invalid name")
	// ErrBadPlacement: the placement asks for more machines than are up,
	// names a machine not up, or a quorum system its members cannot form.
	ErrBadPlacement = errors.New("paros/client: invalid placement")
)

// controlRetryPause is the pause between two attempts of a change while
// no coordinator is elected or it answered unavailable.
const controlRetryPause = 100 * time.Millisecond

// JournalInfo is a journal the registry names.
type JournalInfo struct {
	ID       journal.ID
	Tenant   string
	Name     string
	Members  []uint64
	Quorum   quorum.Spec
	Multi    bool // a multi-writer journal
	Deleting bool
}

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

// newRequest draws a request id.
func newRequest() []byte {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return b
}

// change sends a control change until a coordinator decides it: to any
// server first, then to the coordinator a refusal names. The same request
// id rides every attempt.
func (c *Client) change(ctx context.Context, what string,
	call func(context.Context, pb.ControlClient, ...grpc.CallOption) (*pb.ControlReply, error)) (*pb.ControlReply, error) {
	addr := ""
	var last error
	for attempt := 0; ; attempt++ {
		if addr == "" {
			addr = c.list()[attempt%len(c.list())].addr
		}
		cc, err := c.conn(addr)
		if err != nil {
			return nil, err
		}
		actx, cancel := context.WithTimeout(ctx, adminCallTimeout+30*time.Second)
		var p peer.Peer
		r, err := call(actx, pb.NewControlClient(cc), grpc.Peer(&p))
		cancel()
		switch {
		case err != nil && denied(err):
			return nil, deniedError(addr, err)
		case err != nil:
			last, addr = machineError(addr, what, err, &p), ""
		case r.GetRefusal() == "no_control_plane":
			return nil, fmt.Errorf("%w: %s", ErrNoControlPlane, r.GetDetail())
		case r.GetRefusal() == "not_coordinator":
			last, addr = fmt.Errorf("%w: %s: no coordinator elected", ErrNoServer, what), r.GetCoordinator()
			if addr != "" {
				continue
			}
		case r.GetRefusal() == "unavailable":
			last, addr = fmt.Errorf("%w: %s: %s", ErrUnavailable, what, r.GetDetail()), ""
		default:
			c.sawRegistry(r.GetRegistryAt())
			return r, controlError(what, r)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %s: %w (last: %w)", ErrAmbiguous, what, ctx.Err(), last)
		case <-time.After(controlRetryPause):
		}
	}
}

// sawRegistry raises the registry position this Client's reads must
// reach (Registry) to at.
func (c *Client) sawRegistry(at uint64) {
	for {
		cur := c.registryAt.Load()
		if at <= cur || c.registryAt.CompareAndSwap(cur, at) {
			return
		}
	}
}

// controlError maps a decided refusal to its error (nil on success).
func controlError(what string, r *pb.ControlReply) error {
	var base error
	switch r.GetRefusal() {
	case "":
		return nil
	case "name_taken":
		base = ErrNameTaken
	case "name_deleting":
		base = ErrNameDeleting
	case "unknown_tenant":
		base = ErrUnknownTenant
	case "unknown_journal":
		base = ErrUnknownJournal
	case "tenant_not_empty":
		base = ErrTenantNotEmpty
	case "bad_name":
		base = ErrBadName
	case "bad_placement":
		base = ErrBadPlacement
	case "unknown_machine":
		base = ErrUnknownMachine
	default:
		return fmt.Errorf("paros/client: %s refused: %s %s", what, r.GetRefusal(), r.GetDetail())
	}
	if r.GetDetail() != "" {
		return fmt.Errorf("%w: %s: %s", base, what, r.GetDetail())
	}
	return fmt.Errorf("%w: %s", base, what)
}

// CreateTenant names a tenant and returns its id.
func (c *Client) CreateTenant(ctx context.Context, name string) (uint64, error) {
	req := &pb.CreateTenantRequest{Request: newRequest(), Name: name}
	r, err := c.change(ctx, "create tenant "+name, func(ctx context.Context, cc pb.ControlClient, o ...grpc.CallOption) (*pb.ControlReply, error) {
		return cc.CreateTenant(ctx, req, o...)
	})
	return r.GetTenantId(), err
}

// DeleteTenant removes a tenant that holds no journal.
func (c *Client) DeleteTenant(ctx context.Context, name string) error {
	req := &pb.DeleteTenantRequest{Request: newRequest(), Name: name}
	_, err := c.change(ctx, "delete tenant "+name, func(ctx context.Context, cc pb.ControlClient, o ...grpc.CallOption) (*pb.ControlReply, error) {
		return cc.DeleteTenant(ctx, req, o...)
	})
	return err
}

// CreateJournal creates a journal by name ("TENANT/NAME", or "NAME" in the
// default tenant), placed by the coordinator, and returns once a member
// serves it (its first writer's claim may still wait for the members to
// elect a leader, a few round trips).
// A retry of one call has exactly one effect (one request id rides every
// attempt); a later call with a taken name is ErrNameTaken.
func (c *Client) CreateJournal(ctx context.Context, name string, opts ...CreateOption) (JournalInfo, error) {
	tenant, jn := SplitName(name)
	req := &pb.CreateJournalRequest{Request: newRequest(), Tenant: tenant, Name: jn}
	for _, o := range opts {
		o(req)
	}
	r, err := c.change(ctx, "create journal "+name, func(ctx context.Context, cc pb.ControlClient, o ...grpc.CallOption) (*pb.ControlReply, error) {
		return cc.CreateJournal(ctx, req, o...)
	})
	if err != nil {
		return JournalInfo{}, err
	}
	info := infoOf(tenant, jn, wire.JournalIDFromPB(r.GetJournal()), r.GetPlacement(), false)
	return info, c.awaitServed(ctx, info.ID)
}

// awaitServed waits until journal id answers a read.
func (c *Client) awaitServed(ctx context.Context, id journal.ID) error {
	in := &pb.ReadRequest{Journal: wire.JournalIDToPB(id), FromSeq: uint64(journal.FirstSeq), Limit: 1}
	for {
		for _, s := range c.list() {
			actx, cancel := context.WithTimeout(ctx, adminCallTimeout)
			r, err := s.journal.Read(actx, in)
			cancel()
			if err == nil && !r.GetUnknownJournal() && !r.GetDeleted() {
				return nil // a member serves it (a leader may not be elected yet)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: journal %s was created but no member serves it yet: %w", ErrUnavailable, id, ctx.Err())
		case <-time.After(awaitServedPause):
		}
	}
}

// awaitServedPause is the pause between two sweeps of awaitServed.
const awaitServedPause = 10 * time.Millisecond

// DeleteJournal deletes a journal by name. It returns once the journal is
// sealed (no writer's append is accepted after it) and tombstoned (its
// members drop their stores); a retry of one call has exactly one effect.
func (c *Client) DeleteJournal(ctx context.Context, name string) error {
	tenant, jn := SplitName(name)
	req := &pb.DeleteJournalRequest{Request: newRequest(), Tenant: tenant, Name: jn}
	_, err := c.change(ctx, "delete journal "+name, func(ctx context.Context, cc pb.ControlClient, o ...grpc.CallOption) (*pb.ControlReply, error) {
		return cc.DeleteJournal(ctx, req, o...)
	})
	return err
}

// DrainMachine takes a machine out of placement: it keeps its journals and
// gets no new one.
func (c *Client) DrainMachine(ctx context.Context, node uint64) error {
	req := &pb.DrainMachineRequest{NodeId: node}
	_, err := c.change(ctx, fmt.Sprintf("drain machine %016x", node), func(ctx context.Context, cc pb.ControlClient, o ...grpc.CallOption) (*pb.ControlReply, error) {
		return cc.DrainMachine(ctx, req, o...)
	})
	return err
}

func infoOf(tenant, name string, id journal.ID, p *pb.JournalPlacement, deleting bool) JournalInfo {
	return JournalInfo{ID: id, Tenant: tenant, Name: name, Members: p.GetMembers(),
		Quorum: quorum.Spec{Kind: quorum.Kind(p.GetQuorumSystem()), Q1: int(p.GetPhase1Quorum()), Q2: int(p.GetPhase2Quorum()),
			Rows: int(p.GetRows()), Cols: int(p.GetCols())},
		Multi: p.GetWriterMode() == pb.WriterMode_WRITER_MODE_MULTI, Deleting: deleting}
}

// AddMachine admits the machine at addr (started on an empty data dir with
// a certificate of the cell's CA) to the cell and registers it in the pool,
// where new journals may be placed on it. failureDomain labels it for
// placement ("" for none). It returns the machine's node id. Adding a
// machine already in the pool updates its address and label.
func (c *Client) AddMachine(ctx context.Context, addr, failureDomain string) (uint64, error) {
	reg, err := c.Registry(ctx)
	if err != nil {
		return 0, err
	}
	sv := c.look(ctx, reg.Control)
	r, err := c.identify(ctx, addr)
	if err != nil {
		return 0, err
	}
	node := r.GetNodeId()
	switch {
	case r.GetRole() == roleReplica || r.GetRole() == roleProxy:
		return 0, fmt.Errorf("%w: %s is a %s machine, never an acceptor", ErrUnknownMachine, addr, r.GetRole())
	case r.GetCellId() != 0 && r.GetCellId() != sv.cellID:
		return 0, fmt.Errorf("%w: %s is machine %016x of cell %016x, not of cell %016x", ErrUnknownMachine, addr, node, r.GetCellId(), sv.cellID)
	}
	if _, known := sv.machines[node]; !known || r.GetCellId() == 0 {
		if err := c.admit(ctx, sv, map[uint64]string{node: addr}); err != nil {
			return 0, err
		}
	}
	req := &pb.RegisterMachineRequest{NodeId: node, Addr: addr, FailureDomain: failureDomain}
	_, err = c.change(ctx, "register machine "+addr, func(ctx context.Context, cc pb.ControlClient, o ...grpc.CallOption) (*pb.ControlReply, error) {
		return cc.RegisterMachine(ctx, req, o...)
	})
	return node, err
}
