// Package host is everything a paros process decides that is not protocol:
// the table of journals it serves, routing each delivered message to its
// journal's core, the peer mailboxes, the persist-before-send pipeline,
// parked client calls, boot against the format marker, and quarantine of a
// journal whose storage faulted.
//
// The host is sans-IO and single-threaded, like the core below it. It is
// driven by events — OnDeliver, OnTick, OnCall, OnPersisted — and acts only
// through Env (send, persist, reply, boot a store, draw randomness). The
// daemon's runtime implements Env with real sockets and disks; the simulator
// implements it with simulated ones, so the simulator tests the code we ship.
//
// The pipeline, per journal (persist before send; docs/design/host.md):
//
//  1. take the node's Ready, copy its buckets, Advance;
//  2. hand the Writes to Env.Persist (asynchronous) and send the EarlyOK
//     messages at once;
//  3. when OnPersisted says batch k is durable and every earlier batch of
//     the journal is too, release batch k: queue its messages to the peer
//     mailboxes, answer the calls parked on its Applied slots with the
//     verdict each slot folded to, then answer its read states.
package host
