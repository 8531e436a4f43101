// Package admin holds the operator's calls of a paros cell, apart from the
// application's client in package client: reconfiguring a journal and
// retiring the machines it left, handing leadership on, changing the
// cell's replica, proxy and matchmaker machines, inspecting every machine,
// and the control plane's tenants, named journals and machine pool. An
// application needs none of them; an operator's tool (parosctl) or an
// automation needs them beside a client.Client:
//
//	c, err := client.Dial(ctx, servers, client.WithCAFile("ca.crt"), client.WithToken(adminToken))
//	adm := admin.New(c)
//
//	info, err := adm.CreateJournal(ctx, "shop/orders", admin.WithQuorum(admin.Flexible(2, 2)))
//	err = adm.Reconfigure(ctx, info.ID, admin.Configuration{
//		Members: []string{"1d48499a73176c16", "4827d5df01d7d8d8", "10.0.0.4:7401"},
//	})
//	leader, err := adm.Handoff(ctx, info.ID, 0)
//	for _, st := range adm.Inspect(ctx, info.ID) { ... }
//
// An admin.Client wraps a client.Client and owns nothing: it dials with
// the client.Client's options (transport security, token) and shares its
// connections, and closing the client.Client ends it. Most calls need a
// token with admin over every journal.
//
// # Reaching the cell
//
// The operator's calls reach every machine of the cell, not only the
// addresses given to client.Dial: each Inspect answer lists the cell's
// machines with their addresses, and the calls dial those (a bounded
// number, kept until the client.Client closes). Machines are named by
// NodeID (16 hex digits, as parosctl prints them) or, where a call may
// add a machine to the cell, by the host:port of an idle `paros serve`.
// Quorum systems are Quorum values (Majority, Flexible, Grid, or
// ParseQuorum of parosctl's --quorum form).
//
// # Errors
//
// Errors are classes, tested with errors.Is (and errors.As for
// *RetireRefusedError). The calls return this package's classes and
// package client's (client.ErrDenied, client.ErrNoServer,
// client.ErrAmbiguous, ...), each wrapping one class with detail:
//
//	class                     returned by                      meaning, and what to do
//	------------------------  -------------------------------  -----------------------------------------------------
//	ErrNoMatchmakers          Reconfigure, SetMatchmakers      the cell is plain: its journals keep their members
//	ErrInvalidConfiguration   Reconfigure, SetReplicas,        no node may run the configuration (a replica or proxy
//	                          SetProxies, SetMatchmakers       list: an address twice, too many); nothing changed
//	ErrUnknownMachine         Reconfigure, Retire, Handoff,    a node id outside the cell, or an address of another
//	                          SetReplicas, SetProxies,         cell's machine; nothing was reconfigured
//	                          SetMatchmakers, AddMachine,
//	                          DrainMachine
//	ErrNotReplica             SetReplicas                      a machine named as a replica is a node or an acceptor
//	ErrNotProxy               SetProxies                       a machine named as a proxy is a node, an acceptor or
//	                                                           a replica
//	*RetireRefusedError       Retire                           the machine judged the retire unsafe; Reason says why
//	                                                           (leader, member, stale, not_collected, plain, ...)
//	ErrCannotHandoff          Handoff                          the leader refused to hand on (a handed-on leadership,
//	                                                           a long open tail, recovery); nothing changed
//	ErrNameTaken              CreateTenant, CreateJournal      a live tenant or journal has the name
//	ErrNameDeleting           CreateJournal                    a journal of that name is being deleted: retry later
//	ErrUnknownTenant          CreateJournal, DeleteTenant      no tenant has the name
//	ErrTenantNotEmpty         DeleteTenant                     delete the tenant's journals first
//	ErrBadPlacement           CreateJournal                    more members than up machines, a member not up, or a
//	                                                           quorum its members cannot form
//	client.ErrBadName         CreateTenant, CreateJournal      the name cannot name a tenant or journal
//	client.ErrNoControlPlane  the control plane's calls        the cell was formed without one: use journal ids
//	client.ErrUnknownJournal  Reconfigure, Handoff,            no machine serves the journal, or no live journal has
//	                          DeleteJournal                    the name
//	client.ErrAmbiguous       Reconfigure, Retire, Handoff,    ctx ended once the change may have started: it may
//	                          SetMatchmakers, control calls    still complete (Inspect, or call again: every call
//	                                                           is idempotent)
//	client.ErrNotLeader       Handoff                          no leader handed on before ctx ended; nothing changed
//	client.ErrNoServer        every call                       no machine could be reached; nothing was sent
//	client.ErrDenied          every call                       the token lacks admin; nothing was proposed
//
// # How it builds on package client
//
// The calls need a few pieces of a client.Client that an application has
// no use for: a connection to any machine's address with the Client's
// dial options, the classification of a failed call (client.ErrDenied,
// client.ErrNoServer), and the registry's read-your-writes mark (a
// journal created here resolves at once through client.Client.Resolve).
// Rather than export them on client.Client, where every application would
// meet them, package client hands them to this package through an
// internal package (client/internal/link) that no other module can
// import. So package client exports nothing for this package's sake, and
// the machinery (connections, the registry's sweep, error classes) stays
// in one place.
package admin
