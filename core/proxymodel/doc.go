// Package proxymodel is the proxy leaders' model checker: a seeded,
// sans-IO world of real paxos.Nodes over memstore disks and real
// paxos.Proxy leaders, driven through a lossy, duplicating, reordering
// mailbox, with the faults that matter to a delegated round: proxies that
// crash and reboot empty, nodes that crash before or after their batch is
// durable and reboot from disk, leaders that resign or hand their
// leadership on in the middle of their rounds, replayed Relinquish
// messages, and proxies that evict rounds on a drawn budget while leaders
// take rounds back on theirs.
//
// After every step it checks, from the disks and never from a proxy's own
// tally:
//
//  1. at most one value is ever chosen for a slot (every fold, every
//     proxy's announcement);
//  2. every Commit a proxy emits is backed by a Phase-2 quorum of durable
//     accepts of that value at that ballot;
//  3. no slot has durable Phase-2 quorums for two values.
//
// A quiet tail then heals the world, with some proxies dead for good, and
// requires convergence: every slot up to the highest vote chosen on every
// node, no round open at a live proxy and none delegated at the leader.
// Reach counts each path so a sweep can require that all of them fired.
//
// The model lives in test files: it draws from a seeded PRNG and runs
// memstore disks, which the core's own code may not import.
package proxymodel
