// Package client is the Go client of a paros cell. Open one Client per
// process, take a Journal handle, and use one type per role:
//
//	c, err := client.FromEnv(ctx)          // or Dial(ctx, servers, WithCAFile(..), WithToken(..))
//	j, err := c.JournalNamed(ctx, "shop/orders")
//
//	w := j.NewWriter()                     // the single owner of a single-writer journal
//	seq, err := w.Append(ctx, []byte("hello"), []byte("world")) // the first append claims it
//
//	a := j.NewAppender()                   // any number of writers on a multi-writer journal
//	seq, err = a.Append(ctx, []byte("event"))
//
//	r := j.NewReader(client.FirstSeq)      // a cursor; long-polls the tail
//	for rec, err := range r.Records(ctx) { ... }
//
// Six ideas carry the common path: the Client, a Journal, the Writer (or
// Appender), the Reader, a Record at its position (Seq), and the
// ambiguous outcome (ErrAmbiguous). The operator's calls (creating and
// deleting journals and tenants, reconfiguring, handing off, the replica
// and proxy sets, Inspect) are in package client/admin.
//
// The Writer is fast by default: appends are coalesced into writes and
// pipelined over one WriteStream to the leader (ordered, so none overtakes
// another), and many appends in flight share a consensus slot and a disk
// sync. AppendAsync returns a future; Flush waits for every append.
//
// Every decision the library takes (fences, positions, verdicts, resends,
// gaps) is written sans-IO in package client/sansio, and the simulator
// drives those very types; this package only moves requests, replies and
// timers. The Journal handle's raw calls (Write, Read, Truncate,
// SetLeader, Resolve) are the one place that follows redirects and asks
// other servers.
//
// # Errors
//
// Errors are classes, tested with errors.Is (and errors.As for *GapError).
// Each wraps one class with detail:
//
//	class              returned by                     meaning, and what to do
//	-----------------  ------------------------------  ---------------------------------------------------------
//	ErrAmbiguous       Append, Wait, Flush, Claim,     the call may or may not have taken effect. A Writer's
//	                   Truncate, Appender.Append       appends are resent identically until a verdict (the log
//	                                                   answers Duplicate when an attempt landed); you see it when
//	                                                   your context ends first (Wait again, or Flush), when a
//	                                                   write was abandoned by Claim or Close, or after
//	                                                   sansio.WriteAttemptsMax attempts: Journal.Resolve tells.
//	                                                   A Claim that may have won: Claim again (it resends the
//	                                                   identical SetLeader). An Appender's write: resending may
//	                                                   append it twice.
//	ErrBelowFloor      Append, Wait                    the position is below the floor; ambiguous, and final
//	ErrSuperseded      Append, Wait, Truncate          another writer claimed the journal; the Writer stopped
//	                                                   (Claim again to take it back)
//	ErrNotHolding      Append, Truncate                an append a Claim dropped before it was sent (not written)
//	ErrRefused         Claim                           other claimers kept winning
//	ErrWrongMode       Claim, Append, Appender         the journal has the other writer mode
//	ErrTooLarge        Append, Appender                the batch breaks a write limit; nothing was sent
//	ErrEmptyBatch      Append, Appender                nothing to write
//	ErrClosed          every Writer call after Close   an append sent before Close also wraps ErrAmbiguous
//	ErrStale           Truncate, Claim                 a concurrent Claim on the same Writer replaced the fence
//	*GapError          Reader.Next, Reader.Records     positions were truncated before the reader got there; the
//	                                                   cursor moved past them (never silent)
//	ErrUnavailable     Reader.Next                     no server could serve a linearizable read; call again
//	ErrUnknownJournal  every call                      no server serves the journal; nothing was proposed
//	ErrNotLeader       Appender, raw Journal calls     no server would lead within the call's rounds; nothing
//	ErrBusy                                            was proposed: call again later
//	ErrNoServer        Dial, every call                no server could be reached; nothing was sent
//	ErrDenied          Dial, Claim, Truncate, raw      a server refused the credentials (no token, a bad or
//	                   Journal calls, Reader.Next      expired one, or one without the scope); nothing was
//	                                                   proposed: fix the credentials
//	ErrNoControlPlane  Resolve, JournalNamed           the cell has no registry of names: use journal ids
//
// Calls take a context.Context; a call whose context ends while a request
// may have been received reports ErrAmbiguous, never "not done".
//
// # Replicas
//
// A cell may run replica machines (`paros serve --role replica`, named at
// `parosctl init --replicas` or added later): each serves linearizable
// reads of every journal and never votes. Give their addresses to Dial beside the nodes'
// and every read (Reader, Journal.Read, Resolve) asks a replica first,
// then the other replicas, then the nodes, within the call's one loop of
// rounds; writes never go to a replica. WithReplicaReads(false) asks the
// nodes first, the replicas last.
//
// # Journals by name
//
// A cell formed with a control plane names its journals ("TENANT/NAME",
// or "NAME" in DefaultTenant). Client.JournalNamed (or Client.Resolve)
// maps a name to its journal through the cell's registry:
//
//	j, err := c.JournalNamed(ctx, "shop/orders")
//
// # Operating the cell
//
// The operator's calls are in package client/admin, over the same Client:
// admin.New(c) creates and deletes tenants and named journals, manages the
// machine pool, reconfigures a journal (Reconfigure, Retire), hands its
// leadership on (Handoff), changes the cell's replica, proxy and
// matchmaker machines, and inspects every machine (Inspect). An
// application needs none of them.
//
// # Advanced: the raw calls
//
// A Journal also exposes the four calls as the wire has them (Write,
// Read, Truncate, SetLeader, with the journal package's request and reply
// types) and Resolve, which tells whether a write whose answer was lost
// is in the log. They follow redirects and ask other servers but decide
// nothing: a caller that holds an ambiguous reply resends the identical
// request itself. The Writer, Appender and Reader are built on them; most
// programs never call them directly.
//
// # Security
//
// A cell serves TLS and wants a token on every call (`paros cert token`
// issues them, scoped to a tenant, a journal or everything, and to read,
// write, admin). Dial it with the cell's CA certificate and a token:
//
//	c, err := client.Dial(ctx, servers, client.WithCAFile("ca.crt"), client.WithToken(token))
//
// or let FromEnv read the same from PAROSCTL_SERVERS, PAROSCTL_CA and
// PAROSCTL_TOKEN. WithCAFile trusts only that CA (WithTLS takes any
// *tls.Config); a file that does not parse fails Dial. Dial never guesses
// the transport: without WithCAFile, WithTLS, WithTransportCredentials or
// WithInsecure it fails with ErrNoTransport, because a plaintext client
// only ever meets a handshake failure at a secure cell. WithInsecure is
// for a cell served with --insecure; a token given with it travels in the
// clear. A refusal of the credentials is ErrDenied, wrapping the server's
// codes.Unauthenticated or codes.PermissionDenied; nothing was proposed.
// (A Writer's appends travel on a stream: one the server refuses mid-way,
// a token that expired say, breaks like any other stream, and its appends
// are ambiguous until the context ends.)
package client
