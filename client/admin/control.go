package admin

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/wire"
)

// The control plane's changes: tenants, journals by name (and, in
// pool.go, the machine pool). Every change carries a request id drawn
// once per call, so the retries this file makes (after a coordinator
// change, an unavailable answer, a call whose answer was lost) have
// exactly one effect; queries (registry.go) are answered by any machine
// from its own fold of the cell's registry.

// Pace of the control changes.
const (
	// controlRetryPause is the pause between two attempts of a change
	// while no coordinator is elected or it answered unavailable.
	controlRetryPause = 100 * time.Millisecond
	// controlCallTimeout bounds one attempt of a change at one machine:
	// the coordinator answers once the change is decided.
	controlCallTimeout = callTimeout + 30*time.Second
	// awaitServedPause is the pause between two sweeps of awaitServed.
	awaitServedPause = 10 * time.Millisecond
)

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
// id rides every attempt. A decided change raises the client.Client's
// registry mark, so its later reads of the registry (Registry, and
// client.Client.Resolve) see the change.
func (a *Client) change(ctx context.Context, what string,
	call func(context.Context, pb.ControlClient, ...grpc.CallOption) (*pb.ControlReply, error)) (*pb.ControlReply, error) {
	addr := ""
	var last error
	for attempt := 0; ; attempt++ {
		if addr == "" {
			servers := a.c.Servers()
			addr = servers[attempt%len(servers)]
		}
		cc, err := a.l.Conn(addr)
		if err != nil {
			return nil, err
		}
		actx, cancel := context.WithTimeout(ctx, controlCallTimeout)
		var p peer.Peer
		r, err := call(actx, pb.NewControlClient(cc), grpc.Peer(&p))
		cancel()
		switch {
		case err != nil:
			last = a.l.CallError(addr, what, err, &p)
			if errors.Is(last, client.ErrDenied) {
				return nil, last
			}
			addr = ""
		case r.GetRefusal() == "no_control_plane":
			return nil, fmt.Errorf("%w: %s", client.ErrNoControlPlane, r.GetDetail())
		case r.GetRefusal() == "not_coordinator":
			last, addr = fmt.Errorf("%w: %s: no coordinator elected", client.ErrNoServer, what), r.GetCoordinator()
			if addr != "" {
				continue
			}
		case r.GetRefusal() == "unavailable":
			last, addr = fmt.Errorf("%w: %s: %s", client.ErrUnavailable, what, r.GetDetail()), ""
		default:
			a.l.SawRegistry(r.GetRegistryAt())
			return r, controlError(what, r)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %s: %w (last: %w)", client.ErrAmbiguous, what, ctx.Err(), last)
		case <-time.After(controlRetryPause):
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
		base = client.ErrUnknownJournal
	case "tenant_not_empty":
		base = ErrTenantNotEmpty
	case "bad_name":
		base = client.ErrBadName
	case "bad_placement":
		base = ErrBadPlacement
	case "unknown_machine":
		base = ErrUnknownMachine
	default:
		return fmt.Errorf("paros/admin: %s refused: %s %s", what, r.GetRefusal(), r.GetDetail())
	}
	if r.GetDetail() != "" {
		return fmt.Errorf("%w: %s: %s", base, what, r.GetDetail())
	}
	return fmt.Errorf("%w: %s", base, what)
}

// CreateTenant names a tenant and returns its id.
//
// Errors: ErrNameTaken, client.ErrBadName, client.ErrNoControlPlane,
// client.ErrDenied, client.ErrAmbiguous (ctx ended before a coordinator
// answered: the tenant may exist; call again, and a tenant this call
// created is ErrNameTaken).
func (a *Client) CreateTenant(ctx context.Context, name string) (uint64, error) {
	req := &pb.CreateTenantRequest{Request: newRequest(), Name: name}
	r, err := a.change(ctx, "create tenant "+name, func(ctx context.Context, cc pb.ControlClient, o ...grpc.CallOption) (*pb.ControlReply, error) {
		return cc.CreateTenant(ctx, req, o...)
	})
	return r.GetTenantId(), err
}

// DeleteTenant removes a tenant that holds no journal (else
// ErrTenantNotEmpty; ErrUnknownTenant when none has the name).
func (a *Client) DeleteTenant(ctx context.Context, name string) error {
	req := &pb.DeleteTenantRequest{Request: newRequest(), Name: name}
	_, err := a.change(ctx, "delete tenant "+name, func(ctx context.Context, cc pb.ControlClient, o ...grpc.CallOption) (*pb.ControlReply, error) {
		return cc.DeleteTenant(ctx, req, o...)
	})
	return err
}

// CreateJournal creates a journal by name ("TENANT/NAME", or "NAME" in the
// default tenant), placed by the coordinator, and returns once a member
// serves it (its first writer's claim may still wait for the members to
// elect a leader, a few round trips). The client.Client resolves the name
// at once (client.Client.JournalNamed).
//
// A retry of one call has exactly one effect (one request id rides every
// attempt); a later call with a taken name is ErrNameTaken. Other errors:
// ErrUnknownTenant, ErrNameDeleting, ErrBadPlacement, client.ErrBadName,
// client.ErrNoControlPlane, client.ErrDenied, client.ErrAmbiguous.
func (a *Client) CreateJournal(ctx context.Context, name string, opts ...CreateOption) (JournalInfo, error) {
	tenant, jn := client.SplitName(name)
	req := &pb.CreateJournalRequest{Request: newRequest(), Tenant: tenant, Name: jn}
	for _, o := range opts {
		o(&createOptions{req: req})
	}
	r, err := a.change(ctx, "create journal "+name, func(ctx context.Context, cc pb.ControlClient, o ...grpc.CallOption) (*pb.ControlReply, error) {
		return cc.CreateJournal(ctx, req, o...)
	})
	if err != nil {
		return JournalInfo{}, err
	}
	info := infoOf(tenant, jn, wire.JournalIDFromPB(r.GetJournal()), r.GetPlacement(), false)
	return info, a.awaitServed(ctx, info.ID)
}

// awaitServed waits until journal id answers a read on some server.
func (a *Client) awaitServed(ctx context.Context, id journal.ID) error {
	in := &pb.ReadRequest{Journal: wire.JournalIDToPB(id), FromSeq: uint64(journal.FirstSeq), Limit: 1}
	for {
		for _, addr := range a.c.Servers() {
			cc, err := a.l.Conn(addr)
			if err != nil {
				continue
			}
			actx, cancel := context.WithTimeout(ctx, callTimeout)
			r, err := pb.NewJournalClient(cc).Read(actx, in)
			cancel()
			if err == nil && !r.GetUnknownJournal() && !r.GetDeleted() {
				return nil // a member serves it (a leader may not be elected yet)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: journal %s was created but no member serves it yet: %w", client.ErrUnavailable, id, ctx.Err())
		case <-time.After(awaitServedPause):
		}
	}
}

// DeleteJournal deletes a journal by name. It returns once the journal is
// sealed (no writer's append is accepted after it) and tombstoned (its
// members drop their stores); a retry of one call has exactly one effect.
// Its writers and readers then meet client.ErrJournalDeleted.
func (a *Client) DeleteJournal(ctx context.Context, name string) error {
	tenant, jn := client.SplitName(name)
	req := &pb.DeleteJournalRequest{Request: newRequest(), Tenant: tenant, Name: jn}
	_, err := a.change(ctx, "delete journal "+name, func(ctx context.Context, cc pb.ControlClient, o ...grpc.CallOption) (*pb.ControlReply, error) {
		return cc.DeleteJournal(ctx, req, o...)
	})
	return err
}
