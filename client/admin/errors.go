package admin

import "errors"

// Error classes of the operator's calls. Test them with errors.Is; each
// wraps the cell's refusal text. The calls also return package client's
// classes (client.ErrDenied, client.ErrNoServer, client.ErrAmbiguous,
// client.ErrUnknownJournal, client.ErrNoControlPlane, client.ErrBadName,
// ...): the package doc's table says which call returns which.
var (
	// ErrNoMatchmakers: the cell is plain (formed without matchmakers): its
	// journals keep their founding members. Nothing was changed.
	ErrNoMatchmakers = errors.New("paros/admin: the cell has no matchmakers: its journals' membership is fixed")
	// ErrInvalidConfiguration: no node may run the configuration asked for
	// (a member twice, a quorum rule that does not fit the members, a
	// member alone a Phase-1 quorum; a replica or proxy list with an
	// address twice, or too long). Nothing was reconfigured.
	ErrInvalidConfiguration = errors.New("paros/admin: invalid configuration")
	// ErrUnknownMachine: a node id that is no machine of the cell, or an
	// address whose machine belongs to another cell or does not prove the
	// node id named (a machine refuses it unknown_machine). Nothing was
	// reconfigured.
	ErrUnknownMachine = errors.New("paros/admin: unknown machine")
	// ErrNotReplica: a machine named as a replica is an acceptor: a node
	// machine (started without --role replica) or a member of some
	// journal's configuration. The list was not set on the machine that
	// refused (others may already run it: call SetReplicas again with a
	// list that fits).
	ErrNotReplica = errors.New("paros/admin: a machine named as a replica is an acceptor of the cell")
	// ErrNotProxy: a machine named as a proxy is not a proxy machine: a
	// node machine (started without --role proxy), a member of some
	// journal's configuration, or a replica machine. The list was not set
	// on the machine that refused (others may already run it: call
	// SetProxies again with a list that fits).
	ErrNotProxy = errors.New("paros/admin: a machine named as a proxy is no proxy machine of the cell")
	// ErrCannotHandoff: the journal's leader refused to hand its
	// leadership on (a leadership handed to it by another handoff, which
	// only an election renews; recovery or repair under way; an open tail
	// too long under write load; a successor that is no other acceptor of
	// the journal, or a replica machine). Nothing was changed; the wrapped
	// text names the rule. Run Handoff again once the cause passed.
	ErrCannotHandoff = errors.New("paros/admin: the leader cannot hand its leadership on")
)

// Error classes of the control plane's calls (tenants, journals by name,
// the machine pool). Each wraps the coordinator's refusal.
var (
	// ErrNameTaken: a live journal or tenant already has the name.
	ErrNameTaken = errors.New("paros/admin: name taken")
	// ErrNameDeleting: a journal of that name is being deleted; retry
	// once it is gone.
	ErrNameDeleting = errors.New("paros/admin: a journal of that name is being deleted")
	// ErrUnknownTenant: no tenant has the name.
	ErrUnknownTenant = errors.New("paros/admin: unknown tenant")
	// ErrTenantNotEmpty: a tenant that still holds journals.
	ErrTenantNotEmpty = errors.New("paros/admin: the tenant still holds journals")
	// ErrBadPlacement: the placement asks for more machines than are up,
	// names a machine not up, or a quorum system its members cannot form.
	ErrBadPlacement = errors.New("paros/admin: invalid placement")
)
